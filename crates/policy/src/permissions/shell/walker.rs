//! The walk over the grammar's tree of one line: plain commands for allow rules, every command
//! for deny rules ([`super::Script`]).

use tree_sitter::Node;

use super::bounds::{MAX_LEVEL, TOO_DEEP};
use super::{
    Found, Grammar, Guessing, PlainCommand, Script, Word, analyze, append, backquoted, chain,
    double_quoted, is_unplain_builtin, only_line_continuations, unquoted, wrappers,
};

pub(super) struct Walker<'s, 'o> {
    pub src: &'s str,
    pub grammar: Grammar,
    pub out: &'o mut Script,
    /// `None` once something not understood was seen.
    pub plain: Option<Vec<PlainCommand>>,
    /// Where the walker joined two nodes a line continuation glues together.
    pub joined: Vec<usize>,
    /// The words the grammar dropped before here-documents ([`Reading::before_heredoc`]), in
    /// the order of the line.
    pub before_heredoc: Vec<(usize, String)>,
}

impl Walker<'_, '_> {
    fn text(&self, node: Node<'_>) -> &str {
        node.utf8_text(self.src.as_bytes()).unwrap_or("")
    }

    pub(super) fn not_plain(&mut self) {
        self.plain = None;
    }

    /// The top level: statements separated by `;`, `&`, newlines, and comments.
    pub(super) fn program(&mut self, root: Node<'_>, level: usize) {
        let mut cursor = root.walk();
        for child in root.children(&mut cursor) {
            self.statement(child, level);
        }
    }

    pub(super) fn too_deep(&mut self, level: usize) -> bool {
        if level <= MAX_LEVEL {
            return false;
        }
        self.out.exceed(TOO_DEEP);
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
                        .binary_search_by_key(&r.start_byte(), |(at, _)| *at)
                        .is_ok()
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
        let recovered = self.recovered(&heredocs);
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

    /// The words the grammar dropped before the here-documents starting at `heredocs`, in the
    /// order of the line. `before_heredoc` is in that order too (one lookup each: a line of
    /// thousands of here-documents stays linear).
    fn recovered(&self, heredocs: &[usize]) -> Vec<(usize, Word)> {
        let mut recovered: Vec<(usize, Word)> = heredocs
            .iter()
            .filter_map(|at| {
                let i = self
                    .before_heredoc
                    .binary_search_by_key(at, |(a, _)| *a)
                    .ok()?;
                Some((*at, unquoted(&self.before_heredoc[i].1)))
            })
            .collect();
        recovered.sort_by_key(|(at, _)| *at);
        recovered.dedup_by_key(|(at, _)| *at);
        recovered
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
                (true, Some(last)) => append(last, &w),
                _ => words.push(w),
            }
            prev_end = Some(n.end_byte());
        }
        words.extend(recovered.map(|(_, w)| w.clone()));
        words
    }

    /// The value of one word node.
    pub(super) fn word(&self, node: Node<'_>) -> Word {
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
                let mut value = String::new();
                for part in node.children(&mut cursor) {
                    match self.word(part) {
                        Word::Literal(s) => value.push_str(&s),
                        Word::Dynamic(_) => return Word::Dynamic(text.to_owned()),
                    }
                }
                Word::Literal(value)
            }
            "command_name" => match node.named_child(0) {
                Some(inner) if node.named_child_count() == 1 => self.word(inner),
                _ => Word::Dynamic(text.to_owned()),
            },
            _ => Word::Dynamic(text.to_owned()),
        }
    }
}
