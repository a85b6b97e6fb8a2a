//! ferrite-core: sessions, the session log, config, permissions and the turn loop.
//!
//! Knows nothing of JSON-RPC, HTTP or process spawning: it reaches them through small traits
//! ([`model::ModelClient`], ...) that the other crates implement and `cli` wires together.

pub mod access;
pub mod agents;
pub mod ansi;
pub mod attachments;
pub mod background;
pub mod catalog;
pub mod checkpoints;
pub mod children;
pub mod clientfs;
pub mod commands;
pub mod config;
pub mod content;
pub mod credentials;
pub mod display;
pub mod elicit;
pub mod env;
pub mod events;
pub mod exec;
pub mod failure;
pub mod file_changes;
mod front_matter;
#[cfg(unix)]
pub mod fsops;
pub mod hooks;
// No `openat` on Windows: the same API over path checks (weaker against races, see the file).
#[cfg(windows)]
#[path = "fsops_windows.rs"]
pub mod fsops;
pub mod ids;
pub mod log;
pub mod mcp;
pub mod model;
pub mod modes;
pub mod own_files;
pub mod paths;
pub mod permissions;
pub mod private_fs;
pub mod prompt;
pub mod protected;
pub mod runtime;
pub mod services;
mod session;
pub mod session_view;
pub mod shell;
pub mod skills;
pub mod spill_budget;
pub mod state;
pub mod steering;
pub mod time;
pub mod tools;
pub mod trust;
pub mod turn;
pub mod usage;
pub mod web;
