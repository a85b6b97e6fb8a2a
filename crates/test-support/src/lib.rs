//! Shared test fakes: an ACP client that drives the real binary and validates what it says,
//! the ACP schema checker, and a fake model provider speaking the three wire APIs over HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod acp_client;
pub mod acp_order;
pub mod fake_provider;
pub mod mcp_server;
pub mod schema;

pub use acp_client::{AcpClient, Answer, agent_text, updates};
