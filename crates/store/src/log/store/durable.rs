//! A log's durability handed off its writer's path. A subagent's log is written while its
//! parent's turn waits for it; its syncs need not be: [`LogWriter::take_sync`] takes what a sync
//! of the lines written so far must do, as a [`PendingSync`] that runs on another thread. The
//! writer then counts those lines as synced, so whoever takes a sync must run it and wait for it
//! before relying on it (the parent waits for all of its child's before it records the task's
//! result: `docs/sessions.md`, "Durability").

use std::fs::File;
use std::path::{Path, PathBuf};

use super::LogWriter;
use crate::log::StoreError;

/// One sync of a log (and of its directory entry when that is new), to run anywhere.
#[derive(Debug)]
pub struct PendingSync {
    /// The log's descriptor, duplicated: the writer goes on appending through its own.
    pub(super) file: File,
    pub(super) path: PathBuf,
    pub(super) dir: Option<PathBuf>,
}

impl PendingSync {
    /// `fdatasync`s the log's lines written before [`LogWriter::take_sync`] (and syncs the
    /// folder holding a new log). Blocking.
    pub fn run(self) -> Result<(), StoreError> {
        if let Some(dir) = &self.dir {
            sync_dir(dir);
        }
        self.file.sync_data().map_err(|source| StoreError::Io {
            path: self.path,
            source,
        })
    }
}

impl LogWriter {
    /// The log's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What a sync of everything appended so far must do, taken out of the writer (`None`:
    /// nothing is unsynced). The writer counts it as done: run it, and wait for it before
    /// anything relies on those lines being durable.
    pub fn take_sync(&mut self) -> Result<Option<PendingSync>, StoreError> {
        if !self.unsynced && self.dir_unsynced.is_none() {
            return Ok(None);
        }
        let path = self.path.clone();
        let file = self
            .file()?
            .try_clone()
            .map_err(|source| StoreError::Io { path, source })?;
        self.unsynced = false;
        Ok(Some(PendingSync {
            file,
            path: self.path.clone(),
            dir: self.dir_unsynced.take(),
        }))
    }
}

/// Makes a new directory entry in `dir` durable. Best effort, as it always was for a new log: a
/// folder that cannot be opened or synced is not an error of the log.
pub(super) fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}
