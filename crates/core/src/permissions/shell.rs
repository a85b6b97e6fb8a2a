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

#[cfg(test)]
mod tests;
mod wrappers;

use tree_sitter::{Node, Parser};

use crate::shell::Shell;
use wrappers::{Unwrapped, unwrap};
pub(crate) use wrappers::{possibly_wrapped, runs_other_commands};

/// How deep the syntax tree, `sh -c '…'` strings and wrappers are followed, all counted
/// together, before giving up: a command nested deeper is "hidden" and never understood. (Chains
/// of `&&`, `|`, `;` do not count: they are flat.) Bounds the recursion, and so the stack.
const MAX_LEVEL: usize = 200;

const TOO_DEEP: &str = "commands nested too deeply to follow";

/// How many words of commands one line may make the rules follow, wrappers read every way
/// included.
const MAX_WORDS: usize = 1 << 20;

const TOO_MANY: &str = "too many commands to follow";

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
    /// The words of the commands followed so far, strings inside included (bounded by
    /// [`MAX_WORDS`]).
    words_followed: usize,
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
        let plain = analyze(command, grammar, 0, &mut script);
        // A line that hides anything is never fully understood, wherever the hiding was found.
        script.plain = plain.filter(|_| script.hidden.is_empty() && !script.unparseable);
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

fn new_parser() -> Option<Parser> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .ok()?;
    Some(parser)
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
        out.hidden.push(TOO_DEEP.to_owned());
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
    let Some(tree) = new_parser().and_then(|mut p| p.parse(src, None)) else {
        out.unparseable = true;
        return None;
    };
    let root = tree.root_node();
    let reading = match misread(root, src, grammar) {
        Ok(reading) => reading,
        Err(why) => {
            out.hidden.push(why);
            Reading::default()
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
    if glued.iter().any(|at| !walker.joined.contains(at)) {
        walker.out.hidden.push(
            "a line continuation joins parts of the command that Ferrite's grammar reads apart"
                .to_owned(),
        );
        walker.plain = None;
    }
    walker.plain
}

/// Where the grammar's tree is not what the shell will read (each found by the differential
/// test against bash, `differential_tests.rs`), by one walk over every node (iterative: the
/// tree may be deep). `Err` says why; `Ok` holds where a line continuation glues two nodes
/// together (bash joins them; the walker must have).
/// - text the grammar skips as blank: an escape (`"git"\ status` is the program `git status`
///   to bash; `git status \ #x; touch M` is one command), or a word it drops;
/// - a word the grammar reads as a keyword, assignment or file descriptor where bash reads a
///   plain word: `declare"#x"`, `!"#x"`, `--signal=KILL`, `5X=1`, `-1>&2`;
/// - a comment the grammar sees where bash starts none (`#` inside a word);
/// - a command the grammar continues past the newline that ends it;
/// - in double quotes, a line continuation (`"$\⏎(touch M)"` is a command substitution) or a
///   backquote substitution with backslashes (escapes change meaning there);
/// - for a shell that is not bash, the bash-only constructs it reads otherwise: `a &>/dev/null
///   b` is `a &` then `>/dev/null b` to dash, `((…))` two subshells, `|&`, `<<<`, `<(…)`
///   syntax errors after the commands before them ran.
fn misread(root: Node<'_>, src: &str, grammar: Grammar) -> Result<Reading, String> {
    let bytes = src.as_bytes();
    let mut reading = Reading::default();
    let mut covered_to = 0;
    let mut cursor = root.walk();
    // The ancestors of the node at the cursor (`Node::parent` walks down from the root: too
    // slow for every node of a deep tree).
    let mut parents: Vec<(Node<'_>, bool)> = Vec::new();
    // Inside a node read as a whole (a string, a here-document body): its nodes are checked,
    // but the text between them is the node's own, not a gap between tokens.
    let mut inside_atomic = 0usize;
    loop {
        let node = cursor.node();
        let kind = node.kind();
        let text = node.utf8_text(bytes).unwrap_or("");
        let atomic = inside_atomic > 0 || node.child_count() == 0 || ATOMIC.contains(&kind);
        let parent = parents.last().map(|(p, _)| *p);
        let heredoc_op =
            matches!(kind, "<<" | "<<-") && parent.is_some_and(|p| p.kind() == "heredoc_redirect");
        if heredoc_op && text.ends_with(kind) {
            // The grammar drops the word before a here-document (`python3 - <<'EOF'` has no
            // `-`, `ls -iu<<X` makes `-iu<<` the operator): bash reads it as an argument.
            let op_at = node.end_byte() - kind.len();
            let dropped = src
                .get(covered_to..op_at)
                .unwrap_or("")
                .trim_matches([' ', '\t']);
            if dropped.contains([' ', '\t', '\n', '\\']) {
                return Err(format!(
                    "Ferrite's grammar skips `{}` of the command",
                    shorten(dropped)
                ));
            }
            if let Some(heredoc) = parent.filter(|_| !dropped.is_empty()) {
                reading
                    .before_heredoc
                    .push((heredoc.start_byte(), dropped.to_owned()));
            }
            covered_to = node.end_byte();
        } else {
            if atomic && inside_atomic == 0 {
                gap(bytes, covered_to, node.start_byte(), &mut reading.glued)?;
                covered_to = covered_to.max(node.end_byte());
            }
            // A token's text is the token: `ls -iu<<X` made a `<<` of `-iu<<`.
            if !node.is_named() && text != kind {
                return Err(format!(
                    "Ferrite's grammar reads `{}` as `{kind}`",
                    shorten(text)
                ));
            }
        }
        check_node(node, parent.map(|p| p.kind()), text, bytes, grammar)?;
        if cursor.goto_first_child() {
            inside_atomic += usize::from(atomic);
            parents.push((node, atomic));
            continue;
        }
        if cursor.goto_next_sibling() {
            continue;
        }
        loop {
            if !cursor.goto_parent() {
                gap(bytes, covered_to, bytes.len(), &mut reading.glued)?;
                return Ok(reading);
            }
            if let Some((_, true)) = parents.pop() {
                inside_atomic -= 1;
            }
            if cursor.goto_next_sibling() {
                break;
            }
        }
    }
}

/// What [`misread`] found that the walker must account for.
#[derive(Debug, Default)]
struct Reading {
    /// Where a line continuation glues two nodes together (bash joins them).
    glued: Vec<usize>,
    /// The word the grammar dropped before a here-document, by where the here-document starts.
    before_heredoc: Vec<(usize, String)>,
}

/// Nodes whose text is read as a whole (their insides are not gaps between tokens).
const ATOMIC: &[&str] = &[
    "word",
    "string",
    "raw_string",
    "ansi_c_string",
    "translated_string",
    "heredoc_body",
    "comment",
    "regex",
    "extglob_pattern",
];

/// What lies between two tokens must be blank to bash too: spaces, tabs, newlines and line
/// continuations. A continuation with no blank on either side glues its neighbours together.
fn gap(src: &[u8], from: usize, to: usize, glued: &mut Vec<usize>) -> Result<(), String> {
    if from >= to {
        return Ok(());
    }
    let text = &src[from..to];
    // Glued: a word character on the left and what goes on the word on the right (not an
    // operator that ends it anyway, except `>` after digits: `2\⏎>x` redirects fd 2).
    let operator = |b: u8| matches!(b, b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>');
    let (before, after) = (from.checked_sub(1).map(|i| src[i]), src.get(to).copied());
    let word_on_both_sides = before.is_some_and(|b| !operator(b) && !b.is_ascii_whitespace())
        && after.is_some_and(|a| {
            !a.is_ascii_whitespace()
                && (!operator(a)
                    || (matches!(a, b'<' | b'>') && before.is_some_and(|b| b.is_ascii_digit())))
        });
    if word_on_both_sides && std::str::from_utf8(text).is_ok_and(only_line_continuations) {
        glued.push(from);
    }
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b' ' | b'\t' | b'\n' => i += 1,
            // A continuation only when the backslash is not itself escaped (`\\⏎` is a
            // backslash, then a line break).
            b'\\' if text.get(i + 1) == Some(&b'\n') && continues(src, from + i + 1) => i += 2,
            b'\\' => {
                let shown: String = String::from_utf8_lossy(&text[i..(i + 2).min(text.len())])
                    .escape_debug()
                    .collect();
                return Err(format!(
                    "Ferrite's grammar reads the escape `{shown}` as a blank where bash does not"
                ));
            }
            _ => {
                let shown = String::from_utf8_lossy(&text[i..]).into_owned();
                return Err(format!(
                    "Ferrite's grammar skips `{}` of the command",
                    shorten(shown.trim())
                ));
            }
        }
    }
    Ok(())
}

/// The checks of one node (see [`misread`]).
fn check_node(
    node: Node<'_>,
    parent: Option<&str>,
    text: &str,
    src: &[u8],
    grammar: Grammar,
) -> Result<(), String> {
    let kind = node.kind();
    let word_end = |at: usize| {
        src.get(at).is_none_or(|b| {
            matches!(
                b,
                b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
            )
        })
    };
    let keyword = !node.is_named()
        && (text.bytes().all(|b| b.is_ascii_alphabetic()) && !text.is_empty()
            || (text == "!" && parent == Some("negated_command"))
            || (matches!(text, "[" | "]" | "[[" | "]]") && parent == Some("test_command"))
            || (matches!(text, "{" | "}") && parent == Some("compound_statement")));
    if keyword && !(at_word_start(src, node.start_byte()) && word_end(node.end_byte())) {
        return Err(format!(
            "`{}` is part of a longer word to bash, not the keyword Ferrite's grammar reads",
            shorten(text)
        ));
    }
    match kind {
        "comment" if !at_word_start(src, node.start_byte()) => Err(
            "a `#` in the command starts a comment for Ferrite's grammar but not for bash"
                .to_owned(),
        ),
        "file_descriptor"
            if text.is_empty()
                || !text.bytes().all(|b| b.is_ascii_digit())
                || !at_word_start(src, node.start_byte()) =>
        {
            Err(format!(
                "`{}` is no file descriptor to bash; put a space before the redirection",
                shorten(text)
            ))
        }
        "variable_assignment"
            if node
                .child_by_field_name("name")
                .filter(|n| n.kind() == "variable_name")
                .is_some_and(|n| !is_identifier(n.utf8_text(src).unwrap_or(""))) =>
        {
            Err(format!(
                "`{}` is no variable assignment to bash",
                shorten(text)
            ))
        }
        // `status\⏎ 3>M`: digits right before `<` or `>` are a file descriptor to bash.
        "word" | "number"
            if !text.is_empty()
                && text.bytes().all(|b| b.is_ascii_digit())
                && matches!(src.get(node.end_byte()), Some(b'<' | b'>'))
                && at_word_start(src, node.start_byte()) =>
        {
            Err(format!(
                "`{text}` before a redirection is a file descriptor to bash, an argument to \
                 Ferrite's grammar"
            ))
        }
        // `<<X&fakeroot` is the delimiter `X`, then `&`, then `fakeroot` to bash.
        "heredoc_start" if text.contains(['&', ';', '|', '(', ')', '<', '>', ' ', '\t', '\n']) => {
            Err(format!(
                "the here-document delimiter `{}` is more than one word to bash",
                shorten(text)
            ))
        }
        // A raw line break inside a word: the grammar joined two lines into one word.
        "word" if has_raw_newline(text.as_bytes()) => Err(
            "Ferrite's grammar reads a word across a line break where bash reads two lines"
                .to_owned(),
        ),
        // `>& -x`: bash closes the descriptor and reads `x` as the command's argument.
        "file_redirect"
            if node
                .child_by_field_name("destination")
                .and_then(|d| d.utf8_text(src).ok())
                .is_some_and(|d| d.len() > 1 && d.starts_with('-'))
                && node
                    .children(&mut node.walk())
                    .any(|c| !c.is_named() && matches!(c.kind(), ">&" | "<&")) =>
        {
            Err(format!(
                "`{}` closes a descriptor to bash and leaves the rest of the word as an argument",
                shorten(text)
            ))
        }
        "heredoc_start" if !word_end(node.end_byte()) => Err(format!(
            "the here-document delimiter `{}` goes on in a word bash reads whole",
            shorten(text)
        )),
        "command" if newline_inside(node, src) => Err(
            "Ferrite's grammar reads one command across a line break where bash reads two"
                .to_owned(),
        ),
        "test_command"
            if text.starts_with('[') && !text.starts_with("[[") && newline_inside(node, src) =>
        {
            Err(
                "Ferrite's grammar reads one `[` test across a line break where bash reads two"
                    .to_owned(),
            )
        }
        "string" if text.contains("\\\n") => Err(
            "a line continuation inside double quotes changes what bash expands there".to_owned(),
        ),
        "command_substitution" if text.starts_with('`') && text.contains('\\') => Err(
            "backslashes inside a `…` substitution change what bash runs there; use $(…)"
                .to_owned(),
        ),
        "&>" | "&>>" | "|&" | "<<<" | "((" | "process_substitution" if grammar != Grammar::Bash => {
            Err(format!(
                "`{}` means something else to `sh` than to bash; write it in POSIX shell syntax",
                shorten(text)
            ))
        }
        _ => Ok(()),
    }
}

/// A word bash may read as `NAME=value`.
fn is_assignment(word: &Word) -> bool {
    word.shown()
        .split_once('=')
        .is_some_and(|(name, _)| is_identifier(name))
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether `text` has a line break that is not a line continuation (`\⏎`, the backslash not
/// itself escaped).
fn has_raw_newline(text: &[u8]) -> bool {
    text.iter()
        .enumerate()
        .any(|(i, b)| *b == b'\n' && !continues(text, i))
}

/// Whether the line break at `at` ends a line continuation: an odd run of backslashes before it.
fn continues(src: &[u8], at: usize) -> bool {
    src[..at].iter().rev().take_while(|b| **b == b'\\').count() % 2 == 1
}

/// Whether an unescaped line break separates two children of a command.
fn newline_inside(command: Node<'_>, src: &[u8]) -> bool {
    let mut cursor = command.walk();
    let mut prev_end: Option<usize> = None;
    for child in command.children(&mut cursor) {
        if let Some(end) = prev_end {
            let gap = src.get(end..child.start_byte()).unwrap_or_default();
            if has_raw_newline(gap) {
                return true;
            }
        }
        prev_end = Some(child.end_byte());
    }
    false
}

/// Whether bash starts a word at `at` (where a `#` starts a comment and digits before `>` are a
/// file descriptor): at the start of the line or after an unescaped blank, newline or operator
/// character.
fn at_word_start(src: &[u8], at: usize) -> bool {
    let Some(prev) = at.checked_sub(1).and_then(|i| src.get(i)) else {
        return true;
    };
    if !matches!(
        prev,
        b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
    ) {
        return false;
    }
    let backslashes = src[..at - 1]
        .iter()
        .rev()
        .take_while(|b| **b == b'\\')
        .count();
    backslashes % 2 == 0
}

struct Walker<'s, 'o> {
    src: &'s str,
    grammar: Grammar,
    out: &'o mut Script,
    /// `None` once something not understood was seen.
    plain: Option<Vec<PlainCommand>>,
    /// Where the walker joined two nodes a line continuation glues together.
    joined: Vec<usize>,
    /// The words the grammar dropped before here-documents ([`Reading::before_heredoc`]).
    before_heredoc: Vec<(usize, String)>,
}

impl Walker<'_, '_> {
    fn text(&self, node: Node<'_>) -> &str {
        node.utf8_text(self.src.as_bytes()).unwrap_or("")
    }

    fn not_plain(&mut self) {
        self.plain = None;
    }

    /// The top level: statements separated by `;`, `&`, newlines, and comments.
    fn program(&mut self, root: Node<'_>, level: usize) {
        let mut cursor = root.walk();
        for child in root.children(&mut cursor) {
            self.statement(child, level);
        }
    }

    fn too_deep(&mut self, level: usize) -> bool {
        if level <= MAX_LEVEL {
            return false;
        }
        self.out.hidden.push(TOO_DEEP.to_owned());
        self.not_plain();
        true
    }

    /// A statement of a plain line: a command, a list, a pipeline or a redirected command;
    /// anything else is walked for what it runs but is not understood.
    fn statement(&mut self, node: Node<'_>, level: usize) {
        if self.too_deep(level) {
            return;
        }
        match node.kind() {
            "command" => self.command(node, &[], level),
            "list" | "pipeline" => {
                for child in chain(node) {
                    if child.is_named() {
                        self.statement(child, level + 1);
                    } else if !matches!(child.kind(), "&&" | "||" | "|" | "|&") {
                        self.not_plain();
                    }
                }
            }
            "redirected_statement" => self.redirected(node, level),
            "comment" | ";" | "&" | "\n" => {}
            _ => {
                self.not_plain();
                self.walk_any(node, level + 1);
            }
        }
    }

    /// A command with redirections after it: `body >/dev/null`.
    fn redirected(&mut self, node: Node<'_>, level: usize) {
        let body = node.child_by_field_name("body");
        let mut cursor = node.walk();
        let redirects: Vec<Node<'_>> = node
            .children(&mut cursor)
            .filter(|c| body.is_none_or(|b| b.id() != c.id()))
            .collect();
        for r in &redirects {
            self.redirect(*r, level);
        }
        match body {
            // Words after a redirection's target are the command's arguments to bash (`rm
            // >/dev/null -rf v` runs `rm -rf v`); the grammar hangs them on the redirection.
            Some(b) if b.kind() == "command" => self.command(b, &redirects, level + 1),
            Some(b) => {
                if redirects
                    .iter()
                    .any(|r| !self.trailing_words(*r).is_empty())
                {
                    // `(rm) >/dev/null -rf v` is a syntax error to bash.
                    self.out.unparseable = true;
                    self.not_plain();
                }
                // `a || b -rf<<X`: the grammar hangs the here-document (and the word it
                // dropped before it) on the whole list, bash on `b`.
                let dropped = redirects.iter().any(|r| {
                    self.before_heredoc
                        .iter()
                        .any(|(at, _)| *at == r.start_byte())
                });
                if dropped {
                    self.out.hidden.push(
                        "Ferrite's grammar drops a word before a here-document of a list"
                            .to_owned(),
                    );
                }
                self.statement(b, level + 1);
            }
            None => {
                self.not_plain();
                // `>x >y rm -rf v >z`: with two redirections before the command the grammar
                // reads the command's words as more targets of the second and finds no command
                // at all; bash runs `rm -rf v`. The words are kept for deny rules, and the line
                // counts as hiding what it runs (found by the differential test, 100k cases).
                let words: Vec<Word> = redirects
                    .iter()
                    .flat_map(|r| self.trailing_words(*r))
                    .map(|w| self.word(w))
                    .collect();
                if !words.is_empty() {
                    self.out.commands.push(Found {
                        words,
                        any_suffix: true,
                    });
                    self.out.hidden.push(
                        "Ferrite's grammar reads the command after two redirections as their \
                         targets"
                            .to_owned(),
                    );
                }
            }
        }
    }

    /// Walks any node for the commands inside it (deny rules), understanding nothing.
    fn walk_any(&mut self, node: Node<'_>, level: usize) {
        if self.too_deep(level) {
            return;
        }
        match node.kind() {
            "command" => {
                self.not_plain();
                self.command(node, &[], level);
                return;
            }
            "redirected_statement" => {
                self.not_plain();
                self.redirected(node, level);
                return;
            }
            // The grammar's tree of a `…` substitution inside double quotes is not always what
            // bash parses; its text is (backslashes in it are refused, `misread`): read it on
            // its own as well.
            "command_substitution" => {
                let text = self.text(node);
                if let Some(inner) = text.strip_prefix('`') {
                    let inner = inner.strip_suffix('`').unwrap_or(inner).to_owned();
                    analyze(&inner, self.grammar, level + 1, self.out);
                }
            }
            // Builtins to bash, but programs to dash (`sh -c 'declare x'` runs `declare`):
            // recorded as commands, their arguments walked like any other.
            "declaration_command" | "unset_command" => {
                self.not_plain();
                let mut cursor = node.walk();
                let words: Vec<Word> = node
                    .children(&mut cursor)
                    .map(|c| match c.is_named() {
                        true => self.word(c),
                        false => Word::Literal(self.text(c).to_owned()),
                    })
                    .collect();
                if !words.is_empty() {
                    self.out.commands.push(Found {
                        words,
                        any_suffix: false,
                    });
                }
            }
            _ => {}
        }
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            self.walk_any(child, level + 1);
        }
    }

    /// The operator of a redirection (`>`, `2>&1`'s `>&`, `<&-`).
    fn redirect_op(&self, node: Node<'_>) -> String {
        node.children(&mut node.walk())
            .find(|c| !c.is_named())
            .map(|c| self.text(c).to_owned())
            .unwrap_or_default()
    }

    /// The words the grammar hangs on a redirection that bash reads as the command's
    /// arguments: the targets after the first of a file redirection (`>/dev/null -rf v`), all
    /// of them after an operator that takes none (`<&- -rf v`), the words after a
    /// here-document's delimiter (`<<X -rf v`).
    fn trailing_words<'t>(&self, redirect: Node<'t>) -> Vec<Node<'t>> {
        let mut cursor = redirect.walk();
        match redirect.kind() {
            "file_redirect" => {
                let skip = match self.redirect_op(redirect).as_str() {
                    ">&-" | "<&-" => 0,
                    _ => 1,
                };
                redirect
                    .children_by_field_name("destination", &mut cursor)
                    .skip(skip)
                    .collect()
            }
            // `<<X -rf v`, and `<<X >/dev/null -rf v`: the grammar nests the redirections
            // that follow a here-document's delimiter inside it.
            "heredoc_redirect" => {
                let mut words: Vec<Node<'t>> = redirect
                    .children_by_field_name("argument", &mut cursor)
                    .collect();
                let nested: Vec<Node<'t>> = redirect
                    .children_by_field_name("redirect", &mut redirect.walk())
                    .collect();
                for r in nested {
                    words.extend(self.trailing_words(r));
                }
                words
            }
            _ => Vec::new(),
        }
    }

    /// A redirection: plain only to `/dev/null` or between file descriptors.
    fn redirect(&mut self, node: Node<'_>, level: usize) {
        let plain = node.kind() == "file_redirect" && {
            let op = self.redirect_op(node);
            let dest = match op.as_str() {
                ">&-" | "<&-" => None,
                _ => node
                    .child_by_field_name("destination")
                    .map(|d| self.word(d)),
            };
            match (op.as_str(), dest) {
                (">&-" | "<&-", None) => true,
                (">&" | "<&", Some(Word::Literal(d)))
                    if d == "-" || (!d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())) =>
                {
                    true
                }
                (">" | ">>" | "&>" | "&>>" | ">|" | "<" | ">&" | "&>|", Some(Word::Literal(d))) => {
                    d == "/dev/null"
                }
                _ => false,
            }
        };
        if !plain {
            self.not_plain();
        }
        if node.kind() == "heredoc_redirect" {
            self.heredoc_backquotes(node, level);
        }
        self.walk_any(node, level + 1);
    }

    /// The grammar parses `$(...)` in the body of a here-document with an unquoted delimiter
    /// but not `` `...` ``, which the shell runs all the same: those are analysed here.
    fn heredoc_backquotes(&mut self, node: Node<'_>, level: usize) {
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        let quoted = children
            .iter()
            .find(|c| c.kind() == "heredoc_start")
            .is_none_or(|start| self.text(*start).contains(['\'', '"', '\\']));
        if quoted {
            return;
        }
        for body in children.iter().filter(|c| c.kind() == "heredoc_body") {
            let text = self.text(*body).to_owned();
            for segment in backquoted(&text) {
                if segment.contains('\\') {
                    // What a backslash escapes inside `…` in a here-document is two rules
                    // deep (the body's, then the substitution's).
                    self.out.hidden.push(
                        "backslashes inside a `…` substitution change what bash runs there; use \
                         $(…)"
                            .to_owned(),
                    );
                }
                analyze(&segment, self.grammar, level + 1, self.out);
            }
        }
    }

    /// A simple command: records it (and what its wrappers run) and, when the line is still
    /// plain, adds it to the plain commands. `after`: the redirections of the redirected
    /// statement it is the body of.
    fn command(&mut self, node: Node<'_>, after: &[Node<'_>], level: usize) {
        let mut word_nodes = Vec::new();
        // Here-documents of this command: its own, and those of the redirected statement it is
        // the body of (`after`: those redirections).
        let mut heredocs: Vec<usize> = after
            .iter()
            .filter(|r| r.kind() == "heredoc_redirect")
            .map(|r| r.start_byte())
            .collect();
        let extra: Vec<Node<'_>> = after.iter().flat_map(|r| self.trailing_words(*r)).collect();
        let mut cursor = node.walk();
        if cursor.goto_first_child() {
            loop {
                let child = cursor.node();
                match cursor.field_name() {
                    Some("name" | "argument") => word_nodes.push(child),
                    Some("redirect") => {
                        if child.kind() == "heredoc_redirect" {
                            heredocs.push(child.start_byte());
                        }
                        word_nodes.extend(self.trailing_words(child));
                        self.redirect(child, level);
                    }
                    _ => {
                        // `VAR=x` assignments (they change what a program does) and anything
                        // else the grammar puts here: not plain, but walked for substitutions.
                        self.not_plain();
                        self.walk_any(child, level + 1);
                    }
                }
                if !cursor.goto_next_sibling() {
                    break;
                }
            }
        }
        word_nodes.extend(extra);
        word_nodes.sort_by_key(Node::start_byte);
        for w in &word_nodes {
            self.walk_substitutions(*w, level + 1);
        }
        let recovered: Vec<(usize, Word)> = self
            .before_heredoc
            .iter()
            .filter(|(at, _)| heredocs.contains(at))
            .map(|(at, text)| (*at, unquoted(text)))
            .collect();
        let words = self.words(&word_nodes, &recovered);
        if words.is_empty() {
            self.not_plain();
            return;
        }
        let inner = self.follow(&words, level + 1, Guessing::Yes);
        if let Some(plain) = self.plain.as_mut() {
            let literal: Option<Vec<String>> = words
                .iter()
                .map(|w| w.literal().map(str::to_owned))
                .collect();
            match literal {
                Some(words) if !is_unplain_builtin(&words[0]) => {
                    // Only `sh -c S` exactly: other flags (`-l` reads profiles), other
                    // wrappers (`su -c`, `watch`) and extra words are judged as they are.
                    let inner = match words.as_slice() {
                        [shell, flag, _]
                            if flag == "-c"
                                && matches!(
                                    wrappers::shell_grammar(shell),
                                    Some(Grammar::Bash | Grammar::Posix)
                                ) =>
                        {
                            inner
                        }
                        _ => None,
                    };
                    plain.push(PlainCommand { words, inner });
                }
                _ => self.plain = None,
            }
        }
    }

    /// Walks the parts of a word for commands run inside it (`$(...)`, `<(...)`).
    fn walk_substitutions(&mut self, node: Node<'_>, level: usize) {
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            self.walk_any(child, level);
        }
    }

    /// The command's words. Tree-sitter splits a word at a line continuation (`sta\⏎tus`)
    /// where bash joins it, so nodes separated only by line continuations are one word.
    fn words(&mut self, nodes: &[Node<'_>], recovered: &[(usize, Word)]) -> Vec<Word> {
        let mut words: Vec<Word> = Vec::new();
        let mut prev_end: Option<usize> = None;
        let mut recovered = recovered.iter().peekable();
        for n in nodes {
            while let Some((_, w)) = recovered.next_if(|(at, _)| *at <= n.start_byte()) {
                words.push(w.clone());
                prev_end = None;
            }
            let w = self.word(*n);
            // Nodes with nothing between them are one word to the shell too.
            let joined = prev_end.is_some_and(|end| {
                let gap = self.src.get(end..n.start_byte()).unwrap_or(" ");
                gap.is_empty() || only_line_continuations(gap)
            });
            if joined && let Some(end) = prev_end {
                self.joined.push(end);
            }
            match (joined, words.last_mut()) {
                (true, Some(last)) => *last = join(last, &w),
                _ => words.push(w),
            }
            prev_end = Some(n.end_byte());
        }
        words.extend(recovered.map(|(_, w)| w.clone()));
        words
    }

    /// The value of one word node.
    fn word(&self, node: Node<'_>) -> Word {
        let text = self.text(node);
        match node.kind() {
            "word" | "number" => unquoted(text),
            "raw_string" => text
                .strip_prefix('\'')
                .and_then(|t| t.strip_suffix('\''))
                .map_or_else(
                    || Word::Dynamic(text.to_owned()),
                    |t| Word::Literal(t.to_owned()),
                ),
            "string" => double_quoted(text),
            "concatenation" => {
                let mut cursor = node.walk();
                let mut acc = Word::Literal(String::new());
                for part in node.children(&mut cursor) {
                    acc = join(&acc, &self.word(part));
                }
                match acc {
                    Word::Literal(s) => Word::Literal(s),
                    Word::Dynamic(_) => Word::Dynamic(text.to_owned()),
                }
            }
            "command_name" => match node.named_child(0) {
                Some(inner) if node.named_child_count() == 1 => self.word(inner),
                _ => Word::Dynamic(text.to_owned()),
            },
            _ => Word::Dynamic(text.to_owned()),
        }
    }

    /// Records `words` (and what its wrappers run) for deny rules, and returns, for a shell
    /// running a literal string, the plain commands of that string when it is understood.
    fn follow(
        &mut self,
        words: &[Word],
        level: usize,
        guessing: Guessing,
    ) -> Option<Vec<PlainCommand>> {
        if self.too_deep(level) {
            return None;
        }
        // Each wrapper may be read two ways (`exec`, `time`): the words of a line's commands
        // are bounded, not only their nesting.
        self.out.words_followed += words.len();
        if self.out.words_followed > MAX_WORDS {
            if !self.out.hidden.iter().any(|h| h == TOO_MANY) {
                self.out.hidden.push(TOO_MANY.to_owned());
            }
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
        match unwrap(&program, &words[1..]) {
            Unwrapped::Commands(commands) => {
                for c in commands.into_iter().filter(|c| !c.is_empty()) {
                    // What a wrapper runs is never part of a plain line (unless an allow rule
                    // names the wrapper itself), so only its deny side matters here.
                    self.follow(c, level + 1, guessing);
                }
                None
            }
            // Every suffix of the arguments is already one of these: guessing again inside
            // them would find nothing new, and a long line would take exponential time.
            Unwrapped::Guesses(_) if guessing == Guessing::No => None,
            Unwrapped::Guesses(commands) => {
                self.out.commands[found].any_suffix = true;
                // The suffixes are matched in place ([`Found::runs`]); those that start with
                // a wrapper are followed for what they run in turn.
                for c in commands.into_iter().filter(|c| {
                    c.first()
                        .and_then(Word::literal)
                        .is_some_and(|p| runs_other_commands(program_name(p)))
                }) {
                    self.follow(c, level + 1, Guessing::No);
                }
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

fn join(a: &Word, b: &Word) -> Word {
    match (a, b) {
        (Word::Literal(x), Word::Literal(y)) => Word::Literal(format!("{x}{y}")),
        (x, y) => Word::Dynamic(format!("{}{}", x.shown(), y.shown())),
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
