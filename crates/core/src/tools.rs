//! The tools the model can call. Each tool is a [`Tool`]; the registry is what one turn offers.
//! A failing tool is input for the model ([`ToolError::RespondToModel`]), not a Rust failure.

mod ask_user;
mod background;
mod bash;
mod delegated;
mod diagnostics;
mod edit;
pub mod find;
pub mod grep;
mod ls;
pub(crate) mod markdown;
mod output;
mod read;
mod schema;
mod skill;
mod update_plan;
pub mod web_fetch;
mod write;

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use crate::access::Access;
use crate::content::{Location, PlanEntry, ToolCallUpdateView, ToolContent, ToolKind};
use crate::exec::{CommandRunner, Sandbox};
use crate::ids::SessionId;
use crate::model::ToolSpec;
use crate::modes::Mode;

pub use ask_user::{ASK_USER, AskUserTool};
pub use background::{BASH_KILL, BASH_OUTPUT, BashKill, BashOutput};
pub use bash::Bash;
pub use diagnostics::{DIAGNOSTICS, Diagnostics};
pub use edit::Edit;
pub use find::Find;
pub use grep::Grep;
pub use ls::Ls;
pub use read::{DecodeGate, MAX_DECODE_BYTES, MAX_PIXELS, Read};
pub use skill::{SKILL, SkillTool};
pub use update_plan::{UPDATE_PLAN, UpdatePlan};
pub use web_fetch::WebFetch;
pub use write::Write;

pub(crate) use delegated::{delegated_writer, write_through};
pub(crate) use schema::input_schema;

/// How a call is shown before it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct CallDescription {
    pub title: String,
    pub locations: Vec<Location>,
}

/// What a finished call gives back.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    /// What the model reads.
    pub text: String,
    /// What the editor shows (replaces the call's content).
    pub content: Vec<ToolContent>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// The call failed in a way the model should hear about and can react to.
    #[error("{0}")]
    RespondToModel(String),
    /// The tool machinery itself broke: the turn ends as a `tool_error`.
    #[error("{0}")]
    Fatal(String),
    /// The turn was cancelled while the tool was asking the user; the text is the call's result.
    #[error("{0}")]
    Cancelled(String),
    /// The session log could not be written: the turn stops (`session_log_write`).
    #[error("{0}")]
    SessionLog(String),
}

/// Who decides whether a call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    /// The permission policy (`docs/permissions.md`), asking the user when it says so.
    Policy,
    /// The tool puts its own question to the user (`exit_plan`): no policy decision, and the
    /// call is not shown running before it asks; it answers a cancel itself.
    OwnQuestion,
}

/// What a tool must not open on its own (the files a search walks into): what the deny rules
/// cover, and below `full` Ferrite's own directory (a search root above it would otherwise read
/// the keys without the question a direct `read` gets).
#[derive(Clone, Default)]
pub struct ReadDeny {
    rules: Arc<crate::permissions::Rules>,
    roots: Vec<PathBuf>,
    protected: Option<crate::protected::Protected>,
}

impl ReadDeny {
    pub fn new(
        rules: Arc<crate::permissions::Rules>,
        roots: Vec<PathBuf>,
        protected: Option<crate::protected::Protected>,
    ) -> Self {
        Self {
            rules,
            roots,
            protected,
        }
    }

    /// Whether `tool` may not read (or list) `path`.
    pub fn denies(&self, tool: &str, path: &std::path::Path) -> bool {
        self.protected.as_ref().is_some_and(|p| p.hides(path))
            || (!self.rules.deny.is_empty() && self.rules.denies_read(tool, path, &self.roots))
    }
}

/// Caps on what a tool result sends back to the model (`[tools]` in config).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputLimits {
    pub max_bytes: usize,
    pub max_lines: usize,
}

/// What a tool may do to its session, and no more: it never sees the session's state. The
/// session's recorder implements it (`crate::session::Recorder`).
pub trait CallRecorder: Send + Sync {
    fn session(&self) -> &SessionId;
    /// Shows the editor how the call is going (a command's output so far).
    fn progress(&self, update: ToolCallUpdateView) -> BoxFuture<'_, ()>;
    /// Records the session's plan and shows it (`update_plan`).
    fn plan(&self, entries: Vec<PlanEntry>) -> BoxFuture<'_, Result<(), String>>;
    /// Notes that the agent wrote `path` (the editor's buffer of it is now stale).
    fn wrote(&self, path: &std::path::Path);
    /// Notes that a command is about to run (it may change any file).
    fn command_started(&self);
    /// Whether `read` should take `path` from the editor (`docs/acp.md`).
    fn read_from_client(
        &self,
        policy: crate::config::FsDelegation,
        available: bool,
        path: &std::path::Path,
        roots: &[PathBuf],
    ) -> bool;
}

/// What a tool may use while it runs.
pub struct ToolContext<'a> {
    pub cwd: PathBuf,
    /// The workspace: `cwd` plus the session's additional directories, canonical.
    pub roots: Vec<PathBuf>,
    pub call_id: String,
    pub cancel: CancellationToken,
    pub recorder: &'a dyn CallRecorder,
    pub limits: OutputLimits,
    /// Where full outputs are spilled: `FERRITE_HOME/sessions/<id>/tool-output/`.
    pub spill_dir: PathBuf,
    /// Runs commands; `None` where the binary was built without one (tests of core).
    pub runner: Option<Arc<dyn CommandRunner>>,
    /// The sandbox commands of this call run in, decided from the session mode.
    pub sandbox: Sandbox,
    /// Default command timeout (`tools.bash_timeout_secs`).
    pub bash_timeout: std::time::Duration,
    /// The editor's file system, for reading unsaved buffers (`docs/acp.md`).
    pub client_fs: Option<Arc<dyn crate::clientfs::ClientFs>>,
    pub fs_delegation: crate::config::FsDelegation,
    /// The session's commands against writes through the editor (`delegated`).
    pub command_gate: crate::clientfs::CommandGate,
    /// Deny rules applied to each file `grep`, `find` and `ls` come across.
    pub read_deny: ReadDeny,
    /// Fetches web pages (`web_fetch`); `None` where the binary has no HTTP client (core tests).
    pub web: Option<Arc<dyn crate::web::WebFetch>>,
    /// Which addresses a fetch may reach (`web_fetch.allow_private`).
    pub web_reach: crate::web::Reach,
    /// Whether the turn's model takes images (`read` of an image attaches it only then).
    pub model_images: bool,
    /// Taken while an image is decoded: one at a time in the process.
    pub image_decodes: DecodeGate,
    /// The session's background commands (`bash` with `background`, `bash_output`,
    /// `bash_kill`), and how many may run at once.
    pub background: crate::background::BackgroundJobs,
    pub max_background: usize,
    /// The session's skills (`skill`), and the policy their files are read under.
    pub skills: Arc<Vec<crate::skills::Skill>>,
    pub own_files: crate::own_files::OwnFiles,
    /// Who puts `ask_user`'s questions to the user (`crate::elicit`).
    pub elicitor: Option<Arc<dyn crate::elicit::Elicitor>>,
    /// The session's language servers (`write`, `edit`, `diagnostics`); `None` where the binary
    /// has none (core tests).
    pub lsp: Option<crate::lsp::LspCall>,
}

pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn spec(&self) -> ToolSpec;
    fn kind(&self) -> ToolKind;
    fn describe(&self, input: &Value, cwd: &std::path::Path) -> CallDescription;
    /// What the call's card shows before it runs (`exit_plan`: the plan). Empty for most.
    fn card_content(&self, _input: &Value) -> Vec<ToolContent> {
        vec![]
    }
    /// What the call would do, checked against the permission policy before it runs.
    fn access(&self, input: &Value, cwd: &std::path::Path) -> Access;
    /// Why a call cannot do anything, from its arguments alone (an `edit` whose old and new
    /// text are the same): the model is told before anyone is asked about it.
    fn pointless(&self, _input: &Value) -> Option<String> {
        None
    }
    /// What the user is shown when asked to approve the call: what it will change (a diff
    /// against the file as it is now, the command and where it runs). Empty: the title says it.
    fn preview(&self, _input: &Value, _cwd: &std::path::Path) -> Vec<ToolContent> {
        vec![]
    }
    /// Who decides whether a call runs.
    fn approval(&self) -> Approval {
        Approval::Policy
    }
    /// Whether the tool can be called in `mode` (else a call of it is a call of an unknown tool).
    fn callable(&self, _mode: Mode) -> bool {
        true
    }
    /// Whether the model is offered the tool in `mode`.
    fn offered(&self, mode: Mode) -> bool {
        self.callable(mode)
    }
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

/// The tools offered in one turn.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
}

impl ToolRegistry {
    /// Keeps only the tools `keep` names.
    pub fn retain(&mut self, keep: &[String]) {
        self.tools.retain(|t| keep.iter().any(|k| k == t.name()));
    }

    pub fn add(&mut self, tool: Arc<dyn Tool>) {
        self.tools.retain(|t| t.name() != tool.name());
        self.tools.push(tool);
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    /// The names of the tools, in the order they were added.
    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.name().to_owned()).collect()
    }

    /// The tool `name`, if it can be called in `mode`.
    pub fn callable(&self, name: &str, mode: Mode) -> Option<&Arc<dyn Tool>> {
        self.get(name).filter(|t| t.callable(mode))
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec()).collect()
    }

    /// The tools offered in `mode`, in the order they were added.
    pub fn specs_in(&self, mode: Mode) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .filter(|t| t.offered(mode))
            .map(|t| t.spec())
            .collect()
    }
}

/// The built-in tools a harness offers (MCP tools are added by the caller): `code` and
/// `unattended` get everything; `planner` only looks around and plans; `assistant` only plans.
pub fn registry_for(harness: crate::modes::Harness) -> ToolRegistry {
    use crate::modes::Harness;
    let tools: Vec<Arc<dyn Tool>> = match harness {
        Harness::Code | Harness::Unattended => vec![
            Arc::new(Read),
            Arc::new(Write),
            Arc::new(Edit),
            Arc::new(Bash),
            Arc::new(BashOutput),
            Arc::new(BashKill),
            Arc::new(Grep),
            Arc::new(Find),
            Arc::new(Ls),
            Arc::new(UpdatePlan),
            Arc::new(WebFetch),
            Arc::new(Diagnostics),
        ],
        Harness::Planner => vec![
            Arc::new(Read),
            Arc::new(Grep),
            Arc::new(Find),
            Arc::new(Ls),
            Arc::new(Diagnostics),
            Arc::new(UpdatePlan),
            Arc::new(WebFetch),
        ],
        Harness::Assistant => vec![Arc::new(UpdatePlan), Arc::new(WebFetch)],
    };
    let mut r = ToolRegistry::default();
    for t in tools {
        r.add(t);
    }
    r
}
