//! Wrappers: programs that run a command given in their arguments (`env`, `sudo`, `xargs`,
//! `find -exec`, `sh -c`, ...), and which of their arguments is that command. Each wrapper's
//! options are skipped by its own table, so `sudo -u root rm` runs `rm`, not `root`.

use super::{Grammar, Word, join};

/// What a wrapper program runs.
pub(super) enum Unwrapped<'a> {
    /// Not a wrapper, or a wrapper with nothing to run.
    Nothing,
    /// The words of the commands it runs.
    Commands(Vec<&'a [Word]>),
    /// A string it runs as shell code, and the shell that runs it (`None`: the shell reading
    /// the line, for `trap`).
    Script(Word, Option<Grammar>),
    /// It runs something that cannot be seen on the line.
    Hidden(String),
    /// It may run a command that starts at any of these words: a program whose options are
    /// not modelled (every suffix of its arguments that starts with a literal non-option
    /// word, [`super::Found::runs`]). More than runs, the safe side for deny rules.
    Guesses(Vec<&'a [Word]>),
}

/// Options of a wrapper: which take a value as the next word.
struct Options {
    /// Short options (letters) that take a value.
    short_with_value: &'static str,
    /// Long options (without `--`) that take a value as the next word when written without `=`.
    long_with_value: &'static [&'static str],
    /// Whether `-N` (a number) is an option (nice).
    numeric: bool,
}

/// Skips a wrapper's options; returns the index of the first word after them. A long option
/// may be abbreviated (`timeout --sig KILL`, as GNU getopt reads it): a prefix of an option
/// that takes a value takes one here, which [`after_options`] also reads the other way.
fn skip_options(args: &[Word], opts: &Options) -> usize {
    skip_options_reading(args, opts, Abbreviated::TakeValue)
}

/// How an abbreviated long option is read while skipping options.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Abbreviated {
    TakeValue,
    NoValue,
}

fn skip_options_reading(args: &[Word], opts: &Options, abbreviated: Abbreviated) -> usize {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let Some(s) = w.literal() else { return i };
        if s == "--" {
            return i + 1;
        }
        if let Some(long) = s.strip_prefix("--") {
            i += 1;
            let takes_value = !long.contains('=')
                && (opts.long_with_value.contains(&long)
                    || abbreviated == Abbreviated::TakeValue
                        && !long.is_empty()
                        && opts.long_with_value.iter().any(|l| l.starts_with(long)));
            if takes_value {
                i += 1;
            }
            continue;
        }
        let Some(short) = s.strip_prefix('-').filter(|r| !r.is_empty()) else {
            return i;
        };
        i += 1;
        if opts.numeric && short.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        // `-n5` carries its value; `-n 5` takes the next word.
        for (pos, c) in short.char_indices() {
            if opts.short_with_value.contains(c) {
                if pos + c.len_utf8() == short.len() {
                    i += 1;
                }
                break;
            }
        }
    }
    i
}

/// The grammar a shell program reads its `-c` string with; `None` for a program that is not a
/// shell.
pub(super) fn shell_grammar(program: &str) -> Option<Grammar> {
    match program {
        "bash" | "rbash" => Some(Grammar::Bash),
        "sh" | "dash" | "ash" => Some(Grammar::Posix),
        "zsh" | "ksh" | "mksh" => Some(Grammar::Foreign),
        _ => None,
    }
}

/// The command after a wrapper's options, read both ways where an abbreviated long option
/// may or may not take the next word.
fn after_options<'a>(args: &'a [Word], opts: &Options) -> Vec<&'a [Word]> {
    let mut at = vec![
        skip_options_reading(args, opts, Abbreviated::TakeValue).min(args.len()),
        skip_options_reading(args, opts, Abbreviated::NoValue).min(args.len()),
    ];
    at.dedup();
    at.into_iter().map(|i| &args[i..]).collect()
}

pub(super) fn unwrap<'a>(program: &str, args: &'a [Word]) -> Unwrapped<'a> {
    let after = |opts: Options| Unwrapped::Commands(after_options(args, &opts));
    let none = Options {
        short_with_value: "",
        long_with_value: &[],
        numeric: false,
    };
    match program {
        "env" => env(args),
        "command" | "builtin" | "nohup" | "busybox" => after(none),
        // bash's `exec` takes `-a NAME`, `-c`, `-l` and `--`; dash's takes no options at all
        // (`exec -- x` runs a program `--`): both readings are followed.
        "exec" => Unwrapped::Commands(vec![
            args,
            &args[skip_options(
                args,
                &Options {
                    short_with_value: "a",
                    ..none
                },
            )
            .min(args.len())..],
        ]),
        "nice" => after(Options {
            short_with_value: "n",
            long_with_value: &["adjustment"],
            numeric: true,
        }),
        "setsid" => after(none),
        "time" => {
            // bash's `time` keyword takes only `-p` and runs whatever follows (`time -rf` runs
            // a program `-rf`); /usr/bin/time (`\time`, `command time`) takes GNU options.
            let keyword = args
                .iter()
                .take_while(|w| w.literal().is_some_and(|s| s == "-p" || s == "--"))
                .count();
            let program = skip_options(
                args,
                &Options {
                    short_with_value: "fo",
                    long_with_value: &["format", "output"],
                    ..none
                },
            );
            // And no option at all: bash recognises `-p` only as written (`time -\p x` runs
            // `-p`), and `time>|/dev/null -p x` runs `-p` too.
            let mut at = vec![0, keyword.min(args.len()), program.min(args.len())];
            at.dedup();
            Unwrapped::Commands(at.into_iter().map(|i| &args[i..]).collect())
        }
        "stdbuf" => after(Options {
            short_with_value: "ioe",
            long_with_value: &["input", "output", "error"],
            ..none
        }),
        "ionice" => after(Options {
            short_with_value: "cnp",
            long_with_value: &["class", "classdata", "pid", "pgid", "uid"],
            ..none
        }),
        "timeout" => {
            let opts = Options {
                short_with_value: "sk",
                long_with_value: &["signal", "kill-after"],
                ..none
            };
            // The duration, then the command.
            Unwrapped::Commands(
                after_options(args, &opts)
                    .into_iter()
                    .map(|rest| rest.get(1..).unwrap_or_default())
                    .collect(),
            )
        }
        "xargs" => after(Options {
            short_with_value: "IaEdLnPs",
            long_with_value: &[
                "arg-file",
                "delimiter",
                "eof",
                "max-lines",
                "max-args",
                "max-procs",
                "max-chars",
                "process-slot-var",
            ],
            ..none
        }),
        "sudo" | "doas" => sudo(args),
        "find" => find(args),
        "eval" => Unwrapped::Hidden("`eval` runs a string built at run time".to_owned()),
        // dash expands aliases in scripts (`alias x='rm -rf v'⏎x`), and `coproc` runs the
        // command after it (or a compound command) where the grammar sees one word list.
        "alias" => Unwrapped::Hidden(
            "`alias` defines commands that the line runs by another name".to_owned(),
        ),
        "coproc" => Unwrapped::Hidden("`coproc` runs a command the rules cannot follow".to_owned()),
        "su" => su(args),
        "trap" => match args
            .iter()
            .position(|w| w.literal().is_none_or(|s| !s.starts_with('-')))
        {
            Some(i) => Unwrapped::Script(args[i].clone(), None),
            None => Unwrapped::Nothing,
        },
        "watch" => {
            let i = skip_options(
                args,
                &Options {
                    short_with_value: "nq",
                    long_with_value: &["interval", "equexit"],
                    ..none
                },
            );
            joined_script(&args[i.min(args.len())..])
        }
        "script" | "flock" => match string_option(args, "-c", "--command") {
            Some(script) => Unwrapped::Script(script, Some(Grammar::Posix)),
            None => every_operand_suffix(args),
        },
        p if shell_grammar(p).is_some() => shell(p, args),
        p if NON_WRAPPERS.contains(&p) => Unwrapped::Nothing,
        // A rare wrapper (`chroot`, `strace`), or a program Ferrite knows nothing about:
        // `setarch x86_64 rm -rf v`, `fakeroot rm -rf v` run `rm`.
        _ => every_operand_suffix(args),
    }
}

/// Programs that never run a command named in their arguments (what they do by themselves, a
/// build script or a git alias, is out of the rules' sight: `docs/permissions.md`). Any other
/// program is taken to possibly run the words after it ([`Unwrapped::Guesses`]): deny rules
/// check them, and an allow rule for the program does not cover them
/// ([`possibly_wrapped`]).
const NON_WRAPPERS: &[&str] = &[
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
    let program = super::program_name(words.first()?);
    if NON_WRAPPERS.contains(&program) || runs_other_commands(program) {
        return None;
    }
    words
        .iter()
        .skip(1)
        .position(|w| {
            let name = super::program_name(w);
            !w.starts_with('-') && (RUN_OR_CHANGE.contains(&name) || runs_other_commands(name))
        })
        .map(|i| i + 1)
}

/// Wrappers whose options are not modelled one by one: every suffix of their arguments that
/// starts with a literal non-option word is taken as a command that may run (more than runs,
/// which is the safe side for deny rules).
const RARE_WRAPPERS: &[&str] = &[
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
    "runuser",
    "setpriv",
    "catchsegv",
    "valgrind",
    "gdb",
];

fn every_operand_suffix(args: &[Word]) -> Unwrapped<'_> {
    Unwrapped::Guesses(
        (0..args.len())
            .filter(|&i| args[i].literal().is_some_and(|s| !s.starts_with('-')))
            .map(|i| &args[i..])
            .collect(),
    )
}

/// The value of `-c STRING` / `--command=STRING` / `--command STRING`.
fn string_option(args: &[Word], short: &str, long: &str) -> Option<Word> {
    let mut iter = args.iter();
    while let Some(w) = iter.next() {
        let Some(s) = w.literal() else { continue };
        if let Some(v) = s.strip_prefix(long).and_then(|r| r.strip_prefix('=')) {
            return Some(Word::Literal(v.to_owned()));
        }
        if s == short || s == long {
            return iter.next().cloned();
        }
    }
    None
}

/// The words as one script (`watch a b` runs `sh -c "a b"`).
fn joined_script(words: &[Word]) -> Unwrapped<'_> {
    if words.is_empty() {
        return Unwrapped::Nothing;
    }
    let mut all = Word::Literal(String::new());
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            all = join(&all, &Word::Literal(" ".to_owned()));
        }
        all = join(&all, w);
    }
    Unwrapped::Script(all, Some(Grammar::Posix))
}

/// env's long options that take a value, and the one that splits a string into the command.
const ENV_LONG_WITH_VALUE: &[&str] = &["unset", "chdir"];
const ENV_SPLIT: &str = "split-string";

fn env(args: &[Word]) -> Unwrapped<'_> {
    let split = |value: Option<&Word>| match value {
        Some(script) => Unwrapped::Script(script.clone(), Some(Grammar::Posix)),
        None => Unwrapped::Nothing,
    };
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let Some(s) = w.literal() else { break };
        if s == "--" {
            i += 1;
            break;
        }
        if let Some(long) = s.strip_prefix("--") {
            // Abbreviations as GNU getopt takes them: `--split=…`, `--un FOO`.
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            if !name.is_empty() && ENV_SPLIT.starts_with(name) {
                return match value {
                    Some(v) => split(Some(&Word::Literal(v.to_owned()))),
                    None => split(args.get(i + 1)),
                };
            }
            i += 1;
            if value.is_none()
                && !name.is_empty()
                && ENV_LONG_WITH_VALUE.iter().any(|l| l.starts_with(name))
            {
                i += 1;
            }
            continue;
        }
        if let Some(cluster) = s.strip_prefix('-').filter(|c| !c.is_empty()) {
            // Short options cluster (`-iu FOO`, `-iS'rm -rf v'`): a letter that takes a value
            // takes the rest of the word, or the next word.
            i += 1;
            for (pos, c) in cluster.char_indices() {
                let rest = &cluster[pos + c.len_utf8()..];
                match c {
                    'S' if rest.is_empty() => return split(args.get(i)),
                    'S' => return split(Some(&Word::Literal(rest.to_owned()))),
                    'u' | 'C' => {
                        if rest.is_empty() {
                            i += 1;
                        }
                        break;
                    }
                    _ => {}
                }
            }
            continue;
        }
        if s.contains('=') {
            i += 1;
            continue;
        }
        break;
    }
    // A dynamic word here could be an assignment or the program: treat it as the program.
    Unwrapped::Commands(vec![&args[i.min(args.len())..]])
}

fn sudo(args: &[Word]) -> Unwrapped<'_> {
    let opts = Options {
        short_with_value: "ugpCDrtUTR",
        long_with_value: &[
            "user",
            "group",
            "prompt",
            "close-from",
            "chdir",
            "role",
            "type",
            "other-user",
            "command-timeout",
            "chroot",
            "host",
        ],
        numeric: false,
    };
    let i = skip_options(args, &opts).min(args.len());
    let shell_flag = args[..i].iter().any(|w| {
        w.literal().is_some_and(|s| {
            matches!(s, "--shell" | "--login")
                || (s.starts_with('-')
                    && !s.starts_with("--")
                    && (s.contains('s') || s.contains('i')))
        })
    });
    if shell_flag && i < args.len() {
        // `sudo -s a b` runs `$SHELL -c "a b"`.
        return joined_script(&args[i..]);
    }
    Unwrapped::Commands(vec![&args[i..]])
}

fn su(args: &[Word]) -> Unwrapped<'_> {
    match string_option(args, "-c", "--command") {
        Some(script) => Unwrapped::Script(script, Some(Grammar::Posix)),
        None => Unwrapped::Nothing,
    }
}

/// `find ... -exec CMD {} ;` (also `-execdir`, `-ok`, `-okdir`): every such command.
fn find(args: &[Word]) -> Unwrapped<'_> {
    let mut commands = Vec::new();
    let mut rest = args;
    while let Some(start) = rest.iter().position(|w| {
        w.literal()
            .is_some_and(|s| matches!(s, "-exec" | "-execdir" | "-ok" | "-okdir"))
    }) {
        rest = &rest[start + 1..];
        let end = rest
            .iter()
            .position(|w| w.literal().is_some_and(|s| s == ";" || s == "+"))
            .unwrap_or(rest.len());
        commands.push(&rest[..end]);
        rest = &rest[end..];
    }
    Unwrapped::Commands(commands)
}

fn shell<'a>(program: &str, args: &'a [Word]) -> Unwrapped<'a> {
    let mut i = 0;
    let mut command_string = false;
    while let Some(w) = args.get(i) {
        let Some(s) = w.literal() else {
            // Before the script file or string is known, a word computed at run time may be
            // any flag (`sh -c$X 'ls; rm x'`, `bash "$X"-lc …`).
            if command_string {
                break;
            }
            return Unwrapped::Hidden(format!("`{program}` gets options computed at run time"));
        };
        if s == "--" || s == "-" {
            i += 1;
            break;
        }
        if matches!(s, "--login" | "--rcfile" | "--init-file")
            || s.starts_with('-') && !s.starts_with("--") && s.contains(['l', 'i'])
        {
            return Unwrapped::Hidden(format!(
                "`{program} {s}` runs the shell's start-up files, which the rules cannot see"
            ));
        }
        if s.starts_with("--") {
            if matches!(s, "--version" | "--help") {
                return Unwrapped::Nothing;
            }
            i += 1;
            if matches!(s, "--rcfile" | "--init-file") {
                i += 1;
            }
            continue;
        }
        let Some(flags) = s.strip_prefix('-').or_else(|| s.strip_prefix('+')) else {
            break;
        };
        if flags.is_empty() {
            break;
        }
        i += 1;
        if flags.contains('c') {
            command_string = true;
        }
        if flags.contains('s') && !command_string {
            return Unwrapped::Hidden(format!(
                "`{program}` reads the commands it runs from its input"
            ));
        }
        if flags.contains('o') || flags.contains('O') {
            i += 1;
        }
    }
    match (command_string, args.get(i)) {
        (true, Some(script)) => Unwrapped::Script(script.clone(), shell_grammar(program)),
        (true, None) => Unwrapped::Nothing,
        (false, Some(_)) => Unwrapped::Nothing,
        (false, None) => Unwrapped::Hidden(format!(
            "`{program}` reads the commands it runs from its input"
        )),
    }
}
