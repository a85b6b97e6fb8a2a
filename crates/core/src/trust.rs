//! Workspace trust: what a repository brings that could run code or steer the agent (its hooks,
//! its custom agents) stays off until the user trusts the folder once. The answer is kept per
//! workspace (the repository root: the nearest ancestor of the cwd with `.git`, else the cwd) in
//! `FERRITE_HOME/trusted-workspaces.json`, a file no tool and no sandboxed command may write.
//!
//! A repository cannot trust itself: the file lives in FERRITE_HOME, the path is the canonical
//! directory (a link cannot borrow another folder's trust), and only the user's answer to the
//! editor's question (or `ferrite trust`) adds to it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

const FILE: &str = "trusted-workspaces.json";

#[derive(Debug, Default, Serialize, Deserialize)]
struct Trusted {
    #[serde(default)]
    workspaces: Vec<PathBuf>,
}

/// The workspace `cwd` belongs to, resolved: the repository root or `cwd` itself.
pub fn workspace_of(cwd: &Path) -> PathBuf {
    let chain = crate::prompt::chain(cwd);
    let root = chain.first().cloned().unwrap_or_else(|| cwd.to_owned());
    root.canonicalize().unwrap_or(root)
}

fn read(home: &Path) -> Trusted {
    std::fs::read(home.join(FILE))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Whether the user trusts the workspace of `cwd`.
pub fn is_trusted(home: &Path, cwd: &Path) -> bool {
    let ws = workspace_of(cwd);
    read(home).workspaces.contains(&ws)
}

/// Records that the user trusts the workspace of `cwd`; returns that workspace.
pub fn trust(home: &Path, cwd: &Path) -> std::io::Result<PathBuf> {
    let ws = workspace_of(cwd);
    let mut all = read(home);
    if !all.workspaces.contains(&ws) {
        all.workspaces.push(ws.clone());
        all.workspaces.sort();
        let bytes = serde_json::to_vec_pretty(&all).map_err(std::io::Error::other)?;
        crate::private_fs::create_dir_all(home)?;
        crate::private_fs::write_atomic(&home.join(FILE), &bytes)?;
    }
    Ok(ws)
}

/// What the workspace of `cwd` brings (hooks, with the user's; agents, with the user's) as a
/// turn there would find them, without the session's deny rules (for `ferrite doctor` and
/// `ferrite trust`, which only list them), and whether it is trusted.
pub fn extensions_of(
    home: &Path,
    config: &crate::config::Config,
    cwd: &Path,
    user_home: Option<&Path>,
) -> (crate::hooks::Hooks, crate::agents::Agents, bool) {
    let trusted = is_trusted(home, cwd);
    let roots = [cwd.to_owned()];
    let own = crate::own_files::OwnFiles::new(home, &roots, Ok(Default::default()))
        .with_user_home(user_home);
    let hooks = crate::hooks::table::load(&config.hooks, &own, cwd, trusted);
    let agents = crate::agents::discover(&own, cwd, trusted);
    (hooks, agents, trusted)
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
        assert!(!is_trusted(home.path(), &repo));
        assert_eq!(
            trust(home.path(), &repo.join("sub")).unwrap(),
            repo.canonicalize().unwrap()
        );
        assert!(is_trusted(home.path(), &repo.join("sub/deeper")));
        assert!(!is_trusted(home.path(), &other));
        // A folder elsewhere that links into the trusted one is its own workspace.
        let link = other.join("link");
        std::os::unix::fs::symlink(repo.join("sub"), &link).unwrap();
        assert!(!is_trusted(home.path(), &link));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(home.path().join(FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0);
    }
}
