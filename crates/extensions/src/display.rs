//! Text shown to a person, with the characters that change how text looks made visible.
//!
//! What the user approves must look like what runs. A command, a path or a diff can hold
//! characters that reorder the text around them (bidi overrides such as U+202E, isolates
//! U+2066–U+2069), hide themselves (zero-width characters, U+FEFF, tag characters), rewrite
//! what a terminal already showed (ESC sequences, a carriage return, a backspace) or pass for
//! a plain space (U+00A0 and the other non-ASCII spaces). [`visible`] replaces each with an
//! escape the user can read, `\u{202e}`; tabs, newlines and a CR before a newline are layout
//! and stay. Only what is shown is escaped: the command that runs and what the model reads are
//! the original text.

use std::borrow::Cow;

/// `text` with every character that [`changes_display`] written as `\u{…}` (lower-case hex).
/// Borrowed when there is none, which is nearly always.
pub fn visible(text: &str) -> Cow<'_, str> {
    use std::fmt::Write as _;
    let mut out: Option<String> = None;
    let mut prev = None;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        if escaped(c, prev, next) {
            let out = out.get_or_insert_with(|| {
                let mut s = String::with_capacity(text.len() + 16);
                s.push_str(&text[..i]);
                s
            });
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else if let Some(out) = out.as_mut() {
            out.push(c);
        }
        prev = Some(c);
    }
    out.map_or(Cow::Borrowed(text), Cow::Owned)
}

/// Whether `c` changes how the text around it looks, or is invisible or passes for another
/// character: controls (C0 but tab and newline, DEL, C1), bidi controls, zero-width and other
/// invisible format characters, tag characters, non-ASCII spaces and line separators.
pub fn changes_display(c: char) -> bool {
    let cp = u32::from(c);
    matches!(cp,
        0x00..=0x08 | 0x0b..=0x1f | 0x7f..=0x9f // controls (tab, newline apart; CR: see `visible`)
        | 0xa0 | 0xad | 0x034f | 0x061c | 0x115f | 0x1160 | 0x1680 | 0x17b4 | 0x17b5
        | 0x180b..=0x180f
        | 0x2000..=0x200f // spaces of other widths, zero-width characters, LRM/RLM
        | 0x2028..=0x202f // line and paragraph separators, bidi embeddings and overrides
        | 0x205f..=0x206f // word joiner, invisible operators, bidi isolates
        | 0x3000 | 0x3164 | 0xfe00..=0xfe0f | 0xfeff | 0xffa0 | 0xfff9..=0xfffb
        | 0x1d173..=0x1d17a
        | 0xe0000..=0xe007f // tag characters
        | 0xe0100..=0xe01ef // variation selectors supplement
    )
}

/// Whether `c` (between `prev` and `next`) is written as an escape. A CR before a newline is a
/// line ending; an emoji's presentation selector (U+FE0E/U+FE0F after a non-ASCII character)
/// is how emoji are written.
fn escaped(c: char, prev: Option<char>, next: Option<char>) -> bool {
    match c {
        '\t' | '\n' => false,
        '\r' => next != Some('\n'),
        '\u{fe0e}' | '\u{fe0f}' => !prev.is_some_and(|p| !p.is_ascii() && !changes_display(p)),
        c => changes_display(c),
    }
}

/// `text` as a fenced Markdown code block that nothing inside can close: the fence is one
/// backtick longer than the longest run of backticks in the text (CommonMark §4.5).
pub fn fenced(text: &str, language: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat(longest.max(2) + 1);
    let newline = if text.ends_with('\n') { "" } else { "\n" };
    format!("{fence}{language}\n{text}{newline}{fence}")
}

/// `text` as inline Markdown code, delimited so that no backtick inside ends it.
pub fn inline_code(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let ticks = "`".repeat(longest + 1);
    // A space keeps a backtick at either end from joining the delimiter.
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{text}{pad}{ticks}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_changing_characters_become_escapes() {
        assert_eq!(
            visible("rm -rf ~ \u{202e}txt.sh"),
            "rm -rf ~ \\u{202e}txt.sh"
        );
        assert_eq!(visible("echo hi\r\u{1b}[2Kls"), "echo hi\\u{d}\\u{1b}[2Kls");
        assert_eq!(
            visible("a\u{200b}b\u{feff}c\u{2066}d\u{2069}\u{8}\u{85}\u{a0}"),
            "a\\u{200b}b\\u{feff}c\\u{2066}d\\u{2069}\\u{8}\\u{85}\\u{a0}"
        );
        assert_eq!(visible("x\u{e0041}"), "x\\u{e0041}");
    }

    #[test]
    fn layout_and_ordinary_text_are_untouched() {
        for text in [
            "plain ascii",
            "tab\tand\nnewline",
            "crlf\r\nline",
            "日本語 and émoji ❤\u{fe0f}",
            "",
        ] {
            assert!(matches!(visible(text), Cow::Borrowed(_)), "{text:?}");
        }
        assert_eq!(visible("x\u{fe0f}"), "x\\u{fe0f}");
        assert_eq!(visible("lone cr\r"), "lone cr\\u{d}");
    }

    #[test]
    fn a_fence_is_longer_than_any_backtick_run_inside() {
        assert_eq!(fenced("a\n", ""), "```\na\n```");
        assert_eq!(fenced("x ```` y", "sh"), "`````sh\nx ```` y\n`````");
        assert_eq!(fenced("", ""), "```\n\n```");
    }
}
