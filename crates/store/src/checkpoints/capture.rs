//! Reading the workspace into the store: one path's state, or a walk of every root. The index
//! remembers each file's stat and hash so an unchanged file costs one `lstat`.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::pack::{Blobs, PackWriter};
use super::{FileState, Store, hex, write_atomic};

/// Whether a captured file's bytes go into the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Keep {
    /// A before-state: undo needs the bytes.
    Bytes,
    /// An after-state: only compared, never restored.
    HashOnly,
}

/// What the index knows of one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct IndexEntry {
    size: u64,
    mtime_ns: u64,
    ino: u64,
    mode: u32,
    hash: String,
    /// Modified so shortly before it was hashed that a later write within the same mtime tick
    /// could go unseen: such an entry is never trusted (git's "racily clean" problem).
    racy: bool,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Index {
    files: HashMap<PathBuf, IndexEntry>,
    #[serde(skip)]
    dirty: bool,
}

/// The most new bytes one capture stores. A session opened on a huge directory (a home
/// directory, say) must not copy all of it into FERRITE_HOME at the first command: files past
/// this are listed as not kept, like files over `checkpoints.max_file_bytes`.
pub(crate) const CAPTURE_MAX_BYTES: u64 = 1 << 30;

/// An mtime this close to the moment of hashing makes an index entry untrusted.
const RACY_WINDOW: Duration = Duration::from_secs(2);

impl Index {
    pub fn load(store: &Store) -> Self {
        std::fs::read(store.index_path())
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    pub fn save(&mut self, store: &Store) -> std::io::Result<()> {
        if !self.dirty {
            return Ok(());
        }
        store.ensure()?;
        let bytes = serde_json::to_vec(self).map_err(std::io::Error::other)?;
        write_atomic(&store.index_path(), &bytes)?;
        self.dirty = false;
        Ok(())
    }

    pub fn hashes(&self) -> impl Iterator<Item = String> + '_ {
        self.files.values().map(|e| e.hash.clone())
    }
}

/// Captures path states into one store. New blobs go into one pack, sealed by [`Self::seal`].
pub(crate) struct Capturer<'a> {
    store: &'a Store,
    index: &'a mut Index,
    blobs: &'a mut Blobs,
    pack: Option<PackWriter>,
    max_file_bytes: u64,
    /// New bytes stored by this capture, against `budget` ([`CAPTURE_MAX_BYTES`]).
    written: u64,
    pub(super) budget: u64,
    /// Directories this capture saw to be real directories (not links), so a walk checks each
    /// parent once.
    real_dirs: HashSet<PathBuf>,
}

impl<'a> Capturer<'a> {
    pub fn new(
        store: &'a Store,
        index: &'a mut Index,
        blobs: &'a mut Blobs,
        max_file_bytes: u64,
    ) -> Self {
        Self {
            store,
            index,
            blobs,
            pack: None,
            max_file_bytes,
            written: 0,
            budget: CAPTURE_MAX_BYTES,
            real_dirs: HashSet::new(),
        }
    }

    /// Whether a directory above `path` is now a symlink or not a directory at all: the paths
    /// the store names are resolved ones, so `path` no longer names anything in the workspace
    /// (what is reached through the link is elsewhere and is neither read nor kept).
    pub fn behind_link(&mut self, path: &Path) -> bool {
        let mut above: Vec<&Path> = path.ancestors().skip(1).collect();
        above.reverse();
        for dir in above {
            if dir.parent().is_none() || self.real_dirs.contains(dir) {
                continue;
            }
            match std::fs::symlink_metadata(dir) {
                Ok(m) if m.file_type().is_dir() => {
                    self.real_dirs.insert(dir.to_owned());
                }
                Ok(_) | Err(_) => return true,
            }
        }
        false
    }

    /// Makes the blobs captured so far durable; call before saving a manifest that names them.
    pub fn seal(&mut self) -> std::io::Result<()> {
        match self.pack.take() {
            Some(p) => p.seal(self.store, self.blobs),
            None => Ok(()),
        }
    }

    fn stored(&self, hash: &str) -> bool {
        self.blobs.has(hash) || self.pack.as_ref().is_some_and(|p| p.has(hash))
    }

    /// The state of `path` now (`None` for sockets, FIFOs and devices, which are not kept).
    pub fn capture(&mut self, path: &Path, keep: Keep) -> std::io::Result<Option<FileState>> {
        if self.behind_link(path) {
            return Ok(Some(FileState::Absent));
        }
        let meta = match std::fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Some(FileState::Absent));
            }
            Err(e) => return Err(e),
        };
        let ft = meta.file_type();
        let mode = mode_of(&meta);
        if ft.is_symlink() {
            return Ok(Some(FileState::Symlink {
                target: std::fs::read_link(path)?,
            }));
        }
        if ft.is_dir() {
            return Ok(Some(FileState::Dir { mode }));
        }
        if !ft.is_file() {
            return Ok(None);
        }
        let mtime_ns = mtime_ns(&meta);
        let size = meta.len();
        let not_kept = FileState::NotKept {
            size,
            mode,
            mtime_ns,
        };
        if size > self.max_file_bytes {
            return Ok(Some(not_kept));
        }
        let known = self.index.files.get(path).filter(|e| {
            !e.racy && e.size == size && e.mtime_ns == mtime_ns && e.ino == ino_of(&meta)
        });
        let hash = match known {
            Some(e) if keep == Keep::HashOnly || self.stored(&e.hash) => e.hash.clone(),
            Some(_) | None => {
                if keep == Keep::Bytes && self.written + size > self.budget {
                    return Ok(Some(not_kept));
                }
                // Opened without following links: what was stat'ed is what is read.
                let mut bytes = Vec::new();
                crate::fsops::open_read(path)?.read_to_end(&mut bytes)?;
                let hash = hex(&Sha256::digest(&bytes));
                if keep == Keep::Bytes {
                    self.put_blob(&hash, &bytes)?;
                }
                let hashed_at = SystemTime::now()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .unwrap_or_default();
                let racy = u128::from(mtime_ns) + RACY_WINDOW.as_nanos() > hashed_at.as_nanos();
                self.index.files.insert(
                    path.to_owned(),
                    IndexEntry {
                        size,
                        mtime_ns,
                        ino: ino_of(&meta),
                        mode,
                        hash: hash.clone(),
                        racy,
                    },
                );
                self.index.dirty = true;
                hash
            }
        };
        Ok(Some(FileState::File { hash, size, mode }))
    }

    /// Stores a blob unless it is there.
    fn put_blob(&mut self, hash: &str, bytes: &[u8]) -> std::io::Result<()> {
        if self.stored(hash) {
            return Ok(());
        }
        let pack = match self.pack.as_mut() {
            Some(p) => p,
            None => self.pack.insert(PackWriter::open(self.store)?),
        };
        pack.add(hash, bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Forgets index entries for paths that no longer exist in a walk of the whole workspace.
    pub fn retain(&mut self, seen: &std::collections::HashSet<PathBuf>) {
        let before = self.index.files.len();
        self.index.files.retain(|p, _| seen.contains(p));
        self.index.dirty |= self.index.files.len() != before;
    }
}

fn mtime_ns(meta: &std::fs::Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The permission bits, as restored by undo.
#[cfg(unix)]
fn mode_of(meta: &std::fs::Metadata) -> u32 {
    std::os::unix::fs::MetadataExt::mode(meta) & 0o7777
}

/// Windows has only "read-only": kept as the write bits of an otherwise ordinary mode.
#[cfg(not(unix))]
fn mode_of(meta: &std::fs::Metadata) -> u32 {
    let base = if meta.is_dir() { 0o755 } else { 0o644 };
    if meta.permissions().readonly() {
        base & !0o222
    } else {
        base
    }
}

/// The file's identity, so an index entry for a replaced file is not trusted.
#[cfg(unix)]
fn ino_of(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(meta)
}

/// No stable file id in std on Windows: size and mtime (and the racy-window rule) alone decide
/// whether an unchanged-looking file is rehashed.
#[cfg(not(unix))]
fn ino_of(_meta: &std::fs::Metadata) -> u64 {
    0
}

/// Every path under `roots` a snapshot covers: hidden files included, `.gitignore`/`.ignore`
/// honoured (with or without a git repository), `.git` directories and `exclude`
/// (FERRITE_HOME, when it lies inside the workspace) left out, links not followed. Paths that
/// are not UTF-8 are left out too (the manifest is JSON).
pub(crate) fn walk(roots: &[PathBuf], exclude: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for root in roots {
        let exclude = exclude.to_owned();
        let walker = ignore::WalkBuilder::new(root)
            .hidden(false)
            .parents(true)
            .ignore(true)
            .git_ignore(true)
            .git_exclude(true)
            .git_global(false)
            .require_git(false)
            .follow_links(false)
            .filter_entry(move |e| e.file_name() != ".git" && e.path() != exclude)
            .build();
        for entry in walker.flatten() {
            if entry.depth() == 0 || entry.path().to_str().is_none() {
                continue;
            }
            out.push(entry.into_path());
        }
    }
    out.sort();
    out.dedup();
    out
}
