//! Rewind (`docs/sessions.md`): every user message has a stable id, sent as `messageId` on its
//! `user_message_chunk`s and the same on every load; `/rewind N` cuts the history before message N
//! and brings the files back.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

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

/// The session's live user messages as a load on the same connection replays them.
async fn live_messages(r: &mut Rig) -> Vec<(String, String)> {
    let id = r
        .client
        .send_request(
            "session/load",
            json!({"sessionId": r.sid, "cwd": r.world.ws(), "mcpServers": []}),
        )
        .await;
    let (messages, answer) = r.client.collect_until_answer(&id).await;
    answer.ok();
    ferrite_test_support::updates(&messages)
        .into_iter()
        .filter(|(k, _)| k == "user_message_chunk")
        .map(|(_, u)| {
            let text = u["content"]["text"].as_str().unwrap().to_owned();
            (text, u["messageId"].as_str().unwrap().to_owned())
        })
        .collect()
}

fn rewind_params(r: &Rig, message_id: &str, interrupt: bool) -> Value {
    json!({"sessionId": r.sid, "messageId": message_id, "restoreFiles": true, "interrupt": interrupt})
}

#[tokio::test]
async fn an_editors_rewind_interrupts_a_running_turn_and_cuts_at_a_message_id() {
    let mut r = full_mode_rig().await;
    let ws = r.world.ws();
    let before_two = three_turns(&mut r).await;
    let live = live_messages(&mut r).await;
    assert_eq!(live.len(), 3, "{live:?}");
    let second = live[1].1.clone();

    // A turn runs: the rewind is refused unless it says to interrupt.
    r.fake
        .push(Script::new().stall(Duration::from_secs(60)).text("late"));
    let running = r
        .client
        .send_request("session/prompt", text_prompt(&r.sid, "turn-four"))
        .await;
    let refused = r
        .client
        .request("_session/rewind", rewind_params(&r, &second, false))
        .await;
    assert_eq!(refused.code(), -32602);
    assert!(refused.message().contains("interrupt"), "{refused:?}");
    assert!(ws.join("new.txt").exists(), "nothing changed");

    let id = r
        .client
        .send_request("_session/rewind", rewind_params(&r, &second, true))
        .await;
    let (_, answer) = r.client.collect_until_answer(&id).await;
    let summary = answer.ok()["_meta"]["ferrite"]["summary"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        summary.contains("Rewound to before message 2 (turn-two please)"),
        "{summary}"
    );
    let (_, interrupted) = r.client.collect_until_answer(&running).await;
    assert_eq!(interrupted.ok()["stopReason"], "cancelled");
    assert_eq!(tree(&ws), before_two, "the workspace as before turn 2");

    // The message is gone: a second rewind to it is refused, and changes nothing.
    let again = r
        .client
        .request("_session/rewind", rewind_params(&r, &second, false))
        .await;
    assert_eq!(again.code(), -32602, "{again:?}");

    r.fake.push(Script::new().text("ok"));
    assert_eq!(r.say("turn-five").await.1, "end_turn");
    let sent = r.fake.requests().last().unwrap().body["messages"].to_string();
    assert!(sent.contains("turn-one please"), "{sent}");
    for gone in ["turn-two", "turn-three", "turn-four"] {
        assert!(!sent.contains(gone), "{gone} is cut: {sent}");
    }
    let Rig { world, client, .. } = r;
    stop(client).await;
    let replayed: Vec<String> = user_messages(&world, &r.sid)
        .await
        .into_iter()
        .map(|(text, _)| text)
        .collect();
    assert_eq!(replayed, ["turn-one please\nmore", "turn-five"]);
}

/// A client on the session-cursors RFD: `initialize` with `session.cursors`.
async fn cursor_client(world: &World, fake: &FakeProvider) -> AcpClient {
    world.write_config(&format!(
        "model = \"local/small\"\ntitles = false\n[providers.local]\napi = \"openai-chat\"\nbase_url = \"{}/v1\"\nmodels = [{{ id = \"small\", context_window = 100000 }}]\n",
        fake.base_url()
    ));
    let mut c = AcpClient::spawn(Path::new(BIN), world.home(), &[]);
    let init = c
        .request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {"session": {"cursors": {}}}}),
        )
        .await
        .ok();
    assert_eq!(init["_meta"]["rewind"]["supported"], true, "{init}");
    c
}

/// Prompts and returns the cursor update the prompt brought.
async fn prompt_for_cursor(c: &mut AcpClient, s: &str, text: &str) -> Value {
    let id = c.send_request("session/prompt", text_prompt(s, text)).await;
    let (before, answer) = c.collect_until_answer(&id).await;
    answer.ok();
    let cursors: Vec<Value> = ferrite_test_support::updates(&before)
        .into_iter()
        .filter(|(k, _)| k == "cursor_update")
        .map(|(_, u)| u)
        .collect();
    assert_eq!(cursors.len(), 1, "{before:?}");
    cursors[0].clone()
}

/// The user messages of session `s`, as a load on `c` replays them.
async fn replayed_texts(c: &mut AcpClient, world: &World, s: &str) -> Vec<String> {
    let id = c
        .send_request(
            "session/load",
            json!({"sessionId": s, "cwd": world.ws(), "mcpServers": []}),
        )
        .await;
    let (messages, answer) = c.collect_until_answer(&id).await;
    answer.ok();
    ferrite_test_support::updates(&messages)
        .into_iter()
        .filter(|(k, _)| k == "user_message_chunk")
        .map(|(_, u)| u["content"]["text"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn cursors_and_the_jetbrains_key_fork_a_session_before_a_message() {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    let mut c = cursor_client(&world, &fake).await;
    let s = sid(&c.new_session(&world.ws()).await);
    fake.push(Script::new().text("one"));
    fake.push(Script::new().text("two"));
    let first = prompt_for_cursor(&mut c, &s, "first").await;
    let second = prompt_for_cursor(&mut c, &s, "second").await;
    assert_eq!(second["anchor"]["type"], "user_message", "{second}");
    assert_eq!(second["anchor"]["position"], "before");
    assert_eq!(second["capabilities"]["fork"], json!({}));
    let second_id = second["anchor"]["messageId"].as_str().unwrap().to_owned();

    let fork = |at: Value| {
        let mut params = json!({"sessionId": s, "cwd": world.ws(), "mcpServers": []});
        params
            .as_object_mut()
            .unwrap()
            .extend(at.as_object().unwrap().clone());
        params
    };
    let at_cursor = c
        .request(
            "session/fork",
            fork(json!({"cursorId": second["cursorId"]})),
        )
        .await
        .ok();
    let forked = at_cursor["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(replayed_texts(&mut c, &world, &forked).await, ["first"]);
    let air = json!({"_meta": {"jetbrains": {"air": {"fork": {"version": 1, "messageId": first["anchor"]["messageId"]}}}}});
    let at_first = c.request("session/fork", fork(air)).await.ok();
    let empty = at_first["sessionId"].as_str().unwrap().to_owned();
    assert!(replayed_texts(&mut c, &world, &empty).await.is_empty());
    let unknown = c
        .request("session/fork", fork(json!({"cursorId": "nowhere"})))
        .await;
    assert_eq!(unknown.code(), -32602);

    // A rewind cuts the second message: its cursor stops taking forks.
    let id = c
        .send_request(
            "_session/rewind",
            json!({"sessionId": s, "messageId": second_id, "restoreFiles": false}),
        )
        .await;
    let (before, answer) = c.collect_until_answer(&id).await;
    answer.ok();
    let cleared = ferrite_test_support::updates(&before)
        .into_iter()
        .find(|(k, u)| k == "cursor_update" && u["cursorId"] == second["cursorId"])
        .map(|(_, u)| u)
        .expect("the cut message's cursor");
    assert_eq!(cleared["capabilities"], Value::Null, "{cleared}");
    let gone = c
        .request(
            "session/fork",
            fork(json!({"cursorId": second["cursorId"]})),
        )
        .await;
    assert_eq!(gone.code(), -32602, "{gone:?}");
    assert_eq!(replayed_texts(&mut c, &world, &s).await, ["first"]);
    stop(c).await;
}
