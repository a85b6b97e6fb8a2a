//! The ACP agent: reads lines, hands requests to the dispatch table (`crate::dispatch`), and on
//! EOF closes every session. Module layering, each using only those below it:
//! `server` → `dispatch` → `methods` → `state` → {`pump`, `bridge`} → {`calls`, `prompts`,
//! `client`, `out`, `outbound`} → {`rpc`, `mapping`, `fail`, `params`, `transport`}.

use std::sync::Arc;
use std::time::Duration;

use ferrite_core::events::SessionEvent;
use ferrite_core::runtime::Runtime;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::calls::Caller;
use crate::out::Out;
use crate::pump::Pump;
use crate::rpc::{self, Message, RpcError};
use crate::state::Server;
use crate::transport::{Incoming, LineReader, MAX_LINE_BYTES, probe_id, write_lines};

pub struct ServeOptions {
    pub agent_version: String,
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
        prompts: Arc::default(),
        client: Arc::default(),
        caller: Arc::new(Caller::new(pump_tx)),
        version: options.agent_version,
    });
    install_bridges(&server);
    let stop_pump = CancellationToken::new();
    let pump = Pump {
        out: server.out.clone(),
        prompts: server.prompts.clone(),
        caller: server.caller.clone(),
        client: server.client.clone(),
        terminals: Default::default(),
    };
    let pump = tokio::spawn(crate::pump::run(pump, events, pump_rx, stop_pump.clone()));
    let mut tasks = JoinSet::new();
    read_loop(&server, input, &mut tasks).await;
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

/// For an agent that cannot start (no home directory for its files): answers every request
/// with `reason` (-32603, also in `data.details`) until `input` ends, so the editor shows why
/// instead of a process that exited without a word.
pub async fn refuse_all<R, W>(reason: &str, input: R, mut output: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    use tokio::io::AsyncWriteExt;
    let mut reader = LineReader::new(input);
    while let Some(item) = reader.next().await? {
        let id = match item {
            Incoming::Line(line) => match rpc::classify(&line) {
                Ok(Message::Request { id, .. }) => id,
                Ok(Message::Notification { .. } | Message::Response { .. }) => continue,
                Err(e) => e.id,
            },
            Incoming::TooLong { head } => probe_id(&head).unwrap_or(Value::Null),
            Incoming::InvalidUtf8 { .. } => Value::Null,
        };
        let line = rpc::error_line(&id, rpc::INTERNAL_ERROR, reason);
        output.write_all(line.as_bytes()).await?;
        output.write_all(b"\n").await?;
        output.flush().await?;
    }
    Ok(())
}

/// The core asks the client (permissions, delegated reads) through these.
fn install_bridges(server: &Server) {
    let services = server.runtime.services();
    let fs = crate::bridge::client_fs(&server.caller, &server.client);
    if services.client_fs.set(fs).is_err() {
        tracing::warn!("a client file system was already installed");
    }
    let elicitor = crate::bridge::elicitor(&server.caller, &server.client);
    if services.elicitor.set(elicitor).is_err() {
        tracing::warn!("an elicitor was already installed");
    }
    if services
        .approver
        .set(crate::bridge::approver(&server.caller))
        .is_err()
    {
        tracing::warn!("an approver was already installed");
    }
}

async fn read_loop<R>(server: &Arc<Server>, input: R, tasks: &mut JoinSet<()>)
where
    R: AsyncRead + Unpin,
{
    let mut reader = LineReader::new(input);
    loop {
        // Reap finished handler tasks so the set does not grow without bound.
        while tasks.try_join_next().is_some() {}
        let item = match reader.next().await {
            Ok(Some(item)) => item,
            Ok(None) => return,
            Err(e) => {
                tracing::error!(error = %e, "reading stdin failed; shutting down");
                return;
            }
        };
        let refusal = match item {
            Incoming::Line(line) => {
                handle_line(server, &line, tasks).await;
                continue;
            }
            Incoming::TooLong { head } => {
                tracing::warn!("refused a message longer than {MAX_LINE_BYTES} bytes");
                let id = probe_id(&head).unwrap_or(Value::Null);
                let msg = format!("Invalid request: message longer than {MAX_LINE_BYTES} bytes");
                rpc::error_line(&id, rpc::INVALID_REQUEST, &msg)
            }
            Incoming::InvalidUtf8 { .. } => rpc::error_line(
                &Value::Null,
                rpc::PARSE_ERROR,
                "Parse error: message is not valid UTF-8",
            ),
        };
        server.out.line(refusal).await;
    }
}

async fn handle_line(server: &Arc<Server>, line: &str, tasks: &mut JoinSet<()>) {
    match rpc::classify(line) {
        Err(e) => server.out.line(e.to_line()).await,
        Ok(Message::Response { id, outcome }) => server.caller.resolve(&id, outcome),
        Ok(Message::Notification { method, params }) => {
            crate::dispatch::notification(server, &method, params).await
        }
        Ok(Message::Request { id, method, params }) => {
            if method != "initialize" && !server.client.initialized() {
                let e = RpcError {
                    id,
                    code: rpc::INVALID_REQUEST,
                    message: "Invalid request: send `initialize` first".into(),
                };
                server.out.line(e.to_line()).await;
                return;
            }
            crate::dispatch::request(server, tasks, id, &method, params).await;
        }
    }
}
