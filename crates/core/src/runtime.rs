//! Sessions at run time: one task per session owns its state and log and takes [`Op`]s from a
//! queue; everything it wants the editor to see goes out as [`SessionEvent`]s on one shared,
//! ordered channel. A turn runs as its own task under the session task, which supervises it: a
//! turn that panics or ignores a cancel still ends with exactly one `TurnEnded`.

pub mod discovery;
mod notices;
mod task;

pub use notices::NoticeGate;
use task::{SessionCtx, session_task};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use crate::catalog::{Catalog, DefaultModel};
use crate::config::{Config, ConfigError};
use crate::content::UserContent;
use crate::credentials::Credentials;
use crate::env::Env;
use crate::events::{Event, Refusal, SessionEvent, SettingChange, Settings, TurnOptions};
use crate::exec::CommandRunner;
use crate::ids::{SessionId, TurnId};
use crate::log::{EntryKind, Header, SessionStore, SessionSummary, StoreError};
use crate::mcp::{McpLauncher, McpServerSpec, McpTransport};
use crate::model::ModelConnector;
use crate::modes::{Harness, Mode};
use crate::permissions::Approver;
use crate::state::SessionState;
use crate::turn::SessionCore;

/// How long a cancelled turn may take to wind down before its task is aborted.
pub const CANCEL_GRACE: Duration = Duration::from_secs(3);
/// How long closing a session may take before its task is aborted.
pub const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// What the runtime is built from; wired by the binary.
pub struct Services {
    pub home: PathBuf,
    pub env: Env,
    pub store: SessionStore,
    pub connector: Option<Arc<dyn ModelConnector>>,
    pub runner: Option<Arc<dyn CommandRunner>>,
    /// Starts MCP servers for sessions.
    pub mcp: Option<Arc<dyn McpLauncher>>,
    /// Fetches web pages for `web_fetch`.
    pub web: Option<Arc<dyn crate::web::WebFetch>>,
    /// Asks the user for permission; set by the ACP server once it runs.
    pub approver: std::sync::OnceLock<Arc<dyn Approver>>,
    /// The editor's file system; set by the ACP server once it runs.
    pub client_fs: std::sync::OnceLock<Arc<dyn crate::clientfs::ClientFs>>,
}

impl Services {
    pub fn new(home: PathBuf, env: Env, connector: Option<Arc<dyn ModelConnector>>) -> Self {
        let store = SessionStore::new(&home);
        Self {
            home,
            env,
            store,
            connector,
            runner: None,
            mcp: None,
            web: None,
            approver: std::sync::OnceLock::new(),
            client_fs: std::sync::OnceLock::new(),
        }
    }

    /// Config (narrowed by the workspace), credentials and the model catalog, read fresh.
    pub fn context(&self, cwd: Option<&Path>) -> Result<(Config, Catalog), ConfigError> {
        let config = Config::load(&self.home, cwd)?;
        for w in &config.warnings {
            tracing::warn!("{w}");
        }
        let creds = Credentials::load(&self.home).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "ignoring unreadable credentials");
            Credentials::default()
        });
        let catalog = Catalog::build(&config, &self.env, &creds)
            .with_listings(&crate::catalog::Listings::load(&self.home));
        Ok((config, catalog))
    }

    /// The catalog for `config` with fresh credentials and the cached provider listings.
    pub fn catalog(&self, config: &Config) -> Catalog {
        let creds = Credentials::load(&self.home).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "ignoring unreadable credentials");
            Credentials::default()
        });
        Catalog::build(config, &self.env, &creds)
            .with_listings(&crate::catalog::Listings::load(&self.home))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// Bad parameters (JSON-RPC -32602).
    #[error("{0}")]
    Invalid(String),
    #[error("unknown session")]
    UnknownSession,
    /// No model can be used, or the default model's provider needs a key and has none
    /// (-32000).
    #[error("{}", .0.message)]
    AuthRequired(crate::catalog::AuthNeeded),
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Store(StoreError),
}

impl From<StoreError> for RuntimeError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound => RuntimeError::UnknownSession,
            other => RuntimeError::Store(other),
        }
    }
}

pub struct NewSession {
    pub cwd: PathBuf,
    pub additional_directories: Vec<PathBuf>,
    pub harness: Harness,
    /// MCP servers from the client; `[mcp_servers]` of config are added to them.
    pub mcp_servers: Vec<McpServerSpec>,
    /// The session's model instead of the default (`ferrite run --model`).
    pub model: Option<String>,
}

/// A session that is open in this process, with what the editor needs to show it.
pub struct Opened {
    pub handle: SessionHandle,
    pub settings: Settings,
    pub parent: Option<SessionId>,
    /// The conversation as events; empty unless asked for.
    pub replay: Vec<Event>,
    /// The session's title, if it has one yet.
    pub title: Option<String>,
    /// Context occupancy and running cost, for the `usage_update` sent once the client knows
    /// the session (an [`Event::Usage`]).
    pub usage: Event,
    /// Holds the session's notices (e.g. an MCP server that failed to start) until the client
    /// knows the session: call [`NoticeGate::release`] after answering.
    pub notices: NoticeGate,
}

enum Op {
    Prompt {
        content: Vec<UserContent>,
        options: TurnOptions,
        reply: oneshot::Sender<Result<TurnId, Refusal>>,
    },
    Cancel,
    Change {
        change: SettingChange,
        reply: oneshot::Sender<Result<Settings, Refusal>>,
    },
    Snapshot {
        reply: oneshot::Sender<Snapshot>,
    },
    Close {
        reply: oneshot::Sender<()>,
    },
    /// Idle and least recently used among many: give the log's descriptor back until the next
    /// write (ignored while a turn runs).
    Release,
    /// Provider listings changed: rebuild the catalog and tell the editor if the options did.
    Refresh,
}

struct Snapshot {
    settings: Settings,
    usage: Event,
    replay: Vec<Event>,
    parent: Option<SessionId>,
    title: Option<String>,
    running: bool,
}

/// The submit side of a session's queue pair.
#[derive(Clone)]
pub struct SessionHandle {
    id: SessionId,
    ops: mpsc::Sender<Op>,
    abort: AbortHandle,
    /// When the client last used the session (ms since the process started), for parking the
    /// least recently used ones.
    last_used: Arc<AtomicU64>,
}

impl SessionHandle {
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    fn touch(&self) {
        self.last_used.store(uptime_ms(), Ordering::Relaxed);
    }

    /// Starts a turn. Answers once the session task has accepted it; the turn's events and its
    /// `TurnEnded` follow on the event channel.
    pub async fn prompt(
        &self,
        content: Vec<UserContent>,
        options: TurnOptions,
    ) -> Result<TurnId, Refusal> {
        self.touch();
        let (reply, rx) = oneshot::channel();
        self.ops
            .send(Op::Prompt {
                content,
                options,
                reply,
            })
            .await
            .map_err(|_| Refusal::Closed)?;
        rx.await.map_err(|_| Refusal::Closed)?
    }

    /// Queues a prompt without waiting: the receiver yields once the session task accepted or
    /// refused it. Queuing in the caller's order keeps a session's requests in arrival order.
    pub fn submit_prompt(
        &self,
        content: Vec<UserContent>,
        options: TurnOptions,
    ) -> Result<oneshot::Receiver<Result<TurnId, Refusal>>, Refusal> {
        let (reply, rx) = oneshot::channel();
        self.try_submit(Op::Prompt {
            content,
            options,
            reply,
        })?;
        Ok(rx)
    }

    /// Queues a settings change without waiting (see [`Self::submit_prompt`]).
    pub fn submit_change(
        &self,
        change: SettingChange,
    ) -> Result<oneshot::Receiver<Result<Settings, Refusal>>, Refusal> {
        let (reply, rx) = oneshot::channel();
        self.try_submit(Op::Change { change, reply })?;
        Ok(rx)
    }

    fn try_submit(&self, op: Op) -> Result<(), Refusal> {
        self.touch();
        self.ops.try_send(op).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => {
                Refusal::Invalid("the session is not responding; try again or close it".into())
            }
            mpsc::error::TrySendError::Closed(_) => Refusal::Closed,
        })
    }

    /// Asks the running turn, if any, to stop. Never blocks.
    pub fn cancel(&self) {
        if let Err(mpsc::error::TrySendError::Full(op)) = self.ops.try_send(Op::Cancel) {
            // A full queue means the session task is busy; deliver the cancel without blocking
            // the caller.
            let ops = self.ops.clone();
            tokio::spawn(async move {
                let _ = ops.send(op).await;
            });
        }
    }

    pub async fn change(&self, change: SettingChange) -> Result<Settings, Refusal> {
        self.touch();
        let (reply, rx) = oneshot::channel();
        self.ops
            .send(Op::Change { change, reply })
            .await
            .map_err(|_| Refusal::Closed)?;
        rx.await.map_err(|_| Refusal::Closed)?
    }

    async fn snapshot(&self) -> Result<Snapshot, Refusal> {
        let (reply, rx) = oneshot::channel();
        self.ops
            .send(Op::Snapshot { reply })
            .await
            .map_err(|_| Refusal::Closed)?;
        rx.await.map_err(|_| Refusal::Closed)
    }

    /// Resolves when the session task is gone (closed, or died).
    pub async fn closed(&self) {
        self.ops.closed().await
    }

    pub fn is_alive(&self) -> bool {
        !self.ops.is_closed()
    }

    async fn close(&self) {
        let (reply, rx) = oneshot::channel();
        if self.ops.send(Op::Close { reply }).await.is_ok()
            && tokio::time::timeout(CLOSE_GRACE, rx).await.is_err()
        {
            tracing::warn!(session = %self.id, "session did not close in time; aborting it");
            self.abort.abort();
        }
    }
}

/// All sessions of this process.
pub struct Runtime {
    services: Arc<Services>,
    discovery: Arc<discovery::DiscoveryState>,
    events: mpsc::Sender<SessionEvent>,
    sessions: Arc<Mutex<HashMap<SessionId, SessionHandle>>>,
    next_turn: Arc<AtomicU64>,
    /// How many sessions keep their log open (see [`Runtime::park_least_recently_used`]).
    max_resident: usize,
}

/// Sessions that keep their log open: half of the descriptors left after a reserve for the
/// process itself (HTTP connections, commands' pipes, MCP servers), within [4, 1024].
fn max_resident_sessions() -> usize {
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX);
    let usable = soft.saturating_sub(64) / 2;
    usize::try_from(usable.clamp(4, 1024)).unwrap_or(1024)
}

/// Milliseconds since the process started; a monotonic clock for "least recently used".
fn uptime_ms() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let start = START.get_or_init(std::time::Instant::now);
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Capacity of the event channel: enough to absorb bursts, small enough that a client that
/// stops reading slows the model stream down instead of growing memory.
pub const EVENT_CHANNEL_CAPACITY: usize = 1024;

impl Runtime {
    pub fn new(services: Services) -> (Runtime, mpsc::Receiver<SessionEvent>) {
        let (events, rx) = mpsc::channel(EVENT_CHANNEL_CAPACITY);
        let rt = Runtime {
            services: Arc::new(services),
            discovery: Arc::default(),
            events,
            sessions: Arc::default(),
            next_turn: Arc::new(AtomicU64::new(1)),
            max_resident: max_resident_sessions(),
        };
        (rt, rx)
    }

    pub fn services(&self) -> &Services {
        &self.services
    }

    /// Past [`Self::max_resident`] sessions, the least recently used give their log descriptor
    /// back: an editor that opened hundreds of sessions must not push the process to its file
    /// limit, where every turn would fail. They reopen on their next write.
    fn park_least_recently_used(&self) {
        let sessions = self.sessions();
        let Some(excess) = sessions.len().checked_sub(self.max_resident) else {
            return;
        };
        let mut by_age: Vec<&SessionHandle> = sessions.values().collect();
        by_age.sort_by_key(|h| h.last_used.load(Ordering::Relaxed));
        for h in by_age.into_iter().take(excess) {
            // A full queue means the session is busy: it is not idle, so skipping it is right.
            let _ = h.ops.try_send(Op::Release);
        }
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, SessionHandle>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn get(&self, id: &SessionId) -> Option<SessionHandle> {
        self.sessions().get(id).filter(|h| h.is_alive()).cloned()
    }

    pub async fn new_session(&self, req: NewSession) -> Result<Opened, RuntimeError> {
        check_dir(&req.cwd, "cwd")?;
        for d in &req.additional_directories {
            check_dir(d, "additionalDirectories")?;
        }
        let (config, catalog) = self.services.context(Some(&req.cwd))?;
        // Contract §3/§9: no usable model at all, or a default whose provider lacks its key,
        // is -32000 so the editor offers its login; a keyless default never needs one.
        let chosen = match req.model {
            Some(m) => {
                catalog
                    .resolve(&m)
                    .map_err(|e| RuntimeError::Invalid(e.to_string()))?;
                DefaultModel::Chosen(m)
            }
            None => catalog.default_model(&config, &self.services.env),
        };
        let model = match chosen {
            DefaultModel::Chosen(m) => {
                if let Some(need) = catalog.auth_needed_for(&m) {
                    return Err(RuntimeError::AuthRequired(need));
                }
                m
            }
            DefaultModel::NoneConfigured => {
                return Err(RuntimeError::AuthRequired(catalog.nothing_configured()));
            }
        };
        let id = SessionId::generate();
        let header = Header::new(
            id.clone(),
            req.cwd,
            req.additional_directories,
            req.harness,
            None,
        );
        let mut log = self.services.store.create(&header)?;
        let mut state = SessionState::new(&header);
        let ceiling = ceiling(&config, req.harness);
        let mode = req.harness.default_mode().min(ceiling);
        log.append(EntryKind::Mode { mode })?;
        state.apply(EntryKind::Mode { mode });
        log.append(EntryKind::Model {
            model: model.clone(),
        })?;
        state.apply(EntryKind::Model { model });
        log.sync()?;
        let servers = mcp_specs(&config, req.mcp_servers, &state.cwd);
        Ok(self.spawn(state, log, catalog, ceiling, false, servers))
    }

    /// `session/load` (with `replay`) and `session/resume`. A session already open here is
    /// reused; one open in another process is refused.
    pub async fn open_session(
        &self,
        id: &SessionId,
        replay: bool,
        mcp_servers: Vec<McpServerSpec>,
    ) -> Result<Opened, RuntimeError> {
        if let Some(handle) = self.get(id) {
            let snap = handle.snapshot().await?;
            if replay && snap.running {
                return Err(Refusal::Busy.into());
            }
            let notices = NoticeGate::new(self.events.clone(), id.clone());
            notices.release();
            return Ok(Opened {
                handle,
                settings: snap.settings,
                parent: snap.parent,
                replay: if replay { snap.replay } else { vec![] },
                title: snap.title,
                usage: snap.usage,
                notices,
            });
        }
        let (log, loaded) = self.services.store.open(id)?;
        if loaded.torn_tail || loaded.skipped_lines > 0 {
            tracing::warn!(session = %id, torn = loaded.torn_tail, skipped = loaded.skipped_lines, "session log was damaged; loaded what was readable");
        }
        let mut state = SessionState::from_log(&loaded);
        let (config, catalog) = self.services.context(Some(&state.cwd))?;
        let ceiling = ceiling(&config, state.harness);
        // A ceiling lowered since the session was saved applies on load.
        state.mode = state.mode.min(ceiling);
        let servers = mcp_specs(&config, mcp_servers, &state.cwd);
        Ok(self.spawn(state, log, catalog, ceiling, replay, servers))
    }

    fn spawn(
        &self,
        state: SessionState,
        log: crate::log::LogWriter,
        catalog: Catalog,
        ceiling: Mode,
        replay: bool,
        mcp_servers: Vec<McpServerSpec>,
    ) -> Opened {
        let id = state.id.clone();
        let notices = NoticeGate::new(self.events.clone(), id.clone());
        let extra_tools = match (&self.services.mcp, mcp_servers.is_empty()) {
            (Some(launcher), false) => {
                let gate = notices.clone();
                let sink: crate::mcp::NoticeSink = Arc::new(move |text: String| gate.notice(text));
                Some(launcher.launch(mcp_servers, sink))
            }
            _ => None,
        };
        let parent = state.parent.clone();
        let title = state.title.clone();
        let ctx = SessionCtx { catalog, ceiling };
        let settings = ctx.settings(&state);
        let usage = ctx.usage(&state);
        let context_tokens = state.context_tokens;
        let events = if replay { state.replay() } else { vec![] };
        let core = Arc::new(Mutex::new(SessionCore {
            state,
            log,
            sandbox_warned: Default::default(),
            extra_tools,
            disk_changes: Default::default(),
            context_tokens,
            nested_instructions: Default::default(),
        }));
        let (ops_tx, ops_rx) = mpsc::channel(64);
        let task = tokio::spawn(session_task(
            core,
            ctx,
            ops_rx,
            self.services.clone(),
            self.events.clone(),
            self.next_turn.clone(),
        ));
        let handle = SessionHandle {
            id: id.clone(),
            ops: ops_tx,
            abort: task.abort_handle(),
            last_used: Arc::new(AtomicU64::new(uptime_ms())),
        };
        self.sessions().insert(id, handle.clone());
        self.park_least_recently_used();
        Opened {
            handle,
            settings,
            parent,
            replay: events,
            title,
            usage,
            notices,
        }
    }

    /// Starts model discovery in the background (at most once a minute; see [`discovery`]):
    /// when the providers' listings changed, every open session gets its refreshed `model`
    /// option. Never waited for: call it after answering the request that opened a session.
    pub fn discover_in_background(&self) {
        let Some(timeout) = discovery::settings(&self.services) else {
            return;
        };
        if self.services.connector.is_none() || !self.discovery.claim() {
            return;
        }
        let services = self.services.clone();
        let sessions = self.sessions.clone();
        tokio::spawn(async move {
            let Ok((config, catalog)) = services.context(None) else {
                return;
            };
            let (_, changed) = discovery::run(&services, &config, &catalog, timeout).await;
            if changed {
                // Sessions opened while discovery ran built their catalog from the old cache.
                let open: Vec<SessionHandle> = sessions
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .values()
                    .cloned()
                    .collect();
                for h in open {
                    let _ = h.ops.try_send(Op::Refresh);
                }
            }
        });
    }

    /// Copies a session at its latest entry into a new session whose header names its parent.
    pub fn fork(&self, id: &SessionId) -> Result<SessionId, RuntimeError> {
        let loaded = self.services.store.read(id)?;
        let new_id = SessionId::generate();
        let h = &loaded.header;
        let header = Header::new(
            new_id.clone(),
            h.cwd.clone(),
            h.additional_directories.clone(),
            h.harness,
            Some(id.clone()),
        );
        let mut log = self.services.store.create(&header)?;
        for entry in loaded.entries {
            log.append(entry.kind)?;
        }
        log.sync()?;
        Ok(new_id)
    }

    /// Sessions (optionally only those of `cwd`), newest first.
    pub fn list(&self, cwd: Option<&Path>) -> Result<Vec<SessionSummary>, RuntimeError> {
        let all = self.services.store.list()?;
        Ok(all
            .into_iter()
            .filter(|s| cwd.is_none_or(|c| s.cwd == c))
            .collect())
    }

    /// Cancels the session's turn, flushes its log and frees it. Unknown ids are fine (no-op).
    pub async fn close(&self, id: &SessionId) {
        let handle = self.sessions().remove(id);
        if let Some(h) = handle {
            h.close().await;
        }
    }

    /// Removes a session's log. Refused while a turn runs.
    pub async fn delete(&self, id: &SessionId) -> Result<(), RuntimeError> {
        if let Some(h) = self.get(id) {
            if h.snapshot().await.map(|s| s.running).unwrap_or(false) {
                return Err(RuntimeError::Refused(Refusal::Busy));
            }
            self.close(id).await;
        }
        self.services.store.delete(id)?;
        crate::checkpoints::delete_session(&self.services.home, id);
        Ok(())
    }

    /// Closes every session (EOF): turns cancelled, logs flushed, tasks ended.
    pub async fn shutdown(&self) {
        let handles: Vec<SessionHandle> = self.sessions().drain().map(|(_, h)| h).collect();
        let closes = handles.iter().map(|h| h.close());
        futures::future::join_all(closes).await;
    }
}

/// The client's servers, then those of config whose names the client did not use.
fn mcp_specs(
    config: &Config,
    mut from_client: Vec<McpServerSpec>,
    cwd: &Path,
) -> Vec<McpServerSpec> {
    for (name, s) in &config.mcp_servers {
        if from_client.iter().any(|c| c.name == *name) {
            continue;
        }
        let transport = match (&s.command, &s.url) {
            (Some(command), _) => McpTransport::Stdio {
                command: command.clone(),
                args: s.args.clone(),
                env: s.env.clone(),
            },
            (None, Some(url)) => McpTransport::Http {
                url: url.clone(),
                headers: s.headers.clone(),
            },
            (None, None) => continue,
        };
        from_client.push(McpServerSpec {
            name: name.clone(),
            transport,
            cwd: None,
            env_remove: vec![],
        });
    }
    let secret = crate::exec::secret_env_names(config);
    for s in &mut from_client {
        s.cwd.get_or_insert_with(|| cwd.to_owned());
        s.env_remove.clone_from(&secret);
    }
    from_client
}

fn check_dir(p: &Path, what: &str) -> Result<(), RuntimeError> {
    if !p.is_absolute() {
        return Err(RuntimeError::Invalid(format!(
            "`{what}` must be an absolute path"
        )));
    }
    if !p.is_dir() {
        return Err(RuntimeError::Invalid(format!(
            "`{what}` is not an existing directory: {}",
            p.display()
        )));
    }
    Ok(())
}

pub(crate) fn ceiling(config: &Config, harness: Harness) -> Mode {
    harness.ceiling().min(config.max_mode)
}

/// A session's context occupancy and running cost. The cost is shown (0 at first) as soon as
/// the session's model has a known price.
pub(crate) fn usage_for(state: &SessionState, catalog: &Catalog) -> Event {
    let info = state.model.as_deref().and_then(|m| catalog.resolve(m).ok());
    let size = info
        .as_ref()
        .map_or(crate::catalog::DEFAULT_CONTEXT_WINDOW, |m| m.context_window);
    let cost = state
        .cost_usd
        .or_else(|| info.as_ref().and_then(|m| m.price).map(|_| 0.0));
    Event::Usage {
        used: state.context_tokens,
        size,
        cost,
    }
}

/// A session's settings as the editor sees them.
pub(crate) fn settings_for(state: &SessionState, catalog: &Catalog, ceiling: Mode) -> Settings {
    let mut models: Vec<(String, String)> = catalog
        .usable_models()
        .into_iter()
        .map(|m| (m.id.clone(), m.name.clone()))
        .collect();
    let model = state
        .model
        .clone()
        .or_else(|| models.first().map(|m| m.0.clone()))
        .unwrap_or_default();
    // The current model is always among the choices, listed or not (an open model id).
    if !model.is_empty() && !models.iter().any(|(id, _)| *id == model) {
        let name = catalog
            .resolve(&model)
            .map(|m| m.name)
            .unwrap_or_else(|_| model.clone());
        models.insert(0, (model.clone(), name));
    }
    Settings {
        mode: state.mode,
        available_modes: Mode::ALL.into_iter().filter(|m| *m <= ceiling).collect(),
        model,
        models,
        effort: state.effort,
        web_search: state.web_search,
    }
}
