//! Sessions at run time: one task per session owns its state and log and takes ops from a
//! queue ([`SessionHandle`]); everything it wants the editor to see goes out as [`SessionEvent`]s
//! on one shared, ordered channel. A turn runs as its own task under the session task, which
//! supervises it: a turn that panics or ignores a cancel still ends with exactly one `TurnEnded`.
//! Every prompt handed to a session has a supervisor (`supervisor`) that sends that `TurnEnded`
//! when the session task cannot (it died, or never took the prompt).

mod browser;
pub mod discovery;
mod error;
mod handle;
pub mod listing;
pub mod memory;
mod notices;
mod supervisor;
mod task;
mod timing;
mod title;
mod view;

pub use crate::services::{Services, queries};
pub(crate) use crate::session_view::{ceiling, settings_for, usage_for};
pub use error::RuntimeError;
pub use handle::SessionHandle;
use handle::{Op, Snapshot};
pub use notices::NoticeGate;
pub use supervisor::{PROMPT_ACK_TIMEOUT, Submitted};
use task::{SessionCtx, session_task};
use timing::uptime_ms;
pub use timing::{CANCEL_GRACE, CLOSE_GRACE};
use view::{check_dir, mcp_specs};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use crate::catalog::{Catalog, DefaultModel};
use crate::events::{Event, Refusal, SessionEvent, Settings};
use crate::ids::SessionId;
use crate::log::{EntryKind, Header};
use crate::mcp::McpServerSpec;
use crate::modes::{Harness, Mode};
use crate::session::Session;
use crate::state::SessionState;

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
    /// The session's working directory.
    pub cwd: PathBuf,
    /// The slash commands the session offers (built-ins and prompt files).
    pub commands: Vec<crate::commands::CommandInfo>,
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
/// What the workspace's config tried or chose (a model, a widening that was ignored) is told to
/// the user when a session opens, not only written to the log: a cloned repository must not
/// change how the agent works unseen.
fn config_notices(opened: &Opened, config: &crate::config::Config) {
    for w in &config.warnings {
        opened.notices.notice(w.clone());
    }
}

fn max_resident_sessions() -> usize {
    #[cfg(unix)]
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX);
    // Windows has no descriptor limit of that kind (handles run into the millions).
    #[cfg(not(unix))]
    let soft = u64::MAX;
    let usable = soft.saturating_sub(64) / 2;
    usize::try_from(usable.clamp(4, 1024)).unwrap_or(1024)
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
        // No usable model at all, or a default whose provider lacks its key, is -32000 so the
        // editor offers its login; a keyless default never needs one (`docs/acp.md`,
        // "Authentication").
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
        let opened = self.spawn(state, log, catalog, ceiling, false, servers);
        config_notices(&opened, &config);
        Ok(opened)
    }

    /// `session/load` (with `replay`) and `session/resume`. A session already open here is
    /// reused; one open in another process is refused.
    pub async fn open_session(
        &self,
        id: &SessionId,
        replay: bool,
        mcp_servers: Vec<McpServerSpec>,
    ) -> Result<Opened, RuntimeError> {
        // A running subagent's log is its turn's until it ends.
        if self.services.children.is_running(id) {
            return Err(Refusal::Busy.into());
        }
        if let Some(handle) = self.get(id) {
            let snap = handle.snapshot().await?;
            gone_cwd(&snap.cwd)?;
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
                commands: {
                    let own = self.services.own_files(std::slice::from_ref(&snap.cwd));
                    let mut commands = crate::commands::available(&own, &snap.cwd);
                    crate::mcp::prompts::add_commands(&mut commands, &snap.mcp_prompts);
                    commands
                },
                cwd: snap.cwd,
            });
        }
        let (log, loaded) = self.services.store.open(id)?;
        if loaded.torn_tail || loaded.skipped_lines > 0 {
            tracing::warn!(session = %id, torn = loaded.torn_tail, skipped = loaded.skipped_lines, "session log was damaged; loaded what was readable");
        }
        let mut state = SessionState::from_log(loaded);
        gone_cwd(&state.cwd)?;
        let (config, catalog) = self.services.context(Some(&state.cwd))?;
        let ceiling = ceiling(&config, state.harness);
        // A ceiling lowered since the session was saved applies on load.
        state.mode = state.mode.min(ceiling);
        let servers = mcp_specs(&config, mcp_servers, &state.cwd);
        let opened = self.spawn(state, log, catalog, ceiling, replay, servers);
        config_notices(&opened, &config);
        Ok(opened)
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
        let extra_tools = self.launch_mcp(&id, &notices, mcp_servers);
        let parent = state.parent.clone();
        let title = state.title.clone();
        let cwd = state.cwd.clone();
        let agents = crate::turn::agents_of(&self.services, &cwd)
            .into_iter()
            .map(|a| (a.name, a.description))
            .collect();
        let lsp = self.services.lsp.as_ref().map(|launcher| {
            let gate = notices.clone();
            launcher.session(Arc::new(move |text: String| gate.notice(text)))
        });
        let ctx = SessionCtx {
            catalog,
            ceiling,
            agents,
            lsp,
        };
        let settings = ctx.settings(&state);
        let usage = ctx.usage(&state);
        let events = if replay { state.replay() } else { vec![] };
        let core = Session::new(state, log, extra_tools);
        let (ops_tx, ops_rx) = mpsc::channel(64);
        let task = tokio::spawn(session_task(
            core,
            ctx,
            ops_rx,
            self.services.clone(),
            self.events.clone(),
        ));
        let handle = SessionHandle {
            id: id.clone(),
            ops: ops_tx,
            abort: task.abort_handle(),
            last_used: Arc::new(AtomicU64::new(uptime_ms())),
            events: self.events.clone(),
            next_turn: self.next_turn.clone(),
            cancels: Arc::new(tokio::sync::watch::channel(0).0),
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
            commands: crate::commands::available(
                &self.services.own_files(std::slice::from_ref(&cwd)),
                &cwd,
            ),
            cwd,
        }
    }

    /// The session's MCP servers, started in the background (none without a launcher).
    fn launch_mcp(
        &self,
        id: &SessionId,
        notices: &NoticeGate,
        mcp_servers: Vec<McpServerSpec>,
    ) -> Option<Arc<dyn crate::mcp::ToolProvider>> {
        let launcher = self.services.mcp.as_ref()?;
        if mcp_servers.is_empty() {
            return None;
        }
        let gate = notices.clone();
        let sink: crate::mcp::NoticeSink = Arc::new(move |text: String| gate.notice(text));
        let browser = self.services.elicitor.get().map(|elicitor| {
            Arc::new(browser::SessionBrowser {
                elicitor: elicitor.clone(),
                session: id.clone(),
                gate: notices.clone(),
            }) as Arc<dyn crate::mcp::Browser>
        });
        Some(launcher.launch(mcp_servers, sink, browser))
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

    /// Copies a session into a new session whose header names its parent, working in `cwd`
    /// (an existing directory) when given, else where the parent works. The copy ends at the
    /// parent's latest entry, or just before its live user message `at`.
    pub fn fork(
        &self,
        id: &SessionId,
        cwd: Option<PathBuf>,
        at: Option<&str>,
    ) -> Result<SessionId, RuntimeError> {
        if let Some(dir) = &cwd {
            check_dir(dir, "cwd")?;
        }
        let mut loaded = self.services.store.read(id)?;
        if let Some(message) = at {
            let end = fork_point(&loaded.entries, message)?;
            loaded.entries.truncate(end);
        }
        let new_id = SessionId::generate();
        let h = &loaded.header;
        let header = Header::new(
            new_id.clone(),
            cwd.unwrap_or_else(|| h.cwd.clone()),
            h.additional_directories.clone(),
            h.harness,
            Some(id.clone()),
        );
        let mut log = self.services.store.create(&header)?;
        // A fork is listed under its own title, not as a second row of its parent's (issue
        // 35): the title comes first, and the parent's titles are not copied after it. A fork
        // of an untitled session stays untitled: its first prompt names it.
        if let Some(title) = fork_title(&loaded.entries) {
            log.append(EntryKind::Title {
                title,
                by: Some(crate::log::TitleBy::Fork),
            })?;
        }
        for entry in loaded.entries {
            if !matches!(entry.kind, EntryKind::Title { .. }) {
                log.append(entry.kind)?;
            }
        }
        log.sync()?;
        Ok(new_id)
    }

    /// Sessions (optionally only those of `cwd` and of its copies in the other worktrees of
    /// its repository), newest first. Subagents' sessions are not listed: each is reached from
    /// its parent's card.
    pub fn list(&self, cwd: Option<&Path>) -> Result<Vec<listing::Listed>, RuntimeError> {
        Ok(listing::sessions_in(self.services.store.list()?, cwd))
    }

    /// Cancels the session's turn, flushes its log and frees it. Unknown ids are fine (no-op).
    pub async fn close(&self, id: &SessionId) {
        let handle = self.sessions().remove(id);
        if let Some(h) = handle {
            h.close().await;
        }
    }

    /// Removes everything stored for a session and its subagents: logs, command outputs,
    /// checkpoints. Refused while a turn runs; an id that never existed is already gone.
    pub async fn delete(&self, id: &SessionId) -> Result<(), RuntimeError> {
        if let Some(h) = self.get(id) {
            if h.snapshot().await.map(|s| s.running).unwrap_or(false) {
                return Err(RuntimeError::Refused(Refusal::Busy));
            }
            self.close(id).await;
        }
        if !self.services.store.path(id).exists() {
            self.services.store.sweep(id);
            return Ok(());
        }
        self.services.store.delete_with_subagents(id)?;
        Ok(())
    }

    /// `session/set_title`, `/title`: the user's title, normalized (whitespace collapsed, at
    /// most 100 characters; an empty one is refused), kept for good. A session not open here
    /// gets it appended to its log.
    pub async fn set_title(&self, id: &SessionId, title: &str) -> Result<String, RuntimeError> {
        let title =
            crate::log::title_from(&[crate::content::UserContent::Text { text: title.into() }])
                .ok_or_else(|| RuntimeError::Invalid("the title is empty".into()))?;
        if let Some(h) = self.get(id) {
            h.change(crate::events::SettingChange::Title(title.clone()))
                .await?;
            return Ok(title);
        }
        let (mut log, _) = self.services.store.open(id)?;
        log.append(EntryKind::Title {
            title: title.clone(),
            by: Some(crate::log::TitleBy::User),
        })?;
        log.sync()?;
        Ok(title)
    }

    /// Whether `id` names a session: open in this process, or with a log on disk.
    pub fn knows(&self, id: &SessionId) -> bool {
        self.get(id).is_some() || self.services.store.path(id).exists()
    }

    /// Closes every session (EOF): turns cancelled, logs flushed, tasks ended.
    pub async fn shutdown(&self) {
        let handles: Vec<SessionHandle> = self.sessions().drain().map(|(_, h)| h).collect();
        let closes = handles.iter().map(|h| h.close());
        futures::future::join_all(closes).await;
    }
}

/// A session whose folder is gone (a worktree removed, a checkout moved) cannot run a tool:
/// its load or resume says so, naming the folder, instead of failing later.
fn gone_cwd(cwd: &Path) -> Result<(), RuntimeError> {
    if cwd.is_dir() {
        return Ok(());
    }
    Err(RuntimeError::Invalid(format!(
        "this session's folder no longer exists: {} (a removed worktree or a moved \
         checkout?). Restore the folder, or fork the session into an existing one \
         (`session/fork` with that `cwd`).",
        cwd.display()
    )))
}

/// Where a fork before user message `message` ends: that message's entry. Refused when no
/// live message has that id (a rewind cut it away, or it is not of this session).
fn fork_point(entries: &[crate::log::Entry], message: &str) -> Result<usize, RuntimeError> {
    let mut live: Vec<(&str, usize)> = Vec::new();
    for (at, e) in entries.iter().enumerate() {
        match &e.kind {
            EntryKind::UserMessage { id: Some(id), .. } => live.push((id, at)),
            EntryKind::Rewind { message_id } => {
                if let Some(cut) = live.iter().position(|(id, _)| id == message_id) {
                    live.truncate(cut);
                }
            }
            _ => {}
        }
    }
    live.iter()
        .find(|(id, _)| *id == message)
        .map(|(_, at)| *at)
        .ok_or_else(|| {
            RuntimeError::Invalid(format!(
                "no live user message of this session has the id `{message}` (a rewind cut \
                 it away, or it is another session's)"
            ))
        })
}

/// "Fork of <the parent's title>": its last title, else its first message's words.
fn fork_title(entries: &[crate::log::Entry]) -> Option<String> {
    let parent = entries
        .iter()
        .rev()
        .find_map(|e| match &e.kind {
            EntryKind::Title { title, .. } => Some(title.clone()),
            _ => None,
        })
        .or_else(|| {
            entries.iter().find_map(|e| match &e.kind {
                EntryKind::UserMessage { content, .. } => crate::log::title_from(content),
                _ => None,
            })
        });
    parent.map(|title| format!("Fork of {title}"))
}
