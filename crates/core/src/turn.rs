//! The turn loop: send the conversation to the model, stream its answer to the editor, run the
//! tools it calls, feed the results back, until the model stops or `max_turn_requests`.

mod compact;
mod exit_plan;
mod permission;
mod sandbox;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::catalog::{Catalog, DefaultModel, NO_PROVIDER_MESSAGE};
use crate::checkpoints::TurnCheckpoint;
use crate::config::Config;
use crate::content::{ToolCallUpdateView, ToolCallView, ToolContent, ToolStatus, UserContent};
use crate::credentials::Credentials;
use crate::events::{Event, SessionEvent, TurnOptions, TurnOutcome};
use crate::exec::{CommandRunner, Sandbox};
use crate::ids::{SessionId, TurnId};
use crate::log::{EntryKind, LogWriter, StopReason, StoreError, TurnFailure, title_from};
use crate::mcp::ToolProvider;
use crate::model::{
    AssistantPart, HostedStatus, ModelError, ModelErrorKind, ModelEvent, ModelRequest, StopKind,
    TerminalStatus,
};
use crate::modes::Mode;
use crate::permissions::Approver;
use crate::runtime::Services;
use crate::state::SessionState;
use crate::tools::{OutputLimits, ToolContext, ToolError, ToolRegistry};

/// The state a session's task and its turn share. Locked only for short, non-async sections.
pub(crate) struct SessionCore {
    pub state: SessionState,
    pub log: LogWriter,
    /// Whether the user was told that commands run unsandboxed (once per session).
    pub sandbox_warned: Arc<std::sync::atomic::AtomicBool>,
    /// The session's MCP servers' tools.
    pub extra_tools: Option<Arc<dyn ToolProvider>>,
    /// Files the agent changed on disk, for the stale-buffer rule of contract §7.
    pub disk_changes: crate::clientfs::DiskChanges,
    /// Tokens in context after the last model call (0 until one happened in this process).
    pub context_tokens: u64,
}

pub(crate) fn lock(core: &Mutex<SessionCore>) -> MutexGuard<'_, SessionCore> {
    // A panic while holding the lock leaves consistent data behind (every mutation is a single
    // append + fold), so a poisoned lock is still usable.
    core.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Writes entries to the log (folding them into the state) and sends events to the editor.
pub struct Recorder {
    pub(crate) core: Arc<Mutex<SessionCore>>,
    pub(crate) events: mpsc::Sender<SessionEvent>,
    pub(crate) session: SessionId,
    pub(crate) turn: Option<TurnId>,
}

impl Recorder {
    pub fn record(&self, kind: EntryKind) -> Result<u64, StoreError> {
        let mut core = lock(&self.core);
        let seq = core.log.append(kind.clone())?;
        core.state.apply(kind);
        Ok(seq)
    }

    pub fn sync(&self) -> Result<(), StoreError> {
        lock(&self.core).log.sync()
    }

    /// Records that the agent wrote `path` (the editor's buffer of it is now stale).
    pub fn wrote(&self, path: &Path) {
        lock(&self.core)
            .disk_changes
            .written
            .insert(path.to_owned());
    }

    /// Records that a command is about to run (it may change any file).
    pub fn command_started(&self) {
        lock(&self.core)
            .disk_changes
            .commands_since
            .get_or_insert_with(std::time::SystemTime::now);
    }

    /// Whether `read` should take `path` from the editor (contract §7).
    pub fn read_from_client(
        &self,
        policy: crate::config::FsDelegation,
        available: bool,
        path: &Path,
        roots: &[PathBuf],
    ) -> bool {
        let core = lock(&self.core);
        crate::clientfs::use_client(policy, available, path, roots, &core.disk_changes)
    }

    pub async fn emit(&self, event: Event) {
        let ev = SessionEvent {
            session: self.session.clone(),
            turn: self.turn,
            event,
        };
        // The receiver is gone only when the server is shutting down; nothing to tell then.
        let _ = self.events.send(ev).await;
    }
}

/// The most text merged into one `agent_message_chunk` from deltas that arrived together.
const MERGE_LIMIT_BYTES: usize = 16 * 1024;

/// What every tool call of a turn shares.
pub(crate) struct CallEnv {
    pub tools: ToolRegistry,
    pub cwd: PathBuf,
    pub roots: Vec<PathBuf>,
    pub limits: OutputLimits,
    pub spill_dir: PathBuf,
    pub runner: Option<Arc<dyn CommandRunner>>,
    pub bash_timeout: Duration,
    pub sandbox_network: bool,
    pub home: PathBuf,
    /// FERRITE_HOME, which tools may not change and read only with the user's consent.
    pub protected: crate::protected::Protected,
    /// Rules from config; stored "always" rules are read at each call.
    pub allow: Vec<String>,
    pub deny: Vec<String>,
    /// `_meta.permission_mode = "ask"` for this turn.
    pub force_ask: bool,
    pub permission_timeout: Duration,
    pub approver: Option<Arc<dyn Approver>>,
    /// The session's mode ceiling (harness and `max_mode`).
    pub ceiling: Mode,
    pub catalog: Catalog,
    /// Whether this session was already told that commands run unsandboxed.
    pub sandbox_warned: Arc<std::sync::atomic::AtomicBool>,
    pub simulate_no_sandbox: bool,
    pub client_fs: Option<Arc<dyn crate::clientfs::ClientFs>>,
    pub fs_delegation: crate::config::FsDelegation,
    /// Keeps what the turn's tools are about to change, for `/undo`.
    pub checkpoint: Option<TurnCheckpoint>,
}

impl CallEnv {
    fn new(
        services: &Services,
        rec: &Recorder,
        config: &Config,
        catalog: &Catalog,
        cwd: &Path,
        roots: Vec<PathBuf>,
        force_ask: bool,
    ) -> Self {
        let harness = lock(&rec.core).state.harness;
        let spill_dir = services
            .store
            .dir()
            .join(rec.session.as_str())
            .join("tool-output");
        Self {
            tools: crate::tools::registry_for(harness),
            cwd: cwd.to_owned(),
            roots,
            limits: OutputLimits {
                max_bytes: config.tools.output_max_bytes,
                max_lines: config.tools.output_max_lines,
            },
            spill_dir: spill_dir.clone(),
            runner: services.runner.clone(),
            bash_timeout: Duration::from_secs(config.tools.bash_timeout_secs),
            sandbox_network: config.sandbox_network,
            home: services.home.clone(),
            protected: crate::protected::Protected::new(&services.home, &spill_dir),
            allow: config.permissions.allow.clone(),
            deny: config.permissions.deny.clone(),
            force_ask,
            permission_timeout: Duration::from_secs(config.permissions.timeout_secs),
            approver: services.approver.get().cloned(),
            ceiling: crate::runtime::ceiling(config, harness),
            catalog: catalog.clone(),
            sandbox_warned: lock(&rec.core).sandbox_warned.clone(),
            simulate_no_sandbox: services.faults.no_sandbox,
            client_fs: services.client_fs.get().cloned(),
            fs_delegation: config.fs_delegation,
            checkpoint: None,
        }
    }

    /// The session's mode now (an approved `exit_plan` changes it mid-turn).
    fn mode(&self, rec: &Recorder) -> Mode {
        lock(&rec.core).state.mode
    }

    /// The tools offered to the model for the next request.
    fn specs(&self, rec: &Recorder) -> Vec<crate::model::ToolSpec> {
        let mut specs = self.tools.specs();
        if self.mode(rec) == Mode::Plan && self.ceiling > Mode::Plan {
            specs.push(exit_plan::spec());
        }
        specs
    }
}

pub(crate) struct TurnRequest {
    pub content: Vec<UserContent>,
    pub options: TurnOptions,
}

/// Failure helper: the facts of §8 plus the text the user sees.
fn failure(status: TerminalStatus, kind: &str, message: impl Into<String>) -> TurnOutcome {
    TurnOutcome {
        stop: StopReason::EndTurn,
        failure: Some(TurnFailure {
            terminal_status: status,
            error_kind: crate::model::sanitize_error_kind(kind),
            message: message.into(),
        }),
    }
}

fn ended(stop: StopReason) -> TurnOutcome {
    TurnOutcome {
        stop,
        failure: None,
    }
}

/// Runs one turn to its outcome. The caller records `TurnEnd`, syncs and emits `TurnEnded`.
pub(crate) async fn run_turn(
    services: Arc<Services>,
    rec: Recorder,
    req: TurnRequest,
    cancel: CancellationToken,
) -> TurnOutcome {
    let checkpoint = TurnCheckpoint::new(&services.home, &rec.session);
    let outcome = match run_turn_inner(&services, &rec, req, &cancel, &checkpoint).await {
        Ok(outcome) => outcome,
        Err(e) => failure(
            TerminalStatus::Interrupted,
            "session_log_write",
            format!("The session log could not be written, so the turn was stopped: {e}"),
        ),
    };
    checkpoint.finish_turn(&rec).await;
    outcome
}

async fn run_turn_inner(
    services: &Services,
    rec: &Recorder,
    req: TurnRequest,
    cancel: &CancellationToken,
    checkpoint: &TurnCheckpoint,
) -> Result<TurnOutcome, StoreError> {
    let (first_prompt, roots) = {
        let core = lock(&rec.core);
        (core.state.title.is_none(), core.state.workspace_roots())
    };
    let content = crate::attachments::expand_links(req.content.clone(), &roots);
    let content = match roots.first() {
        Some(cwd) => crate::commands::expand(content, cwd),
        None => content,
    };
    let compact_request = compact::requested(&req.content);
    let checkpoint_command = crate::checkpoints::command::requested(&req.content);
    if compact_request.is_none() && checkpoint_command.is_none() {
        rec.record(EntryKind::UserMessage { content })?;
    }
    if services.faults.panic_turn {
        panic!("fault injection: the turn task panics");
    }
    if first_prompt
        && compact_request.is_none()
        && checkpoint_command.is_none()
        && let Some(title) = title_from(&req.content)
    {
        rec.record(EntryKind::Title {
            title: title.clone(),
        })?;
        rec.emit(Event::TitleChanged { title }).await;
    }

    let (cwd, session_model, session_effort, session_web) = {
        let core = lock(&rec.core);
        (
            core.state.cwd.clone(),
            core.state.model.clone(),
            core.state.effort,
            core.state.web_search,
        )
    };
    // Config and keys are re-read for every turn: a `ferrite login` or a config edit made while
    // the editor is open takes effect without restarting the agent.
    let config = match Config::load(&services.home, Some(&cwd)) {
        Ok(c) => c,
        Err(e) => {
            return Ok(failure(
                TerminalStatus::ConfigurationError,
                "config",
                e.to_string(),
            ));
        }
    };
    if let Some(command) = checkpoint_command {
        let run = crate::checkpoints::command::run(services, rec, &config, roots, command, cancel);
        return Ok(ended(run.await?));
    }
    checkpoint.configure(rec, roots.clone(), config.checkpoints);
    let creds = Credentials::load(&services.home).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "ignoring unreadable credentials");
        Credentials::default()
    });
    let catalog = Catalog::build(&config, &services.env, &creds);
    let model_id = match req.options.model.clone().or(session_model) {
        Some(m) => m,
        None => match catalog.default_model(&config, &services.env) {
            DefaultModel::Chosen(m) => m,
            DefaultModel::NoneConfigured => {
                return Ok(failure(
                    TerminalStatus::ConfigurationError,
                    "no_provider",
                    NO_PROVIDER_MESSAGE,
                ));
            }
        },
    };
    if let Some(reason) = catalog.unusable_reason(&model_id) {
        let kind = if catalog.model(&model_id).is_none() {
            "unknown_model"
        } else {
            "no_api_key"
        };
        return Ok(failure(TerminalStatus::ConfigurationError, kind, reason));
    }
    let Some(info) = catalog.model(&model_id).cloned() else {
        return Ok(failure(
            TerminalStatus::ConfigurationError,
            "unknown_model",
            format!("Unknown model `{model_id}`."),
        ));
    };
    let Some(connector) = services.connector.as_ref() else {
        return Ok(failure(
            TerminalStatus::ConfigurationError,
            "no_provider",
            NO_PROVIDER_MESSAGE,
        ));
    };
    let client = match catalog.provider(&info.provider) {
        Some(p) => match connector.connect(p, catalog.key(&p.name)) {
            Ok(c) => c,
            Err(e) => return Ok(failure(e.terminal_status(), &e.error_kind(), e.message)),
        },
        None => {
            return Ok(failure(
                TerminalStatus::ConfigurationError,
                "no_provider",
                NO_PROVIDER_MESSAGE,
            ));
        }
    };
    let effort = req.options.effort.unwrap_or(session_effort);
    let web_search = req.options.web_search.unwrap_or(session_web) && info.web_search;
    let mut env = CallEnv::new(
        services,
        rec,
        &config,
        &catalog,
        &cwd,
        roots,
        req.options.force_ask,
    );
    env.checkpoint = Some(checkpoint.clone());
    let provider = lock(&rec.core).extra_tools.clone();
    if let Some(provider) = provider {
        // Waits for MCP servers still starting (bounded by their startup timeout).
        let tools = tokio::select! {
            biased;
            () = cancel.cancelled() => return Ok(ended(StopReason::Cancelled)),
            t = provider.tools() => t,
        };
        for t in tools {
            env.tools.add(t);
        }
    }
    let system = crate::prompt::system_prompt(&cwd);

    if let Some(extra) = compact_request {
        return Ok(
            match compact::run(rec, &client, &info, cancel, &extra).await? {
                compact::Outcome::Compacted => ended(StopReason::EndTurn),
                compact::Outcome::NothingToDo => {
                    rec.emit(Event::AgentMessageChunk {
                        text: "Nothing to compact yet.".into(),
                    })
                    .await;
                    ended(StopReason::EndTurn)
                }
                compact::Outcome::Cancelled => ended(StopReason::Cancelled),
                compact::Outcome::Failed(e) => model_failure(&e),
            },
        );
    }
    for _ in 0..config.max_turn_requests {
        if compact::due(rec, &info, config.compaction_threshold) {
            match compact::run(rec, &client, &info, cancel, "").await? {
                compact::Outcome::Cancelled => return Ok(ended(StopReason::Cancelled)),
                compact::Outcome::Failed(e) => {
                    tracing::warn!(error = %e, "automatic compaction failed; sending the full history")
                }
                compact::Outcome::Compacted | compact::Outcome::NothingToDo => {}
            }
        }
        let messages = lock(&rec.core).state.model_messages();
        let request = ModelRequest {
            model: info.model.clone(),
            system: system.clone(),
            messages,
            tools: env.specs(rec),
            effort,
            reasoning: info.reasoning,
            web_search,
            max_output_tokens: 32_000,
        };
        let mut stream = client.stream(request, cancel.child_token());
        let mut partial_text = String::new();
        let mut partial_thought = String::new();
        // An event taken from the stream while merging deltas, to be handled next.
        let mut held = None;
        let response = loop {
            let next = match held.take() {
                Some(item) => Some(item),
                None => tokio::select! {
                    biased;
                    () = cancel.cancelled() => None,
                    item = stream.next() => Some(item),
                },
            };
            let Some(item) = next else {
                // Keep what the user already saw, so history matches the screen.
                record_partial(rec, &partial_text, &partial_thought)?;
                return Ok(ended(StopReason::Cancelled));
            };
            match item {
                Some(Ok(ModelEvent::TextDelta(mut t))) => {
                    // Deltas that are already decoded (one network read carries many) go out as
                    // one update: a fast stream costs an update per read, not per token.
                    while t.len() < MERGE_LIMIT_BYTES {
                        match stream.next().now_or_never() {
                            Some(Some(Ok(ModelEvent::TextDelta(more)))) => t.push_str(&more),
                            Some(other) => {
                                held = Some(other);
                                break;
                            }
                            None => break,
                        }
                    }
                    partial_text.push_str(&t);
                    rec.emit(Event::AgentMessageChunk { text: t }).await;
                }
                Some(Ok(ModelEvent::ReasoningDelta(t))) => {
                    partial_thought.push_str(&t);
                    rec.emit(Event::AgentThoughtChunk { text: t }).await;
                }
                Some(Ok(ModelEvent::WebSearch { id, query, status })) => {
                    let call = ToolCallView {
                        id,
                        title: match &query {
                            Some(q) => format!("Web search: {q}"),
                            None => "Web search".into(),
                        },
                        kind: crate::content::ToolKind::Fetch,
                        status: match status {
                            HostedStatus::InProgress => ToolStatus::InProgress,
                            HostedStatus::Completed => ToolStatus::Completed,
                            HostedStatus::Failed => ToolStatus::Failed,
                        },
                        locations: vec![],
                        content: vec![],
                        raw_input: query.map(|q| serde_json::json!({ "query": q })),
                    };
                    if status != HostedStatus::InProgress {
                        rec.record(EntryKind::DisplayToolCall { call: call.clone() })?;
                    }
                    rec.emit(Event::ToolCall(call)).await;
                }
                Some(Ok(ModelEvent::Retrying {
                    attempt,
                    delay_ms,
                    reason,
                })) => {
                    tracing::info!(attempt, delay_ms, %reason, "retrying model request");
                }
                Some(Ok(ModelEvent::Completed(resp))) => break resp,
                Some(Err(e)) if e.kind == ModelErrorKind::Cancelled => {
                    record_partial(rec, &partial_text, &partial_thought)?;
                    return Ok(ended(StopReason::Cancelled));
                }
                Some(Err(e)) => {
                    record_partial(rec, &partial_text, &partial_thought)?;
                    return Ok(model_failure(&e));
                }
                None => {
                    record_partial(rec, &partial_text, &partial_thought)?;
                    return Ok(model_failure(&ModelError::new(
                        ModelErrorKind::StreamCut,
                        "The model's stream ended without a final event.",
                    )));
                }
            }
        };
        drop(stream);
        rec.record(EntryKind::Assistant {
            content: response.content.clone(),
        })?;
        lock(&rec.core).context_tokens = response.usage.context_tokens();
        rec.emit(Event::Usage {
            used: response.usage.context_tokens(),
            size: info.context_window,
        })
        .await;
        rec.sync()?;

        let calls: Vec<(String, String, String)> = response
            .content
            .iter()
            .filter_map(|p| match p {
                AssistantPart::ToolCall {
                    id,
                    name,
                    arguments,
                } => Some((id.clone(), name.clone(), arguments.clone())),
                AssistantPart::Text { .. }
                | AssistantPart::Reasoning { .. }
                | AssistantPart::Opaque { .. } => None,
            })
            .collect();
        if calls.is_empty() {
            return Ok(match response.stop {
                StopKind::EndTurn | StopKind::ToolUse => ended(StopReason::EndTurn),
                StopKind::MaxTokens => ended(StopReason::MaxTokens),
                StopKind::Refusal => ended(StopReason::Refusal),
            });
        }
        for (i, (id, name, arguments)) in calls.iter().enumerate() {
            if cancel.is_cancelled() {
                // Every call of this message gets a result so the next request is well formed.
                for (id, _, _) in &calls[i..] {
                    finish_call(
                        rec,
                        id,
                        "Cancelled by the user before it ran.",
                        true,
                        ToolStatus::Failed,
                        None,
                    )
                    .await?;
                }
                return Ok(ended(StopReason::Cancelled));
            }
            match run_call(rec, &env, id, name, arguments, cancel).await? {
                CallEnd::Done => {}
                CallEnd::Cancelled => {
                    for (id, _, _) in &calls[i + 1..] {
                        finish_call(
                            rec,
                            id,
                            "Cancelled by the user before it ran.",
                            true,
                            ToolStatus::Failed,
                            None,
                        )
                        .await?;
                    }
                    return Ok(ended(StopReason::Cancelled));
                }
                CallEnd::Fatal(msg) => {
                    for (id, _, _) in &calls[i + 1..] {
                        finish_call(
                            rec,
                            id,
                            "Not run: an earlier tool failed fatally.",
                            true,
                            ToolStatus::Failed,
                            None,
                        )
                        .await?;
                    }
                    return Ok(failure(TerminalStatus::ToolError, "tool_failed", msg));
                }
            }
        }
        rec.sync()?;
    }
    Ok(ended(StopReason::MaxTurnRequests))
}

fn model_failure(e: &ModelError) -> TurnOutcome {
    failure(
        e.terminal_status(),
        &e.error_kind(),
        format!("The model request failed: {}", e.message),
    )
}

fn record_partial(rec: &Recorder, text: &str, thought: &str) -> Result<(), StoreError> {
    let mut content = Vec::new();
    if !thought.is_empty() {
        content.push(AssistantPart::Reasoning {
            text: thought.to_owned(),
            provider_data: None,
        });
    }
    if !text.is_empty() {
        content.push(AssistantPart::Text {
            text: text.to_owned(),
        });
    }
    if !content.is_empty() {
        rec.record(EntryKind::Assistant { content })?;
    }
    Ok(())
}

enum CallEnd {
    Done,
    Cancelled,
    Fatal(String),
}

async fn finish_call(
    rec: &Recorder,
    id: &str,
    output: &str,
    is_error: bool,
    status: ToolStatus,
    content: Option<Vec<ToolContent>>,
) -> Result<(), StoreError> {
    let update = ToolCallUpdateView {
        id: id.to_owned(),
        status: Some(status),
        content: content.or_else(|| {
            Some(vec![ToolContent::Text {
                text: output.to_owned(),
            }])
        }),
        ..Default::default()
    };
    rec.record(EntryKind::ToolResult {
        call_id: id.to_owned(),
        output: output.to_owned(),
        is_error,
        update: update.clone(),
    })?;
    rec.emit(Event::ToolCallUpdate(update)).await;
    Ok(())
}

async fn run_call(
    rec: &Recorder,
    env: &CallEnv,
    id: &str,
    name: &str,
    arguments: &str,
    cancel: &CancellationToken,
) -> Result<CallEnd, StoreError> {
    let input: Value = match serde_json::from_str(if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    }) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) | Err(_) => Value::Null,
    };
    let cwd = env.cwd.as_path();
    if name == exit_plan::NAME && env.mode(rec) == Mode::Plan {
        let input: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
        return exit_plan::run(rec, env, id, &input, cancel).await;
    }
    let Some(tool) = env.tools.get(name) else {
        let view = ToolCallView {
            id: id.to_owned(),
            title: name.to_owned(),
            kind: crate::content::ToolKind::Other,
            status: ToolStatus::Pending,
            locations: vec![],
            content: vec![],
            raw_input: Some(input),
        };
        rec.record(EntryKind::ToolCall {
            name: name.to_owned(),
            call: view.clone(),
        })?;
        rec.emit(Event::ToolCall(view)).await;
        finish_call(
            rec,
            id,
            &format!("Unknown tool `{name}`. Use one of the tools you were given."),
            true,
            ToolStatus::Failed,
            None,
        )
        .await?;
        return Ok(CallEnd::Done);
    };
    let desc = tool.describe(&input, cwd);
    let view = ToolCallView {
        id: id.to_owned(),
        title: desc.title,
        kind: tool.kind(),
        status: ToolStatus::Pending,
        locations: desc.locations,
        content: vec![],
        raw_input: Some(input.clone()),
    };
    rec.record(EntryKind::ToolCall {
        name: name.to_owned(),
        call: view.clone(),
    })?;
    rec.emit(Event::ToolCall(view.clone())).await;
    if input.is_null() {
        let msg = format!("The arguments of `{name}` are not a JSON object: {arguments}");
        finish_call(rec, id, &msg, true, ToolStatus::Failed, None).await?;
        return Ok(CallEnd::Done);
    }
    let access = tool.access(&input, cwd);
    match permission::check(rec, env, &view, name, &access, cancel).await {
        permission::Gate::Run => {}
        permission::Gate::Refused(why) => {
            finish_call(rec, id, &why, true, ToolStatus::Failed, None).await?;
            return Ok(CallEnd::Done);
        }
        permission::Gate::Cancelled => {
            finish_call(
                rec,
                id,
                "Cancelled by the user.",
                true,
                ToolStatus::Failed,
                None,
            )
            .await?;
            return Ok(CallEnd::Cancelled);
        }
    }
    // The user may have taken minutes to answer: if a path now resolves elsewhere (a symlink
    // planted meanwhile), what was approved is not what would run. The tools then open the
    // decided path without following links, which closes the remaining gap.
    if tool.access(&input, cwd) != access {
        let why = "Refused: a path of this call now resolves somewhere else than when it was \
                   checked (a symlink appeared); the call did not run.";
        finish_call(rec, id, why, true, ToolStatus::Failed, None).await?;
        return Ok(CallEnd::Done);
    }
    if let Some(checkpoint) = &env.checkpoint {
        checkpoint.before_call(rec, &access, env.mode(rec)).await;
    }
    rec.emit(Event::ToolCallUpdate(ToolCallUpdateView {
        id: id.to_owned(),
        status: Some(ToolStatus::InProgress),
        ..Default::default()
    }))
    .await;
    let ctx = ToolContext {
        cwd: env.cwd.clone(),
        roots: env.roots.clone(),
        call_id: id.to_owned(),
        cancel: cancel.child_token(),
        recorder: rec,
        limits: env.limits,
        spill_dir: env.spill_dir.clone(),
        runner: env.runner.clone().map(|inner| -> Arc<dyn CommandRunner> {
            Arc::new(sandbox::ModeAwareRunner {
                inner,
                mode: env.mode(rec),
                warned: env.sandbox_warned.clone(),
                simulate_unavailable: env.simulate_no_sandbox,
                events: rec.events.clone(),
                session: rec.session.clone(),
                turn: rec.turn,
            })
        }),
        sandbox: Sandbox::for_mode(
            env.mode(rec),
            &env.roots,
            &env.spill_dir,
            env.sandbox_network,
        ),
        bash_timeout: env.bash_timeout,
        client_fs: env.client_fs.clone(),
        fs_delegation: env.fs_delegation,
        read_deny: crate::tools::ReadDeny::new(
            Arc::new(permission::rules_in_force(env)),
            env.roots.clone(),
        ),
    };
    let result = tokio::select! {
        biased;
        () = cancel.cancelled() => None,
        r = tool.call(input, &ctx) => Some(r),
    };
    match result {
        None => {
            finish_call(
                rec,
                id,
                "Cancelled by the user while it ran.",
                true,
                ToolStatus::Failed,
                None,
            )
            .await?;
            Ok(CallEnd::Cancelled)
        }
        Some(Ok(out)) => {
            let content = if out.content.is_empty() {
                None
            } else {
                Some(out.content)
            };
            finish_call(rec, id, &out.text, false, ToolStatus::Completed, content).await?;
            Ok(CallEnd::Done)
        }
        Some(Err(ToolError::RespondToModel(msg))) => {
            finish_call(rec, id, &msg, true, ToolStatus::Failed, None).await?;
            Ok(CallEnd::Done)
        }
        Some(Err(ToolError::Fatal(msg))) => {
            finish_call(rec, id, &msg, true, ToolStatus::Failed, None).await?;
            Ok(CallEnd::Fatal(msg))
        }
    }
}
