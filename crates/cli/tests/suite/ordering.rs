//! One ordered stream per session (docs/acp.md): requests to the client never overtake the
//! `tool_call` they are about. The test client checks the invariants on every message of every
//! test; these tests put the two racy paths (permission requests, delegated reads) under load
//! and report how many messages broke them.

use std::time::Duration;

use ferrite_test_support::AcpClient;
use ferrite_test_support::fake_provider::{FakeProvider, Script};
use serde_json::{Value, json};

use super::common::*;
use super::turns::{Api, provider_env};

/// Ordering violations about `method` seen by the client so far.
fn violations_about(c: &AcpClient, method: &str) -> usize {
    c.violations()
        .iter()
        .filter(|v| v.starts_with("ordering:") && v.contains(method))
        .count()
}

/// Drives one prompt to its answer, answering permission requests with `allow_once` and reads
/// with `buffer`. Returns how many requests the agent made.
async fn run_turn(c: &mut AcpClient, s: &str, buffer: &str) -> usize {
    let id = c.send_request("session/prompt", text_prompt(s, "go")).await;
    let mut asked = 0;
    loop {
        let m = c
            .next_message(Duration::from_secs(20))
            .await
            .expect("a message");
        match m.get("method").and_then(Value::as_str) {
            Some("session/request_permission") => {
                asked += 1;
                let answer = json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}});
                c.respond(&m["id"], answer).await;
            }
            Some("fs/read_text_file") => {
                asked += 1;
                c.respond(&m["id"], json!({"content": buffer})).await;
            }
            Some(_) => {}
            None if m.get("id") == Some(&id) => {
                assert_eq!(m["result"]["stopReason"], "end_turn", "{m}");
                return asked;
            }
            None => {}
        }
    }
}

#[tokio::test]
async fn two_hundred_approved_edits_in_a_row_keep_the_stream_in_order() {
    const TURNS: usize = 200;
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    let mut c = world.spawn_acp(provider_env(&fake, Api::Anthropic));
    c.initialize().await;
    let s = sid(&c.new_session(&world.ws()).await);
    let mut asked = 0;
    for i in 0..TURNS {
        let args = json!({"path": format!("f{i}.txt"), "content": format!("line {i}\n")});
        fake.push(Script::new().tool_call(format!("w{i}"), "write", args.to_string()));
        fake.push(Script::new().text("done"));
        asked += run_turn(&mut c, &s, "").await;
    }
    assert_eq!(asked, TURNS);
    let late = violations_about(&c, "session/request_permission");
    let all = c.violations();
    assert!(
        all.is_empty(),
        "{late} of {TURNS} permission requests arrived before their tool_call; {} violations:\n{}",
        all.len(),
        all.join("\n")
    );
}

#[tokio::test]
async fn one_hundred_delegated_reads_follow_their_tool_call() {
    const TURNS: usize = 100;
    let world = World::new();
    std::fs::write(world.ws().join("main.rs"), "fn saved() {}\n").unwrap();
    let fake = FakeProvider::start().await.unwrap();
    let mut c = world.spawn_acp(provider_env(&fake, Api::Anthropic));
    c.request("initialize", json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}}}))
        .await
        .ok();
    let s = sid(&c.new_session(&world.ws()).await);
    c.request(
        "session/set_mode",
        json!({"sessionId": s, "modeId": "auto"}),
    )
    .await
    .ok();
    let mut asked = 0;
    for i in 0..TURNS {
        fake.push(Script::new().tool_call(format!("r{i}"), "read", r#"{"path":"main.rs"}"#));
        fake.push(Script::new().text("seen"));
        asked += run_turn(&mut c, &s, "fn unsaved() {}\n").await;
    }
    assert_eq!(asked, TURNS);
    let late = violations_about(&c, "fs/read_text_file");
    let all = c.violations();
    assert!(
        all.is_empty(),
        "{late} of {TURNS} delegated reads arrived before their tool_call; {} violations:\n{}",
        all.len(),
        all.join("\n")
    );
}
