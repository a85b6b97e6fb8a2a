//! What Ferrite knows about programs by name: which never run their arguments, which do (and
//! so get no "always allow"), and which are rare wrappers whose options are not modelled.

use super::program_name;
use super::wrappers::shell_grammar;

/// Programs that never run a command named in their arguments (what they do by themselves, a
/// build script or a git alias, is out of the rules' sight: `docs/permissions.md`). Any other
/// program is taken to possibly run the words after it ([`super::wrappers::Unwrapped::Guesses`]): deny rules
/// check them, and an allow rule for the program does not cover them
/// ([`possibly_wrapped`]).
pub(super) const NON_WRAPPERS: &[&str] = &[
    "git",
    "cargo",
    "rustc",
    "rustup",
    "rustfmt",
    "clippy-driver",
    "make",
    "cmake",
    "ninja",
    "meson",
    "npm",
    "pnpm",
    "yarn",
    "bun",
    "deno",
    "node",
    "tsc",
    "go",
    "gofmt",
    "python",
    "python3",
    "pip",
    "pip3",
    "uv",
    "poetry",
    "pytest",
    "ruff",
    "mypy",
    "black",
    "java",
    "javac",
    "mvn",
    "gradle",
    "dotnet",
    "gcc",
    "g++",
    "cc",
    "clang",
    "ld",
    "ls",
    "cat",
    "echo",
    "printf",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "sed",
    "awk",
    "head",
    "tail",
    "wc",
    "sort",
    "uniq",
    "cut",
    "tr",
    "diff",
    "cmp",
    "comm",
    "patch",
    "touch",
    "mkdir",
    "cp",
    "mv",
    "ln",
    "chmod",
    "chown",
    "chgrp",
    "rm",
    "rmdir",
    "pwd",
    "cd",
    "test",
    "[",
    "true",
    "false",
    ":",
    "tar",
    "zip",
    "unzip",
    "gzip",
    "gunzip",
    "xz",
    "zstd",
    "jq",
    "yq",
    "less",
    "more",
    "file",
    "stat",
    "du",
    "df",
    "ps",
    "kill",
    "pkill",
    "which",
    "whereis",
    "type",
    "tee",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "date",
    "sleep",
    "seq",
    "expr",
    "curl",
    "wget",
    "docker",
    "podman",
    "kubectl",
    "helm",
    "terraform",
    "gh",
    "tree",
    "fd",
    "bat",
    "dd",
    "shred",
    "truncate",
    "mktemp",
    "install",
    "hostname",
    "uname",
    "id",
    "whoami",
    "read",
    "pushd",
    "popd",
    "export",
    "unset",
    "set",
    "shift",
    "wait",
    "jobs",
    "hash",
    "ulimit",
    "umask",
    "declare",
    "local",
    "readonly",
    "typeset",
    "let",
    "getopts",
    "mapfile",
    "readarray",
    "compgen",
    "complete",
    "history",
    "fc",
    "printenv",
    "locale",
    "od",
    "xxd",
    "hexdump",
    "strings",
    "base64",
    "sha256sum",
    "md5sum",
    "cksum",
    "nl",
    "fold",
    "fmt",
    "column",
    "paste",
    "join",
    "split",
    "csplit",
    "rev",
    "tac",
    "shuf",
    "yes",
    "factor",
];

/// Programs that run a command given in their arguments: `bash(<program>:*)` would allow
/// anything, so "always allow" is not offered for them.
pub(crate) fn runs_other_commands(program: &str) -> bool {
    shell_grammar(program).is_some()
        || RARE_WRAPPERS.contains(&program)
        || matches!(
            program,
            "fish"
                | "env"
                | "sudo"
                | "doas"
                | "su"
                | "runuser"
                | "xargs"
                | "find"
                | "nice"
                | "nohup"
                | "setsid"
                | "time"
                | "timeout"
                | "stdbuf"
                | "ionice"
                | "exec"
                | "command"
                | "builtin"
                | "eval"
                | "watch"
                | "busybox"
                | "trap"
                | "source"
                | "."
                | "script"
                | "flock"
                | "alias"
                | "coproc"
        )
}

/// Programs whose name after an unknown program makes that program a possible wrapper.
const RUN_OR_CHANGE: &[&str] = &[
    "rm", "rmdir", "mv", "cp", "dd", "shred", "truncate", "chmod", "chown", "ln", "curl", "wget",
    "nc", "ncat", "socat", "ssh", "scp", "sftp", "rsync", "python", "python3", "node", "perl",
    "ruby", "php", "git", "tee", "kill", "pkill", "killall", "mkfs", "docker",
];

/// Where the command an unknown program may run starts: `setarch x86_64 rm -rf v` may run `rm
/// -rf v` (index 2). `None` for a program known not to run its arguments, a known wrapper
/// (judged on its own) or no such word.
pub(crate) fn possibly_wrapped(words: &[String]) -> Option<usize> {
    let program = program_name(words.first()?);
    if NON_WRAPPERS.contains(&program) || runs_other_commands(program) {
        return None;
    }
    words
        .iter()
        .skip(1)
        .position(|w| {
            let name = program_name(w);
            !w.starts_with('-') && (RUN_OR_CHANGE.contains(&name) || runs_other_commands(name))
        })
        .map(|i| i + 1)
}

/// Wrappers whose options are not modelled one by one: every suffix of their arguments that
/// starts with a literal non-option word is taken as a command that may run (more than runs,
/// which is the safe side for deny rules).
pub(super) const RARE_WRAPPERS: &[&str] = &[
    "setarch",
    "linux32",
    "linux64",
    "i386",
    "x86_64",
    "uname26",
    "newgrp",
    "fakeroot",
    "fakechroot",
    "chroot",
    "unshare",
    "nsenter",
    "strace",
    "ltrace",
    "parallel",
    "caffeinate",
    "firejail",
    "bwrap",
    "systemd-run",
    "taskset",
    "numactl",
    "chrt",
    "prlimit",
    "cpulimit",
    "faketime",
    "torsocks",
    "proxychains",
    "proxychains4",
    "unbuffer",
    "rlwrap",
    "entr",
    "xvfb-run",
    "dbus-run-session",
    "ssh-agent",
    "sg",
    "setpriv",
    "catchsegv",
    "valgrind",
    "gdb",
];
