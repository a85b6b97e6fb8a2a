//! Ferrite's own files. `FERRITE_HOME` holds the config (which can start MCP servers unsandboxed),
//! the provider keys, the stored permission rules and the session logs: a tool that could change
//! them could grant itself anything in the next session, and one that could read them could send
//! the keys away. This applies whatever the workspace is: an editor opened on the home directory
//! puts `~/.ferrite` inside the workspace.
//!
//! - Below `full`, no tool writes under `FERRITE_HOME` (refused, not asked: no legitimate coding
//!   task needs it, and a prompt-injected model would ask the user in words made to be approved).
//! - Reading under `FERRITE_HOME` asks, like a file outside the workspace, except the session's own
//!   spill directory, which tool results name so the model can page through long outputs.
//!
//! Commands are kept out of `FERRITE_HOME` by the sandbox (`docs/sandbox.md`).
//!
//! Two more kinds of files decide what runs, so they are kept the same way below `full`:
//!
//! - the user's own configuration that Ferrite reads from the home directory (`~/.claude`, where
//!   `settings.json` holds hooks that run in every project without a question, `agents/` and
//!   `skills/`; `~/.agents`): tool writes are refused, like FERRITE_HOME, whatever the workspace
//!   is (an editor opened on `~` included);
//! - the workspace's extension files (`.claude/settings*.json`, `.claude/hooks/**`,
//!   `.claude/agents/**`, `.claude/skills/**`, `.ferrite/**`, in every directory of the
//!   workspace, and the files a hook of this turn runs): a tool write asks the user first, in
//!   every mode below `full` (`auto` included). A changed hook file is also off until the user
//!   trusts it again (`crate::trust`); asking first keeps the model from changing what a trusted
//!   hook will run behind the user's back.
//!
//! - the git files that decide what git runs (`.git/hooks/`, `.git/config`, a linked worktree's
//!   common dir and `config.worktree`, the folder `core.hooksPath` names, included configs; see
//!   [`git`]): the user's own next `git commit` runs them outside every sandbox, unasked. A tool
//!   write asks first, like an extension file.
//!
//! The command sandbox cannot write the first three ([`Protected::sandbox_paths`]); what git runs
//! is put back after a command that changed it ([`Protected::git_guarded`], `core::git_guard`).

use std::path::{Path, PathBuf};

mod git;

use crate::access::Access;
use crate::modes::Mode;

/// What the protection of `FERRITE_HOME` says about one call, before the policy's own decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Not about Ferrite's files: the policy decides alone.
    Pass,
    /// The user must be asked even where the policy would allow (reads Ferrite's files, or
    /// writes a file that defines what runs); why, in words.
    Ask(String),
    Refuse(String),
}

/// Ferrite's home and the one directory under it that tools may read freely, the user's own
/// configuration and the workspace's extension files.
#[derive(Debug, Clone)]
pub struct Protected {
    home: PathBuf,
    spill_dir: PathBuf,
    /// `~/.claude`, `~/.agents`, resolved.
    user_config: Vec<PathBuf>,
    /// The workspace roots, where the extension file names are looked for.
    roots: Vec<PathBuf>,
    /// Extension files and folders of the directories a session here reads (resolved: a
    /// `.claude` that is a link is protected where it leads), and the files hooks run.
    extension: Vec<PathBuf>,
    /// The `.claude` and `.ferrite` folders of those directories that exist, for the sandbox.
    extension_dirs: Vec<PathBuf>,
    /// The git files that decide what git runs, of the repositories of the roots and the cwd
    /// (resolved; the hooks folder even when missing).
    git: Vec<PathBuf>,
    /// Those repositories' `.git` folders.
    dot_gits: Vec<PathBuf>,
}

/// What a directory holds that defines what runs, below it (for [`Protected::with_workspace`]).
const EXTENSION_ENTRIES: &[&str] = &[
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".claude/hooks",
    ".claude/agents",
    ".claude/skills",
    ".ferrite",
];

impl Protected {
    /// `home` and `spill_dir` are canonicalized as far as they exist, like the paths tools report.
    pub fn new(home: &Path, spill_dir: &Path) -> Self {
        let canon = |p: &Path| crate::paths::resolve(Path::new("/"), &p.to_string_lossy());
        Self {
            home: canon(home),
            spill_dir: canon(spill_dir),
            user_config: vec![],
            roots: vec![],
            extension: vec![],
            extension_dirs: vec![],
            git: vec![],
            dot_gits: vec![],
        }
    }

    /// The same, knowing the user's home directory: its `.claude` and `.agents` are the user's
    /// own configuration.
    #[must_use]
    pub fn with_user_home(mut self, user_home: Option<&Path>) -> Self {
        if let Some(home) = user_home {
            let canon = |p: PathBuf| crate::paths::resolve(Path::new("/"), &p.to_string_lossy());
            self.user_config = vec![canon(home.join(".claude")), canon(home.join(".agents"))];
        }
        self
    }

    /// The same, knowing the workspace: its `roots`, the directories from the repository root
    /// down to `cwd` (whose extension files a session reads) and the files `hook_files` that
    /// this turn's hooks run.
    #[must_use]
    pub fn with_workspace(mut self, roots: &[PathBuf], cwd: &Path, hook_files: &[PathBuf]) -> Self {
        self.roots = roots.to_vec();
        let mut repo_dirs = roots.to_vec();
        repo_dirs.push(cwd.to_path_buf());
        self.git = git::decisive_files(&repo_dirs);
        self.dot_gits = git::dot_git_folders(&repo_dirs);
        for dir in crate::paths::chain(cwd) {
            for entry in EXTENSION_ENTRIES {
                self.extension.push(crate::paths::resolve(&dir, entry));
            }
            for folder in [".claude", ".ferrite"] {
                if let Ok(real) = std::fs::canonicalize(dir.join(folder)) {
                    self.extension_dirs.push(real);
                }
            }
        }
        for file in hook_files {
            self.extension.push(crate::paths::resolve(
                Path::new("/"),
                &file.to_string_lossy(),
            ));
        }
        self
    }

    /// What the command sandbox must keep unwritten besides FERRITE_HOME: the user's own
    /// configuration (even where it does not exist yet: nothing may create `~/.claude`), the
    /// workspace's `.claude` and `.ferrite` folders that exist, and the existing files hooks run.
    /// (A workspace folder that does not exist is not kept from being made: the repository root
    /// could then make no directory at all, and what a command puts there is new, so off until
    /// the user trusts it.) The git files are not among them: the sandbox could keep them only by
    /// taking every right to make a file in `.git` and at the worktree's top; commands are
    /// guarded around instead ([`Self::git_guarded`]).
    pub fn sandbox_paths(&self) -> Vec<PathBuf> {
        let mut out = self.user_config.clone();
        out.extend(self.extension_dirs.iter().cloned());
        out.extend(self.extension.iter().filter(|p| p.is_file()).cloned());
        out.sort();
        out.dedup();
        out
    }

    /// Whether `path` is one of the user's own configuration files.
    fn is_user_config(&self, path: &Path) -> bool {
        self.user_config
            .iter()
            .any(|c| crate::paths::is_under(path, c))
    }

    /// Whether `path` is an extension file of the workspace: by name anywhere in a root, or
    /// one of the resolved paths of the session's directories and hooks.
    pub fn is_extension(&self, path: &Path) -> bool {
        self.extension
            .iter()
            .any(|e| crate::paths::is_under(path, e))
            || self
                .roots
                .iter()
                .any(|root| path.strip_prefix(root).is_ok_and(names_extension))
    }

    /// What a command below `full` must leave as it found (`core::git_guard`): the git files that
    /// decide what git runs, and the repositories' `.git` folders.
    pub fn git_guarded(&self) -> (&[PathBuf], &[PathBuf]) {
        (&self.git, &self.dot_gits)
    }

    /// Whether `path` is a git file that decides what git runs: one of the repositories' found
    /// for the session, or one named so by its place in a `.git` folder inside a root.
    pub fn is_git(&self, path: &Path) -> bool {
        self.git.iter().any(|g| crate::paths::is_under(path, g))
            || self
                .roots
                .iter()
                .any(|root| path.strip_prefix(root).is_ok_and(git::names_git_file))
    }

    /// Whether a search walking the workspace must leave `path` out: it is under FERRITE_HOME and
    /// not in the session's spill directory (the same line [`Self::check`] draws for reads).
    pub fn hides(&self, path: &Path) -> bool {
        crate::paths::is_under(path, &self.home) && !crate::paths::is_under(path, &self.spill_dir)
    }

    pub fn check(&self, access: &Access, mode: Mode) -> Verdict {
        if mode == Mode::Full {
            return Verdict::Pass;
        }
        match access {
            Access::Write { paths }
                if paths.iter().any(|p| crate::paths::is_under(p, &self.home)) =>
            {
                Verdict::Refuse(format!(
                    "{} is Ferrite's own directory (config, credentials, permission rules, \
                     sessions); tools do not change it below `full` mode",
                    self.home.display()
                ))
            }
            Access::Write { paths } if paths.iter().any(|p| self.is_user_config(p)) => {
                Verdict::Refuse(
                    "`~/.claude` and `~/.agents` are your own configuration (hooks that run in \
                     every project, agents, skills); tools do not change them below `full` mode"
                        .to_owned(),
                )
            }
            Access::Write { paths } if paths.iter().any(|p| self.is_extension(p)) => Verdict::Ask(
                "it changes a file that defines what runs (hooks and the files they run, \
                     agents, skills, settings), which needs your permission in every mode below \
                     `full`"
                    .to_owned(),
            ),
            Access::Write { paths } if paths.iter().any(|p| self.is_git(p)) => Verdict::Ask(
                "it changes a file that decides what git runs (`.git/hooks`, `.git/config`): \
                 your own next `git commit` or `git status` would run it outside every sandbox, \
                 so it needs your permission in every mode below `full`"
                    .to_owned(),
            ),
            Access::Read { paths } if paths.iter().any(|p| self.hides(p)) => {
                Verdict::Ask("reading Ferrite's own files needs your permission".to_owned())
            }
            Access::None
            | Access::Read { .. }
            | Access::Write { .. }
            | Access::Execute { .. }
            | Access::Fetch { .. }
            | Access::Mcp => Verdict::Pass,
        }
    }
}

/// Whether `rel` (relative to a workspace root) names an extension file: `.claude/settings*.json`
/// or something under `.claude/hooks`, `.claude/agents`, `.claude/skills` or `.ferrite`, at any
/// depth.
fn names_extension(rel: &Path) -> bool {
    let parts: Vec<&std::ffi::OsStr> = rel.iter().collect();
    parts.iter().enumerate().any(|(i, part)| {
        let next = parts.get(i + 1).and_then(|n| n.to_str());
        match part.to_str() {
            Some(".ferrite") => true,
            Some(".claude") => match next {
                Some("hooks" | "agents" | "skills") => true,
                Some(name) => {
                    parts.len() == i + 2 && name.starts_with("settings") && name.ends_with(".json")
                }
                None => false,
            },
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, Protected, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let home = root.join("home/.ferrite");
        let spill = home.join("sessions/s1/tool-output");
        std::fs::create_dir_all(&spill).unwrap();
        (dir, Protected::new(&home, &spill), home)
    }

    #[test]
    fn writes_under_home_are_refused_below_full() {
        let (_d, p, home) = setup();
        let w = Access::Write {
            paths: vec![home.join("config.toml")],
        };
        for mode in [Mode::Plan, Mode::Ask, Mode::Auto] {
            assert!(matches!(p.check(&w, mode), Verdict::Refuse(_)), "{mode:?}");
        }
        assert_eq!(p.check(&w, Mode::Full), Verdict::Pass);
        let elsewhere = Access::Write {
            paths: vec![home.parent().unwrap().join("project/a.rs")],
        };
        assert_eq!(p.check(&elsewhere, Mode::Auto), Verdict::Pass);
        // A sibling whose name merely starts the same is not inside.
        let sibling = Access::Write {
            paths: vec![home.parent().unwrap().join(".ferrite-other/x")],
        };
        assert_eq!(p.check(&sibling, Mode::Auto), Verdict::Pass);
    }

    #[test]
    fn reads_under_home_ask_except_the_spill_directory() {
        let (_d, p, home) = setup();
        let creds = Access::Read {
            paths: vec![home.join("credentials.json")],
        };
        assert!(matches!(p.check(&creds, Mode::Auto), Verdict::Ask(_)));
        let spilled = Access::Read {
            paths: vec![home.join("sessions/s1/tool-output/x.out")],
        };
        assert_eq!(p.check(&spilled, Mode::Auto), Verdict::Pass);
        let other_session = Access::Read {
            paths: vec![home.join("sessions/s2/tool-output/x.out")],
        };
        assert!(matches!(
            p.check(&other_session, Mode::Ask),
            Verdict::Ask(_)
        ));
    }

    #[test]
    fn extension_files_ask_and_the_users_own_config_is_refused() {
        let (d, p, home) = setup();
        let root = home.parent().unwrap().to_path_buf();
        let ws = root.join("ws");
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        std::fs::create_dir_all(ws.join("scripts")).unwrap();
        let p = p.with_user_home(Some(&root)).with_workspace(
            std::slice::from_ref(&ws),
            &ws,
            &[ws.join("scripts/fmt.sh")],
        );
        let write = |path: PathBuf| Access::Write { paths: vec![path] };
        for path in [
            ".claude/hooks/h.sh",
            ".claude/settings.json",
            ".claude/settings.local.json",
            ".claude/agents/a.md",
            ".claude/skills/s/SKILL.md",
            ".ferrite/config.toml",
            "pkg/.claude/hooks/x.sh",
            "scripts/fmt.sh",
        ] {
            for mode in [Mode::Plan, Mode::Ask, Mode::Auto] {
                assert!(
                    matches!(p.check(&write(ws.join(path)), mode), Verdict::Ask(_)),
                    "{path}"
                );
            }
            assert_eq!(p.check(&write(ws.join(path)), Mode::Full), Verdict::Pass);
        }
        for path in [".claude/notes.md", "src/settings.json", "claude/hooks/x"] {
            assert_eq!(
                p.check(&write(ws.join(path)), Mode::Auto),
                Verdict::Pass,
                "{path}"
            );
        }
        for path in [
            ".claude/settings.json",
            ".claude/agents/helper.md",
            ".agents/skills/x",
        ] {
            assert!(matches!(
                p.check(&write(root.join(path)), Mode::Auto),
                Verdict::Refuse(_)
            ));
        }
        // The sandbox keeps the user's folders even before they exist.
        assert!(p.sandbox_paths().contains(&root.join(".claude")));
        drop(d);
    }

    #[test]
    fn git_files_that_decide_what_runs_ask_and_the_sandbox_keeps_them() {
        let (d, p, home) = setup();
        let ws = home.parent().unwrap().join("ws");
        std::fs::create_dir_all(ws.join(".git/refs")).unwrap();
        std::fs::write(ws.join(".git/config"), "").unwrap();
        std::fs::create_dir_all(ws.join("src")).unwrap();
        let p = p.with_workspace(std::slice::from_ref(&ws), &ws.join("src"), &[]);
        let write = |path: PathBuf| Access::Write { paths: vec![path] };
        for path in [
            ".git/hooks/pre-commit",
            ".git/config",
            "vendor/x/.git/config",
        ] {
            for mode in [Mode::Plan, Mode::Ask, Mode::Auto] {
                match p.check(&write(ws.join(path)), mode) {
                    Verdict::Ask(why) => assert!(why.contains("git runs"), "{why}"),
                    other => panic!("{path} {mode:?}: {other:?}"),
                }
            }
            assert_eq!(p.check(&write(ws.join(path)), Mode::Full), Verdict::Pass);
        }
        for path in [".git/refs/heads/main", ".gitignore", "src/config"] {
            assert_eq!(p.check(&write(ws.join(path)), Mode::Auto), Verdict::Pass);
        }
        let (guarded, dot_gits) = p.git_guarded();
        // The hooks folder although git made none; the config that exists.
        assert!(guarded.contains(&ws.join(".git/hooks")), "{guarded:?}");
        assert!(guarded.contains(&ws.join(".git/config")), "{guarded:?}");
        assert_eq!(dot_gits, [ws.join(".git")]);
        assert!(!p.sandbox_paths().contains(&ws.join(".git/config")));
        drop(d);
    }
}
