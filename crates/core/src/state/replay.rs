//! The editor's view of a session's history: what `session/load` replays, as it was shown live.

use std::collections::HashSet;

use super::SessionState;
use crate::content::{ToolCallUpdateView, UserContent};
use crate::events::{CompactionStage, Event, SubagentView};
use crate::log::EntryKind;
use crate::model::AssistantPart;

/// How a compaction shows in a replay.
pub const COMPACTED_MARKER: &str =
    "Compacted the conversation: the model continues from a summary of what came before.";

/// Put before a response's text when the editor was last shown the previous response's text
/// (hidden calls only between them): Markdown clients would run the two together.
pub const RESPONSE_BREAK: &str = "\n\n";

/// Whether a response leaves its text as the last thing the editor shows: it has text and every
/// tool call it makes is shown as no card (`update_plan`).
pub fn ends_in_shown_text(content: &[AssistantPart]) -> bool {
    content
        .iter()
        .any(|p| matches!(p, AssistantPart::Text { text } if !text.is_empty()))
        && content.iter().all(|p| match p {
            AssistantPart::ToolCall { name, .. } => name == crate::tools::UPDATE_PLAN,
            AssistantPart::Text { .. }
            | AssistantPart::Reasoning { .. }
            | AssistantPart::Opaque { .. } => true,
        })
}

/// A replay being made, entry by entry.
struct Replay<'a> {
    state: &'a SessionState,
    out: Vec<Event>,
    /// The last response's text was the last thing shown (as `turn::request_loop` tracks).
    after_text: bool,
    /// `update_plan` calls replay as their `plan` update only, as they were shown live.
    hidden: HashSet<&'a str>,
    compactions: usize,
}

impl SessionState {
    /// What `session/load` replays: the conversation as the editor saw it.
    pub fn replay(&self) -> Vec<Event> {
        let mut r = Replay {
            state: self,
            out: Vec::with_capacity(self.history.len()),
            after_text: false,
            hidden: HashSet::new(),
            compactions: 0,
        };
        for (i, kind) in self.history.iter().enumerate() {
            r.entry(i, kind);
        }
        r.out
    }
}

impl<'a> Replay<'a> {
    fn entry(&mut self, i: usize, kind: &'a EntryKind) {
        match kind {
            EntryKind::UserMessage { id, content } => self.user(id.clone(), content),
            EntryKind::Command { content } => self.user(None, content),
            EntryKind::Compaction { summary } => self.compaction(summary),
            EntryKind::Assistant { content } => self.assistant(content),
            EntryKind::ToolCall { name, call } if name == crate::tools::UPDATE_PLAN => {
                self.hidden.insert(&call.id);
            }
            EntryKind::ToolCall { call, .. } | EntryKind::DisplayToolCall { call } => {
                self.out.push(Event::ToolCall((**call).clone()))
            }
            EntryKind::ToolResult { call_id, .. } if self.hidden.contains(call_id.as_str()) => {}
            EntryKind::ToolResult { update, output, .. } => {
                self.out.push(Event::ToolCallUpdate(ToolCallUpdateView {
                    raw_output: Some(crate::content::raw_output(output)),
                    ..(**update).clone()
                }))
            }
            EntryKind::Plan { entries } => self.out.push(Event::Plan {
                entries: entries.clone(),
            }),
            EntryKind::TurnEnd {
                failure: Some(f), ..
            } => self.text(&f.message),
            EntryKind::Reply { text } => self.text(text),
            EntryKind::HookContext { event, context } => self.out.push(Event::Notice {
                text: crate::hooks::context_notice(event, context),
            }),
            EntryKind::SessionMessage {
                message_id,
                from,
                content,
            } => self.session_message(message_id, from, content),
            EntryKind::Subagent {
                session,
                title,
                running: true,
            } => self.subagent(session, title),
            // Logs written before `Reply` existed: the undo's answer made again from it.
            EntryKind::Checkpoint {
                undid,
                files,
                skipped,
                ..
            } if !undid.is_empty()
                && !matches!(self.state.history.get(i + 1), Some(EntryKind::Reply { .. })) =>
            {
                let text =
                    crate::file_changes::undo_message(undid, files, skipped, &self.state.cwd);
                self.text(&text)
            }
            EntryKind::Subagent { running: false, .. }
            | EntryKind::TurnEnd { failure: None, .. }
            | EntryKind::Checkpoint { .. }
            | EntryKind::Mode { .. }
            | EntryKind::Usage { .. }
            | EntryKind::Model { .. }
            | EntryKind::Effort { .. }
            | EntryKind::WebSearch { .. }
            | EntryKind::Agent { .. }
            | EntryKind::Title { .. }
            | EntryKind::Directories { .. }
            | EntryKind::SystemPrompt { .. }
            | EntryKind::Rewind { .. } => {}
        }
    }

    fn text(&mut self, text: &str) {
        self.out.push(Event::AgentMessageChunk {
            text: text.to_owned(),
        })
    }

    fn user(&mut self, message_id: Option<String>, content: &[UserContent]) {
        self.after_text = false;
        self.out.push(Event::UserMessage {
            message_id,
            content: content.to_vec(),
        })
    }

    /// The marker the user saw when it happened (without the token counts).
    fn compaction(&mut self, summary: &str) {
        self.compactions += 1;
        self.out.push(Event::Compaction {
            id: crate::events::compaction_id(self.compactions),
            stage: CompactionStage::Completed {
                summary: summary.to_owned(),
                notice: COMPACTED_MARKER.into(),
            },
        })
    }

    fn assistant(&mut self, content: &[AssistantPart]) {
        let mut separate = std::mem::take(&mut self.after_text);
        for part in content {
            match part {
                AssistantPart::Text { text } if !text.is_empty() => {
                    let text = match std::mem::take(&mut separate) {
                        true => format!("{RESPONSE_BREAK}{text}"),
                        false => text.clone(),
                    };
                    self.out.push(Event::AgentMessageChunk { text })
                }
                AssistantPart::Reasoning { text, .. } if !text.is_empty() => self
                    .out
                    .push(Event::AgentThoughtChunk { text: text.clone() }),
                AssistantPart::Text { .. }
                | AssistantPart::Reasoning { .. }
                | AssistantPart::ToolCall { .. }
                | AssistantPart::Opaque { .. } => {}
            }
        }
        self.after_text = ends_in_shown_text(content);
    }

    fn session_message(
        &mut self,
        message_id: &str,
        from: &crate::ids::SessionId,
        content: &[UserContent],
    ) {
        self.after_text = false;
        self.out.push(Event::SessionMessage {
            message_id: message_id.to_owned(),
            from: from.clone(),
            to: self.state.id.clone(),
            content: content.to_vec(),
        })
    }

    /// Announced where it started (before its card names it), as it is now: a replayed session
    /// runs nothing, so its subagents are idle (one whose end was never logged, too: the
    /// process died with it).
    fn subagent(&mut self, session: &crate::ids::SessionId, title: &str) {
        self.out.push(Event::Subagent(SubagentView {
            session: session.clone(),
            title: title.to_owned(),
            cwd: self.state.cwd.clone(),
            running: false,
        }))
    }
}
