//! "Everything under these roots except those branches", in the only terms Landlock understands.
//!
//! Landlock rules only ever add rights, and a right granted on a directory holds for its whole
//! subtree: there is no "writable except FERRITE_HOME" rule. So a root with a hidden path below
//! it is not granted itself; instead we walk from the root down towards each hidden path and
//! grant every sibling along the way (files and directories alike). The directories on the way
//! (the root itself, and each parent of a hidden path) get no rule of their own: nothing can be
//! created, removed or renamed directly in them — that is the price of expressing an exception
//! with an allow-list, and `docs/sandbox.md` says so.
//!
//! Symbolic links met on the way are skipped, never followed: granting `/tmp/link` would grant
//! whatever the link points to (a planted link to `~/.ssh` would undo the exception). Access
//! through a link is decided by the rules of its target anyway.
//!
//! A protected path that does not exist yet (`~/.claude` before the user made one) must not be
//! creatable either. Its nearest existing parent gets every right except making directories and
//! links ([`Grant::no_new_dirs`]), as long as every hole below that parent is missing there: new
//! files can be made in it, but not the directory (nor a link to one elsewhere) that the hole
//! would be; renaming a directory into it needs the same right (Landlock's `MakeDir`). Existing
//! children are granted whole as usual, so only new directories directly in that parent fail.

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// One path to grant, opened without following a final symlink (Landlock rules take a file
/// descriptor, and the opened inode is what gets the rights, whatever the path later becomes).
pub(super) struct Grant {
    pub(super) fd: File,
    pub(super) is_dir: bool,
    /// Everything but making directories and symbolic links directly in it (a missing hole
    /// below, see the module docs).
    pub(super) no_new_dirs: bool,
}

/// The paths whose subtrees together cover everything under `roots` except what lies under a
/// path of `holes`. `holes` must be canonical; roots are canonicalised here (a root that does not
/// exist is skipped: nothing can be written there anyway, since creating it needs a parent's
/// rights).
pub(super) fn carve(roots: &[PathBuf], holes: &[PathBuf]) -> Vec<Grant> {
    let mut grants = Vec::new();
    for root in roots {
        let Ok(root) = std::fs::canonicalize(root) else {
            continue;
        };
        carve_under(&root, holes, &mut grants);
    }
    grants
}

/// `paths` resolved as far as they exist, the missing rest kept as written: a protected path
/// that does not exist yet is still a hole (nothing may create it).
pub(super) fn resolved_prefix(paths: &[PathBuf]) -> Vec<PathBuf> {
    paths
        .iter()
        .filter(|p| p.is_absolute())
        .map(|path| {
            let mut missing = Vec::new();
            let mut existing = path.as_path();
            loop {
                if let Ok(real) = std::fs::canonicalize(existing) {
                    return missing.iter().rev().fold(real, |acc, part| acc.join(part));
                }
                match (existing.parent(), existing.file_name()) {
                    (Some(parent), Some(name)) => {
                        missing.push(name.to_owned());
                        existing = parent;
                    }
                    _ => return path.clone(),
                }
            }
        })
        .collect()
}

/// The existing `paths`, canonical (a hidden path that does not exist hides nothing).
pub(super) fn canonical_existing(paths: &[PathBuf]) -> Vec<PathBuf> {
    paths
        .iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect()
}

fn carve_under(path: &Path, holes: &[PathBuf], grants: &mut Vec<Grant>) {
    if holes.iter().any(|hole| path.starts_with(hole)) {
        return;
    }
    let below: Vec<&PathBuf> = holes
        .iter()
        .filter(|hole| hole.starts_with(path) && *hole != path)
        .collect();
    if below.is_empty() {
        if let Some(grant) = open_grant(path, false) {
            grants.push(grant);
        }
        return;
    }
    // Every hole below is missing right here: this directory may change, except by a new
    // directory or link (which could become the hole).
    let all_missing_here = below.iter().all(|hole| {
        hole.strip_prefix(path)
            .ok()
            .and_then(|rest| rest.components().next())
            .is_some_and(|next| std::fs::symlink_metadata(path.join(next)).is_err())
    });
    if all_missing_here && let Some(grant) = open_grant(path, true) {
        grants.push(grant);
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    for entry in entries.flatten() {
        // `file_type` does not follow links: a symlink child is skipped (see the module docs).
        if entry.file_type().is_ok_and(|t| t.is_symlink()) {
            continue;
        }
        carve_under(&path.join(entry.file_name()), holes, grants);
    }
}

fn open_grant(path: &Path, no_new_dirs: bool) -> Option<Grant> {
    let fd = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    let meta = fd.metadata().ok()?;
    // Swapped for a link between the listing and the open: skip it rather than grant the link.
    if meta.file_type().is_symlink() {
        return None;
    }
    Some(Grant {
        fd,
        is_dir: meta.is_dir(),
        no_new_dirs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn granted(roots: &[PathBuf], holes: &[PathBuf]) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = carve(roots, holes)
            .iter()
            .map(|g| {
                use std::os::fd::AsRawFd;
                std::fs::read_link(format!("/proc/self/fd/{}", g.fd.as_raw_fd())).unwrap()
            })
            .collect();
        paths.sort();
        paths
    }

    #[test]
    fn a_root_without_holes_is_granted_whole() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(granted(std::slice::from_ref(&root), &[]), vec![root]);
    }

    #[test]
    fn siblings_along_the_way_are_granted_the_hole_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for d in ["a", "home/.ferrite/sessions", "home/src"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("home/file.txt"), "x").unwrap();
        std::fs::write(root.join("top.txt"), "x").unwrap();
        // A planted link to the hole must not become a way into it.
        std::os::unix::fs::symlink(root.join("home/.ferrite"), root.join("link")).unwrap();
        let hole = root.join("home/.ferrite");
        assert_eq!(
            granted(std::slice::from_ref(&root), std::slice::from_ref(&hole)),
            vec![
                root.join("a"),
                root.join("home/file.txt"),
                root.join("home/src"),
                root.join("top.txt"),
            ]
        );
        // A root inside a hole gets nothing; a missing root is skipped.
        assert!(granted(&[hole.join("sessions"), root.join("missing")], &[hole]).is_empty());
    }

    #[test]
    fn a_missing_hole_leaves_its_parent_without_new_directories() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        let hole = resolved_prefix(&[root.join(".claude/hooks")]);
        assert_eq!(hole, vec![root.join(".claude/hooks")]);
        let grants = carve(std::slice::from_ref(&root), &hole);
        let limited: Vec<bool> = grants.iter().map(|g| g.no_new_dirs).collect();
        // The root (no `.claude` yet: no new directory in it) and `src` whole.
        assert_eq!(limited, vec![true, false]);
        // Once `.claude` exists it is walked like any hole's parent.
        std::fs::create_dir_all(root.join(".claude")).unwrap();
        std::fs::write(root.join(".claude/settings.json"), "{}").unwrap();
        assert_eq!(
            granted(std::slice::from_ref(&root), &hole),
            vec![
                root.join(".claude"),
                root.join(".claude/settings.json"),
                root.join("src")
            ]
        );
    }
}
