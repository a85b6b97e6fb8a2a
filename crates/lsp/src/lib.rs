//! `ferrite-lsp`: the language servers of Ferrite's sessions (`docs/lsp.md`). A session's
//! servers start lazily, one per (project root, server), each under the command supervisor and in
//! the sandbox of the session's mode with the network off (`ferrite_exec::Service`), so none
//! outlives its session or the agent; after `write` and `edit` the file's errors come back within
//! `lsp.wait_ms`, or the edit says they were not ready.

mod docs;
mod markers;
mod registry;
mod rpc;
mod server;
mod session;
mod tsserver;

use std::sync::Arc;

use ferrite_core::lsp::{LanguageServers, LspLauncher, NoticeSink};
use ferrite_exec::ExecRunner;

/// Starts sessions' language servers through `runner` (the same supervisor and sandbox as
/// commands).
pub struct LspRunner {
    runner: Arc<ExecRunner>,
}

impl LspRunner {
    pub fn new(runner: Arc<ExecRunner>) -> Self {
        LspRunner { runner }
    }
}

impl LspLauncher for LspRunner {
    fn session(&self, notices: NoticeSink) -> Arc<dyn LanguageServers> {
        Arc::new(session::Servers::new(self.runner.clone(), notices))
    }
}
