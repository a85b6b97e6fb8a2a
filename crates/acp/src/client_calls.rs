//! Requests ferrite sends to the client (`session/request_permission`, `fs/read_text_file`) and
//! the answers coming back. Each pending request belongs to a session, so `session/cancel` can
//! answer all of that session's requests as refused at once; a request whose waiter gives up
//! (timeout, cancelled turn) is withdrawn with `$/cancel_request`. Requests are written by the
//! pump (`crate::pump`), behind every event their session produced before asking.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use agent_client_protocol::v1::schema as acp;
use ferrite_core::ids::SessionId;
use ferrite_core::permissions::{OptionKind, PermissionAnswer, PermissionRequest};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::pump::Outbound;
use crate::rpc;
use crate::server::Server;

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

#[derive(Default)]
pub(crate) struct ClientCalls {
    next: AtomicI64,
    pending: Mutex<HashMap<String, Pending>>,
}

impl ClientCalls {
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
    server: &'a Server,
    id: Option<Value>,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let removed = self.server.calls.pending().remove(&id.to_string());
        // Not written yet: the pump will skip it, and the client never hears of it.
        if removed.is_some_and(|p| p.written) {
            let _ = self.server.to_pump(Outbound::Withdraw { id });
        }
    }
}

impl Server {
    /// Sends `method` to the client on behalf of `session` and waits for the answer.
    pub(crate) async fn call_client(
        &self,
        session: &SessionId,
        method: &str,
        params: Value,
    ) -> Result<Value, CallError> {
        let n = self.calls.next.fetch_add(1, Ordering::Relaxed);
        // String ids in their own namespace, so they can never collide with the client's.
        let id = json!(format!("ferrite-{n}"));
        let (tx, rx) = oneshot::channel();
        self.calls.pending().insert(
            id.to_string(),
            Pending {
                session: session.clone(),
                tx,
                written: false,
            },
        );
        let mut guard = Withdraw {
            server: self,
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

/// The core's [`ferrite_core::permissions::Approver`], backed by `session/request_permission`.
pub(crate) struct AcpApprover {
    pub server: Weak<Server>,
}

fn option_kind(k: OptionKind) -> acp::PermissionOptionKind {
    match k {
        OptionKind::AllowOnce => acp::PermissionOptionKind::AllowOnce,
        OptionKind::AllowAlways => acp::PermissionOptionKind::AllowAlways,
        OptionKind::RejectOnce => acp::PermissionOptionKind::RejectOnce,
        OptionKind::RejectAlways => acp::PermissionOptionKind::RejectAlways,
    }
}

impl ferrite_core::permissions::Approver for AcpApprover {
    fn request(
        &self,
        session: &SessionId,
        req: PermissionRequest,
    ) -> BoxFuture<'_, PermissionAnswer> {
        let session = session.clone();
        Box::pin(async move {
            let Some(server) = self.server.upgrade() else {
                return PermissionAnswer::Cancelled;
            };
            let options = req
                .options
                .iter()
                .map(|o| {
                    acp::PermissionOption::new(o.id.clone(), o.name.clone(), option_kind(o.kind))
                })
                .collect();
            let params = acp::RequestPermissionRequest::new(
                acp::SessionId::new(session.as_str()),
                crate::mapping::tool_call_as_update(&req.call),
                options,
            );
            let Ok(params) = serde_json::to_value(params) else {
                return PermissionAnswer::Cancelled;
            };
            match server
                .call_client(&session, "session/request_permission", params)
                .await
            {
                Ok(v) => match serde_json::from_value::<acp::RequestPermissionResponse>(v) {
                    Ok(r) => match r.outcome {
                        acp::RequestPermissionOutcome::Selected(s) => {
                            PermissionAnswer::Selected(s.option_id.0.to_string())
                        }
                        _ => PermissionAnswer::Cancelled,
                    },
                    Err(e) => {
                        tracing::warn!(error = %e, "unreadable permission answer; treated as a refusal");
                        PermissionAnswer::Cancelled
                    }
                },
                Err(_) => PermissionAnswer::Cancelled,
            }
        })
    }
}

pub(crate) fn approver(server: &Arc<Server>) -> Arc<dyn ferrite_core::permissions::Approver> {
    Arc::new(AcpApprover {
        server: Arc::downgrade(server),
    })
}

/// The core's [`ferrite_core::clientfs::ClientFs`], backed by `fs/read_text_file`.
pub(crate) struct AcpClientFs {
    pub server: Weak<Server>,
}

impl ferrite_core::clientfs::ClientFs for AcpClientFs {
    fn available(&self) -> bool {
        self.server.upgrade().is_some_and(|s| s.client().fs_read)
    }

    fn read_text_file(
        &self,
        session: &SessionId,
        path: &std::path::Path,
    ) -> BoxFuture<'_, Result<String, String>> {
        let session = session.clone();
        let path = path.to_owned();
        Box::pin(async move {
            let server = self.server.upgrade().ok_or("the server is shutting down")?;
            let params = acp::ReadTextFileRequest::new(acp::SessionId::new(session.as_str()), path);
            let params = serde_json::to_value(params).map_err(|e| e.to_string())?;
            let answer = server
                .call_client(&session, "fs/read_text_file", params)
                .await;
            match answer {
                Ok(v) => serde_json::from_value::<acp::ReadTextFileResponse>(v)
                    .map(|r| r.content)
                    .map_err(|e| format!("unreadable answer: {e}")),
                Err(CallError::Rejected(e)) => Err(format!("the editor refused: {e}")),
                Err(CallError::Cancelled) => Err("cancelled".into()),
                Err(CallError::Gone) => Err("the server is shutting down".into()),
            }
        })
    }
}

pub(crate) fn client_fs(server: &Arc<Server>) -> Arc<dyn ferrite_core::clientfs::ClientFs> {
    Arc::new(AcpClientFs {
        server: Arc::downgrade(server),
    })
}
