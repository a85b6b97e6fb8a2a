//! What the runtime and every turn are built from: the agent's home, environment, session store
//! and the ports to the other crates (model, commands, MCP, web, the editor), plus the reads of
//! config, credentials and catalog they share. Below `runtime` and `turn`, which both use it.

pub mod queries;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::catalog::Catalog;
use crate::config::{Config, ConfigError};
use crate::credentials::Credentials;
use crate::env::Env;
use crate::exec::CommandRunner;
use crate::log::SessionStore;
use crate::mcp::McpLauncher;
use crate::model::ModelConnector;
use crate::permissions::Approver;

/// What the runtime is built from; wired by the binary.
pub struct Services {
    pub home: PathBuf,
    pub env: Env,
    pub store: SessionStore,
    pub connector: Option<Arc<dyn ModelConnector>>,
    pub runner: Option<Arc<dyn CommandRunner>>,
    /// Starts MCP servers for sessions.
    pub mcp: Option<Arc<dyn McpLauncher>>,
    /// Fetches web pages for `web_fetch`.
    pub web: Option<Arc<dyn crate::web::WebFetch>>,
    /// Runs language servers for sessions (`crate::lsp`).
    pub lsp: Option<Arc<dyn crate::lsp::LspLauncher>>,
    /// Asks the user for permission; set by the ACP server once it runs.
    pub approver: std::sync::OnceLock<Arc<dyn Approver>>,
    /// The editor's file system; set by the ACP server once it runs.
    pub client_fs: std::sync::OnceLock<Arc<dyn crate::clientfs::ClientFs>>,
    /// Asks the user questions in the editor (`ask_user`), where the client can.
    pub elicitor: std::sync::OnceLock<Arc<dyn crate::elicit::Elicitor>>,
    /// Workspaces the user answered "Not now" for: not asked again while this process runs.
    pub trust_declined: std::sync::Mutex<std::collections::HashSet<std::path::PathBuf>>,
    /// Hands memory the allocator keeps but no longer uses back to the system; called on a
    /// blocking thread once the agent rests after a turn (`runtime::memory`; the binary sets
    /// it: it owns the allocator).
    pub release_memory: fn(),
    /// Image decodes take turns through this: one at a time in the process.
    pub image_decodes: crate::tools::DecodeGate,
    /// The subagent sessions running now, and whether the editor shows them.
    pub children: Arc<crate::children::Children>,
}

impl Services {
    pub fn new(home: PathBuf, env: Env, connector: Option<Arc<dyn ModelConnector>>) -> Self {
        let store = SessionStore::new(&home);
        Self {
            home,
            env,
            store,
            connector,
            runner: None,
            mcp: None,
            web: None,
            lsp: None,
            approver: std::sync::OnceLock::new(),
            client_fs: std::sync::OnceLock::new(),
            elicitor: std::sync::OnceLock::new(),
            trust_declined: Default::default(),
            release_memory: || {},
            image_decodes: Default::default(),
            children: Default::default(),
        }
    }

    /// Config (narrowed by the workspace), credentials and the model catalog, read fresh.
    pub fn context(&self, cwd: Option<&Path>) -> Result<(Config, Catalog), ConfigError> {
        let config = Config::load(&self.home, cwd)?;
        for w in &config.warnings {
            tracing::warn!("{w}");
        }
        let creds = Credentials::load(&self.home).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "ignoring unreadable credentials");
            Credentials::default()
        });
        let catalog = Catalog::build(&config, &self.env, &creds)
            .with_listings(&crate::catalog::Listings::load(&self.home));
        Ok((config, catalog))
    }

    /// The policy for the files Ferrite reads for itself in a workspace (`crate::own_files`),
    /// outside a turn (the command list): the deny rules of config (narrowed by the workspace of
    /// `roots[0]`) and the stored ones, read now. Rules that cannot be read let nothing be read.
    pub fn own_files(&self, roots: &[PathBuf]) -> crate::own_files::OwnFiles {
        let deny = match roots.first() {
            Some(cwd) => Config::load(&self.home, Some(cwd))
                .map_err(|e| e.to_string())
                .and_then(|config| {
                    let stored = crate::permissions::StoredRules::load(&self.home, cwd)
                        .map_err(|e| e.to_string())?;
                    let deny: Vec<String> = config
                        .permissions
                        .deny
                        .into_iter()
                        .chain(stored.deny)
                        .collect();
                    crate::permissions::Rules::from_strings(&[], &deny)
                        .map(Arc::new)
                        .map_err(|e| e.to_string())
                }),
            None => Err("no workspace".to_owned()),
        };
        crate::own_files::OwnFiles::new(&self.home, roots, deny).with_user_home(self.env.home())
    }

    /// The catalog for `config` with fresh credentials and the cached provider listings.
    pub fn catalog(&self, config: &Config) -> Catalog {
        let creds = Credentials::load(&self.home).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "ignoring unreadable credentials");
            Credentials::default()
        });
        Catalog::build(config, &self.env, &creds)
            .with_listings(&crate::catalog::Listings::load(&self.home))
    }
}
