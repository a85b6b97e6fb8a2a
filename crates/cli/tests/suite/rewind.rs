//! Rewind (`docs/sessions.md`): every user message has a stable id, sent as `messageId` on its
//! `user_message_chunk`s and the same on every load; `/rewind N` cuts the history before message N
//! and brings the files back.

use std::collections::BTreeMap;
use std::path::Path;

use ferrite_test_support::fake_provider::{FakeProvider, Script};
use ferrite_test_support::{AcpClient, agent_text};
use serde_json::{Value, json};

use super::checkpoints::{full_mode_rig, put, tree};
use super::common::*;
use super::permissions::Rig;

async fn start(world: &World) -> (FakeProvider, AcpClient, String) {
    let fake = FakeProvider::start().await.unwrap();
    world.write_config(&format!(
        "model = \"local/small\"\ntitles = false\n[providers.local]\napi = \"openai-chat\"\nbase_url = \"{}/v1\"\nmodels = [{{ id = \"small\", context_window = 100000 }}]\n",
        fake.base_url()
    ));
    let mut c = AcpClient::spawn(
        Path::new(BIN),
        world.home(),
        &[("FERRITE_MAX_RETRIES", "0")],
    );
    c.initialize().await;
    let s = sid(&c.new_session(&world.ws()).await);
    (fake, c, s)
}

/// The user messages a load of `s` in a fresh process replays: `(text, messageId)`.
async fn user_messages(world: &World, s: &str) -> Vec<(String, Value)> {
    let mut c = AcpClient::spawn(Path::new(BIN), world.home(), &[]);
    c.initialize().await;
    let id = c
        .send_request(
            "session/load",
            json!({"sessionId": s, "cwd": world.ws(), "mcpServers": []}),
        )
        .await;
    let (messages, answer) = c.collect_until_answer(&id).await;
    answer.ok();
    stop(c).await;
    ferrite_test_support::updates(&messages)
        .into_iter()
        .filter(|(k, _)| k == "user_message_chunk")
        .map(|(_, u)| {
            let text = u["content"]["text"].as_str().unwrap().to_owned();
            (text, u["messageId"].clone())
        })
        .collect()
}

#[tokio::test]
async fn user_messages_keep_their_ids_on_every_load() {
    let world = World::new();
    let (fake, mut c, s) = start(&world).await;
    for (prompt, answer) in [("first", "one"), ("second", "two")] {
        fake.push(Script::new().text(answer));
        prompt_to_end(&mut c, &s, prompt).await;
    }
    stop(c).await;
    let once = user_messages(&world, &s).await;
    let texts: Vec<&str> = once.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(texts, ["first", "second"]);
    let ids: Vec<&str> = once.iter().map(|(_, id)| id.as_str().unwrap()).collect();
    assert!(ids.iter().all(|id| !id.is_empty()), "{once:?}");
    assert_ne!(ids[0], ids[1]);
    assert_eq!(user_messages(&world, &s).await, once, "the same ids again");
}

/// One turn of the model: the tool calls, then a short answer.
fn turn(r: &Rig, calls: &[(&str, &str, Value)]) {
    let calls: Vec<(&str, &str, String)> = calls
        .iter()
        .map(|(id, name, args)| (*id, *name, args.to_string()))
        .collect();
    let calls: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(id, name, args)| (*id, *name, args.as_str()))
        .collect();
    r.fake.push(Script::new().parallel_tool_calls(&calls));
    r.fake.push(Script::new().text("done"));
}

/// Three turns that edit, create and delete files; the first line of each prompt names it.
async fn three_turns(r: &mut Rig) -> BTreeMap<String, (Vec<u8>, u32)> {
    let ws = r.world.ws();
    put(&ws, "a.txt", b"alpha\n", 0o644);
    put(&ws, "old.txt", b"old\n", 0o644);
    turn(
        r,
        &[("w1", "write", json!({"path": "a.txt", "content": "A1\n"}))],
    );
    assert_eq!(r.say("turn-one please\nmore").await.1, "end_turn");
    let before_two = tree(&ws);
    turn(
        r,
        &[
            (
                "e2",
                "edit",
                json!({"path": "a.txt", "old_string": "A1", "new_string": "A2"}),
            ),
            (
                "w2",
                "write",
                json!({"path": "new.txt", "content": "new\n"}),
            ),
            ("b2", "bash", json!({"command": "rm old.txt"})),
        ],
    );
    assert_eq!(r.say("turn-two please").await.1, "end_turn");
    turn(
        r,
        &[("w3", "write", json!({"path": "a.txt", "content": "A3\n"}))],
    );
    assert_eq!(r.say("turn-three please").await.1, "end_turn");
    before_two
}

#[tokio::test]
async fn rewind_to_a_message_restores_files_history_and_replay() {
    let mut r = full_mode_rig().await;
    let ws = r.world.ws();
    let before_two = three_turns(&mut r).await;
    assert!(!ws.join("old.txt").exists() && ws.join("new.txt").exists());
    // The user edits a file the cut turns created: it is not overwritten without asking.
    std::fs::write(ws.join("new.txt"), "the user's\n").unwrap();

    let (before, _) = r.say("/rewind").await;
    let list = agent_text(&before);
    assert!(
        list.contains("1. turn-one please\n2. turn-two please\n3. turn-three please"),
        "{list}"
    );
    let model_calls = r.fake.requests().len();
    let id = r
        .client
        .send_request("session/prompt", text_prompt(&r.sid, "/rewind 2"))
        .await;
    let req = r.permission_request().await;
    assert!(
        req["params"]["toolCall"].to_string().contains("new.txt"),
        "{req}"
    );
    r.answer(&req, "reject_once").await;
    let (before, answer) = r.client.collect_until_answer(&id).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
    let text = agent_text(&before);
    assert!(
        text.contains("Rewound to before message 2 (turn-two please)"),
        "{text}"
    );
    let mut now = tree(&ws);
    assert_eq!(now.remove("new.txt").unwrap().0, b"the user's\n", "kept");
    assert_eq!(now, before_two, "the workspace as before turn 2");
    assert_eq!(r.fake.requests().len(), model_calls, "no model call");

    r.fake.push(Script::new().text("ok"));
    assert_eq!(r.say("turn-four").await.1, "end_turn");
    let sent = r.fake.requests().last().unwrap().body["messages"].to_string();
    assert!(
        sent.contains("turn-one please") && sent.contains("turn-four"),
        "{sent}"
    );
    for gone in ["turn-two", "turn-three", "/rewind", "A2", "A3"] {
        assert!(!sent.contains(gone), "{gone} is cut: {sent}");
    }
    let Rig { world, client, .. } = r;
    stop(client).await;
    let replayed: Vec<String> = user_messages(&world, &r.sid)
        .await
        .into_iter()
        .map(|(text, _)| text)
        .collect();
    assert_eq!(replayed, ["turn-one please\nmore", "turn-four"]);
}
