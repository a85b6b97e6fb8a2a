//! What a shell command line runs, read with a real bash grammar (tree-sitter-bash), for the
//! `bash(...)` permission rules. Two questions, answered conservatively in opposite directions:
//!
//! - **Is it fully understood?** ([`Script::plain`], used by allow rules.) Only when the whole
//!   line is simple commands of literal words joined by `;`, `&`, `&&`, `||`, `|`, `|&` and
//!   newlines (comments are fine). A word is literal when nothing in it is expanded by the shell:
//!   bare words without `$`, backquotes, glob (`*` `?` `[`), brace (`{`) or other special
//!   characters; `'single'` quotes; `"double"` quotes with no `$` or backquote inside;
//!   `\`-escapes and line continuations. Redirections are allowed only to `/dev/null` (in or out)
//!   and between file descriptors (`2>&1`, `>&-`). Anything else (any `$`-expansion anywhere,
//!   command or process substitution, leading `VAR=x` assignments, here-docs and here-strings,
//!   subshells, `{ groups; }`, functions, `if`/`for`/`while`/`case`, `[[ ]]`, `!`, `eval`,
//!   `export`, a parse error) means "not understood". `sh -c S` / `bash -c S` (and `dash`,
//!   `zsh`, `ksh`) with a literal `S` and nothing else is understood when `S` is: its commands
//!   are checked too.
//! - **What could it run?** ([`Script::commands`], used by deny rules.) Every simple command
//!   anywhere: inside substitutions, subshells, groups, functions, loops, `case` arms, here-doc
//!   bodies, process substitutions, the strings of `sh -c`, `su -c`, `env -S`, `trap`, `watch`
//!   and `sudo -s` (parsed recursively), after leading `VAR=x` assignments, and after the wrappers
//!   `env`, `command`, `builtin`, `exec`, `nice`, `nohup`, `setsid`, `time`, `timeout`, `stdbuf`,
//!   `ionice`, `xargs`, `sudo`, `doas`, `busybox` and `find -exec/-execdir/-ok/-okdir` (each with
//!   its own options skipped), and rarer ones (`chroot`, `strace`, `flock`, ...: every suffix of
//!   their arguments, see [`wrappers`]). A wrapped command is reported both whole and unwrapped, so a deny
//!   rule may name either. [`Script::hidden`] lists the ways the line hides what it runs: a
//!   program name computed at run time (`$X`, `$(...)`, a glob or brace word, `$'...'`), `eval`,
//!   a script string that is not literal, a shell reading its commands from its input
//!   (`... | sh`, `bash <<< ...`), nesting too deep to follow.
//!
//! Not covered (documented in `docs/permissions.md`): what a program does by itself (`git -c
//! alias...`, `find -delete`, `python -c`, a script file run with `bash file.sh` or `./x.sh`),
//! and bash features the grammar does not model (arithmetic subscripts evaluated at run time).
//! Deny rules are a guard on command lines, not a sandbox.

mod bounds;
mod follow;
mod getopt;
mod misread;
mod programs;
#[cfg(test)]
mod tests;
mod walker;
mod wrapper_options;
mod wrappers;

use tree_sitter::Node;

use crate::shell::Shell;
#[cfg(test)]
use bounds::MAX_BYTES;
pub(crate) use bounds::MAX_MATCH_WORK;
use bounds::{MAX_LEVEL, TOO_DEEP};
pub(crate) use programs::{possibly_wrapped, runs_other_commands};
use walker::Walker;

/// Whether a command may still be read as a possible wrapper of the words after it
/// (`Unwrapped::Guesses`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Guessing {
    Yes,
    No,
}

/// One word of a simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Word {
    /// The word's value after quote removal: nothing in it is expanded by the shell.
    Literal(String),
    /// A word the shell expands at run time; the source text.
    Dynamic(String),
}

impl Word {
    pub(crate) fn literal(&self) -> Option<&str> {
        match self {
            Word::Literal(s) => Some(s),
            Word::Dynamic(_) => None,
        }
    }

    pub(crate) fn shown(&self) -> &str {
        match self {
            Word::Literal(s) | Word::Dynamic(s) => s,
        }
    }
}

/// A simple command of a fully understood line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PlainCommand {
    pub words: Vec<String>,
    /// For `sh -c S`: the commands of `S`, when `S` is itself fully understood.
    pub inner: Option<Vec<PlainCommand>>,
}

/// A command that may run, for deny rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub words: Vec<Word>,
    /// Its program may run a command that starts at any later literal word that is not an
    /// option (a program whose options are not modelled: `setarch x86_64 rm -rf v`).
    pub any_suffix: bool,
}

impl Found {
    /// The word lists this command may run: itself, and for `any_suffix` every suffix that
    /// starts at a literal non-option word (not copied: a long line stays linear in memory).
    pub(crate) fn runs(&self) -> impl Iterator<Item = &[Word]> {
        let suffixes = (1..self.words.len())
            .filter(|_| self.any_suffix)
            .filter(|&i| self.words[i].literal().is_some_and(|s| !s.starts_with('-')))
            .map(|i| &self.words[i..]);
        std::iter::once(self.words.as_slice()).chain(suffixes)
    }
}

/// A command line as the permission rules see it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Script {
    /// The simple commands, in order, when the whole line is fully understood.
    pub plain: Option<Vec<PlainCommand>>,
    /// Every simple command found anywhere; the program name is the first word, as written.
    pub commands: Vec<Found>,
    /// Why the line hides what it runs (empty when it does not).
    pub hidden: Vec<String>,
    /// The grammar could not parse the line (a syntax error, or a construct it does not know).
    pub unparseable: bool,
    /// Why the line is beyond what the rules read ([`bounds`]): too long, too deep, too much
    /// work. Such a line is never understood, and deny rules cannot be checked against it: it
    /// asks (`permissions::decide`).
    pub beyond: Option<String>,
    /// The work spent on the line so far ([`bounds::MAX_WORK`]).
    work: usize,
}

impl Script {
    /// Reads `command` as `shell` will run it. Under bash the grammar is bash's own; under any
    /// other `sh` the constructs the two read differently count as hiding what runs.
    pub(crate) fn parse(command: &str, shell: Shell) -> Script {
        let grammar = match shell {
            Shell::Bash => Grammar::Bash,
            Shell::Sh => Grammar::Posix,
        };
        let mut script = Script::default();
        if let Some(why) = bounds::before_parsing(command) {
            script.beyond = Some(why);
            return script;
        }
        let plain = analyze(command, grammar, 0, &mut script);
        // A line that hides anything is never fully understood, wherever the hiding was found.
        script.plain = plain
            .filter(|_| script.hidden.is_empty() && !script.unparseable && script.beyond.is_none());
        script
    }
}

/// The shell a piece of the line is run by, which decides how far the bash grammar can be
/// trusted with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Grammar {
    /// bash (`bash -c`, and the top level when commands run with bash).
    Bash,
    /// A POSIX shell that is not bash (`sh`, `dash`, `ash`, and whatever runs `su -c`,
    /// `watch`, `sudo -s` strings): bash-only constructs are read differently there.
    Posix,
    /// zsh, ksh, mksh: further from bash still. Their strings are read as `Posix` for deny
    /// rules and are never fully understood.
    Foreign,
}

/// The program a command word names, for deny rules: `/bin/rm` → `rm` (quotes and escapes are
/// already gone from a literal word).
pub(crate) fn program_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Parses `src` (found at `level`, run by a shell of `grammar`), adds what it finds to `out`,
/// and returns the plain commands when the whole of `src` is understood.
fn analyze(
    src: &str,
    grammar: Grammar,
    level: usize,
    out: &mut Script,
) -> Option<Vec<PlainCommand>> {
    if level > MAX_LEVEL {
        out.exceed(TOO_DEEP);
        return None;
    }
    if !out.charge(src.len()) {
        return None;
    }
    // A NUL cannot reach the shell (an argument cannot hold one) and the grammar stops at it.
    if src.contains('\0') {
        out.unparseable = true;
        return None;
    }
    // The grammar reads a CR (and other control characters) as a blank where bash reads it as
    // part of a word: `git status␍#x; touch M` is one command to the grammar, two to bash.
    if let Some(c) = src
        .chars()
        .find(|c| c.is_control() && !matches!(c, '\t' | '\n'))
    {
        out.hidden.push(format!(
            "the command contains the control character U+{:04X}, which bash and Ferrite's \
             grammar read differently",
            u32::from(c)
        ));
        return None;
    }
    let tree = bounds::parse(src, out)?;
    let root = tree.root_node();
    let reading = match misread::misread(root, src, grammar) {
        Ok(reading) => reading,
        Err(why) => {
            out.hidden.push(why);
            misread::Reading::default()
        }
    };
    let glued = reading.glued;
    let mut walker = Walker {
        src,
        grammar,
        out,
        plain: Some(Vec::new()),
        joined: Vec::new(),
        before_heredoc: reading.before_heredoc,
    };
    if root.has_error() {
        walker.out.unparseable = true;
        walker.plain = None;
    }
    walker.program(root, level + 1);
    // bash joins what a line continuation glues together (`sta\⏎tus`); the walker does so for
    // the words of a command, and anywhere else the grammar splits what bash joins.
    walker.joined.sort_unstable();
    if glued
        .iter()
        .any(|at| walker.joined.binary_search(at).is_err())
    {
        walker.out.hidden.push(
            "a line continuation joins parts of the command that Ferrite's grammar reads apart"
                .to_owned(),
        );
        walker.plain = None;
    }
    walker.plain
}

/// The operands and operators of a chain of lists and pipelines (`a && b | c; …`), in order.
/// The grammar nests a chain one level per operator; read flat, a long chain is not "deep".
fn chain(node: Node<'_>) -> Vec<Node<'_>> {
    let mut out = Vec::new();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if matches!(n.kind(), "list" | "pipeline") {
            let mut cursor = n.walk();
            let children: Vec<Node<'_>> = n.children(&mut cursor).collect();
            stack.extend(children.into_iter().rev());
        } else {
            out.push(n);
        }
    }
    out
}

/// Builtins whose words may look literal but which run or define code: never plain.
fn is_unplain_builtin(program: &str) -> bool {
    matches!(
        program,
        "eval" | "source" | "." | "exec" | "trap" | "alias" | "enable" | "builtin" | "command"
    )
}

fn only_line_continuations(gap: &str) -> bool {
    !gap.is_empty() && {
        let mut rest = gap;
        loop {
            if rest.is_empty() {
                break true;
            }
            if let Some(r) = rest.strip_prefix("\\\r\n") {
                rest = r;
            } else if let Some(r) = rest.strip_prefix("\\\n") {
                rest = r;
            } else {
                break false;
            }
        }
    }
}

/// The `` `...` `` segments of a text (a backslash escapes the next character and is kept).
fn backquoted(text: &str) -> Vec<String> {
    let mut segments = Vec::new();
    let mut current: Option<String> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (c, current.as_mut()) {
            // Kept as written: a segment with a backslash is not judged (`heredoc_backquotes`).
            ('\\', Some(seg)) => {
                seg.push('\\');
                if let Some(n) = chars.next() {
                    seg.push(n);
                }
            }
            ('\\', None) => {
                chars.next();
            }
            ('`', Some(_)) => segments.extend(current.take()),
            ('`', None) => current = Some(String::new()),
            (c, Some(seg)) => seg.push(c),
            (_, None) => {}
        }
    }
    // An unterminated `...` still runs up to the end.
    segments.extend(current);
    segments
}

/// `b` added to the end of `a` in place: a word built of many parts stays linear to build
/// (`'\''`-quoted nesting has thousands of parts).
fn append(a: &mut Word, b: &Word) {
    match (&mut *a, b) {
        (Word::Literal(x), Word::Literal(y)) => x.push_str(y),
        (Word::Dynamic(x), y) => x.push_str(y.shown()),
        (Word::Literal(x), Word::Dynamic(y)) => {
            let mut text = std::mem::take(x);
            text.push_str(y);
            *a = Word::Dynamic(text);
        }
    }
}

/// A bare word: backslash escapes removed; literal only when the shell expands nothing in it.
fn unquoted(text: &str) -> Word {
    let mut value = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(n) => value.push(n),
            },
            // Expansions, globs, braces and anything the grammar should have split off.
            '$' | '`' | '*' | '?' | '[' | ']' | '{' | '}' | '(' | ')' | '<' | '>' | '|' | ';'
            | '&' | '\'' | '"' | ' ' | '\t' | '\n' => return Word::Dynamic(text.to_owned()),
            c => value.push(c),
        }
    }
    Word::Literal(value)
}

/// A `"double-quoted"` word: literal only without `$` or backquotes inside.
fn double_quoted(text: &str) -> Word {
    let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) else {
        return Word::Dynamic(text.to_owned());
    };
    let mut value = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(n @ ('$' | '`' | '"' | '\\')) => value.push(n),
                Some(n) => {
                    value.push('\\');
                    value.push(n);
                }
                None => value.push('\\'),
            },
            '$' | '`' | '"' => return Word::Dynamic(text.to_owned()),
            c => value.push(c),
        }
    }
    Word::Literal(value)
}

fn shorten(text: &str) -> String {
    const MAX: usize = 60;
    match text.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}
