//! `task`: subagents with their own context, shown as one card, cancellable, concurrent.

use std::time::{Duration, Instant};

use ferrite_test_support::fake_provider::Script;
use ferrite_test_support::updates;
use serde_json::json;

use super::common::*;
use super::permissions::start;

fn task_call(id: &str, description: &str, prompt: &str) -> (String, String, String) {
    (
        id.to_owned(),
        "task".to_owned(),
        json!({"description": description, "prompt": prompt}).to_string(),
    )
}

#[tokio::test]
async fn a_subagent_works_in_its_own_context_and_the_parent_gets_its_answer() {
    let mut r = start(World::new(), None, &[]).await;
    std::fs::write(r.world.ws().join("a.txt"), "the answer is 42\n").unwrap();
    let (id, name, args) = task_call("t1", "find the answer", "Read a.txt and say what it holds.");
    r.fake.push(Script::new().tool_call(&id, &name, args));
    let read = json!({"path": "a.txt"}).to_string();
    let grep = json!({"pattern": "answer"}).to_string();
    r.fake.push(
        Script::new()
            .parallel_tool_calls(&[("s1", "read", read.as_str()), ("s2", "grep", grep.as_str())]),
    );
    r.fake.push(Script::new().text("It holds 42."));
    r.fake.push(Script::new().text("The subagent found 42."));
    let prompt = r.send_prompt_id().await;
    let (before, answer) = r.client.collect_until_answer(&prompt).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");

    let reqs = r.fake.requests();
    assert_eq!(reqs.len(), 4, "parent, subagent twice, parent");
    the_subagent_s_context_is_its_own(&reqs);
    one_card_shows_the_subagent(&before, &reqs);

    // The card, as it ended, is part of the replay.
    r.client.close_stdin().await;
    r.client.wait_exit(Duration::from_secs(5)).await.unwrap();
    let mut c = r.world.client().await;
    let id = c
        .send_request(
            "session/load",
            json!({"sessionId": r.sid, "cwd": r.world.ws(), "mcpServers": []}),
        )
        .await;
    let (replay, answer) = c.collect_until_answer(&id).await;
    answer.ok();
    assert!(
        updates(&replay)
            .iter()
            .any(|(_, u)| u["toolCallId"] == "t1"
                && u["content"].to_string().contains("It holds 42.")),
        "replayed"
    );
}

/// The subagent's requests: its own system prompt and task, not the parent's history, read-only
/// tools; the parent gets its answer and not its tool output.
fn the_subagent_s_context_is_its_own(
    reqs: &[ferrite_test_support::fake_provider::RecordedRequest],
) {
    let sub = &reqs[1].body;
    let sub_text = sub.to_string();
    assert!(
        sub_text.contains("subagent of Ferrite"),
        "its own system prompt"
    );
    assert!(sub_text.contains("Read a.txt and say what it holds."));
    assert!(
        !sub_text.contains("do it"),
        "not the parent's history: {sub_text}"
    );
    assert_eq!(
        tool_names(sub),
        ["read", "grep", "find", "ls"],
        "read-only by default"
    );
    assert!(
        !tool_names(&reqs[0].body).is_empty()
            && tool_names(&reqs[0].body).contains(&"task".to_owned())
    );
    let parent_after = reqs[3].body.to_string();
    assert!(
        parent_after.contains("It holds 42."),
        "the parent gets the answer"
    );
    assert!(
        !parent_after.contains("the answer is 42"),
        "and not the subagent's tool output"
    );
}

/// One card for the subagent, its progress listing its tools, its own calls never separate
/// cards; both tools' results went back to the subagent, not to the parent.
fn one_card_shows_the_subagent(
    before: &[serde_json::Value],
    reqs: &[ferrite_test_support::fake_provider::RecordedRequest],
) {
    let ups = updates(before);
    let card = ups
        .iter()
        .find(|(k, u)| k == "tool_call" && u["toolCallId"] == "t1")
        .expect("the subagent's card")
        .1
        .clone();
    // `other` is ACP's default kind, which the SDK leaves out.
    assert!(card["kind"].is_null() || card["kind"] == "other", "{card}");
    assert_eq!(card["title"], "Subagent: find the answer");
    assert!(
        ups.iter()
            .all(|(_, u)| u["toolCallId"] != "s1" && u["toolCallId"] != "s2"),
        "the subagent's own calls are not separate cards"
    );
    assert!(
        ups.iter().any(|(k, u)| k == "tool_call_update"
            && u["toolCallId"] == "t1"
            && u["content"].to_string().contains("Read a.txt")
            && u["content"].to_string().contains("Grep")),
        "its progress lists both tools"
    );
    let sub_second = reqs[2].body.to_string();
    assert!(
        sub_second.contains("the answer is 42") && sub_second.contains("a.txt:1:"),
        "{sub_second}"
    );
    let last = ups
        .iter()
        .rev()
        .find(|(k, u)| k == "tool_call_update" && u["toolCallId"] == "t1")
        .unwrap()
        .1
        .clone();
    assert_eq!(last["status"], "completed");
    assert!(
        last["content"].to_string().contains("It holds 42."),
        "{last}"
    );
}

#[tokio::test]
async fn cancelling_the_turn_stops_the_subagent_at_once() {
    // The subagent's model stalls for minutes and no idle timeout ends it first: the cancel
    // alone can end the turn within the hang guard.
    let mut r = start(
        World::new(),
        None,
        &[("FERRITE_STREAM_IDLE_TIMEOUT_MS", "600000")],
    )
    .await;
    let (id, name, args) = task_call("t1", "slow", "Think for a long time.");
    r.fake.push(Script::new().tool_call(&id, &name, args));
    r.fake.push(
        Script::new()
            .stall(Duration::from_secs(600))
            .text("too late"),
    );
    let prompt = r.send_prompt_id().await;
    r.client
        .wait_for(Duration::from_secs(10), |m| {
            m["params"]["update"]["toolCallId"] == "t1"
        })
        .await
        .expect("the card");
    // Let the subagent's request reach the model.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let t = Instant::now();
    r.client
        .notify("session/cancel", json!({"sessionId": r.sid}))
        .await;
    let answer = r.client.wait_answer(&prompt).await.ok();
    assert_eq!(answer["stopReason"], "cancelled");
    assert!(t.elapsed() < HANG_GUARD, "{:?}", t.elapsed());
}

#[tokio::test]
async fn several_subagents_of_one_response_run_at_once() {
    let mut r = start(World::new(), None, &[]).await;
    let a = task_call("t1", "first", "Look at one thing.");
    let b = task_call("t2", "second", "Look at another thing.");
    r.fake.push(Script::new().parallel_tool_calls(&[
        (a.0.as_str(), a.1.as_str(), a.2.as_str()),
        (b.0.as_str(), b.1.as_str(), b.2.as_str()),
    ]));
    // Each subagent answers after 1.5 s: run at once, the second's request reaches the model
    // while the first's answer is still on its way.
    for _ in 0..2 {
        r.fake.push(
            Script::new()
                .stall(Duration::from_millis(1500))
                .text("looked"),
        );
    }
    r.fake.push(Script::new().text("both done"));
    let prompt = r.send_prompt_id().await;
    let answer = r.client.wait_answer(&prompt).await.ok();
    assert_eq!(answer["stopReason"], "end_turn");
    // Model calls in the order they arrived: the parent's, then the two subagents'.
    let calls: Vec<_> = r
        .fake
        .timings()
        .into_iter()
        .filter(|t| t.path.ends_with("/messages"))
        .collect();
    let first_answered = calls[1]
        .reply_end_ns
        .expect("the first subagent's answer ended");
    assert!(
        calls[2].request_start_ns < first_answered,
        "the second subagent asked only after the first was answered"
    );
    let last = r.fake.requests().last().unwrap().body.to_string();
    assert_eq!(last.matches("looked").count(), 2, "{last}");
}

#[tokio::test]
async fn a_subagent_s_permission_request_names_it() {
    let mut r = start(World::new(), None, &[]).await;
    let outside = tempfile::tempdir().unwrap();
    let file = outside.path().join("notes.txt");
    std::fs::write(&file, "outside").unwrap();
    let (id, name, args) = task_call("t1", "peek outside", "Read the notes.");
    r.fake.push(Script::new().tool_call(&id, &name, args));
    r.fake
        .push(Script::new().tool_call("s1", "read", json!({"path": file}).to_string()));
    r.fake.push(Script::new().text("could not read it"));
    r.fake.push(Script::new().text("ok"));
    let prompt = r.send_prompt_id().await;
    let req = r.permission_request().await;
    let call = &req["params"]["toolCall"];
    assert_eq!(call["toolCallId"], "t1", "asked on the subagent's card");
    let title = call["title"].as_str().unwrap_or_default();
    assert!(
        title.contains("Subagent: peek outside") && title.contains("notes.txt"),
        "{title}"
    );
    r.answer(&req, "reject_once").await;
    assert_eq!(
        r.client.wait_answer(&prompt).await.ok()["stopReason"],
        "end_turn"
    );
    let sub_second = r.fake.requests()[2].body.to_string();
    assert!(
        sub_second.contains("declined"),
        "the subagent hears the refusal: {sub_second}"
    );
}

#[tokio::test]
async fn subagent_model_picks_the_subagents_model() {
    let world = World::new();
    world.write_config("[subagent]\nmodel = \"openai/gpt-5-mini\"\n");
    let mut r = start(world, None, &[]).await;
    let (id, name, args) = task_call("t1", "ask another model", "Say hi.");
    r.fake.push(Script::new().tool_call(&id, &name, args));
    r.fake.push(Script::new().text("hi from the small model"));
    r.fake.push(Script::new().text("done"));
    let prompt = r.send_prompt_id().await;
    assert_eq!(
        r.client.wait_answer(&prompt).await.ok()["stopReason"],
        "end_turn"
    );
    let reqs = r.fake.requests();
    assert_eq!(reqs[0].path, "/v1/messages", "the parent's model");
    assert_eq!(reqs[1].path, "/v1/responses", "the subagent's");
    assert_eq!(reqs[1].body["model"], "gpt-5-mini");
    assert!(reqs[2].body.to_string().contains("hi from the small model"));
    // Its model call is in the log, so the session's cost includes it.
    let log = std::fs::read_to_string(r.world.session_file(&r.sid)).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains("\"type\":\"usage\"") && l.contains("openai/gpt-5-mini")),
        "{log}"
    );
}
