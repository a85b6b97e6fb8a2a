//! The one integration-test binary of ferrite-mcp: real MCP servers (the test-support fake, as
//! a child process over stdio and in-process over streamable HTTP) driven through the launcher.

// clippy.toml allows these in #[test] functions only; the shared helpers here are test code too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
