//! Wrappers: programs that run a command given in their arguments (`env`, `sudo`, `xargs`,
//! `find -exec`, `sh -c`, ...), and which of their arguments is that command. Each wrapper's
//! options are skipped by its own table, so `sudo -u root rm` runs `rm`, not `root`.

use super::{Word, join};

/// What a wrapper program runs.
pub(super) enum Unwrapped<'a> {
    /// Not a wrapper, or a wrapper with nothing to run.
    Nothing,
    /// The words of the commands it runs.
    Commands(Vec<&'a [Word]>),
    /// A string it runs as shell code.
    Script(Word),
    /// It runs something that cannot be seen on the line.
    Hidden(String),
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

/// Skips a wrapper's options; returns the index of the first word after them.
fn skip_options(args: &[Word], opts: &Options) -> usize {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let Some(s) = w.literal() else { return i };
        if s == "--" {
            return i + 1;
        }
        if let Some(long) = s.strip_prefix("--") {
            i += 1;
            if !long.contains('=') && opts.long_with_value.contains(&long) {
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

pub(super) const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "rbash"];

pub(super) fn unwrap<'a>(program: &str, args: &'a [Word]) -> Unwrapped<'a> {
    let after = |opts: Options| {
        Unwrapped::Commands(vec![&args[skip_options(args, &opts).min(args.len())..]])
    };
    let none = Options {
        short_with_value: "",
        long_with_value: &[],
        numeric: false,
    };
    match program {
        "env" => env(args),
        "command" | "builtin" | "nohup" | "busybox" => after(none),
        "exec" => after(Options {
            short_with_value: "a",
            ..none
        }),
        "nice" => after(Options {
            short_with_value: "n",
            long_with_value: &["adjustment"],
            numeric: true,
        }),
        "setsid" => after(none),
        "time" => after(Options {
            short_with_value: "fo",
            long_with_value: &["format", "output"],
            ..none
        }),
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
            let i = skip_options(
                args,
                &Options {
                    short_with_value: "sk",
                    long_with_value: &["signal", "kill-after"],
                    ..none
                },
            );
            // The duration, then the command.
            Unwrapped::Commands(vec![&args[(i + 1).min(args.len())..]])
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
        "su" => su(args),
        "trap" => match args
            .iter()
            .position(|w| w.literal().is_none_or(|s| !s.starts_with('-')))
        {
            Some(i) => Unwrapped::Script(args[i].clone()),
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
            Some(script) => Unwrapped::Script(script),
            None => every_operand_suffix(args),
        },
        p if SHELLS.contains(&p) => shell(p, args),
        p if RARE_WRAPPERS.contains(&p) => every_operand_suffix(args),
        _ => Unwrapped::Nothing,
    }
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
    Unwrapped::Commands(
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
    Unwrapped::Script(all)
}

fn env(args: &[Word]) -> Unwrapped<'_> {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let Some(s) = w.literal() else { break };
        if s == "--" {
            i += 1;
            break;
        }
        // `-S STRING` / `--split-string=STRING`: the string is split into a command line.
        if let Some(v) = s.strip_prefix("--split-string=") {
            return Unwrapped::Script(Word::Literal(v.to_owned()));
        }
        if s == "-S" || s == "--split-string" {
            return match args.get(i + 1) {
                Some(script) => Unwrapped::Script(script.clone()),
                None => Unwrapped::Nothing,
            };
        }
        if let Some(v) = s.strip_prefix("-S") {
            return Unwrapped::Script(Word::Literal(v.to_owned()));
        }
        if s.starts_with('-') && s.len() > 1 {
            i += 1;
            if matches!(s, "-u" | "-C" | "--unset" | "--chdir") {
                i += 1;
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
        Some(script) => Unwrapped::Script(script),
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
        let Some(s) = w.literal() else { break };
        if s == "--" || s == "-" {
            i += 1;
            break;
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
        (true, Some(script)) => Unwrapped::Script(script.clone()),
        (true, None) => Unwrapped::Nothing,
        (false, Some(_)) => Unwrapped::Nothing,
        (false, None) => Unwrapped::Hidden(format!(
            "`{program}` reads the commands it runs from its input"
        )),
    }
}
