//! Asking the user a question in the editor (ACP `elicitation/create`, form mode): the boundary
//! the `ask_user` tool goes through. The ACP crate implements [`Elicitor`] for clients that
//! advertise form elicitation; where none is installed, or the client cannot show forms, the
//! tool is not offered.

use futures::future::BoxFuture;

use crate::ids::SessionId;

/// What the user is asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field {
    /// Free text.
    Text,
    /// One of these.
    Choice(Vec<String>),
    /// Any of these.
    Choices(Vec<String>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    pub message: String,
    pub field: Field,
    /// The tool call that asks (the editor shows the form with its card).
    pub tool_call: Option<String>,
}

/// What the user did with the question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// The answer: the text, or the options picked.
    Answered(Vec<String>),
    Declined,
    /// The user dismissed the form.
    Cancelled,
}

pub trait Elicitor: Send + Sync {
    /// Whether the client can show a form now.
    fn available(&self) -> bool;

    /// Puts `question` to the user; `Err` says why the editor could not.
    fn ask(&self, session: &SessionId, question: Question) -> BoxFuture<'_, Result<Reply, String>>;
}
