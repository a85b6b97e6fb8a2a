//! Cancel races: a cancel reaches the turn it was meant for wherever the turn is, and never a
//! later one.

use ferrite_core::events::{Event, TurnOptions};
use ferrite_core::model::Message;
use ferrite_core::modes::Mode;
use ferrite_store::log::StopReason;
use ferrite_test_support::scripted_model::Reply;
use serde_json::json;

use super::rig::{
    FakeRunner, Rig, RunnerKind, Seen, agent_text, assert_cards_before_updates, call_result,
    call_steps, ended, text_prompt,
};

#[tokio::test]
async fn a_cancel_sent_before_the_prompt_is_accepted_still_cancels_its_turn() {
    let mut r = Rig::new().await;
    r.model.push(Reply::new().stall());
    // Queued, not yet accepted: the cancel is behind it in the session's queue.
    let ack = r
        .session
        .submit_prompt(text_prompt("go"), TurnOptions::default())
        .unwrap();
    r.session.cancel();
    ack.admitted.await.unwrap().unwrap();
    let (_, outcome) = r.finish(&[]).await;
    assert_eq!(outcome, ended(StopReason::Cancelled));
}

#[tokio::test]
async fn a_cancel_with_no_turn_running_does_not_reach_the_next_turn() {
    let mut r = Rig::new().await;
    r.session.cancel();
    r.model.push(Reply::new().text("done"));
    let (seen, outcome) = r.turn("go", &[]).await;
    assert_eq!(outcome, ended(StopReason::EndTurn));
    assert_eq!(agent_text(&seen), "done");
}

#[tokio::test]
async fn a_cancel_while_streaming_keeps_what_was_shown() {
    let mut r = Rig::new().await;
    r.model.push(Reply::new().text("half an ans").stall());
    r.prompt("go").await;
    r.until(|s| matches!(s, Seen::Event(Event::AgentMessageChunk { .. })))
        .await;
    r.session.cancel();
    let (_, outcome) = r.finish(&[]).await;
    assert_eq!(outcome, ended(StopReason::Cancelled));
    // The next request's history has the text the user saw.
    r.model.push(Reply::new().text("again"));
    r.turn("continue", &[]).await;
    let sent = &r.model.requests()[1].messages;
    assert!(
        matches!(&sent[1], Message::Assistant { content } if format!("{content:?}").contains("half an ans")),
        "{sent:?}"
    );
}

#[tokio::test]
async fn a_cancel_while_a_command_runs_stops_it_and_answers_the_call() {
    let mut r = Rig::with_runner(FakeRunner::new(RunnerKind::Hold)).await;
    r.set_mode(Mode::Full).await;
    r.model.push(
        Reply::new()
            .tool_call("c1", "bash", json!({"command": "sleep 100"}))
            .tool_call("c2", "bash", json!({"command": "echo never"})),
    );
    r.prompt("go").await;
    let mut seen = r
        .until(|s| call_steps(std::slice::from_ref(s)) == ["in_progress c1"])
        .await;
    r.session.cancel();
    let (rest, outcome) = r.finish(&[]).await;
    seen.extend(rest);
    // The call that never ran is shown as a card before its result, like every call.
    assert_cards_before_updates(&seen);
    assert_eq!(outcome, ended(StopReason::Cancelled));
    let steps = call_steps(&seen);
    assert!(
        steps.contains(&"failed c1".to_owned()) && steps.contains(&"failed c2".to_owned()),
        "{steps:?}"
    );
    assert!(call_result(&seen, "c1").contains("Cancelled by the user while it ran"));
    assert!(call_result(&seen, "c2").contains("before it ran"));
    assert_eq!(r.runner.ran().len(), 1, "the second command never started");
    // Every call has a result in the next request, so it is well formed.
    r.model.push(Reply::new().text("ok"));
    r.turn("next", &[]).await;
    let sent = &r.model.requests()[1].messages;
    assert!(
        matches!(&sent[2], Message::ToolResults { results } if results.len() == 2),
        "{sent:?}"
    );
}

#[tokio::test]
async fn a_cancel_after_the_turn_ended_changes_nothing() {
    let mut r = Rig::new().await;
    r.model.push(Reply::new().text("one"));
    let (_, outcome) = r.turn("first", &[]).await;
    assert_eq!(outcome, ended(StopReason::EndTurn));
    r.session.cancel();
    r.quiet().await;
    r.model.push(Reply::new().text("two"));
    let (seen, outcome) = r.turn("second", &[]).await;
    assert_eq!(outcome, ended(StopReason::EndTurn));
    assert_eq!(agent_text(&seen), "two");
}
