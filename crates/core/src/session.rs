//! One open session: its state, its log and the lock around them. This module is the only one
//! that holds them: the session's task owns the [`Session`]; the turn it starts writes through a
//! [`Recorder`]; tools get a narrower capability still ([`crate::tools::CallRecorder`], which the
//! recorder implements). No one else sees [`SessionCore`], and only [`Session::lock`] locks it,
//! always for a short, non-async section.

mod recorder;
mod relay;

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::mpsc;

use crate::events::{SessionEvent, TurnOutcome};
use crate::ids::TurnId;
use crate::log::{EntryKind, LogWriter, StoreError};
use crate::mcp::ToolProvider;
use crate::state::SessionState;

pub(crate) use recorder::{Recorder, TurnStart};
pub(crate) use relay::Relay;

/// What a session holds while it is open.
struct SessionCore {
    state: SessionState,
    log: LogWriter,
    /// Whether the user was told that commands run unsandboxed (once per session).
    sandbox_warned: Arc<AtomicBool>,
    /// The session's commands against its writes through the editor (`crate::clientfs`).
    command_gate: crate::clientfs::CommandGate,
    /// What hooks and workspace trust remember for the session's life in this process.
    extensions: Arc<crate::hooks::SessionFlags>,
    /// The session's MCP servers' tools.
    extra_tools: Option<Arc<dyn ToolProvider>>,
    /// Files the agent changed on disk, for the stale-buffer rule (`docs/acp.md`).
    disk_changes: crate::clientfs::DiskChanges,
    /// Tokens in context after the last model call (0 until one happened in this process).
    context_tokens: u64,
    /// Instruction files of nested packages already given to the model.
    nested_instructions: crate::prompt::Nested,
    /// What the running turn's model calls used so far (its subagents' included): the prompt's
    /// answer reports it.
    turn_usage: crate::usage::Usage,
    /// `Some` for a log synced in the background ([`Session::sync_in_background`]): the syncs
    /// started and not yet waited for.
    background_syncs: Option<Vec<RunningSync>>,
    /// The sync of the last response's `task` calls, which their children wait for before
    /// anything of theirs acts ([`Recorder::calls_durable`]).
    calls_sync: Option<SharedSync>,
}

impl SessionCore {
    /// Appends `kind` to the log, then folds it into the state: the log is written first.
    fn record(&mut self, kind: EntryKind) -> Result<u64, StoreError> {
        let seq = self.log.append(kind.clone())?;
        self.state.apply(kind);
        Ok(seq)
    }

    /// Syncs the log: here, or for a log synced in the background, on the blocking pool.
    fn sync_log(&mut self) -> Result<(), StoreError> {
        if self.background_syncs.is_none() {
            return self.log.sync();
        }
        if let Some(sync) = self.start_sync()?
            && let Some(running) = &mut self.background_syncs
        {
            running.push(sync);
        }
        Ok(())
    }

    /// Starts a sync of everything written so far on the blocking pool (`None`: nothing to
    /// sync).
    fn start_sync(&mut self) -> Result<Option<RunningSync>, StoreError> {
        let path = self.log.path().to_owned();
        Ok(self.log.take_sync()?.map(|pending| RunningSync {
            sync: tokio::task::spawn_blocking(move || pending.run()),
            path,
        }))
    }
}

/// A sync of a log running on the blocking pool.
pub(crate) struct RunningSync {
    sync: tokio::task::JoinHandle<Result<(), StoreError>>,
    path: std::path::PathBuf,
}

impl RunningSync {
    /// Waits for the sync; its failure is the log's.
    pub async fn done(self) -> Result<(), StoreError> {
        self.sync.await.unwrap_or_else(|e| {
            Err(StoreError::Io {
                path: self.path,
                source: std::io::Error::other(e),
            })
        })
    }

    /// The same sync, for several waiters.
    fn shared(self) -> SharedSync {
        let path = self.path.clone();
        let sync = async move { self.done().await.map_err(Arc::new) };
        SharedSync {
            sync: futures::FutureExt::shared(Box::pin(sync)),
            path,
        }
    }
}

/// A sync that several tasks wait for: a response's `task` calls, made durable while their
/// children start.
#[derive(Clone)]
pub(crate) struct SharedSync {
    sync: futures::future::Shared<futures::future::BoxFuture<'static, Result<(), Arc<StoreError>>>>,
    path: std::path::PathBuf,
}

impl SharedSync {
    /// Waits for the sync (at once when it is over); its failure is the log's.
    pub async fn done(self) -> Result<(), StoreError> {
        self.sync.await.map_err(|e| StoreError::Io {
            path: self.path,
            source: std::io::Error::other(e.to_string()),
        })
    }
}

/// The owner's handle on an open session: its task's, and no one else's (it is not `Clone`;
/// a turn gets a [`Recorder`]).
pub(crate) struct Session {
    core: Arc<Mutex<SessionCore>>,
}

impl Session {
    pub fn new(
        state: SessionState,
        log: LogWriter,
        extra_tools: Option<Arc<dyn ToolProvider>>,
    ) -> Self {
        let context_tokens = state.context_tokens;
        Self {
            core: Arc::new(Mutex::new(SessionCore {
                state,
                log,
                sandbox_warned: Default::default(),
                command_gate: Default::default(),
                extensions: Default::default(),
                extra_tools,
                disk_changes: Default::default(),
                context_tokens,
                nested_instructions: Default::default(),
                turn_usage: Default::default(),
                background_syncs: None,
                calls_sync: None,
            })),
        }
    }

    /// From now on the log's syncs run on the blocking pool instead of on the writer's path (a
    /// subagent's log, so that its parent's turn does not wait for each of them); [`Self::durable`]
    /// waits for them. Needs a Tokio runtime.
    pub fn sync_in_background(&self) {
        self.lock().background_syncs.get_or_insert_with(Vec::new);
    }

    /// Waits until everything the log was given is durable: its background syncs, and one more
    /// for what was written since the last. The first failure is the answer.
    pub async fn durable(&self) -> Result<(), StoreError> {
        let running = {
            let mut core = self.lock();
            // The last sync runs here, as a foreground log's does: the caller waits for it
            // anyway, and the hops to the blocking pool and back cost more than they spare.
            core.log.sync()?;
            core.background_syncs.as_mut().map(std::mem::take)
        };
        let mut first = Ok(());
        for sync in running.unwrap_or_default() {
            let done = sync.done().await;
            if first.is_ok() {
                first = done;
            }
        }
        first
    }

    /// The same session, for a recorder.
    fn share(&self) -> Session {
        Session {
            core: self.core.clone(),
        }
    }

    /// The one place that locks a session's state. A panic while holding the lock leaves
    /// consistent data behind (every mutation is a single append + fold), so a poisoned lock is
    /// still usable.
    fn lock(&self) -> MutexGuard<'_, SessionCore> {
        self.core
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Reads the state (settings, replay, ...).
    pub fn read<R>(&self, f: impl FnOnce(&SessionState) -> R) -> R {
        f(&self.lock().state)
    }

    /// Records entries that belong together (one settings change), then syncs. On a failed
    /// write the entries before it stay recorded, as the log has them.
    pub fn record_all(&self, entries: Vec<EntryKind>) -> Result<(), StoreError> {
        let mut core = self.lock();
        for e in entries {
            core.record(e)?;
        }
        if let Err(e) = core.sync_log() {
            tracing::error!(error = %e, "could not sync session log");
        }
        Ok(())
    }

    /// What the turn's model calls used, counted from zero again: called as a turn starts and
    /// as it ends.
    pub fn take_turn_usage(&self) -> crate::usage::Usage {
        std::mem::take(&mut self.lock().turn_usage)
    }

    /// Records the end of a turn and syncs. Failures are logged: the turn is over either way,
    /// and its answer must still go out.
    pub fn end_turn(&self, outcome: &TurnOutcome) {
        let mut core = self.lock();
        let entry = EntryKind::TurnEnd {
            stop: outcome.stop,
            failure: outcome.failure.clone(),
        };
        if let Err(e) = core.record(entry) {
            tracing::error!(session = %core.state.id, error = %e, "could not record the end of a turn");
        }
        if let Err(e) = core.sync_log() {
            tracing::error!(session = %core.state.id, error = %e, "could not sync session log");
        }
    }

    pub fn sync(&self) -> Result<(), StoreError> {
        self.lock().sync_log()
    }

    /// Starts a sync of everything the log was given on the blocking pool and returns it to be
    /// waited for (`None`: nothing to sync, or a log synced in the background anyway, which
    /// [`Self::durable`] waits for).
    pub fn start_sync(&self) -> Result<Option<RunningSync>, StoreError> {
        let mut core = self.lock();
        if core.background_syncs.is_some() {
            core.sync_log()?;
            return Ok(None);
        }
        core.start_sync()
    }

    /// Starts a sync of a response's `task` calls without waiting for it: their children wait
    /// for it ([`Self::calls_sync`]) before anything of theirs acts. A log synced in the
    /// background starts one more of its background syncs instead.
    pub fn start_calls_sync(&self) -> Result<(), StoreError> {
        let mut core = self.lock();
        if core.background_syncs.is_some() {
            return core.sync_log();
        }
        if let Some(sync) = core.start_sync()? {
            core.calls_sync = Some(sync.shared());
        }
        Ok(())
    }

    /// The last sync [`Self::start_calls_sync`] started (it may be over).
    pub fn calls_sync(&self) -> Option<SharedSync> {
        self.lock().calls_sync.clone()
    }

    /// Takes that sync back once the calls it covered are over (a failed one must not fail the
    /// session's later responses too).
    pub fn take_calls_sync(&self) -> Option<SharedSync> {
        self.lock().calls_sync.take()
    }

    /// Gives the log's descriptor (and OS lock) back until the next write.
    pub fn release(&self) -> Result<(), StoreError> {
        self.lock().log.release()
    }

    /// The MCP servers, to ask for their prompts.
    pub fn extra_tools(&self) -> Option<Arc<dyn ToolProvider>> {
        self.lock().extra_tools.clone()
    }

    /// The MCP servers, taken to be stopped (close).
    pub fn take_extra_tools(&self) -> Option<Arc<dyn ToolProvider>> {
        self.lock().extra_tools.take()
    }

    /// The writer for one turn (`turn`) or for events outside a turn (`None`).
    pub fn recorder(&self, events: mpsc::Sender<SessionEvent>, turn: Option<TurnId>) -> Recorder {
        let id = self.read(|s| s.id.clone());
        Recorder::new(self.share(), events, id, turn)
    }
}

/// What a turn reads once, when it starts.
fn turn_start(core: &SessionCore) -> TurnStart {
    let s = &core.state;
    TurnStart {
        first_prompt: s.title.is_none(),
        roots: s.workspace_roots(),
        cwd: s.cwd.clone(),
        harness: s.harness,
        model: s.model.clone(),
        effort: s.effort,
        web_search: s.web_search,
        extra_tools: core.extra_tools.clone(),
        sandbox_warned: core.sandbox_warned.clone(),
        command_gate: core.command_gate.clone(),
        extensions: core.extensions.clone(),
        agent: s.agent.clone(),
        client_prompt: s.system_prompt.clone(),
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) mod testing {
    //! A session on a temporary store, for unit tests of what writes through a recorder.

    use super::*;
    use crate::events::Event;
    use crate::ids::SessionId;
    use crate::log::{Header, SessionStore};
    use crate::modes::Harness;
    use std::path::PathBuf;

    pub(crate) struct TestSession {
        pub recorder: Recorder,
        pub events: mpsc::Receiver<SessionEvent>,
        pub home: tempfile::TempDir,
    }

    impl TestSession {
        /// A `code` session over `cwd`.
        pub fn new(cwd: PathBuf) -> Self {
            let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            let header = Header::new(SessionId::generate(), cwd, vec![], Harness::Code, None);
            let log = SessionStore::new(home.path())
                .create(&header)
                .unwrap_or_else(|e| panic!("{e}"));
            let session = Session::new(SessionState::new(&header), log, None);
            let (tx, events) = mpsc::channel(4096);
            let recorder = session.recorder(tx, Some(TurnId(1)));
            Self {
                recorder,
                events,
                home,
            }
        }

        pub fn drain_events(&mut self) -> Vec<Event> {
            let mut out = vec![];
            while let Ok(ev) = self.events.try_recv() {
                out.push(ev.event);
            }
            out
        }
    }
}
