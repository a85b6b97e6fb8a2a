//! A turn that dies (a panic in a provider client, on the turn's task) ends like any failed
//! turn, and the session keeps serving.

use ferrite_core::model::{ModelErrorKind, TerminalStatus};
use ferrite_store::log::{StopReason, TurnFailure};
use ferrite_test_support::scripted_model::Reply;

use super::rig::{Rig, agent_text, ended};

#[tokio::test]
async fn a_model_that_panics_ends_the_turn_as_interrupted_and_the_session_goes_on() {
    let mut r = Rig::new().await;
    r.model.push(
        Reply::new()
            .text("start")
            .panic("a bug in a provider client"),
    );
    let (seen, outcome) = r.turn("boom", &[]).await;
    assert_eq!(outcome.stop, StopReason::EndTurn);
    let failure = outcome.failure.expect("a turn failure");
    assert_eq!(
        (failure.terminal_status, failure.error_kind.as_str()),
        (TerminalStatus::Interrupted, "internal")
    );
    assert!(
        agent_text(&seen).contains("stopped unexpectedly"),
        "{seen:?}"
    );

    // The same session takes the next prompt, and its model sees the first prompt too.
    r.model.push(Reply::new().text("still here"));
    let (seen, outcome) = r.turn("again", &[]).await;
    assert_eq!(outcome, ended(StopReason::EndTurn));
    assert_eq!(agent_text(&seen), "still here");
    assert_eq!(r.model.requests().len(), 2);
    assert!(format!("{:?}", r.model.requests()[1].messages).contains("boom"));
}

#[tokio::test]
async fn a_failed_model_call_is_a_provider_error_with_its_kind() {
    let mut r = Rig::new().await;
    r.model.push(
        Reply::new()
            .text("par")
            .error(ModelErrorKind::Http { status: 529 }, "overloaded"),
    );
    let (seen, outcome) = r.turn("go", &[]).await;
    assert_eq!(
        outcome.failure,
        Some(TurnFailure {
            terminal_status: TerminalStatus::ProviderError,
            error_kind: "http_529".into(),
            message: "The model request failed: overloaded".into(),
        })
    );
    assert_eq!(agent_text(&seen), "parThe model request failed: overloaded");
}
