//! `task` with `isolation: "worktree"`: the subagent works in a fresh git worktree of the
//! session's repository (detached at `HEAD`), so its edits never touch the parent's files.
//! The worktree is made with `git worktree add` through the command port, beside the main
//! worktree in `<repo>.worktrees/task-<n>`. Ferrite's own git commands run in the command
//! sandbox of the call's mode (network off, writes only in the repository, its `.git` and
//! `<repo>.worktrees`): git runs what the repository's `.git` names (hooks such as
//! `post-checkout`, `core.fsmonitor`, filters), and the model may have written those files. When the subagent ends, a worktree without changes (nothing in
//! `git status`, `HEAD` where it started) is removed; one with changes is kept and named in the
//! result (`docs/sessions.md`, "Worktrees").

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::exec::{CommandRunner, CommandSpec, Exit, Sandbox};
use crate::modes::Mode;
use crate::worktrees::Repo;

use super::super::env::CallEnv;

/// The `isolation` value that asks for a worktree.
pub(super) const WORKTREE: &str = "worktree";

/// A worktree made for one subagent.
pub(super) struct Isolated {
    /// The worktree's top folder.
    pub root: PathBuf,
    /// The subagent's cwd: the session's folder, in the worktree.
    pub cwd: PathBuf,
    /// The commit it started at.
    start: String,
    /// The parent session's worktree, where `git worktree` runs.
    repo: PathBuf,
    runner: Arc<dyn CommandRunner>,
    /// What Ferrite's git commands may do (see the module's comment).
    sandbox: Sandbox,
    spill_dir: PathBuf,
}

/// What became of the worktree when its subagent ended.
pub(super) enum WorktreeEnd {
    Removed,
    /// It has changes: kept, for the user (and the parent) to look at.
    Kept(PathBuf),
    /// Whether it has changes could not be found out (why, in words): kept, to lose nothing.
    Unsure(PathBuf, String),
}

impl Isolated {
    /// Makes the worktree for a call running in `mode`, or says why it cannot be made (for
    /// the model).
    pub async fn create(env: &CallEnv, tag: &str, mode: Mode) -> Result<Isolated, String> {
        if mode == Mode::Plan {
            return Err("a worktree cannot be made in plan mode, where nothing is written".into());
        }
        let repo = Repo::of(&env.cwd).ok_or_else(|| {
            format!(
                "`isolation: \"worktree\"` needs a git repository; {} is not in one.",
                env.cwd.display()
            )
        })?;
        let runner = env
            .base
            .runner
            .as_ref()
            .map(|t| t.inner.clone())
            .ok_or("commands are unavailable, so no worktree can be made")?;
        let main = repo
            .worktrees
            .first()
            .map_or(repo.current.clone(), |w| w.root.clone());
        let name = main
            .file_name()
            .map_or("repo".into(), |n| n.to_string_lossy().into_owned());
        let parent = main
            .parent()
            .unwrap_or(&main)
            .join(format!("{name}.worktrees"));
        // Made here: the sandbox can only let git write in a folder that exists. The same for
        // `.git/worktrees`: `.git` holds files the sandbox keeps (hooks, config), so nothing
        // new can be made directly in it (`docs/sandbox.md`, "Protected paths").
        let admin = main.join(".git/worktrees");
        let own_dirs = [Some(&parent), main.join(".git").is_dir().then_some(&admin)];
        for dir in own_dirs.into_iter().flatten() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let sandbox = match mode {
            Mode::Full => Sandbox::None,
            _ => Sandbox::for_mode(
                Mode::Auto,
                &[repo.current.clone(), main.join(".git"), parent.clone()],
                (&env.home, &env.protected.sandbox_paths()),
                &env.base.deny_read,
                false,
            ),
        };
        let root = free_path(&parent, tag);
        let mut me = Isolated {
            cwd: if repo.subdir.as_os_str().is_empty() {
                root.clone()
            } else {
                root.join(&repo.subdir)
            },
            root,
            start: String::new(),
            repo: repo.current.clone(),
            runner,
            sandbox,
            spill_dir: env.base.spill_dir.clone(),
        };
        let add = format!(
            "git worktree add --detach {} HEAD && git -C {} rev-parse HEAD",
            quote(&me.root),
            quote(&me.root)
        );
        let out = me.git(&repo.current, &add).await?;
        me.start = out.lines().last().unwrap_or_default().trim().to_owned();
        if !me.cwd.is_dir() {
            std::fs::create_dir_all(&me.cwd).map_err(|e| e.to_string())?;
        }
        Ok(me)
    }

    /// Removes the worktree when it has no changes; keeps it otherwise (or when unsure).
    pub async fn finish(&self) -> WorktreeEnd {
        let unsure = |why: String| {
            tracing::warn!(worktree = %self.root.display(), reason = %why, "kept a subagent's worktree: could not tell whether it has changes");
            WorktreeEnd::Unsure(self.root.clone(), why)
        };
        // The status, then the commit it is at: the last line.
        let state = match self
            .git(&self.root, "git status --porcelain && git rev-parse HEAD")
            .await
        {
            Ok(out) => out,
            Err(why) => return unsure(why),
        };
        let mut lines: Vec<&str> = state.lines().filter(|l| !l.trim().is_empty()).collect();
        let head = lines.pop().unwrap_or_default().trim();
        if !lines.is_empty() || head != self.start {
            return WorktreeEnd::Kept(self.root.clone());
        }
        let remove = format!(
            "git -C {} worktree remove {}",
            quote(&self.repo),
            quote(&self.root)
        );
        if let Err(why) = self.git(&self.root, &remove).await {
            return unsure(why);
        }
        // The `<repo>.worktrees` folder goes when it held only this one.
        if let Some(p) = self.root.parent() {
            let _ = std::fs::remove_dir(p);
        }
        WorktreeEnd::Removed
    }

    /// Runs `script` in `dir`; its output, or its failure as a sentence.
    async fn git(&self, dir: &Path, script: &str) -> Result<String, String> {
        let spec = CommandSpec {
            command: script.to_owned(),
            cwd: dir.to_path_buf(),
            timeout: Duration::from_secs(60),
            sandbox: self.sandbox.clone(),
            spill_dir: self.spill_dir.clone(),
            env_remove: vec![],
            max_bytes: 16 * 1024,
            max_lines: 200,
            stdin: None,
            // Standard output alone is read (the commit a `rev-parse` printed last): git's
            // progress lines on standard error could land after it when interleaved.
            separate_stderr: true,
            spill_budget: None,
        };
        let out = self
            .runner
            .run(spec, CancellationToken::new(), &|_| {})
            .await
            .map_err(|e| e.to_string())?;
        let _ = std::fs::remove_file(&out.spill_path);
        match out.exit {
            Exit::Code(0) => Ok(out.excerpt),
            _ => Err(format!(
                "git failed: {}",
                format!("{}\n{}", out.stderr.trim(), out.excerpt.trim()).trim()
            )),
        }
    }
}

/// `parent/task-<tag>`, or with a number added when that is taken.
fn free_path(parent: &Path, tag: &str) -> PathBuf {
    let tag: String = tag
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(40)
        .collect();
    let base = parent.join(format!("task-{tag}"));
    (1..)
        .map(|n| {
            if n == 1 {
                base.clone()
            } else {
                parent.join(format!("task-{tag}-{n}"))
            }
        })
        .find(|p| !p.exists())
        .unwrap_or(base)
}

/// `p` as one POSIX shell word.
fn quote(p: &Path) -> String {
    super::super::hooks::single_quoted(&p.to_string_lossy())
}
