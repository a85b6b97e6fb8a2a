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
        self.spawn_env(&[])
    }

    /// `ferrite acp` with `env`, and [`TEST_DEFAULT_MODEL`] unless `env` or the config chooses
    /// a model (see [`Self::spawn_acp`]).
    pub fn spawn_env(&self, env: &[(&str, &str)]) -> AcpClient {
        self.spawn_acp(
            env.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }

    /// `ferrite acp` with extra environment variables (e.g. a provider's base URL), plus
    /// [`TEST_DEFAULT_MODEL`] when neither they nor the config choose a model.
    pub fn spawn_acp(&self, env: Vec<(String, String)>) -> AcpClient {
        // Only when nothing else would choose a model: a test that gives a key or a model
        // (environment or config) gets the default of `docs/models.md`.
        let chooses = env.iter().any(|(k, _)| {
            matches!(
                k.as_str(),
                "FERRITE_MODEL" | "ANTHROPIC_API_KEY" | "OPENAI_API_KEY"
            )
        }) || std::fs::read_to_string(self.home().join("config.toml"))
            .is_ok_and(|c| c.lines().any(|l| l.trim_start().starts_with("model")));
        let mut all = Vec::new();
        if !chooses {
            all.push(("FERRITE_MODEL".to_owned(), TEST_DEFAULT_MODEL.to_owned()));
        }
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

/// The default model of every test agent unless a test sets `FERRITE_MODEL`: with no usable
/// model at all `session/new` answers -32000 (`docs/models.md`), so tests that only need a session
/// get this model of no known provider. It needs no key, so sessions open; every prompt fails
/// at once as a `configuration_error` (`unknown_provider`) with no network and no retries —
/// what an agent without a provider did before -32000 was required.
pub const TEST_DEFAULT_MODEL: &str = "nowhere/test-model";

/// A provider base URL on loopback where nothing listens (the discard port): what tests give
/// `ferrite login`, which checks the key it stores, so that no test reaches a public API.
pub const NOWHERE_BASE_URL: &str = "http://127.0.0.1:9";

pub fn sid(new_session_result: &Value) -> String {
    new_session_result["sessionId"].as_str().unwrap().to_owned()
}

pub fn text_prompt(session: &str, text: &str) -> Value {
    json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]})
}

pub const QUIET: Duration = Duration::from_millis(300);

/// How long a test waits before it calls the agent hung: a guard, not a claim about speed.
/// Where a test checks that something ends early, the way it should not end takes longer than
/// this (a `sleep 300`, a stall of minutes, a timeout never reached), so passing the guard is
/// the behaviour itself. Speeds are measured in `bench/`.
pub const HANG_GUARD: Duration = Duration::from_secs(60);

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

/// The peak resident memory of process `pid` so far (VmHWM), in kB.
pub fn peak_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// The tool results in the last message of an Anthropic request `body`, in order: each one's
/// content (a string as it is, blocks as JSON) and whether it is an error.
pub fn tool_results(body: &Value) -> Vec<(String, bool)> {
    body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            let text = match &b["content"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (text, b["is_error"].as_bool().unwrap_or(false))
        })
        .collect()
}

/// The names of the tools a model request offered, in order (none when it offered none).
pub fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Sends a prompt and returns what came before its answer, which must end the turn normally.
/// Ends an agent process and waits until it is gone, so that the next process can open its
/// sessions (a killed one may hold a log's lock for a moment after `kill`).
pub async fn stop(mut c: AcpClient) {
    c.close_stdin().await;
    c.wait_exit(std::time::Duration::from_secs(10))
        .await
        .expect("the agent exits on EOF");
}

pub async fn prompt_to_end(c: &mut AcpClient, session: &str, text: &str) -> Vec<Value> {
    let id = c
        .send_request("session/prompt", text_prompt(session, text))
        .await;
    let (seen, answer) = c.collect_until_answer(&id).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
    seen
}
