//! Planning and applying an undo: for every path the undone checkpoints cover, the state before
//! the oldest of them is the target, and the state after the newest is what the agent left (a
//! file that differs from it was changed by someone else since).

use std::collections::{BTreeMap, HashSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::capture::{Capturer, Keep, walk};
use super::pack::Blobs;
use super::{FileState, Manifest, Skipped, Store};

/// One path to put back.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    pub path: PathBuf,
    pub current: FileState,
    pub target: FileState,
    /// The current state differs from what the agent left: someone changed it since.
    pub conflict: bool,
}

#[derive(Debug, Default)]
pub(crate) struct Plan {
    pub steps: Vec<Step>,
    pub skipped: Vec<Skipped>,
}

/// Plans reverting `undone` (the checkpoints to undo, oldest first).
pub(crate) fn plan(
    cap: &mut Capturer<'_>,
    undone: &[Manifest],
    home: &Path,
) -> std::io::Result<Plan> {
    let mut target: BTreeMap<PathBuf, FileState> = BTreeMap::new();
    // `None`: the agent died during that turn, so what it left is unknown.
    let mut left: BTreeMap<PathBuf, Option<FileState>> = BTreeMap::new();
    for m in undone {
        let mut paths: Vec<PathBuf> = m.before.keys().cloned().collect();
        match &m.after {
            Some(after) => paths.extend(after.keys().cloned()),
            None if m.full => {
                let known: HashSet<&PathBuf> = m.before.keys().collect();
                let created: Vec<PathBuf> = walk(&m.roots, home)
                    .into_iter()
                    .filter(|p| !known.contains(p))
                    .collect();
                paths.extend(created);
            }
            None => {}
        }
        for p in paths {
            let before = m.before.get(&p).cloned().unwrap_or(FileState::Absent);
            target.entry(p.clone()).or_insert(before);
            let after = m
                .after
                .as_ref()
                .map(|a| a.get(&p).cloned().unwrap_or_else(|| before_of(m, &p)));
            left.insert(p, after);
        }
    }
    let mut plan = Plan::default();
    for (path, target) in target {
        let Some(current) = cap.capture(&path, Keep::HashOnly)? else {
            plan.skipped.push(Skipped {
                path,
                reason: "it is now a socket, FIFO or device".into(),
            });
            continue;
        };
        if current == target {
            continue;
        }
        if matches!(target, FileState::NotKept { .. }) {
            plan.skipped.push(Skipped {
                path,
                reason: "its content was not kept (larger than `checkpoints.max_file_bytes`, or past the 1 GiB a snapshot may add)"
                    .into(),
            });
            continue;
        }
        let conflict = match left.get(&path) {
            Some(Some(left)) => *left != current,
            // The agent died during that turn, so what it left is unknown. Its changes are
            // reverted, but a file that did not exist before is not deleted without asking: the
            // user may have created it after the crash.
            Some(None) => matches!(target, FileState::Absent),
            None => false,
        };
        plan.steps.push(Step {
            path,
            current,
            target,
            conflict,
        });
    }
    // Directories are created parent first and removed child first.
    plan.steps.sort_by(|a, b| {
        let rank = |s: &Step| match (&s.target, &s.current) {
            (FileState::Dir { .. }, _) => 0,
            (FileState::Absent, FileState::Dir { .. }) => 2,
            _ => 1,
        };
        rank(a).cmp(&rank(b)).then_with(|| {
            if rank(a) == 2 {
                b.path.cmp(&a.path)
            } else {
                a.path.cmp(&b.path)
            }
        })
    });
    Ok(plan)
}

fn before_of(m: &Manifest, p: &Path) -> FileState {
    m.before.get(p).cloned().unwrap_or(FileState::Absent)
}

/// Puts `step.path` back into `step.target`: exact bytes and mode, via a temporary file and a
/// rename so a reader never sees half a file.
pub(crate) fn apply(store: &Store, blobs: &Blobs, step: &Step) -> std::io::Result<()> {
    let path = &step.path;
    let in_the_way = || {
        std::io::Error::other(format!(
            "a directory is in the way at {}; it was left as it is",
            path.display()
        ))
    };
    match &step.target {
        FileState::Absent => match step.current {
            FileState::Dir { .. } => std::fs::remove_dir(path).map_err(|e| {
                if e.kind() == std::io::ErrorKind::DirectoryNotEmpty {
                    std::io::Error::other("the directory is not empty")
                } else {
                    e
                }
            }),
            FileState::Absent => Ok(()),
            FileState::File { .. } | FileState::NotKept { .. } | FileState::Symlink { .. } => {
                std::fs::remove_file(path)
            }
        },
        FileState::Dir { mode } => {
            match step.current {
                FileState::Dir { .. } => {}
                FileState::Absent => std::fs::create_dir_all(path)?,
                FileState::File { .. } | FileState::NotKept { .. } | FileState::Symlink { .. } => {
                    std::fs::remove_file(path)?;
                    std::fs::create_dir(path)?;
                }
            }
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(*mode))
        }
        FileState::File { hash, mode, .. } => {
            if matches!(step.current, FileState::Dir { .. }) {
                return Err(in_the_way());
            }
            let bytes = blobs.read(store, hash)?;
            if super::hex(&Sha256::digest(&bytes)) != *hash {
                return Err(std::io::Error::other(
                    "its saved copy in the checkpoint store is damaged",
                ));
            }
            let parent = path.parent().unwrap_or(Path::new("/"));
            std::fs::create_dir_all(parent)?;
            let tmp = parent.join(format!(".ferrite-undo-{}", uuid::Uuid::now_v7().simple()));
            let written = std::fs::write(&tmp, &bytes)
                .and_then(|()| {
                    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(*mode))
                })
                .and_then(|()| std::fs::rename(&tmp, path));
            if written.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            written
        }
        FileState::Symlink { target } => {
            match step.current {
                FileState::Dir { .. } => return Err(in_the_way()),
                FileState::Absent => {
                    if let Some(parent) = path.parent() {
                        std::fs::create_dir_all(parent)?;
                    }
                }
                FileState::File { .. } | FileState::NotKept { .. } | FileState::Symlink { .. } => {
                    std::fs::remove_file(path)?
                }
            }
            std::os::unix::fs::symlink(target, path)
        }
        FileState::NotKept { .. } => Err(std::io::Error::other("its bytes were not kept")),
    }
}

/// The text of a file state for a diff (`None` when it is not text or too large to show): from
/// the store, or for the current state (whose bytes are not stored) from `on_disk`.
pub(crate) fn text_of(
    store: &Store,
    blobs: &Blobs,
    state: &FileState,
    on_disk: Option<&Path>,
) -> Option<String> {
    const SHOWN_MAX: u64 = 256 * 1024;
    match state {
        FileState::Absent => Some(String::new()),
        FileState::File { hash, size, .. } if *size <= SHOWN_MAX => {
            let bytes = match on_disk {
                Some(path) => std::fs::read(path).ok()?,
                None => blobs.read(store, hash).ok()?,
            };
            String::from_utf8(bytes).ok()
        }
        FileState::File { .. }
        | FileState::Dir { .. }
        | FileState::NotKept { .. }
        | FileState::Symlink { .. } => None,
    }
}
