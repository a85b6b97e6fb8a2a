//! The model's view of a session's history: the messages a request carries, always well formed.

use std::sync::Arc;

use super::SessionState;
use crate::content::{ToolCallUpdateView, ToolContent, UserContent};
use crate::log::EntryKind;
use crate::model::{AssistantPart, Message, ToolResultPart, UserPart};

/// Text the model gets for a tool call that never finished (crash, cancel).
pub const INTERRUPTED_TOOL_RESULT: &str =
    "The tool call was interrupted before it finished; its effects, if any, are unknown.";

impl SessionState {
    /// The conversation as the model sees it. Always well formed: every tool call of an
    /// assistant message is answered in the next message, in call order, with a synthetic
    /// "interrupted" result where the log has none (a crash or a cancel mid-call).
    pub fn model_messages(&self) -> Vec<Message> {
        // Everything before the last compaction is replaced by its summary.
        let start = self
            .history
            .iter()
            .rposition(|k| matches!(k, EntryKind::Compaction { .. }))
            .unwrap_or(0);
        let mut b = Builder::default();
        for kind in &self.history[start..] {
            b.entry(kind);
        }
        b.finish()
    }
}

/// The messages being made, entry by entry.
#[derive(Default)]
struct Builder<'a> {
    out: Vec<Message>,
    /// The tool calls of the last assistant message, waiting for their results.
    open_calls: Vec<&'a str>,
    results: Vec<ToolResultPart>,
    /// Images tools returned (`read` of a PNG, an MCP screenshot), by call id. Every API takes
    /// images in a user message, so they follow the results as one (see `docs/tools.md`).
    images: Vec<(&'a str, Vec<UserPart>)>,
    /// What an `/undo` reverted, told to the model with the next prompt.
    undo_notes: Vec<UserPart>,
}

impl<'a> Builder<'a> {
    fn entry(&mut self, kind: &'a EntryKind) {
        match kind {
            EntryKind::Checkpoint {
                undid,
                files,
                skipped,
                ..
            } if !undid.is_empty() => self.undo_notes.push(UserPart::Text {
                text: crate::file_changes::undo_note(files, skipped).into(),
            }),
            EntryKind::Compaction { summary } => self.out.push(Message::User {
                content: vec![UserPart::Text {
                    text: format!("Summary of the conversation so far (earlier messages were compacted):\n\n{summary}").into(),
                }],
            }),
            EntryKind::UserMessage { content, .. } | EntryKind::SessionMessage { content, .. } => {
                self.user(user_parts(content))
            }
            EntryKind::HookContext { event, context } => self.user(vec![UserPart::Text {
                text: crate::hooks::context_note(event, context).into(),
            }]),
            EntryKind::Assistant { content } => self.assistant(content),
            EntryKind::ToolResult {
                call_id,
                output,
                is_error,
                update,
            } => self.tool_result(call_id, output, *is_error, update),
            EntryKind::Checkpoint { .. }
            | EntryKind::ToolCall { .. }
            | EntryKind::DisplayToolCall { .. }
            | EntryKind::Command { .. }
            | EntryKind::Reply { .. }
            | EntryKind::Subagent { .. }
            | EntryKind::Plan { .. }
            | EntryKind::TurnEnd { .. }
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

    /// A user message, after the pending results and with the pending undo notes first.
    fn user(&mut self, parts: Vec<UserPart>) {
        self.flush();
        let mut content = std::mem::take(&mut self.undo_notes);
        content.extend(parts);
        self.out.push(Message::User { content });
    }

    fn assistant(&mut self, content: &'a Arc<[AssistantPart]>) {
        self.flush();
        if content.is_empty() {
            return;
        }
        self.open_calls = content
            .iter()
            .filter_map(|p| match p {
                AssistantPart::ToolCall { id, .. } => Some(id.as_str()),
                AssistantPart::Text { .. }
                | AssistantPart::Reasoning { .. }
                | AssistantPart::Opaque { .. } => None,
            })
            .collect();
        self.out.push(Message::Assistant {
            content: content.clone(),
        });
    }

    /// A result of one of the open calls (others are left out), with the images it returned.
    fn tool_result(
        &mut self,
        call_id: &'a str,
        output: &Arc<str>,
        is_error: bool,
        update: &ToolCallUpdateView,
    ) {
        if !self.open_calls.contains(&call_id) {
            return;
        }
        let parts: Vec<UserPart> = update
            .content
            .iter()
            .flatten()
            .filter_map(|c| match c {
                ToolContent::Image { mime_type, data } => Some(UserPart::Image {
                    mime_type: mime_type.clone(),
                    data: data.clone(),
                }),
                ToolContent::Text { .. }
                | ToolContent::Diff { .. }
                | ToolContent::Session { .. } => None,
            })
            .collect();
        if !parts.is_empty() {
            self.images.push((call_id, parts));
        }
        self.results.push(ToolResultPart {
            call_id: call_id.to_owned(),
            content: output.clone(),
            is_error,
        });
    }

    /// The results of the open calls, in call order, and the images they returned.
    fn flush(&mut self) {
        if self.open_calls.is_empty() {
            return;
        }
        // Results are moved, not cloned; `remove` keeps their order, so a call answered twice
        // still gets its first result.
        let mut ordered = Vec::with_capacity(self.open_calls.len());
        for id in &self.open_calls {
            match self.results.iter().position(|r| r.call_id == *id) {
                Some(at) => ordered.push(self.results.remove(at)),
                None => ordered.push(ToolResultPart {
                    call_id: id.to_string(),
                    content: INTERRUPTED_TOOL_RESULT.into(),
                    is_error: true,
                }),
            }
        }
        self.out.push(Message::ToolResults { results: ordered });
        let mut content = Vec::new();
        for (id, parts) in self.images.drain(..) {
            if self.open_calls.contains(&id) && !parts.is_empty() {
                content.push(UserPart::Text {
                    text: format!("The image(s) returned by tool call {id}:").into(),
                });
                content.extend(parts);
            }
        }
        if !content.is_empty() {
            self.out.push(Message::User { content });
        }
        self.open_calls.clear();
        self.results.clear();
    }

    fn finish(mut self) -> Vec<Message> {
        self.flush();
        if !self.undo_notes.is_empty() {
            self.out.push(Message::User {
                content: self.undo_notes,
            });
        }
        self.out
    }
}

/// A prompt's blocks as model input. Embedded resources become tagged text so the model knows
/// where the text came from; resource links that were not expanded are named.
pub fn user_parts(content: &[UserContent]) -> Vec<UserPart> {
    content
        .iter()
        .map(|c| match c {
            UserContent::Text { text } => UserPart::Text { text: text.clone() },
            UserContent::Image {
                mime_type, data, ..
            } => UserPart::Image {
                mime_type: mime_type.clone(),
                data: data.clone(),
            },
            UserContent::ResourceLink {
                uri,
                text: Some(text),
                ..
            } => UserPart::Text {
                text: format!("<resource uri=\"{uri}\">\n{text}\n</resource>").into(),
            },
            UserContent::ResourceLink {
                uri,
                name,
                text: None,
                ..
            } => UserPart::Text {
                text: format!("[Attached: {name} ({uri})]").into(),
            },
            UserContent::Resource {
                uri,
                text: Some(text),
                ..
            } => UserPart::Text {
                text: format!("<resource uri=\"{uri}\">\n{text}\n</resource>").into(),
            },
            UserContent::Resource {
                text: None,
                mime_type: Some(mime),
                blob: Some(data),
                ..
            } if mime.starts_with("image/") => UserPart::Image {
                mime_type: mime.clone(),
                data: data.as_str().into(),
            },
            UserContent::Resource { uri, .. } => UserPart::Text {
                text: format!("[Attached binary resource: {uri}]").into(),
            },
        })
        .collect()
}
