//! A provider call that is retried is shown to the user while it waits, and only to the user.

use std::time::Duration;

use ferrite_test_support::fake_provider::{FakeProvider, Reply, Script};
use serde_json::{Value, json};

use super::common::*;
use super::turns::{Api, provider_env};

#[tokio::test]
async fn a_retry_is_shown_while_it_waits_and_not_sent_to_the_model() {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    let mut c = world.spawn_acp(provider_env(&fake, Api::Anthropic));
    c.initialize().await;
    let s = sid(&c.new_session(&world.ws()).await);
    let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    fake.push(Reply::error_with_headers(
        529,
        &[("retry-after-ms", "1500")],
        body,
    ));
    fake.push(Script::new().text("finally"));
    let id = c
        .send_request("session/prompt", text_prompt(&s, "hello"))
        .await;
    let notice = c
        .wait_for(Duration::from_secs(10), |m| {
            m["params"]["update"]["_meta"]["ferrite"]["notice"] == true
        })
        .await
        .expect("a retry notice");
    assert_eq!(
        fake.requests().len(),
        1,
        "the notice arrives while ferrite waits to retry"
    );
    let update = &notice["params"]["update"];
    assert_eq!(update["sessionUpdate"], "agent_message_chunk");
    let text = update["content"]["text"].as_str().unwrap();
    assert_eq!(
        text.trim(),
        "anthropic returned HTTP 529 (overloaded_error): Overloaded — retrying in 2 s (attempt 2 of 3)."
    );
    let (_, answer) = c.collect_until_answer(&id).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    assert!(
        !reqs[1].body.to_string().contains("retrying in"),
        "the model is not told"
    );

    // Nor is it part of the conversation a load replays.
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
    assert!(
        replay
            .iter()
            .all(|m: &Value| !m.to_string().contains("retrying in")),
        "{replay:?}"
    );
}
