//! HTML to Markdown a model can read: the page's main content (`<main>`, else `<article>`, else
//! `<body>`) without scripts, styles, navigation or page furniture; links kept.
//!
//! A page is hostile input: it is parsed within limits of depth, element count and time
//! (`parse`), its tree is cut to a depth the converter's recursion can take (`flatten`), and the
//! whole conversion runs on a thread of its own with a known stack, where a panic becomes an
//! error for the model instead of the agent's end ([`convert`]).

mod flatten;
mod parse;
mod verbatim;

use std::rc::Rc;

use htmd::{HtmlToMarkdown, Node};
use markup5ever_rcdom::NodeData;

use crate::charset;

/// Tags whose content is never the page's text.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "canvas", "iframe", "form", "nav", "header",
    "footer", "aside", "button", "select", "input",
];

/// The conversion thread's stack: [`flatten::MAX_DEPTH`] elements of htmd's recursion take about
/// 1 MiB in a debug build, so this leaves a wide margin.
const STACK_BYTES: usize = 16 * 1024 * 1024;

/// [`page_to_markdown`] on a thread of its own: the agent goes on whatever the page does to the
/// converter, and the model gets the error.
pub async fn convert(bytes: Vec<u8>, header_charset: Option<String>) -> Result<String, String> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("ferrite-html".into())
        .stack_size(STACK_BYTES)
        .spawn(move || {
            let md =
                std::panic::catch_unwind(|| page_to_markdown(&bytes, header_charset.as_deref()));
            let _ = tx.send(md.ok());
        });
    if let Err(e) = spawned {
        return Err(format!("cannot start the HTML converter: {e}"));
    }
    match rx.await {
        Ok(Some(md)) => Ok(md),
        Ok(None) | Err(_) => {
            Err("the page's HTML could not be converted to text (the converter failed)".into())
        }
    }
}

/// A page's bytes as Markdown, decoded as [`crate::charset`] says. When the page declares an
/// encoding other than the one guessed (and neither a BOM nor the header fixed it), the bytes
/// are decoded again with it and parsed once more, as a browser does.
pub fn page_to_markdown(bytes: &[u8], header_charset: Option<&str>) -> String {
    let first = charset::decode(bytes, header_charset);
    let (tree, declared) = parse::document_and_charset(&first.text);
    let redo = declared
        .as_deref()
        .and_then(charset::declared)
        .filter(|e| !first.certain && *e != first.encoding);
    match redo {
        Some(encoding) => {
            drop(tree);
            let text = encoding.decode_without_bom_handling(bytes).0;
            tree_to_markdown(parse::document(&text))
        }
        None => tree_to_markdown(tree),
    }
}

pub fn to_markdown(html: &str) -> String {
    tree_to_markdown(parse::document(html))
}

fn tree_to_markdown(tree: Rc<Node>) -> String {
    let converter = HtmlToMarkdown::builder()
        .skip_tags(SKIPPED.to_vec())
        .build();
    flatten::bound_depth(&tree, SKIPPED);
    verbatim::protect(&tree);
    let title = find(&tree, "title").map(|t| verbatim::restore(text_of(&t)));
    // `tree` must outlive the conversion: dropping an rcdom document empties its descendants.
    let main = ["main", "article", "body"]
        .iter()
        .find_map(|tag| find(&tree, tag))
        .unwrap_or_else(|| tree.clone());
    let body = verbatim::restore(converter.tree_to_markdown(&main));
    drop(tree);
    match title.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()) {
        Some(t) if !body.starts_with("# ") => format!("# {t}\n\n{body}"),
        _ => body,
    }
}

/// The first element named `tag`, depth first.
fn find(root: &Rc<Node>, tag: &str) -> Option<Rc<Node>> {
    let mut todo = vec![root.clone()];
    while let Some(node) = todo.pop() {
        if let NodeData::Element { name, .. } = &node.data
            && name.local.as_ref() == tag
        {
            return Some(node);
        }
        todo.extend(node.children.borrow().iter().rev().cloned());
    }
    None
}

/// The text of `root`'s subtree, in document order.
fn text_of(root: &Rc<Node>) -> String {
    let mut out = String::new();
    let mut todo = vec![root.clone()];
    while let Some(node) = todo.pop() {
        if let NodeData::Text { contents } = &node.data {
            out.push_str(&contents.borrow());
        }
        todo.extend(node.children.borrow().iter().rev().cloned());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn main_content_with_links_and_no_furniture() {
        let html = r#"<html><head><title>Docs</title><style>p{}</style>
            <script>alert("x")</script></head><body>
            <nav><a href="/">Home</a> <a href="/about">About</a></nav>
            <main><h2>Install</h2><p>Run <code>cargo add x</code>, see
            <a href="https://docs.rs/x">the docs</a>.</p><ul><li>one</li><li>two</li></ul></main>
            <footer>© 2026</footer></body></html>"#;
        let md = to_markdown(html);
        assert!(md.starts_with("# Docs"), "{md}");
        assert!(md.contains("## Install"), "{md}");
        assert!(md.contains("[the docs](https://docs.rs/x)"), "{md}");
        assert!(md.contains("`cargo add x`"), "{md}");
        for gone in ["alert", "About", "©", "p{}"] {
            assert!(!md.contains(gone), "{gone} in {md}");
        }
    }

    /// Every nestable element, nested far past the limits, on a thread of the default 2 MiB
    /// stack: the words come back (regression: 3,000 `<div>` overflowed the stack).
    #[test]
    fn deep_nesting_keeps_the_words_within_a_small_stack() {
        let cases = [
            ("<div>", "</div>"),
            ("<span>", "</span>"),
            ("<b>", "</b>"),
            ("<em><strong>", "</strong></em>"),
            ("<ul><li>", "</li></ul>"),
            ("<ol><li>", "</li></ol>"),
            ("<table><tr><td>", "</td></tr></table>"),
            ("<blockquote>", "</blockquote>"),
            ("<pre><code>", "</code></pre>"),
            ("<dl><dd>", "</dd></dl>"),
            ("<a href=x>", "</a>"),
        ];
        for (open, close) in cases {
            let html = format!(
                "<main><p>start</p>{}middle{}<p>end</p></main>",
                open.repeat(20_000),
                close.repeat(20_000)
            );
            let md = std::thread::Builder::new()
                .stack_size(2 * 1024 * 1024)
                .spawn(move || to_markdown(&html))
                .unwrap()
                .join()
                .unwrap();
            for word in ["start", "middle", "end"] {
                assert!(md.contains(word), "{open}: no {word} in {md:.300}");
            }
        }
    }

    /// Unclosed formatting tags are copied into every later paragraph by the standard's
    /// parser: 160 KB of `<p>x</p>` made 146 MB of elements. Their number is bounded now.
    #[test]
    fn formatting_copied_into_every_paragraph_is_bounded() {
        let tags = [
            "b", "i", "u", "s", "em", "strong", "code", "small", "big", "tt",
        ];
        let head: String = tags.iter().map(|t| format!("<{t}><{t}><{t}>")).collect();
        let html = format!(
            "<body><p>{head}x</p>{}<p>last</p></body>",
            "<p>y</p>".repeat(100_000)
        );
        let tree = parse::document(&html);
        let mut elements = 0;
        let mut todo = vec![tree.clone()];
        while let Some(n) = todo.pop() {
            if let NodeData::Element { .. } = n.data {
                elements += 1;
            }
            todo.extend(n.children.borrow().iter().cloned());
        }
        assert!(elements <= parse::MAX_ELEMENTS + 64, "{elements} elements");
        assert!(
            text_of(&tree).ends_with("yylast"),
            "the text after the budget is kept"
        );
    }

    #[tokio::test]
    async fn a_page_converts_off_the_caller_s_thread() {
        let md = convert(b"<title>T</title><p>hello</p>".to_vec(), None)
            .await
            .unwrap();
        assert_eq!(md, "# T\n\nhello");
    }
}
