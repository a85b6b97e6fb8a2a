//! The turn loop: send the conversation to the model, stream its answer to the editor, run the
//! tools it calls, feed the results back, until the model stops or `max_turn_requests`.

mod compact;
mod exit_plan;
mod model_call;
mod permission;
mod sandbox;
mod subagent;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::catalog::{Catalog, DefaultModel, NO_PROVIDER_MESSAGE, ReasoningStyle};
use crate::checkpoints::TurnCheckpoint;
use crate::config::Config;
use crate::content::{ToolCallUpdateView, ToolCallView, ToolContent, ToolStatus, UserContent};
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
pub(crate) use model_call::record_usage;
use model_call::{ModelOrigin, explain_model_error, output_limit};

/// The state a session's task and its turn share. Locked only for short, non-async sections.
pub(crate) struct SessionCore {
    pub state: SessionState,
    pub log: LogWriter,
    /// Whether the user was told that commands run unsandboxed (once per session).
    pub sandbox_warned: Arc<std::sync::atomic::AtomicBool>,
    /// The session's MCP servers' tools.
    pub extra_tools: Option<Arc<dyn ToolProvider>>,
    /// Files the agent changed on disk, for the stale-buffer rule (`docs/acp.md`).
    pub disk_changes: crate::clientfs::DiskChanges,
    /// Tokens in context after the last model call (0 until one happened in this process).
    pub context_tokens: u64,
    /// Instruction files of nested packages already given to the model.
    pub nested_instructions: crate::prompt::Nested,
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
    /// A tool call the editor is not shown as a card (`update_plan`: its `plan` update is it).
    pub(crate) hidden_call: Option<String>,
}

impl Recorder {
    /// The same recorder, minus the card of tool call `id`.
    fn hiding_call(&self, id: &str) -> Recorder {
        Recorder {
            core: self.core.clone(),
            events: self.events.clone(),
            session: self.session.clone(),
            turn: self.turn,
            hidden_call: Some(id.to_owned()),
        }
    }

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

    /// Whether `read` should take `path` from the editor (`docs/acp.md`).
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
        if let (Some(hidden), Event::ToolCall(ToolCallView { id, .. }))
        | (Some(hidden), Event::ToolCallUpdate(ToolCallUpdateView { id, .. })) =
            (&self.hidden_call, &event)
            && hidden == id
        {
            return;
        }
        let ev = SessionEvent {
            session: self.session.clone(),
            turn: self.turn,
            event,
        };
        // The receiver is gone only when the server is shutting down; nothing to tell then.
        let _ = self.events.send(ev).await;
    }
}

/// "anthropic returned HTTP 529 (overloaded_error): Overloaded — retrying in 4 s (attempt 2 of 5)."
fn retry_notice(reason: &str, delay_ms: u64, next_attempt: u32, max_attempts: u32) -> String {
    let wait = if delay_ms < 1000 {
        format!("{delay_ms} ms")
    } else {
        format!("{} s", delay_ms.div_ceil(1000))
    };
    let reason = reason.trim_end_matches('.');
    format!("{reason} — retrying in {wait} (attempt {next_attempt} of {max_attempts}).")
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
    pub web: Option<Arc<dyn crate::web::WebFetch>>,
    pub web_reach: crate::web::Reach,
    /// `sandbox.deny_read` with `~` expanded: hidden from commands.
    pub deny_read: Vec<PathBuf>,
    /// Provider key variables commands must not inherit.
    pub secret_env: Vec<String>,
    pub home: PathBuf,
    /// FERRITE_HOME, which tools may not change and read only with the user's consent.
    pub protected: crate::protected::Protected,
    /// Rules from config; stored "always" rules are read at each call.
    pub allow: Vec<String>,
    pub deny: Vec<String>,
    /// `_meta.permission_mode = "ask"` for this turn.
    pub force_ask: bool,
    /// A command that may only look (`/review`): the turn runs as in `plan` mode.
    pub read_only: bool,
    pub permission_timeout: Duration,
    pub approver: Option<Arc<dyn Approver>>,
    /// The session's mode ceiling (harness and `max_mode`).
    pub ceiling: Mode,
    pub catalog: Catalog,
    /// Whether this session was already told that commands run unsandboxed.
    pub sandbox_warned: Arc<std::sync::atomic::AtomicBool>,
    pub client_fs: Option<Arc<dyn crate::clientfs::ClientFs>>,
    pub fs_delegation: crate::config::FsDelegation,
    /// Keeps what the turn's tools are about to change, for `/undo`.
    pub checkpoint: Option<TurnCheckpoint>,
    /// The model `task` subagents use; `None` where there is none (no `task` tool offered).
    pub subagent: Option<subagent::SubagentModel>,
    /// How many `task` calls of one response run at once (`subagent.max_parallel`).
    pub subagent_parallel: usize,
    /// Whether the turn's model takes images.
    pub model_images: bool,
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
            web: services.web.clone(),
            web_reach: if config.web_fetch_allow_private {
                crate::web::Reach::Anywhere
            } else {
                crate::web::Reach::PublicOnly
            },
            deny_read: config.deny_read_paths(services.env.get("HOME").map(Path::new)),
            secret_env: crate::exec::secret_env_names(config),
            home: services.home.clone(),
            protected: crate::protected::Protected::new(&services.home, &spill_dir),
            allow: config.permissions.allow.clone(),
            deny: config.permissions.deny.clone(),
            force_ask,
            read_only: false,
            permission_timeout: Duration::from_secs(config.permissions.timeout_secs),
            approver: services.approver.get().cloned(),
            ceiling: crate::runtime::ceiling(config, harness),
            catalog: catalog.clone(),
            sandbox_warned: lock(&rec.core).sandbox_warned.clone(),
            client_fs: services.client_fs.get().cloned(),
            fs_delegation: config.fs_delegation,
            checkpoint: None,
            subagent: None,
            subagent_parallel: config.subagent.max_parallel,
            model_images: true,
        }
    }

    /// The session's mode now (an approved `exit_plan` changes it mid-turn).
    /// The mode this turn's calls run in: the session's, capped at `plan` for a read-only
    /// command (`/review`).
    fn mode(&self, rec: &Recorder) -> Mode {
        let mode = lock(&rec.core).state.mode;
        if self.read_only {
            mode.min(Mode::Plan)
        } else {
            mode
        }
    }

    /// The tools offered to the model for the next request.
    fn specs(&self, rec: &Recorder) -> Vec<crate::model::ToolSpec> {
        let mut specs = self.tools.specs();
        if self.mode(rec) == Mode::Plan && self.ceiling > Mode::Plan && !self.read_only {
            specs.push(exit_plan::spec());
        }
        if self.subagent.is_some() {
            specs.push(subagent::spec());
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
        Some(cwd) => crate::commands::expand(content, &services.home, cwd),
        None => content,
    };
    let compact_request = compact::requested(&req.content);
    let checkpoint_command = crate::checkpoints::command::requested(&req.content);
    if checkpoint_command.is_none() {
        rec.record(match compact_request {
            None => EntryKind::UserMessage { content },
            // Part of the replay, but not of what the model is sent.
            Some(_) => EntryKind::Command { content },
        })?;
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
    // Stored "always" rules are part of the configuration: one that cannot be read fails the
    // turn rather than being skipped (a dropped deny rule is a hole).
    if let Err(e) = crate::permissions::StoredRules::load(&services.home, &cwd) {
        return Ok(failure(
            TerminalStatus::ConfigurationError,
            "permission_rules",
            e.to_string(),
        ));
    }
    if let Some(command) = checkpoint_command {
        let run = crate::checkpoints::command::run(services, rec, &config, roots, command, cancel);
        return Ok(ended(run.await?));
    }
    checkpoint.configure(rec, roots.clone(), config.checkpoints);
    let catalog = services.catalog(&config);
    let (model_id, origin) = match (req.options.model.clone(), session_model) {
        (Some(m), _) => (m, ModelOrigin::Prompt),
        (None, Some(m)) => {
            let origin = ModelOrigin::of_session_model(&m, &config, &services.env);
            (m, origin)
        }
        (None, None) => match catalog.default_model(&config, &services.env) {
            DefaultModel::Chosen(m) => {
                let origin = ModelOrigin::of_session_model(&m, &config, &services.env);
                (m, origin)
            }
            DefaultModel::NoneConfigured => {
                return Ok(failure(
                    TerminalStatus::ConfigurationError,
                    "no_provider",
                    NO_PROVIDER_MESSAGE,
                ));
            }
        },
    };
    let info = match catalog.resolve(&model_id) {
        Ok(info) => info,
        Err(e) => {
            return Ok(failure(
                TerminalStatus::ConfigurationError,
                "unknown_provider",
                format!("{e} (the model was set by {}).", origin.describe()),
            ));
        }
    };
    if let Some(need) = catalog.auth_needed_for(&model_id) {
        return Ok(failure(
            TerminalStatus::ConfigurationError,
            "no_api_key",
            need.message,
        ));
    }
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
    env.read_only = crate::commands::is_read_only(&req.content);
    env.checkpoint = Some(checkpoint.clone());
    env.model_images = info.images;
    // The assistant harness has no tools to give a subagent.
    if env.tools.get("read").is_some() {
        env.subagent = Some(subagent_model(
            &config,
            &catalog,
            connector.as_ref(),
            &client,
            &info,
        ));
    }
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
    let system = crate::prompt::system_prompt(&services.home, &cwd);

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
        let mut messages = lock(&rec.core).state.model_messages();
        if !info.images {
            without_images(&mut messages);
        }
        let request = ModelRequest {
            model: info.model.clone(),
            system: system.clone(),
            messages,
            tools: env.specs(rec),
            effort,
            reasoning: info.reasoning.is_reasoner(),
            adaptive_thinking: info.reasoning == ReasoningStyle::Adaptive,
            web_search,
            max_output_tokens: output_limit(&info, lock(&rec.core).context_tokens),
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
                    max_attempts,
                })) => {
                    tracing::info!(attempt, delay_ms, %reason, "retrying model request");
                    // For the user only: not logged, not replayed, never sent to the model.
                    let text = retry_notice(&reason, delay_ms, attempt + 1, max_attempts);
                    rec.emit(Event::Notice { text }).await;
                }
                Some(Ok(ModelEvent::Completed(resp))) => break resp,
                Some(Err(e)) if e.kind == ModelErrorKind::Cancelled => {
                    record_partial(rec, &partial_text, &partial_thought)?;
                    return Ok(ended(StopReason::Cancelled));
                }
                Some(Err(e)) => {
                    record_partial(rec, &partial_text, &partial_thought)?;
                    return Ok(model_failure(&explain_model_error(
                        e, &info, origin, effort,
                    )));
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
        record_usage(rec, &info, &response.usage, response.usage.context_tokens()).await?;
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
        if calls.len() > 1
            && env.subagent.is_some()
            && calls.iter().all(|(_, name, _)| name == subagent::NAME)
        {
            // Subagents work on their own: several of one response run at once (bounded).
            let mut runs = Vec::with_capacity(calls.len());
            for (id, name, arguments) in &calls {
                runs.push(run_call(rec, &env, id, name, arguments, cancel));
            }
            let ends: Vec<Result<CallEnd, StoreError>> = futures::stream::iter(runs)
                .buffered(env.subagent_parallel.max(1))
                .collect()
                .await;
            let mut stop = None;
            for end in ends {
                match end? {
                    CallEnd::Done => {}
                    CallEnd::Cancelled => stop = Some(ended(StopReason::Cancelled)),
                    CallEnd::Fatal(msg) => {
                        stop = Some(failure(TerminalStatus::ToolError, "tool_failed", msg));
                    }
                }
            }
            if let Some(outcome) = stop {
                return Ok(outcome);
            }
            rec.sync()?;
            continue;
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

/// For a model that takes no images: each image the history holds (a prompt attachment, an MCP
/// tool's image) becomes a short note, so the request is one the model accepts.
fn without_images(messages: &mut [crate::model::Message]) {
    use crate::model::{Message, UserPart};
    for m in messages {
        if let Message::User { content } = m {
            for part in content.iter_mut() {
                if let UserPart::Image { mime_type, .. } = part {
                    *part = UserPart::Text {
                        text: format!(
                            "[an image ({mime_type}) was left out: this model does not take images]"
                        ),
                    };
                }
            }
        }
    }
}

/// The model subagents use: `subagent.model` when set and usable, else the turn's own.
fn subagent_model(
    config: &Config,
    catalog: &Catalog,
    connector: &dyn crate::model::ModelConnector,
    client: &Arc<dyn crate::model::ModelClient>,
    info: &crate::catalog::ModelInfo,
) -> subagent::SubagentModel {
    let own = || subagent::SubagentModel {
        client: client.clone(),
        info: info.clone(),
    };
    let Some(id) = config
        .subagent
        .model
        .as_deref()
        .filter(|m| !m.trim().is_empty())
    else {
        return own();
    };
    let chosen = catalog.resolve(id).ok().and_then(|info| {
        let provider = catalog.provider(&info.provider)?;
        let client = connector
            .connect(provider, catalog.key(&provider.name))
            .ok()?;
        Some(subagent::SubagentModel { client, info })
    });
    chosen.unwrap_or_else(|| {
        tracing::warn!(
            model = id,
            "subagent.model cannot be used; subagents use the turn's model"
        );
        own()
    })
}

/// Everything between a call's card and its run, for the turn's calls and a subagent's alike:
/// the policy's decision (asking the user about `asked_about` when it says so), the paths checked
/// again after the answer, and the checkpoint of what the call may change.
async fn admit(
    rec: &Recorder,
    env: &CallEnv,
    asked_about: &ToolCallView,
    name: &str,
    tool: &Arc<dyn crate::tools::Tool>,
    input: &Value,
    cancel: &CancellationToken,
) -> Admission {
    let cwd = env.cwd.as_path();
    let access = tool.access(input, cwd);
    let preview = previewer(tool, input, cwd);
    match permission::check(rec, env, asked_about, name, &access, &preview, cancel).await {
        permission::Gate::Run => {}
        permission::Gate::Refused(why) => return Admission::Refused(why),
        permission::Gate::Cancelled => return Admission::Cancelled,
    }
    // The user may have taken minutes to answer: if a path now resolves elsewhere (a symlink
    // planted meanwhile), what was approved is not what would run. The tools then open the
    // decided path without following links, which closes the remaining gap.
    if tool.access(input, cwd) != access {
        return Admission::Refused(
            "Refused: a path of this call now resolves somewhere else than when it was checked \
             (a symlink appeared); the call did not run."
                .into(),
        );
    }
    if let Some(checkpoint) = &env.checkpoint {
        checkpoint.before_call(rec, &access, env.mode(rec)).await;
    }
    Admission::Run(access)
}

/// What [`admit`] says about a call.
enum Admission {
    /// Run it; what it will touch, as decided.
    Run(crate::tools::Access),
    /// Refused; the text tells the model why.
    Refused(String),
    /// The turn was cancelled while the user was being asked.
    Cancelled,
}

/// What a permission request about this call shows, computed only when one is made. Reads (and
/// for `edit`, applies to) the file: off the runtime threads, like the tools.
fn previewer(
    tool: &Arc<dyn crate::tools::Tool>,
    input: &Value,
    cwd: &Path,
) -> impl Fn() -> BoxFuture<'static, Vec<ToolContent>> + Sync + use<> {
    let (tool, input, cwd) = (tool.clone(), input.clone(), cwd.to_owned());
    move || -> BoxFuture<'static, Vec<ToolContent>> {
        let (tool, input, cwd) = (tool.clone(), input.clone(), cwd.clone());
        Box::pin(async move {
            tokio::task::spawn_blocking(move || tool.preview(&input, &cwd))
                .await
                .unwrap_or_default()
        })
    }
}

/// What a tool may use for call `id`: the session's workspace, limits, sandbox and services.
fn tool_context<'a>(
    rec: &'a Recorder,
    env: &CallEnv,
    id: &str,
    cancel: &CancellationToken,
) -> ToolContext<'a> {
    ToolContext {
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
                env_remove: env.secret_env.clone(),
                warned: env.sandbox_warned.clone(),
                events: rec.events.clone(),
                session: rec.session.clone(),
                turn: rec.turn,
            })
        }),
        sandbox: Sandbox::for_mode(
            env.mode(rec),
            &env.roots,
            &env.home,
            &env.deny_read,
            env.sandbox_network,
        ),
        bash_timeout: env.bash_timeout,
        client_fs: env.client_fs.clone(),
        fs_delegation: env.fs_delegation,
        web: env.web.clone(),
        web_reach: env.web_reach,
        model_images: env.model_images,
        read_deny: crate::tools::ReadDeny::new(
            // A call whose rules cannot be read was refused before it got here.
            Arc::new(permission::rules_in_force(env).unwrap_or_default()),
            env.roots.clone(),
            (env.mode(rec) < Mode::Full).then(|| env.protected.clone()),
        ),
    }
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
    if name == subagent::NAME && env.subagent.is_some() {
        return subagent::run(rec, env, id, arguments, cancel).await;
    }
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
    let quiet;
    let rec = if name == crate::tools::UPDATE_PLAN {
        quiet = rec.hiding_call(id);
        &quiet
    } else {
        rec
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
    let access = match admit(rec, env, &view, name, tool, &input, cancel).await {
        Admission::Run(access) => access,
        Admission::Refused(why) => {
            finish_call(rec, id, &why, true, ToolStatus::Failed, None).await?;
            return Ok(CallEnd::Done);
        }
        Admission::Cancelled => {
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
    };
    rec.emit(Event::ToolCallUpdate(ToolCallUpdateView {
        id: id.to_owned(),
        status: Some(ToolStatus::InProgress),
        ..Default::default()
    }))
    .await;
    let ctx = tool_context(rec, env, id, cancel);
    let shown_input = crate::tools::markdown::renders(name).then(|| input.clone());
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
        Some(Ok(mut out)) => {
            // What the user sees is built before the model's text gets nested instructions.
            let content = if !out.content.is_empty() {
                Some(std::mem::take(&mut out.content))
            } else if let Some(input) = &shown_input {
                crate::tools::markdown::file_tool_result(name, input, cwd, &out.text)
            } else {
                None
            };
            // A file in a package with its own AGENTS.md: the model gets those instructions too.
            if let crate::tools::Access::Read { paths } | crate::tools::Access::Write { paths } =
                &access
                && let Some(extra) = lock(&rec.core)
                    .nested_instructions
                    .for_paths(paths, &env.cwd, &env.roots)
            {
                out.text.push_str(&extra);
            }
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
