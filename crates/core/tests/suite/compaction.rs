//! Compaction: the model summarizes the conversation, and later requests carry the summary
//! instead of what it replaced; on `/compact` and when the context passed the threshold.

use ferrite_core::events::{CompactionStage, Event};
use ferrite_core::model::{Message, UserPart};
use ferrite_store::log::StopReason;
use ferrite_test_support::scripted_model::Reply;
use serde_json::json;

use super::rig::{Rig, Seen, agent_text, ended};

fn first_text(messages: &[Message]) -> String {
    match messages.first() {
        Some(Message::User { content }) => match content.first() {
            Some(UserPart::Text { text }) => text.to_string(),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

/// The compaction started and completed, with the notice clients without compaction updates get.
fn compacted_notice(seen: &[Seen]) -> bool {
    let started = seen.iter().any(|s| {
        matches!(s, Seen::Event(Event::Compaction { id, stage: CompactionStage::Started }) if id == "compaction-1")
    });
    started
        && seen.iter().any(|s| {
            matches!(s, Seen::Event(Event::Compaction { stage: CompactionStage::Completed { notice, .. }, .. }) if notice.starts_with("Compacted the conversation"))
        })
}

#[tokio::test]
async fn compact_replaces_the_history_the_model_is_sent() {
    let mut r = Rig::new().await;
    r.model.push(Reply::new().text("the answer is 42"));
    r.turn("what is the answer about the old secret", &[]).await;

    r.model.push(
        Reply::new()
            .text("SUMMARY: the answer is 42")
            .usage(5000, 30),
    );
    let (seen, outcome) = r.turn("/compact keep the number", &[]).await;
    assert_eq!(outcome, ended(StopReason::EndTurn));
    assert!(compacted_notice(&seen), "{seen:?}");
    let ask = &r.model.requests()[1];
    assert!(ask.tools.is_empty(), "a summary request offers no tools");
    let last = format!("{:?}", ask.messages.last());
    assert!(
        last.contains("Summarize") && last.contains("keep the number"),
        "{last}"
    );

    r.model.push(Reply::new().text("fine"));
    r.turn("and now?", &[]).await;
    let after = &r.model.requests()[2].messages;
    assert!(first_text(after).contains("SUMMARY: the answer is 42"));
    assert!(!format!("{after:?}").contains("old secret"), "{after:?}");
}

#[tokio::test]
async fn compact_with_nothing_to_compact_says_so_without_calling_the_model() {
    let mut r = Rig::new().await;
    let (seen, outcome) = r.turn("/compact", &[]).await;
    assert_eq!(outcome, ended(StopReason::EndTurn));
    assert_eq!(agent_text(&seen), "Nothing to compact yet.");
    assert!(r.model.requests().is_empty());
}

#[tokio::test]
async fn a_context_past_the_threshold_is_compacted_before_the_next_request() {
    let mut r = Rig::new().await;
    std::fs::write(r.ws().join("a.txt"), "alpha\n").unwrap();
    // 900k of a 1M window: past the default threshold (0.85), mid-turn.
    r.model.push(
        Reply::new()
            .tool_call("r1", "read", json!({"path": "a.txt"}))
            .usage(900_000, 10),
    );
    r.model.push(Reply::new().text("SUMMARY: read a.txt"));
    r.model.push(Reply::new().text("done"));
    let (seen, outcome) = r.turn("the big task", &[]).await;
    assert_eq!(outcome, ended(StopReason::EndTurn));
    assert!(compacted_notice(&seen), "{seen:?}");
    let requests = r.model.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests[1].tools.is_empty());
    assert!(format!("{:?}", requests[1].messages).contains("alpha"));
    let sent = &requests[2].messages;
    assert!(first_text(sent).contains("SUMMARY: read a.txt"));
    assert!(!format!("{sent:?}").contains("big task"), "{sent:?}");
}
