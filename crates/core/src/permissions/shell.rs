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

use wrappers::{SHELLS, Unwrapped, unwrap};

/// How deep the syntax tree, `sh -c '…'` strings and wrappers are followed, all counted
/// together, before giving up: a command nested deeper is "hidden" and never understood. (Chains
/// of `&&`, `|`, `;` do not count: they are flat.) Bounds the recursion, and so the stack.
const MAX_LEVEL: usize = 200;

const TOO_DEEP: &str = "commands nested too deeply to follow";

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

/// A command line as the permission rules see it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Script {
    /// The simple commands, in order, when the whole line is fully understood.
    pub plain: Option<Vec<PlainCommand>>,
    /// Every simple command found anywhere; the program name is the first word, as written.
    pub commands: Vec<Vec<Word>>,
    /// Why the line hides what it runs (empty when it does not).
    pub hidden: Vec<String>,
    /// The grammar could not parse the line (a syntax error, or a construct it does not know).
    pub unparseable: bool,
}

impl Script {
    pub(crate) fn parse(command: &str) -> Script {
        let mut script = Script::default();
        let plain = analyze(command, 0, &mut script);
        script.plain = plain;
        script
    }
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

/// Parses `src` (found at `level`), adds what it finds to `out`, and returns the plain commands
/// when the whole of `src` is understood.
fn analyze(src: &str, level: usize, out: &mut Script) -> Option<Vec<PlainCommand>> {
    if level > MAX_LEVEL {
        out.hidden.push(TOO_DEEP.to_owned());
        return None;
    }
    // A NUL cannot reach the shell (an argument cannot hold one) and the grammar stops at it.
    if src.contains('\0') {
        out.unparseable = true;
        return None;
    }
    let Some(tree) = new_parser().and_then(|mut p| p.parse(src, None)) else {
        out.unparseable = true;
        return None;
    };
    let root = tree.root_node();
    let mut walker = Walker {
        src,
        out,
        plain: Some(Vec::new()),
    };
    if root.has_error() {
        walker.out.unparseable = true;
        walker.plain = None;
    }
    walker.program(root, level + 1);
    walker.plain
}

struct Walker<'s, 'o> {
    src: &'s str,
    out: &'o mut Script,
    /// `None` once something not understood was seen.
    plain: Option<Vec<PlainCommand>>,
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
            "command" => self.command(node, level),
            "list" | "pipeline" => {
                for child in chain(node) {
                    if child.is_named() {
                        self.statement(child, level + 1);
                    } else if !matches!(child.kind(), "&&" | "||" | "|" | "|&") {
                        self.not_plain();
                    }
                }
            }
            "redirected_statement" => {
                let mut cursor = node.walk();
                for child in node.children(&mut cursor) {
                    if node
                        .child_by_field_name("body")
                        .is_some_and(|b| b.id() == child.id())
                    {
                        self.statement(child, level + 1);
                    } else {
                        self.redirect(child, level);
                    }
                }
            }
            "comment" | ";" | "&" | "\n" => {}
            _ => {
                self.not_plain();
                self.walk_any(node, level + 1);
            }
        }
    }

    /// Walks any node for the commands inside it (deny rules), understanding nothing.
    fn walk_any(&mut self, node: Node<'_>, level: usize) {
        if self.too_deep(level) {
            return;
        }
        if node.kind() == "command" {
            self.not_plain();
            self.command(node, level);
            return;
        }
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            self.walk_any(child, level + 1);
        }
    }

    /// A redirection: plain only to `/dev/null` or between file descriptors.
    fn redirect(&mut self, node: Node<'_>, level: usize) {
        let plain = node.kind() == "file_redirect" && {
            let op = node
                .children(&mut node.walk())
                .find(|c| !c.is_named())
                .map(|c| self.text(c).to_owned())
                .unwrap_or_default();
            let dest = node
                .child_by_field_name("destination")
                .map(|d| self.word(d));
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
                analyze(&segment, level + 1, self.out);
            }
        }
    }

    /// A simple command: records it (and what its wrappers run) and, when the line is still
    /// plain, adds it to the plain commands.
    fn command(&mut self, node: Node<'_>, level: usize) {
        let mut word_nodes = Vec::new();
        let mut cursor = node.walk();
        if cursor.goto_first_child() {
            loop {
                let child = cursor.node();
                match cursor.field_name() {
                    Some("name" | "argument") => word_nodes.push(child),
                    Some("redirect") => self.redirect(child, level),
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
        for w in &word_nodes {
            self.walk_substitutions(*w, level + 1);
        }
        let words = self.words(&word_nodes);
        if words.is_empty() {
            self.not_plain();
            return;
        }
        let inner = self.follow(&words, level + 1);
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
                        [shell, flag, _] if SHELLS.contains(&shell.as_str()) && flag == "-c" => {
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
    fn words(&self, nodes: &[Node<'_>]) -> Vec<Word> {
        let mut words: Vec<Word> = Vec::new();
        let mut prev_end: Option<usize> = None;
        for n in nodes {
            let w = self.word(*n);
            let joined = prev_end.is_some_and(|end| {
                let gap = self.src.get(end..n.start_byte()).unwrap_or(" ");
                only_line_continuations(gap)
            });
            match (joined, words.last_mut()) {
                (true, Some(last)) => *last = join(last, &w),
                _ => words.push(w),
            }
            prev_end = Some(n.end_byte());
        }
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
    fn follow(&mut self, words: &[Word], level: usize) -> Option<Vec<PlainCommand>> {
        if self.too_deep(level) {
            return None;
        }
        self.out.commands.push(words.to_vec());
        let program = match &words[0] {
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
                    let c = c.to_vec();
                    // What a wrapper runs is never part of a plain line (unless an allow rule
                    // names the wrapper itself), so only its deny side matters here.
                    self.follow(&c, level + 1);
                }
                None
            }
            Unwrapped::Script(Word::Literal(s)) => analyze(&s, level + 1, self.out),
            Unwrapped::Script(Word::Dynamic(text)) => {
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

/// The `` `...` `` segments of a text (a backslash escapes the next character).
fn backquoted(text: &str) -> Vec<String> {
    let mut segments = Vec::new();
    let mut current: Option<String> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (c, current.as_mut()) {
            ('\\', Some(seg)) => {
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
