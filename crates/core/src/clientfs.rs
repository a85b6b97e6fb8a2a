//! The editor's view of files (`docs/acp.md`): `fs/read_text_file` returns unsaved buffers. Core
//! decides when to ask ([`use_client`]); the ACP crate implements [`ClientFs`].

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use futures::future::BoxFuture;

use crate::config::FsDelegation;
use crate::ids::SessionId;

pub trait ClientFs: Send + Sync {
    /// Whether the client advertised `fs.readTextFile`.
    fn available(&self) -> bool;
    /// The file's text as the editor has it (including unsaved changes).
    fn read_text_file(
        &self,
        session: &SessionId,
        path: &Path,
    ) -> BoxFuture<'_, Result<String, String>>;
    /// Whether the client advertised `fs.writeTextFile`.
    fn writes(&self) -> bool {
        false
    }
    /// Has the editor write `content` to `path` (its buffer, then the file).
    fn write_text_file(
        &self,
        _session: &SessionId,
        _path: &Path,
        _content: String,
    ) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async { Err("the editor does not write files".to_owned()) })
    }
}

/// Whether `write`/`edit` of `path` may go through the editor (`fs_delegation = "review"`, the
/// default): a file in the workspace whose folder exists (the editor creates no folders), where
/// the client writes files. The caller also needs the path free of links and the session's
/// commands quiet ([`CommandGate`], `crate::fsops::slot`), checked again right before sending.
pub fn delegate_write(policy: FsDelegation, writes: bool, path: &Path, roots: &[PathBuf]) -> bool {
    policy == FsDelegation::Review
        && writes
        && roots.iter().any(|r| path.starts_with(r))
        && path.parent().is_some_and(Path::is_dir)
}

/// The session's commands against its delegated writes. An editor writes a path as it finds it
/// (in place, following a link), so a command that swaps a file for a link while the editor
/// writes it would redirect the write out of what the policy decided. Every command of the
/// session and of its subagents (foreground, background, hooks) holds a share of the gate while
/// it runs; a delegated write takes the whole gate or is not delegated, and no command starts
/// until the write was checked.
#[derive(Clone, Default)]
pub struct CommandGate(std::sync::Arc<tokio::sync::RwLock<()>>);

/// Held by a running command.
pub type CommandShare = tokio::sync::OwnedRwLockReadGuard<()>;
/// Held by a delegated write from the last check before sending until it was verified.
pub type QuietCommands = tokio::sync::OwnedRwLockWriteGuard<()>;

impl CommandGate {
    /// Waits until no delegated write is in flight, and holds a share while the command runs.
    pub async fn command(&self) -> CommandShare {
        self.0.clone().read_owned().await
    }

    /// The whole gate when no command of the session runs, else `None`: never waits.
    pub fn quiet(&self) -> Option<QuietCommands> {
        self.0.clone().try_write_owned().ok()
    }

    /// Whether no command of the session runs now.
    pub fn is_quiet(&self) -> bool {
        self.0.try_write().is_ok()
    }
}

/// What the agent itself did to files in this session, so a stale editor buffer is not
/// preferred over the disk.
#[derive(Debug, Default)]
pub struct DiskChanges {
    /// Files written by `write` / `edit`.
    pub written: HashSet<PathBuf>,
    /// When the first command of the session started: a file modified since may have been
    /// changed by a command, so the disk wins.
    pub commands_since: Option<SystemTime>,
}

impl DiskChanges {
    fn disk_is_newer(&self, path: &Path) -> bool {
        if self.written.contains(path) {
            return true;
        }
        let Some(since) = self.commands_since else {
            return false;
        };
        std::fs::metadata(path)
            .and_then(|m| m.modified())
            .is_ok_and(|m| m >= since)
    }
}

/// Whether `read` should ask the editor for `path`.
pub fn use_client(
    policy: FsDelegation,
    available: bool,
    path: &Path,
    roots: &[PathBuf],
    changes: &DiskChanges,
) -> bool {
    if !available || !roots.iter().any(|r| path.starts_with(r)) {
        return false;
    }
    match policy {
        FsDelegation::Never => false,
        FsDelegation::Always => true,
        FsDelegation::UnsavedOnly | FsDelegation::Review => !changes.disk_is_newer(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_wins_after_the_agent_changed_a_file() {
        let roots = vec![PathBuf::from("/ws")];
        let mut c = DiskChanges::default();
        let p = Path::new("/ws/a.rs");
        assert!(use_client(FsDelegation::UnsavedOnly, true, p, &roots, &c));
        assert!(
            !use_client(FsDelegation::UnsavedOnly, false, p, &roots, &c),
            "not advertised"
        );
        assert!(
            !use_client(
                FsDelegation::UnsavedOnly,
                true,
                Path::new("/etc/x"),
                &roots,
                &c
            ),
            "outside"
        );
        assert!(!use_client(FsDelegation::Never, true, p, &roots, &c));
        c.written.insert(p.to_owned());
        assert!(!use_client(FsDelegation::UnsavedOnly, true, p, &roots, &c));
        assert!(use_client(FsDelegation::Always, true, p, &roots, &c));
    }
}
