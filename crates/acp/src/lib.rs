//! ACP server.
