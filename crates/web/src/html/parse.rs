//! Parsing a page that may be hostile, in bounded time and memory.
//!
//! html5ever builds the tree the HTML standard describes, whatever the input, and that is the
//! problem: 100,000 nested `<div>` make a tree 100,000 deep (the converter walks it
//! recursively), and the tree builder scans its stack of open elements on most tags, so deep
//! nesting also costs time quadratic in the depth (20,000 divs: 32 s in a debug build). A page
//! can also make the parser multiply elements: each paragraph after unclosed formatting tags
//! gets copies of all of them, so 160 KB of `<p>x</p>` took 146 MB.
//!
//! So the tokens go through [`Limiter`] on their way to the tree builder. It keeps a model of
//! the open elements (the standard's common implied end tags included) and drops start tags
//! that would nest deeper than [`MAX_OPEN`], with their end tags; the text inside is kept. The
//! model is approximate (misnested markup can make the real tree deeper), so two hard budgets
//! back it: past [`MAX_ELEMENTS`] elements or [`PARSE_BUDGET`] of parsing, no more tags reach the
//! tree builder and the rest of the page is kept as text. The depth that the converter's
//! recursion sees is bounded exactly afterwards ([`super::flatten`]).

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::time::{Duration, Instant};

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::{
    BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use html5ever::tree_builder::{
    ElementFlags, NodeOrText, QuirksMode, TreeBuilder, TreeBuilderOpts, TreeSink,
};
use html5ever::{Attribute, ExpandedName, LocalName, QualName, TokenizerResult, local_name};
use markup5ever_rcdom::{Handle, RcDom};

/// Open elements (as [`Limiter`] models them) past which start tags are dropped.
pub const MAX_OPEN: usize = 128;
/// Elements created at most; then the rest of the page is text.
pub const MAX_ELEMENTS: usize = 200_000;
/// Time spent parsing at most; then the rest of the page is text.
pub const PARSE_BUDGET: Duration = Duration::from_secs(5);

/// Parses `html` as a document (scripting on, as a browser would: `<noscript>` is raw text).
pub fn document(html: &str) -> Handle {
    document_and_charset(html).0
}

/// [`document`], and the charset the page's first `<meta charset>` or `<meta http-equiv=
/// "Content-Type">` declares, wherever it stands.
pub fn document_and_charset(html: &str) -> (Handle, Option<String>) {
    let tree = TreeBuilder::new(
        Counted::default(),
        TreeBuilderOpts {
            scripting_enabled: true,
            ..Default::default()
        },
    );
    let limiter = Limiter {
        tree,
        model: RefCell::new(Model::default()),
        text_only: Cell::new(false),
        deadline: Instant::now() + PARSE_BUDGET,
    };
    let tokenizer = Tokenizer::new(limiter, TokenizerOpts::default());
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(html));
    // `Script` (a `</script>` was seen) and `EncodingIndicator` (a `<meta>` declared a
    // charset) only pause the tokenizer: go on. Stopping at the indicator lost every page with
    // `<meta charset="utf-8">` (issue 35). Only the first declaration counts, as in a browser.
    let mut charset = None;
    loop {
        match tokenizer.feed(&input) {
            TokenizerResult::Done => break,
            TokenizerResult::Script(_) => {}
            TokenizerResult::EncodingIndicator(label) => {
                charset.get_or_insert_with(|| label.to_string());
            }
        }
    }
    tokenizer.end();
    (tokenizer.sink.tree.sink.dom.document.clone(), charset)
}

/// Stands between the tokenizer and the tree builder (see the module's comment).
struct Limiter {
    tree: TreeBuilder<Handle, Counted>,
    model: RefCell<Model>,
    /// A budget ran out: only text goes on.
    text_only: Cell<bool>,
    deadline: Instant,
}

impl TokenSink for Limiter {
    type Handle = Handle;

    fn process_token(&self, token: Token, line_number: u64) -> TokenSinkResult<Handle> {
        let pass = match &token {
            // Never shown to the model; they would only take memory.
            Token::CommentToken(_) | Token::ParseError(_) => false,
            Token::TagToken(tag) => {
                if !self.text_only.get()
                    && (self.tree.sink.elements.get() > MAX_ELEMENTS
                        || Instant::now() > self.deadline)
                {
                    tracing::debug!("web_fetch: parse budget spent; the rest of the page is text");
                    self.text_only.set(true);
                }
                let mut model = self.model.borrow_mut();
                if self.text_only.get() {
                    // Raw text elements still end, or the rest of the page would be their text.
                    tag.kind == TagKind::EndTag && RAW_TEXT.contains(&tag.name)
                } else {
                    match tag.kind {
                        TagKind::StartTag => model.start(&tag.name, tag.self_closing),
                        TagKind::EndTag => model.end(&tag.name),
                    }
                }
            }
            Token::DoctypeToken(_)
            | Token::CharacterTokens(_)
            | Token::NullCharacterToken
            | Token::EOFToken => true,
        };
        if pass {
            self.tree.process_token(token, line_number)
        } else {
            TokenSinkResult::Continue
        }
    }

    fn end(&self) {
        self.tree.end();
    }

    fn adjusted_current_node_present_but_not_in_html_namespace(&self) -> bool {
        self.tree
            .adjusted_current_node_present_but_not_in_html_namespace()
    }
}

/// A slice of static tag names (atoms: compared as integers).
macro_rules! names {
    ($($n:tt),* $(,)?) => {
        &[$(local_name!($n)),*]
    };
}

/// Elements without content or end tag.
const VOID: &[LocalName] = names![
    "area", "base", "br", "col", "embed", "hr", "img", "image", "input", "keygen", "link", "meta",
    "param", "source", "track", "wbr", "basefont", "bgsound", "frame"
];
/// Elements whose content the tokenizer reads as text up to their end tag: never dropped (the
/// tokenizer would read their content as markup), and they hold no elements.
const RAW_TEXT: &[LocalName] = names![
    "script",
    "style",
    "textarea",
    "title",
    "xmp",
    "iframe",
    "noembed",
    "noframes",
    "noscript",
    "plaintext"
];
/// A start tag of these closes an open `<p>` (the standard's "close a p element").
const CLOSES_P: &[LocalName] = names![
    "address",
    "article",
    "aside",
    "blockquote",
    "center",
    "details",
    "dialog",
    "dir",
    "div",
    "dl",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "header",
    "hgroup",
    "main",
    "menu",
    "nav",
    "ol",
    "p",
    "search",
    "section",
    "summary",
    "ul",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "pre",
    "listing",
    "form",
    "table",
    "hr",
    "xmp"
];
/// Where the search for an element to close implicitly stops (roughly the standard's scopes).
const SCOPE: &[LocalName] = names![
    "html", "body", "table", "td", "th", "caption", "template", "button", "applet", "object",
    "marquee", "select", "svg", "math", "ul", "ol", "menu", "dl"
];
const TABLE_SCOPE: &[LocalName] = names!["table", "template", "html"];
const HEADINGS: &[LocalName] = names!["h1", "h2", "h3", "h4", "h5", "h6"];

/// The open elements as the tree builder will roughly have them.
#[derive(Default)]
struct Model {
    open: Vec<LocalName>,
    /// Start tags dropped, by name: their end tags are dropped too.
    dropped: HashMap<LocalName, usize>,
    /// How many of each name are open: most implied ends are then found absent at once,
    /// without a walk down [`Model::open`].
    counts: HashMap<LocalName, usize>,
}

impl Model {
    /// Whether the start tag goes to the tree builder.
    fn start(&mut self, name: &LocalName, self_closing: bool) -> bool {
        let tag: &str = name;
        if matches!(tag, "html" | "head" | "body")
            || VOID.contains(name)
            || (self_closing
                && (self.is_open(&local_name!("svg")) || self.is_open(&local_name!("math"))))
        {
            return true;
        }
        // A dropped tag closes nothing either: the tree builder never sees it.
        let len = self.after_implied_ends(name);
        if len >= MAX_OPEN && !RAW_TEXT.contains(name) {
            *self.dropped.entry(name.clone()).or_default() += 1;
            return false;
        }
        self.truncate(len);
        let top = self.open.last().map(|n| &**n);
        if matches!(tag, "td" | "th") && top == Some("table") {
            self.push(local_name!("tbody"));
            self.push(local_name!("tr"));
        } else if tag == "tr" && top == Some("table") {
            self.push(local_name!("tbody"));
        }
        self.push(name.clone());
        true
    }

    /// Whether the end tag goes to the tree builder.
    fn end(&mut self, name: &LocalName) -> bool {
        if let Some(n) = self.dropped.get_mut(name)
            && *n > 0
        {
            *n -= 1;
            return false;
        }
        if !matches!(&**name, "html" | "body" | "br")
            && self.is_open(name)
            && let Some(i) = self.open.iter().rposition(|n| n == name)
        {
            self.truncate(i);
        }
        true
    }

    /// How many elements stay open once a start tag of `name` has closed what it closes.
    fn after_implied_ends(&self, name: &LocalName) -> usize {
        let mut len = self.open.len();
        if CLOSES_P.contains(name) {
            len = self.close(len, names!["p"], SCOPE);
        }
        let top = len.checked_sub(1).map(|i| &*self.open[i]);
        match &**name {
            "li" => self.close(len, names!["li"], SCOPE),
            "dd" | "dt" => self.close(len, names!["dd", "dt"], SCOPE),
            "tr" => self.close(len, names!["tr"], TABLE_SCOPE),
            "td" | "th" => self.close(
                len,
                names!["td", "th"],
                names!["table", "tr", "template", "html"],
            ),
            "tbody" | "thead" | "tfoot" => {
                self.close(len, names!["tbody", "thead", "tfoot"], TABLE_SCOPE)
            }
            "table" if matches!(top, Some("table" | "tbody" | "thead" | "tfoot" | "tr")) => {
                self.close(len, names!["table"], names!["template", "html"])
            }
            "a" => self.close(
                len,
                names!["a"],
                names!["table", "td", "th", "caption", "template", "html"],
            ),
            "button" | "nobr" | "select" => {
                self.close(len, std::slice::from_ref(name), names!["html", "template"])
            }
            "option" if top == Some("option") => len - 1,
            "optgroup" => {
                let len = if top == Some("option") { len - 1 } else { len };
                match len.checked_sub(1).map(|i| &*self.open[i]) {
                    Some("optgroup") => len - 1,
                    _ => len,
                }
            }
            _ if HEADINGS.contains(name)
                && top.is_some_and(|t| HEADINGS.iter().any(|h| &**h == t)) =>
            {
                len - 1
            }
            _ => len,
        }
    }

    /// The length of `open[..len]` once the innermost element named in `targets` is closed,
    /// unless one named in `stops` comes first.
    fn close(&self, len: usize, targets: &[LocalName], stops: &[LocalName]) -> usize {
        if !targets.iter().any(|t| self.is_open(t)) {
            return len;
        }
        for i in (0..len).rev() {
            let n = &self.open[i];
            if targets.contains(n) {
                return i;
            }
            if stops.contains(n) {
                return len;
            }
        }
        len
    }

    fn is_open(&self, name: &LocalName) -> bool {
        self.counts.get(name).is_some_and(|n| *n > 0)
    }

    fn push(&mut self, name: LocalName) {
        *self.counts.entry(name.clone()).or_default() += 1;
        self.open.push(name);
    }

    fn truncate(&mut self, len: usize) {
        for name in self.open.drain(len..) {
            if let Some(n) = self.counts.get_mut(&name) {
                *n = n.saturating_sub(1);
            }
        }
    }
}

/// The rcdom tree, counting the elements made, without its list of parse errors (a page of
/// garbage has millions) and without what a converter does not need.
#[derive(Default)]
struct Counted {
    dom: RcDom,
    elements: Cell<usize>,
}

impl TreeSink for Counted {
    type Handle = Handle;
    type Output = RcDom;
    type ElemName<'a>
        = ExpandedName<'a>
    where
        Self: 'a;

    fn finish(self) -> RcDom {
        self.dom
    }

    fn parse_error(&self, _msg: Cow<'static, str>) {}

    fn get_document(&self) -> Handle {
        self.dom.get_document()
    }

    fn elem_name<'a>(&'a self, target: &'a Handle) -> ExpandedName<'a> {
        self.dom.elem_name(target)
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> Handle {
        self.elements.set(self.elements.get() + 1);
        self.dom.create_element(name, attrs, flags)
    }

    fn create_comment(&self, text: StrTendril) -> Handle {
        self.dom.create_comment(text)
    }

    fn create_pi(&self, target: StrTendril, data: StrTendril) -> Handle {
        self.dom.create_pi(target, data)
    }

    fn append(&self, parent: &Handle, child: NodeOrText<Handle>) {
        self.dom.append(parent, child);
    }

    fn append_based_on_parent_node(
        &self,
        element: &Handle,
        prev_element: &Handle,
        child: NodeOrText<Handle>,
    ) {
        self.dom
            .append_based_on_parent_node(element, prev_element, child);
    }

    fn append_doctype_to_document(
        &self,
        name: StrTendril,
        public_id: StrTendril,
        system_id: StrTendril,
    ) {
        self.dom
            .append_doctype_to_document(name, public_id, system_id);
    }

    fn get_template_contents(&self, target: &Handle) -> Handle {
        self.dom.get_template_contents(target)
    }

    fn same_node(&self, x: &Handle, y: &Handle) -> bool {
        self.dom.same_node(x, y)
    }

    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.dom.set_quirks_mode(mode);
    }

    fn append_before_sibling(&self, sibling: &Handle, new_node: NodeOrText<Handle>) {
        self.dom.append_before_sibling(sibling, new_node);
    }

    fn add_attrs_if_missing(&self, target: &Handle, attrs: Vec<Attribute>) {
        self.dom.add_attrs_if_missing(target, attrs);
    }

    fn remove_from_parent(&self, target: &Handle) {
        self.dom.remove_from_parent(target);
    }

    fn reparent_children(&self, node: &Handle, new_parent: &Handle) {
        self.dom.reparent_children(node, new_parent);
    }

    fn is_mathml_annotation_xml_integration_point(&self, handle: &Handle) -> bool {
        self.dom.is_mathml_annotation_xml_integration_point(handle)
    }

    // Not delegated: `maybe_clone_an_option_into_selectedcontent` (rcdom copies the option's
    // subtree recursively, and a model reading the page has no use for the copy).
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model_after(tags: &[&str]) -> Vec<String> {
        let mut m = Model::default();
        for t in tags {
            match t.strip_prefix('/') {
                Some(end) => {
                    m.end(&LocalName::from(end));
                }
                None => {
                    m.start(&LocalName::from(*t), false);
                }
            }
        }
        m.open.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn the_model_closes_what_the_standard_closes_implicitly() {
        assert_eq!(model_after(&["p", "p", "p"]), ["p"]);
        assert_eq!(model_after(&["ul", "li", "li", "li"]), ["ul", "li"]);
        assert_eq!(
            model_after(&["ul", "li", "ul", "li"]),
            ["ul", "li", "ul", "li"]
        );
        assert_eq!(
            model_after(&["table", "td", "td", "tr", "td"]),
            ["table", "tbody", "tr", "td"]
        );
        assert_eq!(model_after(&["div", "p", "div"]), ["div", "div"]);
        assert_eq!(model_after(&["div", "span", "/div"]), Vec::<String>::new());
        assert_eq!(model_after(&["dl", "dt", "dd", "dt"]), ["dl", "dt"]);
    }

    #[test]
    fn past_the_limit_start_tags_and_their_end_tags_are_dropped() {
        let mut m = Model::default();
        let div = LocalName::from("div");
        let passed = (0..MAX_OPEN + 10).filter(|_| m.start(&div, false)).count();
        assert_eq!(passed, MAX_OPEN);
        let ends = (0..MAX_OPEN + 10).filter(|_| m.end(&div)).count();
        assert_eq!(ends, MAX_OPEN);
        assert!(m.open.is_empty());
        // Raw text elements still open: their content must not be read as markup.
        for _ in 0..MAX_OPEN {
            m.start(&div, false);
        }
        assert!(m.start(&LocalName::from("script"), false));
    }
}
