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

use std::path::{Path, PathBuf};

use crate::access::Access;
use crate::modes::Mode;

/// What the protection of `FERRITE_HOME` says about one call, before the policy's own decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Not about Ferrite's files: the policy decides alone.
    Pass,
    /// Reads Ferrite's files: the user must be asked even where the policy would allow.
    Ask,
    Refuse(String),
}

/// Ferrite's home and the one directory under it that tools may read freely.
#[derive(Debug, Clone)]
pub struct Protected {
    home: PathBuf,
    spill_dir: PathBuf,
}

impl Protected {
    /// `home` and `spill_dir` are canonicalized as far as they exist, like the paths tools report.
    pub fn new(home: &Path, spill_dir: &Path) -> Self {
        let canon = |p: &Path| crate::paths::resolve(Path::new("/"), &p.to_string_lossy());
        Self {
            home: canon(home),
            spill_dir: canon(spill_dir),
        }
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
            Access::Read { paths } if paths.iter().any(|p| self.hides(p)) => Verdict::Ask,
            Access::None
            | Access::Read { .. }
            | Access::Write { .. }
            | Access::Execute { .. }
            | Access::Fetch { .. }
            | Access::Mcp => Verdict::Pass,
        }
    }
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
        assert_eq!(p.check(&creds, Mode::Auto), Verdict::Ask);
        let spilled = Access::Read {
            paths: vec![home.join("sessions/s1/tool-output/x.out")],
        };
        assert_eq!(p.check(&spilled, Mode::Auto), Verdict::Pass);
        let other_session = Access::Read {
            paths: vec![home.join("sessions/s2/tool-output/x.out")],
        };
        assert_eq!(p.check(&other_session, Mode::Ask), Verdict::Ask);
    }
}
