//! The session task: owns a session's state and log, takes ops from its queue one at a time,
//! and supervises the turn it starts.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::error::RuntimeError;
use super::supervisor::{TurnEnd, send_turn_end};
use super::{CANCEL_GRACE, CLOSE_GRACE, Op, Services, Snapshot, settings_for, usage_for};
use crate::catalog::Catalog;
use crate::events::{
    Event, Refusal, SessionEvent, SettingChange, Settings, TurnOptions, TurnOutcome,
};
use crate::failure::FailureKind;
use crate::ids::{SessionId, TurnId};
use crate::log::{EntryKind, StopReason};
use crate::modes::{Effort, Mode};
use crate::session::Session;
use crate::state::SessionState;
use crate::turn::{TurnRequest, run_turn};

/// How often a session looks for added, changed or removed prompt files (a few `stat`s).
const COMMANDS_POLL: Duration = Duration::from_secs(2);

pub(super) struct SessionCtx {
    pub catalog: Catalog,
    pub ceiling: Mode,
    /// `(name, description)` of the custom agents the user may choose in this workspace.
    pub agents: Vec<(String, String)>,
    /// The session's language servers (`crate::lsp`): none runs until an edit needs it; all
    /// stop when the session closes.
    pub lsp: Option<Arc<dyn crate::lsp::LanguageServers>>,
}

impl SessionCtx {
    pub(super) fn settings(&self, state: &SessionState) -> Settings {
        settings_for(state, &self.catalog, self.ceiling, &self.agents)
    }

    pub(super) fn usage(&self, state: &SessionState) -> Event {
        usage_for(state, &self.catalog)
    }

    /// Validates a change against the session and returns the entries that record it.
    /// A new model, and the choices it cannot honour set back rather than failing later.
    fn model_change(&self, state: &SessionState, id: &str) -> Result<Vec<EntryKind>, Refusal> {
        let info = self
            .catalog
            .resolve(id)
            .map_err(|e| Refusal::Invalid(e.to_string()))?;
        let mut out = vec![EntryKind::Model {
            model: id.to_owned(),
        }];
        if !info.takes_effort() && state.effort != Effort::Default {
            out.push(EntryKind::Effort {
                effort: Effort::Default,
            });
        }
        if !info.web_search && state.web_search {
            out.push(EntryKind::WebSearch { enabled: false });
        }
        Ok(out)
    }

    fn plan_change(
        &self,
        state: &SessionState,
        change: &SettingChange,
    ) -> Result<Vec<EntryKind>, Refusal> {
        let current_model = state
            .model
            .as_deref()
            .and_then(|m| self.catalog.resolve(m).ok());
        match change {
            SettingChange::Agent(agent) => {
                if let Some(name) = agent
                    && !self.agents.iter().any(|(n, _)| n == name)
                {
                    return Err(Refusal::Invalid(format!("there is no agent `{name}` here")));
                }
                Ok(vec![EntryKind::Agent {
                    agent: agent.clone(),
                }])
            }
            SettingChange::Mode(m) => {
                if *m > self.ceiling {
                    return Err(Refusal::Invalid(format!(
                        "mode `{m}` is above this session's ceiling `{}`",
                        self.ceiling
                    )));
                }
                Ok(vec![EntryKind::Mode { mode: *m }])
            }
            SettingChange::Model(id) => self.model_change(state, id),
            SettingChange::Effort(e) => {
                if *e != Effort::Default
                    && current_model.as_ref().is_some_and(|m| !m.takes_effort())
                {
                    return Err(Refusal::Invalid(format!(
                        "model `{}` does not take a reasoning effort",
                        state.model.as_deref().unwrap_or_default()
                    )));
                }
                Ok(vec![EntryKind::Effort { effort: *e }])
            }
            SettingChange::WebSearch(on) => {
                if *on && !current_model.as_ref().is_some_and(|m| m.web_search) {
                    return Err(Refusal::Invalid(format!(
                        "model `{}` has no hosted web search",
                        state.model.as_deref().unwrap_or("(none)")
                    )));
                }
                Ok(vec![EntryKind::WebSearch { enabled: *on }])
            }
            // Recorded only when they change: a client sends them again on every load.
            SettingChange::Directories(dirs) if *dirs == state.additional_directories => Ok(vec![]),
            SettingChange::Directories(dirs) => {
                for d in dirs {
                    super::view::check_dir(d, "additionalDirectories")
                        .map_err(|e| Refusal::Invalid(e.to_string()))?;
                }
                Ok(vec![EntryKind::Directories {
                    additional_directories: dirs.clone(),
                }])
            }
            SettingChange::SystemPrompt(p) if state.system_prompt.as_ref() == Some(p) => Ok(vec![]),
            SettingChange::SystemPrompt(p) => {
                Ok(vec![EntryKind::SystemPrompt { prompt: p.clone() }])
            }
            SettingChange::Title(t) => Ok(vec![EntryKind::Title {
                title: t.clone(),
                by: Some(crate::log::TitleBy::User),
            }]),
        }
    }
}

struct Running {
    id: TurnId,
    cancel: CancellationToken,
    /// Steering messages for the turn.
    inbox: crate::steering::Inbox,
    handle: JoinHandle<TurnOutcome>,
    deadline: Option<Instant>,
    ended: TurnEnd,
}

impl Drop for Running {
    /// If the session task goes away (even by panicking), its turn goes with it: no model
    /// stream or command outlives the session that started it.
    fn drop(&mut self) {
        self.handle.abort();
    }
}

enum RunningEnd {
    Finished(Result<TurnOutcome, tokio::task::JoinError>),
    DeadlinePassed,
}

async fn wait_running(running: &mut Option<Running>) -> RunningEnd {
    let Some(r) = running.as_mut() else {
        return std::future::pending().await;
    };
    match r.deadline {
        Some(d) => tokio::select! {
            res = &mut r.handle => RunningEnd::Finished(res),
            () = tokio::time::sleep_until(d) => RunningEnd::DeadlinePassed,
        },
        None => RunningEnd::Finished((&mut r.handle).await),
    }
}

pub(super) async fn session_task(
    core: Session,
    ctx: SessionCtx,
    mut ops: mpsc::Receiver<Op>,
    services: Arc<Services>,
    events: mpsc::Sender<SessionEvent>,
) {
    let (session, cwd) = core.read(|s| (s.id.clone(), s.cwd.clone()));
    let commands_seen = crate::commands::fingerprint(&services.home, services.env.home(), &cwd);
    let mut task = SessionTask {
        core,
        ctx,
        services,
        events,
        session,
        cwd,
        running: None,
        queued: std::collections::VecDeque::new(),
        cancelled: Vec::new(),
        background: Default::default(),
        commands_seen,
        mcp_prompts_seen: Vec::new(),
        title_job: None,
    };
    let mut commands_tick = tokio::time::interval(COMMANDS_POLL);
    commands_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let closed_reply = loop {
        tokio::select! {
            op = ops.recv() => match op {
                None => break None,
                Some(Op::Close { reply }) => {
                    task.close().await;
                    break Some(reply);
                }
                Some(op) => task.take(op).await,
            },
            end = wait_running(&mut task.running) => task.turn_ended(end).await,
            () = task.background.ended() => task.show_ended().await,
            _ = commands_tick.tick() => task.poll_commands().await,
        }
    };
    // Dropping the session closes the log file and releases its lock; only then is the close
    // answered, so the session can be reopened at once.
    let SessionTask {
        core, session, ctx, ..
    } = task;
    if let Some(servers) = ctx.lsp
        && tokio::time::timeout(CLOSE_GRACE, servers.shutdown())
            .await
            .is_err()
    {
        tracing::warn!(session = %session, "language servers did not stop in time");
    }
    let extra_tools = core.take_extra_tools();
    if let Some(provider) = extra_tools
        && tokio::time::timeout(CLOSE_GRACE, provider.shutdown())
            .await
            .is_err()
    {
        tracing::warn!(session = %session, "MCP servers did not stop in time");
    }
    drop(core);
    if let Some(reply) = closed_reply {
        let _ = reply.send(());
    }
}

/// What the session task holds: the session (its only owner), the settings context, and the
/// turn it runs, if any.
struct SessionTask {
    core: Session,
    ctx: SessionCtx,
    services: Arc<Services>,
    events: mpsc::Sender<SessionEvent>,
    session: SessionId,
    cwd: std::path::PathBuf,
    running: Option<Running>,
    /// Prompts that came while a turn ran, each started when the one before it ended.
    queued: std::collections::VecDeque<Queued>,
    /// Queued prompts a cancel ended, answered once the running turn has been.
    cancelled: Vec<Queued>,
    /// The session's background commands: stopped when it closes.
    background: crate::background::BackgroundJobs,
    /// The prompt files as last seen, to tell the editor when its commands changed.
    commands_seen: Vec<(std::path::PathBuf, u64, Option<std::time::SystemTime>)>,
    /// The MCP servers' prompts as last sent.
    mcp_prompts_seen: Vec<crate::mcp::McpPrompt>,
    /// The title being generated (`super::title`); once started, never again in this process.
    title_job: Option<JoinHandle<()>>,
}

/// A prompt taken while another turn ran: admitted (its `TurnEnded` is owed), not started.
struct Queued {
    req: TurnRequest,
    turn: TurnId,
    ended: TurnEnd,
}

/// Prompts that may wait behind a running turn; one more is refused as busy.
const MAX_QUEUED: usize = 16;

/// The inbox of a turn's steering messages. A rewind reads none: steering meanwhile is told to
/// send a prompt, which then waits behind the rewind.
fn inbox_for(options: &crate::events::TurnOptions) -> crate::steering::Inbox {
    let inbox = crate::steering::Inbox::default();
    if options.rewind.is_some() {
        inbox.close();
    }
    inbox
}

impl SessionTask {
    /// One op from the queue (all but `Close`, which ends the task).
    async fn take(&mut self, op: Op) {
        match op {
            Op::Prompt {
                content,
                options,
                turn,
                reply,
                ended,
            } => {
                let req = TurnRequest {
                    inbox: inbox_for(&options),
                    content,
                    options,
                    background: self.background.clone(),
                    lsp: self.ctx.lsp.clone(),
                };
                self.take_prompt(req, turn, reply, ended);
            }
            Op::Cancel => {
                // A cancel stops the running turn and every prompt queued behind it; those are
                // answered right after the running turn, so the answers keep the prompts' order.
                // A prompt sent after the cancel still runs.
                self.cancelled.extend(self.queued.drain(..));
                if let Some(r) = self.running.as_mut() {
                    r.cancel.cancel();
                    r.deadline
                        .get_or_insert_with(|| Instant::now() + CANCEL_GRACE);
                }
            }
            Op::Steer { content, reply } => {
                let steered = match self.running.as_ref() {
                    Some(r) if r.deadline.is_none() => r.inbox.push(content),
                    _ => crate::steering::Steered::NoRunningTurn,
                };
                let _ = reply.send(steered);
            }
            Op::Change { change, reply } => {
                let result = apply_change(&self.core, &mut self.ctx, &change);
                let _ = reply.send(result);
            }
            Op::Release => {
                if self.running.is_none()
                    && let Err(e) = self.core.release()
                {
                    tracing::warn!(session = %self.session, error = %e, "could not release an idle session's log");
                }
            }
            Op::Snapshot { reply } => {
                // A load answered before the title is written would get its update after the
                // answer: wait for it (bounded), else give it up.
                super::title::settle(&mut self.title_job).await;
                let running = self.running.is_some();
                let mcp_prompts = self.mcp_prompts();
                let _ = reply.send(self.core.read(|state| Snapshot {
                    settings: self.ctx.settings(state),
                    usage: self.ctx.usage(state),
                    replay: state.replay(),
                    parent: state.parent.clone(),
                    title: state.title.clone(),
                    cwd: state.cwd.clone(),
                    running,
                    mcp_prompts,
                }));
            }
            Op::Refresh => {
                refresh_catalog(
                    &self.core,
                    &mut self.ctx,
                    &self.services,
                    &self.events,
                    &self.session,
                )
                .await;
            }
            // Handled by the loop: it ends the task.
            Op::Close { reply } => drop(reply),
        }
    }

    /// A background command ended: an idle session shows the user at once (a running turn
    /// tells both the model and the user at its next request).
    async fn show_ended(&mut self) {
        if self.running.is_some() {
            return;
        }
        for ended in self.background.take_unshown() {
            let ev = SessionEvent {
                session: self.session.clone(),
                turn: None,
                event: crate::turn::ended_notice(&ended),
            };
            let _ = self.events.send(ev).await;
        }
    }

    /// Takes a prompt: refuses it (bad options, too many waiting), queues it behind the running
    /// turn, or starts its turn.
    fn take_prompt(
        &mut self,
        req: TurnRequest,
        turn: TurnId,
        reply: tokio::sync::oneshot::Sender<Result<(), Refusal>>,
        ended: TurnEnd,
    ) {
        tracing::debug!(session = %self.session, "taking a prompt");
        if let Some(refusal) = self
            .core
            .read(|state| check_turn_options(&self.ctx, state, &req.options))
        {
            let _ = reply.send(Err(refusal));
            return;
        }
        if self.running.is_some() && self.queued.len() >= MAX_QUEUED {
            let _ = reply.send(Err(Refusal::QueueFull(MAX_QUEUED)));
            return;
        }
        if reply.send(Ok(())).is_err() {
            // The supervisor gave up waiting and answered the prompt already.
            return;
        }
        if self.running.is_some() {
            self.queued.push_back(Queued { req, turn, ended });
            return;
        }
        self.start_turn(req, turn, ended);
    }

    /// Starts a turn as a child task.
    fn start_turn(&mut self, req: TurnRequest, turn: TurnId, ended: TurnEnd) {
        super::memory::turn_started();
        let cancel = CancellationToken::new();
        // Calls made between turns (none today) are no turn's.
        self.core.take_turn_usage();
        let rec = self.core.recorder(self.events.clone(), Some(turn));
        let inbox = req.inbox.clone();
        let handle = tokio::spawn(run_turn(self.services.clone(), rec, req, cancel.clone()));
        self.running = Some(Running {
            id: turn,
            cancel,
            inbox,
            handle,
            deadline: None,
            ended,
        });
    }

    /// The running turn's task ended (or ignored its cancel for too long): its end is recorded
    /// and sent.
    async fn turn_ended(&mut self, end: RunningEnd) {
        let Some(r) = self.running.take() else { return };
        let outcome = match end {
            RunningEnd::Finished(Ok(outcome)) => outcome,
            RunningEnd::Finished(Err(e)) => {
                tracing::error!(session = %self.session, error = %e, "turn task failed");
                TurnOutcome::failed(
                    FailureKind::Internal,
                    "The turn stopped unexpectedly (an internal error); the session is intact and you can continue.",
                )
            }
            RunningEnd::DeadlinePassed => {
                tracing::warn!(session = %self.session, "turn ignored cancel; aborting it");
                r.handle.abort();
                TurnOutcome::ended(StopReason::Cancelled)
            }
        };
        // A cancelled or failed turn earns no title: nothing may follow a cancelled prompt's
        // answer (ACP), and the next turn that ends well starts one.
        let titled = outcome.stop == StopReason::EndTurn && outcome.failure.is_none();
        finish_turn(&self.core, &self.events, &self.session, &r, outcome).await;
        drop(r);
        if titled {
            self.start_title();
        }
        self.cancel_queued().await;
        super::memory::turn_ended(self.services.release_memory);
        // The next prompt in line (its start counts as activity, so nothing is released).
        if let Some(next) = self.queued.pop_front() {
            self.start_turn(next.req, next.turn, next.ended);
        } else {
            // A command that ended after the turn's last request is shown now.
            self.show_ended().await;
        }
    }

    /// After the session's first turn: its title is written in the background.
    fn start_title(&mut self) {
        let text = self.core.read(super::title::wanted);
        let rec = self.core.recorder(self.events.clone(), None);
        let cwd = self.cwd.clone();
        super::title::start(&mut self.title_job, text, &self.services, rec, cwd);
    }

    /// Ends the queued prompts a cancel ended: none of them started, so nothing is recorded.
    async fn cancel_queued(&mut self) {
        for q in std::mem::take(&mut self.cancelled) {
            if q.ended.claim() {
                let outcome = TurnOutcome::ended(StopReason::Cancelled);
                send_turn_end(&self.events, &self.session, q.turn, outcome).await;
            }
            q.ended.mark();
        }
    }

    /// Closing: the queued prompts are cancelled, the running turn is cancelled (aborted after
    /// the grace) and ended; the log is flushed.
    async fn close(&mut self) {
        // Background commands stop while the turn winds down, within the close's grace.
        let background = self.background.clone();
        let stopping = tokio::spawn(async move { background.stop_all().await });
        self.cancelled.extend(self.queued.drain(..));
        if let Some(mut r) = self.running.take() {
            r.cancel.cancel();
            let outcome = match tokio::time::timeout(CANCEL_GRACE, &mut r.handle).await {
                Ok(Ok(o)) => o,
                Ok(Err(_)) | Err(_) => {
                    r.handle.abort();
                    TurnOutcome::ended(StopReason::Cancelled)
                }
            };
            finish_turn(&self.core, &self.events, &self.session, &r, outcome).await;
        }
        self.cancel_queued().await;
        super::title::settle(&mut self.title_job).await;
        let _ = stopping.await;
        if let Err(e) = self.core.sync() {
            tracing::error!(session = %self.session, error = %e, "could not flush session log on close");
        }
    }

    /// The prompts of the session's MCP servers that are running now.
    fn mcp_prompts(&self) -> Vec<crate::mcp::McpPrompt> {
        self.core
            .extra_tools()
            .map(|servers| servers.prompts())
            .unwrap_or_default()
    }

    /// Tells the editor when its `/` commands changed: prompt files on disk, or the prompts of
    /// MCP servers (they start in the background, after the session's first list was sent).
    async fn poll_commands(&mut self) {
        let now =
            crate::commands::fingerprint(&self.services.home, self.services.env.home(), &self.cwd);
        let mcp_now = self.mcp_prompts();
        if now == self.commands_seen && mcp_now == self.mcp_prompts_seen {
            return;
        }
        self.commands_seen = now;
        let own = self.services.own_files(std::slice::from_ref(&self.cwd));
        let mut commands = crate::commands::available(&own, &self.cwd);
        crate::mcp::prompts::add_commands(&mut commands, &mcp_now);
        self.mcp_prompts_seen = mcp_now;
        let _ = self
            .events
            .send(SessionEvent {
                session: self.session.clone(),
                turn: None,
                event: Event::Commands { commands },
            })
            .await;
    }
}

/// Rebuilds the session's catalog (new provider listings) and sends the `model` option again
/// when what the editor shows changed.
async fn refresh_catalog(
    core: &Session,
    ctx: &mut SessionCtx,
    services: &Services,
    events: &mpsc::Sender<SessionEvent>,
    session: &SessionId,
) {
    let cwd = core.read(|s| s.cwd.clone());
    let catalog = match services.context(Some(&cwd)) {
        Ok((_, catalog)) => catalog,
        Err(e) => {
            tracing::warn!(session = %session, error = %e, "could not refresh the model list");
            return;
        }
    };
    let (before, after) = core.read(|state| {
        let before = ctx.settings(state);
        ctx.catalog = catalog;
        (before, ctx.settings(state))
    });
    if before != after {
        let _ = events
            .send(SessionEvent {
                session: session.clone(),
                turn: None,
                event: Event::SettingsChanged(after),
            })
            .await;
    }
}

fn check_turn_options(ctx: &SessionCtx, state: &SessionState, o: &TurnOptions) -> Option<Refusal> {
    let model_id = o.model.as_deref().or(state.model.as_deref());
    if let Some(m) = &o.model
        && let Err(e) = ctx.catalog.resolve(m)
    {
        return Some(Refusal::Invalid(e.to_string()));
    }
    let info = model_id.and_then(|m| ctx.catalog.resolve(m).ok());
    if let Some(e) = o.effort
        && e != Effort::Default
        && info.as_ref().is_some_and(|m| !m.takes_effort())
    {
        return Some(Refusal::Invalid(format!(
            "model `{}` does not take a reasoning effort",
            model_id.unwrap_or_default()
        )));
    }
    if o.web_search == Some(true) && !info.as_ref().is_some_and(|m| m.web_search) {
        return Some(Refusal::Invalid(format!(
            "model `{}` has no hosted web search",
            model_id.unwrap_or("(none)")
        )));
    }
    None
}

fn apply_change(
    core: &Session,
    ctx: &mut SessionCtx,
    change: &SettingChange,
) -> Result<Settings, RuntimeError> {
    let entries = core.read(|state| ctx.plan_change(state, change))?;
    // A log that cannot be written is ferrite's failure, not the request's.
    core.record_all(entries).map_err(RuntimeError::Store)?;
    Ok(core.read(|state| ctx.settings(state)))
}

async fn finish_turn(
    core: &Session,
    events: &mpsc::Sender<SessionEvent>,
    session: &SessionId,
    running: &Running,
    mut outcome: TurnOutcome,
) {
    outcome.usage = Some(core.take_turn_usage());
    core.end_turn(&outcome);
    // Unless the supervisor answered the turn already (the task was stuck after a cancel).
    if running.ended.claim() {
        send_turn_end(events, session, running.id, outcome).await;
    }
    // Right after the send, with no await between: the supervisor, which looks once the task is
    // gone, sees the mark whenever the `TurnEnded` was queued.
    running.ended.mark();
}
