//! ferrite-core: sessions, config and the turn loop.
//!
//! Knows nothing of JSON-RPC, HTTP or process spawning: it reaches them through small traits
//! ([`model::ModelClient`], ...) that the other crates implement and `cli` wires together. The
//! permission policy, path resolution and protected files are `ferrite_policy`'s: core asks it
//! for decisions and must not grow its own. Re-exported under their old paths so callers keep
//! working while they move to naming `ferrite_policy` directly.

pub use ferrite_policy::{access, fsops, modes, own_files, paths, private_fs, protected, shell};
// What users and repositories bring (skills, hooks, agents, trust) is `ferrite_extensions`'s.
use ferrite_extensions::front_matter;
pub use ferrite_extensions::{agents, display, hooks, skills, trust};
// The session's record (the log, the checkpoint store) and the words it is written in are
// `ferrite_store`'s. Named here (not re-exported) so core's modules keep their paths; other crates
// name `ferrite_store` themselves.
use ferrite_store::{content, failure, file_changes, ids, log, time, usage};

/// The permission policy (`ferrite_policy::permissions`) and, core's own part, asking the user.
pub mod permissions {
    pub use crate::approval::{Approver, PermissionAnswer, PermissionRequest};
    pub use ferrite_policy::permissions::*;
}

pub mod ansi;
mod approval;
pub mod attachments;
pub mod background;
pub mod catalog;
mod checkpointing;
pub mod children;
pub mod clientfs;
pub mod commands;
pub mod config;
pub mod credentials;
pub mod elicit;
pub mod env;
pub mod events;
pub mod exec;
mod git_guard;
pub mod lsp;
pub mod mcp;
pub mod model;
pub mod prompt;
pub mod runtime;
pub mod services;
mod session;
pub mod session_view;
pub mod spill_budget;
pub mod state;
pub mod steering;
pub mod tools;
pub mod turn;
pub mod web;
pub mod worktrees;
