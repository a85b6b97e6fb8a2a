//! Permission paths in `ask` mode: allow once, reject, always allow (stored for the workspace
//! and applied, after a restart too), and a cancel while the user is being asked.

use ferrite_core::permissions::StoredRules;
use ferrite_store::log::StopReason;
use ferrite_test_support::scripted_model::Reply;
use serde_json::json;

use super::rig::{Rig, Seen, assert_cards_before_updates, call_result, call_steps, ended};

fn bash(id: &str, command: &str) -> Reply {
    Reply::new().tool_call(id, "bash", json!({ "command": command }))
}

#[tokio::test]
async fn allow_once_runs_the_call_and_asks_again_next_time() {
    let mut r = Rig::new().await;
    for (id, answer) in [("b1", "allow_once"), ("b2", "allow_once")] {
        r.model.push(bash(id, "make test"));
        r.model.push(Reply::new().text("ok"));
        let (seen, outcome) = r.turn("test it", &[answer]).await;
        assert_eq!(outcome, ended(StopReason::EndTurn));
        assert!(call_steps(&seen).contains(&format!("asked {id}")));
        assert!(call_result(&seen, id).contains("ran: make test"));
    }
    assert_eq!(r.runner.ran().len(), 2);
}

#[tokio::test]
async fn a_rejected_call_does_not_run_and_the_model_is_told() {
    let mut r = Rig::new().await;
    r.model
        .push(Reply::new().tool_call("w1", "write", json!({"path": "x.txt", "content": "no"})));
    r.model.push(Reply::new().text("understood"));
    let (seen, outcome) = r.turn("write", &["reject_once"]).await;
    assert_eq!(outcome, ended(StopReason::EndTurn));
    assert_eq!(call_steps(&seen), ["call w1", "asked w1", "failed w1"]);
    assert!(!r.ws().join("x.txt").exists());
    let sent = format!("{:?}", r.model.requests()[1].messages);
    assert!(sent.contains("The user declined this call."), "{sent}");
}

#[tokio::test]
async fn always_allow_is_stored_for_the_workspace_and_applied_after_a_restart() {
    let mut r = Rig::new().await;
    r.model.push(bash("b1", "git status"));
    r.model.push(Reply::new().text("ok"));
    r.prompt("status").await;
    let seen = r.until(|s| matches!(s, Seen::Asked(_))).await;
    let Some(Seen::Asked(q)) = seen.last() else {
        unreachable!()
    };
    let always = q.options.iter().find(|o| o.id == "allow_always").unwrap();
    assert_eq!(
        always.name,
        "Always allow \"git status …\" commands in this workspace"
    );
    r.answer("allow_always");
    let (_, outcome) = r.finish(&[]).await;
    assert_eq!(outcome, ended(StopReason::EndTurn));
    let stored = StoredRules::load(r.home.path(), r.ws()).unwrap();
    assert_eq!(stored.allow, ["bash(git status:*)"]);

    // Applied at once, and after a restart: no question, the command runs.
    for _ in 0..2 {
        r.model.push(bash("b2", "git status --short"));
        r.model.push(Reply::new().text("ok"));
        let (seen, _) = r.turn("again", &[]).await;
        assert_eq!(
            call_steps(&seen),
            ["call b2", "in_progress b2", "completed b2"]
        );
        r = r.restart().await;
    }
    // A command the rule does not cover still asks.
    r.model.push(bash("b3", "git push"));
    r.model.push(Reply::new().text("ok"));
    let (seen, _) = r.turn("push", &["reject_once"]).await;
    assert!(call_steps(&seen).contains(&"asked b3".to_owned()));
}

#[tokio::test]
async fn a_cancel_while_asking_withdraws_the_question_and_runs_nothing() {
    let mut r = Rig::new().await;
    r.model.push(bash("b1", "rm -rf build"));
    r.prompt("clean").await;
    r.until(|s| matches!(s, Seen::Asked(_))).await;
    r.session.cancel();
    let (seen, outcome) = r.finish(&[]).await;
    assert_eq!(outcome, ended(StopReason::Cancelled));
    assert_eq!(call_steps(&seen), ["failed b1"]);
    assert!(call_result(&seen, "b1").contains("Cancelled by the user"));
    assert!(r.runner.ran().is_empty());
    // The user answering late changes nothing.
    r.answer("allow_once");
    r.quiet().await;
    assert!(r.runner.ran().is_empty());
}

/// An editor answers an open question "cancelled" when the user cancels the turn, and may do so
/// before its `session/cancel` reaches the agent. The turn must take that as the cancel: no
/// question about the next call, nothing run.
#[tokio::test]
async fn a_question_answered_cancelled_ends_the_turn_without_asking_again() {
    let mut r = Rig::new().await;
    r.model.push(
        Reply::new()
            .tool_call("b1", "bash", json!({"command": "rm -rf build"}))
            .tool_call("b2", "bash", json!({"command": "rm -rf dist"})),
    );
    r.prompt("clean").await;
    let mut seen = r.until(|s| matches!(s, Seen::Asked(_))).await;
    r.answer_cancelled();
    let (rest, outcome) = r.finish(&[]).await;
    seen.extend(rest);
    assert_eq!(outcome, ended(StopReason::Cancelled));
    let asked: Vec<String> = call_steps(&seen)
        .into_iter()
        .filter(|s| s.starts_with("asked"))
        .collect();
    assert_eq!(asked, ["asked b1"], "{:?}", call_steps(&seen));
    assert!(r.runner.ran().is_empty());
    assert_cards_before_updates(&seen);
}
