//! The boundary to MCP servers. `crates/mcp` implements [`McpLauncher`]; core only sees the
//! tools the servers offer, through [`ToolProvider`].

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::tools::Tool;

/// One MCP server to start for a session: from the ACP request (`mcpServers`) or from
/// `[mcp_servers.NAME]` in config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerSpec {
    pub name: String,
    pub transport: McpTransport,
    /// Working directory of a stdio server (the session's cwd); `None` keeps the agent's.
    pub cwd: Option<std::path::PathBuf>,
    /// Environment variables a stdio server must not inherit, on top of
    /// [`crate::exec::is_secret_env`]: the key variables of configured providers (`api_key_env`).
    pub env_remove: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

/// Something the user should know that is not part of the conversation (a server that failed
/// to start or died). Delivered as an ACP `notice` where the client supports it.
pub type NoticeSink = Arc<dyn Fn(String) + Send + Sync>;

/// A session's extra tools.
pub trait ToolProvider: Send + Sync {
    /// The tools available now. Waits for servers that are still starting, up to their startup
    /// timeout; a server that failed is simply absent (its failure was already noticed).
    fn tools(&self) -> BoxFuture<'_, Vec<Arc<dyn Tool>>>;
    /// Stops every server (session close, EOF). Idempotent.
    fn shutdown(&self) -> BoxFuture<'_, ()>;
}

pub trait McpLauncher: Send + Sync {
    /// Starts `servers` in the background and returns at once.
    fn launch(&self, servers: Vec<McpServerSpec>, notices: NoticeSink) -> Arc<dyn ToolProvider>;
}
