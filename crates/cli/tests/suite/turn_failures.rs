//! Turns that end otherwise than with an answer, through the real binary: retried and fatal
//! provider errors, cut streams, stop reasons, `max_turn_requests`, a dead provider, cancels
//! during a stream or a retry's backoff (a second prompt while one runs: `steering.rs`).

use std::time::{Duration, Instant};

use ferrite_test_support::agent_text;
use ferrite_test_support::fake_provider::{FakeProvider, Reply, Script, StopReason};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::*;
use super::turns::*;

#[tokio::test]
async fn retryable_errors_are_retried_and_fatal_ones_fail_the_turn() {
    let mut r = rig(Api::Anthropic).await;
    r.fake.push(Reply::error_with_headers(
        429,
        &[("retry-after-ms", "150")],
        r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
    ));
    r.fake.push(Reply::error(
        529,
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    ));
    r.fake.push(Script::new().text("ok"));
    let (before, answer) = r.prompt("hi").await;
    // Each retry is shown as a notice while it waits, then the answer.
    let text = agent_text(&before);
    assert!(text.ends_with("ok"), "{text}");
    assert_eq!(text.matches("retrying in").count(), 2, "{text}");
    assert_eq!(answer["stopReason"], "end_turn");
    assert_eq!(r.requests().len(), 3);

    r.fake.push(Reply::error(
        401,
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
    ));
    let (before, answer) = r.prompt("again").await;
    assert_eq!(
        answer["_meta"]["ferrite"]["turnFailure"],
        json!({"terminalStatus": "provider_error", "errorKind": "auth"})
    );
    assert!(agent_text(&before).contains("invalid x-api-key"));
    assert_eq!(r.requests().len(), 4, "401 is not retried");

    r.fake.push(Reply::error(429, r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#));
    let (_, answer) = r.prompt("and again").await;
    assert_eq!(
        answer["_meta"]["ferrite"]["turnFailure"]["errorKind"],
        "insufficient_quota"
    );
    assert_eq!(r.requests().len(), 5, "insufficient_quota is not retried");
}

#[tokio::test]
async fn a_cut_stream_is_a_failure_not_a_success() {
    for api in ALL {
        let mut r = rig(api).await;
        r.fake.push(Script::new().text("partial").cut());
        let (before, answer) = r.prompt("hi").await;
        assert_eq!(
            answer["_meta"]["ferrite"]["turnFailure"],
            json!({"terminalStatus": "provider_error", "errorKind": "stream_cut"}),
            "{api:?}"
        );
        assert!(agent_text(&before).starts_with("partial"), "{api:?}");
    }
}

#[tokio::test]
async fn stop_reasons_pass_through() {
    let mut r = rig(Api::Anthropic).await;
    r.fake
        .push(Script::new().text("trunc").stop(StopReason::MaxTokens));
    assert_eq!(r.prompt("a").await.1["stopReason"], "max_tokens");
    r.fake.push(Script::new().stop(StopReason::Refusal));
    assert_eq!(r.prompt("b").await.1["stopReason"], "refusal");
}

#[tokio::test]
async fn max_turn_requests_stops_a_model_that_keeps_calling_tools() {
    let world = World::new();
    world.write_config("max_turn_requests = 3\n");
    let fake = FakeProvider::start().await.unwrap();
    fake.set_fallback(Script::new().tool_call("again", "update_plan", plan_args()));
    let mut c = world.spawn_acp(provider_env(&fake, Api::Chat));
    c.initialize().await;
    let s = sid(&c.new_session(&world.ws()).await);
    let answer = c
        .request("session/prompt", text_prompt(&s, "loop"))
        .await
        .ok();
    assert_eq!(answer["stopReason"], "max_turn_requests");
    assert_eq!(fake.requests().len(), 3);
}

#[tokio::test]
async fn cancel_during_a_stream_answers_cancelled_once_and_history_stays_well_formed() {
    for api in ALL {
        let mut r = rig(api).await;
        r.fake.push(
            Script::new()
                .text("first words")
                .stall(Duration::from_secs(600))
                .text(" never"),
        );
        let id = r
            .client
            .send_request("session/prompt", text_prompt(&r.sid, "long task"))
            .await;
        r.client
            .wait_for(Duration::from_secs(10), |m| {
                m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
            })
            .await
            .expect("first chunk");
        let t = Instant::now();
        r.client
            .notify("session/cancel", json!({"sessionId": r.sid}))
            .await;
        let (_, answer) = r.client.collect_until_answer(&id).await;
        assert_eq!(answer.ok(), json!({"stopReason": "cancelled"}), "{api:?}");
        assert!(
            t.elapsed() < HANG_GUARD,
            "{api:?}: cancel took {:?}",
            t.elapsed()
        );
        let after = r.client.drain(Duration::from_millis(500)).await;
        assert!(
            after.is_empty(),
            "{api:?}: nothing after the answer: {after:?}"
        );

        r.fake.push(Script::new().text("fresh"));
        let (before, answer) = r.prompt("next").await;
        assert_eq!(agent_text(&before), "fresh");
        assert_eq!(answer["stopReason"], "end_turn");
        let text = body_text(&r.requests()[1]);
        assert!(
            text.contains("first words") && text.contains("long task") && text.contains("next"),
            "{api:?}: {text}"
        );
    }
}

#[tokio::test]
async fn cancel_during_a_retry_backoff_is_immediate() {
    let mut r = rig(Api::Responses).await;
    r.fake.push(Reply::error_with_headers(
        503,
        // The longest wait honoured: a cancel that waited for it fails the hang guard.
        &[("retry-after", "60")],
        r#"{"error":{"message":"busy","type":"server_error"}}"#,
    ));
    let id = r
        .client
        .send_request("session/prompt", text_prompt(&r.sid, "x"))
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let t = Instant::now();
    r.client
        .notify("session/cancel", json!({"sessionId": r.sid}))
        .await;
    let answer = r.client.wait_answer(&id).await.ok();
    assert_eq!(answer["stopReason"], "cancelled");
    assert!(t.elapsed() < HANG_GUARD, "{:?}", t.elapsed());
}

#[tokio::test]
async fn a_dead_provider_is_a_provider_error() {
    let world = World::new();
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut c = world.spawn_env(&[
        ("ANTHROPIC_BASE_URL", &format!("http://127.0.0.1:{port}")),
        ("ANTHROPIC_API_KEY", "k"),
        ("FERRITE_RETRY_BASE_MS", "10"),
    ]);
    c.initialize().await;
    let s = sid(&c.new_session(&world.ws()).await);
    let id = c
        .send_request("session/prompt", text_prompt(&s, "anyone?"))
        .await;
    let (before, answer) = c.collect_until_answer(&id).await;
    let a = answer.ok();
    assert_eq!(
        a["_meta"]["ferrite"]["turnFailure"],
        json!({"terminalStatus": "provider_error", "errorKind": "connection"})
    );
    assert!(!agent_text(&before).is_empty());
}
