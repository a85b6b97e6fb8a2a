//! ferrite-acp: the Agent Client Protocol server. The only crate that uses
//! `agent-client-protocol`; it maps core events to protocol messages in pure functions
//! (`mapping`) and owns stdin/stdout. `server` describes how the modules are layered.

mod bridge;
mod calls;
mod client;
mod dispatch;
mod fail;
pub mod mapping;
mod methods;
mod out;
mod outbound;
mod params;
mod prompts;
mod pump;
mod reply;
pub mod rpc;
#[cfg(test)]
mod schema_fixture;
#[cfg(test)]
mod serve_tests;
mod server;
mod state;
mod terminal;
pub mod transport;

pub use server::{ServeOptions, refuse_all, serve};
