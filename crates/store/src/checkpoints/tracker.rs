//! One turn's checkpoint, the storage side: opened before the turn's first change (durably,
//! before the change runs), widened as the turn goes on, and at the end either finished (the
//! changes it recorded, for the log) or dropped when nothing changed. Recording it in the log and
//! telling the user is the turn's (`ferrite_core::checkpointing`).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use super::capture::{Capturer, Index, Keep, walk};
use super::pack::Blobs;
use super::{CheckpointsConfig, FileChange, FileState, Manifest, Skipped, Store};
use crate::ids::SessionId;

/// A session's checkpoint for the turn that runs now. Blocking: run it off the async threads.
pub struct Tracker {
    store: Store,
    session: SessionId,
    /// FERRITE_HOME, never part of a snapshot.
    home: PathBuf,
    setup: Option<Setup>,
    pending: Option<Manifest>,
    index: Option<Index>,
    blobs: Option<Blobs>,
}

#[derive(Clone)]
struct Setup {
    roots: Vec<PathBuf>,
    turn: u64,
    config: CheckpointsConfig,
}

/// What a finished checkpoint changed.
pub struct Finished {
    pub id: u64,
    pub turn: u64,
    pub files: Vec<FileChange>,
    pub not_kept: Vec<Skipped>,
    /// Checkpoints dropped to keep the store within its limits, for the user.
    pub notice: Option<String>,
}

/// What a tool call may change: the paths it names, or (a command) the whole workspace.
pub enum What {
    Paths(Vec<PathBuf>),
    Workspace,
}

impl Tracker {
    pub fn new(home: &Path, session: &SessionId) -> Self {
        let home = std::fs::canonicalize(home).unwrap_or_else(|_| home.to_owned());
        Self {
            store: Store::new(&home, session),
            session: session.clone(),
            home,
            setup: None,
            pending: None,
            index: None,
            blobs: None,
        }
    }

    /// Arms the checkpoint for the session's prompt number `turn` (1 = the first) over `roots`.
    pub fn arm(&mut self, roots: Vec<PathBuf>, turn: u64, config: CheckpointsConfig) {
        self.setup = Some(Setup {
            roots,
            turn: turn.max(1),
            config,
        });
    }

    /// Opens (or widens) the checkpoint with the prior state of `what`, made durable before it
    /// returns; `undid`: the checkpoints an `/undo` reverts, when this is that undo's own.
    pub fn open(&mut self, what: What, undid: &[u64]) -> std::io::Result<()> {
        let Some(setup) = self.setup.clone() else {
            return Ok(());
        };
        if setup.config.max_count == 0 {
            return Ok(());
        }
        if matches!(what, What::Workspace) && self.pending.as_ref().is_some_and(|m| m.full) {
            return Ok(());
        }
        let mut index = self
            .index
            .take()
            .unwrap_or_else(|| Index::load(&self.store));
        let mut m = self.pending.take().unwrap_or_else(|| Manifest {
            id: self.store.next_id(),
            turn: setup.turn,
            created_at: crate::time::now_rfc3339(),
            roots: setup.roots.clone(),
            full: false,
            undid: undid.to_vec(),
            before: BTreeMap::new(),
            after: None,
        });
        let mut blobs = self
            .blobs
            .take()
            .unwrap_or_else(|| Blobs::load(&self.store));
        let res = self.capture_into(
            &mut m,
            &mut index,
            &mut blobs,
            what,
            (setup.config.max_file_bytes, setup.config.max_session_bytes),
        );
        let saved = res.and_then(|()| self.store.save(&m));
        let indexed = index.save(&self.store);
        self.index = Some(index);
        self.blobs = Some(blobs);
        self.pending = Some(m);
        saved.and(indexed)
    }

    fn capture_into(
        &self,
        m: &mut Manifest,
        index: &mut Index,
        blobs: &mut Blobs,
        what: What,
        (max_file_bytes, max_session_bytes): (u64, u64),
    ) -> std::io::Result<()> {
        let mut cap = Capturer::new(&self.store, index, blobs, max_file_bytes);
        // One capture never adds more than the whole session may hold.
        cap.budget = cap.budget.min(max_session_bytes);
        let paths = match what {
            What::Paths(paths) => with_new_parents(paths),
            What::Workspace => {
                m.full = true;
                let all = walk(&m.roots, &self.home);
                cap.retain(&all.iter().cloned().collect::<HashSet<_>>());
                all
            }
        };
        let mut captured = Ok(());
        for p in paths {
            // The first state seen in a turn is its before-state.
            if m.before.contains_key(&p) {
                continue;
            }
            match cap.capture(&p, Keep::Bytes) {
                Ok(Some(state)) => {
                    m.before.insert(p, state);
                }
                Ok(None) => {}
                Err(e) => {
                    captured = Err(e);
                    break;
                }
            }
        }
        // What was captured before a failure is still made durable and usable.
        let sealed = cap.seal();
        captured.and(sealed)
    }

    /// Records what the turn changed, or drops the checkpoint when it changed nothing.
    pub fn finish(&mut self) -> std::io::Result<Option<Finished>> {
        let Some(mut m) = self.pending.take() else {
            return Ok(None);
        };
        let Some(setup) = self.setup.clone() else {
            return Ok(None);
        };
        let mut index = self
            .index
            .take()
            .unwrap_or_else(|| Index::load(&self.store));
        let mut blobs = self.blobs.take().unwrap_or_default();
        let mut cap = Capturer::new(
            &self.store,
            &mut index,
            &mut blobs,
            setup.config.max_file_bytes,
        );
        let mut paths: BTreeSet<PathBuf> = m.before.keys().cloned().collect();
        if m.full {
            let walked = walk(&m.roots, &self.home);
            cap.retain(&walked.iter().cloned().collect::<HashSet<_>>());
            paths.extend(walked);
        }
        let mut after = BTreeMap::new();
        for p in paths {
            let Some(now) = cap.capture(&p, Keep::HashOnly)? else {
                continue;
            };
            if m.before.get(&p).unwrap_or(&FileState::Absent) != &now {
                after.insert(p, now);
            }
        }
        index.save(&self.store)?;
        if after.is_empty() {
            self.store.remove(m.id)?;
            return Ok(None);
        }
        m.before.retain(|p, _| after.contains_key(p));
        m.after = Some(after);
        self.store.save(&m)?;
        let report = super::caps::enforce(&self.store, &self.home, &self.session, &setup.config)?;
        Ok(Some(Finished {
            id: m.id,
            turn: m.turn,
            files: m.changes(),
            not_kept: m.not_kept(),
            notice: report.notice(&setup.config),
        }))
    }
}

/// `paths` plus their missing parent directories (a write creates them, and undo removes them
/// again when they are left empty).
fn with_new_parents(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in paths {
        if !p.is_absolute() {
            continue;
        }
        let mut dir = p.parent();
        while let Some(d) = dir {
            if std::fs::symlink_metadata(d).is_ok() {
                break;
            }
            out.push(d.to_owned());
            dir = d.parent();
        }
        out.push(p);
    }
    out
}
