//! What a tool call will do, as the permission policy sees it. A leaf: the tools describe their
//! calls with it, and the policy (`permissions`, `protected`) decides on it, without either
//! importing the other for it.

use std::path::PathBuf;

/// What a call will do, for the permission policy (`docs/permissions.md`). Paths are absolute and
/// resolved (symlinks and `..`), as far as they exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// Nothing outside the agent (plans, thinking).
    None,
    Read {
        paths: Vec<PathBuf>,
    },
    Write {
        paths: Vec<PathBuf>,
    },
    Execute {
        command: String,
    },
    /// An MCP tool: the policy rules are `mcp__server__tool`.
    Mcp,
    /// A web request (`web_fetch`): rules are `web_fetch(domain:…)` on `host`.
    Fetch {
        url: String,
        host: String,
    },
}
