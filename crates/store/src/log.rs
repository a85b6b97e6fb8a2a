//! The session log (`docs/sessions.md`): one append-only JSON Lines file per session,
//! a header line then one entry per line with a monotonic `seq`. It is the source of truth; all
//! session state is rebuilt from it.
//!
//! Durability: every entry is one `write` of a complete line (so a crash tears at most the last
//! line), and the file is `fsync`ed at turn boundaries. One process writes a session at a time,
//! enforced with an OS file lock that dies with the process.

mod store;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::content::{PlanEntry, ToolCallUpdateView, ToolCallView, UserContent};
use crate::conversation::AssistantPart;
pub use crate::failure::TurnFailure;
use crate::ids::SessionId;
use crate::modes::{Effort, Harness, Mode};

pub use store::{Hold, LoadedLog, LogWriter, PendingSync, SessionStore, SessionSummary};

/// The version of the line format. Bump it when an entry changes meaning; readers refuse newer
/// versions rather than misread them.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum HeaderTag {
    Header,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    #[serde(rename = "type")]
    tag: HeaderTag,
    pub format: u32,
    pub id: SessionId,
    pub cwd: PathBuf,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_directories: Vec<PathBuf>,
    pub created_at: String,
    pub harness: Harness,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<SessionId>,
    /// A subagent's session, made by a `task` call of `parent` (a fork has a parent too): left
    /// out of the session list, loadable by its id.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub subagent: bool,
}

impl Header {
    pub fn new(
        id: SessionId,
        cwd: PathBuf,
        additional_directories: Vec<PathBuf>,
        harness: Harness,
        parent: Option<SessionId>,
    ) -> Self {
        Self {
            tag: HeaderTag::Header,
            format: FORMAT_VERSION,
            id,
            cwd,
            additional_directories,
            created_at: crate::time::now_rfc3339(),
            harness,
            parent,
            subagent: false,
        }
    }

    /// The header of a subagent session of `parent`.
    pub fn subagent_of(mut self, parent: SessionId) -> Self {
        self.parent = Some(parent);
        self.subagent = true;
        self
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub seq: u64,
    /// RFC 3339 time the entry was written.
    pub at: String,
    #[serde(flatten)]
    pub kind: EntryKind,
}

/// Why a turn stopped (ACP stop reasons).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    MaxTokens,
    MaxTurnRequests,
    Refusal,
    Cancelled,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EntryKind {
    UserMessage {
        /// The message's stable id (`docs/sessions.md`, Rewind): sent as `messageId` on its
        /// chunks. Absent on older logs and on Ferrite's own notes; replay then names the
        /// message by its entry's place in the log.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        content: Vec<UserContent>,
    },
    /// One complete (or, when cancelled, partial) assistant message from one model call.
    /// Shared with the model messages built from the history (see `Message::Assistant`).
    Assistant {
        content: std::sync::Arc<[AssistantPart]>,
    },
    /// A tool call as first shown to the editor. `name` is the tool the model called.
    ToolCall {
        name: String,
        call: Box<ToolCallView>,
    },
    /// The end of a tool call: what the model gets back and the editor's final view.
    ToolResult {
        call_id: String,
        /// Shared with the model messages built from the history (see `ToolResultPart`).
        output: std::sync::Arc<str>,
        is_error: bool,
        update: Box<ToolCallUpdateView>,
    },
    /// A tool call that exists only for the editor (the provider's hosted web search).
    DisplayToolCall {
        call: Box<ToolCallView>,
    },
    Plan {
        entries: Vec<PlanEntry>,
    },
    Mode {
        mode: Mode,
    },
    Model {
        model: String,
    },
    Effort {
        effort: Effort,
    },
    WebSearch {
        enabled: bool,
    },
    /// The custom agent the session works as (`ferrite_extensions::agents`); `None`: Ferrite itself.
    Agent {
        agent: Option<String>,
    },
    Title {
        title: String,
        /// Who named the session; absent: its first prompt (or a subagent's task).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<TitleBy>,
    },
    /// A prompt that was a command to ferrite itself (`/compact`, `/undo`, `/checkpoints`):
    /// replayed to the editor like a prompt, never sent to the model.
    Command {
        content: Vec<UserContent>,
    },
    /// Ferrite's own answer to a command (`/undo`, `/checkpoints`), as the editor was shown it:
    /// replayed as the agent's message, never sent to the model.
    Reply {
        text: String,
    },
    /// The session's additional workspace roots from here on, instead of the header's (a
    /// client's `session/load`, `session/resume` or `session/fork` named others).
    Directories {
        additional_directories: Vec<PathBuf>,
    },
    /// The client's system-level instructions from here on (ACP `systemPrompt`).
    SystemPrompt {
        prompt: ClientPrompt,
    },
    /// The conversation up to here, summarized: what the model is sent instead of it.
    Compaction {
        summary: String,
    },
    /// A turn changed the workspace; its prior state is kept in the checkpoint store
    /// (`docs/checkpoints.md`). When an `/undo` made it, `undid` names the checkpoints it
    /// reverted and `skipped` the files it left alone.
    Checkpoint {
        id: u64,
        turn: u64,
        files: Vec<crate::file_changes::FileChange>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        undid: Vec<u64>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        skipped: Vec<crate::file_changes::Skipped>,
    },
    /// A message from another session: in a subagent's log, the task its parent gave it (the
    /// model reads it as the user's message).
    SessionMessage {
        message_id: String,
        from: SessionId,
        content: Vec<UserContent>,
    },
    /// Context a hook added for the model (`additionalContext`, a `UserPromptSubmit` or
    /// `SessionStart` hook's text): the model reads it as a note in a user message; the editor
    /// is replayed the notice it was shown, never the user's words (a hook wrote it).
    HookContext {
        event: String,
        context: String,
    },
    /// A subagent session this session started (`task`), and whether it still runs.
    Subagent {
        session: SessionId,
        title: String,
        running: bool,
    },
    /// The history is cut just before the user message `message_id` (`docs/sessions.md`,
    /// Rewind): what came from it on is no longer live (neither replayed nor sent to the
    /// model); the entries stay in the log.
    Rewind {
        message_id: String,
    },
    TurnEnd {
        stop: StopReason,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failure: Option<TurnFailure>,
    },
    /// What one model call used: the tokens it reports, the context it leaves occupied, and
    /// what it cost (USD) when the model's price was known. Summed on load for the session's
    /// running cost. Boxed: the usage is the largest payload, and entries stay small.
    Usage {
        model: String,
        usage: Box<crate::usage::Usage>,
        context_tokens: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
}

/// System-level instructions a client gave a session (ACP `systemPrompt`), kept in its log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientPrompt {
    pub mode: ClientPromptMode,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientPromptMode {
    /// After ferrite's instructions and the workspace's, so it has the last word.
    Append,
    /// Instead of ferrite's own instructions; the workspace facts and `AGENTS.md` files stay.
    Override,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("session not found")]
    NotFound,
    #[error("session is open in another ferrite process")]
    Locked,
    #[error("session already exists")]
    Exists,
    #[error("session log {path} is unreadable: {reason}")]
    Corrupt { path: PathBuf, reason: String },
    #[error("session log {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Who gave a session its title (`EntryKind::Title::by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TitleBy {
    /// Generated by a model after the first turn.
    Generated,
    /// The user (`session/set_title`, `/title`): never replaced by a generated one.
    User,
    /// A fork's "Fork of …", until renamed.
    Fork,
}

/// The longest title kept, in characters.
pub const TITLE_MAX_CHARS: usize = 100;

/// A session title from a prompt: its first text, whitespace collapsed, trimmed, shortened.
pub fn title_from(content: &[UserContent]) -> Option<String> {
    let text = content
        .iter()
        .filter_map(UserContent::display_text)
        .collect::<Vec<_>>()
        .join(" ");
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.is_empty() {
        return None;
    }
    let mut title: String = collapsed.chars().take(TITLE_MAX_CHARS).collect();
    if collapsed.chars().count() > TITLE_MAX_CHARS {
        title.push('…');
    }
    Some(title)
}

#[cfg(test)]
mod tests {
    use super::EntryKind;

    /// A long session holds one `EntryKind` per entry: the tool-call views (136 bytes each)
    /// are boxed so that every entry, a `turn_end` as much as a tool result, does not cost
    /// their size (184 bytes each before).
    #[test]
    fn an_entry_stays_small() {
        assert!(
            std::mem::size_of::<EntryKind>() <= 88,
            "EntryKind grew to {} bytes; box the large variant's payload",
            std::mem::size_of::<EntryKind>()
        );
    }
}
