//! The log on disk: `FERRITE_HOME/sessions/<id>.jsonl`, created, opened (locked), read, listed,
//! and appended to by one [`LogWriter`] per open session.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::{Entry, EntryKind, FORMAT_VERSION, Header, StoreError, title_from};
use crate::ids::SessionId;
use crate::private_fs;

/// A session log read from disk.
#[derive(Debug, Clone)]
pub struct LoadedLog {
    pub header: Header,
    pub entries: Vec<Entry>,
    /// Complete lines that could not be understood (skipped, logged).
    pub skipped_lines: usize,
    /// Whether a torn (incomplete) last line was dropped.
    pub torn_tail: bool,
    /// Byte length of the complete lines; a writer truncates the torn tail to this.
    valid_len: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SessionSummary {
    pub id: SessionId,
    pub cwd: PathBuf,
    pub title: Option<String>,
    pub updated_at: SystemTime,
    pub parent: Option<SessionId>,
    /// Someone prompted it (it has a user message, or a title from one).
    pub prompted: bool,
    /// A subagent's session (`Header::subagent`).
    pub subagent: bool,
    /// The header's additional roots (see [`SessionStore::additional_directories`] for the
    /// current ones).
    pub additional_directories: Vec<PathBuf>,
}

/// `FERRITE_HOME/sessions/`.
/// [`SessionStore::hold`]'s answer.
#[derive(Debug)]
pub enum Hold {
    /// The lock, held until the file is dropped.
    Held(File),
    /// Open somewhere (or unreadable): leave it alone.
    Open,
    /// There is no such session.
    Gone,
}

#[derive(Debug, Clone)]
pub struct SessionStore {
    dir: PathBuf,
    /// `FERRITE_HOME/checkpoints/`: each session's checkpoint store is a folder there.
    checkpoints: PathBuf,
}

impl SessionStore {
    pub fn new(home: &Path) -> Self {
        Self {
            dir: home.join("sessions"),
            checkpoints: home.join("checkpoints"),
        }
    }

    /// The folder of the session's checkpoint store (`crate::checkpoints`).
    pub fn checkpoint_dir(&self, id: &SessionId) -> PathBuf {
        self.checkpoints.join(id.as_str())
    }

    /// What is kept for a session besides its log: its folder (`sessions/<id>/`: the full
    /// outputs of its commands) and its checkpoint store.
    fn folders(&self, id: &SessionId) -> [PathBuf; 2] {
        [self.dir.join(id.as_str()), self.checkpoint_dir(id)]
    }

    /// Removes the folders of a session that has no log (an id that never existed, or whose
    /// log is gone): nothing of it is left behind.
    pub fn sweep(&self, id: &SessionId) {
        for dir in self.folders(id) {
            remove_folder(&dir);
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The log's path. Only ever built from a validated [`SessionId`].
    pub fn path(&self, id: &SessionId) -> PathBuf {
        self.dir.join(format!("{}.jsonl", id.as_str()))
    }

    /// Creates a new log holding `header`, locked for writing, durable (its directory entry
    /// too) when this returns.
    pub fn create(&self, header: &Header) -> Result<LogWriter, StoreError> {
        let mut writer = self.create_unsynced(header)?;
        writer.sync()?;
        Ok(writer)
    }

    /// [`Self::create`] without the sync: the header and the directory entry become durable
    /// with the writer's first sync (a subagent's log, synced off its parent's path:
    /// [`LogWriter::take_sync`]).
    pub fn create_unsynced(&self, header: &Header) -> Result<LogWriter, StoreError> {
        let path = self.path(&header.id);
        let io = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        crate::private_fs::create_dir_all(&self.dir).map_err(io)?;
        let file = crate::private_fs::file_options()
            .append(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| io_error(&path, e))?;
        lock(&file, &path)?;
        let mut writer = LogWriter {
            file: Some(file),
            path: path.clone(),
            next_seq: 1,
            len: 0,
            unsynced: false,
            dir_unsynced: Some(self.dir.clone()),
            listed: !header.subagent,
        };
        let line = serde_json::to_vec(header).map_err(|e| io(std::io::Error::other(e)))?;
        writer.write_line(line)?;
        Ok(writer)
    }

    /// Opens an existing log for writing: takes the lock, reads it, and cuts a torn tail so the
    /// next entry starts on a fresh line.
    pub fn open(&self, id: &SessionId) -> Result<(LogWriter, LoadedLog), StoreError> {
        let path = self.path(id);
        let io = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&path)
            .map_err(|e| io_error(&path, e))?;
        lock(&file, &path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io)?;
        let loaded = parse_log(&bytes, &path)?;
        if loaded.torn_tail {
            file.set_len(loaded.valid_len).map_err(io)?;
            file.sync_data().map_err(io)?;
        }
        let next_seq = loaded.entries.last().map_or(1, |e| e.seq + 1);
        let writer = LogWriter {
            file: Some(file),
            path,
            next_seq,
            len: loaded.valid_len,
            unsynced: false,
            dir_unsynced: None,
            listed: !loaded.header.subagent,
        };
        Ok((writer, loaded))
    }

    /// Reads a log without taking the lock (listing, `sessions show`, forking).
    pub fn read(&self, id: &SessionId) -> Result<LoadedLog, StoreError> {
        let path = self.path(id);
        let bytes = std::fs::read(&path).map_err(|e| io_error(&path, e))?;
        parse_log(&bytes, &path)
    }

    /// Takes the log's lock when no one holds it, so that the session cannot be opened (by this
    /// process or another) while the lock is kept: what may change a closed session's files.
    pub fn hold(&self, id: &SessionId) -> Hold {
        let path = self.path(id);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Hold::Gone,
            Err(_) => return Hold::Open,
        };
        match lock(&file, &path) {
            Ok(()) => Hold::Held(file),
            Err(_) => Hold::Open,
        }
    }

    /// Removes a log and everything kept for its session ([`Self::folders`]). Refused while
    /// another process holds it.
    pub fn delete(&self, id: &SessionId) -> Result<(), StoreError> {
        let path = self.path(id);
        let file = File::open(&path).map_err(|e| io_error(&path, e))?;
        lock(&file, &path)?;
        let _ = std::fs::remove_file(roots_path(&path));
        let _ = std::fs::remove_file(path.with_extension("title"));
        std::fs::remove_file(&path).map_err(|source| StoreError::Io { path, source })?;
        self.sweep(id);
        Ok(())
    }

    /// The additional workspace roots the session of `summary` has now: those its last
    /// `directories` entry named (kept beside the log, see [`LogWriter::append`]), else its
    /// header's. One small read: `session/list` asks it for every session of a page.
    pub fn additional_directories(&self, summary: &SessionSummary) -> Vec<PathBuf> {
        std::fs::read(roots_path(&self.path(&summary.id)))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_else(|| summary.additional_directories.clone())
    }

    /// The subagent sessions `parent`'s `task` calls started.
    pub fn subagents_of(&self, parent: &SessionId) -> Result<Vec<SessionId>, StoreError> {
        Ok(self
            .list()?
            .into_iter()
            .filter(|s| s.subagent && s.parent.as_ref() == Some(parent))
            .map(|s| s.id)
            .collect())
    }

    /// Removes a session's log and its subagents' logs (they are reached only from it). A
    /// subagent's log that cannot be removed is left, with a warning.
    pub fn delete_with_subagents(&self, id: &SessionId) -> Result<(), StoreError> {
        let children = self.subagents_of(id)?;
        self.delete(id)?;
        for child in children {
            if let Err(e) = self.delete(&child) {
                tracing::warn!(session = %child, error = %e, "could not delete a subagent's session");
            }
        }
        Ok(())
    }

    /// Every session, newest first. Reads only each file's head (header up to the title).
    pub fn list(&self) -> Result<Vec<SessionSummary>, StoreError> {
        let rd = match std::fs::read_dir(&self.dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
            Err(source) => {
                return Err(StoreError::Io {
                    path: self.dir.clone(),
                    source,
                });
            }
        };
        let mut out = Vec::new();
        for dirent in rd.flatten() {
            let path = dirent.path();
            let Some(stem) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".jsonl"))
            else {
                continue;
            };
            if SessionId::parse(stem).is_err() {
                continue;
            }
            match summarize(&path) {
                Ok(Some(mut s)) => {
                    // The title noted beside the log is the latest (generated, set by the user).
                    if let Ok(t) = std::fs::read_to_string(path.with_extension("title"))
                        && !t.is_empty()
                    {
                        s.title = Some(t);
                    }
                    out.push(s)
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "skipping unreadable session")
                }
            }
        }
        out.sort_by(|a, b| {
            b.updated_at
                .cmp(&a.updated_at)
                .then_with(|| b.id.cmp(&a.id))
        });
        Ok(out)
    }
}

/// An I/O error on `path`, with a missing file reported as [`StoreError::NotFound`] and an
/// existing one (for `create_new`) as [`StoreError::Exists`].
fn io_error(path: &Path, source: std::io::Error) -> StoreError {
    match source.kind() {
        std::io::ErrorKind::NotFound => StoreError::NotFound,
        std::io::ErrorKind::AlreadyExists => StoreError::Exists,
        _ => StoreError::Io {
            path: path.to_owned(),
            source,
        },
    }
}

fn lock(file: &File, path: &Path) -> Result<(), StoreError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(TryLockError::WouldBlock) => Err(StoreError::Locked),
        Err(TryLockError::Error(source)) => Err(StoreError::Io {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Parses a whole log. A last line without its newline, or one that does not parse, is a torn
/// write and is dropped. Unparseable complete lines elsewhere are skipped and counted: one bad
/// line must not cost the user the rest of the conversation.
fn parse_log(bytes: &[u8], path: &Path) -> Result<LoadedLog, StoreError> {
    let corrupt = |reason: String| StoreError::Corrupt {
        path: path.to_owned(),
        reason,
    };
    let mut lines = Vec::new();
    let mut start = 0;
    while let Some(pos) = memchr_newline(&bytes[start..]) {
        lines.push((start, start + pos));
        start += pos + 1;
    }
    let mut torn_tail = start < bytes.len();
    let mut valid_len = start as u64;
    let Some(&(h0, h1)) = lines.first() else {
        return Err(corrupt("no header line".into()));
    };
    let header: Header =
        serde_json::from_slice(&bytes[h0..h1]).map_err(|e| corrupt(format!("bad header: {e}")))?;
    if header.format > FORMAT_VERSION {
        return Err(corrupt(format!(
            "format {} is newer than this ferrite understands ({FORMAT_VERSION})",
            header.format
        )));
    }
    let mut entries = Vec::with_capacity(lines.len().saturating_sub(1));
    let mut skipped_lines = 0;
    let last = lines.len() - 1;
    for (i, &(a, b)) in lines.iter().enumerate().skip(1) {
        match serde_json::from_slice::<Entry>(&bytes[a..b]) {
            Ok(entry) => entries.push(entry),
            Err(_) if i == last && !torn_tail => {
                // A complete-looking but unparseable final line is also a torn write
                // (e.g. the tail of a line whose newline made it to disk first).
                torn_tail = true;
                valid_len = a as u64;
            }
            Err(e) => {
                skipped_lines += 1;
                tracing::warn!(path = %path.display(), line = i + 1, error = %e, "skipping unreadable session log line");
            }
        }
    }
    Ok(LoadedLog {
        header,
        entries,
        skipped_lines,
        torn_tail,
        valid_len,
    })
}

/// Where a log's current additional roots are kept: `<id>.roots` beside `<id>.jsonl`.
/// Removes a folder and what it holds (links in it are removed, never followed); a folder that
/// is not there is fine, one that cannot be removed is left with a warning.
fn remove_folder(dir: &Path) {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "could not remove a session's files")
        }
    }
}

fn roots_path(log: &Path) -> PathBuf {
    log.with_extension("roots")
}

fn memchr_newline(hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&b| b == b'\n')
}

fn summarize(path: &Path) -> Result<Option<SessionSummary>, std::io::Error> {
    let file = File::open(path)?;
    let updated_at = file.metadata()?.modified()?;
    let mut reader = BufReader::new(file);
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 || !line.ends_with('\n') {
        return Ok(None);
    }
    let Ok(header) = serde_json::from_str::<Header>(&line) else {
        return Ok(None);
    };
    let mut title = None;
    let mut prompted = false;
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 || !line.ends_with('\n') {
            break;
        }
        // Cheap pre-filter: only parse lines that can carry a title.
        if !(line.contains("\"type\":\"title\"") || line.contains("\"type\":\"user_message\"")) {
            continue;
        }
        match serde_json::from_str::<Entry>(&line).map(|e| e.kind) {
            Ok(EntryKind::Title { title: t, .. }) => {
                title = Some(t);
                prompted = true;
                break;
            }
            Ok(EntryKind::UserMessage { content, .. }) => {
                prompted = true;
                title = title_from(&content);
                if title.is_some() {
                    break;
                }
            }
            _ => {}
        }
    }
    Ok(Some(SessionSummary {
        id: header.id,
        cwd: header.cwd,
        title,
        updated_at,
        parent: header.parent,
        prompted,
        subagent: header.subagent,
        additional_directories: header.additional_directories,
    }))
}

/// Appends entries to one session's log. Holds the OS lock for as long as it lives, except while
/// [released](LogWriter::release): an idle session in a process with many open sessions gives its
/// descriptor back, and takes file and lock again on its next write.
#[derive(Debug)]
pub struct LogWriter {
    /// `None` while released.
    file: Option<File>,
    path: PathBuf,
    next_seq: u64,
    /// Length of the complete lines written, so a failed write can be undone.
    len: u64,
    unsynced: bool,
    /// The sessions folder, when the log's directory entry is not yet durable (a log created
    /// without a sync, `durable.rs`): the next sync makes it so.
    dir_unsynced: Option<PathBuf>,
    /// Whether listings show the session (not a subagent's): only then are its title and roots
    /// noted beside the log for them.
    listed: bool,
}

impl LogWriter {
    /// Appends one entry as one line and returns its `seq`. On failure (a full disk) the partial
    /// line is cut off again so the log stays readable, and the entry is not counted.
    pub fn append(&mut self, kind: EntryKind) -> Result<u64, StoreError> {
        let seq = self.next_seq;
        let entry = Entry {
            seq,
            at: crate::time::now_rfc3339(),
            kind,
        };
        let line = serde_json::to_vec(&entry).map_err(|e| StoreError::Io {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        self.write_line(line)?;
        self.next_seq += 1;
        if !self.listed {
            return Ok(seq);
        }
        if let EntryKind::Directories {
            additional_directories,
        } = &entry.kind
        {
            self.note_roots(additional_directories);
        }
        if let EntryKind::Title { title, .. } = &entry.kind {
            // The session's title now, for listings (a later title than the head's).
            let path = self.path.with_extension("title");
            // A note, not synced: the log holds the title (a crash can leave the note old or
            // empty; listings then show the log's first title).
            if let Err(e) = private_fs::write_note(&path, title.as_bytes()) {
                tracing::warn!(path = %path.display(), error = %e, "could not note a session's title");
            }
        }
        Ok(seq)
    }

    /// Keeps the session's current additional roots beside its log, so that listing sessions
    /// need not read whole logs to find them. The log stays the truth (loading a session reads
    /// it); should this write fail, or the process die before it, the list shows the roots of
    /// before.
    fn note_roots(&self, dirs: &[PathBuf]) {
        let path = roots_path(&self.path);
        // Private like everything under FERRITE_HOME (the paths name the user's folders).
        let written = serde_json::to_vec(dirs)
            .map_err(std::io::Error::other)
            .and_then(|bytes| private_fs::write_note(&path, &bytes));
        if let Err(e) = written {
            tracing::warn!(path = %path.display(), error = %e, "could not note a session's roots");
        }
    }

    fn write_line(&mut self, mut line: Vec<u8>) -> Result<(), StoreError> {
        line.push(b'\n');
        let len = self.len;
        let file = self.file()?;
        match file.write_all(&line) {
            Ok(()) => {
                self.len += line.len() as u64;
                self.unsynced = true;
                Ok(())
            }
            Err(source) => {
                let _ = file.set_len(len);
                Err(StoreError::Io {
                    path: self.path.clone(),
                    source,
                })
            }
        }
    }

    /// `fsync`s what was appended since the last sync (turn boundaries).
    pub fn sync(&mut self) -> Result<(), StoreError> {
        if self.unsynced {
            let path = self.path.clone();
            self.file()?
                .sync_data()
                .map_err(|source| StoreError::Io { path, source })?;
            self.unsynced = false;
        }
        if let Some(dir) = self.dir_unsynced.take() {
            durable::sync_dir(&dir);
        }
        Ok(())
    }

    /// Syncs, then closes the file and drops its lock until the next write.
    pub fn release(&mut self) -> Result<(), StoreError> {
        self.sync()?;
        self.file = None;
        Ok(())
    }

    pub fn is_released(&self) -> bool {
        self.file.is_none()
    }

    /// The open file, reopened and relocked after a release. If another process wrote the log
    /// meanwhile, this session's state no longer matches it: refused rather than interleaved.
    fn file(&mut self) -> Result<&mut File, StoreError> {
        if self.file.is_none() {
            let path = self.path.clone();
            let file = crate::private_fs::file_options()
                .append(true)
                .open(&path)
                .map_err(|e| io_error(&path, e))?;
            lock(&file, &path)?;
            let on_disk = file
                .metadata()
                .map_err(|source| StoreError::Io {
                    path: path.clone(),
                    source,
                })?
                .len();
            if on_disk != self.len {
                return Err(StoreError::Corrupt {
                    path,
                    reason: "another process wrote this session while it was idle here; load it \
                             again"
                        .into(),
                });
            }
            self.file = Some(file);
        }
        match self.file.as_mut() {
            Some(f) => Ok(f),
            None => Err(StoreError::Locked),
        }
    }

    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }
}

mod durable;
#[cfg(test)]
mod tests;

pub use durable::PendingSync;
