//! The boundary to language servers (`docs/lsp.md`). `crates/lsp` implements [`LspLauncher`]:
//! it starts, talks to and stops the servers. Core decides what a server may do (the sandbox of
//! the session's mode with the network off, whether the workspace is trusted), asks for a file's
//! errors after `write` and `edit` and for the `diagnostics` tool, and words what the model reads
//! (`report`), within a budget per turn.

mod report;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use crate::config::LspConfig;
use crate::exec::Sandbox;

pub(crate) use report::file_text;
pub use report::{Budget, card, diagnostics_text};

/// What the servers of one call may run with: decided by core, per call, from the session.
#[derive(Debug, Clone, PartialEq)]
pub struct LspScope {
    /// The workspace roots: a server's root is found inside them.
    pub roots: Vec<PathBuf>,
    /// The sandbox of the session's mode, network off (`Sandbox::None` in `full`).
    pub sandbox: Sandbox,
    /// Whether the user trusts the workspace: untrusted, servers run with the settings that stop
    /// them running the repository's code, or not at all (`docs/lsp.md`).
    pub trusted: bool,
    pub config: Arc<LspConfig>,
    /// Environment variables a server must not inherit (provider keys).
    pub env_remove: Vec<String>,
}

impl LspScope {
    /// How long an edit waits for its diagnostics (`lsp.wait_ms`).
    pub fn wait(&self) -> Duration {
        Duration::from_millis(self.config.wait_ms)
    }
}

/// One error a server reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// 1-based.
    pub line: u32,
    /// 1-based, in characters.
    pub column: u32,
    pub message: String,
    /// This edit brought it (it was not reported for the file before).
    pub introduced: bool,
}

/// What is known of one file's errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileState {
    /// The server reported on this content: its errors (severity error only), in order.
    Ready(Vec<Diagnostic>),
    /// The server had not reported within the wait.
    NotReady,
    /// The server is not running: it could not start, crashed, or is not allowed in this
    /// workspace; the sentence says which.
    Unavailable(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReport {
    pub path: PathBuf,
    /// The server's name (`pyright`).
    pub server: String,
    pub state: FileState,
}

/// What an edited file held before the edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Before<'a> {
    /// It did not exist.
    New,
    Text(&'a str),
    /// Not known (a large file: only the changed region was kept).
    Unknown,
}

/// A session's language servers.
pub trait LanguageServers: Send + Sync {
    /// `path` now holds `text` (after a `write` or `edit`; `before` is what it held). Sends it to the server of its language (started the first time) and waits up
    /// to `wait` for its diagnostics. `None`: no server handles the file. Never fails and never
    /// takes much longer than `wait`.
    fn changed<'a>(
        &'a self,
        scope: &'a LspScope,
        path: &'a Path,
        before: Before<'a>,
        text: &'a str,
    ) -> BoxFuture<'a, Option<FileReport>>;

    /// The errors of `path` (opened from disk if no server has it yet), or with `None` of every
    /// file the running servers reported on.
    fn diagnostics<'a>(
        &'a self,
        scope: &'a LspScope,
        path: Option<&'a Path>,
    ) -> BoxFuture<'a, Vec<FileReport>>;

    /// Whether a server could start for this workspace: one is on, a workspace root holds one
    /// of its root markers (`Cargo.toml`, `pyproject.toml`, ...; a user's server without
    /// markers counts everywhere), its program is on `PATH` and it may run at this trust. Where
    /// none can, the `diagnostics` tool is not offered (its definition would cost every request
    /// for nothing).
    fn can_run(&self, config: &LspConfig, trusted: bool, roots: &[PathBuf]) -> bool;

    /// Stops every server (session close, EOF). Idempotent.
    fn shutdown(&self) -> BoxFuture<'_, ()>;
}

/// What the user should know (a server that crashed), as a notice.
pub type NoticeSink = Arc<dyn Fn(String) + Send + Sync>;

pub trait LspLauncher: Send + Sync {
    /// The language servers of a new session: none runs until a file of its language is edited.
    /// `notices` tells the user what they should know (a server that crashed), once each.
    fn session(&self, notices: NoticeSink) -> Arc<dyn LanguageServers>;
}

/// What a call reaches its session's servers with.
#[derive(Clone)]
pub struct LspCall {
    pub servers: Arc<dyn LanguageServers>,
    pub scope: LspScope,
    /// The turn's budget for diagnostics appended to edits.
    pub budget: Budget,
}

/// The sandbox a language server runs in: a command's of the same mode, with the network off
/// (a server needs none, and a repository's code it may run must not reach out). `full` mode's
/// commands have no sandbox and neither do its servers.
pub fn server_sandbox(mode_sandbox: &Sandbox) -> Sandbox {
    match mode_sandbox {
        Sandbox::None => Sandbox::None,
        Sandbox::Restricted {
            writable,
            hidden,
            protected,
            unix_sockets,
            ..
        } => Sandbox::Restricted {
            writable: writable.clone(),
            hidden: hidden.clone(),
            protected: protected.clone(),
            network: false,
            unix_sockets: unix_sockets.clone(),
        },
    }
}
