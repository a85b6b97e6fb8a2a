//! The turn's side of checkpoints (`docs/checkpoints.md`): a turn's checkpoint opened before its
//! tool calls change the workspace and recorded in the log when it ends ([`TurnCheckpoint`]), and
//! the prompts `/undo` and `/checkpoints` ([`command`]). What a checkpoint is and how it is kept
//! is `ferrite_store::checkpoints`'.

pub(crate) mod command;
mod rewind;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ferrite_store::checkpoints::{CheckpointsConfig, Finished, Tracker, What};

use crate::events::Event;
use crate::ids::SessionId;
use crate::log::EntryKind;
use crate::modes::Mode;
use crate::session::Recorder;
use crate::tools::Access;

/// A turn's checkpoint, shared by its tool calls. Disk work runs on the blocking pool.
#[derive(Clone)]
pub(crate) struct TurnCheckpoint {
    inner: Arc<Mutex<Inner>>,
}

struct Inner {
    tracker: Tracker,
    /// A capture failed this turn: the user was told once that it cannot be fully undone.
    failed: bool,
}

impl TurnCheckpoint {
    pub fn new(home: &Path, session: &SessionId) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                tracker: Tracker::new(home, session),
                failed: false,
            })),
        }
    }

    /// Arms the checkpoint for a turn of the session in `rec` over `roots`.
    pub fn configure(&self, rec: &Recorder, roots: Vec<PathBuf>, config: CheckpointsConfig) {
        let turn = rec.read(|state| {
            state
                .history
                .iter()
                .filter(|k| matches!(k, EntryKind::UserMessage { .. }))
                .count() as u64
        });
        self.locked().tracker.arm(roots, turn, config);
    }

    /// Called before a tool call runs: keeps the prior state of what it may change. A `write` or
    /// `edit` names its paths; a command may change anything, so the first one of a turn (in a
    /// mode where commands may write) snapshots the whole workspace.
    pub async fn before_call(&self, rec: &Recorder, access: &Access, mode: Mode) {
        let what = match access {
            Access::Write { paths } => Some(What::Paths(paths.clone())),
            Access::Execute { .. } if mode != Mode::Plan => Some(What::Workspace),
            Access::Execute { .. }
            | Access::None
            | Access::Read { .. }
            | Access::Fetch { .. }
            | Access::Mcp => None,
        };
        let Some(what) = what else { return };
        let this = self.clone();
        let res = tokio::task::spawn_blocking(move || this.locked().tracker.open(what, &[])).await;
        self.report(rec, res).await;
    }

    /// Called when the turn ends: records the checkpoint in the log, or drops it when the turn
    /// changed nothing.
    pub async fn finish_turn(&self, rec: &Recorder) {
        let this = self.clone();
        let res = tokio::task::spawn_blocking(move || this.locked().tracker.finish()).await;
        match res {
            Ok(Ok(Some(f))) => {
                if let Some(text) = f.notice.clone() {
                    rec.emit(Event::Notice { text }).await;
                }
                let entry = EntryKind::Checkpoint {
                    id: f.id,
                    turn: f.turn,
                    files: f.files,
                    undid: vec![],
                    skipped: f.not_kept,
                };
                if let Err(e) = rec.record(entry).and_then(|_| rec.sync()) {
                    tracing::error!(error = %e, "could not record a checkpoint");
                }
            }
            Ok(Ok(None)) => {}
            other => self.report(rec, other.map(|r| r.map(|_| ()))).await,
        }
    }

    /// Opens (or widens) the checkpoint with `paths` for an `/undo` of `undid`.
    pub(super) fn open_for_undo(&self, paths: Vec<PathBuf>, undid: &[u64]) -> std::io::Result<()> {
        self.locked().tracker.open(What::Paths(paths), undid)
    }

    pub(super) fn finish_now(&self) -> std::io::Result<Option<Finished>> {
        self.locked().tracker.finish()
    }

    async fn report(
        &self,
        rec: &Recorder,
        res: Result<std::io::Result<()>, tokio::task::JoinError>,
    ) {
        let err = match res {
            Ok(Ok(())) => return,
            Ok(Err(e)) => e.to_string(),
            Err(e) => e.to_string(),
        };
        tracing::warn!(error = %err, "checkpoint failed");
        let first = !std::mem::replace(&mut self.locked().failed, true);
        if first {
            rec.emit(Event::Notice {
                text: format!(
                    "Could not record a checkpoint ({err}); `/undo` may not fully revert this turn."
                ),
            })
            .await;
        }
    }

    fn locked(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
