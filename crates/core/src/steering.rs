//! Steering: messages the user sends to the turn that is already running (`_session/steering`).
//! They wait in the turn's [`Inbox`] and join the conversation at the next model request
//! boundary, after the current response's tool calls; the turn that takes them goes on, so one
//! prompt is still answered once, at the real end.
//!
//! The inbox closes when the turn stops taking messages: a message pushed after that is refused
//! (the client sends it as a prompt instead), and one pushed before is always delivered, by the
//! turn's next request or, if the turn ends another way (cancel, failure), recorded at its end
//! so the next turn's model sees it. Closing and pushing take one lock, so no message falls
//! between the two.
//!
//! Like the prompt queue, the inbox is bounded: at most [`MAX_WAITING`] messages and
//! [`MAX_WAITING_BYTES`] of them wait at once; one more is refused (the client is told, -32602)
//! until the turn takes what waits.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::content::UserContent;

/// Messages that may wait for a turn at once (as many as prompts may wait behind one).
pub const MAX_WAITING: usize = 16;
/// Bytes of messages (text, image and resource data) that may wait for a turn at once.
pub const MAX_WAITING_BYTES: usize = 1024 * 1024;

/// What became of a steering message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Steered {
    /// The running turn takes it at its next request.
    Injected,
    /// No turn is running (or it already stopped taking messages): send it as a prompt.
    NoRunningTurn,
    /// Too much already waits for the turn ([`MAX_WAITING`], [`MAX_WAITING_BYTES`]).
    Full,
}

/// The bytes a message holds, as the cap counts them.
fn size(content: &[UserContent]) -> usize {
    content
        .iter()
        .map(|c| match c {
            UserContent::Text { text } => text.len(),
            UserContent::Image { data, uri, .. } => {
                data.len() + uri.as_ref().map_or(0, String::len)
            }
            UserContent::ResourceLink {
                uri, name, text, ..
            } => uri.len() + name.len() + text.as_ref().map_or(0, String::len),
            UserContent::Resource {
                uri, text, blob, ..
            } => {
                uri.len()
                    + text.as_ref().map_or(0, String::len)
                    + blob.as_ref().map_or(0, String::len)
            }
        })
        .sum()
}

/// The messages waiting for one turn.
#[derive(Clone, Default)]
pub struct Inbox(Arc<Mutex<State>>);

#[derive(Default)]
struct State {
    closed: bool,
    waiting: Vec<Vec<UserContent>>,
}

impl Inbox {
    fn state(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a message for the turn, unless it no longer takes any or too much waits already.
    pub fn push(&self, content: Vec<UserContent>) -> Steered {
        let mut s = self.state();
        if s.closed {
            return Steered::NoRunningTurn;
        }
        let bytes = size(&content);
        let waiting: usize = s.waiting.iter().map(|m| size(m)).sum();
        if s.waiting.len() >= MAX_WAITING || waiting + bytes > MAX_WAITING_BYTES {
            return Steered::Full;
        }
        s.waiting.push(content);
        Steered::Injected
    }

    /// The messages waiting, oldest first.
    pub fn take(&self) -> Vec<Vec<UserContent>> {
        std::mem::take(&mut self.state().waiting)
    }

    /// For a turn about to end: the messages waiting, or, when there are none, the inbox closes
    /// (an empty result means the turn may end).
    pub fn take_or_close(&self) -> Vec<Vec<UserContent>> {
        let mut s = self.state();
        if s.waiting.is_empty() {
            s.closed = true;
        }
        std::mem::take(&mut s.waiting)
    }

    /// Closes the inbox and returns what was never delivered.
    pub fn close(&self) -> Vec<Vec<UserContent>> {
        let mut s = self.state();
        s.closed = true;
        std::mem::take(&mut s.waiting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> Vec<UserContent> {
        vec![UserContent::Text { text: t.into() }]
    }

    #[test]
    fn a_message_is_delivered_or_refused_never_lost() {
        let inbox = Inbox::default();
        assert_eq!(inbox.push(text("a")), Steered::Injected);
        assert_eq!(inbox.push(text("b")), Steered::Injected);
        assert_eq!(inbox.take(), vec![text("a"), text("b")]);
        assert_eq!(inbox.push(text("c")), Steered::Injected);
        // A turn about to end takes what came in and goes on.
        assert_eq!(inbox.take_or_close(), vec![text("c")]);
        assert_eq!(
            inbox.push(text("d")),
            Steered::Injected,
            "still open: the turn went on"
        );
        assert_eq!(inbox.take_or_close(), vec![text("d")]);
        // Nothing waiting: closed, and later messages are refused.
        assert!(inbox.take_or_close().is_empty());
        assert_eq!(inbox.push(text("e")), Steered::NoRunningTurn);
        let other = Inbox::default();
        assert_eq!(other.push(text("f")), Steered::Injected);
        assert_eq!(other.close(), vec![text("f")], "undelivered at the end");
        assert_eq!(other.push(text("g")), Steered::NoRunningTurn);
    }

    #[test]
    fn what_waits_is_bounded_in_count_and_bytes() {
        let inbox = Inbox::default();
        for i in 0..MAX_WAITING {
            assert_eq!(inbox.push(text(&i.to_string())), Steered::Injected);
        }
        assert_eq!(inbox.push(text("one more")), Steered::Full);
        assert_eq!(inbox.take().len(), MAX_WAITING);
        assert_eq!(inbox.push(text("room again")), Steered::Injected);
        let big = "x".repeat(MAX_WAITING_BYTES);
        assert_eq!(inbox.push(text(&big)), Steered::Full, "over the bytes");
        inbox.take();
        assert_eq!(
            inbox.push(text(&big)),
            Steered::Injected,
            "exactly the bytes"
        );
        assert_eq!(inbox.push(text("y")), Steered::Full);
    }
}
