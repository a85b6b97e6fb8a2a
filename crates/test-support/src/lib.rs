//! Shared test fakes: an ACP client that drives the real binary and validates what it says,
//! the ACP schema checker, a fake model provider speaking the three wire APIs over HTTP, and a
//! scripted model that drives ferrite-core in-process.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod acp_client;
pub mod acp_order;
pub mod fake_provider;
pub mod hostile_images;
pub mod mcp_server;
pub mod schema;
pub mod scripted_model;
pub mod transcript;

pub use acp_client::{AcpClient, Answer, agent_text, updates};
