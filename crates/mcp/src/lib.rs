//! ferrite-mcp: a session's MCP servers (stdio children and streamable HTTP endpoints, through
//! the `rmcp` client) offered to the model as tools named `mcp__<server>__<tool>`.
//!
//! `cli` builds a [`Launcher`] and hands it to core as an `Arc<dyn McpLauncher>`; core calls
//! `launch` when a session starts, `tools()` before each turn and `shutdown()` when the session
//! closes. A server that fails or dies is left out and the user told through the notice sink;
//! the session goes on with the others. A remote server that answers 401 with OAuth is signed in
//! to ([`oauth`]) and started again.

mod content;
mod launcher;
mod listing;
pub mod names;
pub mod oauth;
mod prompts;
mod server;
mod starting;
mod tool;

pub use launcher::{Launcher, McpServers};
pub use oauth::OAuthConfig;
pub use tool::McpTool;
