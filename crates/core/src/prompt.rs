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

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Instructions are sent with every request: this bounds what they cost.
const MAX_INSTRUCTIONS_BYTES: usize = 64 * 1024;

pub fn system_prompt(home: &Path, cwd: &Path) -> String {
    let mut s = String::from(
        "You are Ferrite, a coding agent working inside the user's editor. You help with software \
         engineering tasks in the workspace below: read code before changing it, make focused \
         changes, run the project's checks when you can, and say briefly what you did. Use the \
         tools you are given; keep the plan up to date with update_plan for multi-step work.\n\n",
    );
    s.push_str(&format!("Workspace: {}\n", cwd.display()));
    s.push_str(&format!(
        "Platform: {} {}\n",
        std::env::consts::OS,
        std::env::consts::ARCH
    ));
    s.push_str(&format!("Date: {}\n", &crate::time::now_rfc3339()[..10]));
    let mut budget = MAX_INSTRUCTIONS_BYTES;
    let personal = home.join("AGENTS.md");
    let files = std::iter::once(personal)
        .filter(|p| p.is_file())
        .chain(chain(cwd).into_iter().filter_map(|d| instruction_file(&d)));
    for path in files {
        if budget == 0 {
            s.push_str(&format!(
                "\n(Instructions in {} were not included: the instructions reached their size \
                 limit. Read the file if it matters.)\n",
                path.display()
            ));
            continue;
        }
        if let Some(section) = section(&path, &mut budget) {
            s.push_str(&section);
        }
    }
    s
}

/// The directories from the repository root down to `cwd`, root first.
fn chain(cwd: &Path) -> Vec<PathBuf> {
    let root = cwd
        .ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(cwd);
    let mut dirs: Vec<PathBuf> = cwd
        .ancestors()
        .take_while(|d| d.starts_with(root))
        .map(Path::to_path_buf)
        .collect();
    dirs.reverse();
    dirs
}

/// `dir/AGENTS.md`, else `dir/CLAUDE.md`.
fn instruction_file(dir: &Path) -> Option<PathBuf> {
    ["AGENTS.md", "CLAUDE.md"]
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
}

/// The file under a heading, cut to what is left of `budget`.
fn section(path: &Path, budget: &mut usize) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
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
        (text, false)
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
                let Some(file) = instruction_file(d) else {
                    continue;
                };
                if !self.seen.insert(file.clone()) {
                    continue;
                }
                if let Some(s) = section(&file, &mut budget) {
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

    #[test]
    fn agents_md_wins_over_claude_md() {
        let home = tempfile::tempdir().unwrap();
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("CLAUDE.md"), "claude rules").unwrap();
        assert!(system_prompt(home.path(), d.path()).contains("claude rules"));
        std::fs::write(d.path().join("AGENTS.md"), "agents rules").unwrap();
        let p = system_prompt(home.path(), d.path());
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
        let p = system_prompt(home.path(), &root.join("pkgs/app/src"));
        let at = |s: &str| p.find(s).unwrap_or_else(|| panic!("{s} missing: {p}"));
        assert!(at("PERSONAL") < at("ROOT") && at("ROOT") < at("PKGS") && at("PKGS") < at("APP"));
        assert!(!p.contains("ABOVE"));
        assert!(p.contains(&format!(
            "## Instructions from {}",
            root.join("pkgs/CLAUDE.md").display()
        )));
    }

    #[test]
    fn the_total_is_capped_with_a_note() {
        let home = tempfile::tempdir().unwrap();
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("AGENTS.md"), "x".repeat(100_000)).unwrap();
        let p = system_prompt(home.path(), d.path());
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
        let file = root.join("pkgs/lib/src/a.rs");
        let text = nested
            .for_paths(std::slice::from_ref(&file), &root, &roots)
            .unwrap();
        assert!(
            text.contains("LIB RULES") && !text.contains("ROOT"),
            "{text}"
        );
        assert_eq!(nested.for_paths(&[file], &root, &roots), None);
        // Outside the workspace roots nothing is added.
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("AGENTS.md"), "OTHER").unwrap();
        assert_eq!(
            nested.for_paths(&[other.path().join("f")], &root, &roots),
            None
        );
    }
}
