//! `fs/read_text_file` (docs/acp.md): reads see the editor's unsaved buffers, except when the agent changed the file
//! on disk itself.

use std::time::Duration;

use ferrite_test_support::AcpClient;
use ferrite_test_support::fake_provider::{FakeProvider, Script};
use serde_json::json;

use super::common::*;
use super::turns::{Api, provider_env};

async fn client_with_fs(world: &World, fake: &FakeProvider) -> (AcpClient, String) {
    let mut c = world.spawn_acp(provider_env(fake, Api::Chat));
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
    (c, s)
}

fn tool_results(fake: &FakeProvider, request: usize) -> Vec<String> {
    fake.requests()[request].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

/// Runs a prompt, answering every `fs/read_text_file` with `buffer`; returns how many were asked.
/// The client writes files, so edits come as `fs/write_text_file` (the default since edits go
/// through the editor's review): applied to disk, as an editor saves them.
async fn prompt_answering_reads(c: &mut AcpClient, s: &str, buffer: &str) -> usize {
    let id = c
        .send_request("session/prompt", text_prompt(s, "read it"))
        .await;
    let mut asked = 0;
    loop {
        let m = c
            .next_message(Duration::from_secs(20))
            .await
            .expect("a message");
        if m.get("method") == Some(&json!("fs/read_text_file")) {
            asked += 1;
            assert_eq!(m["params"]["sessionId"], s);
            c.respond(&m["id"], json!({"content": buffer})).await;
        } else if m.get("method") == Some(&json!("fs/write_text_file")) {
            let p = &m["params"];
            std::fs::write(p["path"].as_str().unwrap(), p["content"].as_str().unwrap()).unwrap();
            c.respond(&m["id"], json!({})).await;
        } else if m.get("id") == Some(&id) && m.get("method").is_none() {
            assert_eq!(m["result"]["stopReason"], "end_turn", "{m}");
            return asked;
        }
    }
}

#[tokio::test]
async fn unsaved_buffers_are_read_until_the_agent_writes_the_file() {
    let world = World::new();
    let file = world.ws().join("main.rs");
    std::fs::write(&file, "fn saved() {}\n").unwrap();
    let fake = FakeProvider::start().await.unwrap();
    let (mut c, s) = client_with_fs(&world, &fake).await;

    fake.push(Script::new().tool_call("r1", "read", r#"{"path":"main.rs"}"#));
    fake.push(Script::new().text("seen"));
    assert_eq!(
        prompt_answering_reads(&mut c, &s, "fn unsaved() {}\n").await,
        1
    );
    let seen = &tool_results(&fake, 1)[0];
    assert!(
        seen.contains("fn unsaved()") && !seen.contains("saved() {}\n\n"),
        "{seen}"
    );

    // The agent edits the file on disk: the editor's buffer is stale from now on.
    fake.push(Script::new().tool_call(
        "e1",
        "edit",
        r#"{"path":"main.rs","old_string":"saved","new_string":"edited"}"#,
    ));
    fake.push(Script::new().tool_call("r2", "read", r#"{"path":"main.rs"}"#));
    fake.push(Script::new().text("done"));
    assert_eq!(
        prompt_answering_reads(&mut c, &s, "fn unsaved() {}\n").await,
        0,
        "disk wins after the agent's edit"
    );
    let seen = tool_results(&fake, 4);
    assert!(seen.last().unwrap().contains("fn edited()"), "{seen:?}");
}

#[tokio::test]
async fn fs_delegation_never_reads_the_disk() {
    let world = World::new();
    world.write_config("fs_delegation = \"never\"\n");
    std::fs::write(world.ws().join("a.txt"), "on disk\n").unwrap();
    let fake = FakeProvider::start().await.unwrap();
    let (mut c, s) = client_with_fs(&world, &fake).await;
    fake.push(Script::new().tool_call("r1", "read", r#"{"path":"a.txt"}"#));
    fake.push(Script::new().text("ok"));
    assert_eq!(
        prompt_answering_reads(&mut c, &s, "from the editor").await,
        0
    );
    assert!(tool_results(&fake, 1)[0].contains("on disk"));
}

/// `fs_delegation = "review"`: `edit` and `write` go through `fs/write_text_file`, so the
/// editor's review of agent edits tracks them; the editor's refusal leaves the file unchanged.
#[tokio::test]
async fn review_delegation_writes_through_the_editor() {
    let world = World::new();
    world.write_config("fs_delegation = \"review\"\n");
    let file = world.ws().join("main.rs");
    std::fs::write(&file, "fn a() {}\n").unwrap();
    let fake = FakeProvider::start().await.unwrap();
    let (mut c, s) = client_with_fs(&world, &fake).await;
    fake.push(Script::new().tool_call(
        "e1",
        "edit",
        r#"{"path":"main.rs","old_string":"fn a","new_string":"fn b"}"#,
    ));
    fake.push(Script::new().tool_call(
        "w1",
        "write",
        r#"{"path":"notes.txt","content":"hello\n"}"#,
    ));
    fake.push(Script::new().tool_call(
        "e2",
        "edit",
        r#"{"path":"main.rs","old_string":"fn b","new_string":"fn c"}"#,
    ));
    fake.push(Script::new().text("done"));
    let id = c
        .send_request("session/prompt", text_prompt(&s, "change it"))
        .await;
    let mut writes = vec![];
    loop {
        let m = c
            .next_message(Duration::from_secs(20))
            .await
            .expect("a message");
        if m.get("method") == Some(&json!("fs/write_text_file")) {
            let p = &m["params"];
            assert_eq!(p["sessionId"], s.as_str());
            let path = p["path"].as_str().unwrap().to_owned();
            let content = p["content"].as_str().unwrap().to_owned();
            if writes.len() < 2 {
                // The editor applies it (to its buffer, then the file).
                std::fs::write(&path, &content).unwrap();
                c.respond(&m["id"], json!({})).await;
            } else {
                c.respond_error(&m["id"], -32603, "the user rejected the edit")
                    .await;
            }
            writes.push((path, content));
        } else if m.get("id") == Some(&id) && m.get("method").is_none() {
            assert_eq!(m["result"]["stopReason"], "end_turn", "{m}");
            break;
        }
    }
    let ws = world.ws();
    assert_eq!(
        writes,
        [
            (
                ws.join("main.rs").display().to_string(),
                "fn b() {}\n".to_owned()
            ),
            (
                ws.join("notes.txt").display().to_string(),
                "hello\n".to_owned()
            ),
            (
                ws.join("main.rs").display().to_string(),
                "fn c() {}\n".to_owned()
            ),
        ]
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "fn b() {}\n");
    let results = tool_results(&fake, 3);
    assert!(
        results
            .last()
            .unwrap()
            .contains("The editor could not write main.rs"),
        "{results:?}"
    );
    assert!(c.violations().is_empty(), "{:?}", c.violations());
}
