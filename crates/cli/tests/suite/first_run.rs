//! First run from an editor (issue 9 §4): no model at all is an authentication error editors
//! show a login for; `authenticate` re-checks; terminal auth only when the client enables it;
//! `ferrite login` picks a provider and hides the key; `ferrite acp` in a terminal says what it
//! is for.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::*;

fn new_session(w: &World) -> Value {
    json!({"cwd": w.ws(), "mcpServers": []})
}

#[tokio::test]
async fn with_no_usable_model_session_new_asks_for_authentication() {
    let w = World::new();
    let mut c = w.spawn_bare(&[]);
    c.initialize().await;
    let a = c.request("session/new", new_session(&w)).await;
    assert_eq!(a.code(), -32000);
    let message = a.message();
    assert!(
        message.contains("ANTHROPIC_API_KEY") && message.contains("FERRITE_MODEL"),
        "says what to set: {message}"
    );
    let data = &a.error.as_ref().unwrap()["data"];
    let env: Vec<&str> = data["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        env,
        ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "FERRITE_MODEL"]
    );
    assert_eq!(
        data["loginProviders"],
        json!(["anthropic", "openai", "openai-chat"])
    );
    let sessions = std::fs::read_dir(w.home().join("sessions")).map_or(0, |d| d.count());
    assert_eq!(sessions, 0, "a refused session leaves no file");

    // `authenticate` the way clients call it ({methodId} alone): still nothing, so -32000
    // with what to do, never -32602.
    let a = c
        .request("authenticate", json!({"methodId": "api-key"}))
        .await;
    assert_eq!(a.code(), -32000);
    assert!(a.message().contains("ferrite login"), "{}", a.message());

    // The user runs `ferrite login` in a terminal meanwhile; the re-check now succeeds.
    let mut login = Command::new(BIN)
        .args(["login", "anthropic"])
        .env_clear()
        .env("FERRITE_HOME", w.home())
        .env("ANTHROPIC_BASE_URL", NOWHERE_BASE_URL)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    login
        .stdin
        .take()
        .unwrap()
        .write_all(b"sk-ant-test\n")
        .unwrap();
    assert!(login.wait().unwrap().success());
    let a = c
        .request("authenticate", json!({"methodId": "api-key"}))
        .await;
    assert_eq!(a.ok(), json!({}));
    let r = c.request("session/new", new_session(&w)).await.ok();
    assert_eq!(
        option_value(&r["configOptions"], "model"),
        "anthropic/claude-sonnet-5"
    );
}

#[tokio::test]
async fn a_keyless_default_never_needs_authentication() {
    let w = World::new();
    let mut c = w.spawn_bare(&[
        ("FERRITE_MODEL", "ollama/qwen3-coder:30b"),
        ("OLLAMA_HOST", "127.0.0.1:9"),
    ]);
    c.initialize().await;
    let r = c.request("session/new", new_session(&w)).await.ok();
    assert_eq!(
        option_value(&r["configOptions"], "model"),
        "ollama/qwen3-coder:30b"
    );
    let a = c
        .request("authenticate", json!({"methodId": "api-key"}))
        .await;
    assert_eq!(a.ok(), json!({}));
}

#[tokio::test]
async fn the_terminal_method_only_for_clients_that_enable_terminal_auth() {
    let w = World::new();
    let methods = |r: &Value| -> Vec<String> {
        r["authMethods"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let mut c = w.spawn_bare(&[]);
    let r = c.initialize().await;
    assert_eq!(methods(&r), ["api-key"]);
    assert_eq!(r["agentInfo"]["title"], "Ferrite");

    let mut c = w.spawn_bare(&[]);
    let r = c
        .request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {"auth": {"terminal": true}}}),
        )
        .await
        .ok();
    assert_eq!(methods(&r), ["api-key", "ferrite-login"]);
    let terminal = &r["authMethods"][1];
    assert_eq!(terminal["type"], "terminal");
    assert_eq!(terminal["args"], json!(["login"]));
    // After the terminal login the client asks again; with no key stored yet: -32000.
    let a = c
        .request("authenticate", json!({"methodId": "ferrite-login"}))
        .await;
    assert_eq!(a.code(), -32000);
}

/// Runs `args` under `script`, which gives the command a terminal for stdin/stdout/stderr;
/// `input` is typed into it. Returns everything the terminal showed.
fn in_a_terminal(home: &Path, args: &str, input: &[&str], wait: Duration) -> String {
    in_a_terminal_with_status(home, args, input, wait).0
}

/// [`in_a_terminal`], and how the command exited (`None`: still running at `wait`, killed).
fn in_a_terminal_with_status(
    home: &Path,
    args: &str,
    input: &[&str],
    wait: Duration,
) -> (String, Option<std::process::ExitStatus>) {
    program_in_a_terminal(home, &format!("{BIN} {args}"), input, wait)
}

/// `command_line` (a program and its args) in a terminal, as [`in_a_terminal_with_status`].
pub(super) fn program_in_a_terminal(
    home: &Path,
    command_line: &str,
    input: &[&str],
    wait: Duration,
) -> (String, Option<std::process::ExitStatus>) {
    let mut child = Command::new("script")
        .args(["-q", "-e", "-c", command_line, "/dev/null"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("FERRITE_HOME", home)
        .env("TERM", "dumb")
        // `ferrite login` checks the key it is given: on loopback, where nothing listens.
        .env("ANTHROPIC_BASE_URL", NOWHERE_BASE_URL)
        .env("OPENAI_BASE_URL", NOWHERE_BASE_URL)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for line in input {
        // Typed one line at a time, as a person would.
        std::thread::sleep(Duration::from_millis(300));
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }
    let deadline = Instant::now() + wait;
    let mut status = None;
    while Instant::now() < deadline {
        status = child.try_wait().unwrap();
        if status.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    drop(stdin);
    let _ = child.wait();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    (out, status)
}

/// Issue 23: a client runs the terminal method as the ACP schema says, with its `args`
/// appended to the agent's configured command (`ferrite acp` + `login`), in a terminal, and
/// waits for exit 0; then `authenticate` succeeds and sessions open.
#[tokio::test]
async fn the_terminal_login_runs_as_a_client_appends_its_args_and_exits_0() {
    let w = World::new();
    let mut c = w.spawn_bare(&[]);
    let r = c
        .request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {"auth": {"terminal": true}}}),
        )
        .await
        .ok();
    let method = r["authMethods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["type"] == "terminal")
        .expect("a terminal method")
        .clone();
    let args: Vec<&str> = method["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(
        method
            .get("env")
            .is_none_or(|e| e.as_object().is_some_and(|e| e.is_empty()))
    );
    // The editor's configured command is `ferrite acp`; the method's args come after it.
    let command = format!("acp {}", args.join(" "));
    let (shown, status) = in_a_terminal_with_status(
        w.home(),
        &command,
        &["1\n", "sk-ant-from-the-terminal\n"],
        Duration::from_secs(15),
    );
    assert!(
        status.is_some_and(|s| s.success()),
        "`ferrite {command}` did not exit 0 ({status:?}): {shown}"
    );
    assert!(
        !shown.contains("sk-ant-from-the-terminal"),
        "echoed: {shown}"
    );
    let a = c
        .request("authenticate", json!({"methodId": method["id"]}))
        .await;
    assert_eq!(a.ok(), json!({}));
    let s = c.request("session/new", new_session(&w)).await.ok();
    assert!(s["sessionId"].is_string(), "{s}");
}

#[test]
fn login_without_a_provider_asks_which_and_does_not_echo_the_key() {
    let w = World::new();
    let shown = in_a_terminal(
        w.home(),
        "login",
        &["2\n", "sk-very-secret-key\n"],
        Duration::from_secs(10),
    );
    assert!(shown.contains("Which provider"), "{shown}");
    assert!(
        shown.contains("anthropic") && shown.contains("openai"),
        "{shown}"
    );
    assert!(
        shown.contains("Responses API") && shown.contains("Chat Completions"),
        "openai and openai-chat told apart: {shown}"
    );
    assert!(
        !shown.contains("sk-very-secret-key"),
        "the key was echoed: {shown}"
    );
    let creds: Value =
        serde_json::from_slice(&std::fs::read(w.home().join("credentials.json")).unwrap()).unwrap();
    assert_eq!(
        creds["providers"]["openai"]["api_key"],
        "sk-very-secret-key"
    );

    // Piped (a script): the key is stdin, so the provider must be named.
    let out = Command::new(BIN)
        .arg("login")
        .env_clear()
        .env("FERRITE_HOME", w.home())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("ferrite login PROVIDER"));
}

#[test]
fn acp_started_by_hand_in_a_terminal_says_what_it_is_for_and_keeps_serving() {
    let w = World::new();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#;
    let shown = in_a_terminal(
        w.home(),
        "acp",
        &[&format!("{init}\n")],
        Duration::from_secs(3),
    );
    assert!(
        shown.contains("waiting for an editor")
            && shown.contains("README")
            && shown.contains("ferrite run"),
        "{shown}"
    );
    // `agentInfo` is only in the answer (the terminal also echoes what was typed).
    assert!(shown.contains(r#""agentInfo""#), "still serves: {shown}");

    // Started by an editor (pipes): not a word on stderr.
    let mut child = Command::new(BIN)
        .arg("acp")
        .env_clear()
        .env("FERRITE_HOME", w.home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{init}\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("protocolVersion"));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[test]
fn ferrite_run_with_no_model_exits_with_what_to_set() {
    let w = World::new();
    let out = Command::new(BIN)
        .args(["run", "hello"])
        .current_dir(w.ws())
        .env_clear()
        .env("FERRITE_HOME", w.home())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ANTHROPIC_API_KEY") && err.contains("FERRITE_MODEL"),
        "{err}"
    );
}

/// Issue 23: agentic.nvim starts agents with no HOME, and a user may have no passwd entry
/// either: `ferrite acp` then answers every request with the reason (and says it once on
/// stderr) instead of exiting without a word. Only root can become a uid without a passwd
/// entry (`setpriv`), as CI does.
#[test]
fn without_a_home_directory_every_request_is_told_why() {
    assert!(
        rustix::process::getuid().is_root(),
        "this test runs ferrite as a uid without a passwd entry, which needs root"
    );
    let mut child = Command::new("setpriv")
        .args(["--reuid=4242", "--regid=4242", "--clear-groups", BIN, "acp"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": 1, "clientCapabilities": {}}})
    )
    .unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": "s", "method": "session/new",
               "params": {"cwd": "/", "mcpServers": []}})
    )
    .unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let answers: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), 2, "{answers:?}");
    for (a, id) in answers.iter().zip([json!(1), json!("s")]) {
        assert_eq!(a["id"], id);
        assert_eq!(a["error"]["code"], -32603);
        let message = a["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("no home directory") && message.contains("FERRITE_HOME"),
            "{a}"
        );
        assert_eq!(a["error"]["data"]["details"], message);
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("ferrite: no home directory"), "{stderr}");
}
