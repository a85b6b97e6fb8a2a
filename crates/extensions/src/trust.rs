//! Workspace trust: what a repository brings that could run code or steer the agent (its hooks,
//! its custom agents) stays off until the user trusts it. The answer is kept per workspace (the
//! repository root: the nearest ancestor of the cwd with `.git`, else the cwd) in
//! `FERRITE_HOME/trusted-workspaces.json`, a file no tool and no sandboxed command may write.
//!
//! Trust covers what the user was shown: each hook and agent by a fingerprint of what it runs
//! or says ([`fingerprint`]). One added or changed later (by a `git pull`, or by a model that
//! wrote the project's settings, which `auto` mode allows without a question) is off until the
//! user is asked about it.
//!
//! A repository cannot trust itself: the file lives in FERRITE_HOME, the path is the canonical
//! directory (a link cannot borrow another folder's trust), and only the user's answer to the
//! editor's question (or `ferrite trust`) adds to it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

const FILE: &str = "trusted-workspaces.json";

#[derive(Debug, Default, Serialize, Deserialize)]
struct Trusted {
    /// Workspaces the user trusted once (shown by `ferrite doctor`).
    #[serde(default)]
    workspaces: Vec<PathBuf>,
    /// Per workspace, the fingerprints of the hooks and agents the user trusted there.
    #[serde(default)]
    approved: BTreeMap<PathBuf, BTreeSet<String>>,
    /// Per workspace, the files trusted hooks run and their content's digest when trusted (to
    /// say what changed when one is asked about again).
    #[serde(default)]
    files: BTreeMap<PathBuf, BTreeMap<PathBuf, String>>,
}

/// What the user trusted in one workspace.
#[derive(Debug, Clone, Default)]
pub struct Approved {
    /// The user trusted the folder at some point.
    pub folder: bool,
    fingerprints: BTreeSet<String>,
    files: BTreeMap<PathBuf, String>,
}

impl Approved {
    /// Whether the hook or agent of this fingerprint was trusted as it is now.
    pub fn covers(&self, fingerprint: &str) -> bool {
        self.fingerprints.contains(fingerprint)
    }

    /// The digest `file` had when a hook running it was last trusted here.
    pub fn file_digest(&self, file: &Path) -> Option<&str> {
        self.files.get(file).map(String::as_str)
    }
}

/// A hook's or an agent's fingerprint: SHA-256 of its parts (what it runs or says, and where it
/// is written), each ended by a NUL so that parts cannot run into each other.
pub fn fingerprint(parts: &[&str]) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    for part in parts {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The workspace `cwd` belongs to, resolved: the repository root or `cwd` itself.
pub fn workspace_of(cwd: &Path) -> PathBuf {
    let chain = crate::paths::chain(cwd);
    let root = chain.first().cloned().unwrap_or_else(|| cwd.to_owned());
    root.canonicalize().unwrap_or(root)
}

fn read(home: &Path) -> Trusted {
    std::fs::read(home.join(FILE))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// What the user trusted in the workspace of `cwd`.
pub fn approved(home: &Path, cwd: &Path) -> Approved {
    let ws = workspace_of(cwd);
    let mut all = read(home);
    Approved {
        folder: all.workspaces.contains(&ws),
        fingerprints: all.approved.remove(&ws).unwrap_or_default(),
        files: all.files.remove(&ws).unwrap_or_default(),
    }
}

/// Records that the user trusts the workspace of `cwd` with the hooks and agents of these
/// `fingerprints`, the hooks running these `files` (path, digest); returns that workspace.
pub fn trust(
    home: &Path,
    cwd: &Path,
    fingerprints: impl IntoIterator<Item = String>,
    files: impl IntoIterator<Item = (PathBuf, String)>,
) -> std::io::Result<PathBuf> {
    let ws = workspace_of(cwd);
    let mut all = read(home);
    if !all.workspaces.contains(&ws) {
        all.workspaces.push(ws.clone());
        all.workspaces.sort();
    }
    all.approved
        .entry(ws.clone())
        .or_default()
        .extend(fingerprints);
    all.files.entry(ws.clone()).or_default().extend(files);
    let bytes = serde_json::to_vec_pretty(&all).map_err(std::io::Error::other)?;
    crate::private_fs::create_dir_all(home)?;
    crate::private_fs::write_atomic(&home.join(FILE), &bytes)?;
    Ok(ws)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn trust_is_per_repository_and_a_link_does_not_borrow_it() {
        let home = tempfile::tempdir().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("sub/deeper")).unwrap();
        let other = tmp.path().join("other");
        std::fs::create_dir_all(&other).unwrap();
        assert!(!approved(home.path(), &repo).folder);
        let hook = fingerprint(&["Stop", "", "echo hi"]);
        assert_eq!(
            trust(home.path(), &repo.join("sub"), [hook.clone()], []).unwrap(),
            repo.canonicalize().unwrap()
        );
        let there = approved(home.path(), &repo.join("sub/deeper"));
        assert!(there.folder && there.covers(&hook));
        assert!(!there.covers(&fingerprint(&["Stop", "", "echo hi; curl evil"])));
        assert!(!approved(home.path(), &other).folder);
        // A folder elsewhere that links into the trusted one is its own workspace.
        let link = other.join("link");
        std::os::unix::fs::symlink(repo.join("sub"), &link).unwrap();
        assert!(!approved(home.path(), &link).covers(&hook));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(home.path().join(FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0);
    }
}
