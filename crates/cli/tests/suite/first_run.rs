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
    let mut child = Command::new("script")
        .args(["-q", "-e", "-c", &format!("{BIN} {args}"), "/dev/null"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("FERRITE_HOME", home)
        .env("TERM", "dumb")
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
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
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
    out
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
