//! Starting a session's MCP servers in the background and offering their tools.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ferrite_core::env::Env;
use ferrite_core::mcp::{
    Browser, McpLauncher, McpPrompt, McpPromptMessage, McpResourcePart, McpServerSpec, NoticeSink,
    ToolProvider,
};
use ferrite_core::tools::Tool;
use futures::future::BoxFuture;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::oauth::OAuthConfig;
use crate::server::{CallError, Server};
use crate::tool::McpTool;
use crate::{names, starting};

/// Starts MCP servers for sessions. Build one in `cli` and hand it to core as an
/// `Arc<dyn McpLauncher>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launcher {
    startup_timeout: Duration,
    call_timeout: Duration,
    /// OAuth for remote servers; `None`: a 401 is just a failure.
    oauth: Option<OAuthConfig>,
}

impl Default for Launcher {
    fn default() -> Self {
        Self::new(Self::DEFAULT_STARTUP_TIMEOUT, Self::DEFAULT_CALL_TIMEOUT)
    }
}

impl Launcher {
    /// How long a server has to start and list its tools (`npx` downloading a package counts).
    pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
    /// How long one tool call may run before it is cancelled.
    pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);

    pub fn new(startup_timeout: Duration, call_timeout: Duration) -> Self {
        Self {
            startup_timeout,
            call_timeout,
            oauth: None,
        }
    }

    /// Remote servers that answer 401 can be signed in to, with tokens kept as `oauth` says.
    pub fn with_oauth(mut self, oauth: OAuthConfig) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// The defaults, overridden by `FERRITE_MCP_STARTUP_TIMEOUT_MS`,
    /// `FERRITE_MCP_CALL_TIMEOUT_MS` and (with `home`, where OAuth tokens are kept)
    /// `FERRITE_MCP_SIGN_IN_TIMEOUT_MS` (for tests; unparsable values are ignored).
    pub fn from_env(env: &Env, home: Option<&std::path::Path>) -> Self {
        let ms = |name: &str| {
            env.get(name)
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_millis)
        };
        let launcher = Self::new(
            ms("FERRITE_MCP_STARTUP_TIMEOUT_MS").unwrap_or(Self::DEFAULT_STARTUP_TIMEOUT),
            ms("FERRITE_MCP_CALL_TIMEOUT_MS").unwrap_or(Self::DEFAULT_CALL_TIMEOUT),
        );
        match home {
            Some(home) => {
                let mut oauth = OAuthConfig::new(home);
                if let Some(t) = ms("FERRITE_MCP_SIGN_IN_TIMEOUT_MS") {
                    oauth.sign_in_timeout = t;
                }
                launcher.with_oauth(oauth)
            }
            None => launcher,
        }
    }

    /// [`McpLauncher::launch`] with the concrete type, for callers that want [`McpTool`]s.
    /// Must be called within a Tokio runtime.
    pub fn start(&self, servers: Vec<McpServerSpec>, notices: NoticeSink) -> Arc<McpServers> {
        self.start_with(servers, notices, None)
    }

    /// [`Self::start`] with a way to show sign-in pages.
    pub fn start_with(
        &self,
        servers: Vec<McpServerSpec>,
        notices: NoticeSink,
        browser: Option<Arc<dyn Browser>>,
    ) -> Arc<McpServers> {
        let deadline = Instant::now() + self.startup_timeout;
        let slots = servers
            .into_iter()
            .map(|spec| self.start_one(spec, notices.clone(), browser.clone()))
            .collect();
        Arc::new(McpServers {
            slots,
            deadline,
            call_timeout: self.call_timeout,
        })
    }

    fn start_one(
        &self,
        spec: McpServerSpec,
        notices: NoticeSink,
        browser: Option<Arc<dyn Browser>>,
    ) -> Slot {
        let (tx, rx) = watch::channel(State::Starting);
        let name = spec.name.clone();
        let timeout = self.startup_timeout;
        let failed = {
            let name = name.clone();
            let notices = notices.clone();
            move |reason: String| {
                tracing::warn!(server = %name, %reason, "MCP server failed to start");
                notices(format!("MCP server `{name}` failed to start: {reason}"));
            }
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            failed("no async runtime to run it on".into());
            let _ = tx.send(State::Failed);
            return Slot {
                name,
                state: rx,
                task: Mutex::new(None),
            };
        };
        let oauth = self.oauth.clone();
        let task = runtime.spawn(async move {
            let state =
                match starting::start(&spec, &notices, oauth.as_ref(), browser, timeout).await {
                    Ok(server) => State::Ready(Arc::new(server)),
                    Err(starting::Failure::Failed(reason)) => {
                        failed(reason);
                        State::Failed
                    }
                    Err(starting::Failure::Told(text)) => {
                        tracing::warn!(server = %spec.name, "{text}");
                        notices(text);
                        State::Failed
                    }
                };
            // No receiver left means the session is gone; dropping the server kills it.
            let _ = tx.send(state);
        });
        Slot {
            name,
            state: rx,
            task: Mutex::new(Some(task)),
        }
    }
}

impl McpLauncher for Launcher {
    fn launch(
        &self,
        servers: Vec<McpServerSpec>,
        notices: NoticeSink,
        browser: Option<Arc<dyn Browser>>,
    ) -> Arc<dyn ToolProvider> {
        self.start_with(servers, notices, browser)
    }
}

/// A session's MCP servers: the [`ToolProvider`] that [`Launcher`] returns.
pub struct McpServers {
    slots: Vec<Slot>,
    /// When every server has had its startup timeout.
    deadline: Instant,
    call_timeout: Duration,
}

struct Slot {
    name: String,
    state: watch::Receiver<State>,
    task: Mutex<Option<JoinHandle<()>>>,
}

#[derive(Clone)]
enum State {
    Starting,
    Ready(Arc<Server>),
    /// Failed to start (already noticed) or stopped.
    Failed,
}

impl McpServers {
    /// The tools of the servers that are running, waiting for those still starting. Servers
    /// that died are left out (their death is noticed here if no call saw it yet).
    pub async fn mcp_tools(&self) -> Vec<Arc<McpTool>> {
        let mut taken = HashSet::new();
        let mut tools = Vec::new();
        for slot in &self.slots {
            let Some(server) = self.wait_ready(slot).await else {
                continue;
            };
            if server.check_alive().await.is_err() {
                continue;
            }
            for tool in &server.tools(self.call_timeout).await {
                let name = names::unique_tool_name(&server.name, &tool.name, &taken);
                taken.insert(name.clone());
                tools.push(Arc::new(McpTool::new(
                    name,
                    server.clone(),
                    tool.clone(),
                    self.call_timeout,
                )));
            }
        }
        tools
    }

    async fn wait_ready(&self, slot: &Slot) -> Option<Arc<Server>> {
        let mut state = slot.state.clone();
        // The start task has its own timeout; the deadline here (plus a second for it to report)
        // only guards against waiting forever on a task that can no longer report.
        let waited = tokio::time::timeout_at(
            self.deadline + Duration::from_secs(1),
            state.wait_for(|s| !matches!(s, State::Starting)),
        )
        .await;
        match waited {
            Ok(Ok(s)) => match &*s {
                State::Ready(server) => Some(server.clone()),
                State::Starting | State::Failed => None,
            },
            Ok(Err(_)) | Err(_) => {
                tracing::debug!(server = %slot.name, "MCP server not ready");
                None
            }
        }
    }

    /// Waits for every server still starting.
    async fn wait_all(&self) {
        for slot in &self.slots {
            self.wait_ready(slot).await;
        }
    }

    /// The prompts of the running servers, in the order of the servers, each with its server
    /// and its real name. Names are made unique the way tool names are.
    fn prompt_commands(&self) -> Vec<(McpPrompt, Arc<Server>, String)> {
        let mut taken = HashSet::new();
        let mut out = Vec::new();
        for server in self.ready_servers() {
            if server.is_closed() {
                continue;
            }
            for prompt in &server.listing().prompts {
                if let Some(command) = crate::prompts::command(&server.name, prompt, &taken) {
                    taken.insert(command.command.clone());
                    out.push((command, server.clone(), prompt.name.clone()));
                }
            }
        }
        out
    }

    /// The running server that offers `uri`: the one that lists it, else the first that lists
    /// resources of its scheme.
    fn resource_server(&self, uri: &str) -> Option<Arc<Server>> {
        let servers: Vec<Arc<Server>> = self
            .ready_servers()
            .into_iter()
            .filter(|s| !s.is_closed())
            .collect();
        let exact = servers.iter().find(|s| s.listing().resources.lists(uri));
        exact
            .or_else(|| {
                servers
                    .iter()
                    .find(|s| s.listing().resources.claims_scheme(uri))
            })
            .cloned()
    }

    /// `call`, bounded by the call timeout; errors in words for the user.
    async fn bounded<T>(
        &self,
        server: &Server,
        what: &str,
        call: impl std::future::Future<Output = Result<T, CallError>>,
    ) -> Result<T, String> {
        let name = &server.name;
        match tokio::time::timeout(self.call_timeout, call).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(CallError::NotRunning(reason))) => {
                Err(format!("MCP server `{name}` is not running: {reason}"))
            }
            Ok(Err(CallError::Failed(reason))) => {
                Err(format!("MCP server `{name}` failed to {what}: {reason}"))
            }
            Err(_) => Err(format!(
                "MCP server `{name}` did not {what} within {} s",
                self.call_timeout.as_secs_f64()
            )),
        }
    }

    fn ready_servers(&self) -> Vec<Arc<Server>> {
        self.slots
            .iter()
            .filter_map(|slot| match &*slot.state.borrow() {
                State::Ready(server) => Some(server.clone()),
                State::Starting | State::Failed => None,
            })
            .collect()
    }

    /// Stops the servers still starting (their futures are dropped, which kills the child).
    fn abort_starting(&self) {
        for slot in &self.slots {
            if let Some(task) = slot
                .task
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
            {
                task.abort();
            }
        }
    }
}

impl ToolProvider for McpServers {
    fn tools(&self) -> BoxFuture<'_, Vec<Arc<dyn Tool>>> {
        Box::pin(async move {
            self.mcp_tools()
                .await
                .into_iter()
                .map(|t| t as Arc<dyn Tool>)
                .collect()
        })
    }

    fn started(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.wait_all())
    }

    fn prompts(&self) -> Vec<McpPrompt> {
        self.prompt_commands()
            .into_iter()
            .map(|(prompt, _, _)| prompt)
            .collect()
    }

    fn get_prompt<'a>(
        &'a self,
        command: &'a str,
        arguments: Vec<(String, String)>,
    ) -> BoxFuture<'a, Result<Vec<McpPromptMessage>, String>> {
        Box::pin(async move {
            let find = || {
                self.prompt_commands()
                    .into_iter()
                    .find(|(prompt, _, _)| prompt.command == command)
            };
            // A server still starting is waited for only when no running one offers it.
            let found = match find() {
                Some(found) => Some(found),
                None => {
                    self.wait_all().await;
                    find()
                }
            };
            let Some((_, server, real)) = found else {
                return Err(format!("no running MCP server offers `/{command}`"));
            };
            let arguments = arguments
                .into_iter()
                .map(|(k, v)| (k, serde_json::Value::String(v)))
                .collect();
            let what = format!("give the prompt `{real}`");
            let result = self
                .bounded(&server, &what, server.get_prompt(&real, arguments))
                .await?;
            Ok(crate::prompts::messages(result))
        })
    }

    fn read_resource<'a>(
        &'a self,
        uri: &'a str,
    ) -> BoxFuture<'a, Option<Result<Vec<McpResourcePart>, String>>> {
        Box::pin(async move {
            let server = match self.resource_server(uri) {
                Some(server) => server,
                None => {
                    self.wait_all().await;
                    self.resource_server(uri)?
                }
            };
            let what = format!("read `{uri}`");
            let result = self
                .bounded(&server, &what, server.read_resource(uri))
                .await;
            Some(result.map(crate::prompts::resource_parts))
        })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.abort_starting();
            let servers = self.ready_servers();
            futures::future::join_all(servers.iter().map(|s| s.shutdown())).await;
        })
    }
}

impl Drop for McpServers {
    fn drop(&mut self) {
        self.abort_starting();
        // Tools may still hold the servers (an `Arc` in a registry); the processes go now.
        for server in self.ready_servers() {
            server.kill();
        }
    }
}
