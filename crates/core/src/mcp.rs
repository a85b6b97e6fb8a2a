//! The boundary to MCP servers. `crates/mcp` implements [`McpLauncher`]; core only sees what the
//! servers offer, through [`ToolProvider`]: tools for the model, prompts the user runs as
//! `/mcp__<server>__<prompt>` commands ([`prompts`]), and resources a prompt's links name
//! ([`resources`]). Whatever a server sends is untrusted data: it never reaches the settings,
//! modes or tools of a turn.

mod budget;
pub mod prompts;
pub mod resources;

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::content::UserContent;
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

/// A session's MCP servers: their tools, prompts and resources. (The prompt and resource methods
/// default to having none, so a provider of tools alone, a test's, need not spell them out.)
pub trait ToolProvider: Send + Sync {
    /// The tools available now. Waits for servers that are still starting, up to their startup
    /// timeout; a server that failed is simply absent (its failure was already noticed).
    fn tools(&self) -> BoxFuture<'_, Vec<Arc<dyn Tool>>>;
    /// Stops every server (session close, EOF). Idempotent.
    fn shutdown(&self) -> BoxFuture<'_, ()>;
    /// Waits for the servers still starting (up to their startup timeout).
    fn started(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
    /// The prompts of the servers running now, as commands. Never waits: servers still
    /// starting add theirs when they are up (the session polls this).
    fn prompts(&self) -> Vec<McpPrompt> {
        Vec::new()
    }
    /// Runs the prompt offered as `command` (`prompts/get`), waiting for servers still starting.
    /// `Err` says why not, in words for the user.
    fn get_prompt<'a>(
        &'a self,
        _command: &'a str,
        _arguments: Vec<(String, String)>,
    ) -> BoxFuture<'a, Result<Vec<McpPromptMessage>, String>> {
        Box::pin(async { Err("no MCP server offers prompts".to_owned()) })
    }
    /// Reads `uri` through the server that lists it (or claims its scheme), waiting for servers
    /// still starting; `None` when no server claims it.
    fn read_resource<'a>(
        &'a self,
        _uri: &'a str,
    ) -> BoxFuture<'a, Option<Result<Vec<McpResourcePart>, String>>> {
        Box::pin(async { None })
    }
}

/// A server's prompt, offered to the editor as a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpPrompt {
    /// `mcp__<server>__<prompt>`, sanitized like tool names: what the user types after `/`.
    pub command: String,
    pub description: String,
    /// In the order the server declared them.
    pub arguments: Vec<McpPromptArgument>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpPromptArgument {
    pub name: String,
    pub required: bool,
}

/// One message of what `prompts/get` returned.
#[derive(Debug, Clone, PartialEq)]
pub struct McpPromptMessage {
    pub role: McpRole,
    pub content: McpContent,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpRole {
    User,
    Assistant,
}

/// A block of a prompt message, already in the shapes a prompt can hold.
#[derive(Debug, Clone, PartialEq)]
pub enum McpContent {
    /// Text, or a line describing a block a prompt cannot carry (audio, a link).
    Text(String),
    /// An image or an embedded resource.
    Block(UserContent),
}

/// One part of a resource read through its server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpResourcePart {
    Text {
        uri: String,
        text: String,
    },
    /// Base64 data.
    Blob {
        uri: String,
        mime_type: Option<String>,
        data: String,
    },
}

/// Where a remote server's OAuth sign-in sends the user (the browser step): the session's editor
/// through URL elicitation, or the terminal of `ferrite run` / `ferrite mcp login`.
pub trait Browser: Send + Sync {
    /// Whether a page can be shown to anyone now.
    fn can_open(&self) -> bool;
    /// Sends the user to `page`; see [`crate::elicit::Elicitor::open_page`].
    fn open(
        &self,
        page: crate::elicit::Page,
    ) -> BoxFuture<'_, Result<crate::elicit::Reply, String>>;
    /// The sign-in of `id` is over, whichever way it went.
    fn done(&self, id: &str);
}

pub trait McpLauncher: Send + Sync {
    /// Starts `servers` in the background and returns at once. `browser`: where a server that
    /// asks for an OAuth sign-in sends the user; `None` when no one can be sent anywhere (the
    /// server's tools are then unavailable and the notice says how to sign in).
    fn launch(
        &self,
        servers: Vec<McpServerSpec>,
        notices: NoticeSink,
        browser: Option<Arc<dyn Browser>>,
    ) -> Arc<dyn ToolProvider>;
}
