//! HTML to Markdown a model can read: the page's main content (`<main>`, else `<article>`, else
//! `<body>`) without scripts, styles, navigation or page furniture; links kept.

use std::rc::Rc;

use htmd::{HtmlToMarkdown, Node};
use markup5ever_rcdom::NodeData;

/// Tags whose content is never the page's text.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "canvas", "iframe", "form", "nav", "header",
    "footer", "aside", "button", "select", "input",
];

pub fn to_markdown(html: &str) -> String {
    let converter = HtmlToMarkdown::builder()
        .skip_tags(SKIPPED.to_vec())
        .build();
    let Ok(tree) = converter.html_to_tree(html) else {
        return String::new();
    };
    let title = find(&tree, "title").map(|t| text_of(&t));
    // `tree` must outlive the conversion: dropping an rcdom document empties its descendants.
    let main = ["main", "article", "body"]
        .iter()
        .find_map(|tag| find(&tree, tag))
        .unwrap_or_else(|| tree.clone());
    let body = converter.tree_to_markdown(&main);
    drop(tree);
    match title.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()) {
        Some(t) if !body.starts_with("# ") => format!("# {t}\n\n{body}"),
        _ => body,
    }
}

/// The first element named `tag`, depth first.
fn find(node: &Rc<Node>, tag: &str) -> Option<Rc<Node>> {
    if let NodeData::Element { name, .. } = &node.data
        && name.local.as_ref() == tag
    {
        return Some(node.clone());
    }
    node.children.borrow().iter().find_map(|c| find(c, tag))
}

fn text_of(node: &Rc<Node>) -> String {
    let mut out = String::new();
    if let NodeData::Text { contents } = &node.data {
        out.push_str(&contents.borrow());
    }
    for c in node.children.borrow().iter() {
        out.push_str(&text_of(c));
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
}
