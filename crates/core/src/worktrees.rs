//! The git worktrees of a repository, read from `.git` itself (no git process): a folder's
//! repository, every worktree of it, and the same subdirectory in each of them. `session/list`
//! and `ferrite sessions list --cwd` use it to show a folder's sessions from all its worktrees
//! (`docs/sessions.md`, "Worktrees").
//!
//! The layout read: a worktree's `.git` is a directory (the main worktree: it is the common
//! directory) or a file `gitdir: <path>` naming `<common>/worktrees/<name>`, whose `commondir`
//! names the common directory (relative to it). Each `<common>/worktrees/<name>/gitdir` names
//! that worktree's `.git` file, so its parent is the worktree. The main worktree is the common
//! directory's parent (a bare repository has none).

use std::path::{Path, PathBuf};

/// One worktree of a repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktree {
    /// Its top folder.
    pub root: PathBuf,
    /// The branch checked out there (`HEAD` names `refs/heads/<branch>`); `None` when detached.
    pub branch: Option<String>,
}

/// A folder inside a repository: the worktree it is in, its path below that worktree's top,
/// and every worktree of the repository.
#[derive(Debug, Clone)]
pub struct Repo {
    /// The top of the worktree the folder is in.
    pub current: PathBuf,
    /// The folder's path below `current` (empty at the top).
    pub subdir: PathBuf,
    /// Every worktree of the repository, the main one first; `current` among them.
    pub worktrees: Vec<Worktree>,
}

impl Repo {
    /// The repository `dir` is in, if any.
    pub fn of(dir: &Path) -> Option<Repo> {
        let (top, dot_git) = dir.ancestors().find_map(|d| {
            let g = d.join(".git");
            g.symlink_metadata().is_ok().then(|| (d.to_path_buf(), g))
        })?;
        let gitdir = if dot_git.is_dir() {
            dot_git
        } else {
            read_gitdir_file(&dot_git)?
        };
        let common = match std::fs::read_to_string(gitdir.join("commondir")) {
            Ok(c) => normal(&gitdir.join(c.trim())),
            Err(_) => gitdir.clone(),
        };
        let mut worktrees = Vec::new();
        if common.file_name().is_some_and(|n| n == ".git")
            && let Some(main) = common.parent()
        {
            worktrees.push(Worktree {
                root: main.to_path_buf(),
                branch: branch(&common),
            });
        }
        if let Ok(rd) = std::fs::read_dir(common.join("worktrees")) {
            let mut linked: Vec<Worktree> = rd
                .flatten()
                .filter_map(|e| {
                    let admin = e.path();
                    let file = std::fs::read_to_string(admin.join("gitdir")).ok()?;
                    let dot = normal(&admin.join(file.trim()));
                    Some(Worktree {
                        root: dot.parent()?.to_path_buf(),
                        branch: branch(&admin),
                    })
                })
                .collect();
            linked.sort_by(|a, b| a.root.cmp(&b.root));
            worktrees.extend(linked);
        }
        if !worktrees.iter().any(|w| w.root == top) {
            worktrees.push(Worktree {
                root: top.clone(),
                branch: branch(&gitdir),
            });
        }
        let subdir = dir.strip_prefix(&top).ok()?.to_path_buf();
        Some(Repo {
            current: top,
            subdir,
            worktrees,
        })
    }

    /// The worktree whose copy of the subdirectory is `dir`, if any.
    pub fn worktree_of(&self, dir: &Path) -> Option<&Worktree> {
        self.worktrees
            .iter()
            .find(|w| dir == join(&w.root, &self.subdir))
    }
}

fn join(root: &Path, sub: &Path) -> PathBuf {
    if sub.as_os_str().is_empty() {
        root.to_path_buf()
    } else {
        root.join(sub)
    }
}

/// `gitdir: <path>` of a worktree's `.git` file (relative to the file's folder).
fn read_gitdir_file(file: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(file).ok()?;
    let path = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    Some(normal(&file.parent()?.join(path)))
}

/// The branch `HEAD` of a git directory names.
fn branch(gitdir: &Path) -> Option<String> {
    let head = std::fs::read_to_string(gitdir.join("HEAD")).ok()?;
    head.trim()
        .strip_prefix("ref: refs/heads/")
        .map(str::to_owned)
}

/// `a/b/../c` as `a/c`, without touching the file system (a removed worktree has no path to
/// resolve).
fn normal(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A main worktree at `repo` and a linked one at `other`, laid out as git lays them out.
    fn layout(base: &Path) -> (PathBuf, PathBuf) {
        let repo = base.join("repo");
        let other = base.join("other");
        let admin = repo.join(".git/worktrees/other");
        std::fs::create_dir_all(&admin).unwrap();
        std::fs::create_dir_all(repo.join("sub")).unwrap();
        std::fs::create_dir_all(other.join("sub")).unwrap();
        std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(admin.join("HEAD"), "ref: refs/heads/feature\n").unwrap();
        std::fs::write(admin.join("commondir"), "../..\n").unwrap();
        std::fs::write(
            admin.join("gitdir"),
            format!("{}\n", other.join(".git").display()),
        )
        .unwrap();
        std::fs::write(other.join(".git"), format!("gitdir: {}\n", admin.display())).unwrap();
        (repo, other)
    }

    #[test]
    fn every_worktree_is_found_from_any_of_them() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, other) = layout(dir.path());
        for start in [repo.join("sub"), other.join("sub")] {
            let r = Repo::of(&start).unwrap();
            assert_eq!(r.subdir, Path::new("sub"));
            let roots: Vec<_> = r.worktrees.iter().map(|w| w.root.clone()).collect();
            assert_eq!(roots, [repo.clone(), other.clone()]);
            assert_eq!(r.worktrees[1].branch.as_deref(), Some("feature"));
            assert_eq!(r.worktree_of(&other.join("sub")).unwrap().root, other);
            assert!(r.worktree_of(&other).is_none());
        }
        assert!(Repo::of(dir.path()).is_none());
    }

    #[test]
    fn a_removed_worktree_is_still_listed_by_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, other) = layout(dir.path());
        std::fs::remove_dir_all(&other).unwrap();
        let r = Repo::of(&repo).unwrap();
        assert!(r.worktree_of(&other).is_some());
    }
}
