//! The specifier of a `bash(...)` rule and how it matches the commands of a [`Script`]
//! (semantics in `docs/permissions.md`).
//!
//! - **Allow** (`allows`): the command's literal words start with the rule's words (`prefix:*`)
//!   or equal them (exact rule). Nothing is normalised: `/usr/bin/git` is not `git`, `-sb` is not
//!   `-s -b`, because an allow rule must match only what the user saw.
//! - **Deny** (`denies`): normalised. The program is compared by its last path component
//!   (`/bin/rm`, `\rm`, `"rm"`, `r''m` are all `rm`). The rest of the rule splits into flags and
//!   operands: every flag the rule names must be among the command's flags, and the rule's
//!   operands must appear, in order, among the command's operands (for an exact rule: the same
//!   flags and the same operands). Short flags are single letters wherever they are written
//!   (`-rf` = `-r -f` = `-fr` = `-f -r`, before or after operands, as GNU getopt reads them;
//!   after `--` everything is an operand). Long flags are mapped to their short letter for
//!   programs listed in [`short_for_long`] (`rm --recursive --force` = `rm -rf`, `rm -R` =
//!   `rm -r`); other long flags match only themselves. A command whose arguments include words
//!   computed at run time (`rm $FLAGS x`, `rm -{r,f} x`) and that the rule could match once
//!   they are known is denied too ([`Verdict::Maybe`]).

use std::collections::BTreeSet;

use super::shell::{Word, program_name};

/// The words of a `bash(...)` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommandPattern {
    pub words: Vec<String>,
    /// `prefix:*` rather than an exact command.
    pub prefix: bool,
}

/// Whether a deny rule matches one simple command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    No,
    Yes,
    /// Only words computed at run time could decide it.
    Maybe,
}

impl CommandPattern {
    /// `None` for a specifier that matches every command (`""`, `*`, `:*`).
    pub(crate) fn parse(spec: &str) -> Option<CommandPattern> {
        let (text, prefix) = match spec.strip_suffix(":*") {
            Some(p) => (p, true),
            None => (spec, false),
        };
        let words: Vec<String> = text.split_whitespace().map(str::to_owned).collect();
        if words.is_empty() {
            return None;
        }
        Some(CommandPattern { words, prefix })
    }

    /// How the pattern reads back, `git status` or `git status …`.
    pub(crate) fn shown(&self) -> String {
        let words = self.words.join(" ");
        if self.prefix {
            format!("{words} …")
        } else {
            words
        }
    }

    pub(crate) fn allows(&self, words: &[String]) -> bool {
        if self.prefix {
            words.starts_with(&self.words)
        } else {
            words == self.words.as_slice()
        }
    }

    /// Whether `words` run the rule's program (the cheap first test of [`Self::denies`]).
    pub(crate) fn names_program_of(&self, words: &[Word]) -> bool {
        let program = words.first().and_then(Word::literal).map(program_name);
        let rule_program = self.words.first().map(|p| program_name(p));
        program.is_some() && program == rule_program
    }

    pub(crate) fn denies(&self, words: &[Word]) -> Verdict {
        let (Some(program), Some(rule_program)) =
            (words.first().and_then(Word::literal), self.words.first())
        else {
            return Verdict::No;
        };
        let program = program_name(program);
        if program != program_name(rule_program) {
            return Verdict::No;
        }
        let want = Shape::of(program, self.words[1..].iter().map(|w| Some(w.as_str())));
        let mut have = Shape::of(program, words[1..].iter().map(Word::literal));
        have.complete_long_flags(&want);
        let matched = if self.prefix {
            want.flags.is_subset(&have.flags) && is_subsequence(&want.operands, &have.operands)
        } else {
            want.flags == have.flags && want.operands == have.operands
        };
        match (matched, have.dynamic) {
            (true, _) => Verdict::Yes,
            (false, true) => Verdict::Maybe,
            (false, false) => Verdict::No,
        }
    }
}

/// A command's arguments as flags (normalised) and operands.
struct Shape {
    flags: BTreeSet<String>,
    operands: Vec<String>,
    /// Some argument is computed at run time.
    dynamic: bool,
}

impl Shape {
    fn of<'a>(program: &str, args: impl Iterator<Item = Option<&'a str>>) -> Shape {
        let mut shape = Shape {
            flags: BTreeSet::new(),
            operands: Vec::new(),
            dynamic: false,
        };
        let mut options_done = false;
        for arg in args {
            let Some(arg) = arg else {
                shape.dynamic = true;
                continue;
            };
            if options_done || arg == "-" || !arg.starts_with('-') {
                shape.operands.push(arg.to_owned());
            } else if arg == "--" {
                options_done = true;
            } else if let Some(long) = arg.strip_prefix("--") {
                let name = long.split('=').next().unwrap_or(long);
                // GNU getopt takes any unambiguous prefix of a long option (`rm --rec --f`);
                // an ambiguous one stands for each option it could be (deny rules match
                // more, never less).
                let full = long_options(program, name);
                if full.is_empty() {
                    shape.flags.insert(format!("--{name}"));
                }
                for (long, short) in full {
                    shape.flags.insert(match short {
                        Some(c) => c.to_string(),
                        None => format!("--{long}"),
                    });
                }
            } else {
                for c in arg.chars().skip(1) {
                    shape.flags.insert(same_short(program, c).to_string());
                }
            }
        }
        shape
    }
}

impl Shape {
    /// A long flag of the command that is a prefix of a long flag the rule names (`--for` for
    /// `--force`, on a program whose options Ferrite does not list) counts as that flag: GNU
    /// getopt and git's option parser both take unambiguous prefixes.
    fn complete_long_flags(&mut self, want: &Shape) {
        let completed: Vec<String> = self
            .flags
            .iter()
            .filter_map(|have| have.strip_prefix("--").filter(|h| !h.is_empty()))
            .flat_map(|have| {
                want.flags
                    .iter()
                    .filter(move |w| w.strip_prefix("--").is_some_and(|w| w.starts_with(have)))
                    .cloned()
            })
            .collect();
        self.flags.extend(completed);
    }
}

/// The long options of the programs deny rules usually name, each with its short letter.
fn known_long_options(program: &str) -> &'static [(&'static str, Option<char>)] {
    LONG_OPTIONS
        .iter()
        .find(|(programs, _)| programs.contains(&program))
        .map_or(&[], |(_, options)| options)
}

type LongOptions = &'static [(&'static str, Option<char>)];

/// [`known_long_options`]: the programs, then their long options.
const LONG_OPTIONS: &[(&[&str], LongOptions)] = &[
    (
        &["rm"],
        &[
            ("force", Some('f')),
            ("interactive", Some('i')),
            ("one-file-system", None),
            ("no-preserve-root", None),
            ("preserve-root", None),
            ("recursive", Some('r')),
            ("dir", Some('d')),
            ("verbose", Some('v')),
            ("help", None),
            ("version", None),
        ],
    ),
    (
        &["cp"],
        &[
            ("archive", Some('a')),
            ("force", Some('f')),
            ("interactive", Some('i')),
            ("recursive", Some('r')),
            ("verbose", Some('v')),
            ("link", Some('l')),
            ("symbolic-link", Some('s')),
            ("no-clobber", Some('n')),
            ("update", Some('u')),
            ("target-directory", Some('t')),
            ("dereference", Some('L')),
            ("no-dereference", Some('P')),
            ("preserve", None),
            ("parents", None),
            ("remove-destination", None),
            ("help", None),
            ("version", None),
        ],
    ),
    (
        &["mv"],
        &[
            ("force", Some('f')),
            ("interactive", Some('i')),
            ("no-clobber", Some('n')),
            ("update", Some('u')),
            ("verbose", Some('v')),
            ("target-directory", Some('t')),
            ("backup", Some('b')),
            ("help", None),
            ("version", None),
        ],
    ),
    (
        &["ln"],
        &[
            ("force", Some('f')),
            ("symbolic", Some('s')),
            ("interactive", Some('i')),
            ("verbose", Some('v')),
            ("no-dereference", Some('n')),
            ("relative", Some('r')),
            ("target-directory", Some('t')),
            ("help", None),
            ("version", None),
        ],
    ),
    (
        &["rmdir"],
        &[
            ("parents", Some('p')),
            ("verbose", Some('v')),
            ("ignore-fail-on-non-empty", None),
            ("help", None),
            ("version", None),
        ],
    ),
    (
        &["shred"],
        &[
            ("force", Some('f')),
            ("iterations", Some('n')),
            ("remove", Some('u')),
            ("verbose", Some('v')),
            ("zero", Some('z')),
            ("exact", Some('x')),
            ("random-source", None),
            ("size", Some('s')),
            ("help", None),
            ("version", None),
        ],
    ),
    (
        &["chmod", "chown", "chgrp"],
        &[
            ("recursive", Some('R')),
            ("verbose", Some('v')),
            ("changes", Some('c')),
            ("silent", Some('f')),
            ("quiet", Some('f')),
            ("reference", None),
            ("preserve-root", None),
            ("no-preserve-root", None),
            ("dereference", None),
            ("no-dereference", Some('h')),
            ("from", None),
            ("help", None),
            ("version", None),
        ],
    ),
    (
        &["git"],
        &[
            ("force", Some('f')),
            ("force-with-lease", None),
            ("force-if-includes", None),
            ("delete", Some('d')),
            ("hard", None),
            ("mirror", None),
            ("all", None),
            ("tags", None),
            ("prune", None),
        ],
    ),
];

/// The long options `--name` may be on `program`: itself when listed, else every listed option
/// it is a prefix of (more than one when ambiguous); none when the program's options are not
/// listed or nothing matches.
fn long_options(program: &str, name: &str) -> Vec<(&'static str, Option<char>)> {
    let known = known_long_options(program);
    if let Some(exact) = known.iter().find(|(long, _)| *long == name) {
        return vec![*exact];
    }
    if name.is_empty() {
        return Vec::new();
    }
    known
        .iter()
        .filter(|(long, _)| long.starts_with(name))
        .copied()
        .collect()
}

/// Short options that are the same option (`rm -R` is `rm -r`).
fn same_short(program: &str, c: char) -> char {
    match (program, c) {
        ("rm" | "cp", 'R') => 'r',
        _ => c,
    }
}

fn is_subsequence(needle: &[String], hay: &[String]) -> bool {
    let mut hay = hay.iter();
    needle.iter().all(|n| hay.any(|h| h == n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deny(rule: &str, words: &[&str]) -> Verdict {
        let p = CommandPattern::parse(rule).unwrap();
        let words: Vec<Word> = words
            .iter()
            .map(|w| match w.strip_prefix('$') {
                Some(_) => Word::Dynamic((*w).to_owned()),
                None => Word::Literal((*w).to_owned()),
            })
            .collect();
        p.denies(&words)
    }

    #[test]
    fn deny_normalises_flags_and_programs() {
        for words in [
            &["rm", "-rf", "x"][..],
            &["rm", "-r", "-f", "x"],
            &["rm", "-fr", "x"],
            &["rm", "x", "-f", "-r"],
            &["rm", "--recursive", "--force", "x"],
            &["rm", "-R", "--force", "x"],
            &["/bin/rm", "-rfv", "x"],
        ] {
            assert_eq!(deny("rm -rf:*", words), Verdict::Yes, "{words:?}");
        }
        assert_eq!(deny("rm -rf:*", &["rm", "-r", "x"]), Verdict::No);
        assert_eq!(deny("rm -rf:*", &["rm", "--", "-rf"]), Verdict::No);
        assert_eq!(deny("rm -rf:*", &["rm", "-f", "$X"]), Verdict::Maybe);
        assert_eq!(deny("rm -rf:*", &["rmdir", "-rf"]), Verdict::No);
        assert_eq!(
            deny("git push --force:*", &["git", "-C", "d", "push", "-f"]),
            Verdict::Yes
        );
        assert_eq!(deny("git push:*", &["git", "pull"]), Verdict::No);
        assert_eq!(deny("rm -rf /", &["rm", "-fr", "/"]), Verdict::Yes);
        assert_eq!(deny("rm -rf /", &["rm", "-fr", "/x"]), Verdict::No);
    }

    /// GNU getopt takes unambiguous prefixes of long options (issue 28).
    #[test]
    fn deny_reads_abbreviated_long_options() {
        for words in [
            &["rm", "--rec", "--f", "v"][..],
            &["rm", "--recursive", "--for", "v"],
            &["rm", "--r", "--fo", "v"],
            &["rm", "-r", "--forc", "v"],
        ] {
            assert_eq!(deny("rm -rf:*", words), Verdict::Yes, "{words:?}");
        }
        // `--d` could only be `--dir`; `--v` is `--verbose` or `--version`: both count.
        assert_eq!(deny("rm -d:*", &["rm", "--d", "x"]), Verdict::Yes);
        assert_eq!(deny("rm -v:*", &["rm", "--ve", "x"]), Verdict::Yes);
        assert_eq!(deny("rm -rf:*", &["rm", "--rec", "v"]), Verdict::No);
        // Programs whose options are not listed: a prefix of the rule's own long flag.
        assert_eq!(
            deny(
                "git push --force-with-lease:*",
                &["git", "push", "--force-w"]
            ),
            Verdict::Yes
        );
        assert_eq!(
            deny("npm publish --force:*", &["npm", "publish", "--for"]),
            Verdict::Yes
        );
        assert_eq!(
            deny("npm publish --force:*", &["npm", "publish", "--dry-run"]),
            Verdict::No
        );
    }

    #[test]
    fn allow_is_literal() {
        let p = CommandPattern::parse("git status:*").unwrap();
        assert!(p.allows(&["git".into(), "status".into(), "-s".into()]));
        assert!(!p.allows(&["/usr/bin/git".into(), "status".into()]));
        let exact = CommandPattern::parse("git status").unwrap();
        assert!(exact.allows(&["git".into(), "status".into()]));
        assert!(!exact.allows(&["git".into(), "status".into(), "-s".into()]));
        assert_eq!(CommandPattern::parse(":*"), None);
        assert_eq!(p.shown(), "git status …");
    }
}
