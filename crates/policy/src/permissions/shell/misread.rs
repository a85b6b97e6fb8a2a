//! Where tree-sitter-bash's tree is not what bash (or dash) will read: each such place makes a
//! line "hidden" (deny rules refuse it, allow rules never match it). Found one by one by the
//! differential test against the real shells (`differential_tests.rs`).

use tree_sitter::Node;

use super::{Grammar, Word, only_line_continuations, shorten};

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
pub(super) fn misread(root: Node<'_>, src: &str, grammar: Grammar) -> Result<Reading, String> {
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
    let mut words = WordBounds::default();
    loop {
        let node = cursor.node();
        let kind = node.kind();
        let text = node.utf8_text(bytes).unwrap_or("");
        let atomic = inside_atomic > 0 || node.child_count() == 0 || ATOMIC.contains(&kind);
        let parent = parents.last().map(|(p, _)| *p);
        let heredoc_op =
            matches!(kind, "<<" | "<<-") && parent.is_some_and(|p| p.kind() == "heredoc_redirect");
        if heredoc_op && text.ends_with(kind) {
            let dropped = dropped_before_heredoc(src, covered_to, node.end_byte() - kind.len())?;
            if let Some(heredoc) = parent.filter(|_| !dropped.is_empty()) {
                reading
                    .before_heredoc
                    .push((heredoc.start_byte(), dropped.to_owned()));
            }
            covered_to = node.end_byte();
        } else {
            if atomic && inside_atomic == 0 {
                let ends = line_break_ends(&parents, covered_to);
                gap(
                    bytes,
                    covered_to,
                    node.start_byte(),
                    ends,
                    &mut reading.glued,
                )?;
                covered_to = covered_to.max(node.end_byte());
                // A `$` the grammar leaves unnamed is part of the word too (`>esac]]$X\rm`).
                if node.is_named() || parent.is_some_and(|p| WORD_PARTS.contains(&p.kind())) {
                    words.leaf(node, &parents, bytes)?;
                }
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
                gap(bytes, covered_to, bytes.len(), false, &mut reading.glued)?;
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

/// The word the grammar drops before a here-document's `<<` at `op_at` (`python3 - <<'EOF'` has
/// no `-`, `ls -iu<<X` makes `-iu<<` the operator): bash reads it as an argument. More than one
/// word there is a misreading.
fn dropped_before_heredoc(src: &str, covered_to: usize, op_at: usize) -> Result<&str, String> {
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
    Ok(dropped)
}

/// Where one word ends for the grammar and the next begins with nothing between them, bash
/// reads one word. Within a command's own words the walker joins them; where one of the two is
/// (part of) a redirection's target, the grammar has cut a word bash reads whole: `>esac]]\rm`
/// is one target to bash, a target and the program `rm` to the grammar; `>/dev/null*]\⏎` one
/// target, not a target and an argument (differential test, 1M).
#[derive(Default)]
struct WordBounds {
    /// The previous word leaf: where it ends, the word it is part of, and what holds that word.
    last: Option<(usize, usize, &'static str)>,
}

/// The nodes a word is built of: a leaf inside these is part of the one word they form.
const WORD_PARTS: &[&str] = &[
    "concatenation",
    "simple_expansion",
    "expansion",
    "arithmetic_expansion",
    "brace_expression",
    "string",
];

impl WordBounds {
    fn leaf(
        &mut self,
        node: Node<'_>,
        parents: &[(Node<'_>, bool)],
        src: &[u8],
    ) -> Result<(), String> {
        // The word the leaf is part of, and what holds it (a bounded walk up: deeply nested
        // expansions count as separate words, which can only make a line hidden).
        let mut unit = node.id();
        let mut holder = "";
        for (p, _) in parents.iter().rev().take(64) {
            if !WORD_PARTS.contains(&p.kind()) {
                holder = p.kind();
                break;
            }
            unit = p.id();
        }
        let redirect = |h: &str| matches!(h, "file_redirect" | "herestring_redirect");
        let word_byte =
            |b: Option<&u8>| b.is_some_and(|b| !b.is_ascii_whitespace() && !b";&|()<>".contains(b));
        let start = node.start_byte();
        if let Some((end, last_unit, last_holder)) = self.last
            && end == start
            && last_unit != unit
            && (redirect(last_holder) || redirect(holder))
            && word_byte(start.checked_sub(1).and_then(|i| src.get(i)))
            && word_byte(src.get(start))
        {
            return Err(format!(
                "Ferrite's grammar cuts the word `{}` of a redirection where bash reads it whole",
                shorten(&String::from_utf8_lossy(&src[start..node.end_byte()]))
            ));
        }
        self.last = Some((node.end_byte(), unit, holder));
        Ok(())
    }
}

/// What [`misread`] found that the walker must account for.
#[derive(Debug, Default)]
pub(super) struct Reading {
    /// Where a line continuation glues two nodes together (bash joins them).
    pub glued: Vec<usize>,
    /// The word the grammar dropped before a here-document, by where the here-document starts.
    pub before_heredoc: Vec<(usize, String)>,
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

/// Whether a line break before the next token would end, for bash, the simple command or the
/// redirection that token belongs to in the grammar's reading: the nearest enclosing node (past
/// the parts of a word) is a `command` or a `file_redirect` that began before the gap. A break
/// inside a substitution, an array, a compound command or a here-document is not such a one.
fn line_break_ends(parents: &[(Node<'_>, bool)], gap_from: usize) -> bool {
    parents
        .iter()
        .rev()
        .map(|(p, _)| p)
        .find(|p| !matches!(p.kind(), "concatenation" | "command_name"))
        .is_some_and(|p| {
            matches!(p.kind(), "command" | "file_redirect") && p.start_byte() < gap_from
        })
}

/// What lies between two tokens must be blank to bash too: spaces, tabs, newlines and line
/// continuations. A continuation with no blank on either side glues its neighbours together.
/// Where `line_break_ends` (see [`line_break_ends`]), a newline that is not a continuation ends
/// the command for bash: the grammar read on past it (`>x\\⏎\⏎ rm -rf x`: bash runs `rm`).
fn gap(
    src: &[u8],
    from: usize,
    to: usize,
    line_break_ends: bool,
    glued: &mut Vec<usize>,
) -> Result<(), String> {
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
            b'\n' if line_break_ends => {
                return Err(
                    "a line break ends a command where Ferrite's grammar reads on past it"
                        .to_owned(),
                );
            }
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
    check_keyword(node, parent, text, src)?;
    recovered_words(node, parent, text, src)?;
    check_token(node, text, src)?;
    check_span(node, text, src, grammar)
}

/// Where a word ends for bash: at a blank, an operator or the end of the line.
fn word_end(src: &[u8], at: usize) -> bool {
    src.get(at).is_none_or(|b| {
        matches!(
            b,
            b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
        )
    })
}

/// A keyword of the grammar (`if`, `!`, `[[`, `{`) must be a whole word to bash.
fn check_keyword(
    node: Node<'_>,
    parent: Option<&str>,
    text: &str,
    src: &[u8],
) -> Result<(), String> {
    let keyword = !node.is_named()
        && (text.bytes().all(|b| b.is_ascii_alphabetic()) && !text.is_empty()
            || (text == "!" && parent == Some("negated_command"))
            || (matches!(text, "[" | "]" | "[[" | "]]") && parent == Some("test_command"))
            || (matches!(text, "{" | "}") && parent == Some("compound_statement")));
    if keyword && !(at_word_start(src, node.start_byte()) && word_end(src, node.end_byte())) {
        return Err(format!(
            "`{}` is part of a longer word to bash, not the keyword Ferrite's grammar reads",
            shorten(text)
        ));
    }
    Ok(())
}

/// The checks of a token and the words around it: comments, descriptors, assignments,
/// here-document delimiters and redirections bash reads otherwise.
fn check_token(node: Node<'_>, text: &str, src: &[u8]) -> Result<(), String> {
    match node.kind() {
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
        _ => Ok(()),
    }
}

/// The checks of a construct across its lines: line breaks and continuations inside
/// expansions, commands, tests, strings and substitutions; bash-only syntax under `sh`.
fn check_span(node: Node<'_>, text: &str, src: &[u8], grammar: Grammar) -> Result<(), String> {
    match node.kind() {
        // `${x:-$\⏎(rm -rf x)}` is a command substitution to bash (differential test, 150k).
        "expansion" | "arithmetic_expansion" | "subscript"
            if text
                .bytes()
                .enumerate()
                .any(|(i, b)| b == b'\n' && continues(text.as_bytes(), i)) =>
        {
            Err(
                "a line continuation inside an expansion changes what bash expands there"
                    .to_owned(),
            )
        }
        "heredoc_start" if !word_end(src, node.end_byte()) => Err(format!(
            "the here-document delimiter `{}` goes on in a word bash reads whole",
            shorten(text)
        )),
        "command" if newline_inside(node, src) => Err(
            "Ferrite's grammar reads one command across a line break where bash reads two"
                .to_owned(),
        ),
        "test_command"
            if text.starts_with('[')
                && !text.starts_with("[[")
                && newline_inside_test(node, src) =>
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

/// The checks of one node where the grammar's error recovery, or its here-documents, read
/// words otherwise than bash (differential test, 1M).
/// Where a brace or bracket is a word to bash ([`recovered_words`]).
const BRACKETS_ARE_WORDS_IN: &[&str] = &[
    "file_redirect",
    "herestring_redirect",
    "heredoc_redirect",
    "command",
    "command_name",
    "redirected_statement",
    "program",
    "list",
    "pipeline",
];

fn recovered_words(
    node: Node<'_>,
    parent: Option<&str>,
    text: &str,
    src: &[u8],
) -> Result<(), String> {
    match node.kind() {
        // ``1>&2'`touch M`'``: a `>&` target that is no number is expanded a second time by
        // bash, quotes gone, so the substitution runs (differential test, 1M).
        "file_redirect"
            if node
                .children(&mut node.walk())
                .any(|c| !c.is_named() && matches!(c.kind(), ">&" | "<&"))
                && node
                    .child_by_field_name("destination")
                    .and_then(|d| d.utf8_text(src).ok())
                    .is_some_and(|d| d.contains(['`', '$'])) =>
        {
            Err(format!(
                "bash expands the target of `{}` twice",
                shorten(text)
            ))
        }
        // `>> } {} `, `<<< { {then`, `=>] [[ x`: braces and brackets are words to bash there;
        // the grammar reads them as syntax and drops them from the command (differential test).
        "{" | "}" | "[" | "]" | "[[" | "]]"
            if !node.is_named() && parent.is_some_and(|p| BRACKETS_ARE_WORDS_IN.contains(&p)) =>
        {
            Err(format!(
                "`{text}` is a word to bash where Ferrite's grammar reads syntax"
            ))
        }
        // `[ -f|| x ]`: `[` is a plain command to bash, which ends it at the first operator.
        "test_command"
            if text.starts_with('[')
                && !text.starts_with("[[")
                && text.bytes().any(|b| b"|&;()<>".contains(&b)) =>
        {
            Err(
                "an operator inside `[ … ]` ends the `[` command for bash, not for Ferrite's \
                 grammar"
                    .to_owned(),
            )
        }
        // `>> } {}`, `>] [[ rm`: the grammar's error recovery makes one word of what bash
        // reads as two (differential test, 1M).
        "word"
            if text
                .bytes()
                .enumerate()
                .any(|(i, b)| matches!(b, b' ' | b'\t') && !continues(text.as_bytes(), i)) =>
        {
            Err(format!(
                "Ferrite's grammar reads `{}` as one word where bash reads several",
                shorten(text)
            ))
        }
        "heredoc_redirect" if heredoc_ends_elsewhere(node, src) => Err(
            "bash ends the here-document at another line than Ferrite's grammar (a line \
             continuation joins lines of its body, or its delimiter line is not the delimiter)"
                .to_owned(),
        ),
        "heredoc_redirect" if heredoc_takes_body_lines(node, src) => Err(
            "Ferrite's grammar reads lines of the here-document as words of the command".to_owned(),
        ),
        _ => Ok(()),
    }
}

/// Whether bash ends the here-document elsewhere than the grammar does. Bash reads the body
/// from the line after the command, and with an unquoted delimiter joins the body's lines at
/// each line continuation before it compares a line with the delimiter (after quote removal):
/// `E\⏎OF` ends `<<EOF` (issue 34), `x\⏎EOF` does not, and `<&-EOF` never does (differential
/// test, 1M; dash does not join there, and the grammar never does).
fn heredoc_ends_elsewhere(node: Node<'_>, src: &[u8]) -> bool {
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
    let Some(start) = children.iter().find(|c| c.kind() == "heredoc_start") else {
        return false;
    };
    let raw = &src[start.byte_range()];
    let quoted = raw.iter().any(|b| matches!(b, b'\'' | b'"' | b'\\'));
    let delimiter = unquote(raw);
    let strip_tabs = children.iter().any(|c| c.kind() == "<<-");
    let body = children.iter().find(|c| c.kind() == "heredoc_body");
    let grammar_end = children.iter().find(|c| c.kind() == "heredoc_end");
    let Some(first) = body.or(grammar_end) else {
        return false;
    };
    // The grammar's body may start with the newline that ends the command's line.
    let mut from = first.start_byte();
    if from > 0 && src[from - 1] != b'\n' {
        match src[from..].iter().position(|b| *b == b'\n') {
            Some(i) => from += i + 1,
            None => return grammar_end.is_some(),
        }
    }
    let is_delimiter = |line: &[u8]| {
        let line = match strip_tabs {
            true => &line[line.iter().take_while(|b| **b == b'\t').count()..],
            false => line,
        };
        line == delimiter.as_slice()
    };
    let mut line: Vec<u8> = Vec::new();
    let mut bash_end = None;
    // Past the grammar's end the two differ whatever follows: stop there (linear in the line).
    let last = grammar_end.map_or(src.len(), |e| e.end_byte().min(src.len()));
    let mut i = from;
    while i <= last {
        match src.get(i) {
            Some(b'\\') if !quoted && src.get(i + 1) == Some(&b'\n') && continues(src, i + 1) => {
                i += 1;
            }
            Some(b'\n') | None if is_delimiter(&line) => {
                bash_end = Some(i);
                break;
            }
            Some(b'\n') => line.clear(),
            None => break,
            Some(_) if i == last => break,
            Some(b) => line.push(*b),
        }
        i += 1;
    }
    bash_end != grammar_end.map(Node::end_byte)
}

/// A here-document delimiter after quote removal (`'EOF'`, `"E"OF`, `E\OF` are `EOF`).
fn unquote(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut quote = None;
    let mut i = 0;
    while let Some(&b) = raw.get(i) {
        match (quote, b) {
            (None, b'\'' | b'"') => quote = Some(b),
            (Some(q), _) if b == q => quote = None,
            (None, b'\\') | (Some(b'"'), b'\\')
                if raw
                    .get(i + 1)
                    .is_some_and(|n| quote.is_none() || b"$`\"\\\n".contains(n)) =>
            {
                i += 1;
                out.push(raw[i]);
            }
            _ => out.push(b),
        }
        i += 1;
    }
    out
}

/// Whether the grammar reads words of the here-document's body as the command's (`sh
/// <<EOF⏎\⏎rm -rf x⏎EOF`: the grammar continues the command's line at the body's `\`, bash
/// reads `rm -rf x` as the body: differential test, 1M).
fn heredoc_takes_body_lines(node: Node<'_>, src: &[u8]) -> bool {
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
    let Some(start) = children.iter().position(|c| c.kind() == "heredoc_start") else {
        return false;
    };
    let mut prev_end = children[start].end_byte();
    for c in &children[start + 1..] {
        if matches!(c.kind(), "heredoc_body" | "heredoc_end") {
            break;
        }
        if has_raw_newline(src.get(prev_end..c.start_byte()).unwrap_or_default()) {
            return true;
        }
        prev_end = c.end_byte();
    }
    false
}

/// A word bash may read as `NAME=value`.
pub(super) fn is_assignment(word: &Word) -> bool {
    word.shown()
        .split_once('=')
        .is_some_and(|(name, _)| is_identifier(name))
}

pub(super) fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether `text` has a line break that is not a line continuation (`\⏎`, the backslash not
/// itself escaped).
pub(super) fn has_raw_newline(text: &[u8]) -> bool {
    text.iter()
        .enumerate()
        .any(|(i, b)| *b == b'\n' && !continues(text, i))
}

/// Whether the line break at `at` ends a line continuation: an odd run of backslashes before it.
pub(super) fn continues(src: &[u8], at: usize) -> bool {
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

/// Whether an unescaped line break separates two parts of a `[` test, its operands and
/// operators included (`[ \\⏎-f x ]`: bash ends the `[` command at the break and runs `-f`).
fn newline_inside_test(test: Node<'_>, src: &[u8]) -> bool {
    let mut stack = vec![test];
    while let Some(node) = stack.pop() {
        if newline_inside(node, src) {
            return true;
        }
        let mut cursor = node.walk();
        stack.extend(
            node.children(&mut cursor)
                .filter(|c| c.kind().ends_with("_expression")),
        );
    }
    false
}

/// Whether bash starts a word at `at` (where a `#` starts a comment and digits before `>` are a
/// file descriptor): at the start of the line or after an unescaped blank, newline or operator
/// character.
pub(super) fn at_word_start(src: &[u8], at: usize) -> bool {
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
