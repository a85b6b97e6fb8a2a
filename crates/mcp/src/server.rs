//! One connected MCP server: its client, its tools, its process group, and whether it is alive.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ferrite_core::mcp::{McpServerSpec, McpTransport, NoticeSink};
#[cfg(windows)]
use process_wrap::tokio::JobObject;
#[cfg(unix)]
use process_wrap::tokio::ProcessGroup;
use process_wrap::tokio::{CommandWrap, KillOnDrop};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
    GetPromptRequestParams, GetPromptResult, Implementation, ReadResourceRequestParams,
    ReadResourceResult,
};
use rmcp::service::{Peer, RoleClient, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::watch;

use crate::listing::{self, Listing};
use crate::oauth::OAuthConfig;

/// How long a closing server gets to exit on its own before its process group is killed:
/// rmcp's stdio shutdown waits up to 3 s after closing stdin, then up to 3 s after SIGTERM.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(6);
/// Lines of a server's stderr kept to explain why it failed.
const STDERR_TAIL_LINES: usize = 5;
/// How long to wait for a dead server's last stderr lines.
const STDERR_SETTLE: Duration = Duration::from_millis(500);

pub(crate) struct Server {
    pub(crate) name: String,
    /// Its tools as last listed: again after it said they changed (`notifications/tools/
    /// list_changed`), before the next turn takes them.
    tools: Mutex<Vec<rmcp::model::Tool>>,
    tools_changed: Arc<AtomicBool>,
    /// Its prompts and resources: as listed when it started, again each time it says they
    /// changed.
    listing: Arc<Mutex<Arc<Listing>>>,
    peer: Peer<RoleClient>,
    running: Mutex<Option<RunningService<RoleClient, Client>>>,
    group: Option<ProcessGroupGuard>,
    stderr: Arc<Stderr>,
    notices: NoticeSink,
    /// Why the server is gone, once it is.
    gone: Mutex<Option<String>>,
    /// Set by shutdown: calls fail quietly from then on (no notice for a server we stopped).
    stopping: AtomicBool,
}

/// Ferrite as an MCP client: what it says of itself, and what it hears of a server's lists
/// changing. Tools are listed again before the next turn (a turn keeps its tools); prompts and
/// resources at once, in the background (the session's command list follows within its poll).
pub(crate) struct Client {
    config: ClientConfig,
    tools_changed: Arc<AtomicBool>,
    name: String,
    notices: NoticeSink,
    listing: Arc<Mutex<Arc<Listing>>>,
}

impl Client {
    /// Lists prompts and resources again, off the connection's own task (a request made from
    /// a notification's handler must not wait on the loop that delivers its answer).
    fn relist(&self, peer: Peer<RoleClient>) {
        let (name, notices, shared) = (
            self.name.clone(),
            self.notices.clone(),
            self.listing.clone(),
        );
        tokio::spawn(async move {
            let listing = listing::list(&peer, &name, &notices).await;
            tracing::info!(server = %name, prompts = listing.prompts.len(), "MCP server's prompts or resources changed");
            *shared.lock().unwrap_or_else(PoisonError::into_inner) = Arc::new(listing);
        });
    }
}

impl rmcp::ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }

    async fn on_tool_list_changed(&self, _context: rmcp::service::NotificationContext<RoleClient>) {
        self.tools_changed.store(true, Ordering::SeqCst);
    }

    async fn on_prompt_list_changed(
        &self,
        context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.relist(context.peer);
    }

    async fn on_resource_list_changed(
        &self,
        context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.relist(context.peer);
    }
}

/// Why a server did not start.
pub(crate) enum StartError {
    Failed(String),
    /// The remote server at `url` answered 401: it may want an OAuth sign-in. `challenge` is
    /// its `WWW-Authenticate`; `failure` the message to give when it turns out not to be OAuth.
    Unauthorized {
        url: String,
        challenge: Option<String>,
        failure: String,
    },
}

impl From<String> for StartError {
    fn from(reason: String) -> Self {
        Self::Failed(reason)
    }
}

/// Why a call did not produce a result.
pub(crate) enum CallError {
    /// The server is not running (any more); the reason says why.
    NotRunning(String),
    /// The server answered the request with an error, or the transport failed once.
    Failed(String),
}

/// A server started (`connect`): its client, its process group, its stderr.
type Started = (
    RunningService<RoleClient, Client>,
    Option<ProcessGroupGuard>,
    Arc<Stderr>,
);

/// Starts a local server and shakes hands with it over its stdio.
async fn start_stdio(
    info: Client,
    spec: &McpServerSpec,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
) -> Result<Started, StartError> {
    let (transport, stderr) = spawn(command, args, env, &spec.env_remove, spec.cwd.as_deref())?;
    // The group guard exists before the handshake, so a server that never answers is killed
    // with its children when the caller's timeout drops this future.
    let group = transport.id().and_then(ProcessGroupGuard::new);
    let stderr_log = Arc::new(Stderr::new(stderr.is_some()));
    if let Some(stderr) = stderr {
        tokio::spawn(stderr_log.clone().read(spec.name.clone(), stderr));
    }
    match info.serve(transport).await {
        Ok(running) => Ok((running, group, stderr_log)),
        Err(e) => Err(stderr_log
            .explain(&format!("initialize failed: {e}"))
            .await
            .into()),
    }
}

/// Shakes hands with a remote server over streamable HTTP. The OAuth client only once a token
/// is stored: until then a server is reached (and fails) exactly as one that knows nothing of
/// OAuth, and its 401 with a challenge is what starts a sign-in. Credentials in the headers are
/// the user's choice: no OAuth then.
async fn start_http(
    info: Client,
    url: &str,
    headers: &BTreeMap<String, String>,
    oauth: Option<&OAuthConfig>,
) -> Result<RunningService<RoleClient, Client>, StartError> {
    let config =
        StreamableHttpClientTransportConfig::with_uri(url).custom_headers(header_map(headers)?);
    let oauth = oauth.filter(|_| !crate::oauth::has_authorization(headers));
    let served = match oauth {
        Some(oauth) if crate::oauth::has_token(oauth, url) => {
            let client = crate::oauth::client(oauth, url).await?;
            info.serve(StreamableHttpClientTransport::with_client(client, config))
                .await
        }
        _ => {
            info.serve(StreamableHttpClientTransport::from_config(config))
                .await
        }
    };
    match served {
        Ok(running) => Ok(running),
        Err(e) if oauth.is_some() && e.is_authorization_required() => {
            Err(StartError::Unauthorized {
                url: url.to_owned(),
                challenge: e.auth_challenge().map(str::to_owned),
                failure: format!("initialize failed: {e}"),
            })
        }
        Err(e) => Err(format!("initialize failed: {e}").into()),
    }
}

impl Server {
    /// Starts the server and lists its tools. The caller bounds this with the startup timeout;
    /// dropping the future kills whatever was started.
    /// `oauth`: where remote servers' tokens are stored (`None`: no OAuth, as in tests).
    pub(crate) async fn connect(
        spec: &McpServerSpec,
        notices: NoticeSink,
        oauth: Option<&OAuthConfig>,
    ) -> Result<Self, StartError> {
        let tools_changed = Arc::new(AtomicBool::new(false));
        let shared_listing: Arc<Mutex<Arc<Listing>>> = Arc::default();
        let info = Client {
            config: ClientConfig::new(
                ClientCapabilities::default(),
                Implementation::new("ferrite", env!("CARGO_PKG_VERSION")),
            ),
            tools_changed: tools_changed.clone(),
            name: spec.name.clone(),
            notices: notices.clone(),
            listing: shared_listing.clone(),
        };
        let (running, group, stderr_log) = match &spec.transport {
            McpTransport::Stdio { command, args, env } => {
                start_stdio(info, spec, command, args, env).await?
            }
            McpTransport::Http { url, headers } => {
                let running = start_http(info, url, headers, oauth).await?;
                (running, None, Arc::new(Stderr::new(false)))
            }
        };
        let tools = match running.peer().list_all_tools().await {
            Ok(tools) => tools,
            Err(e) => {
                return Err(stderr_log
                    .explain(&format!("listing its tools failed: {e}"))
                    .await
                    .into());
            }
        };
        let listing = listing::list(running.peer(), &spec.name, &notices).await;
        let prompts = listing.prompts.len();
        *shared_listing
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(listing);
        tracing::info!(
            server = %spec.name,
            tools = tools.len(),
            prompts,
            "MCP server started"
        );
        Ok(Self {
            name: spec.name.clone(),
            tools: Mutex::new(tools),
            tools_changed,
            listing: shared_listing,
            peer: running.peer().clone(),
            running: Mutex::new(Some(running)),
            group,
            stderr: stderr_log,
            notices,
            gone: Mutex::new(None),
            stopping: AtomicBool::new(false),
        })
    }

    /// Its prompts and resources as last listed.
    pub(crate) fn listing(&self) -> Arc<Listing> {
        self.listing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Its tools now: listed again when the server said they changed since the last time
    /// (bounded by `timeout`; the last list stands when listing fails).
    pub(crate) async fn tools(&self, timeout: Duration) -> Vec<rmcp::model::Tool> {
        if self.tools_changed.swap(false, Ordering::SeqCst) {
            match tokio::time::timeout(timeout, self.peer.list_all_tools()).await {
                Ok(Ok(tools)) => {
                    tracing::info!(server = %self.name, tools = tools.len(), "MCP server's tools changed");
                    *self.tools.lock().unwrap_or_else(PoisonError::into_inner) = tools;
                }
                Ok(Err(e)) => {
                    tracing::warn!(server = %self.name, error = %e, "listing changed tools failed")
                }
                Err(_) => tracing::warn!(server = %self.name, "listing changed tools timed out"),
            }
        }
        self.tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Calls `tool` (its real MCP name). Dropping the future (timeout, cancel) sends
    /// `notifications/cancelled` for the request: rmcp arms that on every `tools/call`.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> Result<CallToolResult, CallError> {
        self.check_alive().await?;
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let result = self.peer.call_tool(params).await;
        self.classify(result).await
    }

    /// `prompts/get` of `prompt` (its real name) with `arguments`.
    pub(crate) async fn get_prompt(
        &self,
        prompt: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<GetPromptResult, CallError> {
        self.check_alive().await?;
        let params = GetPromptRequestParams::new(prompt).with_arguments(arguments);
        let result = self.peer.get_prompt(params).await;
        self.classify(result).await
    }

    /// `resources/read` of `uri`.
    pub(crate) async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, CallError> {
        self.check_alive().await?;
        let result = self
            .peer
            .read_resource(ReadResourceRequestParams::new(uri))
            .await;
        self.classify(result).await
    }

    /// An error answer is the request's failure; a closed transport means the server is gone.
    async fn classify<T>(&self, result: Result<T, ServiceError>) -> Result<T, CallError> {
        match result {
            Ok(result) => Ok(result),
            Err(ServiceError::McpError(e)) => Err(CallError::Failed(e.message.to_string())),
            Err(e)
                if self.peer.is_transport_closed()
                    || matches!(e, ServiceError::TransportClosed) =>
            {
                Err(CallError::NotRunning(self.mark_gone(&e.to_string()).await))
            }
            Err(e) => Err(CallError::Failed(e.to_string())),
        }
    }

    /// `Err` with the reason once the connection is closed (the process exited, the session
    /// was shut down). Notices the death the first time it is seen.
    pub(crate) async fn check_alive(&self) -> Result<(), CallError> {
        if let Some(reason) = lock(&self.gone).clone() {
            return Err(CallError::NotRunning(reason));
        }
        if self.peer.is_transport_closed() {
            return Err(CallError::NotRunning(
                self.mark_gone("the connection closed").await,
            ));
        }
        Ok(())
    }

    /// Whether the server is known to be gone (no waiting, no notice).
    pub(crate) fn is_closed(&self) -> bool {
        lock(&self.gone).is_some() || self.peer.is_transport_closed()
    }

    /// Records that the server is gone, kills what is left of its process group, and tells the
    /// user, once. Returns the reason to give.
    async fn mark_gone(&self, what: &str) -> String {
        let reason = self
            .stderr
            .explain(&format!("it exited or closed the connection ({what})"))
            .await;
        let mut gone = lock(&self.gone);
        if let Some(reason) = gone.as_ref() {
            return reason.clone();
        }
        *gone = Some(reason.clone());
        drop(gone);
        if let Some(group) = &self.group {
            group.kill();
        }
        if !self.stopping.load(Ordering::SeqCst) {
            tracing::warn!(server = %self.name, %reason, "MCP server is gone");
            (self.notices)(format!("MCP server `{}` stopped: {reason}", self.name));
        }
        reason
    }

    /// Closes the connection (for a child: stdin closed, SIGTERM, then kill, as the MCP stdio
    /// lifecycle says), then kills whatever is left of its process group. Idempotent.
    pub(crate) async fn shutdown(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        lock(&self.gone).get_or_insert_with(|| "the session's MCP servers were shut down".into());
        let running = lock(&self.running).take();
        if let Some(mut running) = running
            && let Ok(None) = running.close_with_timeout(SHUTDOWN_WAIT).await
        {
            tracing::warn!(server = %self.name, "MCP server did not stop in time; killing it");
        }
        self.kill();
    }

    /// Kills the process group at once (drop paths, where nothing can be awaited).
    pub(crate) fn kill(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        if let Some(group) = &self.group {
            group.kill();
        }
    }
}

/// Starts `command` in its own process group with stdin/stdout piped to rmcp and stderr
/// captured: the agent's own stdout is JSON-RPC and must never be inherited.
fn spawn(
    command: &str,
    args: &[String],
    env: &std::collections::BTreeMap<String, String>,
    env_remove: &[String],
    cwd: Option<&std::path::Path>,
) -> Result<(TokioChildProcess, Option<tokio::process::ChildStderr>), String> {
    let mut cmd = tokio::process::Command::new(command);
    // The server inherits the agent's environment minus the keys Ferrite knows (`*_API_KEY`,
    // `FERRITE_*`, each configured provider's `api_key_env`); what its config entry sets
    // explicitly is added on top.
    cmd.args(args)
        .env_clear()
        .envs(std::env::vars_os().filter(|(name, _)| {
            let name = name.to_string_lossy();
            !ferrite_core::exec::is_secret_env(&name) && !env_remove.iter().any(|r| *r == name)
        }))
        .envs(env);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let mut wrapped = CommandWrap::from(cmd);
    #[cfg(unix)]
    wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
    // The job is terminated when the child is dropped (KillOnDrop), tree and all.
    #[cfg(windows)]
    wrapped.wrap(JobObject).wrap(KillOnDrop);
    TokioChildProcess::builder(wrapped)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run `{command}`: {e}"))
}

/// A server's stderr: logged line by line, the last lines kept to explain failures.
struct Stderr {
    tail: Mutex<VecDeque<String>>,
    /// `true` once the pipe is closed (every process holding it has exited).
    closed: watch::Sender<bool>,
}

impl Stderr {
    /// `piped`: whether there is a pipe to read (none for HTTP servers: nothing to wait for).
    fn new(piped: bool) -> Self {
        Self {
            tail: Mutex::default(),
            closed: watch::Sender::new(!piped),
        }
    }

    async fn read(self: Arc<Self>, server: String, stderr: tokio::process::ChildStderr) {
        let mut reader = BufReader::new(stderr);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf).trim_end().to_owned();
                    if line.is_empty() {
                        continue;
                    }
                    tracing::debug!(target: "ferrite_mcp::server_stderr", server = %server, "{line}");
                    let mut tail = lock(&self.tail);
                    if tail.len() == STDERR_TAIL_LINES {
                        tail.pop_front();
                    }
                    tail.push_back(line);
                }
            }
        }
        self.closed.send_replace(true);
    }

    /// `what`, with the server's last stderr lines when it wrote any: usually the real reason.
    /// A process that just died may have written them a moment ago; they are waited for
    /// briefly (the pipe closes when the process is gone, unless a child of it holds it).
    async fn explain(&self, what: &str) -> String {
        let mut closed = self.closed.subscribe();
        let _ = tokio::time::timeout(STDERR_SETTLE, closed.wait_for(|c| *c)).await;
        let tail = lock(&self.tail);
        if tail.is_empty() {
            what.to_owned()
        } else {
            let lines: Vec<&str> = tail.iter().map(String::as_str).collect();
            format!("{what}; its stderr ends with: {}", lines.join(" | "))
        }
    }
}

fn header_map(
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<HashMap<http::HeaderName, http::HeaderValue>, String> {
    headers
        .iter()
        .map(|(name, value)| {
            let n = http::HeaderName::try_from(name.as_str())
                .map_err(|e| format!("invalid header name `{name}`: {e}"))?;
            let v = http::HeaderValue::try_from(value.as_str())
                .map_err(|e| format!("invalid value for header `{name}`: {e}"))?;
            Ok((n, v))
        })
        .collect()
}

/// The server's process group (its pid: the child is the group leader). Killing the group, not
/// just the child, also ends what the server started (`npx` → node, shells, ...).
///
/// Killed once only: once the group is empty its id is free for the system to reuse, and a
/// later kill (a `Drop` long after) could hit an unrelated process group.
#[cfg(unix)]
struct ProcessGroupGuard {
    pgid: rustix::process::Pid,
    killed: AtomicBool,
}

/// Windows: nothing to hold. The job object the server runs in dies with its child handle.
#[cfg(windows)]
struct ProcessGroupGuard;

#[cfg(windows)]
impl ProcessGroupGuard {
    fn new(_pid: u32) -> Option<Self> {
        None
    }

    fn kill(&self) {}
}

#[cfg(unix)]
impl ProcessGroupGuard {
    fn new(pid: u32) -> Option<Self> {
        let pgid = rustix::process::Pid::from_raw(i32::try_from(pid).ok()?)?;
        Some(Self {
            pgid,
            killed: AtomicBool::new(false),
        })
    }

    fn kill(&self) {
        if self.killed.swap(true, Ordering::SeqCst) {
            return;
        }
        // ESRCH (already gone) is the usual, fine outcome.
        let _ = rustix::process::kill_process_group(self.pgid, rustix::process::Signal::KILL);
    }
}

#[cfg(unix)]
impl Drop for ProcessGroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A poisoned lock only means another thread panicked while holding it; the data (a tail of
/// log lines, a reason) is still fine to use.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
