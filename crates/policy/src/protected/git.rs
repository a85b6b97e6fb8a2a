//! The git files that decide what git runs. The user's own `git commit` or `git status` in a
//! terminal runs the repository's hooks and what its config names (`core.hooksPath`,
//! `core.fsmonitor`, `core.sshCommand`, filter drivers, aliases, `include.path`), outside every
//! sandbox and without a question: a tool or a command that could change them would run code as
//! the user later. Found without running git (git itself would read the config it is asked about).
//!
//! The layout read: a worktree's `.git` is a directory (its git dir, also the common dir) or a
//! file `gitdir: <path>` (a linked worktree; `<path>` relative to the file's folder), whose
//! `commondir` names the common dir (relative to the git dir). Hooks and `config` live in the
//! common dir; a linked worktree may also have `<gitdir>/config.worktree`.

use std::path::{Path, PathBuf};

/// The repository's files that decide what git runs, for every repository `dirs` are in
/// (resolved; sorted, without duplicates): the hooks folder of the common dir and the git dir's
/// `commondir` even when they are missing (a write must not create them either), a linked
/// worktree's `.git` file, the config files that exist, the folder `core.hooksPath` names and
/// the files `include.path` names.
pub(super) fn decisive_files(dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in dirs {
        if let Some(repo) = GitDirs::of(dir) {
            out.extend(repo.files());
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The `.git` folders (not files) of the repositories `dirs` are in: renamed away, git would
/// find another repository's (`core::git_guard` brings them back).
pub(super) fn dot_git_folders(dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = dirs
        .iter()
        .filter_map(|d| GitDirs::of(d))
        .map(|g| g.top.join(".git"))
        .filter(|p| p.symlink_metadata().is_ok_and(|m| m.is_dir()))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Whether `rel` (relative to a workspace root) names such a file by its place in a `.git`
/// folder, at any depth (nested repositories and submodules under `.git/modules` included):
/// something under `hooks`, a `config`, `config.worktree` or `commondir`, or a `.git` file.
pub(super) fn names_git_file(rel: &Path) -> bool {
    let parts: Vec<&str> = rel.iter().filter_map(|p| p.to_str()).collect();
    let Some(at) = parts.iter().position(|p| *p == ".git") else {
        return false;
    };
    let inside = &parts[at + 1..];
    match inside {
        [] => true,
        [first, ..] if matches!(*first, "refs" | "logs" | "objects") => false,
        _ => {
            inside.contains(&"hooks")
                || matches!(
                    inside.last(),
                    Some(&("config" | "config.worktree" | "commondir"))
                )
        }
    }
}

/// Where one worktree's git files are.
struct GitDirs {
    /// The worktree's top folder.
    top: PathBuf,
    /// Its own git dir (`.git`, or `<common>/worktrees/<name>` for a linked worktree).
    git_dir: PathBuf,
    /// The common dir: hooks and the shared config.
    common: PathBuf,
}

impl GitDirs {
    /// The repository `dir` is in: the nearest folder up holding a `.git`; `None` when there is
    /// none or its `.git` file does not name a git dir.
    fn of(dir: &Path) -> Option<GitDirs> {
        let (top, dot_git) = dir.ancestors().find_map(|d| {
            let g = d.join(".git");
            g.symlink_metadata().is_ok().then(|| (d.to_path_buf(), g))
        })?;
        let git_dir = if dot_git.is_dir() {
            resolved(&dot_git)
        } else {
            let text = std::fs::read_to_string(&dot_git).ok()?;
            let named = text.lines().next()?.strip_prefix("gitdir:")?.trim();
            resolved(&top.join(named))
        };
        if !git_dir.is_dir() {
            return None;
        }
        let common = match std::fs::read_to_string(git_dir.join("commondir")) {
            Ok(c) => resolved(&git_dir.join(c.trim())),
            Err(_) => git_dir.clone(),
        };
        Some(GitDirs {
            top,
            git_dir,
            common,
        })
    }

    fn files(&self) -> Vec<PathBuf> {
        // `commondir` even when missing: made in a main `.git`, it would send git to another
        // common dir (another config, other hooks).
        let mut out = vec![self.common.join("hooks"), self.git_dir.join("commondir")];
        // A linked worktree's `.git` file names its git dir: rewritten, it names another.
        let dot_git = self.top.join(".git");
        if dot_git.symlink_metadata().is_ok_and(|m| m.is_file()) {
            out.push(dot_git);
        }
        let configs: Vec<PathBuf> = [
            self.common.join("config"),
            self.common.join("config.worktree"),
            self.git_dir.join("config.worktree"),
        ]
        .into_iter()
        .filter(|p| p.is_file())
        .collect();
        for config in &configs {
            let Ok(text) = std::fs::read_to_string(config) else {
                continue;
            };
            let folder = config.parent().unwrap_or(Path::new("/"));
            for (section, value) in named_paths(&text) {
                let path = match section {
                    // Relative to where hooks run: the worktree's top.
                    Named::HooksPath => crate::paths::resolve(&self.top, &value),
                    Named::Include => crate::paths::resolve(folder, &value),
                };
                // A hooks folder that would cover the whole worktree keeps nothing apart.
                if !self.top.starts_with(&path) {
                    out.push(path);
                }
            }
        }
        out.extend(configs);
        out
    }
}

fn resolved(path: &Path) -> PathBuf {
    crate::paths::resolve(Path::new("/"), &path.to_string_lossy())
}

/// What a path in a git config names.
enum Named {
    /// `core.hooksPath`: the folder hooks run from instead of `<common>/hooks`.
    HooksPath,
    /// `include.path`, `includeIf.<cond>.path`: another config file.
    Include,
}

/// The `core.hooksPath` and `include(If).path` values of a git config file: sections
/// `[core]`, `[include]`, `[includeIf "…"]`, keys case-insensitive, a value's surrounding
/// quotes removed. Enough of git's syntax for the values that name files (continuation lines
/// and escapes inside values are not read).
fn named_paths(text: &str) -> Vec<(Named, String)> {
    let mut out = Vec::new();
    let mut section = String::new();
    for line in text.lines() {
        let mut line = line.trim();
        if let Some(rest) = line.strip_prefix('[') {
            let Some((head, after)) = rest.split_once(']') else {
                continue;
            };
            section = head
                .split(['"', ' ', '\t'])
                .next()
                .unwrap_or("")
                .to_ascii_lowercase();
            // `[core] hooksPath = x` on one line is valid git.
            line = after.trim();
        }
        if line.starts_with(['#', ';']) {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = value
            .split([';', '#'])
            .next()
            .unwrap_or("")
            .trim()
            .trim_matches('"')
            .to_owned();
        if value.is_empty() {
            continue;
        }
        let key = key.trim().to_ascii_lowercase();
        match (section.as_str(), key.as_str()) {
            ("core", "hookspath") => out.push((Named::HooksPath, value)),
            ("include" | "includeif", "path") => out.push((Named::Include, value)),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(p: &Path) -> PathBuf {
        std::fs::canonicalize(p).unwrap()
    }

    #[test]
    fn a_repository_protects_its_hooks_folder_and_config() {
        let dir = tempfile::tempdir().unwrap();
        let root = canon(dir.path());
        std::fs::create_dir_all(root.join("repo/.git")).unwrap();
        std::fs::create_dir_all(root.join("repo/src/deep")).unwrap();
        std::fs::write(root.join("repo/.git/config"), "[core]\n\tbare = false\n").unwrap();
        // Found from a subfolder; hooks/ is missing but still named.
        assert_eq!(
            decisive_files(&[root.join("repo/src/deep")]),
            vec![
                root.join("repo/.git/commondir"),
                root.join("repo/.git/config"),
                root.join("repo/.git/hooks")
            ]
        );
        // Not a repository: nothing.
        std::fs::create_dir_all(root.join("plain")).unwrap();
        assert!(decisive_files(&[root.join("plain")]).is_empty());
    }

    #[test]
    fn a_linked_worktree_protects_the_common_dir_and_its_own_config() {
        let dir = tempfile::tempdir().unwrap();
        let root = canon(dir.path());
        let admin = root.join("main/.git/worktrees/wt");
        std::fs::create_dir_all(&admin).unwrap();
        std::fs::create_dir_all(root.join("main/.git/hooks")).unwrap();
        std::fs::write(root.join("main/.git/config"), "").unwrap();
        std::fs::write(admin.join("commondir"), "../..\n").unwrap();
        std::fs::write(admin.join("config.worktree"), "").unwrap();
        std::fs::create_dir_all(root.join("wt")).unwrap();
        std::fs::write(
            root.join("wt/.git"),
            format!("gitdir: {}\n", admin.display()),
        )
        .unwrap();
        assert_eq!(
            decisive_files(&[root.join("wt")]),
            vec![
                root.join("main/.git/config"),
                root.join("main/.git/hooks"),
                admin.join("commondir"),
                admin.join("config.worktree"),
                root.join("wt/.git"),
            ]
        );
        // A relative `gitdir:` works the same.
        std::fs::write(root.join("wt/.git"), "gitdir: ../main/.git/worktrees/wt").unwrap();
        assert_eq!(decisive_files(&[root.join("wt")]).len(), 5);
    }

    #[test]
    fn hooks_path_and_includes_are_protected_too() {
        let dir = tempfile::tempdir().unwrap();
        let root = canon(dir.path());
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(
            root.join(".git/config"),
            "[core]\n\tHooksPath = \".husky/_\" ; husky\n[include]\n\tpath = ../shared.gitconfig\n\
             [includeIf \"gitdir:~/w/\"] path = /etc/x.conf\n[core] hooksPath = .\n",
        )
        .unwrap();
        let files = decisive_files(std::slice::from_ref(&root));
        for want in [
            root.join(".husky/_"),
            root.join("shared.gitconfig"),
            PathBuf::from("/etc/x.conf"),
        ] {
            assert!(files.contains(&want), "{want:?} in {files:?}");
        }
        // `hooksPath = .` would make the whole worktree a hooks folder: not kept apart.
        assert!(!files.contains(&root));
    }

    #[test]
    fn git_files_are_recognised_by_name() {
        for yes in [
            ".git/hooks/pre-commit",
            ".git/hooks",
            ".git/config",
            "sub/.git/config.worktree",
            ".git/worktrees/w/commondir",
            ".git/modules/lib/hooks/post-checkout",
            "wt/.git",
        ] {
            assert!(names_git_file(Path::new(yes)), "{yes}");
        }
        for no in [
            ".git/refs/heads/hooks",
            ".git/objects/ab/cd",
            ".git/HEAD",
            "src/config",
            "hooks/x",
            ".github/config",
        ] {
            assert!(!names_git_file(Path::new(no)), "{no}");
        }
    }
}
