//! Requests ferrite sends to the client (`session/request_permission`, `fs/read_text_file`) and
//! the answers coming back. Each pending request belongs to a session, so `session/cancel` can
//! answer all of that session's requests as refused at once; a request whose waiter gives up
//! (timeout, cancelled turn) is withdrawn with `$/cancel_request`. Requests are written by the
//! pump (`crate::pump`), behind every event their session produced before asking: they are
//! queued to it as [`Outbound`] items.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

use ferrite_store::ids::SessionId;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::outbound::Outbound;
use crate::rpc;

/// Why a client call produced no result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CallError {
    /// The session's turn was cancelled (or the session closed) while waiting.
    Cancelled,
    /// The client answered with a JSON-RPC error.
    Rejected(Value),
    /// The server is shutting down.
    Gone,
}

struct Pending {
    session: SessionId,
    tx: oneshot::Sender<Result<Value, CallError>>,
    /// The pump wrote the request: withdrawing it must tell the client.
    written: bool,
}

/// The requests to the client that wait for an answer, and the queue they are written from.
pub(crate) struct Caller {
    next: AtomicI64,
    pending: Mutex<HashMap<String, Pending>>,
    pump: mpsc::UnboundedSender<Outbound>,
}

impl Caller {
    /// Pending requests are written through `pump` (unbounded: it holds at most one item per
    /// pending request).
    pub fn new(pump: mpsc::UnboundedSender<Outbound>) -> Self {
        Self {
            next: AtomicI64::new(0),
            pending: Mutex::default(),
            pump,
        }
    }

    /// Queues `item` behind the events already on their way to the client. False once the
    /// pump has stopped (shutdown): nothing more is written then.
    pub fn to_pump(&self, item: Outbound) -> bool {
        self.pump.send(item).is_ok()
    }

    /// Returns once every event the core queued before this call has been written.
    pub async fn after_queued_events(&self) {
        let (done, written) = tokio::sync::oneshot::channel();
        if self.to_pump(Outbound::Barrier { done }) {
            let _ = written.await;
        }
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<String, Pending>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers `id` as waiting, as `call_client` does (for tests of the pump).
    #[cfg(test)]
    pub fn test_insert_pending(&self, id: &Value) {
        let (tx, _rx) = oneshot::channel();
        let session = SessionId::parse("s").unwrap_or_else(|_| unreachable!());
        self.pending().insert(
            id.to_string(),
            Pending {
                session,
                tx,
                written: false,
            },
        );
    }

    /// Marks request `id` as written, if it still waits for an answer (else it must not be).
    pub fn mark_written(&self, id: &Value) -> bool {
        match self.pending().get_mut(&id.to_string()) {
            Some(p) => {
                p.written = true;
                true
            }
            None => false,
        }
    }

    /// Routes a client's answer to its waiter. Unknown ids (already withdrawn) are ignored.
    pub fn resolve(&self, id: &Value, outcome: Result<Value, Value>) {
        if let Some(p) = self.pending().remove(&id.to_string()) {
            let _ = p.tx.send(outcome.map_err(CallError::Rejected));
        }
    }

    /// Answers every pending request of `session` as cancelled (`docs/acp.md`: before the turn
    /// is stopped).
    pub fn cancel_session(&self, session: &SessionId) {
        let mut pending = self.pending();
        let ids: Vec<String> = pending
            .iter()
            .filter(|(_, p)| p.session == *session)
            .map(|(id, _)| id.clone())
            .collect();
        for id in ids {
            if let Some(p) = pending.remove(&id) {
                let _ = p.tx.send(Err(CallError::Cancelled));
            }
        }
    }
}

/// Removes a pending request whose waiter went away, and tells the client.
struct Withdraw<'a> {
    caller: &'a Caller,
    id: Option<Value>,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let removed = self.caller.pending().remove(&id.to_string());
        // Not written yet: the pump will skip it, and the client never hears of it.
        if removed.is_some_and(|p| p.written) {
            let _ = self.caller.to_pump(Outbound::Withdraw { id });
        }
    }
}

impl Caller {
    /// Sends `method` to the client on behalf of `session` and waits for the answer.
    pub(crate) async fn call(
        &self,
        session: &SessionId,
        method: &str,
        params: Value,
    ) -> Result<Value, CallError> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        // String ids in their own namespace, so they can never collide with the client's.
        let id = json!(format!("ferrite-{n}"));
        let (tx, rx) = oneshot::channel();
        self.pending().insert(
            id.to_string(),
            Pending {
                session: session.clone(),
                tx,
                written: false,
            },
        );
        let mut guard = Withdraw {
            caller: self,
            id: Some(id.clone()),
        };
        let queued = self.to_pump(Outbound::Request {
            id: id.clone(),
            line: rpc::request_line(&id, method, params),
        });
        if !queued {
            return Err(CallError::Gone);
        }
        let result = rx.await.unwrap_or(Err(CallError::Gone));
        guard.id = None;
        result
    }
}
