//! Why a command failed in the sandbox, for the model, when the sandbox kept a protected path.
//! The sandbox keeps the files that decide what runs (`.git/hooks`, `.git/config`, `.claude`,
//! `.ferrite`; `docs/sandbox.md`, "Protected paths"), and Landlock can only keep a file by
//! freezing every folder on the way to it: nothing new can be made directly in `.git`
//! (`index.lock`, `config.lock`, `FETCH_HEAD`) nor at the top of the worktree. git then says
//! "Permission denied" about a lock file, which reads like a broken repository, and `touch
//! NOTES.md` at the top fails for no visible reason; the note says what it is and what to do.

use std::path::PathBuf;

use crate::exec::{CommandOutput, Exit, Sandbox};

/// The note to add to a command's result, when its failure looks like the sandbox keeping a
/// protected path: a non-zero exit in a writing sandbox and a refused write; about git when git
/// said it of `.git`, else naming the folders where nothing new can be made.
pub(super) fn note(out: &CommandOutput, sandbox: &Sandbox) -> Option<String> {
    let Sandbox::Restricted {
        writable,
        protected,
        ..
    } = sandbox
    else {
        return None;
    };
    let failed = matches!(out.exit, Exit::Code(c) if c != 0);
    let text = &out.excerpt;
    let refused = text.contains("Permission denied") || text.contains("could not write index");
    if !failed || writable.is_empty() || !refused {
        return None;
    }
    if text.contains(".git/") || text.contains("could not lock config file") {
        return Some(GIT.to_owned());
    }
    let frozen = frozen_folders(writable, protected);
    if frozen.is_empty() {
        return None;
    }
    let names: Vec<String> = frozen
        .iter()
        .take(6)
        .map(|f| format!("`{}`", f.display()))
        .collect();
    Some(format!(
        "[If that was a new, removed or renamed entry directly in {}: the command sandbox \
         keeps the files that decide what runs below them (`.git` hooks and config, `.claude`, \
         `.ferrite`), and so cannot let a command make, remove or rename anything directly in \
         those folders (what exists there can still be changed). Use the `write` tool for a new \
         file there, or ask the user to run the command in their terminal.]",
        names.join(", ")
    ))
}

/// The folders on the way from a writable root to a protected path below it (the root
/// included, the protected path not): nothing new can be made directly in them.
fn frozen_folders(writable: &[PathBuf], protected: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for kept in protected {
        let Some(root) = writable.iter().find(|w| kept.starts_with(w) && *w != kept) else {
            continue;
        };
        for folder in kept.ancestors().skip(1) {
            if !folder.starts_with(root) {
                break;
            }
            if !out.iter().any(|f| f == folder) {
                out.push(folder.to_path_buf());
            }
        }
    }
    out.sort();
    out
}

const GIT: &str = "[The command sandbox keeps the repository's `.git` hooks and config, and \
     with them everything directly in `.git`, unwritable below `full` mode: they decide what git \
     runs, and the user's own next `git commit` would run what a command put there, outside \
     every sandbox. So git commands that write `.git` (`git add`, `git commit`, `git checkout`, \
     `git config`, `git remote add`, `git fetch`, `git push -u`) fail here. Do not work around \
     it: ask the user to run the git command in their terminal, or to switch to `full` mode.]";

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn output(code: i32, text: &str) -> CommandOutput {
        CommandOutput {
            exit: Exit::Code(code),
            excerpt: text.to_owned(),
            truncated: false,
            total_bytes: text.len() as u64,
            total_lines: 1,
            spill_path: PathBuf::new(),
            duration: Duration::ZERO,
            stderr: String::new(),
        }
    }

    fn sandbox(writable: &[&str]) -> Sandbox {
        Sandbox::Restricted {
            writable: writable.iter().map(PathBuf::from).collect(),
            hidden: vec![],
            protected: vec![
                "/w/.git/hooks".into(),
                "/w/.git/config".into(),
                "/o/x".into(),
            ],
            network: false,
            unix_sockets: vec![],
        }
    }

    #[test]
    fn a_git_write_refused_in_dot_git_is_explained() {
        let auto = sandbox(&["/w"]);
        for text in [
            "fatal: Unable to create '/w/.git/index.lock': Permission denied",
            "error: could not lock config file .git/config: Permission denied",
            "bash: line 1: .git/hooks/pre-commit: Permission denied",
        ] {
            assert_eq!(
                note(&output(128, text), &auto).as_deref(),
                Some(GIT),
                "{text}"
            );
        }
        // Not a refusal in `.git`, not a failure, no sandbox, or `plan` (read-only anyway).
        let refused = output(
            1,
            "fatal: Unable to create '/w/.git/index.lock': Permission denied",
        );
        // Elsewhere: the folders where nothing new can be made are named.
        let frozen = note(
            &output(1, "touch: cannot touch 'NOTES.md': Permission denied"),
            &auto,
        );
        assert!(frozen.unwrap().contains("directly in `/w`, `/w/.git`:"));
        assert_eq!(
            note(
                &output(1, "x: Permission denied"),
                &sandbox(&["/elsewhere"])
            ),
            None
        );
        assert_eq!(note(&output(0, refused.excerpt.as_str()), &auto), None);
        assert_eq!(note(&refused, &Sandbox::None), None);
        assert_eq!(note(&refused, &sandbox(&[])), None);
    }
}
