//! The core's traits for asking the client, backed by ACP requests: [`Approver`] by
//! `session/request_permission`, [`ClientFs`] by `fs/read_text_file`.
//!
//! [`Approver`]: ferrite_core::permissions::Approver
//! [`ClientFs`]: ferrite_core::clientfs::ClientFs

use std::sync::{Arc, Weak};

use agent_client_protocol_schema::v1 as acp;
use ferrite_core::permissions::{OptionKind, PermissionAnswer, PermissionRequest};
use ferrite_store::ids::SessionId;
use futures::future::BoxFuture;

use crate::calls::{CallError, Caller};
use crate::client::Client;

/// The core's [`ferrite_core::permissions::Approver`], backed by `session/request_permission`.
pub(crate) struct AcpApprover {
    pub caller: Weak<Caller>,
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
            let Some(caller) = self.caller.upgrade() else {
                return PermissionAnswer::Cancelled;
            };
            let options = req
                .options
                .iter()
                .map(|o| {
                    // The name quotes what an "always" covers (a command's words): shown
                    // like the call itself (`mapping`).
                    let name = ferrite_core::display::visible(&o.name).into_owned();
                    acp::PermissionOption::new(o.id.clone(), name, option_kind(o.kind))
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
            match caller
                .call(&session, "session/request_permission", params)
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
                        PermissionAnswer::Unanswered("its answer could not be read".to_owned())
                    }
                },
                // Only the `cancelled` outcome cancels the turn: a client that cannot ask
                // (`method_not_found`) or fails refuses this one call.
                Err(CallError::Rejected(error)) => {
                    let code = error.get("code").and_then(serde_json::Value::as_i64);
                    PermissionAnswer::Unanswered(match code {
                        Some(-32601) => "it does not support permission requests".to_owned(),
                        Some(code) => format!("it answered with error {code}"),
                        None => "it answered with an error".to_owned(),
                    })
                }
                Err(CallError::Cancelled | CallError::Gone) => PermissionAnswer::Cancelled,
            }
        })
    }
}

pub(crate) fn approver(caller: &Arc<Caller>) -> Arc<dyn ferrite_core::permissions::Approver> {
    Arc::new(AcpApprover {
        caller: Arc::downgrade(caller),
    })
}

/// The core's [`ferrite_core::clientfs::ClientFs`], backed by `fs/read_text_file`.
pub(crate) struct AcpClientFs {
    pub caller: Weak<Caller>,
    pub client: Arc<Client>,
}

impl ferrite_core::clientfs::ClientFs for AcpClientFs {
    fn available(&self) -> bool {
        self.caller.strong_count() > 0 && self.client.fs_read()
    }

    fn read_text_file(
        &self,
        session: &SessionId,
        path: &std::path::Path,
    ) -> BoxFuture<'_, Result<String, String>> {
        let session = session.clone();
        let path = path.to_owned();
        Box::pin(async move {
            let caller = self.caller.upgrade().ok_or("the server is shutting down")?;
            let params = acp::ReadTextFileRequest::new(acp::SessionId::new(session.as_str()), path);
            let params = serde_json::to_value(params).map_err(|e| e.to_string())?;
            let answer = caller.call(&session, "fs/read_text_file", params).await;
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

    fn writes(&self) -> bool {
        self.caller.strong_count() > 0 && self.client.fs_write()
    }

    fn write_text_file(
        &self,
        session: &SessionId,
        path: &std::path::Path,
        content: String,
    ) -> BoxFuture<'_, Result<(), String>> {
        let session = session.clone();
        let path = path.to_owned();
        Box::pin(async move {
            let caller = self.caller.upgrade().ok_or("the server is shutting down")?;
            let params = acp::WriteTextFileRequest::new(
                acp::SessionId::new(session.as_str()),
                path,
                content,
            );
            let params = serde_json::to_value(params).map_err(|e| e.to_string())?;
            match caller.call(&session, "fs/write_text_file", params).await {
                Ok(_) => Ok(()),
                Err(CallError::Rejected(e)) => Err(format!("it refused ({e})")),
                Err(CallError::Cancelled) => Err("cancelled".into()),
                Err(CallError::Gone) => Err("the server is shutting down".into()),
            }
        })
    }
}

pub(crate) fn client_fs(
    caller: &Arc<Caller>,
    client: &Arc<Client>,
) -> Arc<dyn ferrite_core::clientfs::ClientFs> {
    Arc::new(AcpClientFs {
        caller: Arc::downgrade(caller),
        client: client.clone(),
    })
}

/// The core's [`ferrite_core::elicit::Elicitor`], backed by `elicitation/create` in form mode:
/// the question is one field, `answer` (free text, one of the options, or several).
pub(crate) struct AcpElicitor {
    pub caller: Weak<Caller>,
    pub client: Arc<Client>,
}

/// The form of a question: ACP's restricted JSON Schema of one property.
fn form_schema(field: &ferrite_core::elicit::Field) -> serde_json::Value {
    use ferrite_core::elicit::Field;
    let answer = match field {
        Field::Text => serde_json::json!({"type": "string", "title": "Answer"}),
        Field::Choice(options) => {
            serde_json::json!({"type": "string", "title": "Answer", "enum": options})
        }
        Field::Choices(options) => serde_json::json!({
            "type": "array",
            "title": "Answers",
            "items": {"type": "string", "enum": options},
        }),
    };
    serde_json::json!({
        "type": "object",
        "properties": {"answer": answer},
        "required": ["answer"],
    })
}

/// The answer's values: a string, or the strings of an array (anything else is its JSON).
fn answer_values(content: Option<&serde_json::Value>) -> Vec<String> {
    match content.and_then(|c| c.get("answer")) {
        None | Some(serde_json::Value::Null) => vec![],
        Some(serde_json::Value::String(s)) => vec![s.clone()],
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .collect(),
        Some(other) => vec![other.to_string()],
    }
}

impl ferrite_core::elicit::Elicitor for AcpElicitor {
    fn available(&self) -> bool {
        self.caller.strong_count() > 0 && self.client.elicitation_form()
    }

    fn opens_pages(&self) -> bool {
        self.caller.strong_count() > 0 && self.client.elicitation_url()
    }

    /// `elicitation/create` in URL mode; the answer says whether the user went, and
    /// [`Self::page_done`] sends `elicitation/complete` once the page's work is done.
    fn open_page(
        &self,
        session: &SessionId,
        page: ferrite_core::elicit::Page,
    ) -> BoxFuture<'_, Result<ferrite_core::elicit::Reply, String>> {
        let session = session.clone();
        Box::pin(async move {
            let caller = self.caller.upgrade().ok_or("the server is shutting down")?;
            let params = serde_json::json!({
                "sessionId": session.as_str(),
                "mode": "url",
                "elicitationId": page.id,
                "url": page.url,
                "message": ferrite_core::display::visible(&page.message),
            });
            reply_of(caller.call(&session, "elicitation/create", params).await)
        })
    }

    fn page_done(&self, id: &str) {
        if let Some(caller) = self.caller.upgrade() {
            let line = crate::rpc::notification_line(
                "elicitation/complete",
                serde_json::json!({ "elicitationId": id }),
            );
            caller.to_pump(crate::outbound::Outbound::Notify { line });
        }
    }

    fn ask(
        &self,
        session: &SessionId,
        question: ferrite_core::elicit::Question,
    ) -> BoxFuture<'_, Result<ferrite_core::elicit::Reply, String>> {
        let session = session.clone();
        Box::pin(async move {
            let caller = self.caller.upgrade().ok_or("the server is shutting down")?;
            let mut params = serde_json::json!({
                "sessionId": session.as_str(),
                "mode": "form",
                "message": ferrite_core::display::visible(&question.message),
                "requestedSchema": form_schema(&question.field),
            });
            if let Some(call) = &question.tool_call {
                params["toolCallId"] = serde_json::Value::String(call.clone());
            }
            reply_of(caller.call(&session, "elicitation/create", params).await)
        })
    }
}

/// What the editor's answer to `elicitation/create` says: accepted (with the form's values, if
/// any), declined, cancelled; or why there is no answer.
fn reply_of(
    answer: Result<serde_json::Value, CallError>,
) -> Result<ferrite_core::elicit::Reply, String> {
    use ferrite_core::elicit::Reply;
    match answer {
        Ok(v) => match v.get("action").and_then(serde_json::Value::as_str) {
            Some("accept") => Ok(Reply::Answered(answer_values(v.get("content")))),
            Some("decline") => Ok(Reply::Declined),
            Some("cancel") => Ok(Reply::Cancelled),
            _ => Err("the editor's answer could not be read".to_owned()),
        },
        Err(CallError::Rejected(e)) => Err(format!("the editor refused: {e}")),
        Err(CallError::Cancelled) => Ok(Reply::Cancelled),
        Err(CallError::Gone) => Err("the server is shutting down".into()),
    }
}

pub(crate) fn elicitor(
    caller: &Arc<Caller>,
    client: &Arc<Client>,
) -> Arc<dyn ferrite_core::elicit::Elicitor> {
    Arc::new(AcpElicitor {
        caller: Arc::downgrade(caller),
        client: client.clone(),
    })
}
