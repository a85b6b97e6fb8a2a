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

use std::sync::{Arc, Mutex, MutexGuard};

use crate::content::UserContent;

/// What became of a steering message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Steered {
    /// The running turn takes it at its next request.
    Injected,
    /// No turn is running (or it already stopped taking messages): send it as a prompt.
    NoRunningTurn,
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

    /// Adds a message for the turn; false when it no longer takes any.
    pub fn push(&self, content: Vec<UserContent>) -> bool {
        let mut s = self.state();
        if s.closed {
            return false;
        }
        s.waiting.push(content);
        true
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
        assert!(inbox.push(text("a")));
        assert!(inbox.push(text("b")));
        assert_eq!(inbox.take(), vec![text("a"), text("b")]);
        assert!(inbox.push(text("c")));
        // A turn about to end takes what came in and goes on.
        assert_eq!(inbox.take_or_close(), vec![text("c")]);
        assert!(inbox.push(text("d")), "still open: the turn went on");
        assert_eq!(inbox.take_or_close(), vec![text("d")]);
        // Nothing waiting: closed, and later messages are refused.
        assert!(inbox.take_or_close().is_empty());
        assert!(!inbox.push(text("e")));
        let other = Inbox::default();
        assert!(other.push(text("f")));
        assert_eq!(other.close(), vec![text("f")], "undelivered at the end");
        assert!(!other.push(text("g")));
    }
}
