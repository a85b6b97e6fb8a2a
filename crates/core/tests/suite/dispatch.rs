//! Tool dispatch as the editor sees it: the call's card first, then the permission request
//! about it, then its progress, then its result; the result goes back to the model.

use ferrite_core::events::Event;
use ferrite_core::model::Message;
use ferrite_store::log::StopReason;
use ferrite_test_support::scripted_model::Reply;
use serde_json::json;

use super::rig::{Rig, Seen, call_result, call_steps, ended};

#[tokio::test]
async fn a_write_is_shown_asked_run_and_answered_in_that_order() {
    let mut r = Rig::new().await;
    r.model.push(Reply::new().text("writing").tool_call(
        "w1",
        "write",
        json!({"path": "notes.txt", "content": "hello\n"}),
    ));
    r.model.push(Reply::new().text("done"));
    let (seen, outcome) = r.turn("write it", &["allow_once"]).await;
    assert_eq!(outcome, ended(StopReason::EndTurn));
    assert_eq!(
        call_steps(&seen),
        ["call w1", "asked w1", "in_progress w1", "completed w1"]
    );
    // The question shows what would change.
    let asked = seen
        .iter()
        .find_map(|s| match s {
            Seen::Asked(q) => Some(q.clone()),
            _ => None,
        })
        .unwrap();
    assert!(format!("{:?}", asked.call.content).contains("hello"));
    assert_eq!(
        std::fs::read_to_string(r.ws().join("notes.txt")).unwrap(),
        "hello\n"
    );
    // The model's second request carries the result of its call.
    let second = &r.model.requests()[1].messages;
    assert!(
        matches!(second.last(), Some(Message::ToolResults { results }) if results[0].call_id == "w1" && !results[0].is_error),
        "{second:?}"
    );
    // The usage of each response is shown, and the turn's end comes last.
    assert!(matches!(
        seen.last(),
        Some(Seen::Event(Event::TurnEnded(_)))
    ));
    let usages = seen
        .iter()
        .filter(|s| matches!(s, Seen::Event(Event::Usage { .. })))
        .count();
    assert_eq!(usages, 2);
}

#[tokio::test]
async fn calls_of_one_response_run_in_order_and_an_unknown_tool_is_answered_without_asking() {
    let mut r = Rig::new().await;
    std::fs::write(r.ws().join("a.txt"), "alpha\n").unwrap();
    r.model.push(
        Reply::new()
            .tool_call("r1", "read", json!({"path": "a.txt"}))
            .tool_call("x1", "teleport", json!({}))
            .tool_call("r2", "read", json!({"path": "missing.txt"})),
    );
    r.model.push(Reply::new().text("ok"));
    let (seen, outcome) = r.turn("look", &[]).await;
    assert_eq!(outcome, ended(StopReason::EndTurn));
    assert_eq!(
        call_steps(&seen),
        [
            "call r1",
            "in_progress r1",
            "completed r1",
            "call x1",
            "failed x1",
            "call r2",
            "in_progress r2",
            "failed r2",
        ]
    );
    assert!(call_result(&seen, "x1").contains("Unknown tool `teleport`"));
    let Some(Message::ToolResults { results }) = r.model.requests()[1].messages.last().cloned()
    else {
        panic!("no tool results sent");
    };
    let got: Vec<(&str, bool)> = results
        .iter()
        .map(|r| (r.call_id.as_str(), r.is_error))
        .collect();
    assert_eq!(got, [("r1", false), ("x1", true), ("r2", true)]);
    assert!(results[0].content.contains("alpha"));
}
