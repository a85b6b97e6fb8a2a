//! Helpers shared by the end-to-end tests.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ferrite_test_support::AcpClient;
use serde_json::{Value, json};
use tempfile::TempDir;

pub const BIN: &str = env!("CARGO_BIN_EXE_ferrite");

/// A `FERRITE_HOME` and a workspace directory, both temporary.
pub struct World {
    pub home: TempDir,
    pub ws: TempDir,
}

impl World {
    pub fn new() -> Self {
        Self {
            home: tempfile::tempdir().unwrap(),
            ws: tempfile::tempdir().unwrap(),
        }
    }

    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// The workspace, canonical (macOS-style symlinked temp dirs would otherwise differ).
    pub fn ws(&self) -> PathBuf {
        std::fs::canonicalize(self.ws.path()).unwrap()
    }

    pub fn spawn(&self) -> AcpClient {
        self.spawn_env(&[])
    }

    /// `ferrite acp` with [`KEYLESS_DEFAULT`] plus `env` (which wins; `("FERRITE_MODEL", "")`
    /// takes the default model away).
    pub fn spawn_env(&self, env: &[(&str, &str)]) -> AcpClient {
        // No retries against the refusing default address: a prompt fails at once.
        let mut all = vec![("FERRITE_MAX_RETRIES".to_owned(), "0".to_owned())];
        all.extend(env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        self.spawn_acp(all)
    }

    /// `ferrite acp` with extra environment variables (e.g. a provider's base URL), after
    /// [`KEYLESS_DEFAULT`].
    pub fn spawn_acp(&self, env: Vec<(String, String)>) -> AcpClient {
        let mut all: Vec<(String, String)> = KEYLESS_DEFAULT
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        all.extend(env);
        AcpClient::spawn_with(ferrite_test_support::acp_client::Spawn {
            bin: Path::new(BIN),
            home: self.home(),
            args: &["acp"],
            env: all,
        })
    }

    /// `ferrite acp` with exactly `env`: no default model (first-run tests).
    pub fn spawn_bare(&self, env: &[(&str, &str)]) -> AcpClient {
        AcpClient::spawn(Path::new(BIN), self.home(), env)
    }

    pub async fn client(&self) -> AcpClient {
        let mut c = self.spawn();
        c.initialize().await;
        c
    }

    pub fn write_config(&self, text: &str) {
        std::fs::write(self.home().join("config.toml"), text).unwrap();
    }

    pub fn session_file(&self, id: &str) -> PathBuf {
        self.home().join("sessions").join(format!("{id}.jsonl"))
    }
}

/// What every test agent gets unless a test says otherwise: a keyless default model, so
/// `session/new` works without keys (contract §3: with no usable model it answers -32000). The
/// Ollama address refuses connections, so a prompt fails as a provider error.
pub const KEYLESS_DEFAULT: [(&str, &str); 2] = [
    ("FERRITE_MODEL", "ollama/test-model"),
    ("OLLAMA_HOST", "127.0.0.1:9"),
];

pub fn sid(new_session_result: &Value) -> String {
    new_session_result["sessionId"].as_str().unwrap().to_owned()
}

pub fn text_prompt(session: &str, text: &str) -> Value {
    json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]})
}

pub const QUIET: Duration = Duration::from_millis(300);

/// The `currentValue` of a config option in a `configOptions` list.
pub fn option_value(options: &Value, id: &str) -> String {
    options
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == id)
        .unwrap_or_else(|| panic!("no option {id}"))["currentValue"]
        .as_str()
        .unwrap()
        .to_owned()
}
