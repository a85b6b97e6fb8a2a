//! Golden transcripts of the main ACP flows, reviewed like code: every line the editor and the
//! agent exchanged, in order, with what varies between runs (session ids, temporary paths)
//! replaced. In-process (`serve` over a pipe, the scripted model), so they are exact and fast.
//! A change to what an editor sees shows up as a diff of `tests/golden/*.txt`; after checking it,
//! rewrite them with `FERRITE_BLESS=1 cargo test -p ferrite --test all golden`.

use std::path::PathBuf;

use ferrite_core::model::ModelErrorKind;
use ferrite_test_support::scripted_model::{Reply, ScriptedModel};
use ferrite_test_support::transcript;
use serde_json::json;

use super::inproc::Editor;

/// Compares the editor's transcript since `from` with `tests/golden/<name>.txt`.
fn check(e: &Editor, session: Option<&str>, from: usize, name: &str) {
    let mut swaps = vec![
        (session.unwrap_or("<no session>").to_owned(), "<session>"),
        (e.home.path().display().to_string(), "<home>"),
        (e.ws.path().display().to_string(), "<ws>"),
    ];
    // A user message's id is fresh each run (`messageId` on its chunks).
    for line in &e.transcript[from..] {
        let m: serde_json::Value = serde_json::from_str(&line[2..]).unwrap();
        for id in [
            &m["params"]["update"]["messageId"],
            &m["params"]["messageId"],
        ] {
            if let Some(id) = id.as_str() {
                swaps.push((id.to_owned(), "<message>"));
            }
        }
    }
    let text = transcript::render(&e.transcript[from..], &swaps);
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.txt"));
    transcript::compare(&path, &text);
}

#[tokio::test]
async fn golden_initialize_and_new_session() {
    let model = ScriptedModel::new();
    let mut e = Editor::start(&model).await;
    let session = e.new_session().await;
    check(&e, Some(&session), 0, "initialize_and_new_session");
}

#[tokio::test]
async fn golden_prompt_answered_with_text() {
    let model = ScriptedModel::new();
    model.push(
        Reply::new()
            .thought("The user greets.")
            .text("Hello! ")
            .text("How can I help?"),
    );
    let mut e = Editor::start(&model).await;
    let session = e.new_session().await;
    let from = e.transcript.len();
    let id = e.prompt(&session, "hello").await;
    e.answer(&id).await;
    check(&e, Some(&session), from, "prompt_answered_with_text");
}

#[tokio::test]
async fn golden_tool_call_with_permission() {
    let model = ScriptedModel::new();
    model.push(Reply::new().text("I'll write it.").tool_call(
        "w1",
        "write",
        json!({"path": "notes.txt", "content": "hello\n"}),
    ));
    model.push(Reply::new().text("Done."));
    let mut e = Editor::start(&model).await;
    let session = e.new_session().await;
    let from = e.transcript.len();
    let id = e.prompt(&session, "write notes.txt").await;
    loop {
        let m = e.next().await;
        if m["method"] == "session/request_permission" {
            let answer = json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}});
            e.respond(&m, answer).await;
        }
        if m.get("id") == Some(&id) && m.get("method").is_none() {
            break;
        }
    }
    check(&e, Some(&session), from, "tool_call_with_permission");
}

#[tokio::test]
async fn golden_prompt_cancelled_while_streaming() {
    let model = ScriptedModel::new();
    model.push(Reply::new().text("Let me think").stall());
    let mut e = Editor::start(&model).await;
    let session = e.new_session().await;
    let from = e.transcript.len();
    let id = e.prompt(&session, "a long question").await;
    while e.next().await["params"]["update"]["sessionUpdate"] != "agent_message_chunk" {}
    e.notify("session/cancel", json!({"sessionId": session}))
        .await;
    e.answer(&id).await;
    check(&e, Some(&session), from, "prompt_cancelled_while_streaming");
}

#[tokio::test]
async fn golden_failed_turn() {
    let model = ScriptedModel::new();
    model.push(Reply::new().error(ModelErrorKind::Http { status: 529 }, "Overloaded"));
    let mut e = Editor::start(&model).await;
    let session = e.new_session().await;
    let from = e.transcript.len();
    let id = e.prompt(&session, "anyone there?").await;
    e.answer(&id).await;
    check(&e, Some(&session), from, "failed_turn");
}

#[tokio::test]
async fn golden_load_replays_the_conversation() {
    let model = ScriptedModel::new();
    model.push(Reply::new().text("I'll read it.").tool_call(
        "r1",
        "read",
        json!({"path": "a.txt"}),
    ));
    model.push(Reply::new().text("It says alpha."));
    let mut e = Editor::start(&model).await;
    std::fs::write(e.ws.path().join("a.txt"), "alpha\n").unwrap();
    let session = e.new_session().await;
    let id = e.prompt(&session, "what is in a.txt?").await;
    e.answer(&id).await;
    let from = e.transcript.len();
    let cwd = e.ws.path().to_owned();
    let params = json!({"sessionId": session, "cwd": cwd, "mcpServers": []});
    let id = e.send("session/load", params).await;
    e.answer(&id).await;
    check(&e, Some(&session), from, "load_replays_the_conversation");
}

/// Answers the turn's permission requests with `allow_once` until prompt `id` is answered.
async fn allow_until_answered(e: &mut Editor, id: &serde_json::Value) {
    loop {
        let m = e.next().await;
        if m["method"] == "session/request_permission" {
            let answer = json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}});
            e.respond(&m, answer).await;
        }
        if m.get("id") == Some(id) && m.get("method").is_none() {
            return;
        }
    }
}

#[tokio::test]
async fn golden_rewind_with_files() {
    let model = ScriptedModel::new();
    model.push(Reply::new().text("Hi."));
    model.push(Reply::new().text("I'll write it.").tool_call(
        "w1",
        "write",
        json!({"path": "notes.txt", "content": "hello\n"}),
    ));
    model.push(Reply::new().text("Done."));
    let mut e = Editor::start(&model).await;
    let session = e.new_session().await;
    let id = e.prompt(&session, "hello").await;
    e.answer(&id).await;
    let id = e.prompt(&session, "write notes.txt").await;
    allow_until_answered(&mut e, &id).await;
    assert!(e.ws.path().join("notes.txt").exists());
    // The editor learns its messages' ids from a load.
    let cwd = e.ws.path().to_owned();
    let params = json!({"sessionId": session, "cwd": cwd, "mcpServers": []});
    let id = e.send("session/load", params).await;
    let (replayed, _) = e.answer(&id).await;
    let second = replayed
        .iter()
        .rev()
        .find_map(|m| m["params"]["update"]["messageId"].as_str())
        .unwrap()
        .to_owned();
    // What follows a load's answer (usage, title, commands) is not part of the rewind.
    while e.next().await["params"]["update"]["sessionUpdate"] != "available_commands_update" {}
    let from = e.transcript.len();
    let params = json!({"sessionId": session, "messageId": second, "restoreFiles": true});
    let id = e.send("_session/rewind", params).await;
    e.answer(&id).await;
    assert!(!e.ws.path().join("notes.txt").exists(), "the write undone");
    check(&e, Some(&session), from, "rewind_with_files");
}
