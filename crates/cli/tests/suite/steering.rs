//! Never waiting for the turn, through the real binary: prompts sent while a turn runs are
//! queued and answered in order, `session/cancel` ends the running turn and the queue, and
//! `_session/steering` puts a message into the running turn at its next model request.

use std::time::Duration;

use ferrite_test_support::agent_text;
use ferrite_test_support::fake_provider::Script;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::*;
use super::turns::*;

fn is_chunk(m: &Value) -> bool {
    m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
}

/// Where the answer to `id` is among `messages`.
fn answer_at(messages: &[Value], id: &Value) -> usize {
    messages
        .iter()
        .position(|m| m.get("method").is_none() && m["id"] == *id)
        .unwrap_or_else(|| panic!("no answer to {id}"))
}

/// Sends a prompt and returns its request id.
async fn send(r: &mut Rig, text: &str) -> Value {
    r.client
        .send_request("session/prompt", text_prompt(&r.sid, text))
        .await
}

/// Sends a prompt and waits until its answer has started streaming.
async fn send_and_wait_for_text(r: &mut Rig, text: &str) -> Value {
    let id = send(r, text).await;
    r.client
        .wait_for(Duration::from_secs(10), is_chunk)
        .await
        .unwrap();
    id
}

fn steer(sid: &str, text: &str) -> Value {
    json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]})
}

/// The user messages shown among `messages` (steering shows the user's words in the thread).
fn user_texts(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["params"]["update"]["sessionUpdate"] == "user_message_chunk")
        .map(|m| {
            m["params"]["update"]["content"]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

#[tokio::test]
async fn prompts_sent_during_a_turn_wait_and_are_answered_in_order_each_with_its_turn() {
    let mut r = rig(Api::Anthropic).await;
    r.fake.push(
        Script::new()
            .text("one")
            .stall(Duration::from_millis(1200))
            .text(" done"),
    );
    r.fake.push(Script::new().text("two"));
    r.fake.push(Script::new().text("three"));
    let first = send_and_wait_for_text(&mut r, "prompt-alpha").await;
    let second = send(&mut r, "prompt-beta").await;
    let third = send(&mut r, "prompt-gamma").await;
    let (mut messages, answer) = r.client.collect_until_answer(&third).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
    let (a1, a2) = (answer_at(&messages, &first), answer_at(&messages, &second));
    assert!(a1 < a2, "answered in order");
    for a in [a1, a2] {
        assert_eq!(messages[a]["result"]["stopReason"], "end_turn");
    }
    let after_second: Vec<Value> = messages.split_off(a2 + 1);
    let between: Vec<Value> = messages[a1 + 1..a2].to_vec();
    assert_eq!(agent_text(&messages[..a1]), " done");
    assert_eq!(agent_text(&between), "two");
    assert_eq!(agent_text(&after_second), "three");
    // Each prompt is its own turn, with the earlier ones in its history.
    let requests = r.requests();
    assert_eq!(requests.len(), 3);
    let body = requests[1].body.to_string();
    let at = |s: &str| body.find(s).unwrap_or_else(|| panic!("{s} in {body}"));
    assert!(at("prompt-alpha") < at("one done") && at("one done") < at("prompt-beta"));
    assert!(!body.contains("prompt-gamma"), "{body}");
    assert!(requests[2].body.to_string().contains("prompt-gamma"));
}

#[tokio::test]
async fn cancel_ends_the_running_turn_and_every_queued_prompt() {
    let mut r = rig(Api::Anthropic).await;
    r.fake.push(
        Script::new()
            .text("one")
            .stall(Duration::from_secs(30))
            .text("never"),
    );
    let first = send_and_wait_for_text(&mut r, "prompt-alpha").await;
    let second = send(&mut r, "prompt-beta").await;
    let third = send(&mut r, "prompt-gamma").await;
    r.client
        .notify("session/cancel", json!({"sessionId": r.sid}))
        .await;
    let (messages, answer) = r.client.collect_until_answer(&third).await;
    assert_eq!(answer.ok()["stopReason"], "cancelled");
    // Answered in the order they were sent: the running turn first.
    let (a1, a2) = (answer_at(&messages, &first), answer_at(&messages, &second));
    assert!(a1 < a2);
    for a in [a1, a2] {
        assert_eq!(
            messages[a]["result"]["stopReason"], "cancelled",
            "{}",
            messages[a]
        );
    }
    assert_eq!(r.requests().len(), 1, "no queued prompt reached the model");
    // The session goes on; the queued prompts never ran, so nothing of them is in its history.
    r.fake.push(Script::new().text("after"));
    let (before, answer) = r.prompt("again").await;
    assert_eq!(answer["stopReason"], "end_turn");
    assert_eq!(agent_text(&before), "after");
    let body = r.requests()[1].body.to_string();
    assert!(
        body.contains("again") && !body.contains("prompt-beta") && !body.contains("prompt-gamma")
    );
}

/// Steering between two tool calls' requests: the message joins the conversation after the
/// tool result, is shown as the user's, and is replayed in its place by `session/load`.
#[tokio::test]
async fn a_steering_message_joins_the_running_turn_at_its_next_request() {
    let mut r = rig(Api::Anthropic).await;
    std::fs::write(r.world.ws().join("a.txt"), "red\n").unwrap();
    r.fake.push(
        Script::new()
            .text("Looking.")
            .stall(Duration::from_millis(1200))
            .tool_call("c1", "read", json!({"path": "a.txt"}).to_string()),
    );
    r.fake.push(Script::new().text("Blue it is."));
    let prompt = send_and_wait_for_text(&mut r, "pick a colour").await;
    let steered = r
        .client
        .request("_session/steering", steer(&r.sid, "use the blue one"))
        .await;
    assert_eq!(steered.ok(), json!({"outcome": "injected"}));
    let (before, answer) = r.client.collect_until_answer(&prompt).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
    assert_eq!(user_texts(&before), ["use the blue one"]);
    assert!(agent_text(&before).ends_with("Blue it is."));
    let requests = r.requests();
    assert_eq!(requests.len(), 2, "one turn, two requests");
    assert!(!requests[0].body.to_string().contains("blue one"));
    let body = requests[1].body.to_string();
    let at = |s: &str| body.find(s).unwrap_or_else(|| panic!("{s} in {body}"));
    assert!(at("tool_result") < at("use the blue one"), "{body}");

    // Replayed in its place: after the tool call, before the answer that followed it.
    r.client
        .request("session/close", json!({"sessionId": r.sid}))
        .await
        .ok();
    let mut c = r.world.spawn_acp(provider_env(&r.fake, Api::Anthropic));
    c.initialize().await;
    let (replay, answer) = {
        let id = c
            .send_request(
                "session/load",
                json!({"sessionId": r.sid, "cwd": r.world.ws(), "mcpServers": []}),
            )
            .await;
        c.collect_until_answer(&id).await
    };
    answer.ok();
    let kinds: Vec<&str> = replay
        .iter()
        .filter_map(|m| m["params"]["update"]["sessionUpdate"].as_str())
        .filter(|k| {
            matches!(
                *k,
                "user_message_chunk" | "agent_message_chunk" | "tool_call"
            )
        })
        .collect();
    let mut order = kinds.clone();
    order.dedup();
    assert_eq!(
        order,
        [
            "user_message_chunk",
            "agent_message_chunk",
            "tool_call",
            "user_message_chunk",
            "agent_message_chunk"
        ],
        "{kinds:?}"
    );
    assert_eq!(user_texts(&replay), ["pick a colour", "use the blue one"]);
}

/// A message that arrives while the model writes its last answer is not lost: the turn makes
/// one more request for it.
#[tokio::test]
async fn a_steering_message_during_the_final_answer_gets_its_own_request_in_the_turn() {
    let mut r = rig(Api::Chat).await;
    r.fake.push(
        Script::new()
            .text("Done")
            .stall(Duration::from_millis(1200))
            .text("."),
    );
    r.fake.push(Script::new().text("Also done."));
    let prompt = send_and_wait_for_text(&mut r, "do it").await;
    let steered = r
        .client
        .request("_session/steering", steer(&r.sid, "and the tests too"))
        .await;
    assert_eq!(steered.ok()["outcome"], "injected");
    let (before, answer) = r.client.collect_until_answer(&prompt).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
    assert!(agent_text(&before).ends_with("Also done."), "{before:?}");
    let requests = r.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[1].body.to_string().contains("and the tests too"));
}

#[tokio::test]
async fn steering_without_a_running_turn_asks_for_a_prompt_and_is_advertised() {
    let world = World::new();
    let fake = ferrite_test_support::fake_provider::FakeProvider::start()
        .await
        .unwrap();
    let mut c = world.spawn_acp(provider_env(&fake, Api::Anthropic));
    let init = c.initialize().await;
    assert_eq!(init["_meta"]["steering"]["supported"], true);
    let s = sid(&c.new_session(&world.ws()).await);
    let answer = c.request("_session/steering", steer(&s, "hello")).await;
    assert_eq!(
        answer.ok(),
        json!({"outcome": "promptRequired", "reason": "noRunningTurn"})
    );
    let unknown = c
        .request("_session/steering", steer("no-such-session", "hello"))
        .await;
    assert_eq!(unknown.code(), -32602);
    let empty = c
        .request("_session/steering", json!({"sessionId": s, "prompt": []}))
        .await;
    assert_eq!(empty.code(), -32602);
    assert!(fake.requests().is_empty(), "nothing reached the model");
}

/// Steering is capped like the prompt queue: while the turn takes nothing, at most 16 messages
/// (and 1 MiB of them) wait; one more is refused with -32602 and never reaches the turn.
#[tokio::test]
async fn steering_messages_past_the_cap_are_refused() {
    let mut r = rig(Api::Chat).await;
    r.fake.push(
        Script::new()
            .text("Working")
            .stall(Duration::from_secs(120))
            .text("never"),
    );
    let prompt = send_and_wait_for_text(&mut r, "do it").await;
    let too_big = "x".repeat(1024 * 1024 + 1);
    let refused = r
        .client
        .request("_session/steering", steer(&r.sid, &too_big))
        .await;
    assert_eq!(refused.code(), -32602, "over the bytes");
    for i in 0..16 {
        let steered = r
            .client
            .request("_session/steering", steer(&r.sid, &format!("note {i}")))
            .await;
        assert_eq!(steered.ok()["outcome"], "injected", "message {i}");
    }
    let refused = r
        .client
        .request("_session/steering", steer(&r.sid, "one too many"))
        .await;
    assert_eq!(refused.code(), -32602, "over the count");
    assert!(refused.message().contains("wait"), "{}", refused.message());
    r.client
        .notify("session/cancel", json!({"sessionId": r.sid}))
        .await;
    let (before, answer) = r.client.collect_until_answer(&prompt).await;
    assert_eq!(answer.ok()["stopReason"], "cancelled");
    let shown = user_texts(&before);
    assert_eq!(shown.len(), 16, "{shown:?}");
    assert!(!shown.iter().any(|t| t == "one too many" || t.len() > 1024));
}
