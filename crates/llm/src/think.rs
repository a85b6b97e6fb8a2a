//! Splits inline `<think>…</think>` reasoning out of streamed content (DeepSeek-R1 style models
//! on compatible servers), even when a tag is cut across chunks.

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

/// Which stream a piece of content belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Channel {
    Text,
    Reasoning,
}

#[derive(Debug, Default)]
pub(crate) struct ThinkSplitter {
    inside: bool,
    /// Visible text has been emitted: from then on `<think>` is ordinary text (the model may be
    /// writing about the tag); reasoning blocks only ever open a response.
    seen_text: bool,
    /// A possible partial tag at the end of the last chunk, held back until the next one.
    pending: String,
}

impl ThinkSplitter {
    /// Whether `chunk` comes out unchanged as text (the common case), so the caller can use
    /// its own string instead of copying pieces; records it as seen when so.
    pub fn is_plain_text(&mut self, chunk: &str) -> bool {
        let plain =
            self.pending.is_empty() && !self.inside && (self.seen_text || !chunk.contains('<'));
        if plain && !chunk.trim().is_empty() {
            self.seen_text = true;
        }
        plain
    }

    pub fn push(&mut self, chunk: &str, emit: &mut impl FnMut(Channel, &str)) {
        if self.pending.is_empty() && !self.inside && (self.seen_text || !chunk.contains('<')) {
            self.emit_text(chunk, emit);
            return;
        }
        let joined;
        let mut input: &str = if self.pending.is_empty() {
            chunk
        } else {
            joined = std::mem::take(&mut self.pending) + chunk;
            &joined
        };
        loop {
            if !self.inside && self.seen_text {
                self.emit_text(input, emit);
                return;
            }
            let tag = if self.inside { CLOSE } else { OPEN };
            if let Some(pos) = input.find(tag) {
                let before = &input[..pos];
                if !self.inside && !before.trim().is_empty() {
                    // Visible text comes first, so this `<think>` is part of the answer.
                    self.emit_text(input, emit);
                    return;
                }
                self.emit_in_mode(before, emit);
                self.inside = !self.inside;
                input = &input[pos + tag.len()..];
                continue;
            }
            let keep = (1..tag.len())
                .rev()
                .find(|&k| input.ends_with(&tag[..k]))
                .unwrap_or(0);
            let (now, later) = input.split_at(input.len() - keep);
            self.emit_in_mode(now, emit);
            if !self.inside && self.seen_text {
                self.emit_text(later, emit);
            } else {
                self.pending.push_str(later);
            }
            return;
        }
    }

    /// The content ended: a held-back partial tag was just text after all.
    pub fn finish(&mut self, emit: &mut impl FnMut(Channel, &str)) {
        let pending = std::mem::take(&mut self.pending);
        self.emit_in_mode(&pending, emit);
    }

    fn emit_in_mode(&mut self, piece: &str, emit: &mut impl FnMut(Channel, &str)) {
        if self.inside {
            if !piece.is_empty() {
                emit(Channel::Reasoning, piece);
            }
        } else {
            self.emit_text(piece, emit);
        }
    }

    fn emit_text(&mut self, piece: &str, emit: &mut impl FnMut(Channel, &str)) {
        if piece.is_empty() {
            return;
        }
        if !piece.trim().is_empty() {
            self.seen_text = true;
        }
        emit(Channel::Text, piece);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&str]) -> (String, String) {
        let mut s = ThinkSplitter::default();
        let (mut text, mut reasoning) = (String::new(), String::new());
        let mut emit = |c: Channel, p: &str| match c {
            Channel::Text => text.push_str(p),
            Channel::Reasoning => reasoning.push_str(p),
        };
        for c in chunks {
            s.push(c, &mut emit);
        }
        s.finish(&mut emit);
        (text, reasoning)
    }

    #[test]
    fn tags_split_anywhere() {
        let whole = "<think>a < b</think>\nAnswer <think>x</think> <thi";
        let expected = split(&[whole]);
        assert_eq!(
            expected,
            (
                "\nAnswer <think>x</think> <thi".to_owned(),
                "a < b".to_owned()
            )
        );
        for i in 0..whole.len() {
            for j in i..whole.len() {
                let parts = [&whole[..i], &whole[i..j], &whole[j..]];
                assert_eq!(split(&parts), expected, "{i} {j}");
            }
        }
        assert_eq!(split(&["plain ", "text"]), ("plain text".into(), "".into()));
        assert_eq!(split(&["<thi"]), ("<thi".into(), "".into()));
    }
}
