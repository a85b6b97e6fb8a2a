//! Where a subagent session's events go. A client that shows child sessions (ACP `subagents`)
//! is sent them as they are, under the child's id. Any other client never hears of the child:
//! it sees the parent's `task` card, whose content lists the tools the subagent ran, and the
//! subagent's notices on the parent; its questions are asked about that card
//! ([`super::Recorder::asked_about`]).

use std::sync::Mutex;

use crate::content::{ToolCallUpdateView, ToolCallView, ToolContent, ToolStatus};
use crate::events::{Event, SessionEvent};

use super::Recorder;

pub(crate) struct Relay {
    /// The parent's recorder, in the turn that called `task`.
    pub(super) parent: Recorder,
    /// The parent's `task` card.
    pub(super) card: ToolCallView,
    /// The client shows child sessions.
    pub(super) shown: bool,
    /// The titles of the tools the subagent ran, in order.
    progress: Mutex<Vec<String>>,
}

impl Relay {
    pub fn new(parent: Recorder, card: ToolCallView, shown: bool) -> Self {
        Self {
            parent,
            card,
            shown,
            progress: Mutex::default(),
        }
    }

    fn progress(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.progress.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the editor shows the child's session.
    pub fn shown(&self) -> bool {
        self.shown
    }

    /// The parent's `task` card.
    pub fn card(&self) -> &ToolCallView {
        &self.card
    }

    /// The card's text so far: the tools the subagent ran.
    pub fn progress_text(&self) -> String {
        progress_text(&self.progress())
    }

    pub(super) async fn pass(&self, ev: SessionEvent) {
        let listing = match &ev.event {
            Event::ToolCall(v) => {
                let mut progress = self.progress();
                progress.push(v.title.clone());
                Some(progress_text(&progress))
            }
            _ => None,
        };
        if self.shown {
            self.parent.forward(ev).await;
            return;
        }
        let parent = self.parent.session_id().clone();
        match (ev.event, listing) {
            // The card lists the subagent's steps but never takes its calls' `locations`: a
            // client names a card by its files ("Other: hello.txt" in CodeCompanion) and the
            // card is the task, not the file the child is on (issue 35). The child's locations
            // stay on the child's own updates, sent to clients that show child sessions.
            (Event::ToolCall(_), Some(text)) => {
                let update = ToolCallUpdateView {
                    id: self.card.id.clone(),
                    status: Some(ToolStatus::InProgress),
                    content: Some(vec![ToolContent::Text { text: text.into() }]),
                    ..Default::default()
                };
                self.parent
                    .send(parent, Event::ToolCallUpdate(update))
                    .await;
            }
            (notice @ Event::Notice { .. }, _) => self.parent.send(parent, notice).await,
            _ => {}
        }
    }
}

/// The tools a subagent ran, one per line, as its card lists them.
fn progress_text(progress: &[String]) -> String {
    if progress.is_empty() {
        return String::new();
    }
    let mut out = String::from("Subagent steps:\n");
    for p in progress {
        out.push_str(&format!("- {}\n", p.replace('\n', " ")));
    }
    out.push('\n');
    out
}
