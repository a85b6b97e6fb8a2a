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
        let have = Shape::of(program, words[1..].iter().map(Word::literal));
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
                shape.flags.insert(match short_for_long(program, name) {
                    Some(c) => c.to_string(),
                    None => format!("--{name}"),
                });
            } else {
                for c in arg.chars().skip(1) {
                    shape.flags.insert(same_short(program, c).to_string());
                }
            }
        }
        shape
    }
}

/// Long options with a short equivalent, for the programs deny rules usually name.
fn short_for_long(program: &str, long: &str) -> Option<char> {
    Some(match (program, long) {
        ("rm" | "cp" | "rmdir" | "shred", "recursive") => 'r',
        ("rm" | "cp" | "mv" | "ln" | "shred" | "git", "force") => 'f',
        ("rm", "dir") => 'd',
        ("rm" | "cp" | "mv", "interactive") => 'i',
        ("rm" | "cp" | "mv" | "rmdir" | "chmod" | "chown", "verbose") => 'v',
        ("chmod" | "chown" | "chgrp", "recursive") => 'R',
        ("git", "delete") => 'd',
        _ => return None,
    })
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
