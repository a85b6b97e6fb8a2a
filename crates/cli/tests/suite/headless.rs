//! `ferrite run` as a script or a CI job uses it (issue 36): the default mode edits, each call's
//! outcome is on stderr, and the exit status says whether the work happened.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use ferrite_test_support::fake_provider::{FakeProvider, Script};
use serde_json::{Value, json};

use super::common::*;
use super::turns::{Api, provider_env};

/// One `ferrite` invocation: where, with what, and what it reads on stdin.
pub struct Invocation {
    pub home: PathBuf,
    pub cwd: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub stdin: String,
}

impl Invocation {
    pub fn new(world: &World, args: &[&str], env: &[(String, String)]) -> Self {
        Self {
            home: world.home().to_owned(),
            cwd: world.ws(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: env.to_vec(),
            stdin: String::new(),
        }
    }

    pub fn stdin(mut self, text: &str) -> Self {
        self.stdin = text.to_owned();
        self
    }

    pub fn cwd(mut self, dir: &Path) -> Self {
        self.cwd = dir.to_owned();
        self
    }

    /// Runs it off the async runtime, so the fake provider keeps answering.
    pub async fn run(self) -> Output {
        tokio::task::spawn_blocking(move || self.run_blocking())
            .await
            .unwrap()
    }

    pub fn run_blocking(self) -> Output {
        let mut child = Command::new(BIN)
            .args(&self.args)
            .current_dir(&self.cwd)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("FERRITE_HOME", &self.home)
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let written = child.stdin.take().unwrap().write_all(self.stdin.as_bytes());
        if let Err(e) = written {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
        }
        child.wait_with_output().unwrap()
    }
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The sessions left in the store (their log files).
pub fn session_files(world: &World) -> Vec<PathBuf> {
    match std::fs::read_dir(world.home().join("sessions")) {
        Ok(rd) => rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect(),
        Err(_) => vec![],
    }
}

/// The model writes hello.txt, runs `ls`, then answers.
fn write_then_ls(fake: &FakeProvider) {
    fake.push(Script::new().tool_call(
        "w1",
        "write",
        json!({"path": "hello.txt", "content": "hello\n"}).to_string(),
    ));
    fake.push(Script::new().tool_call("b1", "bash", json!({"command": "ls"}).to_string()));
    fake.push(
        Script::new()
            .text("Created hello.txt.")
            .usage(1200, 30, 1000),
    );
}

/// The lines of stderr that report a call's outcome.
fn outcome_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| {
            l.starts_with("[done]") || l.starts_with("[failed]") || l.starts_with("[refused]")
        })
        .collect()
}

#[tokio::test]
async fn run_edits_by_default_and_reports_each_outcome() {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    write_then_ls(&fake);
    let env = provider_env(&fake, Api::Anthropic);
    let out = Invocation::new(&world, &["run", "create hello.txt and run ls"], &env)
        .run()
        .await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(world.ws().join("hello.txt")).unwrap(),
        "hello\n"
    );
    assert_eq!(text(&out.stdout).trim(), "Created hello.txt.");
    let outcomes = outcome_lines(&stderr);
    assert_eq!(outcomes.len(), 2, "{stderr}");
    assert!(
        outcomes[0].starts_with("[done] ") && outcomes[0].contains("hello.txt"),
        "{stderr}"
    );
    assert!(
        outcomes[1].starts_with("[done] ") && outcomes[1].contains("ls"),
        "{stderr}"
    );
    // What `ls` printed went to the model: the write happened before it.
    let ls_result = tool_results(&fake.requests()[2].body);
    assert!(ls_result[0].0.contains("hello.txt"), "{ls_result:?}");
    let last = stderr.lines().last().unwrap_or_default();
    // The turn's three requests, and the session's generated title (`titles.rs`).
    let calls = fake.requests().len() + fake.title_requests().len();
    assert!(
        last.starts_with(&format!("usage: {calls} model call(s)")) && last.contains("cost $"),
        "the last line is the usage: {stderr}"
    );
    assert!(stderr.contains("session: "), "{stderr}");
    assert!(
        !stderr.contains('\r'),
        "no progress indicator into a pipe: {stderr:?}"
    );
}

/// On a terminal (`script` gives the command one) a progress line is drawn while the model
/// works, and wiped before the answer.
#[tokio::test]
async fn progress_is_drawn_only_on_a_terminal() {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    fake.push(
        Script::new()
            .stall(std::time::Duration::from_millis(600))
            .text("the answer"),
    );
    let env = provider_env(&fake, Api::Anthropic);
    let (home, ws) = (world.home().to_owned(), world.ws());
    let out = tokio::task::spawn_blocking(move || {
        Command::new("script")
            .args(["-q", "-e", "-c", &format!("{BIN} run hello"), "/dev/null"])
            .current_dir(ws)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("FERRITE_HOME", home)
            .env("TERM", "dumb")
            .envs(env)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let shown = text(&out.stdout);
    assert!(out.status.success(), "{shown}");
    let drawn = shown.rfind("working (").expect("a progress line");
    let answer = shown.find("the answer").expect("the answer");
    assert!(
        drawn < answer && shown[drawn..answer].contains("\r\x1b[2K"),
        "wiped before the answer: {shown:?}"
    );
}

#[tokio::test]
async fn run_in_ask_mode_refuses_what_would_ask_and_says_so_in_its_status() {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    write_then_ls(&fake);
    let env = provider_env(&fake, Api::Anthropic);
    let out = Invocation::new(&world, &["run", "--mode", "ask", "create hello.txt"], &env)
        .run()
        .await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(!world.ws().join("hello.txt").exists());
    let outcomes = outcome_lines(&stderr);
    assert_eq!(outcomes.len(), 2, "{stderr}");
    for line in outcomes {
        assert!(
            line.starts_with("[refused] ") && line.contains("needs the user's approval"),
            "{stderr}"
        );
    }
    assert_eq!(text(&out.stdout).trim(), "Created hello.txt.");
}

#[tokio::test]
async fn run_with_the_provider_down_fails_on_stderr_and_leaves_no_session() {
    let world = World::new();
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let env: Vec<(String, String)> = vec![
        ("ANTHROPIC_BASE_URL".into(), base),
        ("ANTHROPIC_API_KEY".into(), "k".into()),
        ("FERRITE_MODEL".into(), Api::Anthropic.model().into()),
        ("FERRITE_RETRY_BASE_MS".into(), "1".into()),
    ];
    let out = Invocation::new(&world, &["run", "hello"], &env).run().await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        text(&out.stdout),
        "",
        "nothing on stdout as if the model said it"
    );
    assert!(
        stderr.to_lowercase().contains("connection refused"),
        "{stderr}"
    );
    assert!(
        !stderr.contains(" WARN ") && !stderr.contains(" ERROR "),
        "no log lines unless FERRITE_LOG asks: {stderr}"
    );
    assert_eq!(session_files(&world), Vec::<PathBuf>::new());

    // `--json`: the failure is its own event, never an agent message.
    let out = Invocation::new(&world, &["run", "--json", "hello"], &env)
        .run()
        .await;
    assert_eq!(out.status.code(), Some(1));
    let events: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let types: Vec<&str> = events
        .iter()
        .filter_map(|e| e["event"]["type"].as_str())
        .collect();
    assert!(!types.contains(&"agent_message_chunk"), "{types:?}");
    let failed = events
        .iter()
        .find(|e| e["event"]["type"] == "run_failed")
        .expect("a run_failed event");
    assert_eq!(failed["event"]["terminal_status"], "provider_error");
    assert_eq!(events.last().unwrap()["event"]["type"], "run_ended");
    assert_eq!(events.last().unwrap()["event"]["exit_code"], 1);
    assert_eq!(session_files(&world), Vec::<PathBuf>::new());
}

/// A bad mode is the first thing said, even where nothing else would work (no home, no model).
#[test]
fn a_bad_mode_is_a_usage_error_before_anything_else() {
    let out = Command::new(BIN)
        .args(["run", "--mode", "bogus", "hi"])
        .env_clear()
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("invalid value 'bogus' for '--mode")
            && stderr.contains("plan, ask, auto, full"),
        "{stderr}"
    );
}

#[test]
fn run_help_says_the_default_mode_the_exit_statuses_and_ferrite_log() {
    let out = Command::new(BIN).args(["run", "--help"]).output().unwrap();
    let help = text(&out.stdout);
    assert!(help.contains("[default: auto"), "{help}");
    assert!(help.contains("Exit status:"), "{help}");
    for code in ["  0  ", "  1  ", "  2  ", "  3  "] {
        assert!(help.contains(code), "{code}: {help}");
    }
    assert!(help.contains("FERRITE_LOG"), "{help}");
    let top = Command::new(BIN).arg("--help").output().unwrap();
    assert!(text(&top.stdout).contains("FERRITE_LOG"));
}

/// A run that never reached the model (no key for the chosen model) leaves nothing behind,
/// and its status is the failure's.
#[test]
fn a_run_without_a_usable_model_leaves_no_session() {
    let world = World::new();
    let env = vec![("FERRITE_MODEL".to_owned(), "nowhere/model".to_owned())];
    let out = Invocation::new(&world, &["run", "hi"], &env).run_blocking();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "");
    assert_eq!(session_files(&world), Vec::<PathBuf>::new());
}
