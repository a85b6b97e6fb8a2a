//! One byte budget for everything a session spills (`tools.spill_max_bytes`, user config only):
//! the full output of foreground and background commands under `sessions/<id>/tool-output/`.
//! The runner asks for room before it writes each piece of output ([`SpillBudget::reserve`]);
//! when the budget is spent, the output of commands that ended is removed, oldest first, and
//! only when nothing more can go is the writing command refused room (the runner then kills it
//! and says why). What a running command writes is never removed under it ([`SpillBudget::hold`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// The session's spill budget; clones share it.
#[derive(Clone)]
pub struct SpillBudget(Arc<Inner>);

struct Inner {
    /// The session's spill directory: everything under it counts.
    root: PathBuf,
    max: u64,
    ledger: Mutex<Ledger>,
}

#[derive(Default)]
struct Ledger {
    /// Bytes under `root` as last measured, plus what was granted since.
    used: u64,
    /// Whether `used` was ever measured (files may be left from an earlier run of the session).
    measured: bool,
    /// Files and directories a running command writes to: never removed.
    held: Vec<PathBuf>,
}

impl std::fmt::Debug for SpillBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpillBudget")
            .field("root", &self.0.root)
            .field("max", &self.0.max)
            .finish()
    }
}

/// Two specs are equal when they share one budget.
impl PartialEq for SpillBudget {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for SpillBudget {}

/// Keeps a path from being removed while it is written; released when dropped.
pub struct Hold {
    budget: SpillBudget,
    path: PathBuf,
}

impl Drop for Hold {
    fn drop(&mut self) {
        let mut ledger = self.budget.ledger();
        if let Some(i) = ledger.held.iter().position(|p| *p == self.path) {
            ledger.held.swap_remove(i);
        }
    }
}

impl SpillBudget {
    /// `max` bytes for everything under `root`.
    pub fn new(root: PathBuf, max: u64) -> Self {
        SpillBudget(Arc::new(Inner {
            root,
            max,
            ledger: Mutex::new(Ledger::default()),
        }))
    }

    pub fn max(&self) -> u64 {
        self.0.max
    }

    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.0.ledger.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Marks `path` (a spill file or a job's directory) as being written.
    pub fn hold(&self, path: &Path) -> Hold {
        self.ledger().held.push(path.to_owned());
        Hold {
            budget: self.clone(),
            path: path.to_owned(),
        }
    }

    /// Room for `bytes` more: granted at once while the budget lasts; else the directory is
    /// measured again and ended commands' output removed, oldest first, until it fits. False
    /// when it cannot fit even then.
    pub fn reserve(&self, bytes: u64) -> bool {
        if bytes > self.0.max {
            return false;
        }
        let mut ledger = self.ledger();
        if ledger.measured && ledger.used.saturating_add(bytes) <= self.0.max {
            ledger.used += bytes;
            return true;
        }
        ledger.used = size_of(&self.0.root);
        ledger.measured = true;
        if ledger.used.saturating_add(bytes) > self.0.max {
            ledger.used = self.reclaim(&ledger.held, ledger.used, bytes);
        }
        if ledger.used.saturating_add(bytes) <= self.0.max {
            ledger.used += bytes;
            true
        } else {
            false
        }
    }

    /// Removes the oldest entries of the root that no running command holds until `bytes`
    /// more fit; what is used afterwards.
    fn reclaim(&self, held: &[PathBuf], mut used: u64, bytes: u64) -> u64 {
        let Ok(entries) = std::fs::read_dir(&self.0.root) else {
            return used;
        };
        let mut candidates: Vec<(std::time::SystemTime, PathBuf)> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| !held.iter().any(|h| h.starts_with(p)))
            .filter_map(|p| Some((last_written(&p)?, p)))
            .collect();
        candidates.sort();
        for (_, path) in candidates {
            if used.saturating_add(bytes) <= self.0.max {
                break;
            }
            let size = size_of(&path);
            let removed = if path.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            if removed.is_ok() {
                used = used.saturating_sub(size);
            }
        }
        used
    }
}

/// When anything under `path` was last written: a job's directory is as old as its output.
fn last_written(path: &Path) -> Option<std::time::SystemTime> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let own = meta.modified().ok();
    if !meta.is_dir() {
        return own;
    }
    std::fs::read_dir(path)
        .ok()?
        .flatten()
        .filter_map(|e| last_written(&e.path()))
        .max()
        .or(own)
}

/// Bytes of the regular files under `path` (not following links).
fn size_of(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if meta.is_file() {
        return meta.len();
    }
    if !meta.is_dir() {
        return 0;
    }
    std::fs::read_dir(path)
        .map(|entries| entries.flatten().map(|e| size_of(&e.path())).sum())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ended_output_goes_oldest_first_and_held_output_stays() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_owned();
        let write = |name: &str, n: usize| {
            let path = root.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, vec![b'x'; n]).unwrap();
            // Distinct modification times without sleeping.
            let age = std::time::SystemTime::UNIX_EPOCH
                + std::time::Duration::from_secs(1_000 + root.read_dir().unwrap().count() as u64);
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(age)
                .unwrap();
        };
        write("out-1.out", 400);
        write("bg-1/out-2.out", 400);
        write("out-3.out", 100);
        let budget = SpillBudget::new(root.clone(), 1_000);
        let running = budget.hold(&root.join("out-1.out"));
        // 900 used: 100 more fit, 300 more need the oldest unheld (bg-1) gone.
        assert!(budget.reserve(100));
        assert!(budget.reserve(300));
        assert!(root.join("out-1.out").exists());
        assert!(!root.join("bg-1").exists());
        assert!(root.join("out-3.out").exists());
        // Nothing unheld is big enough to make room for this.
        drop(running);
        assert!(!budget.reserve(2_000));
    }
}
