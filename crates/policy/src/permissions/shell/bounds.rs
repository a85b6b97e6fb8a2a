//! What reading one command line may cost. A line beyond these bounds is not understood and
//! deny rules cannot be checked against it, so it is never run without a question
//! ([`Script::beyond`], `permissions::decide`); `bench/shell_bounds.sh` measures the worst
//! lines Ferrite knows against the 50 ms / 50 MB a decision may take.
//!
//! - [`MAX_BYTES`]: a longer line is not read at all.
//! - [`MAX_LEVEL`]: how deep syntax, `sh -c` strings and wrappers are followed (the recursion,
//!   and so the stack).
//! - [`MAX_MATCH_WORK`]: the words the deny rules of one decision may look at.
//! - [`MAX_WORK`]: the work of the whole line: bytes handed to the parser (a string run by a
//!   shell is parsed again, so nesting multiplies it), the parser's own steps (its error
//!   recovery can take many per byte), and the words recorded for the deny rules (each wrapper
//!   level copies the words it runs).

use tree_sitter::{ParseOptions, ParseState, Parser, Tree};

use super::Script;

/// The longest command line the rules read, in bytes.
pub(crate) const MAX_BYTES: usize = 64 * 1024;

/// How deep the syntax tree, `sh -c '…'` strings and wrappers are followed, all counted
/// together. (Chains of `&&`, `|`, `;` do not count: they are flat.)
pub(super) const MAX_LEVEL: usize = 200;

pub(super) const TOO_DEEP: &str = "the command nests commands too deeply for Ferrite's rules to \
                                   follow";

/// The work one line may cost, in units of about one byte parsed or copied.
pub(super) const MAX_WORK: usize = 4 << 20;

const TOO_MUCH: &str = "the command takes more work to follow than Ferrite's rules allow";

/// How many words the deny rules of one decision may look at: one per suffix of another
/// program ([`super::Found::runs`]), every word of a suffix of the rule's own program (`fakeroot
/// rm rm rm …` makes that quadratic). Past it the command asks.
pub(crate) const MAX_MATCH_WORK: usize = 1 << 18;

/// The most command separators (`|`, `;`, `&`, newlines) a line may hold, counted in its raw
/// text before it is parsed. Why before: a long flat pipeline (`ls | ls | …`, 13k of them in
/// 64 KiB) cost a minute and gigabytes after parsing, in work the budget above did not see.
/// A line a person or a model would run has a few dozen; a here-document holding a table may
/// pass the bound and then asks, which is the safe side.
pub(super) const MAX_SEPARATORS: usize = 2048;

/// The most command substitutions (`$(`, backquotes, `<(`, `>(`) a line may hold, counted the
/// same way: each opens a nested script, and 32k of them nested took seconds to parse.
pub(super) const MAX_SUBSTITUTIONS: usize = 256;

/// The most tokens a line may hold, estimated from its raw text ([`tokens`]). What a decision
/// costs grows with the grammar's tokens and nodes, not with bytes: 16k `A=1` in 64 KiB took
/// 130 ms of CPU in a release build, 21k plain words 60 ms (about 3 µs a token, parsing,
/// walking and freeing the tree). 8192 keeps a decision near 25 ms; a command of a few hundred
/// words, or a here-document of a few hundred lines, is far below it.
pub(super) const MAX_TOKENS: usize = 8192;

/// An upper estimate of the grammar's tokens in `bytes`: each word (a run of non-blanks) and
/// each character that starts or ends a token of its own (quotes, `$`, `=`, operators,
/// braces and brackets), quoted or not (an over-count only asks).
fn tokens(bytes: &[u8]) -> usize {
    let blank = |b: u8| matches!(b, b' ' | b'\t' | b'\n');
    let words = bytes
        .iter()
        .enumerate()
        .filter(|&(i, &b)| !blank(b) && (i == 0 || blank(bytes[i - 1])))
        .count();
    let marks = bytes
        .iter()
        .filter(|b| b"'\"`$=;&|()<>{}[]".contains(b))
        .count();
    words + marks
}

/// Why `command` is beyond the bounds before any parsing, if it is: longer than [`MAX_BYTES`],
/// or too many separators, substitutions or tokens in its raw text (quoted ones count too: an
/// over-count only asks).
pub(super) fn before_parsing(command: &str) -> Option<String> {
    if command.len() > MAX_BYTES {
        return Some(format!(
            "the command is {} KiB long, more than the {} KiB Ferrite's rules read",
            command.len().div_ceil(1024),
            MAX_BYTES / 1024
        ));
    }
    let bytes = command.as_bytes();
    let separators = bytes
        .iter()
        .filter(|b| matches!(b, b'|' | b';' | b'&' | b'\n'))
        .count();
    if separators > MAX_SEPARATORS {
        return Some(format!(
            "the command holds {separators} command separators, more than the \
             {MAX_SEPARATORS} Ferrite's rules follow"
        ));
    }
    let tokens = tokens(bytes);
    if tokens > MAX_TOKENS {
        return Some(format!(
            "the command holds about {tokens} words and operators, more than the {MAX_TOKENS} \
             Ferrite's rules follow"
        ));
    }
    let substitutions = bytes.iter().filter(|&&b| b == b'`').count()
        + bytes
            .windows(2)
            .filter(|w| w[1] == b'(' && matches!(w[0], b'$' | b'<' | b'>'))
            .count();
    (substitutions > MAX_SUBSTITUTIONS).then(|| {
        format!(
            "the command holds {substitutions} command substitutions, more than the \
             {MAX_SUBSTITUTIONS} Ferrite's rules follow"
        )
    })
}

/// What one call of the parser's progress callback stands for: the parser calls it every 100
/// of its operations (`OP_COUNT_PER_PARSER_CALLBACK_CHECK` in tree-sitter's `parser.c`).
const WORK_PER_PARSER_CHECK: usize = 100;

/// What recording one word costs beyond its bytes (the `Word` and its `String`).
pub(super) const WORK_PER_WORD: usize = 32;

impl Script {
    /// Adds `units` of work; `false` (and the line is beyond the bounds) past [`MAX_WORK`].
    pub(super) fn charge(&mut self, units: usize) -> bool {
        self.work = self.work.saturating_add(units);
        if self.work > MAX_WORK {
            self.exceed(TOO_MUCH);
            return false;
        }
        self.beyond.is_none()
    }

    /// Marks the line as beyond the bounds (the first reason is kept).
    pub(super) fn exceed(&mut self, why: &str) {
        self.beyond.get_or_insert_with(|| why.to_owned());
    }
}

/// Parses `src` with bash's grammar, stopping the parser once the line's work passes
/// [`MAX_WORK`]. `None`: the grammar could not be loaded (unparseable) or the work ran out
/// (beyond the bounds).
pub(super) fn parse(src: &str, out: &mut Script) -> Option<Tree> {
    let mut parser = Parser::new();
    if parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .is_err()
    {
        out.unparseable = true;
        return None;
    }
    let left = MAX_WORK.saturating_sub(out.work);
    let mut checks = 0usize;
    let mut stop = |_: &ParseState| {
        checks += 1;
        checks.saturating_mul(WORK_PER_PARSER_CHECK) > left
    };
    let bytes = src.as_bytes();
    let tree = parser.parse_with_options(
        &mut |at, _| bytes.get(at..).unwrap_or_default(),
        None,
        Some(ParseOptions::new().progress_callback(&mut stop)),
    );
    if !out.charge(checks.saturating_mul(WORK_PER_PARSER_CHECK)) {
        return None;
    }
    if tree.is_none() {
        out.unparseable = true;
    }
    tree
}
