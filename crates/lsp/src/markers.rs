//! Which root markers (`Cargo.toml`, `package.json`, …) a workspace root holds, asked before
//! every model request (whether `diagnostics` is offered). A root's answers are kept while its
//! folder's modification time stays what it was: a marker made, removed or renamed in the root
//! changes it. Asking again costs one `stat` of the root instead of one per marker (15 for the
//! built-in servers).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// A folder's modification time is trusted for answers only once it is this much older than
/// the scan: a change within the same tick of the file system's clock as the scan would leave
/// the time unchanged (git's "racy" entries).
const SETTLED: Duration = Duration::from_secs(2);

#[derive(Default)]
pub(crate) struct Markers {
    roots: Mutex<HashMap<PathBuf, Scan>>,
}

struct Scan {
    modified: SystemTime,
    present: HashMap<String, bool>,
}

impl Markers {
    /// Whether `root` holds `marker` (a file or folder, links followed).
    pub(crate) fn has(&self, root: &Path, marker: &str) -> bool {
        let look = || root.join(marker).exists();
        let Some(modified) = settled_mtime(root) else {
            return look();
        };
        let mut roots = self
            .roots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let scan = roots.entry(root.to_owned()).or_insert_with(|| Scan {
            modified,
            present: HashMap::new(),
        });
        if scan.modified != modified {
            scan.modified = modified;
            scan.present.clear();
        }
        *scan.present.entry(marker.to_owned()).or_insert_with(look)
    }
}

/// The folder's modification time, if it is settled (older than [`SETTLED`]).
fn settled_mtime(root: &Path) -> Option<SystemTime> {
    let modified = std::fs::metadata(root).and_then(|m| m.modified()).ok()?;
    let age = SystemTime::now().duration_since(modified).ok()?;
    (age >= SETTLED).then_some(modified)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sets the folder's modification time `secs` seconds into the past.
    fn age(dir: &Path, secs: u64) {
        let past = SystemTime::now() - Duration::from_secs(secs);
        let f = std::fs::File::open(dir).unwrap_or_else(|e| panic!("{e}"));
        f.set_modified(past).unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn a_marker_made_or_removed_is_seen_at_once() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path();
        let markers = Markers::default();
        age(root, 60);
        assert!(!markers.has(root, "Cargo.toml"));
        std::fs::write(root.join("Cargo.toml"), "").unwrap_or_else(|e| panic!("{e}"));
        assert!(markers.has(root, "Cargo.toml"), "a new marker was missed");
        age(root, 60);
        assert!(markers.has(root, "Cargo.toml"));
        std::fs::remove_file(root.join("Cargo.toml")).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            !markers.has(root, "Cargo.toml"),
            "a removed marker was still seen"
        );
    }

    #[test]
    fn a_settled_root_is_answered_from_its_scan() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path();
        let markers = Markers::default();
        std::fs::write(root.join("go.mod"), "").unwrap_or_else(|e| panic!("{e}"));
        age(root, 60);
        assert!(markers.has(root, "go.mod"));
        // Put back to the scanned time after a change: the scan's answer stands, which shows
        // it was not asked of the disk again.
        std::fs::remove_file(root.join("go.mod")).unwrap_or_else(|e| panic!("{e}"));
        let scanned = markers.roots.lock().unwrap_or_else(|e| panic!("{e}"))[root].modified;
        std::fs::File::open(root)
            .and_then(|f| f.set_modified(scanned))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(markers.has(root, "go.mod"));
    }
}
