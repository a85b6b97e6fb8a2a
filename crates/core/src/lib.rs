//! ferrite-core: sessions, the session log, config, permissions and the turn loop.
//!
//! Knows nothing of JSON-RPC, HTTP or process spawning: it reaches them through small traits
//! ([`model::ModelClient`], ...) that the other crates implement and `cli` wires together.

pub mod catalog;
pub mod config;
pub mod credentials;
pub mod env;
pub mod ids;
pub mod model;
pub mod modes;
pub mod time;
