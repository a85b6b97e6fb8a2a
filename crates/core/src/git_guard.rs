//! What git runs stays as the user left it, below `full`. A repository's hooks and config
//! (`policy::protected::git`) run later as the user, outside every sandbox, when they type
//! `git commit` in a terminal. Tool writes to them ask (`policy::protected`); a sandboxed command
//! is guarded here: they are read before it runs and put back after it ended, and the model and
//! the user are told.
//!
//! Why not the sandbox: Landlock grants rights on a folder for everything beneath it and has no
//! exception, so keeping `.git/hooks` and `.git/config` read-only would have taken every right to
//! make a file directly in `.git` (git's `index.lock`: no `git add` or `git commit`) and at the
//! worktree's top (`target/`, `node_modules/`). A mount namespace with read-only binds needs user
//! namespaces, which containers often lack. The residual risk (`docs/sandbox.md`): while a
//! command runs, a `git` the user starts in a terminal could run what it wrote.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The most a guarded file may hold to be put back (hooks and configs are small); a larger one
/// is left alone.
const MAX_FILE_BYTES: u64 = 1 << 20;
/// The most entries a guarded folder may hold (a `core.hooksPath` naming a big folder is not
/// copied).
const MAX_ENTRIES: usize = 500;

/// What was at a guarded path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Missing,
    File {
        bytes: Vec<u8>,
        mode: u32,
    },
    Link(PathBuf),
    Dir(BTreeMap<OsString, State>),
    /// Too large to copy: not guarded.
    Unguarded,
}

/// The guarded paths as they were before a command, and each repository's `.git` folder.
pub(crate) struct GitGuard {
    files: Vec<(PathBuf, State)>,
    /// `(top/.git, its device and inode)` of the repositories whose `.git` is a folder.
    dot_gits: Vec<(PathBuf, (u64, u64))>,
}

/// What a command had changed and what became of it, for the model and the user.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Restored {
    /// Put back as they were.
    pub put_back: Vec<PathBuf>,
    /// Changed and not put back (why, in words).
    pub failed: Vec<(PathBuf, String)>,
}

impl Restored {
    pub fn is_empty(&self) -> bool {
        self.put_back.is_empty() && self.failed.is_empty()
    }

    /// The sentence the model reads after the command's output, and the user as a notice.
    pub fn text(&self) -> String {
        let list = |paths: &mut dyn Iterator<Item = &PathBuf>| {
            paths
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut out = String::from(
            "[Ferrite: this command changed what git runs outside the sandbox on the user's \
             next git command (",
        );
        let mut changed = self
            .put_back
            .iter()
            .chain(self.failed.iter().map(|(p, _)| p));
        out.push_str(&list(&mut changed));
        out.push_str(").");
        if !self.put_back.is_empty() {
            out.push_str(" It was put back as it was.");
        }
        for (path, why) in &self.failed {
            out.push_str(&format!(
                " {} could not be put back ({why}): check it before running git.",
                path.display()
            ));
        }
        out.push_str(
            " Such a change needs the user: ask them to make it, or to switch to `full` mode.]",
        );
        out
    }
}

impl GitGuard {
    /// Reads `files` (hooks folders, configs, the files named in them) and notes the `.git`
    /// folders, before a command runs. `None` when there is nothing to guard.
    pub fn take(files: &[PathBuf], dot_gits: &[PathBuf]) -> Option<GitGuard> {
        if files.is_empty() && dot_gits.is_empty() {
            return None;
        }
        let files = files.iter().map(|p| (p.clone(), read(p, 0))).collect();
        let dot_gits = dot_gits
            .iter()
            .filter_map(|p| {
                let m = p.symlink_metadata().ok().filter(|m| m.is_dir())?;
                Some((p.clone(), (m.dev(), m.ino())))
            })
            .collect();
        Some(GitGuard { files, dot_gits })
    }

    /// After the command: a `.git` folder moved away comes back (what took its place is set
    /// aside), then every guarded path that changed is put back as it was.
    pub fn restore(&self) -> Restored {
        let mut out = Restored::default();
        for (dot_git, id) in &self.dot_gits {
            if let Err(why) = bring_back(dot_git, *id) {
                out.failed.push((dot_git.clone(), why));
            } else if !same_dir(dot_git, *id) {
                out.failed
                    .push((dot_git.clone(), "it is not the same folder".into()));
            }
        }
        for (path, before) in &self.files {
            if *before == State::Unguarded {
                continue;
            }
            let now = read(path, 0);
            if now == *before {
                continue;
            }
            match put_back(path, before) {
                Ok(()) => out.put_back.push(path.clone()),
                Err(e) => out.failed.push((path.clone(), e.to_string())),
            }
        }
        out
    }
}

fn same_dir(path: &Path, (dev, ino): (u64, u64)) -> bool {
    path.symlink_metadata()
        .is_ok_and(|m| m.is_dir() && m.dev() == dev && m.ino() == ino)
}

/// A `.git` folder renamed away within its worktree's top comes back; whatever took its name
/// is renamed `.git.ferrite-set-aside[-N]` (nothing is deleted). Not found: an error.
fn bring_back(dot_git: &Path, id: (u64, u64)) -> Result<(), String> {
    if same_dir(dot_git, id) {
        return Ok(());
    }
    let top = dot_git.parent().ok_or("no parent folder")?;
    let moved = std::fs::read_dir(top)
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.path())
        .find(|p| same_dir(p, id));
    if dot_git.symlink_metadata().is_ok() {
        let aside = (0..)
            .map(|n| match n {
                0 => top.join(".git.ferrite-set-aside"),
                n => top.join(format!(".git.ferrite-set-aside-{n}")),
            })
            .find(|p| p.symlink_metadata().is_err())
            .ok_or("no free name")?;
        std::fs::rename(dot_git, &aside).map_err(|e| e.to_string())?;
    }
    let moved =
        moved.ok_or("the repository's .git folder was moved where Ferrite cannot find it")?;
    std::fs::rename(&moved, dot_git).map_err(|e| e.to_string())
}

fn read(path: &Path, depth: usize) -> State {
    let Ok(m) = path.symlink_metadata() else {
        return State::Missing;
    };
    if m.file_type().is_symlink() {
        return std::fs::read_link(path).map_or(State::Unguarded, State::Link);
    }
    if m.is_file() {
        if m.len() > MAX_FILE_BYTES {
            return State::Unguarded;
        }
        return std::fs::read(path).map_or(State::Unguarded, |bytes| State::File {
            bytes,
            mode: m.permissions().mode() & 0o7777,
        });
    }
    if !m.is_dir() || depth > 3 {
        return State::Unguarded;
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return State::Unguarded;
    };
    let entries: Vec<_> = entries.flatten().take(MAX_ENTRIES + 1).collect();
    if entries.len() > MAX_ENTRIES {
        return State::Unguarded;
    }
    let mut dir = BTreeMap::new();
    for e in entries {
        let state = read(&e.path(), depth + 1);
        if state == State::Unguarded {
            return State::Unguarded;
        }
        dir.insert(e.file_name(), state);
    }
    State::Dir(dir)
}

/// Makes `path` what `state` says: what is there now is removed first (only at `path`, which is
/// one of the guarded paths or below one).
fn put_back(path: &Path, state: &State) -> std::io::Result<()> {
    if let Ok(m) = path.symlink_metadata() {
        match (m.is_dir() && !m.file_type().is_symlink(), state) {
            // A folder that should stay one: only its entries change.
            (true, State::Dir(_)) => {}
            (true, _) => std::fs::remove_dir_all(path)?,
            (false, _) => std::fs::remove_file(path)?,
        }
    }
    match state {
        State::Missing | State::Unguarded => Ok(()),
        State::Link(target) => std::os::unix::fs::symlink(target, path),
        State::File { bytes, mode } => {
            std::fs::write(path, bytes)?;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(*mode))
        }
        State::Dir(entries) => {
            if !path.is_dir() {
                std::fs::create_dir(path)?;
            }
            for e in std::fs::read_dir(path)?.flatten() {
                if !entries.contains_key(&e.file_name()) {
                    put_back(&e.path(), &State::Missing)?;
                }
            }
            for (name, child) in entries {
                let child_path = path.join(name);
                if read(&child_path, 0) != *child {
                    put_back(&child_path, child)?;
                }
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_and_config_come_back_and_a_moved_git_folder_returns() {
        let d = tempfile::tempdir().unwrap();
        let top = d.path();
        let git = top.join(".git");
        std::fs::create_dir_all(git.join("hooks")).unwrap();
        std::fs::write(git.join("config"), "[core]\n").unwrap();
        std::fs::write(git.join("hooks/pre-commit.sample"), "#!/bin/sh\n").unwrap();
        let files = [git.join("hooks"), git.join("config"), git.join("commondir")];
        let guard = GitGuard::take(&files, std::slice::from_ref(&git)).unwrap();
        // A command plants a hook, rewrites the config, then swaps `.git` for its own.
        std::fs::write(git.join("hooks/pre-commit"), "evil").unwrap();
        std::fs::remove_file(git.join("hooks/pre-commit.sample")).unwrap();
        std::fs::write(git.join("config"), "[core]\n\thooksPath = x\n").unwrap();
        std::fs::rename(&git, top.join(".git-old")).unwrap();
        std::fs::create_dir_all(git.join("hooks")).unwrap();
        std::fs::write(git.join("commondir"), "/tmp").unwrap();
        let restored = guard.restore();
        assert!(restored.failed.is_empty(), "{restored:?}");
        assert!(!top.join(".git-old").exists());
        assert!(top.join(".git.ferrite-set-aside/commondir").exists());
        assert_eq!(
            std::fs::read_to_string(git.join("config")).unwrap(),
            "[core]\n"
        );
        let hooks: Vec<_> = std::fs::read_dir(git.join("hooks"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(hooks, ["pre-commit.sample"]);
        assert!(!git.join("commondir").exists());
        assert_eq!(restored.put_back.len(), 2, "{restored:?}");
        assert!(restored.text().contains("put back"));
        // Nothing changed: nothing to say.
        assert!(GitGuard::take(&files, &[git]).unwrap().restore().is_empty());
    }
}
