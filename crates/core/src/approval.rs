//! Asking the user about a tool call: the request, the answer and the [`Approver`] port the ACP
//! client implements. The decision of what needs asking is `ferrite_policy::permissions`'s; this
//! part carries the call as the editor sees it ([`ToolCallView`]), which the policy must not know.

use futures::future::BoxFuture;

use crate::content::ToolCallView;
use crate::ids::SessionId;
use crate::permissions::PermissionOption;

/// A question for the user about one tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionRequest {
    pub call: ToolCallView,
    pub options: Vec<PermissionOption>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionAnswer {
    Selected(String),
    /// The client cancelled, the turn was cancelled, or nobody answered in time.
    Cancelled,
    /// The client could not ask (it answered with an error, e.g. `method_not_found` from a
    /// client without permission support, or with something unreadable): the call is refused
    /// once and the turn goes on. The text says what the client answered.
    Unanswered(String),
}

/// Asks the user (the ACP client's `session/request_permission`).
pub trait Approver: Send + Sync {
    fn request(
        &self,
        session: &SessionId,
        req: PermissionRequest,
    ) -> BoxFuture<'_, PermissionAnswer>;
}
