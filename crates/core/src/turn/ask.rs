//! Putting one question to the user through the editor, bounded by a timeout and the turn's
//! cancel: the permission policy's questions and the workspace-trust question alike.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::ids::SessionId;
use crate::permissions::{Approver, OptionKind, PermissionAnswer, PermissionRequest};

/// What came of asking the user.
pub(super) enum Asked {
    /// The kind of the option picked; `None` when the client answered with an option that was
    /// not offered.
    Picked(Option<OptionKind>),
    TimedOut,
    /// The client could not put the question ([`PermissionAnswer::Unanswered`]).
    Unanswered(String),
    /// The turn was cancelled while (or just as) the user was being asked, or the editor
    /// answered "cancelled".
    Cancelled,
}

/// Puts `req` to the user, bounded by `timeout` (`permissions.timeout_secs`) and the turn's
/// cancel.
pub(super) async fn ask_user(
    session: &SessionId,
    timeout: Duration,
    approver: &dyn Approver,
    req: PermissionRequest,
    cancel: &CancellationToken,
) -> Asked {
    let options = req.options.clone();
    let answer = tokio::select! {
        biased;
        () = cancel.cancelled() => return Asked::Cancelled,
        a = tokio::time::timeout(timeout, approver.request(session, req)) => a,
    };
    if cancel.is_cancelled() {
        return Asked::Cancelled;
    }
    match answer {
        Err(_) => Asked::TimedOut,
        Ok(PermissionAnswer::Selected(id)) => {
            Asked::Picked(options.iter().find(|o| o.id == id).map(|o| o.kind))
        }
        // ACP: an editor answers "cancelled" only when the user cancelled the turn, possibly
        // before its `session/cancel` arrives. Taken as the cancel, so the turn does not go on
        // to ask about its next call.
        Ok(PermissionAnswer::Cancelled) => Asked::Cancelled,
        Ok(PermissionAnswer::Unanswered(why)) => Asked::Unanswered(why),
    }
}
