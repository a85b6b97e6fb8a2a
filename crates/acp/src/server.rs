//! The ACP agent: reads requests, dispatches them, writes answers. Handlers never run a turn or
//! wait on a session inline: what touches a session is queued to its task in arrival order and
//! the answer is awaited in a spawned task, so one slow or stuck session cannot block the server,
//! `session/cancel`, or any other session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agent_client_protocol::v1::schema as acp;
use ferrite_core::events::{Refusal, SessionEvent, SettingChange, TurnOptions};
use ferrite_core::ids::{SessionId, TurnId};
use ferrite_core::runtime::{Runtime, RuntimeError};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::mapping;
use crate::rpc::{self, Message, RpcError};
use crate::transport::{Incoming, LineReader, probe_id, write_lines};

/// How long a session task has to accept a prompt before the prompt is answered as failed.
pub const PROMPT_ACK_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a session task has to answer a settings change.
pub const SESSION_REPLY_TIMEOUT: Duration = Duration::from_secs(10);
/// Sessions listed per `session/list` page.
pub const LIST_PAGE_SIZE: usize = 50;

pub struct ServeOptions {
    pub agent_version: String,
}

/// An error answer: JSON-RPC code and message.
pub(crate) struct Fail {
    pub code: i64,
    pub message: String,
    /// The error's `data`, when there is more than the message to say.
    pub data: Option<Value>,
}

impl Fail {
    /// -32000: the user must set up a provider; `data` says what would do (`docs/acp.md`).
    pub fn auth_required(need: &ferrite_core::catalog::AuthNeeded) -> Self {
        Self {
            code: rpc::AUTH_REQUIRED,
            message: format!("Authentication required: {}", need.message),
            data: serde_json::to_value(need).ok(),
        }
    }

    pub fn params(message: impl Into<String>) -> Self {
        Self {
            code: rpc::INVALID_PARAMS,
            message: message.into(),
            data: None,
        }
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self {
            code: rpc::INTERNAL_ERROR,
            message: message.into(),
            data: None,
        }
    }
}

impl From<RuntimeError> for Fail {
    fn from(e: RuntimeError) -> Self {
        match e {
            RuntimeError::Invalid(m) => Fail::params(m),
            RuntimeError::UnknownSession => Fail::params("unknown session"),
            RuntimeError::AuthRequired(need) => Fail::auth_required(&need),
            RuntimeError::Refused(r) => Fail::from(r),
            RuntimeError::Config(c) => Fail::internal(c.to_string()),
            RuntimeError::Store(ferrite_core::log::StoreError::Locked) => {
                Fail::params("the session is open in another ferrite process")
            }
            RuntimeError::Store(s) => Fail::internal(s.to_string()),
        }
    }
}

impl From<Refusal> for Fail {
    fn from(r: Refusal) -> Self {
        Fail::params(r.to_string())
    }
}

type Reply = Result<Value, Fail>;

/// The queue to the single stdout writer.
#[derive(Clone)]
pub(crate) struct Out(pub(crate) mpsc::Sender<String>);

impl Out {
    pub async fn line(&self, line: String) {
        if line.is_empty() {
            return;
        }
        // Fails only when stdout is gone; then there is no one to tell.
        let _ = self.0.send(line).await;
    }

    pub async fn reply(&self, id: &Value, reply: Reply) {
        let line = match reply {
            Ok(v) => rpc::result_line(id, v),
            Err(Fail {
                code,
                message,
                data: Some(data),
            }) => rpc::error_line_with_data(id, code, &message, data),
            Err(f) => rpc::error_line(id, f.code, &f.message),
        };
        self.line(line).await;
    }

    pub async fn update(&self, session: &SessionId, update: acp::SessionUpdate) {
        self.line(mapping::update_line(session, update)).await;
    }
}

/// A prompt waiting for its turn to end.
pub(crate) struct PendingPrompt {
    pub request_id: Value,
    pub turn: Option<TurnId>,
    pub done: CancellationToken,
}

#[derive(Default)]
pub(crate) struct ClientInfo {
    pub initialized: bool,
    pub notices: bool,
    /// The client advertised `fs.readTextFile`.
    pub fs_read: bool,
}

pub(crate) struct Server {
    pub runtime: Arc<Runtime>,
    pub out: Out,
    pub prompts: Mutex<HashMap<SessionId, PendingPrompt>>,
    pub client: Mutex<ClientInfo>,
    pub version: String,
    pub calls: crate::client_calls::ClientCalls,
    /// What the server says about a session besides core events: written by the pump, in order
    /// with them. Unbounded: it holds at most one item per pending client request or prompt.
    pub pump: mpsc::UnboundedSender<crate::pump::Outbound>,
}

impl Server {
    pub fn prompts(&self) -> MutexGuard<'_, HashMap<SessionId, PendingPrompt>> {
        self.prompts.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn client(&self) -> MutexGuard<'_, ClientInfo> {
        self.client.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `item` behind the events already on their way to the client. False once the
    /// pump has stopped (shutdown): nothing more is written then.
    pub fn to_pump(&self, item: crate::pump::Outbound) -> bool {
        self.pump.send(item).is_ok()
    }

    /// Answers a prompt whose session cannot (a dead or stuck session task), if it still waits.
    pub fn fail_prompt(
        &self,
        session: &SessionId,
        request_id: &Value,
        kind: &'static str,
        message: &'static str,
    ) {
        let _ = self.to_pump(crate::pump::Outbound::FailPrompt {
            session: session.clone(),
            request_id: request_id.clone(),
            kind,
            message,
        });
    }
}

/// Serves ACP on `input`/`output` until `input` ends. On EOF every session is closed (turns
/// cancelled, logs flushed, child tasks ended) before this returns.
pub async fn serve<R, W>(
    runtime: Runtime,
    events: mpsc::Receiver<SessionEvent>,
    input: R,
    output: W,
    options: ServeOptions,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out_tx, out_rx) = mpsc::channel(1024);
    let writer = tokio::spawn(write_lines(output, out_rx));
    let (pump_tx, pump_rx) = mpsc::unbounded_channel();
    let server = Arc::new(Server {
        runtime: Arc::new(runtime),
        out: Out(out_tx),
        prompts: Mutex::new(HashMap::new()),
        client: Mutex::new(ClientInfo::default()),
        version: options.agent_version,
        calls: Default::default(),
        pump: pump_tx,
    });
    let services = server.runtime.services();
    if services
        .client_fs
        .set(crate::client_calls::client_fs(&server))
        .is_err()
    {
        tracing::warn!("a client file system was already installed");
    }
    if server
        .runtime
        .services()
        .approver
        .set(crate::client_calls::approver(&server))
        .is_err()
    {
        tracing::warn!("an approver was already installed");
    }
    let stop_pump = CancellationToken::new();
    let pump = tokio::spawn(crate::pump::run(
        server.clone(),
        events,
        pump_rx,
        stop_pump.clone(),
    ));
    let mut tasks = JoinSet::new();
    let mut reader = LineReader::new(input);
    loop {
        // Reap finished handler tasks so the set does not grow without bound.
        while tasks.try_join_next().is_some() {}
        let item = match reader.next().await {
            Ok(Some(item)) => item,
            Ok(None) => break,
            Err(e) => {
                tracing::error!(error = %e, "reading stdin failed; shutting down");
                break;
            }
        };
        match item {
            Incoming::Line(line) => handle_line(&server, &line, &mut tasks).await,
            Incoming::TooLong { head } => {
                let id = probe_id(&head).unwrap_or(Value::Null);
                tracing::warn!(
                    "refused a message longer than {} bytes",
                    crate::transport::MAX_LINE_BYTES
                );
                let msg = format!(
                    "Invalid request: message longer than {} bytes",
                    crate::transport::MAX_LINE_BYTES
                );
                server
                    .out
                    .line(rpc::error_line(&id, rpc::INVALID_REQUEST, &msg))
                    .await;
            }
            Incoming::InvalidUtf8 { .. } => {
                server
                    .out
                    .line(rpc::error_line(
                        &Value::Null,
                        rpc::PARSE_ERROR,
                        "Parse error: message is not valid UTF-8",
                    ))
                    .await;
            }
        }
    }
    tracing::debug!("stdin closed; shutting down");
    server.runtime.shutdown().await;
    tasks.abort_all();
    stop_pump.cancel();
    let _ = pump.await;
    drop(server);
    match tokio::time::timeout(Duration::from_secs(2), writer).await {
        Ok(Ok(result)) => result,
        Ok(Err(e)) => Err(std::io::Error::other(e)),
        Err(_) => Err(std::io::Error::other("stdout did not drain in time")),
    }
}

async fn handle_line(server: &Arc<Server>, line: &str, tasks: &mut JoinSet<()>) {
    match rpc::classify(line) {
        Err(e) => server.out.line(e.to_line()).await,
        Ok(Message::Response { id, outcome }) => server.calls.resolve(&id, outcome),
        Ok(Message::Notification { method, params }) => {
            handle_notification(server, &method, params)
        }
        Ok(Message::Request { id, method, params }) => {
            if method != "initialize" && !server.client().initialized {
                let e = RpcError {
                    id,
                    code: rpc::INVALID_REQUEST,
                    message: "Invalid request: send `initialize` first".into(),
                };
                server.out.line(e.to_line()).await;
                return;
            }
            dispatch(server, id, &method, params, tasks).await;
        }
    }
}

fn handle_notification(server: &Arc<Server>, method: &str, params: Value) {
    match method {
        "session/cancel" => {
            let Ok(req) = serde_json::from_value::<acp::CancelNotification>(params) else {
                return;
            };
            let Ok(id) = SessionId::parse(&req.session_id.0) else {
                return;
            };
            // Pending questions to the client are answered as refused first, then the turn stops.
            server.calls.cancel_session(&id);
            if let Some(h) = server.runtime.get(&id) {
                h.cancel();
            }
        }
        m if m.starts_with('_') => {}
        other => tracing::debug!(method = other, "ignored unknown notification"),
    }
}

/// Runs `fut` as its own task and answers `id` with its result.
fn spawn_reply<F>(server: &Arc<Server>, tasks: &mut JoinSet<()>, id: Value, fut: F)
where
    F: std::future::Future<Output = Reply> + Send + 'static,
{
    let out = server.out.clone();
    tasks.spawn(async move {
        let reply = fut.await;
        out.reply(&id, reply).await;
    });
}

async fn dispatch(
    server: &Arc<Server>,
    id: Value,
    method: &str,
    params: Value,
    tasks: &mut JoinSet<()>,
) {
    let s = server.clone();
    match method {
        "initialize" => {
            let reply = crate::handlers::initialize(&s, params);
            s.out.reply(&id, reply).await;
        }
        "authenticate" => {
            let reply = crate::handlers::authenticate(&s, params);
            s.out.reply(&id, reply).await;
        }
        "logout" => {
            let reply = crate::handlers::logout(&s, params);
            s.out.reply(&id, reply).await;
        }
        // Listing reads the header of every log (thousands of files): off the dispatch loop, so
        // a `session/cancel` behind it is not kept waiting.
        "session/list" => spawn_reply(server, tasks, id, async move {
            tokio::task::spawn_blocking(move || crate::handlers::list(&s, params))
                .await
                .unwrap_or_else(|e| Err(Fail::internal(format!("listing sessions failed: {e}"))))
        }),
        "session/new" => {
            tasks.spawn(crate::handlers::new_session(s, id, params));
        }
        "session/load" => {
            tasks.spawn(crate::handlers::open_session(s, id, params, true));
        }
        "session/resume" => {
            tasks.spawn(crate::handlers::open_session(s, id, params, false));
        }
        "session/close" => spawn_reply(server, tasks, id, crate::handlers::close(s, params)),
        "session/delete" => spawn_reply(server, tasks, id, crate::handlers::delete(s, params)),
        "_ferrite/session/fork" => spawn_reply(server, tasks, id, crate::handlers::fork(s, params)),
        "session/prompt" => crate::handlers::prompt(&s, id, params, tasks).await,
        "session/set_mode" => crate::handlers::set_mode(&s, id, params, tasks).await,
        "session/set_config_option" => {
            crate::handlers::set_config_option(&s, id, params, tasks).await
        }
        "session/set_model" => crate::handlers::set_model(&s, id, params, tasks).await,
        other => {
            let e = RpcError {
                id,
                code: rpc::METHOD_NOT_FOUND,
                message: format!("Method not found: {}", printable(other)),
            };
            s.out.line(e.to_line()).await;
        }
    }
}

/// A method name safe to echo: short and printable.
fn printable(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).take(64).collect()
}

/// Deserializes params, answering -32602 with a message that does not quote the input.
pub(crate) fn parse<T: DeserializeOwned>(params: Value) -> Result<T, Fail> {
    serde_json::from_value(params)
        .map_err(|e| Fail::params(format!("Invalid params: {}", scrub(&e.to_string()))))
}

/// Removes quoted values from a serde message so client input is never echoed back.
fn scrub(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut quote: Option<char> = None;
    for c in msg.chars() {
        match quote {
            Some(q) if c == q => {
                out.push('…');
                out.push(c);
                quote = None;
            }
            Some(_) => {}
            None if c == '`' || c == '"' => {
                out.push(c);
                quote = Some(c);
            }
            None => out.push(c),
        }
    }
    out
}

/// A client-supplied session id, checked before anything else touches it.
pub(crate) fn session_id(raw: &acp::SessionId) -> Result<SessionId, Fail> {
    SessionId::parse(&raw.0).map_err(|e| Fail::params(e.to_string()))
}

/// Per-turn knobs from `session/prompt` `_meta` (`docs/acp.md`).
pub(crate) fn turn_options(
    meta: Option<&serde_json::Map<String, Value>>,
) -> Result<TurnOptions, Fail> {
    let mut o = TurnOptions::default();
    let Some(meta) = meta else { return Ok(o) };
    if let Some(v) = meta.get("model") {
        o.model = Some(
            v.as_str()
                .ok_or_else(|| Fail::params("`_meta.model` must be a string"))?
                .to_owned(),
        );
    }
    if let Some(v) = meta.get("reasoning_effort") {
        let s = v
            .as_str()
            .ok_or_else(|| Fail::params("`_meta.reasoning_effort` must be a string"))?;
        o.effort = Some(
            s.parse()
                .map_err(|e: ferrite_core::modes::UnknownName| Fail::params(e.to_string()))?,
        );
    }
    if let Some(v) = meta.get("web_search") {
        o.web_search = Some(
            v.as_bool()
                .ok_or_else(|| Fail::params("`_meta.web_search` must be true or false"))?,
        );
    }
    if let Some(v) = meta.get("permission_mode") {
        match v.as_str() {
            Some("ask") => o.force_ask = true,
            _ => return Err(Fail::params("`_meta.permission_mode` accepts only \"ask\"")),
        }
    }
    Ok(o)
}

/// A change queued to a session, answered from a task when the session replies.
pub(crate) async fn queue_change(
    server: &Arc<Server>,
    tasks: &mut JoinSet<()>,
    id: Value,
    session: SessionId,
    change: SettingChange,
    answer: crate::handlers::ChangeAnswer,
) {
    let Some(handle) = server.runtime.get(&session) else {
        server
            .out
            .reply(&id, Err(Fail::params("unknown session")))
            .await;
        return;
    };
    let rx = match handle.submit_change(change.clone()) {
        Ok(rx) => rx,
        Err(r) => {
            server.out.reply(&id, Err(r.into())).await;
            return;
        }
    };
    let s = server.clone();
    tasks.spawn(async move {
        let result = match tokio::time::timeout(SESSION_REPLY_TIMEOUT, rx).await {
            Ok(Ok(r)) => r.map_err(Fail::from),
            Ok(Err(_)) => Err(Fail::internal("the session stopped")),
            Err(_) => Err(Fail::internal("the session did not answer in time")),
        };
        match result {
            Err(f) => s.out.reply(&id, Err(f)).await,
            Ok(settings) => {
                let body = match answer {
                    crate::handlers::ChangeAnswer::Empty => json!({}),
                    crate::handlers::ChangeAnswer::ConfigOptions => {
                        serde_json::to_value(acp::SetSessionConfigOptionResponse::new(
                            mapping::config_options(&settings),
                        ))
                        .unwrap_or_else(|_| json!({}))
                    }
                };
                s.out.reply(&id, Ok(body)).await;
                if let SettingChange::Mode(m) = change {
                    s.out
                        .update(
                            &session,
                            acp::SessionUpdate::CurrentModeUpdate(acp::CurrentModeUpdate::new(
                                m.id(),
                            )),
                        )
                        .await;
                }
                s.out
                    .update(
                        &session,
                        acp::SessionUpdate::ConfigOptionUpdate(acp::ConfigOptionUpdate::new(
                            mapping::config_options(&settings),
                        )),
                    )
                    .await;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_hides_quoted_input() {
        assert_eq!(
            scrub("invalid type: string \"../../etc\", expected u64"),
            "invalid type: string \"…\", expected u64"
        );
        assert_eq!(
            scrub("unknown variant `evil`, expected one of `a`"),
            "unknown variant `…`, expected one of `…`"
        );
    }
}
