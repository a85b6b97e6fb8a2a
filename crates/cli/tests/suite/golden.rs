//! Golden transcripts of the main ACP flows, reviewed like code: every line the editor and the
//! agent exchanged, in order, with what varies between runs (session ids, temporary paths)
//! replaced. In-process (`serve` over a pipe, the scripted model), so they are exact and fast.
//! A change to what an editor sees shows up as a diff of `tests/golden/*.txt`; after checking it,
//! rewrite them with `UPDATE_GOLDEN=1 cargo test -p ferrite --test all golden`.

use std::path::PathBuf;

use ferrite_core::model::ModelErrorKind;
use ferrite_test_support::scripted_model::{Reply, ScriptedModel};
use serde_json::{Value, json};

use super::inproc::Editor;

/// Compares the editor's transcript since `from` with `tests/golden/<name>.txt`: one message
/// per entry, `>` from the editor, `<` from the agent, pretty-printed for reviewable diffs.
fn check(e: &Editor, session: Option<&str>, from: usize, name: &str) {
    let swaps = [
        (session.unwrap_or("<no session>").to_owned(), "<session>"),
        (e.home.path().display().to_string(), "<home>"),
        (e.ws.path().display().to_string(), "<ws>"),
    ];
    let mut text = String::new();
    for line in &e.transcript[from..] {
        let (direction, json) = line.split_at(2);
        let mut message: Value = serde_json::from_str(json).unwrap();
        normalize(&mut message, &swaps);
        text.push_str(direction.trim_end());
        text.push('\n');
        text.push_str(&serde_json::to_string_pretty(&message).unwrap());
        text.push('\n');
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.txt"));
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let golden = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_GOLDEN=1 writes it)", path.display()));
    pretty_assertions::assert_eq!(golden, text, "{name}: the transcript changed");
}

/// Replaces what differs between runs (ids, temporary paths, times) and cuts the model catalog
/// to its first entry (the catalog has its own tests; it would make every golden churn).
fn normalize(v: &mut Value, swaps: &[(String, &str)]) {
    if let Some(models) = v.pointer_mut("/result/_meta/ferrite/models") {
        shorten(models);
    }
    for options in ["/result/configOptions", "/params/update/configOptions"] {
        if let Some(Value::Array(options)) = v.pointer_mut(options) {
            for o in options.iter_mut().filter(|o| o["id"] == "model") {
                shorten(&mut o["options"]);
            }
        }
    }
    swap_strings(v, swaps);
}

fn shorten(list: &mut Value) {
    if let Value::Array(items) = list
        && items.len() > 1
    {
        items.truncate(1);
        items.push(json!("<the rest of the catalog>"));
    }
}

fn swap_strings(v: &mut Value, swaps: &[(String, &str)]) {
    match v {
        Value::String(s) => {
            for (from, to) in swaps {
                *s = s.replace(from.as_str(), to);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| swap_strings(i, swaps)),
        Value::Object(fields) => {
            for (k, f) in fields.iter_mut() {
                if k == "updatedAt" {
                    *f = json!("<time>");
                } else {
                    swap_strings(f, swaps);
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
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
