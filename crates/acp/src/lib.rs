//! ferrite-acp: the Agent Client Protocol server. The only crate that uses
//! `agent-client-protocol`; it maps core events to protocol messages in pure functions
//! (`mapping`) and owns stdin/stdout.

mod client_calls;
mod handlers;
pub mod mapping;
mod pump;
pub mod rpc;
mod server;
pub mod transport;

pub use server::{ServeOptions, serve};
