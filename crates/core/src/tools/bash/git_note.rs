//! Why a git command failed in the sandbox, for the model. The sandbox keeps the git files that
//! decide what git runs (`.git/hooks`, `.git/config`; `docs/sandbox.md`, "Protected paths"), and
//! Landlock can only keep a file by freezing every folder on the way to it: nothing new can be
//! made directly in `.git` (`index.lock`, `config.lock`, `FETCH_HEAD`) nor at the top of the
//! worktree. git then says "Permission denied" about a lock file, which reads like a broken
//! repository; this note says what it is and what to do instead.

use crate::exec::{CommandOutput, Exit, Sandbox};

/// The note to add to a command's result, when its failure looks like the sandbox keeping
/// `.git`: a non-zero exit in a writing sandbox, and git's words for a write refused in `.git`.
pub(super) fn note(out: &CommandOutput, sandbox: &Sandbox) -> Option<&'static str> {
    let Sandbox::Restricted { writable, .. } = sandbox else {
        return None;
    };
    let failed = matches!(out.exit, Exit::Code(c) if c != 0);
    let text = &out.excerpt;
    let refused = text.contains("Permission denied") || text.contains("could not write index");
    let in_git = text.contains(".git/") || text.contains("could not lock config file");
    (failed && !writable.is_empty() && refused && in_git).then_some(NOTE)
}

const NOTE: &str = "[The command sandbox keeps the repository's `.git` hooks and config, and \
     with them everything directly in `.git`, unwritable below `full` mode: they decide what git \
     runs, and the user's own next `git commit` would run what a command put there, outside \
     every sandbox. So git commands that write `.git` (`git add`, `git commit`, `git checkout`, \
     `git config`, `git remote add`, `git fetch`, `git push -u`) fail here. Do not work around \
     it: ask the user to run the git command in their terminal, or to switch to `full` mode.]";

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
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
            protected: vec![],
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
            assert_eq!(note(&output(128, text), &auto), Some(NOTE), "{text}");
        }
        // Not a refusal in `.git`, not a failure, no sandbox, or `plan` (read-only anyway).
        let refused = output(
            1,
            "fatal: Unable to create '/w/.git/index.lock': Permission denied",
        );
        assert_eq!(note(&output(1, "src/a.rs: Permission denied"), &auto), None);
        assert_eq!(note(&output(0, refused.excerpt.as_str()), &auto), None);
        assert_eq!(note(&refused, &Sandbox::None), None);
        assert_eq!(note(&refused, &sandbox(&[])), None);
    }
}
