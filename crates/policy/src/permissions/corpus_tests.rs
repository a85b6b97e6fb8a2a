//! The bash rule corpus (`corpus.txt`), the "allowed + anything else is never allowed"
//! property, and a fuzz run of the parser and matcher (`FERRITE_FUZZ_CASES`, default 3,000;
//! `bench/fuzz_shell.sh` runs a million).

use std::path::PathBuf;
use std::time::Instant;

use proptest::prelude::*;

use super::shell::Script;
use super::*;
use crate::shell::Shell;

const ALLOW: &[&str] = &["bash(git status:*)", "bash(ls:*)", "bash(echo:*)"];
const DENY: &[&str] = &["bash(rm -rf:*)"];

fn rules(allow: &[&str], deny: &[&str]) -> Rules {
    let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
    Rules::from_strings(&s(allow), &s(deny)).unwrap()
}

fn decide_command(command: &str, mode: Mode, rules: &Rules) -> Decision {
    let roots = vec![PathBuf::from("/ws")];
    decide(
        &Call {
            tool: "bash",
            access: &Access::Execute {
                command: command.to_owned(),
            },
            mode,
            harness: Harness::Code,
            force_ask: false,
            roots: &roots,
            shell: Shell::Bash,
        },
        rules,
    )
}

fn letter(d: &Decision) -> char {
    match d {
        Decision::Allow => 'A',
        Decision::Ask => 'Q',
        Decision::Deny(_) => 'D',
    }
}

#[test]
fn corpus_decisions() {
    let allow = rules(ALLOW, &[]);
    let deny = rules(&[], DENY);
    let mut cases = 0;
    let mut wrong = Vec::new();
    for line in include_str!("corpus.txt").lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (expected, command) = line.split_at(2);
        let command = command
            .strip_prefix(' ')
            .unwrap_or(command)
            .replace('⏎', "\n")
            .replace('␍', "\r")
            .replace('␋', "\u{b}")
            .replace('␌', "\u{c}");
        let got_allow = decide_command(&command, Mode::Ask, &allow);
        let got_deny = decide_command(&command, Mode::Full, &deny);
        let got: String = [letter(&got_allow), letter(&got_deny)].iter().collect();
        if got != expected {
            wrong.push(format!(
                "{expected} expected, {got} got: {command:?} ({got_deny:?})"
            ));
        }
        cases += 1;
    }
    assert!(cases >= 300, "only {cases} cases");
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn deny_messages_say_why() {
    let deny = rules(&[], DENY);
    let why = |c: &str| match decide_command(c, Mode::Full, &deny) {
        Decision::Deny(why) => why,
        other => panic!("{c}: {other:?}"),
    };
    assert_eq!(
        why("/bin/rm -r -f x"),
        "denied by the rule `bash(rm -rf:*)` (`/bin/rm -r -f x`)"
    );
    assert_eq!(
        why("$X -rf x"),
        "the program `$X` is computed at run time, so the deny rule `bash(rm -rf:*)` cannot be checked; run the commands directly"
    );
    assert!(why("eval 'rm -rf x'").starts_with("`eval` runs a string built at run time"));
    assert!(why("rm -f $F x").contains("computed at run time"));
    assert!(why("echo 'x").contains("not valid shell syntax"));
}

/// Issue 34: a command too long, too deep or too costly for the rules is never run without a
/// question: in `full` mode with a deny rule it asks, and where nobody can be asked it is
/// refused, saying why. (What reading one costs is measured by `bench/shell_bounds.sh`.)
#[test]
fn a_command_beyond_the_bounds_asks_even_in_full_mode() {
    let deny = rules(&[], DENY);
    let allow = rules(ALLOW, &[]);
    let huge = "rm -rf v; ".repeat(400_000);
    let mut nested = "rm -rf v".to_owned();
    while nested.len() <= 64 * 1024 {
        nested = format!("bash -c '{}'", nested.replace('\'', "'\\''"));
    }
    let deep = format!("{}rm -rf v{}", "$(".repeat(20_000), ")".repeat(20_000));
    let wrapped = format!("{}rm -rf v", "nice ".repeat(10_000));
    // Every suffix names the rule's program: matching them all would be quadratic.
    let many_programs = format!("fakeroot {}v", "rm ".repeat(20_000));
    for c in [&huge, &nested, &deep, &wrapped, &many_programs] {
        let shown = &c[..40];
        assert_eq!(
            decide_command(c, Mode::Full, &deny),
            Decision::Ask,
            "{shown}"
        );
        assert_eq!(
            decide_command(c, Mode::Auto, &deny),
            Decision::Ask,
            "{shown}"
        );
        assert_eq!(
            decide_command(c, Mode::Ask, &allow),
            Decision::Ask,
            "{shown}"
        );
    }
    let roots = vec![PathBuf::from("/ws")];
    let unattended = decide(
        &Call {
            tool: "bash",
            access: &Access::Execute { command: huge },
            mode: Mode::Full,
            harness: Harness::Unattended,
            force_ask: false,
            roots: &roots,
            shell: Shell::Bash,
        },
        &deny,
    );
    assert!(
        matches!(&unattended, Decision::Deny(why) if why.contains("more than the 64 KiB")),
        "{unattended:?}"
    );
    // Without deny rules `full` runs what it is given, as it always has.
    assert_eq!(
        decide_command(&nested, Mode::Full, &rules(&[], &[])),
        Decision::Allow
    );
}

/// Allowed commands, as the rules above allow them.
const ALLOWED: &[&str] = &[
    "git status",
    "git status -s",
    "ls -la",
    "echo hi",
    "git status -- src",
    "'git' status",
];

/// Templates that put `{p}` (a command that is not allowed) somewhere it runs, next to `{a}` (an
/// allowed command).
const CONSTRUCTS: &[&str] = &[
    "{a} & {p}",
    "{a} &{p}",
    "{a}; {p}",
    "{a} && {p}",
    "{a} || {p}",
    "{a} | {p}",
    "{a} |& {p}",
    "{a}\n{p}",
    "{a}\r\n{p}",
    "{p}; {a}",
    "{p} && {a}",
    "{a} $({p})",
    "{a} `{p}`",
    "{a} \"$({p})\"",
    "{a} -- \"$({p})\"",
    "{a} '$(x)' \"`{p}`\"",
    "{a} <({p})",
    "{a} >({p})",
    "{a} > >({p})",
    "{a} #'\n{p}",
    "{a} # \\\n{p}",
    "{a} \\\n; {p}",
    "({p}); {a}",
    "{ {p}; }; {a}",
    "{a} <<< \"$({p})\"",
    "{a} <<EOF\n$({p})\nEOF",
    "{a} $(( $({p}) ))",
    "{a} ${x:-$({p})}",
    "X=$({p}) {a}",
    "X=1 {a}",
    "sh -c '{a}; {p}'",
    "bash -c \"{a} && {p}\"",
    "eval '{p}'; {a}",
    "f() { {p}; }; {a}",
    "{a} > {f}",
    "{a} >> {f}",
    "{a} 2> {f}",
    "{a} &> {f}",
    "if {a}; then {p}; fi",
    "case x in x) {a};& y) {p};; esac",
    "{a}; trap '{p}' EXIT",
    "{a} | sh",
    "{a} | xargs {p}",
    "$({p}) {a}",
    "{a} $X",
];

fn payload() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec![
            "touch", "rm", "curl", "python3", "sh", "chmod", "cp", "mv", "tee", "dd", "x",
        ]),
        "[a-zA-Z0-9_./-]{1,12}",
    )
        .prop_map(|(prog, arg)| format!("{prog} {arg}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Combining an allowed command with any construct that runs something else never yields
    /// "allow".
    #[test]
    fn allowed_plus_anything_else_is_never_allowed(
        a in prop::sample::select(ALLOWED.to_vec()),
        construct in prop::sample::select(CONSTRUCTS.to_vec()),
        p in payload(),
        f in "[a-z]{1,8}(\\.txt)?",
    ) {
        let allow = rules(ALLOW, &[]);
        prop_assert_eq!(decide_command(a, Mode::Ask, &allow), Decision::Allow);
        let command = construct.replace("{a}", a).replace("{p}", &p).replace("{f}", &f);
        prop_assert_ne!(decide_command(&command, Mode::Ask, &allow), Decision::Allow, "{:?}", command);
    }

    /// The same with the construct spliced in after any word of the allowed command.
    #[test]
    fn anything_spliced_into_an_allowed_command_is_never_allowed(
        a in prop::sample::select(ALLOWED.to_vec()),
        at in 0usize..4,
        splice in prop::sample::select(vec![
            " $({p}) ", " `{p}` ", " \"$({p})\" ", " ; {p} ; ", " & {p} & ", " | {p} | ",
            " > {p} ", " <({p}) ", " #'\n{p}\n", " \n{p}\n ", " && {p} && ", " $X ", " *",
        ]),
        p in payload(),
    ) {
        let allow = rules(ALLOW, &[]);
        let words: Vec<&str> = a.split(' ').collect();
        let at = at.min(words.len());
        let command = format!(
            "{}{}{}",
            words[..at].join(" "),
            splice.replace("{p}", &p),
            words[at..].join(" ")
        );
        prop_assert_ne!(decide_command(&command, Mode::Ask, &allow), Decision::Allow, "{:?}", command);
    }
}

/// A small deterministic generator (splitmix64): no dependency, same inputs on every run.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub(super) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const TOKENS: &[&str] = &[
    "git",
    "status",
    "rm",
    "-rf",
    "-r",
    "-f",
    "--force",
    "x",
    "ls",
    "echo",
    "sh",
    "bash",
    "-c",
    "eval",
    "env",
    "sudo",
    "xargs",
    "find",
    "-exec",
    "{}",
    "\\;",
    "+",
    "timeout",
    "5",
    "nice",
    "$(",
    ")",
    "`",
    "'",
    "\"",
    "\\",
    "\n",
    "\r",
    ";",
    "&",
    "&&",
    "|",
    "||",
    "|&",
    "<",
    ">",
    ">>",
    "<<",
    "<<-",
    "<<<",
    "EOF",
    "{",
    "}",
    "(",
    ")",
    "((",
    "))",
    "$((",
    "[[",
    "]]",
    "[",
    "]",
    "$",
    "${",
    "$X",
    "#",
    "*",
    "?",
    "~",
    "=",
    "X=1",
    "case",
    "in",
    "esac",
    ";;",
    ";&",
    ";;&",
    "if",
    "then",
    "fi",
    "for",
    "do",
    "done",
    "while",
    "function",
    "f()",
    "!",
    "2>&1",
    ">/dev/null",
    "<(",
    ">(",
    "$'",
    "\\x72m",
    "\0",
    "é",
    "⏎",
    " ",
    " ",
    " ",
    "\t",
    "trap",
    "watch",
    "su",
    "-S",
    "--",
    "/bin/rm",
    "\\rm",
    "r''m",
];

pub(super) fn random_command(rng: &mut Rng) -> String {
    let mut s = String::new();
    let n = rng.below(24);
    for _ in 0..n {
        match rng.below(12) {
            0 => {
                // Arbitrary bytes, as the model could send them (lossily UTF-8).
                let bytes: Vec<u8> = (0..rng.below(6)).map(|_| rng.next() as u8).collect();
                s.push_str(&String::from_utf8_lossy(&bytes));
            }
            1 => s.push(' '),
            _ => s.push_str(TOKENS[rng.below(TOKENS.len())]),
        }
        if rng.below(3) == 0 {
            s.push(' ');
        }
    }
    s
}

/// The parser and the matcher never panic, whatever the input, and what they allow is
/// consistent: an allowed command was fully understood.
#[test]
fn fuzz_parser_and_matcher() {
    let cases: u64 = std::env::var("FERRITE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000);
    let seed: u64 = std::env::var("FERRITE_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed);
    let both = rules(ALLOW, DENY);
    let roots = vec![PathBuf::from("/ws")];
    let mut rng = Rng(seed);
    let started = Instant::now();
    let mut allowed = 0u64;
    for _ in 0..cases {
        let command = random_command(&mut rng);
        let script = Script::parse(&command, Shell::Bash);
        let d = decide_command(&command, Mode::Ask, &both);
        if d == Decision::Allow {
            allowed += 1;
            assert!(
                script.plain.is_some() && !script.unparseable,
                "allowed without being understood: {command:?}"
            );
        }
        let access = Access::Execute { command };
        let _ = options_for("bash", &access, &roots, Shell::Bash);
        let _ = always_rule(
            "bash",
            &access,
            &roots,
            Shell::Bash,
            OptionKind::AllowAlways,
        );
    }
    println!(
        "fuzz: {cases} commands in {:.1} s ({allowed} allowed), seed {seed}",
        started.elapsed().as_secs_f64()
    );
}
