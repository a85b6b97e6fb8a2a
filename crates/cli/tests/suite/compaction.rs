//! `/compact` and automatic compaction at `compaction.threshold`.

use std::path::Path;

use ferrite_test_support::fake_provider::{FakeProvider, Script};
use ferrite_test_support::{AcpClient, agent_text, updates};
use serde_json::json;

use super::common::*;

async fn local_provider(
    world: &World,
    window: u64,
    threshold: f64,
) -> (FakeProvider, AcpClient, String) {
    let fake = FakeProvider::start().await.unwrap();
    world.write_config(&format!(
        "model = \"local/small\"\n[compaction]\nthreshold = {threshold}\n[providers.local]\napi = \"openai-chat\"\nbase_url = \"{}/v1\"\nmodels = [{{ id = \"small\", context_window = {window} }}]\n",
        fake.base_url()
    ));
    let mut c = AcpClient::spawn(Path::new(BIN), world.home(), &[]);
    c.initialize().await;
    let s = sid(&c.new_session(&world.ws()).await);
    (fake, c, s)
}

#[tokio::test]
async fn slash_compact_replaces_history_with_a_summary() {
    let world = World::new();
    let (fake, mut c, s) = local_provider(&world, 100_000, 0.85).await;
    fake.push(Script::new().text("The answer is in src/lib.rs."));
    c.request("session/prompt", text_prompt(&s, "where is the parser?"))
        .await
        .ok();
    fake.push(
        Script::new()
            .text("SUMMARY: parser lives in src/lib.rs")
            .usage(50, 12, 0),
    );
    let id = c
        .send_request("session/prompt", text_prompt(&s, "/compact keep paths"))
        .await;
    let (before, answer) = c.collect_until_answer(&id).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
    assert!(
        agent_text(&before).contains("Compacted the conversation"),
        "{}",
        agent_text(&before)
    );
    let usage = updates(&before)
        .into_iter()
        .find(|(k, _)| k == "usage_update")
        .unwrap()
        .1;
    assert_eq!(usage["used"], 12);
    let req = &fake.requests()[1].body;
    assert!(
        req.get("tools").is_none() || req["tools"].as_array().unwrap().is_empty(),
        "no tools while summarizing"
    );
    let text = req["messages"].to_string();
    assert!(text.contains("where is the parser?") && text.contains("keep paths"));

    fake.push(Script::new().text("ok"));
    c.request("session/prompt", text_prompt(&s, "next question"))
        .await
        .ok();
    let msgs = fake.requests()[2].body["messages"].clone();
    let all = msgs.to_string();
    assert!(all.contains("SUMMARY: parser lives in src/lib.rs") && all.contains("next question"));
    assert!(
        !all.contains("where is the parser?"),
        "the compacted part is not sent again"
    );

    // The editor still gets the whole conversation on load.
    c.request("session/close", json!({"sessionId": s}))
        .await
        .ok();
    let id = c
        .send_request(
            "session/load",
            json!({"sessionId": s, "cwd": world.ws(), "mcpServers": []}),
        )
        .await;
    let (replay, _) = c.collect_until_answer(&id).await;
    let users: Vec<String> = updates(&replay)
        .into_iter()
        .filter(|(k, _)| k == "user_message_chunk")
        .map(|(_, u)| u["content"]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        users,
        [
            "where is the parser?",
            "/compact keep paths",
            "next question"
        ]
    );
}

#[tokio::test]
async fn the_context_threshold_triggers_compaction_mid_turn() {
    let world = World::new();
    let (fake, mut c, s) = local_provider(&world, 1_000, 0.5).await;
    let plan = json!({"entries": [{"content": "look", "status": "in_progress"}]}).to_string();
    fake.push(
        Script::new()
            .tool_call("t1", "update_plan", plan)
            .usage(900, 5, 0),
    );
    fake.push(
        Script::new()
            .text("SUMMARY: planning started")
            .usage(905, 20, 0),
    );
    fake.push(Script::new().text("done"));
    let answer = c
        .request("session/prompt", text_prompt(&s, "big task"))
        .await
        .ok();
    assert_eq!(answer["stopReason"], "end_turn");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 3);
    assert!(
        reqs[1].body["messages"]
            .to_string()
            .contains("Summarize the conversation")
    );
    let third = reqs[2].body["messages"].to_string();
    assert!(third.contains("SUMMARY: planning started"));
    assert!(!third.contains("big task"), "compacted: {third}");
}
