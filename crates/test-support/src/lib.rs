//! Shared test fakes: an ACP client that drives the real binary and validates what it says,
//! and the ACP schema checker.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod acp_client;
pub mod schema;

pub use acp_client::{AcpClient, Answer, agent_text, updates};
