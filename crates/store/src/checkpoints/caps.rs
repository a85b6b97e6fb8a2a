//! Keeping the store bounded (`docs/checkpoints.md`, "The store"): at the end of every turn that
//! left a checkpoint, a session keeps at most `checkpoints.max_count` checkpoints and
//! `checkpoints.max_session_bytes` of store, and all sessions together at most
//! `checkpoints.max_total_bytes`. The oldest checkpoints go first; the newest one of the session
//! always stays, so the turn that just ended can be undone. What was dropped is recorded in the
//! store (`dropped.json`), so `/undo` can say a checkpoint is gone instead of that it never was.
//!
//! Another session's store is only changed while its log's lock is held here: a session open in
//! any process (this one included) is left alone, since its turn may be writing to it.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::CheckpointsConfig;
use super::capture::Index;
use super::pack::{self, Blobs, Rewrite};
use super::{Manifest, Store};
use crate::ids::SessionId;
use crate::log::{Hold, SessionStore};

/// Which limit dropped a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    MaxCount,
    SessionBytes,
    TotalBytes,
}

impl Why {
    pub fn key(self) -> &'static str {
        match self {
            Why::MaxCount => "checkpoints.max_count",
            Why::SessionBytes => "checkpoints.max_session_bytes",
            Why::TotalBytes => "checkpoints.max_total_bytes",
        }
    }
}

/// A checkpoint that was dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dropped {
    pub id: u64,
    pub turn: u64,
    pub why: Why,
}

/// What enforcing the limits dropped.
#[derive(Debug, Default)]
pub(crate) struct Report {
    /// This session's checkpoints.
    pub own: Vec<Dropped>,
    /// Other sessions' checkpoints: how many, and of how many sessions.
    pub others: (usize, usize),
}

impl Report {
    /// The notice for the user, when a byte limit dropped something (`max_count` pruning is
    /// the documented everyday case and stays quiet).
    pub fn notice(&self, cfg: &CheckpointsConfig) -> Option<String> {
        let mut parts = Vec::new();
        let by_bytes: Vec<&Dropped> = self.own.iter().filter(|d| d.why != Why::MaxCount).collect();
        if let Some(first) = by_bytes.first() {
            let turns: Vec<String> = by_bytes.iter().map(|d| d.turn.to_string()).collect();
            let cap = match first.why {
                Why::TotalBytes => cfg.max_total_bytes,
                Why::SessionBytes | Why::MaxCount => cfg.max_session_bytes,
            };
            parts.push(format!(
                "Dropped the oldest checkpoint(s) of this session (of turn(s) {}) to keep the \
                 checkpoint store within `{}` ({}); `/undo` can no longer revert them.",
                turns.join(", "),
                first.why.key(),
                shown_bytes(cap)
            ));
        }
        let (checkpoints, sessions) = self.others;
        if checkpoints > 0 {
            parts.push(format!(
                "Dropped {checkpoints} checkpoint(s) of {sessions} other session(s) to keep all \
                 checkpoint stores within `checkpoints.max_total_bytes` ({}).",
                shown_bytes(cfg.max_total_bytes)
            ));
        }
        (!parts.is_empty()).then(|| parts.join(" "))
    }
}

/// The checkpoints dropped from `store` so far, oldest first.
pub(crate) fn dropped(store: &Store) -> Vec<Dropped> {
    std::fs::read(dropped_path(store))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

fn dropped_path(store: &Store) -> std::path::PathBuf {
    store.dir.join("dropped.json")
}

/// Applies the limits after `store` (the session `session`) gained a checkpoint.
pub(crate) fn enforce(
    store: &Store,
    home: &Path,
    session: &SessionId,
    cfg: &CheckpointsConfig,
) -> std::io::Result<Report> {
    let mut report = Report::default();
    let mut own = Ledger::load(store);
    while own.manifests.len() > cfg.max_count {
        report.own.extend(own.drop_oldest(Why::MaxCount));
    }
    shrink(
        &mut own,
        cfg.max_session_bytes,
        Why::SessionBytes,
        &mut report.own,
    );
    own.apply(store, &report.own)?;

    let root = home.join("checkpoints");
    let mut total = dir_bytes(&store.dir) + others_bytes(&root, session);
    if total > cfg.max_total_bytes {
        report.others = drop_others(home, session, total - cfg.max_total_bytes)?;
        total = dir_bytes(&store.dir) + others_bytes(&root, session);
    }
    if total > cfg.max_total_bytes {
        let mut own = Ledger::load(store);
        let target = own.bytes().saturating_sub(total - cfg.max_total_bytes);
        let mut more = Vec::new();
        shrink(&mut own, target, Why::TotalBytes, &mut more);
        own.apply(store, &more)?;
        report.own.extend(more);
    }
    Ok(report)
}

/// Drops the oldest checkpoints (never the newest) until the ledger is within `cap`, then the
/// base copy of unchanged files if that is still not enough (it only saves re-copying them).
fn shrink(ledger: &mut Ledger, cap: u64, why: Why, out: &mut Vec<Dropped>) {
    while ledger.bytes() > cap && ledger.manifests.len() > 1 {
        out.extend(ledger.drop_oldest(why));
    }
    if ledger.bytes() > cap {
        ledger.drop_base();
    }
}

/// Drops other sessions' checkpoints, the sessions whose newest checkpoint is oldest first,
/// until `excess` bytes are freed. Returns (checkpoints, sessions) dropped.
fn drop_others(home: &Path, own: &SessionId, excess: u64) -> std::io::Result<(usize, usize)> {
    let logs = SessionStore::new(home);
    let mut stores: Vec<(String, SessionId)> = Vec::new();
    let Ok(rd) = std::fs::read_dir(home.join("checkpoints")) else {
        return Ok((0, 0));
    };
    for entry in rd.flatten() {
        let Some(id) = entry
            .file_name()
            .to_str()
            .and_then(|n| SessionId::parse(n).ok())
        else {
            continue;
        };
        if id == *own {
            continue;
        }
        let newest = Store::new(home, &id)
            .list()
            .last()
            .map(|m| m.created_at.clone())
            .unwrap_or_default();
        stores.push((newest, id));
    }
    stores.sort();
    let (mut freed, mut checkpoints, mut sessions) = (0u64, 0usize, 0usize);
    for (_, id) in stores {
        if freed >= excess {
            break;
        }
        let store = Store::new(home, &id);
        // Held for the whole change: the session cannot be opened meanwhile.
        let _lock = match logs.hold(&id) {
            Hold::Held(file) => file,
            Hold::Open => continue,
            Hold::Gone => {
                // The session was deleted: its store is left over.
                freed += dir_bytes(&store.dir);
                let _ = std::fs::remove_dir_all(&store.dir);
                continue;
            }
        };
        let mut ledger = Ledger::load(&store);
        let before = dir_bytes(&store.dir);
        let mut gone = Vec::new();
        while freed + before.saturating_sub(ledger.bytes()) < excess && !ledger.manifests.is_empty()
        {
            gone.extend(ledger.drop_oldest(Why::TotalBytes));
        }
        if gone.is_empty() {
            continue;
        }
        if ledger.manifests.is_empty() {
            // Nothing left to undo: the base copy goes too, the record of what was dropped stays.
            ledger.drop_base();
        }
        ledger.apply(&store, &gone)?;
        if ledger.manifests.is_empty() {
            let _ = std::fs::remove_file(store.index_path());
        }
        freed += before.saturating_sub(dir_bytes(&store.dir));
        checkpoints += gone.len();
        sessions += 1;
    }
    Ok((checkpoints, sessions))
}

/// What a store holds, as checkpoints are dropped from it: every blob's size and how many of the
/// remaining checkpoints (and the index, the base copy of unchanged files) need it.
struct Ledger {
    /// Oldest first, with the size of its manifest file.
    manifests: Vec<(Manifest, u64)>,
    sizes: HashMap<String, u64>,
    refs: HashMap<String, usize>,
    base: HashSet<String>,
    base_kept: bool,
    /// Pack indexes, the index and the like, counted as they are.
    overhead: u64,
    dropped_any: bool,
    base_dropped: bool,
}

impl Ledger {
    fn load(store: &Store) -> Self {
        let blobs = Blobs::load(store);
        let manifests: Vec<(Manifest, u64)> = store
            .list()
            .into_iter()
            .map(|m| {
                let len = std::fs::metadata(store.manifest_path(m.id)).map_or(0, |meta| meta.len());
                (m, len)
            })
            .collect();
        let base: HashSet<String> = Index::load(store).hashes().collect();
        let mut refs: HashMap<String, usize> = HashMap::new();
        for (m, _) in &manifests {
            for h in hashes(m) {
                *refs.entry(h).or_default() += 1;
            }
        }
        let mut sizes = HashMap::new();
        for h in refs.keys().chain(&base) {
            if let Some(len) = blobs.len_of(h) {
                sizes.insert(h.clone(), len);
            }
        }
        let stored: u64 = dir_bytes(&store.packs());
        let manifests_bytes: u64 = manifests.iter().map(|(_, l)| l).sum();
        // Pack indexes and the index are counted as they are; dead blobs are not (they go).
        let overhead = dir_bytes(&store.dir)
            .saturating_sub(stored)
            .saturating_sub(manifests_bytes)
            + pack_index_bytes(store);
        Self {
            manifests,
            sizes,
            refs,
            base,
            base_kept: true,
            overhead,
            dropped_any: false,
            base_dropped: false,
        }
    }

    fn bytes(&self) -> u64 {
        let blobs: u64 = self
            .sizes
            .iter()
            .filter(|(h, _)| {
                self.refs.get(*h).is_some_and(|n| *n > 0)
                    || (self.base_kept && self.base.contains(*h))
            })
            .map(|(_, len)| len)
            .sum();
        let manifests: u64 = self.manifests.iter().map(|(_, l)| l).sum();
        self.overhead + manifests + blobs
    }

    fn drop_oldest(&mut self, why: Why) -> Option<Dropped> {
        if self.manifests.is_empty() {
            return None;
        }
        let (m, _) = self.manifests.remove(0);
        for h in hashes(&m) {
            if let Some(n) = self.refs.get_mut(&h) {
                *n = n.saturating_sub(1);
            }
        }
        self.dropped_any = true;
        Some(Dropped {
            id: m.id,
            turn: m.turn,
            why,
        })
    }

    fn drop_base(&mut self) {
        self.base_kept = false;
        self.base_dropped = true;
    }

    /// Removes the dropped manifests and the blobs nothing needs any more, and records them.
    fn apply(&self, store: &Store, dropped: &[Dropped]) -> std::io::Result<()> {
        if !self.dropped_any && !self.base_dropped {
            return Ok(());
        }
        if !dropped.is_empty() {
            let mut all = self::dropped(store);
            all.extend(dropped.iter().cloned());
            let bytes = serde_json::to_vec(&all).map_err(std::io::Error::other)?;
            super::write_atomic(&dropped_path(store), &bytes)?;
        }
        for d in dropped {
            store.remove(d.id)?;
        }
        let mut live: HashSet<String> = self
            .refs
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(h, _)| h.clone())
            .collect();
        if self.base_kept {
            live.extend(self.base.iter().cloned());
        }
        // Only a byte limit needs every dead byte gone; `max_count` pruning stays cheap.
        let only_count = dropped.iter().all(|d| d.why == Why::MaxCount) && !self.base_dropped;
        let mode = if only_count {
            Rewrite::MostlyDead
        } else {
            Rewrite::AnyDead
        };
        pack::collect(store, &live, mode)
    }
}

/// The blobs a checkpoint needs: its before-states' bytes.
fn hashes(m: &Manifest) -> HashSet<String> {
    m.before
        .values()
        .filter_map(|s| s.hash().map(str::to_owned))
        .collect()
}

fn pack_index_bytes(store: &Store) -> u64 {
    let Ok(rd) = std::fs::read_dir(store.packs()) else {
        return 0;
    };
    rd.flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "idx"))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

/// The bytes of the files under `dir` (what the store takes, apart from block rounding).
pub(crate) fn dir_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(_) => total += e.metadata().map_or(0, |m| m.len()),
                Err(_) => {}
            }
        }
    }
    total
}

fn others_bytes(root: &Path, own: &SessionId) -> u64 {
    let Ok(rd) = std::fs::read_dir(root) else {
        return 0;
    };
    rd.flatten()
        .filter(|e| e.file_name().to_str() != Some(own.as_str()))
        .map(|e| dir_bytes(&e.path()))
        .sum()
}

/// `12.0 MiB`, `2.0 GiB`.
pub(crate) fn shown_bytes(n: u64) -> String {
    const GIB: u64 = 1 << 30;
    const MIB: u64 = 1 << 20;
    if n >= GIB {
        format!("{:.1} GiB", n as f64 / GIB as f64)
    } else {
        format!("{:.1} MiB", n as f64 / MIB as f64)
    }
}
