//! What an MCP server may put into a prompt: its text and its binary data are each spent from a
//! fixed budget, so a hostile or broken server cannot flood the model's context, and whatever
//! was cut is said in one note.

/// Bytes left to spend, and what did not fit.
#[derive(Debug)]
pub(crate) struct Budget {
    text_cap: usize,
    text_left: usize,
    binary_left: usize,
    /// Text bytes offered in all, kept or not.
    text_seen: usize,
    /// Binary parts left out.
    binary_dropped: usize,
}

impl Budget {
    pub(crate) fn new(text_cap: usize, binary_cap: usize) -> Self {
        Self {
            text_cap,
            text_left: text_cap,
            binary_left: binary_cap,
            text_seen: 0,
            binary_dropped: 0,
        }
    }

    /// The part of `text` that fits (cut on a char boundary); `None` once nothing is left.
    pub(crate) fn text(&mut self, text: &str) -> Option<String> {
        self.text_seen += text.len();
        if self.text_left == 0 {
            return None;
        }
        let mut end = text.len().min(self.text_left);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        self.text_left -= end;
        if end == text.len() {
            Some(text.to_owned())
        } else {
            // Nothing more after a cut, even a shorter block that would still fit: the text
            // the model sees is a prefix of what the server sent.
            self.text_left = 0;
            Some(text[..end].to_owned())
        }
    }

    /// Whether binary data of `len` bytes (base64) still fits; spends it when it does.
    pub(crate) fn binary(&mut self, len: usize) -> bool {
        if len <= self.binary_left {
            self.binary_left -= len;
            true
        } else {
            self.binary_dropped += 1;
            false
        }
    }

    /// Counts a part left out for another reason (too many parts).
    pub(crate) fn drop_part(&mut self) {
        self.binary_dropped += 1;
    }

    /// What was cut, in words for the model and the user; `None` when everything fit.
    pub(crate) fn note(&self, what: &str) -> Option<String> {
        let text_cut = self.text_seen > self.text_cap;
        let mut parts = Vec::new();
        if text_cut {
            parts.push(format!(
                "its text was cut at the {}-byte cap ({} bytes sent)",
                self.text_cap, self.text_seen
            ));
        }
        if self.binary_dropped > 0 {
            parts.push(format!(
                "{} part(s) over the size or count caps were left out",
                self.binary_dropped
            ));
        }
        (!parts.is_empty())
            .then(|| format!("[Ferrite: {what} was too large: {}.]", parts.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_cut_once_on_a_char_boundary_and_noted() {
        let mut b = Budget::new(5, 0);
        assert_eq!(b.text("abc").as_deref(), Some("abc"));
        // "é" is two bytes: only one of the two would fit, so it is left out whole.
        assert_eq!(b.text("xéz").as_deref(), Some("x"));
        assert_eq!(b.text("z"), None);
        assert_eq!(
            b.note("the prompt").as_deref(),
            Some(
                "[Ferrite: the prompt was too large: its text was cut at the 5-byte cap (8 bytes \
                 sent).]"
            )
        );
    }

    #[test]
    fn binary_parts_over_the_cap_are_counted() {
        let mut b = Budget::new(10, 8);
        assert!(b.binary(6));
        assert!(!b.binary(6));
        assert!(b.binary(2));
        assert_eq!(
            b.note("x").as_deref(),
            Some(
                "[Ferrite: x was too large: 1 part(s) over the size or count caps were left out.]"
            )
        );
        assert_eq!(Budget::new(1, 1).note("x"), None);
    }
}
