//! The shell commands run with: bash, because the permission rules read a command with bash's
//! grammar (tree-sitter-bash), and a rule's decision holds only for the shell whose grammar it
//! was made with. `sh` is dash on Debian and Ubuntu, and dash reads `git status &>/dev/null curl
//! …` as two commands where bash reads one (issue 28). Where there is no bash, commands run with
//! `sh` and core treats every command as not understood (`ferrite_core::exec::Shell::Sh`).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use ferrite_core::exec::Shell;

/// The program that runs every command, found once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandShell {
    pub path: PathBuf,
    pub kind: Shell,
}

/// Where bash is looked for after `PATH`.
#[cfg(unix)]
const BASH_FALLBACKS: &[&str] = &["/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash"];
/// Git for Windows' bash: Windows itself has none (System32's `bash.exe` starts WSL, a different
/// machine with different files, and is never used).
#[cfg(windows)]
const BASH_FALLBACKS: &[&str] = &[
    r"C:\Program Files\Git\bin\bash.exe",
    r"C:\Program Files (x86)\Git\bin\bash.exe",
];

#[cfg(unix)]
const BASH: &str = "bash";
#[cfg(windows)]
const BASH: &str = "bash.exe";

/// What runs commands where there is no bash.
#[cfg(unix)]
const SH: &str = "/bin/sh";
#[cfg(windows)]
const SH: &str = "sh.exe";

impl CommandShell {
    /// bash from `path_var` (the agent's `PATH`: only its absolute entries, so a relative entry
    /// such as `.` cannot make a workspace's `./bash` the shell), else from the usual places;
    /// `/bin/sh` when there is none.
    pub fn find(path_var: Option<&OsStr>) -> CommandShell {
        Self::find_in(path_var, BASH_FALLBACKS)
    }

    fn find_in(path_var: Option<&OsStr>, fallbacks: &[&str]) -> CommandShell {
        let from_path = path_var
            .into_iter()
            .flat_map(std::env::split_paths)
            .filter(|dir| dir.is_absolute() && !is_wsl_launcher_dir(dir))
            .map(|dir| dir.join(BASH));
        let fallbacks = fallbacks.iter().map(PathBuf::from);
        match from_path.chain(fallbacks).find(|p| is_executable(p)) {
            Some(path) => CommandShell {
                path,
                kind: Shell::Bash,
            },
            None => CommandShell {
                path: PathBuf::from(SH),
                kind: Shell::Sh,
            },
        }
    }

    /// The `PATH` commands get: the agent's without its empty and relative entries (an empty
    /// entry means the working directory to a shell, so `PATH=:/usr/bin` would make the
    /// repository's `./ls` the `ls` a rule allowed). None when no entry is left: the shell then
    /// uses its own default, never the working directory.
    pub fn command_search_path(path_var: &OsStr) -> Option<std::ffi::OsString> {
        let absolute: Vec<PathBuf> = std::env::split_paths(path_var)
            .filter(|dir| dir.is_absolute())
            .collect();
        if absolute.is_empty() {
            return None;
        }
        std::env::join_paths(absolute).ok()
    }

    /// The shell's own start-up variables, removed from every command's environment: each would
    /// run or change code that is not on the command line (`BASH_ENV` and `ENV` name a file to
    /// source, `SHELLOPTS`/`BASHOPTS` turn on options such as `expand_aliases`, `BASH_FUNC_*`
    /// define functions that shadow programs).
    pub fn is_startup_variable(name: &str) -> bool {
        matches!(name, "BASH_ENV" | "ENV" | "SHELLOPTS" | "BASHOPTS")
            || name.starts_with("BASH_FUNC_")
    }
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Windows decides executability by extension, and `bash.exe` has it.
#[cfg(windows)]
fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// Windows' own directory, whose `bash.exe` is the WSL launcher.
fn is_wsl_launcher_dir(dir: &Path) -> bool {
    cfg!(windows)
        && dir
            .file_name()
            .and_then(OsStr::to_str)
            .is_some_and(|name| name.eq_ignore_ascii_case("system32"))
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;

    #[test]
    fn bash_is_found_on_path_and_relative_entries_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let planted = dir.path().join("bash");
        std::fs::write(&planted, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o755)).unwrap();
        // An absolute PATH entry is used.
        let found = CommandShell::find(Some(dir.path().as_os_str()));
        assert_eq!(found.path, planted);
        assert_eq!(found.kind, Shell::Bash);
        // A relative one never is, even when it names the same directory.
        let cwd = std::env::current_dir().unwrap();
        let relative = pathdiff(dir.path(), &cwd);
        let found = CommandShell::find(Some(relative.as_os_str()));
        assert_ne!(found.path, planted);
    }

    #[test]
    fn commands_search_only_absolute_path_entries() {
        let search = |p: &str| CommandShell::command_search_path(OsStr::new(p));
        assert_eq!(search(":/usr/bin::/bin:."), Some("/usr/bin:/bin".into()));
        assert_eq!(search("bin:/opt/x/bin"), Some("/opt/x/bin".into()));
        assert_eq!(search(""), None);
        assert_eq!(search(":."), None);
    }

    #[test]
    fn without_bash_commands_run_with_sh() {
        let empty = tempfile::tempdir().unwrap();
        let found = CommandShell::find_in(Some(empty.path().as_os_str()), &[]);
        assert_eq!(
            found,
            CommandShell {
                path: PathBuf::from("/bin/sh"),
                kind: Shell::Sh
            }
        );
        // With no bash on PATH, the usual places are looked at.
        let found = CommandShell::find(Some(empty.path().as_os_str()));
        assert_eq!(found.kind, Shell::Bash);
        assert!(BASH_FALLBACKS.iter().any(|p| Path::new(p) == found.path));
    }

    #[test]
    fn start_up_variables_are_named() {
        for name in [
            "BASH_ENV",
            "ENV",
            "SHELLOPTS",
            "BASHOPTS",
            "BASH_FUNC_git%%",
        ] {
            assert!(CommandShell::is_startup_variable(name), "{name}");
        }
        for name in ["PATH", "HOME", "BASH", "ENVIRONMENT"] {
            assert!(!CommandShell::is_startup_variable(name), "{name}");
        }
    }

    /// `dir` written relative to `base` (`../../tmp/x`).
    fn pathdiff(dir: &Path, base: &Path) -> PathBuf {
        let mut rel = PathBuf::new();
        for _ in base.components().skip(1) {
            rel.push("..");
        }
        rel.join(dir.strip_prefix("/").unwrap())
    }
}
