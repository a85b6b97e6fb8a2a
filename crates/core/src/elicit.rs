//! Asking the user a question in the editor (ACP `elicitation/create`, form mode): the boundary
//! the `ask_user` tool goes through. The ACP crate implements [`Elicitor`] for clients that
//! advertise form elicitation; where none is installed, or the client cannot show forms, the
//! tool is not offered.
//!
//! URL mode sends the user to a page instead (an MCP server's OAuth sign-in): the ACP crate for
//! clients that advertise `elicitation.url`, `ferrite run` by printing the link on stderr.

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

/// A page the user is sent to (URL mode).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// Names this elicitation until [`Elicitor::page_done`].
    pub id: String,
    /// Why the user should open it.
    pub message: String,
    pub url: String,
}

pub trait Elicitor: Send + Sync {
    /// Whether the client can show a form now.
    fn available(&self) -> bool;

    /// Puts `question` to the user; `Err` says why the editor could not.
    fn ask(&self, session: &SessionId, question: Question) -> BoxFuture<'_, Result<Reply, String>>;

    /// Whether the user can be sent to a page now (URL mode).
    fn opens_pages(&self) -> bool {
        false
    }

    /// Sends the user to `page`: `Answered` (with no values) once they agreed to go, which is
    /// not yet that the page's work is done. `Err` says why the link could not be shown.
    fn open_page(&self, _session: &SessionId, _page: Page) -> BoxFuture<'_, Result<Reply, String>> {
        Box::pin(async { Err("this client cannot open links".to_owned()) })
    }

    /// The work of the page `id` is over (signed in, or given up on): the client may close it.
    fn page_done(&self, _id: &str) {}
}
