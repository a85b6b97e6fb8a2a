//! Session state rebuilt from the log: settings (mode, model, effort, web search), title, plan,
//! and the conversation, plus the two views of the conversation that are derived from it: the
//! editor's replay and the model's message list.

use std::collections::HashSet;
use std::path::PathBuf;

use crate::content::{PlanEntry, ToolCallUpdateView, UserContent};
use crate::events::{CompactionStage, Event};
use crate::ids::SessionId;
use crate::log::{EntryKind, Header, LoadedLog};
use crate::model::{AssistantPart, Message, ToolResultPart, UserPart};
use crate::modes::{Effort, Harness, Mode};

/// How a compaction shows in a replay.
pub const COMPACTED_MARKER: &str =
    "Compacted the conversation: the model continues from a summary of what came before.";

#[derive(Debug, Clone)]
pub struct SessionState {
    pub id: SessionId,
    pub cwd: PathBuf,
    pub additional_directories: Vec<PathBuf>,
    pub harness: Harness,
    pub parent: Option<SessionId>,
    pub mode: Mode,
    /// `None` until a model is chosen or a default exists.
    pub model: Option<String>,
    pub effort: Effort,
    pub web_search: bool,
    /// The custom agent the session works as, chosen by the user (`crate::agents`).
    pub agent: Option<String>,
    pub title: Option<String>,
    /// Who gave the title (`None`: the first prompt).
    pub title_by: Option<crate::log::TitleBy>,
    pub plan: Vec<PlanEntry>,
    /// The client's system-level instructions (ACP `systemPrompt`), if it gave any.
    pub system_prompt: Option<crate::prompt::ClientPrompt>,
    /// The conversational entries in order (settings entries are folded into the fields above).
    pub history: Vec<EntryKind>,
    /// Tokens in context after the last model call (0 before any).
    pub context_tokens: u64,
    /// The session's running cost in USD; `None` until a call with a known price.
    pub cost_usd: Option<f64>,
}

/// Text the model gets for a tool call that never finished (crash, cancel).
pub const INTERRUPTED_TOOL_RESULT: &str =
    "The tool call was interrupted before it finished; its effects, if any, are unknown.";

impl SessionState {
    pub fn new(header: &Header) -> Self {
        Self {
            id: header.id.clone(),
            cwd: header.cwd.clone(),
            additional_directories: header.additional_directories.clone(),
            harness: header.harness,
            parent: header.parent.clone(),
            mode: header.harness.default_mode(),
            model: None,
            effort: Effort::Default,
            web_search: false,
            agent: None,
            title: None,
            title_by: None,
            plan: vec![],
            system_prompt: None,
            history: vec![],
            context_tokens: 0,
            cost_usd: None,
        }
    }

    /// Takes the log's entries, not copies of them: a copy of a long session's history, with
    /// the log's own copy freed after it, leaves the process that much bigger (freed small
    /// blocks between live ones stay with the process).
    pub fn from_log(log: LoadedLog) -> Self {
        let mut state = Self::new(&log.header);
        for entry in log.entries {
            let mut kind = entry.kind;
            share_display_text(&mut kind);
            state.apply(kind);
        }
        // Growing by doubling can leave up to half of a long session's history unused.
        state.history.shrink_to_fit();
        state
    }

    /// The workspace: `cwd` plus the additional directories, canonical where they exist.
    pub fn workspace_roots(&self) -> Vec<PathBuf> {
        std::iter::once(&self.cwd)
            .chain(&self.additional_directories)
            .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
            .collect()
    }

    /// Folds one log entry into the state.
    pub fn apply(&mut self, kind: EntryKind) {
        match kind {
            EntryKind::Mode { mode } => self.mode = mode,
            EntryKind::Model { model } => self.model = Some(model),
            EntryKind::Effort { effort } => self.effort = effort,
            EntryKind::WebSearch { enabled } => self.web_search = enabled,
            EntryKind::Agent { agent } => self.agent = agent,
            EntryKind::Title { title, by } => {
                self.title = Some(title);
                self.title_by = by;
            }
            EntryKind::Directories {
                additional_directories,
            } => self.additional_directories = additional_directories,
            EntryKind::SystemPrompt { prompt } => self.system_prompt = Some(prompt),
            EntryKind::Usage {
                context_tokens,
                cost_usd,
                ..
            } => {
                self.context_tokens = context_tokens;
                if let Some(c) = cost_usd {
                    *self.cost_usd.get_or_insert(0.0) += c;
                }
            }
            EntryKind::Plan { entries } => {
                self.plan = entries.clone();
                self.history.push(EntryKind::Plan { entries });
            }
            other @ (EntryKind::UserMessage { .. }
            | EntryKind::Assistant { .. }
            | EntryKind::ToolCall { .. }
            | EntryKind::ToolResult { .. }
            | EntryKind::DisplayToolCall { .. }
            | EntryKind::Command { .. }
            | EntryKind::Reply { .. }
            | EntryKind::Compaction { .. }
            | EntryKind::Checkpoint { .. }
            | EntryKind::SessionMessage { .. }
            | EntryKind::HookContext { .. }
            | EntryKind::Subagent { .. }
            | EntryKind::TurnEnd { .. }) => self.history.push(other),
        }
    }

    /// What `session/load` replays: the conversation as the editor saw it.
    pub fn replay(&self) -> Vec<Event> {
        let mut out = Vec::with_capacity(self.history.len());
        // The last response's text was the last thing shown (as `turn::request_loop` tracks).
        let mut after_text = false;
        // `update_plan` calls replay as their `plan` update only, as they were shown live.
        let mut hidden: HashSet<&str> = HashSet::new();
        let mut compactions = 0;
        for (i, kind) in self.history.iter().enumerate() {
            match kind {
                EntryKind::UserMessage { content } | EntryKind::Command { content } => {
                    after_text = false;
                    out.push(Event::UserMessage {
                        content: content.clone(),
                    })
                }
                // The marker the user saw when it happened (without the token counts).
                EntryKind::Compaction { summary } => {
                    compactions += 1;
                    out.push(Event::Compaction {
                        id: crate::events::compaction_id(compactions),
                        stage: CompactionStage::Completed {
                            summary: summary.clone(),
                            notice: COMPACTED_MARKER.into(),
                        },
                    })
                }
                EntryKind::Assistant { content } => {
                    let mut separate = std::mem::take(&mut after_text);
                    for part in content.iter() {
                        match part {
                            AssistantPart::Text { text } if !text.is_empty() => {
                                let text = match std::mem::take(&mut separate) {
                                    true => format!("{RESPONSE_BREAK}{text}"),
                                    false => text.clone(),
                                };
                                out.push(Event::AgentMessageChunk { text })
                            }
                            AssistantPart::Reasoning { text, .. } if !text.is_empty() => {
                                out.push(Event::AgentThoughtChunk { text: text.clone() })
                            }
                            AssistantPart::Text { .. }
                            | AssistantPart::Reasoning { .. }
                            | AssistantPart::ToolCall { .. }
                            | AssistantPart::Opaque { .. } => {}
                        }
                    }
                    after_text = ends_in_shown_text(content);
                }
                EntryKind::ToolCall { name, call } if name == crate::tools::UPDATE_PLAN => {
                    hidden.insert(&call.id);
                }
                EntryKind::ToolCall { call, .. } | EntryKind::DisplayToolCall { call } => {
                    out.push(Event::ToolCall((**call).clone()))
                }
                EntryKind::ToolResult { call_id, .. } if hidden.contains(call_id.as_str()) => {}
                EntryKind::ToolResult { update, output, .. } => {
                    out.push(Event::ToolCallUpdate(ToolCallUpdateView {
                        raw_output: Some(crate::content::raw_output(output)),
                        ..(**update).clone()
                    }))
                }
                EntryKind::Plan { entries } => out.push(Event::Plan {
                    entries: entries.clone(),
                }),
                EntryKind::TurnEnd {
                    failure: Some(f), ..
                } => out.push(Event::AgentMessageChunk {
                    text: f.message.clone(),
                }),
                EntryKind::Reply { text } => {
                    out.push(Event::AgentMessageChunk { text: text.clone() })
                }
                EntryKind::HookContext { event, context } => out.push(Event::Notice {
                    text: crate::hooks::context_notice(event, context),
                }),
                EntryKind::SessionMessage {
                    message_id,
                    from,
                    content,
                } => {
                    after_text = false;
                    out.push(Event::SessionMessage {
                        message_id: message_id.clone(),
                        from: from.clone(),
                        to: self.id.clone(),
                        content: content.clone(),
                    })
                }
                // Announced where it started (before its card names it), as it is now: a
                // replayed session runs nothing, so its subagents are idle (one whose end was
                // never logged, too: the process died with it).
                EntryKind::Subagent {
                    session,
                    title,
                    running: true,
                } => out.push(Event::Subagent(crate::events::SubagentView {
                    session: session.clone(),
                    title: title.clone(),
                    cwd: self.cwd.clone(),
                    running: false,
                })),
                EntryKind::Subagent { running: false, .. } => {}
                // Logs written before `Reply` existed: the undo's answer made again from it.
                EntryKind::Checkpoint {
                    undid,
                    files,
                    skipped,
                    ..
                } if !undid.is_empty()
                    && !matches!(self.history.get(i + 1), Some(EntryKind::Reply { .. })) =>
                {
                    out.push(Event::AgentMessageChunk {
                        text: crate::file_changes::undo_message(undid, files, skipped, &self.cwd),
                    })
                }
                EntryKind::TurnEnd { failure: None, .. }
                | EntryKind::Checkpoint { .. }
                | EntryKind::Mode { .. }
                | EntryKind::Usage { .. }
                | EntryKind::Model { .. }
                | EntryKind::Effort { .. }
                | EntryKind::WebSearch { .. }
                | EntryKind::Agent { .. }
                | EntryKind::Title { .. }
                | EntryKind::Directories { .. }
                | EntryKind::SystemPrompt { .. } => {}
            }
        }
        out
    }

    /// The text of the last response (what a subagent answers its parent); `None` when it
    /// had none.
    pub fn last_answer(&self) -> Option<String> {
        let content = self.history.iter().rev().find_map(|k| match k {
            EntryKind::Assistant { content } => Some(content),
            _ => None,
        })?;
        let text: String = content
            .iter()
            .filter_map(|p| match p {
                AssistantPart::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        (!text.trim().is_empty()).then_some(text)
    }

    /// The conversation as the model sees it. Always well formed: every tool call of an
    /// assistant message is answered in the next message, in call order, with a synthetic
    /// "interrupted" result where the log has none (a crash or a cancel mid-call).
    pub fn model_messages(&self) -> Vec<Message> {
        let mut out: Vec<Message> = Vec::new();
        let mut open_calls: Vec<&str> = Vec::new();
        let mut results: Vec<ToolResultPart> = Vec::new();
        // Images tools returned (`read` of a PNG, an MCP screenshot), by call id. Every API takes
        // images in a user message, so they follow the results as one (see `docs/tools.md`).
        let mut images: Vec<(&str, Vec<UserPart>)> = Vec::new();
        let flush = |out: &mut Vec<Message>,
                     open: &mut Vec<&str>,
                     results: &mut Vec<ToolResultPart>,
                     images: &mut Vec<(&str, Vec<UserPart>)>| {
            if open.is_empty() {
                return;
            }
            // Results are moved, not cloned; `remove` keeps their order, so a call answered
            // twice still gets its first result.
            let mut ordered = Vec::with_capacity(open.len());
            for id in open.iter() {
                match results.iter().position(|r| r.call_id == *id) {
                    Some(at) => ordered.push(results.remove(at)),
                    None => ordered.push(ToolResultPart {
                        call_id: id.to_string(),
                        content: INTERRUPTED_TOOL_RESULT.into(),
                        is_error: true,
                    }),
                }
            }
            out.push(Message::ToolResults { results: ordered });
            let mut content = Vec::new();
            for (id, parts) in images.drain(..) {
                if open.contains(&id) && !parts.is_empty() {
                    content.push(UserPart::Text {
                        text: format!("The image(s) returned by tool call {id}:").into(),
                    });
                    content.extend(parts);
                }
            }
            if !content.is_empty() {
                out.push(Message::User { content });
            }
            open.clear();
            results.clear();
        };
        // Everything before the last compaction is replaced by its summary.
        let start = self
            .history
            .iter()
            .rposition(|k| matches!(k, EntryKind::Compaction { .. }))
            .unwrap_or(0);
        // What an `/undo` reverted, told to the model with the next prompt.
        let mut undo_notes: Vec<UserPart> = Vec::new();
        for kind in &self.history[start..] {
            match kind {
                EntryKind::Checkpoint {
                    undid,
                    files,
                    skipped,
                    ..
                } => {
                    if !undid.is_empty() {
                        undo_notes.push(UserPart::Text {
                            text: crate::file_changes::undo_note(files, skipped).into(),
                        });
                    }
                }
                EntryKind::Compaction { summary } => {
                    out.push(Message::User {
                        content: vec![UserPart::Text {
                            text: format!("Summary of the conversation so far (earlier messages were compacted):\n\n{summary}").into(),
                        }],
                    });
                }
                EntryKind::UserMessage { content } | EntryKind::SessionMessage { content, .. } => {
                    flush(&mut out, &mut open_calls, &mut results, &mut images);
                    let mut parts = std::mem::take(&mut undo_notes);
                    parts.extend(user_parts(content));
                    out.push(Message::User { content: parts });
                }
                EntryKind::HookContext { event, context } => {
                    flush(&mut out, &mut open_calls, &mut results, &mut images);
                    let mut parts = std::mem::take(&mut undo_notes);
                    parts.push(UserPart::Text {
                        text: crate::hooks::context_note(event, context).into(),
                    });
                    out.push(Message::User { content: parts });
                }
                EntryKind::Assistant { content } => {
                    flush(&mut out, &mut open_calls, &mut results, &mut images);
                    if content.is_empty() {
                        continue;
                    }
                    open_calls = content
                        .iter()
                        .filter_map(|p| match p {
                            AssistantPart::ToolCall { id, .. } => Some(id.as_str()),
                            AssistantPart::Text { .. }
                            | AssistantPart::Reasoning { .. }
                            | AssistantPart::Opaque { .. } => None,
                        })
                        .collect();
                    out.push(Message::Assistant {
                        content: content.clone(),
                    });
                }
                EntryKind::ToolResult {
                    call_id,
                    output,
                    is_error,
                    update,
                } => {
                    if open_calls.iter().any(|c| c == call_id) {
                        let parts: Vec<UserPart> = update
                            .content
                            .iter()
                            .flatten()
                            .filter_map(|c| match c {
                                crate::content::ToolContent::Image { mime_type, data } => {
                                    Some(UserPart::Image {
                                        mime_type: mime_type.clone(),
                                        data: data.clone(),
                                    })
                                }
                                crate::content::ToolContent::Text { .. }
                                | crate::content::ToolContent::Diff { .. }
                                | crate::content::ToolContent::Session { .. } => None,
                            })
                            .collect();
                        if !parts.is_empty() {
                            images.push((call_id, parts));
                        }
                        results.push(ToolResultPart {
                            call_id: call_id.clone(),
                            content: output.clone(),
                            is_error: *is_error,
                        });
                    }
                }
                EntryKind::ToolCall { .. }
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
                | EntryKind::SystemPrompt { .. } => {}
            }
        }
        flush(&mut out, &mut open_calls, &mut results, &mut images);
        if !undo_notes.is_empty() {
            out.push(Message::User {
                content: undo_notes,
            });
        }
        out
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

/// A card that shows the tool's output itself (what most tools do) shares that text with the
/// output: a log read from disk has it twice, the state keeps it once. Only for loaded entries:
/// a live result is built with one text for both (`turn::call::finish_call`).
fn share_display_text(kind: &mut EntryKind) {
    if let EntryKind::ToolResult { output, update, .. } = kind
        && let Some(content) = update.content.as_mut()
    {
        for part in content {
            if let crate::content::ToolContent::Text { text } = part
                && **text == **output
            {
                *text = output.clone();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::{ToolCallUpdateView, ToolCallView, ToolKind, ToolStatus};
    use pretty_assertions::assert_eq;

    fn call(id: &str) -> AssistantPart {
        AssistantPart::ToolCall {
            id: id.into(),
            name: "read".into(),
            arguments: "{}".into(),
        }
    }

    fn result(id: &str) -> EntryKind {
        EntryKind::ToolResult {
            call_id: id.into(),
            output: format!("out {id}").into(),
            is_error: false,
            update: Box::new(ToolCallUpdateView {
                id: id.into(),
                status: Some(ToolStatus::Completed),
                ..Default::default()
            }),
        }
    }

    fn header() -> Header {
        Header::new(
            SessionId::generate(),
            "/w".into(),
            vec![],
            Harness::Code,
            None,
        )
    }

    fn state() -> SessionState {
        SessionState::new(&header())
    }

    #[test]
    fn a_loaded_result_shown_as_its_output_holds_the_text_once() {
        let home = tempfile::tempdir().unwrap();
        let store = crate::log::SessionStore::new(home.path());
        let header = header();
        let output = "line of output\n".repeat(100);
        {
            let mut log = store.create(&header).unwrap();
            log.append(EntryKind::ToolResult {
                call_id: "a".into(),
                output: output.as_str().into(),
                is_error: false,
                update: Box::new(ToolCallUpdateView {
                    id: "a".into(),
                    status: Some(ToolStatus::Completed),
                    content: Some(vec![crate::content::ToolContent::Text {
                        text: output.as_str().into(),
                    }]),
                    ..Default::default()
                }),
            })
            .unwrap();
            log.sync().unwrap();
        }
        // The log line has the text twice; reading it makes two copies.
        let s = SessionState::from_log(store.read(&header.id).unwrap());
        let EntryKind::ToolResult {
            output: kept,
            update,
            ..
        } = &s.history[0]
        else {
            panic!("{:?}", s.history[0]);
        };
        let Some([crate::content::ToolContent::Text { text }]) = update.content.as_deref() else {
            panic!("{update:?}");
        };
        assert_eq!(&**kept, output);
        assert!(std::sync::Arc::ptr_eq(kept, text), "the text is held twice");
    }

    #[test]
    fn results_are_paired_and_missing_ones_synthesized() {
        let mut s = state();
        s.apply(EntryKind::UserMessage {
            content: vec![UserContent::Text { text: "go".into() }],
        });
        s.apply(EntryKind::Assistant {
            content: vec![call("a"), call("b")].into(),
        });
        s.apply(EntryKind::ToolCall {
            name: "read".into(),
            call: Box::new(ToolCallView {
                id: "b".into(),
                title: "Read".into(),
                kind: ToolKind::Read,
                status: ToolStatus::Pending,
                locations: vec![],
                content: vec![],
                raw_input: None,
            }),
        });
        s.apply(result("b"));
        let msgs = s.model_messages();
        assert_eq!(msgs.len(), 3);
        assert_eq!(
            msgs[2],
            Message::ToolResults {
                results: vec![
                    ToolResultPart {
                        call_id: "a".into(),
                        content: INTERRUPTED_TOOL_RESULT.into(),
                        is_error: true
                    },
                    ToolResultPart {
                        call_id: "b".into(),
                        content: "out b".into(),
                        is_error: false
                    },
                ]
            }
        );
    }

    /// A screenshot an MCP tool returned is in every later request: each gets the history's
    /// copy of its base64, not one of its own.
    #[test]
    fn a_tool_image_goes_to_the_model_without_a_copy() {
        let mut s = state();
        s.apply(EntryKind::Assistant {
            content: vec![call("a")].into(),
        });
        let data: std::sync::Arc<str> = "iVBORw0KGgo=".into();
        let mut with_image = result("a");
        if let EntryKind::ToolResult { update, .. } = &mut with_image {
            update.content = Some(vec![crate::content::ToolContent::Image {
                mime_type: "image/png".into(),
                data: data.clone(),
            }]);
        }
        s.apply(with_image);
        let msgs = s.model_messages();
        let Some(Message::User { content }) = msgs.last() else {
            panic!("{msgs:?}");
        };
        let Some(UserPart::Image { data: sent, .. }) = content.last() else {
            panic!("{content:?}");
        };
        assert!(std::sync::Arc::ptr_eq(sent, &data), "the image was copied");
    }

    #[test]
    fn a_call_answered_twice_gets_its_first_result_whatever_the_order() {
        let mut s = state();
        s.apply(EntryKind::Assistant {
            content: vec![call("x"), call("a")].into(),
        });
        s.apply(result("x"));
        s.apply(result("a"));
        let mut again = result("a");
        if let EntryKind::ToolResult { output, .. } = &mut again {
            *output = "second a".into();
        }
        s.apply(again);
        let msgs = s.model_messages();
        let Message::ToolResults { results } = &msgs[1] else {
            panic!("no results: {msgs:?}");
        };
        let contents: Vec<&str> = results.iter().map(|r| &*r.content).collect();
        assert_eq!(contents, ["out x", "out a"]);
    }

    #[test]
    fn settings_fold_and_replay_skips_them() {
        let mut s = state();
        s.apply(EntryKind::Mode { mode: Mode::Auto });
        s.apply(EntryKind::Model {
            model: "openai/gpt-5".into(),
        });
        s.apply(EntryKind::Effort {
            effort: Effort::High,
        });
        s.apply(EntryKind::Title {
            title: "t".into(),
            by: None,
        });
        assert_eq!((s.mode, s.effort), (Mode::Auto, Effort::High));
        assert_eq!(s.model.as_deref(), Some("openai/gpt-5"));
        assert!(s.replay().is_empty());
    }
}
