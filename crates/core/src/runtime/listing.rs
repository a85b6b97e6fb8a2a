//! Which sessions `session/list` and `ferrite sessions list --cwd` show for a folder: its own,
//! and in a git repository those of the same subdirectory in every worktree of it, each marked
//! with its worktree (`crate::worktrees`).

use std::path::Path;

use crate::log::SessionSummary;
use crate::worktrees::{Repo, Worktree};

/// A listed session and, for a folder in a repository, the worktree it belongs to.
#[derive(Debug, Clone)]
pub struct Listed {
    pub summary: SessionSummary,
    pub worktree: Option<Worktree>,
}

/// The sessions of `all` (newest first) that belong to `cwd` (every one without it), leaving
/// out subagents' sessions: each is reached from its parent's card.
pub fn sessions_in(all: Vec<SessionSummary>, cwd: Option<&Path>) -> Vec<Listed> {
    let repo = cwd.and_then(Repo::of);
    all.into_iter()
        .filter(|s| !s.subagent)
        .filter_map(|s| {
            let Some(cwd) = cwd else {
                return Some(Listed {
                    summary: s,
                    worktree: None,
                });
            };
            let worktree = repo.as_ref().and_then(|r| r.worktree_of(&s.cwd)).cloned();
            (s.cwd == cwd || worktree.is_some()).then_some(Listed {
                summary: s,
                worktree,
            })
        })
        .collect()
}
