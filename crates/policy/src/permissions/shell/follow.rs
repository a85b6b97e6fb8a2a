//! Following one simple command into what it runs: the command after `VAR=x` assignments, and
//! what a wrapper or shell runs ([`super::wrappers`]).

use super::bounds::WORK_PER_WORD;
use super::misread::is_assignment;
use super::walker::Walker;
use super::wrappers::{Unwrapped, unwrap};
use super::{
    Found, Grammar, Guessing, PlainCommand, Script, Word, analyze, program_name,
    runs_other_commands, shorten,
};

impl Walker<'_, '_> {
    /// Records `words` (and what its wrappers run) for deny rules, and returns, for a shell
    /// running a literal string, the plain commands of that string when it is understood.
    pub(super) fn follow(
        &mut self,
        words: &[Word],
        level: usize,
        guessing: Guessing,
    ) -> Option<Vec<PlainCommand>> {
        // Past the bounds nothing more is recorded; summing the words first would make a long
        // line of wrappers quadratic (`exec -a x time -f y …` × 3k took 2 s).
        if self.too_deep(level) || self.out.beyond.is_some() {
            self.not_plain();
            return None;
        }
        // Each wrapper level copies the words it runs, and may be read two ways (`exec`,
        // `time`): what is recorded is bounded, not only its nesting.
        let cost: usize = words.iter().map(|w| w.shown().len() + WORK_PER_WORD).sum();
        if !self.out.charge(cost) {
            self.not_plain();
            return None;
        }
        let found = self.out.commands.len();
        self.out.commands.push(Found {
            words: words.to_vec(),
            any_suffix: false,
        });
        // Words that bash may read as `VAR=x` assignments before the program (`BA\⏎R=2 rm`
        // is one once the continuation is joined, and after bash's `time`): the command after
        // them is followed too.
        let assignments = words.iter().take_while(|w| is_assignment(w)).count();
        if assignments > 0 && assignments < words.len() {
            self.follow(&words[assignments..], level + 1, guessing);
        }
        let program = match &words[0] {
            // `~` is the home directory, whatever HOME says at run time (`HOME=/bin/rm; ~ x`).
            // and bash expands it after `=` too (`a=~`).
            Word::Literal(p) if p.contains('~') => {
                self.out.hidden.push(format!(
                    "the program `{}` is computed at run time",
                    shorten(p)
                ));
                return None;
            }
            Word::Literal(p) => program_name(p).to_owned(),
            Word::Dynamic(text) => {
                self.out.hidden.push(format!(
                    "the program `{}` is computed at run time",
                    shorten(text)
                ));
                return None;
            }
        };
        let unwrapped = unwrap(&program, &words[1..]);
        self.unwrapped(unwrapped, found, &program, words, level, guessing)
    }

    /// Follows what the wrapper `program` (the command `words`, recorded at `found`) runs.
    fn unwrapped(
        &mut self,
        unwrapped: Unwrapped<'_>,
        found: usize,
        program: &str,
        words: &[Word],
        level: usize,
        guessing: Guessing,
    ) -> Option<Vec<PlainCommand>> {
        match unwrapped {
            Unwrapped::Commands(commands) => {
                for c in commands.iter().filter(|c| !c.is_empty()) {
                    // What a wrapper runs is never part of a plain line (unless an allow rule
                    // names the wrapper itself), so only its deny side matters here.
                    self.follow(c, level + 1, guessing);
                }
                None
            }
            Unwrapped::All(each) => {
                for u in each {
                    self.unwrapped(u, found, program, words, level, guessing);
                }
                None
            }
            // Every suffix of the arguments is already one of these: guessing again inside
            // them would find nothing new, and a long line would take exponential time.
            Unwrapped::Guesses if guessing == Guessing::No => None,
            Unwrapped::Guesses => {
                self.guesses(found, words, level);
                None
            }
            Unwrapped::Script(Word::Literal(s), grammar) => {
                // `trap` strings run in the shell that reads this line.
                let grammar = grammar.unwrap_or(self.grammar);
                let inner = analyze(&s, grammar, level + 1, self.out);
                inner.filter(|_| grammar != Grammar::Foreign)
            }
            Unwrapped::Script(Word::Dynamic(text), _) => {
                self.out.hidden.push(format!(
                    "`{program}` runs the string `{}`, computed at run time",
                    shorten(&text)
                ));
                None
            }
            Unwrapped::Hidden(why) => {
                self.out.hidden.push(why);
                None
            }
            Unwrapped::Nothing => None,
        }
    }

    /// A program that may run a command starting at any of its words: the suffixes are matched
    /// in place ([`Found::runs`]); those that start with a wrapper are followed for what they
    /// run in turn, and a word holding blanks or operators may be a script string it runs
    /// (`parallel 'rm -rf {}' ::: v`, `script --new-option 'rm -rf v'`): its commands are
    /// recorded too.
    fn guesses(&mut self, found: usize, words: &[Word], level: usize) {
        self.out.commands[found].any_suffix = true;
        for (i, word) in words.iter().enumerate().skip(1) {
            if self.out.beyond.is_some() {
                return;
            }
            let Some(w) = word.literal() else { continue };
            // An option's value may be the string (`--exec='rm -rf v'`).
            let text = match w.strip_prefix('-') {
                Some(option) => option.split_once('=').map(|(_, v)| v),
                None => {
                    if runs_other_commands(program_name(w)) {
                        self.follow(&words[i..], level + 1, Guessing::No);
                    }
                    Some(w)
                }
            };
            if let Some(text) = text.filter(|t| t.contains([' ', '\t', '\n', ';', '&', '|'])) {
                self.guessed_script(text, level + 1);
            }
        }
    }

    /// Records the commands of a string a program may run as shell code. It is only a guess,
    /// so what the string hides or fails to parse does not count against the line; the work
    /// does.
    fn guessed_script(&mut self, s: &str, level: usize) {
        let mut scratch = Script {
            work: self.out.work,
            ..Script::default()
        };
        analyze(s, Grammar::Posix, level, &mut scratch);
        self.out.work = scratch.work;
        if let Some(why) = scratch.beyond {
            self.out.exceed(&why);
        }
        self.out.commands.append(&mut scratch.commands);
    }
}
