//! The agent's handle on one command's process tree: how it stops all of it. On Unix through the
//! command's supervisor (`supervised.rs`); on Windows through a job object (`job.rs`).

use std::time::Duration;

/// Time between the polite stop (SIGTERM) and SIGKILL (`docs/sandbox.md`). Windows has no polite
/// stop: its job object is terminated at once.
pub(crate) const KILL_GRACE: Duration = Duration::from_secs(2);

#[cfg(windows)]
mod job;
#[cfg(unix)]
mod supervised;

#[cfg(windows)]
pub(crate) use job::Tree;
#[cfg(unix)]
pub(crate) use supervised::{KILL_NOW, Tree};
