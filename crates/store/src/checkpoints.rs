//! Checkpoints (`docs/checkpoints.md`): before a turn first changes the workspace, the prior
//! state of what it may touch is copied into a content-addressed store under
//! `FERRITE_HOME/checkpoints/<session>/`, so `/undo` can put it back. The store never touches the
//! project's `.git` and does not need git.
//!
//! Layout: `packs/` (file bytes by SHA-256, packed: `pack.rs`), `manifests/<id>.json` (one per checkpoint, written
//! atomically and made durable before the change runs), `index.json` (path → stat + hash, so an
//! unchanged file is neither re-hashed nor re-copied).

mod caps;
mod capture;
mod pack;
mod restore;
#[cfg(test)]
mod tests;
mod tracker;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::ids::SessionId;

pub use crate::file_changes::{Change, FileChange, Skipped, shown, undo_message, undo_note};
pub use caps::{Dropped, Why};
pub use restore::{Plan, Reach, Step};
pub use tracker::{Finished, Tracker, What};

/// `[checkpoints]` (`docs/config.md`, `docs/checkpoints.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointsConfig {
    /// Checkpoints kept per session; older ones are pruned. 0 turns checkpoints off.
    pub max_count: usize,
    /// Files larger than this are listed in a checkpoint but their bytes are not kept.
    pub max_file_bytes: u64,
    /// One session's store, at most; the oldest checkpoints are dropped past it.
    pub max_session_bytes: u64,
    /// Every session's stores together (`FERRITE_HOME/checkpoints/`), at most.
    pub max_total_bytes: u64,
}

impl Default for CheckpointsConfig {
    fn default() -> Self {
        Self {
            max_count: 50,
            max_file_bytes: 10_485_760,
            max_session_bytes: 2 << 30,
            max_total_bytes: 10 << 30,
        }
    }
}

/// The state of one path at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FileState {
    Absent,
    Dir {
        mode: u32,
    },
    File {
        hash: String,
        size: u64,
        mode: u32,
    },
    /// Larger than `checkpoints.max_file_bytes`: listed, but its bytes were not kept, so an undo
    /// cannot bring it back (and says so). Compared by size and mtime.
    NotKept {
        size: u64,
        mode: u32,
        mtime_ns: u64,
    },
    Symlink {
        target: PathBuf,
    },
}

impl FileState {
    fn hash(&self) -> Option<&str> {
        match self {
            FileState::File { hash, .. } => Some(hash),
            FileState::Absent
            | FileState::Dir { .. }
            | FileState::NotKept { .. }
            | FileState::Symlink { .. } => None,
        }
    }
}

/// One checkpoint: the state before the turn of every path it covers and, once the turn ended,
/// the state after it of the paths that changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub id: u64,
    /// The prompt's number in the session (1 = the first prompt).
    pub turn: u64,
    pub created_at: String,
    pub roots: Vec<PathBuf>,
    /// Whether the whole workspace was snapshotted (a command ran), so files that appear after
    /// it were created by the turn.
    #[serde(default)]
    pub full: bool,
    /// The checkpoints an `/undo` reverted, when this is that undo's own checkpoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undid: Vec<u64>,
    pub before: BTreeMap<PathBuf, FileState>,
    /// `None` while the turn runs, and forever when the agent died during it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<BTreeMap<PathBuf, FileState>>,
}

impl Manifest {
    /// What the finished turn changed, in path order.
    pub fn changes(&self) -> Vec<FileChange> {
        let Some(after) = &self.after else {
            return vec![];
        };
        after
            .iter()
            .map(|(path, a)| {
                let b = self.before.get(path).unwrap_or(&FileState::Absent);
                let change = match (b, a) {
                    (FileState::Absent, _) => Change::Created,
                    (_, FileState::Absent) => Change::Deleted,
                    _ => Change::Modified,
                };
                FileChange {
                    path: path.clone(),
                    change,
                }
            })
            .collect()
    }

    /// Files whose bytes this checkpoint could not keep.
    pub fn not_kept(&self) -> Vec<Skipped> {
        self.before
            .iter()
            .filter(|(p, s)| {
                matches!(s, FileState::NotKept { .. })
                    && self.after.as_ref().is_none_or(|a| a.contains_key(*p))
            })
            .map(|(p, _)| Skipped {
                path: p.clone(),
                reason: "not kept: larger than `checkpoints.max_file_bytes` (or past what one snapshot may add: 1 GiB or `checkpoints.max_session_bytes`)".into(),
            })
            .collect()
    }
}

/// `FERRITE_HOME/checkpoints/<session>/`.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    pub fn new(home: &Path, session: &SessionId) -> Self {
        Self {
            dir: crate::log::SessionStore::new(home).checkpoint_dir(session),
        }
    }

    fn packs(&self) -> PathBuf {
        self.dir.join("packs")
    }

    fn manifests(&self) -> PathBuf {
        self.dir.join("manifests")
    }

    fn index_path(&self) -> PathBuf {
        self.dir.join("index.json")
    }

    fn manifest_path(&self, id: u64) -> PathBuf {
        self.manifests().join(format!("{id:08}.json"))
    }

    fn ensure(&self) -> std::io::Result<()> {
        crate::private_fs::create_dir_all(&self.packs())?;
        crate::private_fs::create_dir_all(&self.manifests())
    }

    /// Every checkpoint, oldest first. Unreadable manifests are skipped (and logged).
    pub fn list(&self) -> Vec<Manifest> {
        let Ok(rd) = std::fs::read_dir(self.manifests()) else {
            return vec![];
        };
        let mut out: Vec<Manifest> = rd
            .flatten()
            .filter(|d| d.path().extension().is_some_and(|e| e == "json"))
            .filter_map(|d| {
                let path = d.path();
                match std::fs::read(&path)
                    .map_err(|e| e.to_string())
                    .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
                {
                    Ok(m) => Some(m),
                    Err(e) => {
                        tracing::warn!(path = %path.display(), error = %e, "skipping an unreadable checkpoint");
                        None
                    }
                }
            })
            .collect();
        out.sort_by_key(|m: &Manifest| m.id);
        out
    }

    /// One more than the highest manifest id (read from the names, not the contents), or than
    /// the highest dropped one: an id is never given twice.
    pub fn next_id(&self) -> u64 {
        let dropped = caps::dropped(self).iter().map(|d| d.id).max().unwrap_or(0);
        let Ok(rd) = std::fs::read_dir(self.manifests()) else {
            return dropped + 1;
        };
        rd.flatten()
            .filter_map(|d| {
                let name = d.file_name();
                name.to_str()?.strip_suffix(".json")?.parse::<u64>().ok()
            })
            .max()
            .unwrap_or(0)
            .max(dropped)
            + 1
    }

    /// Writes `m` atomically and durably (tmp + fsync + rename + fsync of the directory). The
    /// blobs it names were made durable when their pack was sealed.
    pub fn save(&self, m: &Manifest) -> std::io::Result<()> {
        self.ensure()?;
        let bytes = serde_json::to_vec(m).map_err(std::io::Error::other)?;
        write_atomic(&self.manifest_path(m.id), &bytes)
    }

    /// The checkpoints dropped to keep the store within its limits, oldest first.
    pub fn dropped(&self) -> Vec<Dropped> {
        caps::dropped(self)
    }

    pub fn remove(&self, id: u64) -> std::io::Result<()> {
        match std::fs::remove_file(self.manifest_path(id)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            Ok(()) | Err(_) => Ok(()),
        }
    }
}

/// Writes `bytes` to `path` atomically and durably, mode 0600.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    crate::private_fs::write_atomic(path, bytes)
}

/// Lower-case hex of a digest.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    s
}
