//! ferrite-extensions: what users and repositories bring to Ferrite: skills, hooks, custom
//! agents, the trust records that arm them, front matter, and how their text is shown
//! ([`display`]).
//!
//! Everything here is inert until trusted (`trust`), and every file is read through
//! `ferrite_policy::own_files` under the same resolution and deny rules as the `read` tool. It
//! depends on `ferrite-policy` only: never on core (sessions, the turn loop), the store or any
//! crate that talks to a model, a client or a process. Core runs hooks and offers skills and
//! agents; this crate only finds, parses and describes them.

// Policy's modules under the names the files here have always used (`crate::paths`, ...).
use ferrite_policy::{modes, own_files, paths, private_fs};

pub mod agents;
pub mod display;
pub mod front_matter;
pub mod hooks;
pub mod skills;
pub mod trust;
