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

    /// A world whose `FERRITE_HOME` lies inside the workspace, as when an editor is opened on
    /// the user's home directory.
    pub fn home_in_workspace() -> Self {
        let ws = tempfile::tempdir().unwrap();
        let home = tempfile::Builder::new()
            .prefix(".ferrite-home")
            .tempdir_in(ws.path())
            .unwrap();
        Self { home, ws }
    }

    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// The workspace, canonical (macOS-style symlinked temp dirs would otherwise differ).
    pub fn ws(&self) -> PathBuf {
        std::fs::canonicalize(self.ws.path()).unwrap()
    }

    pub fn spawn(&self) -> AcpClient {
        AcpClient::spawn(Path::new(BIN), self.home(), &[])
    }

    pub fn spawn_env(&self, env: &[(&str, &str)]) -> AcpClient {
        AcpClient::spawn(Path::new(BIN), self.home(), env)
    }

    /// `ferrite acp` with extra environment variables (e.g. a provider's base URL).
    pub fn spawn_acp(&self, env: Vec<(String, String)>) -> AcpClient {
        AcpClient::spawn_with(ferrite_test_support::acp_client::Spawn {
            bin: Path::new(BIN),
            home: self.home(),
            args: &["acp"],
            env,
        })
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
