//! The other commands (`README.md`): `run`, `login`/`logout`, `sessions`, `doctor`, `--version`.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use ferrite_test_support::fake_provider::{FakeProvider, Script};
use serde_json::Value;

use super::common::*;
use super::turns::{Api, provider_env};

fn ferrite(world: &World, args: &[&str], env: &[(String, String)], stdin: &str) -> Output {
    ferrite_in(world.home(), &world.ws(), args, env, stdin)
}

fn ferrite_in(
    home: &Path,
    ws: &Path,
    args: &[&str],
    env: &[(String, String)],
    stdin: &str,
) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(ws)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("FERRITE_HOME", home)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A command that reads no stdin may exit before this is written: its pipe is then closed.
    let written = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    if let Err(e) = written {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[tokio::test]
async fn run_prints_the_answer_and_continues_a_session() {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    fake.push(Script::new().text("Hello ").text("from run"));
    let env = provider_env(&fake, Api::Anthropic);
    let w = &world;
    let out = tokio::task::spawn_blocking({
        let env = env.clone();
        let (home, ws) = (w.home().to_owned(), w.ws());
        move || ferrite_in(&home, &ws, &["run", "say", "hello"], &env, "")
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "Hello from run");
    let err = text(&out.stderr);
    let session = err
        .lines()
        .find_map(|l| l.strip_prefix("session: "))
        .expect("session id on stderr")
        .to_owned();
    assert_eq!(
        fake.requests()[0].body["messages"][0]["content"][0]["text"],
        "say hello"
    );

    // --json prints events; --session continues the conversation.
    fake.push(Script::new().text("again"));
    let out = tokio::task::spawn_blocking({
        let env = env.clone();
        let (home, ws) = (w.home().to_owned(), w.ws());
        let session = session.clone();
        move || {
            ferrite_in(
                &home,
                &ws,
                &["run", "--json", "--session", &session, "more"],
                &env,
                "",
            )
        }
    })
    .await
    .unwrap();
    assert!(out.status.success());
    let events: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        events
            .iter()
            .any(|e| e["event"]["type"] == "agent_message_chunk" && e["event"]["text"] == "again")
    );
    assert!(events.iter().any(|e| e["event"]["type"] == "turn_ended"));
    assert!(
        fake.requests()[1].body.to_string().contains("say hello"),
        "history continued"
    );

    // A failed turn exits non-zero.
    fake.push(ferrite_test_support::fake_provider::Reply::error(
        401,
        r#"{"type":"error","error":{"type":"authentication_error","message":"bad key"}}"#,
    ));
    let out = tokio::task::spawn_blocking({
        let (home, ws) = (w.home().to_owned(), w.ws());
        move || ferrite_in(&home, &ws, &["run", "x"], &env, "")
    })
    .await
    .unwrap();
    assert!(!out.status.success());
}

#[test]
fn login_reads_stdin_and_logout_removes() {
    let world = World::new();
    // The key is checked where nothing listens (loopback): stored, "could not check".
    let nowhere = [("OPENAI_BASE_URL".to_owned(), NOWHERE_BASE_URL.to_owned())];
    let out = ferrite(&world, &["login", "openai"], &nowhere, "sk-from-stdin\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let creds: Value =
        serde_json::from_slice(&std::fs::read(world.home().join("credentials.json")).unwrap())
            .unwrap();
    assert_eq!(creds["providers"]["openai"]["api_key"], "sk-from-stdin");
    let out = ferrite(&world, &["doctor"], &[], "");
    assert!(
        text(&out.stdout).contains("openai"),
        "{}",
        text(&out.stdout)
    );
    let out = ferrite(&world, &["logout"], &[], "");
    assert!(out.status.success());
    let creds: Value =
        serde_json::from_slice(&std::fs::read(world.home().join("credentials.json")).unwrap())
            .unwrap();
    assert_eq!(creds["providers"], serde_json::json!({}));
    let out = ferrite(&world, &["login"], &[], "\n");
    assert!(!out.status.success(), "an empty key is refused");
}

#[tokio::test]
async fn sessions_list_show_delete() {
    let world = World::new();
    let mut c = world.client().await;
    let s = sid(&c.new_session(&world.ws()).await);
    c.request("session/prompt", text_prompt(&s, "what is in this repo"))
        .await
        .ok();
    c.close_stdin().await;
    c.wait_exit(std::time::Duration::from_secs(5))
        .await
        .unwrap();
    let out = ferrite(&world, &["sessions", "list"], &[], "");
    let listing = text(&out.stdout);
    assert!(
        listing.contains(&s) && listing.contains("what is in this repo"),
        "{listing}"
    );
    let out = ferrite(&world, &["sessions", "show", &s], &[], "");
    assert!(text(&out.stdout).contains("> what is in this repo"));
    let out = ferrite(&world, &["sessions", "show", "../etc"], &[], "");
    assert!(!out.status.success());
    let out = ferrite(&world, &["sessions", "delete", &s], &[], "");
    assert!(out.status.success());
    assert!(!world.session_file(&s).exists());
}

#[test]
fn doctor_version_and_help() {
    let world = World::new();
    let out = ferrite(&world, &["doctor"], &[], "");
    let report = text(&out.stdout);
    assert!(report.contains("sandbox:"), "{report}");
    assert!(
        report.contains("ANTHROPIC_API_KEY"),
        "says what to set: {report}"
    );
    assert!(!out.status.success(), "no provider is a problem");
    world.write_config("max_mode = \"nope\"\n");
    let out = ferrite(&world, &["doctor"], &[], "");
    assert!(text(&out.stdout).contains("config: ERROR"));
    let out = ferrite(&world, &["--version"], &[], "");
    assert!(text(&out.stdout).starts_with("ferrite "));
    let out = ferrite(&world, &["--help"], &[], "");
    for cmd in ["acp", "run", "login", "logout", "sessions", "doctor"] {
        assert!(text(&out.stdout).contains(cmd), "{cmd}");
    }
}

/// Activity on stderr is for whoever watches: with stderr closed (a pipe nobody reads), the turn
/// still runs to its end and its answer is printed.
#[tokio::test]
async fn run_finishes_its_turn_when_stderr_is_closed() {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    std::fs::write(world.ws().join("a.txt"), "x\n").unwrap();
    fake.push(Script::new().tool_call("r1", "read", r#"{"path":"a.txt"}"#.to_owned()));
    fake.push(Script::new().text("read it"));
    let env = provider_env(&fake, Api::Anthropic);
    let (home, ws) = (world.home().to_owned(), world.ws());
    let out = tokio::task::spawn_blocking(move || {
        let mut child = Command::new(BIN)
            .args(["run", "read a.txt"])
            .current_dir(&ws)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("FERRITE_HOME", &home)
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Nobody reads stderr: its read end is closed before the turn writes anything.
        drop(child.stderr.take());
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(text(&out.stdout).trim(), "read it");
    assert_eq!(
        fake.requests().len(),
        2,
        "the tool ran and the model answered"
    );
}
