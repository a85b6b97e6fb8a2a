//! An exact bound on the tree's depth before anything walks it recursively (htmd's converter
//! does, a frame of about 2 KB per element in a debug build): below [`MAX_DEPTH`] an element's
//! descendants are lifted into one flat list of their text, so the words stay and only the
//! structure that deep is lost. Iterative; so is rcdom's `Drop`, which frees what is lifted out.

use std::cell::RefCell;
use std::rc::Rc;

use html5ever::tendril::StrTendril;
use markup5ever_rcdom::{Handle, Node, NodeData};

/// Elements deeper than this are flattened into their ancestor at this depth.
pub const MAX_DEPTH: usize = 256;

/// Kept as they are when lifted out: they have no content but mean something.
const KEPT_EMPTY: &[&str] = &["br", "img", "hr"];
/// Their text is kept apart from the text around them (a space, once Markdown is made).
const BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "dd",
    "div",
    "dl",
    "dt",
    "figcaption",
    "figure",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "li",
    "main",
    "ol",
    "p",
    "pre",
    "section",
    "table",
    "td",
    "th",
    "tr",
    "ul",
];

/// Flattens every element of `root`'s tree that is deeper than [`MAX_DEPTH`]. `skipped` names
/// elements whose content is never shown: it is dropped, not lifted into the text.
pub fn bound_depth(root: &Handle, skipped: &[&str]) {
    let mut todo: Vec<(Handle, usize)> = vec![(root.clone(), 0)];
    while let Some((node, depth)) = todo.pop() {
        if depth == MAX_DEPTH {
            lift_descendants(&node, skipped);
            continue;
        }
        for child in node.children.borrow().iter() {
            todo.push((child.clone(), depth + 1));
        }
    }
}

/// Replaces `node`'s children by the text (and `<br>`, `<img>`, `<hr>`) of its whole subtree,
/// in document order.
fn lift_descendants(node: &Handle, skipped: &[&str]) {
    let mut todo: Vec<Handle> = std::mem::take(&mut *node.children.borrow_mut());
    todo.reverse();
    let mut flat = Vec::new();
    while let Some(n) = todo.pop() {
        match &n.data {
            NodeData::Text { .. } => flat.push(n),
            NodeData::Element { name, .. } => {
                let tag: &str = &name.local;
                if skipped.contains(&tag) {
                    continue;
                }
                let children = std::mem::take(&mut *n.children.borrow_mut());
                if children.is_empty() && KEPT_EMPTY.contains(&tag) {
                    flat.push(n);
                    continue;
                }
                let block = BLOCKS.contains(&tag);
                if block {
                    flat.push(space());
                    todo.push(space());
                }
                todo.extend(children.into_iter().rev());
            }
            NodeData::Document => {
                let children = std::mem::take(&mut *n.children.borrow_mut());
                todo.extend(children.into_iter().rev());
            }
            NodeData::Doctype { .. }
            | NodeData::Comment { .. }
            | NodeData::ProcessingInstruction { .. } => {}
        }
    }
    for child in &flat {
        child.parent.set(Some(Rc::downgrade(node)));
    }
    *node.children.borrow_mut() = flat;
}

fn space() -> Handle {
    Node::new(NodeData::Text {
        contents: RefCell::new(StrTendril::from_slice("\n")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_of(root: &Handle) -> usize {
        let mut deepest = 0;
        let mut todo = vec![(root.clone(), 0)];
        while let Some((n, d)) = todo.pop() {
            deepest = deepest.max(d);
            for c in n.children.borrow().iter() {
                todo.push((c.clone(), d + 1));
            }
        }
        deepest
    }

    fn text_of(root: &Handle) -> String {
        let mut out = String::new();
        let mut todo = vec![root.clone()];
        while let Some(n) = todo.pop() {
            if let NodeData::Text { contents } = &n.data {
                out.push_str(&contents.borrow());
            }
            todo.extend(n.children.borrow().iter().rev().cloned());
        }
        out
    }

    #[test]
    fn deep_trees_are_cut_to_the_limit_and_keep_their_words() {
        let html = "<body>one <b>two</b><script>hidden</script><p>three</p>four</body>";
        // The parser's own limit would keep this shallow: build the tree past it by hand.
        let root = Node::new(NodeData::Document);
        let mut at = root.clone();
        for _ in 0..MAX_DEPTH * 3 {
            let span = element("span");
            adopt(&at, span.clone());
            at = span;
        }
        adopt(&at, super::super::parse::document(html));
        assert!(depth_of(&root) > MAX_DEPTH);
        bound_depth(&root, &["script"]);
        assert!(depth_of(&root) <= MAX_DEPTH + 1, "{}", depth_of(&root));
        let text = text_of(&root);
        let words: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(words, ["one", "two", "three", "four"]);
    }

    fn element(tag: &str) -> Handle {
        Node::new(NodeData::Element {
            name: html5ever::QualName::new(None, html5ever::ns!(html), tag.into()),
            attrs: RefCell::new(vec![]),
            template_contents: RefCell::new(None),
            mathml_annotation_xml_integration_point: false,
        })
    }

    fn adopt(parent: &Handle, child: Handle) {
        child.parent.set(Some(Rc::downgrade(parent)));
        parent.children.borrow_mut().push(child);
    }
}
