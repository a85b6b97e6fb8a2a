//! Planning and applying an undo: for every path the undone checkpoints cover, the state before
//! the oldest of them is the target, and the state after the newest is what the agent left (a
//! file that differs from it was changed by someone else since).
//!
//! The workspace may have changed since (a checkout, a build script, a hostile repository): a
//! directory on the way to a path may now be a symlink. Undo never writes through one. Each path
//! is checked against the policy again (inside the workspace roots, not under FERRITE_HOME), a
//! path behind a link is skipped with the reason (unless the undo itself puts the directory back
//! first), and every change goes through [`crate::fsops::entry`], which walks the path without
//! following any link, so a link planted while the user answers a question fails the step.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::capture::{Capturer, Index, Keep, walk};
use super::pack::Blobs;
use super::{FileState, Manifest, Skipped, Store};

/// One path to put back.
#[derive(Debug, Clone)]
pub struct Step {
    pub path: PathBuf,
    pub current: FileState,
    pub target: FileState,
    /// The current state differs from what the agent left: someone changed it since.
    pub conflict: bool,
}

#[derive(Debug, Default)]
pub struct Plan {
    pub steps: Vec<Step>,
    pub skipped: Vec<Skipped>,
}

/// Where an undo may write: inside the session's workspace roots, never under FERRITE_HOME.
#[derive(Debug, Clone)]
pub struct Reach {
    pub roots: Vec<PathBuf>,
    pub home: PathBuf,
}

impl Reach {
    /// Why `path` may not be changed by an undo, if it may not.
    fn refuses(&self, path: &Path) -> Option<&'static str> {
        if crate::paths::is_under(path, &self.home) {
            Some("it is in FERRITE_HOME, which undo does not change")
        } else if !crate::paths::is_inside(path, &self.roots) {
            Some("it is outside the session's workspace")
        } else {
            None
        }
    }
}

/// An undo as the store carries it out; asking about the conflicting steps is the caller's.
impl Store {
    /// Plans reverting `undone` (the checkpoints to undo, oldest first) against the disk now.
    pub fn plan_undo(
        &self,
        undone: &[Manifest],
        reach: &Reach,
        max_file_bytes: u64,
    ) -> std::io::Result<Plan> {
        let mut index = Index::load(self);
        let mut blobs = Blobs::default();
        let mut cap = Capturer::new(self, &mut index, &mut blobs, max_file_bytes);
        plan(&mut cap, undone, reach)
    }

    /// Puts back every step; returns the ones that could not be, with why.
    pub fn restore(&self, steps: &[Step], reach: &Reach) -> Vec<Skipped> {
        let blobs = Blobs::load(self);
        steps
            .iter()
            .filter_map(|s| {
                apply(self, &blobs, s, reach).err().map(|e| Skipped {
                    path: s.path.clone(),
                    reason: format!("it could not be restored: {e}"),
                })
            })
            .collect()
    }

    /// The step's current text and the text an undo would put back, for a diff (`None`: not
    /// text, or too large to show).
    pub fn texts(&self, step: &Step) -> (Option<String>, Option<String>) {
        let blobs = Blobs::load(self);
        (
            text_of(self, &blobs, &step.current, Some(&step.path)),
            text_of(self, &blobs, &step.target, None),
        )
    }
}

/// Plans reverting `undone` (the checkpoints to undo, oldest first).
pub(crate) fn plan(
    cap: &mut Capturer<'_>,
    undone: &[Manifest],
    reach: &Reach,
) -> std::io::Result<Plan> {
    let (target, left) = targets(undone, &reach.home);
    let mut plan = Plan::default();
    // Directories this undo puts back where something else (a link) is now: paths below them
    // will be empty until the undo fills them.
    let mut remade: HashSet<PathBuf> = HashSet::new();
    for (path, target) in target {
        if let Some(reason) = reach.refuses(&path) {
            plan.skipped.push(Skipped {
                path,
                reason: reason.into(),
            });
            continue;
        }
        let current = if !cap.behind_link(&path) {
            cap.capture(&path, Keep::HashOnly)?
        } else if path.ancestors().skip(1).any(|a| remade.contains(a)) {
            Some(FileState::Absent)
        } else {
            plan.skipped.push(Skipped {
                path,
                reason: "a directory on its way is now a symlink (or not a directory); undo \
                         does not write through links"
                    .into(),
            });
            continue;
        };
        if matches!(target, FileState::Dir { .. })
            && !matches!(current, Some(FileState::Dir { .. }))
        {
            remade.insert(path.clone());
        }
        let Some(current) = current else {
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
                reason: "its content was not kept (larger than `checkpoints.max_file_bytes`, or past what one snapshot may add: 1 GiB or `checkpoints.max_session_bytes`)"
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
    order(&mut plan.steps);
    Ok(plan)
}

type ByPath<T> = BTreeMap<PathBuf, T>;

/// What an undo of `undone` (oldest first) puts back (the state before the oldest) and what the
/// agent left (the state after the newest; `None`: the agent died during that turn, so what it
/// left is unknown), by path.
fn targets(undone: &[Manifest], home: &Path) -> (ByPath<FileState>, ByPath<Option<FileState>>) {
    let mut target: BTreeMap<PathBuf, FileState> = BTreeMap::new();
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
    (target, left)
}

/// Directories are created parent first and removed child first.
fn order(steps: &mut [Step]) {
    steps.sort_by(|a, b| {
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
}

fn before_of(m: &Manifest, p: &Path) -> FileState {
    m.before.get(p).cloned().unwrap_or(FileState::Absent)
}

/// Puts `step.path` back into `step.target`: exact bytes and mode, a file via a temporary file
/// and a rename so a reader never sees half of it; no link on the way is followed.
pub(crate) fn apply(
    store: &Store,
    blobs: &Blobs,
    step: &Step,
    reach: &Reach,
) -> std::io::Result<()> {
    use crate::fsops::{Parents, entry};
    let path = &step.path;
    if let Some(reason) = reach.refuses(path) {
        return Err(std::io::Error::other(reason));
    }
    let in_the_way = || {
        std::io::Error::other(format!(
            "a directory is in the way at {}; it was left as it is",
            path.display()
        ))
    };
    match &step.target {
        FileState::Absent => match step.current {
            FileState::Dir { .. } => entry(path, Parents::MustExist)?.remove_dir(),
            FileState::Absent => Ok(()),
            FileState::File { .. } | FileState::NotKept { .. } | FileState::Symlink { .. } => {
                entry(path, Parents::MustExist)?.remove_file()
            }
        },
        FileState::Dir { mode } => {
            let e = entry(path, Parents::Create)?;
            match step.current {
                FileState::Dir { .. } | FileState::Absent => {}
                FileState::File { .. } | FileState::NotKept { .. } | FileState::Symlink { .. } => {
                    e.remove_file()?
                }
            }
            e.make_dir(*mode)
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
            entry(path, Parents::Create)?.replace_with_file(&bytes, *mode)
        }
        FileState::Symlink { target } => {
            let e = entry(path, Parents::Create)?;
            match step.current {
                FileState::Dir { .. } => return Err(in_the_way()),
                FileState::Absent => {}
                FileState::File { .. } | FileState::NotKept { .. } | FileState::Symlink { .. } => {
                    e.remove_file()?
                }
            }
            e.symlink(target)
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
                Some(path) => {
                    let mut bytes = Vec::new();
                    std::io::Read::read_to_end(
                        &mut crate::fsops::open_read(path).ok()?,
                        &mut bytes,
                    )
                    .ok()?;
                    bytes
                }
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
