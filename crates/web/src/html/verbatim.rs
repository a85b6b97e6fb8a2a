//! The page's text as written. htmd backslash-escapes every Markdown special in text (`_`, `*`,
//! `` ` ``, `[`, `]`, `\`, `<`, and `#`, `-`, `>`, `1.` where a text node starts), so an
//! identifier such as `FROBNICATOR_az0u2q` reached the model as `FROBNICATOR\_az0u2q`, and the
//! model copied the backslash into code. htmd has no option to turn that off, so before the
//! conversion every such character of the page's text is swapped for a placeholder htmd leaves
//! alone, and swapped back in its output. The Markdown htmd writes itself (emphasis, links,
//! fences) is made of the real characters and is untouched; text inside `pre` and `code` is not
//! escaped by htmd and is left as it is here too.
//!
//! The placeholders are Unicode noncharacters (U+FDD0..), which have no meaning in a page's text:
//! any the page itself holds become U+FFFD first, so every placeholder in the output is ours.

use markup5ever_rcdom::{Handle, NodeData};

/// The characters htmd would escape in text, in placeholder order.
const SPECIAL: [char; 14] = [
    '\\', '*', '_', '`', '[', ']', '<', '=', '~', '>', '-', '+', '#', '.',
];
const FIRST: u32 = 0xFDD0;
/// Unicode's noncharacters in the Arabic Presentation Forms-A block.
const NONCHARACTERS: std::ops::RangeInclusive<char> = '\u{FDD0}'..='\u{FDEF}';

/// Swaps the specials in every text node of `root`'s tree that htmd would escape (everything
/// outside `pre` and `code`) for placeholders.
pub fn protect(root: &Handle) {
    let mut todo: Vec<(Handle, bool)> = vec![(root.clone(), false)];
    while let Some((node, in_code)) = todo.pop() {
        match &node.data {
            NodeData::Text { contents } if !in_code => {
                let mut contents = contents.borrow_mut();
                if contents
                    .chars()
                    .any(|c| SPECIAL.contains(&c) || NONCHARACTERS.contains(&c))
                {
                    let swapped: String = contents.chars().map(to_placeholder).collect();
                    *contents = swapped.as_str().into();
                }
            }
            NodeData::Element { name, .. } => {
                let code = in_code || matches!(name.local.as_ref(), "pre" | "code");
                for child in node.children.borrow().iter() {
                    todo.push((child.clone(), code));
                }
            }
            _ => {
                for child in node.children.borrow().iter() {
                    todo.push((child.clone(), in_code));
                }
            }
        }
    }
}

/// The converter's output with the page's own characters back in place of the placeholders.
pub fn restore(markdown: String) -> String {
    if !markdown.chars().any(|c| NONCHARACTERS.contains(&c)) {
        return markdown;
    }
    markdown.chars().map(from_placeholder).collect()
}

fn to_placeholder(c: char) -> char {
    if NONCHARACTERS.contains(&c) {
        return char::REPLACEMENT_CHARACTER;
    }
    match SPECIAL.iter().position(|s| *s == c) {
        // FIRST + 13 at most: a noncharacter, always a valid char.
        Some(i) => char::from_u32(FIRST + i as u32).unwrap_or(c),
        None => c,
    }
}

fn from_placeholder(c: char) -> char {
    let i = (c as u32).wrapping_sub(FIRST) as usize;
    SPECIAL.get(i).copied().unwrap_or(c)
}

#[cfg(test)]
mod tests {
    use super::super::to_markdown;

    /// Issue 23: identifiers, URLs and code come back exactly as the page wrote them.
    #[test]
    fn the_page_s_text_reaches_the_model_as_written() {
        let html = r#"<main>
            <p>Set FROBNICATOR_az0u2q and __init__ then call snake_case_fn(*args, **kw).</p>
            <p>See https://example.com/a_b_c/d_e?x_y=1 or <a href="https://ex.com/x_y_z">the_link_text</a>.</p>
            <p>Use <code>MY_VAR=1 make *all*</code> and a [bracket] a \back\slash a &lt;tag&gt;.</p>
            <p>Ticket <b>number</b> #42 then # spaced, 3.14 and 1. first, a-b, a+b, x=y, ~home &gt; there</p>
            <pre><code>let a_b = c * d; // keep_me [x]</code></pre>
            <ul><li>item_one</li><li>*starred*</li></ul>
        </main>"#;
        let md = to_markdown(html);
        for written in [
            "FROBNICATOR_az0u2q",
            "__init__",
            "snake_case_fn(*args, **kw)",
            "https://example.com/a_b_c/d_e?x_y=1",
            "[the_link_text](https://ex.com/x_y_z)",
            "`MY_VAR=1 make *all*`",
            "a [bracket] a \\back\\slash a <tag>.",
            "#42 then # spaced, 3.14 and 1. first, a-b, a+b, x=y, ~home > there",
            "let a_b = c * d; // keep_me [x]",
            "item_one",
            "*starred*",
        ] {
            assert!(md.contains(written), "{written:?} not in:\n{md}");
        }
        // htmd's own Markdown is still there.
        assert!(md.contains("**number**"), "{md}");
        assert!(md.contains("```"), "{md}");
        // No placeholder leaks, and a noncharacter the page held is not turned into text.
        let md = to_markdown("<p>a\u{FDD2}b_c</p>");
        assert_eq!(md, "a\u{FFFD}b_c");
    }
}
