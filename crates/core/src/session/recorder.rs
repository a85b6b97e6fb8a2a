//! The turn's writer: records entries (log first, then the state) and sends the editor events,
//! in that order. It reads only what a turn needs of the state, one question per method.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use futures::future::BoxFuture;
use tokio::sync::mpsc;

use super::relay::Relay;
use super::{Session, turn_start};
use crate::content::{PlanEntry, ToolCallUpdateView, ToolCallView};
use crate::events::{Event, SessionEvent};
use crate::ids::{SessionId, TurnId};
use crate::log::{EntryKind, StoreError};
use crate::mcp::ToolProvider;
use crate::model::{Message, Usage};
use crate::modes::{Effort, Harness, Mode};
use crate::state::SessionState;

/// What a turn takes from the session once, at its start.
pub(crate) struct TurnStart {
    /// No title yet: this prompt names the session.
    pub first_prompt: bool,
    pub roots: Vec<PathBuf>,
    pub cwd: PathBuf,
    pub harness: Harness,
    pub model: Option<String>,
    pub effort: Effort,
    pub web_search: bool,
    pub extra_tools: Option<Arc<dyn ToolProvider>>,
    pub sandbox_warned: Arc<AtomicBool>,
    /// Shared by the session's turns and subagents (`crate::clientfs::CommandGate`).
    pub command_gate: crate::clientfs::CommandGate,
    pub extensions: Arc<crate::hooks::SessionFlags>,
    /// The custom agent the user chose for the session.
    pub agent: Option<String>,
    /// The client's system-level instructions (ACP `systemPrompt`).
    pub client_prompt: Option<crate::prompt::ClientPrompt>,
}

/// Writes entries to the log (folding them into the state) and sends events to the editor.
pub(crate) struct Recorder {
    session: Session,
    events: mpsc::Sender<SessionEvent>,
    id: SessionId,
    turn: Option<TurnId>,
    /// A tool call the editor is not shown as a card (`update_plan`: its `plan` update is it).
    hidden_call: Option<String>,
    /// A subagent's session: where its events go (`super::relay`).
    relay: Option<Arc<Relay>>,
}

impl Clone for Recorder {
    fn clone(&self) -> Self {
        Recorder {
            session: self.session.share(),
            events: self.events.clone(),
            id: self.id.clone(),
            turn: self.turn,
            hidden_call: self.hidden_call.clone(),
            relay: self.relay.clone(),
        }
    }
}

impl Recorder {
    pub(super) fn new(
        session: Session,
        events: mpsc::Sender<SessionEvent>,
        id: SessionId,
        turn: Option<TurnId>,
    ) -> Self {
        Self {
            session,
            events,
            id,
            turn,
            hidden_call: None,
            relay: None,
        }
    }

    /// The recorder of subagent session `child`, started by this recorder's turn: its events
    /// go where `relay` sends them, outside any prompt's turn.
    pub fn for_child(&self, child: &Session, relay: Relay) -> Recorder {
        Recorder {
            session: child.share(),
            events: self.events.clone(),
            id: child.read(|s| s.id.clone()),
            turn: None,
            hidden_call: None,
            relay: Some(Arc::new(relay)),
        }
    }

    /// The subagent's relay, for a subagent's session.
    pub fn relay(&self) -> Option<&Relay> {
        self.relay.as_deref()
    }

    /// Where the editor is asked about `call`, and the card it is asked about: this session and
    /// the call, or for a subagent the client does not show, the parent and its `task` card
    /// (naming the call).
    pub fn asked_about(&self, call: &ToolCallView) -> (SessionId, ToolCallView) {
        match &self.relay {
            Some(r) if !r.shown => (
                r.parent.id.clone(),
                ToolCallView {
                    title: format!("{} — {}", r.card.title, call.title),
                    ..r.card.clone()
                },
            ),
            _ => (self.id.clone(), call.clone()),
        }
    }

    /// The session the editor knows this one by: a subagent the client does not show borrows
    /// its parent's (for the editor's file system and questions).
    pub(super) fn client_session(&self) -> &SessionId {
        match &self.relay {
            Some(r) if !r.shown => &r.parent.id,
            _ => &self.id,
        }
    }

    pub fn session_id(&self) -> &SessionId {
        &self.id
    }

    /// The same recorder, minus the card of tool call `id`.
    pub fn hiding_call(&self, id: &str) -> Recorder {
        Recorder {
            hidden_call: Some(id.to_owned()),
            ..self.clone()
        }
    }

    pub fn record(&self, kind: EntryKind) -> Result<u64, StoreError> {
        self.session.lock().record(kind)
    }

    pub fn sync(&self) -> Result<(), StoreError> {
        self.session.sync()
    }

    /// Starts the sync of a response's `task` calls without waiting for it
    /// ([`crate::session::Session::start_calls_sync`]).
    pub fn start_calls_sync(&self) -> Result<(), StoreError> {
        self.session.start_calls_sync()
    }

    /// Waits until the `task` calls that led to this session are durable: its own last ones,
    /// and, for a subagent's session, its parent's (and theirs). A subagent waits for this
    /// before anything of its own acts (a hook, a tool call), and before its end is recorded,
    /// so that the parent's call is durable before any of its effects.
    pub async fn calls_durable(&self) -> Result<(), StoreError> {
        let mut syncs = Vec::new();
        let mut rec = Some(self);
        while let Some(r) = rec {
            syncs.extend(r.session.calls_sync());
            rec = r.relay.as_ref().map(|relay| &relay.parent);
        }
        for sync in syncs {
            sync.done().await?;
        }
        Ok(())
    }

    /// Waits for the sync of this session's last `task` calls, once they have run, and lets it
    /// go: its failure is this response's, not a later one's.
    pub async fn end_calls_sync(&self) -> Result<(), StoreError> {
        match self.session.take_calls_sync() {
            Some(sync) => sync.done().await,
            None => Ok(()),
        }
    }

    /// Starts a sync without waiting for it ([`crate::session::Session::start_sync`]).
    pub fn start_sync(&self) -> Result<Option<crate::session::RunningSync>, StoreError> {
        self.session.start_sync()
    }

    /// Records `kind` unless `skip` says the state forbids it, in one section of the lock (a
    /// generated title against one the user set meanwhile). Whether it was recorded.
    pub fn record_unless(
        &self,
        kind: EntryKind,
        skip: impl FnOnce(&SessionState) -> bool,
    ) -> Result<bool, StoreError> {
        let mut core = self.session.lock();
        if skip(&core.state) {
            return Ok(false);
        }
        core.record(kind)?;
        core.log.sync()?;
        Ok(true)
    }

    pub async fn emit(&self, event: Event) {
        if let (Some(hidden), Event::ToolCall(ToolCallView { id, .. }))
        | (Some(hidden), Event::ToolCallUpdate(ToolCallUpdateView { id, .. })) =
            (&self.hidden_call, &event)
            && hidden == id
        {
            return;
        }
        if let Some(relay) = &self.relay {
            let ev = SessionEvent {
                session: self.id.clone(),
                turn: self.turn,
                event,
            };
            return relay.pass(ev).await;
        }
        self.send(self.id.clone(), event).await;
    }

    /// Passes on another recorder's event as it is (a subagent's, outside any turn).
    pub(super) async fn forward(&self, ev: SessionEvent) {
        let _ = self.events.send(ev).await;
    }

    /// Sends `event` as `session`'s, in this recorder's turn.
    pub(super) async fn send(&self, session: SessionId, event: Event) {
        let ev = SessionEvent {
            session,
            turn: self.turn,
            event,
        };
        // The receiver is gone only when the server is shutting down; nothing to tell then.
        let _ = self.events.send(ev).await;
    }

    /// Reads the state: for what a turn asks rarely (settings after a mode change).
    pub fn read<R>(&self, f: impl FnOnce(&SessionState) -> R) -> R {
        self.session.read(f)
    }

    /// What the turn needs to know of the session when it starts.
    pub fn start(&self) -> TurnStart {
        turn_start(&self.session.lock())
    }

    /// The session's mode now: the editor or an approved `exit_plan` may change it mid-turn.
    pub fn mode(&self) -> Mode {
        self.read(|s| s.mode)
    }

    /// The conversation as the model is sent it.
    pub fn model_messages(&self) -> Vec<Message> {
        self.read(SessionState::model_messages)
    }

    /// Tokens in context after the last model call of this process (0 before one).
    pub fn context_tokens(&self) -> u64 {
        self.session.lock().context_tokens
    }

    /// Records a model call's usage; `context_tokens` is what the context holds now. Returns
    /// the session's running cost.
    pub fn record_usage(
        &self,
        model: &str,
        usage: Usage,
        context_tokens: u64,
        cost_usd: Option<f64>,
    ) -> Result<Option<f64>, StoreError> {
        let mut core = self.session.lock();
        core.record(EntryKind::Usage {
            model: model.to_owned(),
            usage: Box::new(usage),
            context_tokens,
            cost_usd,
        })?;
        core.context_tokens = context_tokens;
        core.turn_usage.add(&usage);
        let cost = core.state.cost_usd;
        drop(core);
        // A subagent's spending counts in its parent's cost too.
        if let Some(relay) = &self.relay {
            relay
                .parent
                .record_side_usage(model, usage, cost_usd, true)?;
        }
        Ok(cost)
    }

    /// Records the usage of a call made beside the conversation (a subagent's, a title's): it
    /// counts in the cost and leaves the context as it is. `in_turn`: it counts in the running
    /// turn's usage too (a subagent works within its parent's turn; a title is written after
    /// a turn ended and belongs to none).
    pub fn record_side_usage(
        &self,
        model: &str,
        usage: Usage,
        cost_usd: Option<f64>,
        in_turn: bool,
    ) -> Result<(), StoreError> {
        let mut core = self.session.lock();
        let context_tokens = core.state.context_tokens;
        if in_turn {
            core.turn_usage.add(&usage);
        }
        core.record(EntryKind::Usage {
            model: model.to_owned(),
            usage: Box::new(usage),
            context_tokens,
            cost_usd,
        })
        .map(drop)
    }

    /// The instructions of nested packages that `paths` are in, the first time each is met.
    pub fn nested_instructions(
        &self,
        own: &crate::own_files::OwnFiles,
        paths: &[PathBuf],
        cwd: &Path,
        roots: &[PathBuf],
    ) -> Option<String> {
        self.session
            .lock()
            .nested_instructions
            .for_paths(own, paths, cwd, roots)
    }
}

/// What a tool may do to its session (`crate::tools::CallRecorder`).
impl crate::tools::CallRecorder for Recorder {
    fn session(&self) -> &SessionId {
        self.client_session()
    }

    fn progress(&self, update: ToolCallUpdateView) -> BoxFuture<'_, ()> {
        Box::pin(self.emit(Event::ToolCallUpdate(update)))
    }

    fn plan(&self, entries: Vec<PlanEntry>) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            self.record(EntryKind::Plan {
                entries: entries.clone(),
            })
            .map_err(|e| e.to_string())?;
            self.emit(Event::Plan { entries }).await;
            Ok(())
        })
    }

    fn wrote(&self, path: &Path) {
        self.session
            .lock()
            .disk_changes
            .written
            .insert(path.to_owned());
    }

    fn command_started(&self) {
        self.session
            .lock()
            .disk_changes
            .commands_since
            .get_or_insert_with(std::time::SystemTime::now);
    }

    fn read_from_client(
        &self,
        policy: crate::config::FsDelegation,
        available: bool,
        path: &Path,
        roots: &[PathBuf],
    ) -> bool {
        let core = self.session.lock();
        crate::clientfs::use_client(policy, available, path, roots, &core.disk_changes)
    }
}
