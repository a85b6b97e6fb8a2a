//! Session state rebuilt from the log: settings (mode, model, effort, web search), title, plan,
//! and the conversation, plus the two views of the conversation that are derived from it: the
//! editor's replay (`replay.rs`) and the model's message list (`messages.rs`).

mod messages;
mod replay;

use std::path::PathBuf;

use crate::content::PlanEntry;
use crate::ids::SessionId;
use crate::log::{EntryKind, Header, LoadedLog};
use crate::model::AssistantPart;
use crate::modes::{Effort, Harness, Mode};

pub use messages::{INTERRUPTED_TOOL_RESULT, user_parts};
pub use replay::{COMPACTED_MARKER, RESPONSE_BREAK, ends_in_shown_text};

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
            EntryKind::Rewind { message_id } => {
                let at = self.history.iter().position(
                    |k| matches!(k, EntryKind::UserMessage { id: Some(id), .. } if *id == message_id),
                );
                if let Some(at) = at {
                    self.history.truncate(at);
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
    use crate::content::{ToolCallUpdateView, ToolCallView, ToolKind, ToolStatus, UserContent};
    use crate::model::{Message, ToolResultPart, UserPart};
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
            id: None,
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
