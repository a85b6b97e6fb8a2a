//! Blob storage. The new blobs of one capture go into one pack file (`packs/<n>.pack`, the
//! bytes one after another) with its index (`packs/<n>.idx`, JSON: hash → [offset, length]),
//! instead of one file per blob: a first snapshot of a large workspace would otherwise create as
//! many inodes as the workspace has files, which on a busy ext4 costs seconds (measured, see
//! `bench/README.md`). A pack is fsynced and its index written atomically before the manifest
//! that needs it, so a manifest never names a blob that is not durable.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

use super::{Store, write_atomic};

#[derive(Debug, Clone, Copy)]
struct Loc {
    pack: u64,
    offset: u64,
    len: u64,
}

/// Where every stored blob is.
#[derive(Debug, Default)]
pub(crate) struct Blobs {
    map: HashMap<String, Loc>,
}

impl Blobs {
    pub fn load(store: &Store) -> Self {
        let mut map = HashMap::new();
        for (pack, entries) in read_indexes(store) {
            for (hash, (offset, len)) in entries {
                map.insert(hash, Loc { pack, offset, len });
            }
        }
        Self { map }
    }

    pub fn has(&self, hash: &str) -> bool {
        self.map.contains_key(hash)
    }

    /// The stored size of a blob.
    pub fn len_of(&self, hash: &str) -> Option<u64> {
        self.map.get(hash).map(|l| l.len)
    }

    #[cfg(test)]
    pub fn count(&self) -> usize {
        self.map.len()
    }

    pub fn read(&self, store: &Store, hash: &str) -> std::io::Result<Vec<u8>> {
        let loc = self.map.get(hash).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "its saved copy is missing from the checkpoint store",
            )
        })?;
        let mut f = File::open(pack_path(store, loc.pack))?;
        f.seek(SeekFrom::Start(loc.offset))?;
        let mut bytes = vec![0; usize::try_from(loc.len).map_err(std::io::Error::other)?];
        f.read_exact(&mut bytes)?;
        Ok(bytes)
    }
}

/// A pack being written.
pub(crate) struct PackWriter {
    id: u64,
    file: File,
    offset: u64,
    entries: BTreeMap<String, (u64, u64)>,
}

impl PackWriter {
    pub fn open(store: &Store) -> std::io::Result<Self> {
        store.ensure()?;
        let id = pack_ids(store).into_iter().max().map_or(1, |n| n + 1);
        let file = crate::private_fs::file_options()
            .write(true)
            .create_new(true)
            .open(pack_path(store, id))?;
        Ok(Self {
            id,
            file,
            offset: 0,
            entries: BTreeMap::new(),
        })
    }

    pub fn has(&self, hash: &str) -> bool {
        self.entries.contains_key(hash)
    }

    pub fn add(&mut self, hash: &str, bytes: &[u8]) -> std::io::Result<()> {
        if self.has(hash) {
            return Ok(());
        }
        self.file.write_all(bytes)?;
        let len = bytes.len() as u64;
        self.entries.insert(hash.to_owned(), (self.offset, len));
        self.offset += len;
        Ok(())
    }

    /// Makes the pack durable and visible (its index written last, atomically).
    pub fn seal(self, store: &Store, blobs: &mut Blobs) -> std::io::Result<()> {
        self.file.sync_all()?;
        let bytes = serde_json::to_vec(&self.entries).map_err(std::io::Error::other)?;
        write_atomic(&index_path(store, self.id), &bytes)?;
        for (hash, (offset, len)) in self.entries {
            blobs.map.insert(
                hash,
                Loc {
                    pack: self.id,
                    offset,
                    len,
                },
            );
        }
        Ok(())
    }
}

/// Which packs [`collect`] rewrites with their live blobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rewrite {
    /// Those whose live bytes are less than half (the usual pruning: cheap, at most about twice
    /// the live bytes stay on disk).
    MostlyDead,
    /// Every pack with a dead blob (a store cap is being enforced: the dead bytes must go).
    AnyDead,
}

/// Removes blobs not in `live`: a pack with none left is deleted, one mostly dead (or, with
/// `Rewrite::AnyDead`, any with a dead blob) is rewritten with its live blobs, and a pack without
/// an index (a crash before it was sealed) is deleted.
pub(crate) fn collect(store: &Store, live: &HashSet<String>, mode: Rewrite) -> std::io::Result<()> {
    let indexes = read_indexes(store);
    let indexed: HashSet<u64> = indexes.iter().map(|(id, _)| *id).collect();
    for id in pack_ids(store) {
        if !indexed.contains(&id) {
            let _ = std::fs::remove_file(pack_path(store, id));
        }
    }
    let blobs = Blobs::load(store);
    let mut rewrite: Option<PackWriter> = None;
    let mut dropped = Vec::new();
    for (id, entries) in indexes {
        let total: u64 = entries.values().map(|(_, len)| len).sum();
        let kept: Vec<&String> = entries.keys().filter(|h| live.contains(*h)).collect();
        let kept_bytes: u64 = kept.iter().map(|h| entries[*h].1).sum();
        if kept.is_empty() {
            dropped.push(id);
        } else if kept_bytes * 2 < total || (mode == Rewrite::AnyDead && kept_bytes < total) {
            let w = match rewrite.as_mut() {
                Some(w) => w,
                None => rewrite.insert(PackWriter::open(store)?),
            };
            for h in kept {
                let bytes = blobs.read(store, h)?;
                w.add(h, &bytes)?;
            }
            dropped.push(id);
        }
    }
    if let Some(w) = rewrite {
        w.seal(store, &mut Blobs::default())?;
    }
    for id in dropped {
        std::fs::remove_file(index_path(store, id))?;
        let _ = std::fs::remove_file(pack_path(store, id));
    }
    Ok(())
}

fn pack_path(store: &Store, id: u64) -> PathBuf {
    store.packs().join(format!("{id:08}.pack"))
}

fn index_path(store: &Store, id: u64) -> PathBuf {
    store.packs().join(format!("{id:08}.idx"))
}

fn pack_ids(store: &Store) -> Vec<u64> {
    let Ok(rd) = std::fs::read_dir(store.packs()) else {
        return vec![];
    };
    rd.flatten()
        .filter_map(|d| {
            let name = d.file_name();
            name.to_str()?.strip_suffix(".pack")?.parse().ok()
        })
        .collect()
}

type Entries = BTreeMap<String, (u64, u64)>;

fn read_indexes(store: &Store) -> Vec<(u64, Entries)> {
    let Ok(rd) = std::fs::read_dir(store.packs()) else {
        return vec![];
    };
    let mut out: Vec<(u64, Entries)> = rd
        .flatten()
        .filter_map(|d| {
            let name = d.file_name();
            let id: u64 = name.to_str()?.strip_suffix(".idx")?.parse().ok()?;
            let bytes = std::fs::read(d.path()).ok()?;
            match serde_json::from_slice(&bytes) {
                Ok(entries) => Some((id, entries)),
                Err(e) => {
                    tracing::warn!(pack = id, error = %e, "skipping an unreadable pack index");
                    None
                }
            }
        })
        .collect();
    out.sort_by_key(|(id, _)| *id);
    out
}
