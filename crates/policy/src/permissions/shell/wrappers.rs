//! Wrappers: programs that run a command given in their arguments (`env`, `sudo`, `xargs`,
//! `find -exec`, `sh -c`, `script -c`, ...), and which of their arguments is that command. Each
//! wrapper's options are read as its own `getopt_long` reads them ([`getopt`],
//! [`wrapper_options`]), so `sudo -u root rm` runs `rm`, not `root`, and `script -qc CMD` runs
//! `CMD`.

use std::borrow::Cow;

use super::getopt::{Opt, Parsed, Spec, Unsure};
use super::programs::NON_WRAPPERS;
use super::wrapper_options as opts;
use super::{Grammar, Word, append};

/// What a wrapper program runs.
pub(super) enum Unwrapped<'a> {
    /// Not a wrapper, or a wrapper with nothing to run.
    Nothing,
    /// The words of the commands it runs.
    Commands(Vec<Cow<'a, [Word]>>),
    /// A string it runs as shell code, and the shell that runs it (`None`: the shell reading
    /// the line, for `trap`).
    Script(Word, Option<Grammar>),
    /// It runs something that cannot be seen on the line.
    Hidden(String),
    /// It may run a command that starts at any literal non-option word of its arguments: a
    /// program whose options are not modelled, or a wrapper with an option Ferrite does not
    /// know ([`super::Found::runs`]); a word of them holding blanks may be a script string.
    /// More than runs, the safe side for deny rules.
    Guesses,
    /// Each of these.
    All(Vec<Unwrapped<'a>>),
}

fn commands<'a>(list: impl IntoIterator<Item = &'a [Word]>) -> Unwrapped<'a> {
    Unwrapped::Commands(list.into_iter().map(Cow::Borrowed).collect())
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

/// What the options leave uncertain, added to what the wrapper surely runs.
fn unless_unsure<'a>(program: &str, parsed: &Parsed, sure: Unwrapped<'a>) -> Unwrapped<'a> {
    match &parsed.unsure {
        None => sure,
        Some(Unsure::Dynamic) => {
            Unwrapped::Hidden(format!("`{program}` gets options computed at run time"))
        }
        Some(Unsure::Unknown(_)) => Unwrapped::All(vec![sure, Unwrapped::Guesses]),
    }
}

/// A wrapper that runs the words after its options.
fn after<'a>(program: &str, spec: &Spec, args: &'a [Word]) -> Unwrapped<'a> {
    let parsed = spec.parse(args);
    let rest = &args[parsed.first_operand(args.len())..];
    unless_unsure(program, &parsed, commands([rest]))
}

pub(super) fn unwrap<'a>(program: &str, args: &'a [Word]) -> Unwrapped<'a> {
    match program {
        "env" => env(args),
        "command" => after(program, &opts::COMMAND, args),
        "nohup" => after(program, &opts::NOHUP, args),
        "builtin" | "busybox" => commands([args]),
        // bash's `exec` takes `-a NAME`, `-c`, `-l` and `--`; dash's takes no options at all
        // (`exec -- x` runs a program `--`): both readings are followed.
        "exec" => {
            let parsed = opts::EXEC.parse(args);
            commands([args, &args[parsed.first_operand(args.len())..]])
        }
        "nice" => after(program, &opts::NICE, args),
        "setsid" => after(program, &opts::SETSID, args),
        "stdbuf" => after(program, &opts::STDBUF, args),
        "ionice" => after(program, &opts::IONICE, args),
        "xargs" => xargs(args),
        "time" => time(args),
        "timeout" => {
            let parsed = opts::TIMEOUT.parse(args);
            // The duration, then the command.
            let rest = args.get(parsed.first_operand(args.len()) + 1..);
            unless_unsure(program, &parsed, commands([rest.unwrap_or_default()]))
        }
        "sudo" => sudo(program, &opts::SUDO, args),
        "doas" => sudo(program, &opts::DOAS, args),
        "su" | "runuser" => su(program, args),
        "script" => script(args),
        "flock" => flock(args),
        "watch" => {
            let parsed = opts::WATCH.parse(args);
            let sure = joined_script(&args[parsed.first_operand(args.len())..]);
            unless_unsure(program, &parsed, sure)
        }
        "find" => find(args),
        p if SHELL_WITHOUT_COMMAND.iter().any(|(name, ..)| *name == p) => {
            shell_without_command(p, args)
        }
        "eval" => Unwrapped::Hidden("`eval` runs a string built at run time".to_owned()),
        // dash expands aliases in scripts (`alias x='rm -rf v'⏎x`), and `coproc` runs the
        // command after it (or a compound command) where the grammar sees one word list.
        "alias" => Unwrapped::Hidden(
            "`alias` defines commands that the line runs by another name".to_owned(),
        ),
        "coproc" => Unwrapped::Hidden("`coproc` runs a command the rules cannot follow".to_owned()),
        "trap" => match args
            .iter()
            .position(|w| w.literal().is_none_or(|s| !s.starts_with('-')))
        {
            Some(i) => Unwrapped::Script(args[i].clone(), None),
            None => Unwrapped::Nothing,
        },
        p if shell_grammar(p).is_some() => shell(p, args),
        p if NON_WRAPPERS.contains(&p) => Unwrapped::Nothing,
        // A rare wrapper (`chroot`, `strace`), or a program Ferrite knows nothing about:
        // `setarch x86_64 rm -rf v`, `fakeroot rm -rf v` run `rm`.
        _ => Unwrapped::Guesses,
    }
}

/// bash's `time` keyword takes only `-p` and runs whatever follows (`time -rf` runs a program
/// `-rf`); /usr/bin/time (`\time`, `command time`) takes GNU options. And no option at all:
/// bash recognises `-p` only as written (`time -\p x` runs `-p`), and `time>|/dev/null -p x`
/// runs `-p` too. Every reading is followed.
fn time(args: &[Word]) -> Unwrapped<'_> {
    let keyword = args
        .iter()
        .take_while(|w| w.literal().is_some_and(|s| s == "-p" || s == "--"))
        .count();
    let parsed = opts::TIME.parse(args);
    let program = parsed.first_operand(args.len());
    let mut at = vec![0, keyword.min(args.len()), program];
    // `time ! x` (and `time -p ! x`) negates the pipeline: bash runs `x` (differential test).
    let negated = |i: usize| {
        i + args[i..]
            .iter()
            .take_while(|w| w.literal() == Some("!"))
            .count()
    };
    at.extend([negated(0), negated(keyword.min(args.len()))]);
    at.sort_unstable();
    at.dedup();
    unless_unsure(
        "time",
        &parsed,
        commands(at.into_iter().map(|i| &args[i..])),
    )
}

/// Programs that run a shell when given no command (`setarch x86_64`, `linux64`, `chroot
/// DIR`, `unshare`), which then reads its commands from the input (`linux64 <<EOF`:
/// differential test, 1M), how many operands come before the command, and the options that
/// take a value as the next word (`nsenter -t 1` has no command: `1` is the target's pid).
/// Their other options are not modelled: with a command they are [`Unwrapped::Guesses`].
const SHELL_WITHOUT_COMMAND: &[(&str, usize, &[&str])] = &[
    ("setarch", 1, &[]),
    ("linux32", 0, &[]),
    ("linux64", 0, &[]),
    ("i386", 0, &[]),
    ("x86_64", 0, &[]),
    ("uname26", 0, &[]),
    ("chroot", 1, &["--userspec", "--groups"]),
    (
        "unshare",
        0,
        &[
            "-S",
            "-G",
            "-R",
            "-w",
            "--setuid",
            "--setgid",
            "--root",
            "--wd",
            "--propagation",
            "--setgroups",
            "--map-user",
            "--map-group",
            "--map-users",
            "--map-groups",
            "--monotonic",
            "--boottime",
        ],
    ),
    (
        "nsenter",
        0,
        &["-t", "-S", "-G", "--target", "--setuid", "--setgid"],
    ),
    ("sg", 1, &[]),
    ("newgrp", 1, &[]),
    ("fakeroot", 0, &["-l", "-s", "-i", "-b", "--lib", "--faked"]),
    (
        "fakechroot",
        0,
        &[
            "-l",
            "-d",
            "-c",
            "-e",
            "--lib",
            "--elfloader",
            "--config-dir",
            "--environment",
        ],
    ),
    ("firejail", 0, &[]),
];

/// A program of [`SHELL_WITHOUT_COMMAND`]: with no word that could be the command (a literal
/// word that is not an option nor an option's value, past the operands before it) its shell
/// reads the input. A cluster of short options (`-mt`) is taken to take a value when any of its
/// letters may: that can only find no command where there is one, which asks.
/// (`valued` lists each long option whole; a short one is `-` and its letter.)
fn shell_without_command<'a>(program: &str, args: &'a [Word]) -> Unwrapped<'a> {
    let (before, valued) = SHELL_WITHOUT_COMMAND
        .iter()
        .find(|(name, ..)| *name == program)
        .map_or((0, &[][..]), |(_, n, v)| (*n, *v));
    // getopt_long takes any unambiguous prefix (`--targ 1`); any prefix counts here.
    let takes_value = |option: &str| {
        valued
            .iter()
            .any(|v| v.starts_with("--") && option.len() > 2 && v.starts_with(option))
            || (!option.starts_with("--")
                && option
                    .chars()
                    .skip(1)
                    .any(|c| valued.iter().any(|v| v.len() == 2 && v.ends_with(c))))
    };
    let mut operands = 0;
    let mut options_end = false;
    let mut words = args.iter();
    while let Some(word) = words.next() {
        match word.literal() {
            Some("--") if !options_end => options_end = true,
            Some(s) if !options_end && s.starts_with('-') && s.len() > 1 => {
                if !s.contains('=') && takes_value(s) {
                    words.next();
                }
            }
            _ => {
                if operands == before {
                    return Unwrapped::Guesses;
                }
                operands += 1;
            }
        }
    }
    Unwrapped::Hidden(format!(
        "`{program}` with no command runs a shell that reads its commands from the input"
    ))
}

/// `xargs [options] [COMMAND [ARG]…]`: the command gets more arguments from the input, so
/// they count as computed at run time (`echo --force | xargs git push` runs `git push
/// --force`); with no command it runs `echo` (differential test, 1M).
fn xargs(args: &[Word]) -> Unwrapped<'_> {
    let parsed = opts::XARGS.parse(args);
    let rest = &args[parsed.first_operand(args.len())..];
    let mut command = match rest.is_empty() {
        true => vec![Word::Literal("echo".to_owned())],
        false => rest.to_vec(),
    };
    command.push(Word::Dynamic("<arguments from the input>".to_owned()));
    unless_unsure(
        "xargs",
        &parsed,
        Unwrapped::Commands(vec![Cow::Owned(command)]),
    )
}

/// The words as one script (`watch a b` runs `sh -c "a b"`).
fn joined_script(words: &[Word]) -> Unwrapped<'_> {
    if words.is_empty() {
        return Unwrapped::Nothing;
    }
    let mut all = Word::Literal(String::new());
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            append(&mut all, &Word::Literal(" ".to_owned()));
        }
        append(&mut all, w);
    }
    Unwrapped::Script(all, Some(Grammar::Posix))
}

/// A word as the shell would have to write it to pass it unchanged.
fn quoted(word: &Word) -> Word {
    match word {
        Word::Literal(s) => Word::Literal(format!("'{}'", s.replace('\'', "'\\''"))),
        Word::Dynamic(s) => Word::Dynamic(s.clone()),
    }
}

/// `env [OPTION]… [NAME=VALUE]… [COMMAND [ARG]…]`. `-S STRING` splits STRING into words that
/// take its place, options included (`env -S'-i rm -rf v'`): the line `env STRING ARG…` is
/// read again as a script.
fn env(args: &[Word]) -> Unwrapped<'_> {
    let parsed = opts::ENV.parse(args);
    let first = parsed.first_operand(args.len());
    if let Some((at, split)) = parsed
        .options
        .iter()
        .enumerate()
        .find_map(|(at, (o, v))| (*o == Opt::Short('S')).then_some((at, v)))
    {
        let Some(split) = split else {
            return Unwrapped::Nothing;
        };
        // The options after `-S` are read after the split words; the operands come last.
        let later: Vec<Word> = parsed.options[at + 1..]
            .iter()
            .flat_map(|(o, v)| {
                let flag = match o {
                    Opt::Short(c) => format!("-{c}"),
                    Opt::Long(l) => format!("--{l}"),
                };
                std::iter::once(Word::Literal(flag)).chain(v.iter().map(quoted))
            })
            .collect();
        let operands: Vec<Word> = args[first..].iter().map(quoted).collect();
        let mut line = Word::Literal("env ".to_owned());
        append(&mut line, split);
        for w in later.iter().chain(&operands) {
            append(&mut line, &Word::Literal(" ".to_owned()));
            append(&mut line, w);
        }
        return unless_unsure(
            "env",
            &parsed,
            Unwrapped::Script(line, Some(Grammar::Posix)),
        );
    }
    let assignments = args[first..]
        .iter()
        .take_while(|w| w.literal().is_some_and(|s| s.contains('=')))
        .count();
    // A dynamic word here could be an assignment or the program: taken as the program.
    unless_unsure("env", &parsed, commands([&args[first + assignments..]]))
}

/// `sudo [options] [command]`, `doas [options] [command]`; with `-s`/`-i` the command words
/// are run by a shell (`sudo -s a b` runs `$SHELL -c "a b"`).
fn sudo<'a>(program: &str, spec: &Spec, args: &'a [Word]) -> Unwrapped<'a> {
    let parsed = spec.parse(args);
    let rest = &args[parsed.first_operand(args.len())..];
    let shell = parsed.has(Opt::Short('s')) || parsed.has(Opt::Short('i'));
    let sure = if shell && !rest.is_empty() {
        Unwrapped::All(vec![joined_script(rest), commands([rest])])
    } else {
        commands([rest])
    };
    unless_unsure(program, &parsed, sure)
}

/// `su [options] [-] [USER [ARG]…]` and `runuser`: options anywhere (`su root -c CMD`); `-c`
/// and `--session-command` strings run in the user's shell; the words after USER are that
/// shell's own arguments (`su root -- -c CMD`), and the shell is `-s SHELL` when given (`su -s
/// /bin/rm root -- -rf v` runs `rm -rf v`). `runuser -u USER CMD…` runs CMD directly.
fn su<'a>(program: &str, args: &'a [Word]) -> Unwrapped<'a> {
    let parsed = opts::SU.parse(args);
    // `su -`, `su -l`: a login shell runs the user's start-up files first (differential test).
    let login = parsed.has(Opt::Short('l'))
        || parsed
            .operands
            .first()
            .is_some_and(|&i| args[i].literal() == Some("-"));
    if login {
        return Unwrapped::Hidden(format!(
            "`{program} -` runs the login shell's start-up files, which the rules cannot see"
        ));
    }
    let mut runs: Vec<Unwrapped<'a>> = parsed
        .values(Opt::Short('c'))
        .chain(parsed.values(Opt::Long("session-command")))
        .map(|s| Unwrapped::Script(s.clone(), Some(Grammar::Posix)))
        .collect();
    let operands: Vec<&Word> = parsed
        .operands
        .iter()
        .map(|&i| &args[i])
        .skip_while(|w| w.literal() == Some("-"))
        .collect();
    if parsed.has(Opt::Short('u')) {
        runs.push(Unwrapped::Commands(vec![Cow::Owned(
            operands.into_iter().cloned().collect(),
        )]));
    } else if operands.len() > 1 || parsed.has(Opt::Short('s')) {
        let shell = parsed
            .values(Opt::Short('s'))
            .last()
            .cloned()
            .unwrap_or_else(|| Word::Literal("sh".to_owned()));
        let words: Vec<Word> = std::iter::once(shell)
            .chain(operands.into_iter().skip(1).cloned())
            .collect();
        runs.push(Unwrapped::Commands(vec![Cow::Owned(words)]));
    }
    if runs.is_empty() {
        return Unwrapped::Hidden(format!(
            "`{program}` with no command runs a shell that reads its commands from the input"
        ));
    }
    unless_unsure(program, &parsed, Unwrapped::All(runs))
}

/// util-linux `script [options] [FILE]`: options anywhere, `-c CMD` run by the shell. Newer
/// versions run the words after `--` as a command: every operand suffix is checked too.
fn script(args: &[Word]) -> Unwrapped<'_> {
    let parsed = opts::SCRIPT.parse(args);
    let mut runs: Vec<Unwrapped<'_>> = parsed
        .values(Opt::Short('c'))
        .map(|s| Unwrapped::Script(s.clone(), Some(Grammar::Posix)))
        .collect();
    if runs.is_empty() && !parsed.has(Opt::Short('V')) && !parsed.has(Opt::Short('h')) {
        // Without `-c`, script's shell reads its commands from the input.
        return Unwrapped::Hidden(
            "`script` with no command runs a shell that reads its commands from the input"
                .to_owned(),
        );
    }
    runs.push(Unwrapped::Guesses);
    unless_unsure("script", &parsed, Unwrapped::All(runs))
}

/// `flock [options] FILE COMMAND…`, `flock [options] FILE -c COMMAND` (`-c` exactly, right
/// after FILE).
fn flock(args: &[Word]) -> Unwrapped<'_> {
    let parsed = opts::FLOCK.parse(args);
    let rest = &args[parsed.first_operand(args.len())..];
    let sure = match rest {
        [_, flag, script, ..] if matches!(flag.literal(), Some("-c" | "--command")) => {
            Unwrapped::Script(script.clone(), Some(Grammar::Posix))
        }
        [_, command @ ..] if !command.is_empty() => commands([command]),
        _ => Unwrapped::Nothing,
    };
    unless_unsure("flock", &parsed, sure)
}

/// `find ... -exec CMD {} ;` (also `-execdir`, `-ok`, `-okdir`): every such command.
fn find(args: &[Word]) -> Unwrapped<'_> {
    let mut found = Vec::new();
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
        found.push(&rest[..end]);
        rest = &rest[end..];
    }
    commands(found)
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
        // `bash FILE ARG…` runs the script FILE, searched on PATH when not in the working
        // directory (`bash sudo` reads the program `sudo` as its script: differential test):
        // what it runs is the file's, out of sight, but the file is named as a command too.
        (false, Some(_)) => commands([&args[i..]]),
        (false, None) => Unwrapped::Hidden(format!(
            "`{program}` reads the commands it runs from its input"
        )),
    }
}
