//! The queue pair: [`Op`]s go into a session's task, [`SessionEvent`]s come out. The ACP server,
//! `ferrite run` and tests all drive the core this way.

use serde::Serialize;

use crate::content::{PlanEntry, ToolCallUpdateView, ToolCallView, UserContent};
use crate::failure::{FailureKind, TurnFailure};
use crate::ids::{SessionId, TurnId};
use crate::log::StopReason;
use crate::modes::{Effort, Mode};

/// Something the editor should be shown.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// Only in replays: live prompts are already on the client's screen.
    UserMessage {
        /// The message's stable id (the log's), sent as `messageId`.
        message_id: Option<String>,
        content: Vec<UserContent>,
    },
    /// A live prompt was recorded as the user message `message_id` (its content is already on
    /// the client's screen): clients that take cursors learn where they may fork.
    MessageRecorded {
        message_id: String,
    },
    /// A rewind cut these user messages away: no fork or rewind may name them any more.
    MessagesCut {
        message_ids: Vec<String>,
    },
    AgentMessageChunk {
        text: String,
    },
    AgentThoughtChunk {
        text: String,
    },
    ToolCall(ToolCallView),
    ToolCallUpdate(ToolCallUpdateView),
    Plan {
        entries: Vec<PlanEntry>,
    },
    /// The plan `exit_plan` puts to the user, in Markdown (shown as a plan by clients that take
    /// plans by id; others see it on the call's card, as before).
    PlanProposal {
        markdown: String,
    },
    /// The mode changed from inside the session (e.g. an approved `exit_plan`).
    ModeChanged {
        mode: Mode,
    },
    /// Settings changed from inside the session; the payload is the full current set.
    SettingsChanged(Settings),
    TitleChanged {
        title: String,
    },
    /// Context occupancy after a model call (and when a session opens), with the session's
    /// running cost in USD when the price of its models is known.
    Usage {
        used: u64,
        size: u64,
        cost: Option<f64>,
    },
    /// A notice for the user that is not part of the conversation.
    Notice {
        text: String,
    },
    /// News for the user that is not a warning (a background command that ended well); shown
    /// like [`Event::Notice`], with `info` severity where the client takes notices.
    Info {
        text: String,
    },
    /// A compaction of the conversation (`turn/compact.rs`) started, or ended as `stage` says.
    /// `id` names it within the session: the n-th compaction is `compaction-n`.
    Compaction {
        id: String,
        stage: CompactionStage,
    },
    /// The slash commands the session offers (sent again when prompt files change).
    Commands {
        commands: Vec<crate::commands::CommandInfo>,
    },
    /// A subagent session this session started (`task`): announced before any of its own
    /// updates, again when it stops. Clients that do not show child sessions are not sent it.
    Subagent(SubagentView),
    /// A message another session sent this one (a subagent's task, from its parent).
    SessionMessage {
        message_id: String,
        from: SessionId,
        to: SessionId,
        content: Vec<UserContent>,
    },
    /// The turn is over; the last event of every turn.
    TurnEnded(TurnOutcome),
}

/// A subagent session as its parent shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubagentView {
    pub session: SessionId,
    pub title: String,
    pub cwd: std::path::PathBuf,
    pub running: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "stage", rename_all = "snake_case")]
pub enum CompactionStage {
    Started,
    /// `summary` is what the model is sent from now on; `notice` is how clients that do not
    /// follow compactions are told (a notice, as before compactions had updates of their own).
    Completed {
        summary: String,
        notice: String,
    },
    Failed {
        error: String,
    },
    Cancelled,
}

/// The id of a session's `n`-th compaction (1-based): the same live and in a replay.
pub fn compaction_id(n: usize) -> String {
    format!("compaction-{n}")
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionEvent {
    pub session: SessionId,
    /// The turn this event belongs to; `None` for events outside a turn.
    pub turn: Option<TurnId>,
    pub event: Event,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TurnOutcome {
    pub stop: StopReason,
    pub failure: Option<TurnFailure>,
    /// What the turn's model calls used, summed (tool loops, compactions and subagents
    /// included); `None` when the session task did not end the turn itself.
    pub usage: Option<crate::usage::Usage>,
    /// What a turn that was a request to ferrite itself (`_session/rewind`) answers, for the
    /// caller to send in its response rather than as an agent message.
    pub answer: Option<Box<CommandAnswer>>,
}

/// The outcome of a request answered without the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandAnswer {
    /// False when nothing was done because the request named nothing that could be done (an
    /// unknown message): the caller answers an error with `text`.
    pub done: bool,
    pub text: String,
}

impl TurnOutcome {
    /// A turn that stopped for `stop`, without failing.
    pub fn ended(stop: StopReason) -> Self {
        Self {
            stop,
            failure: None,
            usage: None,
            answer: None,
        }
    }

    /// A failed turn: it answers `end_turn` with the failure's facts, and `message` is what the
    /// user is told. The one constructor of a failed outcome.
    pub fn failed(kind: FailureKind, message: impl Into<String>) -> Self {
        Self {
            stop: StopReason::EndTurn,
            failure: Some(TurnFailure::new(&kind, message)),
            usage: None,
            answer: None,
        }
    }
}

/// A session's current choices and what it may choose from: everything the ACP `modes` and
/// `configOptions` are rendered from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Settings {
    pub mode: Mode,
    /// Modes at or below the session's ceiling.
    pub available_modes: Vec<Mode>,
    /// The current model id; falls back to the first catalog model for display.
    pub model: String,
    /// `(id, display name)` of every model in the catalog.
    pub models: Vec<(String, String)>,
    pub effort: Effort,
    pub web_search: bool,
    /// The custom agent the session works as; `None`: Ferrite itself.
    pub agent: Option<String>,
    /// `(name, description)` of the custom agents the user may choose (none: no choice shown).
    pub agents: Vec<(String, String)>,
}

/// Per-turn knobs from `session/prompt` `_meta` (`docs/acp.md`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnOptions {
    pub model: Option<String>,
    pub effort: Option<Effort>,
    pub web_search: Option<bool>,
    /// `permission_mode = "ask"`: this turn asks even in `auto`.
    pub force_ask: bool,
    /// `_session/rewind`: the turn only rewinds the session to before this message (no prompt
    /// is recorded, the model is not called).
    pub rewind: Option<RewindTo>,
}

/// Where `_session/rewind` takes the session back to (`docs/sessions.md`, "Rewind").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewindTo {
    /// The id of a live user message: the history ends just before it.
    pub message_id: String,
    /// Bring back the files later turns changed, under `/undo`'s rules.
    pub restore_files: bool,
}

/// A change of one sticky setting.
#[derive(Debug, Clone, PartialEq)]
pub enum SettingChange {
    Mode(Mode),
    /// Work as this custom agent (`None`: as Ferrite itself).
    Agent(Option<String>),
    Model(String),
    Effort(Effort),
    WebSearch(bool),
    /// The additional workspace roots (each an existing absolute directory).
    Directories(Vec<std::path::PathBuf>),
    SystemPrompt(crate::prompt::ClientPrompt),
    /// The user's title for the session: never replaced by a generated one.
    Title(String),
}

/// Why a request to a session was refused: always the request's fault (JSON-RPC -32602). A log
/// that cannot be written is ferrite's fault and travels as `RuntimeError::Store` (-32603).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("a turn is already running")]
    Busy,
    /// Too many prompts already wait behind the running turn.
    #[error("{0} prompts already wait in this session; wait for a turn to end, or cancel")]
    QueueFull(usize),
    #[error("{0}")]
    Invalid(String),
    #[error("the session is closed")]
    Closed,
}
