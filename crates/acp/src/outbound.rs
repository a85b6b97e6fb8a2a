//! What the server (not the core) writes about a session, queued to the pump behind the core's
//! events.

use serde_json::Value;

pub(crate) enum Outbound {
    /// A request to the client, written only if its waiter still waits.
    Request { id: Value, line: String },
    /// The waiter of `id` gave up after the request was written: withdraw it.
    Withdraw { id: Value },
    /// A notification about the session (`elicitation/complete`).
    Notify { line: String },
    /// Nothing to write: answered once every event queued before it has been written (so a
    /// handler that writes directly, like `session/load`'s replay, comes after them).
    Barrier {
        done: tokio::sync::oneshot::Sender<()>,
    },
}
