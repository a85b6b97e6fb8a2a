//! The system prompt: who the agent is, where it works, and the instructions people wrote for
//! agents.
//!
//! Instructions come from `FERRITE_HOME/AGENTS.md` (personal), then from every directory from the
//! repository root (the nearest ancestor of the cwd holding `.git`, else the cwd) down to the cwd:
//! each directory's `AGENTS.md`, else its `CLAUDE.md`, under a heading naming the file. Deeper
//! files come later, so the most specific instructions are read last. The total is capped; a cut
//! says where the rest is.
//!
//! In a monorepo, packages below the cwd have their own `AGENTS.md`: when a tool reads or changes a
//! file there, [`Nested::for_paths`] adds that file to the tool's result, once per session.
//!
//! Every file is read through [`OwnFiles`]: a repository's `AGENTS.md` that links out of the
//! repository, into FERRITE_HOME or to a file a deny rule covers, or that is a FIFO, is not read
//! (a note says so instead).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::own_files::{OwnFiles, Skip};
// Kept in the session log (`system_prompt` entries), so the log's crate owns the type.
pub use ferrite_store::log::{ClientPrompt, ClientPromptMode};

/// Instructions are sent with every request: this bounds what they cost.
const MAX_INSTRUCTIONS_BYTES: usize = 64 * 1024;

/// Who the agent is and how it works: what a client's `override` system prompt replaces.
const DEFAULT_INSTRUCTIONS: &str = "You are Ferrite, a coding agent working inside the user's \
editor. You help with software engineering tasks in the workspace below: read code before \
changing it, make focused changes, run the project's checks when you can, and say briefly what \
you did. Use the tools you are given; keep the plan up to date with update_plan for multi-step \
work.";

pub fn system_prompt(own: &OwnFiles, cwd: &Path, client: Option<&ClientPrompt>) -> String {
    let mut s = match client {
        Some(ClientPrompt {
            mode: ClientPromptMode::Override,
            text,
        }) => text.clone(),
        Some(ClientPrompt {
            mode: ClientPromptMode::Append,
            ..
        })
        | None => DEFAULT_INSTRUCTIONS.to_owned(),
    };
    s.push_str("\n\n");
    // Said once here rather than in every tool that takes a path.
    s.push_str(&format!(
        "Workspace: {} (relative paths start here)\n",
        cwd.display()
    ));
    s.push_str(&format!(
        "Platform: {} {}\n",
        std::env::consts::OS,
        std::env::consts::ARCH
    ));
    s.push_str(&format!("Date: {}\n", &crate::time::now_rfc3339()[..10]));
    let mut budget = MAX_INSTRUCTIONS_BYTES;
    // The personal file's area is itself: a link out of it is not followed.
    let personal = own.home().join("AGENTS.md");
    let dirs = chain(cwd);
    let root = dirs.first().cloned().unwrap_or_else(|| cwd.to_owned());
    let files = std::iter::once((personal.clone(), personal))
        .chain(dirs.iter().map(|d| (instruction_file(d), root.clone())));
    for (path, area) in files {
        if budget == 0 {
            if std::fs::symlink_metadata(&path).is_ok() {
                s.push_str(&format!(
                    "\n(Instructions in {} were not included: the instructions reached their \
                     size limit. Read the file if it matters.)\n",
                    path.display()
                ));
            }
            continue;
        }
        if let Some(section) = section(own, &path, &area, &mut budget) {
            s.push_str(&section);
        }
    }
    if let Some(ClientPrompt {
        mode: ClientPromptMode::Append,
        text,
    }) = client
    {
        s.push_str("\n# Instructions from the editor\n\n");
        s.push_str(text);
        s.push('\n');
    }
    s
}

/// The directories from the repository root down to `cwd`, root first (policy's, where the
/// protected files need it too).
pub(crate) use ferrite_policy::paths::chain;

/// `dir/AGENTS.md` when there is one (whatever it is), else `dir/CLAUDE.md`.
fn instruction_file(dir: &Path) -> PathBuf {
    let agents = dir.join("AGENTS.md");
    if std::fs::symlink_metadata(&agents).is_ok() {
        agents
    } else {
        dir.join("CLAUDE.md")
    }
}

/// The file under a heading, cut to what is left of `budget`; a note when it may not be read;
/// `None` when there is no file (or it is empty).
fn section(own: &OwnFiles, path: &Path, area: &Path, budget: &mut usize) -> Option<String> {
    let read = own.read(path, area, crate::own_files::MAX_BYTES);
    let (text, file_cut) = match read {
        Ok(t) => (t.text, t.cut),
        Err(Skip::Missing) => return None,
        Err(Skip::Refused(why)) => {
            tracing::warn!("instructions skipped: {why}");
            return Some(format!(
                "\n(Instructions in {} were not read: Ferrite reads an instruction file only \
                 when it is a regular file that stays where it was found (its repository, or \
                 FERRITE_HOME for the personal one) and no deny rule covers it.)\n",
                path.display()
            ));
        }
    };
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let (shown, cut) = if text.len() > *budget {
        let mut end = *budget;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        (&text[..end], true)
    } else {
        (text, file_cut)
    };
    *budget -= shown.len();
    let mut out = format!("\n## Instructions from {}\n\n{shown}\n", path.display());
    if cut {
        out.push_str(&format!(
            "\n(Cut here: the instructions reached their size limit. The rest is in {}.)\n",
            path.display()
        ));
    }
    Some(out)
}

/// The instruction files of directories below the ones the system prompt covers, added to a
/// tool's result the first time a tool touches a file under them.
#[derive(Debug, Default)]
pub struct Nested {
    seen: HashSet<PathBuf>,
}

impl Nested {
    /// Instructions not yet in context that apply to `paths` (files a tool read or changed),
    /// outermost first, as text to append to the tool's result. Only directories inside
    /// `roots` and below the repository root are considered; the cwd's chain is already in the
    /// system prompt.
    pub fn for_paths(
        &mut self,
        own: &OwnFiles,
        paths: &[PathBuf],
        cwd: &Path,
        roots: &[PathBuf],
    ) -> Option<String> {
        let in_prompt: HashSet<PathBuf> = chain(cwd).into_iter().collect();
        let mut budget = MAX_INSTRUCTIONS_BYTES / 4;
        let mut out = String::new();
        for path in paths {
            let dir = if path.is_dir() {
                path.as_path()
            } else {
                match path.parent() {
                    Some(d) => d,
                    None => continue,
                }
            };
            let Some(root) = roots.iter().find(|r| dir.starts_with(r)) else {
                continue;
            };
            let mut dirs: Vec<&Path> = dir
                .ancestors()
                .take_while(|d| d.starts_with(root) && !in_prompt.contains(*d))
                .collect();
            dirs.reverse();
            for d in dirs {
                let file = instruction_file(d);
                if std::fs::symlink_metadata(&file).is_err() || !self.seen.insert(file.clone()) {
                    continue;
                }
                if let Some(s) = section(own, &file, root, &mut budget) {
                    out.push_str(&s);
                }
            }
        }
        (!out.is_empty()).then(|| {
            format!(
                "\n\n(These instructions apply to files under the directories they are in; follow \
                 them there.){out}"
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(p: &Path) -> PathBuf {
        std::fs::canonicalize(p).unwrap()
    }

    fn own(home: &Path) -> OwnFiles {
        OwnFiles::new(home, &[], Ok(Default::default()))
    }

    #[test]
    fn agents_md_wins_over_claude_md() {
        let home = tempfile::tempdir().unwrap();
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("CLAUDE.md"), "claude rules").unwrap();
        assert!(system_prompt(&own(home.path()), d.path(), None).contains("claude rules"));
        std::fs::write(d.path().join("AGENTS.md"), "agents rules").unwrap();
        let p = system_prompt(&own(home.path()), d.path(), None);
        assert!(p.contains("agents rules") && !p.contains("claude rules"));
    }

    #[test]
    fn personal_then_repository_root_down_to_cwd() {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        let root = canon(repo.path());
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("pkgs/app/src")).unwrap();
        std::fs::write(home.path().join("AGENTS.md"), "PERSONAL").unwrap();
        std::fs::write(root.join("AGENTS.md"), "ROOT").unwrap();
        std::fs::write(root.join("pkgs/CLAUDE.md"), "PKGS").unwrap();
        std::fs::write(root.join("pkgs/app/AGENTS.md"), "APP").unwrap();
        // Above the repository: not included.
        std::fs::write(root.parent().unwrap().join("AGENTS.md"), "ABOVE").ok();
        let p = system_prompt(&own(home.path()), &root.join("pkgs/app/src"), None);
        let at = |s: &str| p.find(s).unwrap_or_else(|| panic!("{s} missing: {p}"));
        assert!(at("PERSONAL") < at("ROOT") && at("ROOT") < at("PKGS") && at("PKGS") < at("APP"));
        assert!(!p.contains("ABOVE"));
        assert!(p.contains(&format!(
            "## Instructions from {}",
            root.join("pkgs/CLAUDE.md").display()
        )));
    }

    #[test]
    fn a_client_prompt_is_added_last_or_replaces_ferrite_s_own_instructions() {
        let home = tempfile::tempdir().unwrap();
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("AGENTS.md"), "agents rules").unwrap();
        let client = |mode, text: &str| ClientPrompt {
            mode,
            text: text.into(),
        };
        let appended = client(ClientPromptMode::Append, "ANSWER IN FRENCH");
        let p = system_prompt(&own(home.path()), d.path(), Some(&appended));
        assert!(p.starts_with(DEFAULT_INSTRUCTIONS), "{p}");
        assert!(p.find("agents rules") < p.find("ANSWER IN FRENCH"), "{p}");
        let replaced = client(ClientPromptMode::Override, "You are a reviewer.");
        let p = system_prompt(&own(home.path()), d.path(), Some(&replaced));
        assert!(p.starts_with("You are a reviewer.\n\nWorkspace: "), "{p}");
        assert!(
            p.contains("agents rules") && !p.contains("You are Ferrite"),
            "{p}"
        );
    }

    #[test]
    fn the_total_is_capped_with_a_note() {
        let home = tempfile::tempdir().unwrap();
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("AGENTS.md"), "x".repeat(100_000)).unwrap();
        let p = system_prompt(&own(home.path()), d.path(), None);
        assert!(p.len() < 70_000);
        assert!(p.contains("reached their size limit"));
    }

    #[test]
    fn nested_instructions_come_once_when_a_file_below_is_touched() {
        let repo = tempfile::tempdir().unwrap();
        let root = canon(repo.path());
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("pkgs/lib/src")).unwrap();
        std::fs::write(root.join("AGENTS.md"), "ROOT").unwrap();
        std::fs::write(root.join("pkgs/lib/AGENTS.md"), "LIB RULES").unwrap();
        std::fs::write(root.join("pkgs/lib/src/a.rs"), "").unwrap();
        let mut nested = Nested::default();
        let roots = [root.clone()];
        let home = tempfile::tempdir().unwrap();
        let own = own(home.path());
        let file = root.join("pkgs/lib/src/a.rs");
        let text = nested
            .for_paths(&own, std::slice::from_ref(&file), &root, &roots)
            .unwrap();
        assert!(
            text.contains("LIB RULES") && !text.contains("ROOT"),
            "{text}"
        );
        assert_eq!(nested.for_paths(&own, &[file], &root, &roots), None);
        // Outside the workspace roots nothing is added.
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("AGENTS.md"), "OTHER").unwrap();
        assert_eq!(
            nested.for_paths(&own, &[other.path().join("f")], &root, &roots),
            None
        );
    }
}
