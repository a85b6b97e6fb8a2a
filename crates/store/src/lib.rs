//! ferrite-store: a session's record, as it is kept on disk.
//!
//! Owns the session log ([`log`]: the header and entries of one append-only JSON Lines file per
//! session, the files and their locks, the session list) and the checkpoint store
//! ([`checkpoints`]: the prior state of what a turn changed, content-addressed under
//! `FERRITE_HOME/checkpoints/`, and planning and applying an undo).
//!
//! It also owns the words the log is written in, because an entry is made of them and a crate
//! below `core` cannot name `core`'s types: what the editor is shown ([`content`]), the
//! conversation a model is sent ([`conversation`], shared with the history), ids, usage, why a
//! turn failed, what a checkpoint changed, time stamps. They are data with serde and no behaviour
//! that needs a session; `core` re-exports the conversation from its model port. A crate of their
//! own would hold nothing else and be used by nothing that does not also use the log.
//!
//! Must not depend on `core`, `extensions` or anything above them (no turn loop, no events, no
//! config files, no async runtime): `core` writes through it, the arrow points down. Below it is
//! only `ferrite_policy`, for the modes an entry records, the owner-only file modes of what it
//! writes and the link-free file operations an undo goes through.

// The policy's vocabulary and file operations, under the paths the moved modules use.
use ferrite_policy::{fsops, modes, paths, private_fs};

pub mod checkpoints;
pub mod content;
pub mod conversation;
pub mod failure;
pub mod file_changes;
pub mod ids;
pub mod log;
pub mod time;
pub mod usage;
