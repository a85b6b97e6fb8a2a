//! `task`: a subagent. The parent model hands a side investigation to a child session: a log of
//! its own (the parent's id in its header, left out of the session list), its own context (a
//! system prompt and the task, not the parent's history), a tool set no larger than the
//! parent's (read-only unless the call names more), the session's mode, and a budget of model
//! requests. It runs the same request loop as every turn (handed down in [`CallEnv::child_turn`]),
//! and the parent gets only its final answer.
//!
//! A client that shows child sessions (ACP `subagents`) is told of the child (`subagent_update`)
//! and sent its updates under its own id; `session/cancel` of the child stops it alone. Other
//! clients see one card (kind `other`) whose content lists the tools the subagent ran and, at
//! the end, its answer; a question one of its calls needs is asked about that card, naming the
//! call (`crate::session::Relay`). The card's final state is in the parent's log, so
//! `session/load` replays it; the child's session can be loaded by its id.

use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::agents::AgentDef;
use crate::content::{
    ToolCallUpdateView, ToolCallView, ToolContent, ToolKind, ToolStatus, UserContent,
};
use crate::events::{Event, SubagentView, TurnOutcome};
use crate::hooks::HookEvent;
use crate::ids::SessionId;
use crate::log::{EntryKind, Header, StopReason, StoreError};
use crate::model::ToolSpec;
use crate::modes::{Effort, Mode};
use crate::session::{Recorder, Relay, Session};
use crate::state::SessionState;

use super::call::{CallEnd, finish_call};
use super::env::{CallEnv, ChildRun, Limits};
use super::model_call::ModelOrigin;
use super::resolve::{SubagentModel, TurnModel};

mod worktree;
use worktree::{Isolated, WorktreeEnd};

pub(crate) const NAME: &str = "task";

/// Model requests one subagent may make before it must have answered.
const MAX_REQUESTS: u32 = 20;

/// The tools a subagent gets when the call names none: it looks, it does not change.
const READ_ONLY: &[&str] = &["read", "grep", "find", "ls"];

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// A few words for the user.
    description: String,
    // No description: the tool's says it.
    prompt: String,
    /// Tool names (a subset of yours).
    tools: Option<Vec<String>>,
    /// The agent to hand it to.
    subagent_type: Option<String>,
    /// "worktree": work in a fresh git worktree (kept and named if it has changes).
    isolation: Option<String>,
}

/// The `task` tool. `subagent_type` is offered only where there are custom agents, each named
/// with its description: a session without agents sends the same tool as ever.
pub(crate) fn spec(agents: &[AgentDef]) -> ToolSpec {
    let mut description = "Hand a self-contained investigation to a subagent with an empty \
        context: it gets only `prompt` (say all it needs), uses read-only tools unless `tools` \
        names others of yours, and you get only its final answer. For searches across a large \
        codebase or exploration that would fill your context; `task` calls in one response \
        run at once."
        .to_owned();
    let mut input_schema = Value::clone(&crate::tools::input_schema::<Input>());
    if agents.is_empty() {
        if let Some(props) = input_schema
            .get_mut("properties")
            .and_then(Value::as_object_mut)
        {
            props.remove("subagent_type");
        }
    } else {
        description
            .push_str("\n\nAgents (`subagent_type`, with their own instructions and tools):");
        for a in agents {
            description.push_str(&format!("\n- {}: {}", a.name, a.description));
        }
        let names: Vec<&str> = agents.iter().map(|a| a.name.as_str()).collect();
        if let Some(p) = input_schema.pointer_mut("/properties/subagent_type") {
            p["enum"] = serde_json::json!(names);
        }
    }
    if let Some(p) = input_schema.pointer_mut("/properties/isolation") {
        p["enum"] = serde_json::json!([worktree::WORKTREE]);
    }
    ToolSpec {
        name: NAME.into(),
        description,
        input_schema: input_schema.into(),
    }
}

/// Whether a response's calls are all `task` calls that run subagents.
pub(super) fn all_tasks(env: &CallEnv, calls: &[super::call::Call]) -> bool {
    env.subagent.is_some() && calls.iter().all(|c| c.name == NAME)
}

/// The tools offered for the turn's next request: the turn's own, and `task` where there is a
/// model to give a subagent.
pub(super) fn offered(env: &CallEnv, rec: &Recorder) -> Vec<ToolSpec> {
    let mut specs = env.specs(rec);
    if env.subagent.is_some() {
        specs.push(spec(&env.agents));
    }
    specs
}

/// Runs one `task` call to its end: the card, the child session, the answer.
pub(crate) async fn run(
    rec: &Recorder,
    env: &CallEnv,
    id: &str,
    arguments: &str,
    cancel: &CancellationToken,
) -> Result<CallEnd, StoreError> {
    let parsed: Result<Input, String> =
        serde_json::from_str(arguments).map_err(|e| format!("invalid `task` arguments: {e}"));
    let title = match &parsed {
        Ok(Input {
            description,
            subagent_type: Some(agent),
            ..
        }) => format!("Subagent ({agent}): {description}"),
        Ok(i) => format!("Subagent: {}", i.description),
        Err(_) => "Subagent".to_owned(),
    };
    let view = ToolCallView {
        id: id.to_owned(),
        title,
        kind: ToolKind::Other,
        status: ToolStatus::Pending,
        locations: vec![],
        content: vec![],
        raw_input: serde_json::from_str(arguments).ok(),
    };
    rec.record(EntryKind::ToolCall {
        name: NAME.to_owned(),
        call: Box::new(view.clone()),
    })?;
    rec.emit(Event::ToolCall(view.clone())).await;
    let input = match parsed {
        Ok(i) => i,
        Err(e) => {
            finish_call(rec, id, &e, true, ToolStatus::Failed, None).await?;
            return Ok(CallEnd::Done);
        }
    };
    let (Some(model), Some(child_turn)) = (env.subagent.clone(), env.child_turn) else {
        let msg = "Subagents are not available in this turn.";
        finish_call(rec, id, msg, true, ToolStatus::Failed, None).await?;
        return Ok(CallEnd::Done);
    };
    let agent = match choose_agent(env, input.subagent_type.as_deref()) {
        Ok(agent) => agent,
        Err(msg) => return refuse(rec, id, &msg).await,
    };
    let model = agent
        .and_then(|a| env.agent_models.iter().find(|(n, _)| *n == a.name))
        .map_or(model, |(_, m)| m.clone());
    let allowed = match agent {
        // An agent's `tools` (else every tool of the turn), narrowed by the call's own list.
        Some(a) => agent_tools(env, a, input.tools.as_deref()),
        None => allowed_tools(env, input.tools.as_deref()),
    };
    // Making a worktree runs git: an effect of the call, which is durable first (the parent
    // syncs a response of `task` calls while they start).
    if input.isolation.is_some() {
        rec.calls_durable().await?;
    }
    let isolated = match isolate(env, id, env.mode(rec), input.isolation.as_deref()).await {
        Ok(isolated) => isolated,
        Err(msg) => return refuse(rec, id, &msg).await,
    };
    let cwd = isolated.as_ref().map_or(env.cwd.clone(), |w| w.cwd.clone());
    let child = match Child::start(rec, env, &view, &model, &input, cwd) {
        Ok(child) => child,
        Err(e) => {
            let msg = format!("The subagent's session could not be created: {e}");
            finish_call(rec, id, &msg, true, ToolStatus::Failed, None).await?;
            return Ok(CallEnd::Done);
        }
    };
    let outcome = child
        .run(rec, env, &model, agent, &allowed, child_turn, cancel)
        .await?;
    let kept = futures::future::OptionFuture::from(isolated.as_ref().map(Isolated::finish)).await;
    report(rec, id, &child, outcome, kept).await
}

/// Ends the call with `msg` for the model: it was not run.
async fn refuse(rec: &Recorder, id: &str, msg: &str) -> Result<CallEnd, StoreError> {
    finish_call(rec, id, msg, true, ToolStatus::Failed, None).await?;
    Ok(CallEnd::Done)
}

/// The custom agent a call names, or what to tell the model when there is no such agent.
fn choose_agent<'a>(env: &'a CallEnv, name: Option<&str>) -> Result<Option<&'a AgentDef>, String> {
    let Some(name) = name else {
        return Ok(None);
    };
    if let Some(a) = env.agents.iter().find(|a| a.name == name) {
        return Ok(Some(a));
    }
    let known: Vec<&str> = env.agents.iter().map(|a| a.name.as_str()).collect();
    Err(format!(
        "There is no agent `{name}`; {}.",
        if known.is_empty() {
            "leave `subagent_type` out".to_owned()
        } else {
            format!("use one of: {}", known.join(", "))
        }
    ))
}

/// The worktree a call's `isolation` asks for, made now; `None` without one.
async fn isolate(
    env: &CallEnv,
    id: &str,
    mode: Mode,
    isolation: Option<&str>,
) -> Result<Option<Isolated>, String> {
    match isolation {
        None => Ok(None),
        Some(worktree::WORKTREE) => Isolated::create(env, id, mode)
            .await
            .map(Some)
            .map_err(|e| format!("No worktree could be made for the subagent: {e}")),
        Some(_) => Err("`isolation` may only be \"worktree\".".to_owned()),
    }
}

/// A subagent's session while it runs.
struct Child {
    id: SessionId,
    session: Session,
    rec: Recorder,
    view: SubagentView,
    /// The task, as the child's first message.
    task: Event,
}

impl Child {
    /// Creates the child's log (its settings, title and task) and its recorder; `run` tells the
    /// editor of it.
    fn start(
        rec: &Recorder,
        env: &CallEnv,
        card: &ToolCallView,
        model: &SubagentModel,
        input: &Input,
        cwd: std::path::PathBuf,
    ) -> Result<Child, StoreError> {
        let parent = rec.session_id().clone();
        let id = SessionId::generate();
        let additional = rec.read(|s| s.additional_directories.clone());
        let header = Header::new(id.clone(), cwd.clone(), additional, env.harness, None)
            .subagent_of(parent.clone());
        // Synced off the parent's path; `run` waits for it before the parent records anything
        // of the child's end.
        let log = env.store.create_unsynced(&header)?;
        let session = Session::new(SessionState::new(&header), log, None);
        session.sync_in_background();
        let message_id = task_message_id(card);
        let content = vec![UserContent::Text {
            text: input.prompt.as_str().into(),
        }];
        let task = Event::SessionMessage {
            message_id: message_id.clone(),
            from: parent.clone(),
            to: id.clone(),
            content: content.clone(),
        };
        session.record_all(vec![
            EntryKind::Mode {
                mode: env.mode(rec),
            },
            EntryKind::Model {
                model: model.info.id.clone(),
            },
            EntryKind::Title {
                title: input.description.clone(),
                by: None,
            },
            EntryKind::SessionMessage {
                message_id,
                from: parent,
                content,
            },
        ])?;
        let relay = Relay::new(rec.clone(), card.clone(), env.children.client_shows());
        let child_rec = rec.for_child(&session, relay);
        Ok(Child {
            view: SubagentView {
                session: id.clone(),
                title: card.title.clone(),
                cwd,
                running: true,
            },
            id,
            session,
            rec: child_rec,
            task,
        })
    }

    /// Runs the child's turn to its end and says how it ended.
    #[allow(clippy::too_many_arguments)]
    async fn run(
        &self,
        rec: &Recorder,
        env: &CallEnv,
        model: &SubagentModel,
        agent: Option<&AgentDef>,
        allowed: &[String],
        child_turn: super::env::ChildTurn,
        cancel: &CancellationToken,
    ) -> Result<Nested, StoreError> {
        // The child's own cancel: the parent's cancels it too; `session/cancel` of the child
        // only it. Registered before the client hears of the child, so a steering message or a
        // cancel sent as soon as it is announced finds it.
        let token = cancel.child_token();
        let inbox = crate::steering::Inbox::default();
        let running = env
            .children
            .register(self.id.clone(), token.clone(), inbox.clone());
        self.announce(rec, true).await?;
        self.point_card_at_child(rec).await;
        self.rec.emit(self.task.clone()).await;
        let turn_model = TurnModel {
            client: model.client.clone(),
            info: model.info.clone(),
            origin: ModelOrigin::Subagent,
            effort: Effort::Default,
            web_search: false,
            catalog: env.catalog.clone(),
        };
        let mut child_env = env.for_child(allowed, env.store.path(&self.id));
        if self.view.cwd != env.cwd {
            // Its own worktree: its calls work (and write) there, and the parent's checkpoint
            // does not keep what they change.
            let cwd = self.view.cwd.clone();
            child_env.roots[0] = std::fs::canonicalize(&cwd).unwrap_or_else(|_| cwd.clone());
            child_env.cwd = cwd;
            child_env.checkpoint = None;
        }
        let system = system_prompt(&child_env, agent);
        let outcome = child_turn(ChildRun {
            rec: &self.rec,
            model: &turn_model,
            env: &child_env,
            system: &system,
            limits: Limits {
                max_requests: MAX_REQUESTS,
                compaction_threshold: env.compaction_threshold,
                stop_event: HookEvent::SubagentStop,
                answer_last: true,
            },
            inbox: &inbox,
            cancel: &token,
        })
        .await;
        let outcome = outcome.unwrap_or_else(|e| super::call::log_failed(&e.to_string()));
        self.session.end_turn(&outcome);
        // What the child's log says is durable before the parent records the child's end (and
        // so before the task's result): the crash guarantee of a log synced in the foreground,
        // paid once here instead of at each of the child's syncs. So is the parent's call.
        let durable = futures::future::join(self.session.durable(), rec.calls_durable()).await;
        let outcome = match durable {
            (Ok(()), Ok(())) => outcome,
            (Err(e), _) | (_, Err(e)) => super::call::log_failed(&e.to_string()),
        };
        drop(running);
        self.announce(rec, false).await?;
        Ok(self.nested(outcome, cancel))
    }

    /// The card points at the child's session from the start, where the editor shows the
    /// child (decided once, when the relay was made).
    async fn point_card_at_child(&self, rec: &Recorder) {
        let shown_card = self
            .rec
            .relay()
            .filter(|r| r.shown())
            .map(|r| r.card().id.clone());
        if let Some(card) = shown_card {
            rec.emit(Event::ToolCallUpdate(ToolCallUpdateView {
                id: card,
                status: Some(ToolStatus::InProgress),
                content: Some(vec![ToolContent::Session {
                    session: self.id.clone(),
                }]),
                ..Default::default()
            }))
            .await;
        }
    }

    /// Records and shows the child's state on the parent.
    async fn announce(&self, rec: &Recorder, running: bool) -> Result<(), StoreError> {
        rec.record(EntryKind::Subagent {
            session: self.id.clone(),
            title: self.view.title.clone(),
            running,
        })?;
        rec.emit(Event::Subagent(SubagentView {
            running,
            ..self.view.clone()
        }))
        .await;
        Ok(())
    }

    /// What the child's turn came to, for its parent.
    fn nested(&self, outcome: TurnOutcome, cancel: &CancellationToken) -> Nested {
        if let Some(failure) = outcome.failure {
            return Nested::Failed(failure.message);
        }
        let answer = || {
            self.rec
                .read(SessionState::last_answer)
                .unwrap_or_else(|| "(The subagent gave no answer.)".to_owned())
        };
        match outcome.stop {
            StopReason::Cancelled if cancel.is_cancelled() => Nested::Cancelled,
            StopReason::Cancelled => Nested::Stopped,
            StopReason::MaxTurnRequests => Nested::Failed(format!(
                "it used its {MAX_REQUESTS} model requests without answering"
            )),
            StopReason::EndTurn | StopReason::MaxTokens | StopReason::Refusal => {
                Nested::Answer(answer())
            }
        }
    }
}

/// The id of the task message in the child's session.
fn task_message_id(card: &ToolCallView) -> String {
    format!("task-{}", card.id)
}

/// The subagent's instructions: its role, and a custom agent's own.
fn system_prompt(env: &CallEnv, agent: Option<&AgentDef>) -> String {
    let mut system = format!(
        "You are a subagent of Ferrite, a coding agent. You get one task from the main agent and \
         answer it once, completely and concisely: the main agent sees only your final answer, \
         not your tool calls. Use your tools to look before you conclude; cite files and lines. \
         Workspace: {}",
        env.cwd.display()
    );
    if let Some(a) = agent {
        system.push_str("\n\n");
        system.push_str(&a.prompt);
    }
    system
}

/// The card's final state and the parent's result: the answer, or why there is none. The card
/// names the child's session (shown only by clients that show child sessions).
async fn report(
    rec: &Recorder,
    id: &str,
    child: &Child,
    outcome: Nested,
    kept: Option<WorktreeEnd>,
) -> Result<CallEnd, StoreError> {
    let listing = child
        .rec
        .relay()
        .map(Relay::progress_text)
        .unwrap_or_default();
    let shown = |text: String| {
        Some(vec![
            ToolContent::Session {
                session: child.id.clone(),
            },
            ToolContent::Text { text: text.into() },
        ])
    };
    match outcome {
        Nested::Answer(answer) => {
            let answer = format!("{answer}{}", worktree_note(kept.as_ref()));
            let text = format!("{listing}{answer}");
            finish_call(rec, id, &answer, false, ToolStatus::Completed, shown(text)).await?;
            Ok(CallEnd::Done)
        }
        Nested::Failed(why) => {
            let msg = format!("The subagent failed: {why}{}", worktree_note(kept.as_ref()));
            let text = format!("{listing}{msg}");
            finish_call(rec, id, &msg, true, ToolStatus::Failed, shown(text)).await?;
            Ok(CallEnd::Done)
        }
        Nested::Stopped => {
            let msg = "The user stopped the subagent before it answered.";
            let text = format!("{listing}{msg}");
            finish_call(rec, id, msg, true, ToolStatus::Failed, shown(text)).await?;
            Ok(CallEnd::Done)
        }
        Nested::Cancelled => {
            finish_call(
                rec,
                id,
                "Cancelled by the user while the subagent ran.",
                true,
                ToolStatus::Failed,
                None,
            )
            .await?;
            Ok(CallEnd::Cancelled)
        }
    }
}

/// What the answer says of the subagent's worktree: where its changes are, when it has any.
fn worktree_note(kept: Option<&WorktreeEnd>) -> String {
    match kept {
        Some(WorktreeEnd::Kept(root)) => format!(
            "\n\n(The subagent worked in the git worktree {}: it has changes and was kept; the \
             session's own files are unchanged.)",
            root.display()
        ),
        Some(WorktreeEnd::Unsure(root, why)) => format!(
            "\n\n(The subagent worked in the git worktree {}: it was kept, since whether it \
             has changes could not be checked ({why}); the session's own files are unchanged.)",
            root.display()
        ),
        Some(WorktreeEnd::Removed) => {
            "\n\n(The subagent's worktree had no changes and was removed.)".to_owned()
        }
        None => String::new(),
    }
}

enum Nested {
    Answer(String),
    Failed(String),
    /// The user stopped the subagent alone; the parent's turn goes on.
    Stopped,
    /// The parent's turn was cancelled.
    Cancelled,
}

/// The tools of a custom agent's subagent: its `tools` (all of the turn's when it names none),
/// only those the turn has, and only those the call names when it names some.
fn agent_tools(env: &CallEnv, agent: &AgentDef, named: Option<&[String]>) -> Vec<String> {
    let base: Vec<String> = match &agent.tools {
        Some(list) => list.clone(),
        None => env.tools.names(),
    };
    allowed_tools(env, Some(&base))
        .into_iter()
        .filter(|t| named.is_none_or(|n| n.iter().any(|x| x == t)))
        .collect()
}

/// The tools the subagent may use: those named (default: the read-only ones) that the parent has,
/// never `task` itself, `exit_plan` or `ask_user` (a subagent works without the user).
fn allowed_tools(env: &CallEnv, named: Option<&[String]>) -> Vec<String> {
    let wanted: Vec<String> = match named {
        Some(list) => list.to_vec(),
        None => READ_ONLY.iter().map(|s| (*s).to_owned()).collect(),
    };
    wanted
        .into_iter()
        .filter(|n| {
            n != NAME
                && n != super::exit_plan::NAME
                && n != crate::tools::ASK_USER
                && env.tools.get(n).is_some()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// The schema derived from `Input` is the one the model was shown when it was hand-written,
    /// with the descriptions trimmed to what the names do not say (issue 37).
    #[test]
    fn the_schema_is_derived_from_the_input() {
        assert_eq!(
            *super::spec(&[]).input_schema,
            json!({
                "type": "object",
                "properties": {
                    "description": {"type": "string", "description": "A few words for the user."},
                    "prompt": {"type": "string"},
                    "tools": {"type": "array", "items": {"type": "string"}, "description": "Tool names (a subset of yours)."},
                    "isolation": {"type": "string", "enum": ["worktree"], "description": "\"worktree\": work in a fresh git worktree (kept and named if it has changes)."}
                },
                "required": ["description", "prompt"]
            })
        );
    }
}
