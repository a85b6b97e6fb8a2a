//! `task`: a subagent. The parent model hands a side investigation to a nested turn loop with its
//! own context (a system prompt and the task prompt, not the parent's history), a tool set no
//! larger than the parent's (read-only unless the call names more), the session's mode as its
//! ceiling, and a budget of model requests. The parent gets only the final answer.
//!
//! The editor sees the subagent as one tool call (kind `other`) whose content lists the tools it
//! ran and, at the end, its answer. Its own tool calls are not separate cards: their events are
//! hidden, and a permission request one of them needs is asked about the subagent's card, naming
//! the call. The card's final state is in the session log, so `session/load` replays it.

use futures::StreamExt;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::agents::AgentDef;
use crate::catalog::ReasoningStyle;
use crate::content::{ToolCallUpdateView, ToolCallView, ToolContent, ToolKind, ToolStatus};
use crate::events::Event;
use crate::hooks::HookEvent;
use crate::log::{EntryKind, StoreError};
use crate::model::{
    AssistantPart, Message, ModelErrorKind, ModelEvent, ModelRequest, ToolResultPart, ToolSpec,
    UserPart,
};
use crate::modes::Effort;
use crate::tools::ToolError;

use crate::session::Recorder;

use super::call::{Admission, Call, CallEnd, admit, calls_of, finish_call};
use super::env::CallEnv;
use super::resolve::SubagentModel;

pub(crate) const NAME: &str = "task";

/// Model requests one subagent may make before it must answer.
const MAX_REQUESTS: usize = 20;

/// The tools a subagent gets when the call names none: it looks, it does not change.
const READ_ONLY: &[&str] = &["read", "grep", "find", "ls"];

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// A few words for the user: what the subagent does.
    description: String,
    /// The whole task for the subagent.
    prompt: String,
    /// Tool names it may use (a subset of yours); default read-only.
    tools: Option<Vec<String>>,
    /// The specialised agent to hand the task to (its own instructions and tools).
    subagent_type: Option<String>,
}

/// The `task` tool. `subagent_type` is offered only where there are custom agents, each named
/// with its description: a session without agents sends the same tool as ever.
pub(crate) fn spec(agents: &[AgentDef]) -> ToolSpec {
    let mut description = "Hand a self-contained investigation to a subagent with its own, empty \
        context: it gets only `prompt` (say everything it needs to know), works with \
        read-only tools (read, grep, find, ls) unless `tools` names others you have, and \
        answers once. Use it for searches across a large codebase or questions whose \
        exploration would fill your context; several `task` calls in one response run \
        at the same time. You receive only its final answer."
        .to_owned();
    let mut input_schema = crate::tools::input_schema::<Input>();
    if agents.is_empty() {
        if let Some(props) = input_schema
            .get_mut("properties")
            .and_then(Value::as_object_mut)
        {
            props.remove("subagent_type");
        }
    } else {
        description.push_str(
            "\n\nSpecialised agents (`subagent_type`; they have their own instructions and \
             tools):",
        );
        for a in agents {
            description.push_str(&format!("\n- {}: {}", a.name, a.description));
        }
        let names: Vec<&str> = agents.iter().map(|a| a.name.as_str()).collect();
        if let Some(p) = input_schema.pointer_mut("/properties/subagent_type") {
            p["enum"] = serde_json::json!(names);
        }
    }
    ToolSpec {
        name: NAME.into(),
        description,
        input_schema,
    }
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

/// Runs one `task` call to its end: the card, the nested loop, the answer.
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
    let Some(model) = env.subagent.clone() else {
        let msg = "Subagents are not available in this turn.";
        finish_call(rec, id, msg, true, ToolStatus::Failed, None).await?;
        return Ok(CallEnd::Done);
    };
    let agent = match input.subagent_type.as_deref() {
        None => None,
        Some(name) => match env.agents.iter().find(|a| a.name == name) {
            Some(a) => Some(a),
            None => {
                let known: Vec<&str> = env.agents.iter().map(|a| a.name.as_str()).collect();
                let msg = format!(
                    "There is no agent `{name}`; {}.",
                    if known.is_empty() {
                        "leave `subagent_type` out".to_owned()
                    } else {
                        format!("use one of: {}", known.join(", "))
                    }
                );
                finish_call(rec, id, &msg, true, ToolStatus::Failed, None).await?;
                return Ok(CallEnd::Done);
            }
        },
    };
    let model = agent
        .and_then(|a| env.agent_models.iter().find(|(n, _)| *n == a.name))
        .map_or(model, |(_, m)| m.clone());
    let allowed = match agent {
        // An agent's `tools` (else every tool of the turn), narrowed by the call's own list.
        Some(a) => agent_tools(env, a, input.tools.as_deref()),
        None => allowed_tools(env, input.tools.as_deref()),
    };
    let mut progress: Vec<String> = Vec::new();
    let outcome = nested_loop(
        rec,
        env,
        &view,
        &model,
        (&input, agent),
        &allowed,
        &mut progress,
        cancel,
    )
    .await?;
    report(rec, id, outcome, &progress).await
}

/// The card's final state and the parent's result: the answer, or why there is none.
async fn report(
    rec: &Recorder,
    id: &str,
    outcome: Nested,
    progress: &[String],
) -> Result<CallEnd, StoreError> {
    let listing = progress_text(progress);
    match outcome {
        Nested::Answer(answer) => {
            let shown = format!("{listing}{answer}");
            finish_call(
                rec,
                id,
                &answer,
                false,
                ToolStatus::Completed,
                Some(vec![ToolContent::Text { text: shown.into() }]),
            )
            .await?;
            Ok(CallEnd::Done)
        }
        Nested::Failed(why) => {
            let msg = format!("The subagent failed: {why}");
            let shown = format!("{listing}{msg}");
            finish_call(
                rec,
                id,
                &msg,
                true,
                ToolStatus::Failed,
                Some(vec![ToolContent::Text { text: shown.into() }]),
            )
            .await?;
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

enum Nested {
    Answer(String),
    Failed(String),
    Cancelled,
}

/// The tools the subagent may use: those named (default: the read-only ones) that the parent has,
/// never `task` itself or `exit_plan`.
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

fn allowed_tools(env: &CallEnv, named: Option<&[String]>) -> Vec<String> {
    let wanted: Vec<String> = match named {
        Some(list) => list.to_vec(),
        None => READ_ONLY.iter().map(|s| (*s).to_owned()).collect(),
    };
    wanted
        .into_iter()
        .filter(|n| n != NAME && n != super::exit_plan::NAME && env.tools.get(n).is_some())
        .collect()
}

#[allow(clippy::too_many_arguments)]
async fn nested_loop(
    rec: &Recorder,
    env: &CallEnv,
    card: &ToolCallView,
    model: &SubagentModel,
    (input, agent): (&Input, Option<&AgentDef>),
    allowed: &[String],
    progress: &mut Vec<String>,
    cancel: &CancellationToken,
) -> Result<Nested, StoreError> {
    let specs: Vec<ToolSpec> = allowed
        .iter()
        .filter_map(|n| env.tools.get(n).map(|t| t.spec()))
        .collect();
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
    let mut messages = vec![Message::User {
        content: vec![UserPart::Text {
            text: input.prompt.as_str().into(),
        }],
    }];
    let mut continues = 0;
    for round in 0..MAX_REQUESTS {
        let last = round + 1 == MAX_REQUESTS;
        // The last request gets no tools: the subagent must answer with what it has.
        let tools = if last { vec![] } else { specs.clone() };
        let request = request(model, &system, messages.clone(), tools);
        let response = match answer(model, request, cancel).await {
            Ok(r) => r,
            Err(end) => return Ok(end),
        };
        // What the subagent spends counts in the session's cost; the parent's context is
        // unchanged by it.
        rec.record_side_usage(
            &model.info.id,
            response.usage,
            model.info.price.map(|p| p.cost(&response.usage)),
        )?;
        let calls = calls_of(&response.content);
        messages.push(Message::Assistant {
            content: response.content.as_slice().into(),
        });
        if calls.is_empty() {
            if let Some(note) =
                super::hooks::on_stop(rec, env, HookEvent::SubagentStop, &mut continues, cancel)
                    .await
            {
                messages.push(Message::User {
                    content: vec![UserPart::Text { text: note.into() }],
                });
                continue;
            }
            return Ok(Nested::Answer(answer_text(&response.content)));
        }
        let mut results = Vec::with_capacity(calls.len());
        for Call {
            id: call_id,
            name,
            arguments,
        } in calls
        {
            let (content, is_error) = inner_call(
                rec, env, card, allowed, &call_id, &name, &arguments, progress, cancel,
            )
            .await?;
            if cancel.is_cancelled() {
                return Ok(Nested::Cancelled);
            }
            results.push(ToolResultPart {
                call_id,
                content: content.into(),
                is_error,
            });
        }
        messages.push(Message::ToolResults { results });
    }
    Ok(Nested::Failed(format!(
        "it used its {MAX_REQUESTS} model requests without answering"
    )))
}

/// A request of the subagent's conversation.
fn request(
    model: &SubagentModel,
    system: &str,
    messages: Vec<Message>,
    tools: Vec<ToolSpec>,
) -> ModelRequest {
    ModelRequest {
        model: model.info.model.clone(),
        system: system.to_owned(),
        messages,
        tools,
        effort: Effort::Default,
        reasoning: model.info.reasoning.is_reasoner(),
        adaptive_thinking: model.info.reasoning == ReasoningStyle::Adaptive,
        web_search: false,
        max_output_tokens: model.info.max_output_tokens.map(|m| m.min(16_000)),
        // A subagent's conversation is its own: no shared cache key with its parent's.
        cache_key: None,
    }
}

/// The text of the subagent's final response.
fn answer_text(content: &[AssistantPart]) -> String {
    let mut text = String::new();
    for part in content {
        match part {
            AssistantPart::Text { text: t } => text.push_str(t),
            AssistantPart::ToolCall { .. }
            | AssistantPart::Reasoning { .. }
            | AssistantPart::Opaque { .. } => {}
        }
    }
    if text.trim().is_empty() {
        "(The subagent gave no answer.)".to_owned()
    } else {
        text
    }
}

/// One model request of the subagent, to its complete response (or how it ended without one).
async fn answer(
    model: &SubagentModel,
    request: ModelRequest,
    cancel: &CancellationToken,
) -> Result<crate::model::ModelResponse, Nested> {
    let mut stream = model.client.stream(request, cancel.child_token());
    loop {
        let item = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(Nested::Cancelled),
            item = stream.next() => item,
        };
        match item {
            Some(Ok(ModelEvent::Completed(r))) => return Ok(r),
            Some(Ok(_)) => {}
            Some(Err(e)) if e.kind == ModelErrorKind::Cancelled => return Err(Nested::Cancelled),
            Some(Err(e)) => return Err(Nested::Failed(e.message)),
            None => return Err(Nested::Failed("the model's stream ended early".into())),
        }
    }
}

/// One tool call of the subagent: the same permission policy and tools as the parent's, its
/// events hidden, its line added to the card's progress.
#[allow(clippy::too_many_arguments)]
async fn inner_call(
    rec: &Recorder,
    env: &CallEnv,
    card: &ToolCallView,
    allowed: &[String],
    call_id: &str,
    name: &str,
    arguments: &str,
    progress: &mut Vec<String>,
    cancel: &CancellationToken,
) -> Result<(String, bool), StoreError> {
    let tool = match env.tools.get(name) {
        Some(t) if allowed.iter().any(|a| a == name) => t.clone(),
        _ => {
            return Ok((
                format!(
                    "`{name}` is not one of your tools; use {}.",
                    allowed.join(", ")
                ),
                true,
            ));
        }
    };
    let input: Value = match serde_json::from_str(if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    }) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) | Err(_) => {
            return Ok((
                format!("The arguments of `{name}` are not a JSON object."),
                true,
            ));
        }
    };
    let cwd = env.cwd.as_path();
    let title = tool.describe(&input, cwd).title;
    progress.push(title.clone());
    rec.emit(Event::ToolCallUpdate(ToolCallUpdateView {
        id: card.id.clone(),
        status: Some(ToolStatus::InProgress),
        content: Some(vec![ToolContent::Text {
            text: progress_text(progress).into(),
        }]),
        ..Default::default()
    }))
    .await;
    // A question about this call is asked on the subagent's card, which the editor knows.
    let asked_about = ToolCallView {
        title: format!("{} — {title}", card.title),
        ..card.clone()
    };
    match admit(rec, env, &asked_about, name, &tool, &input, cancel).await {
        Admission::Run(_) => {}
        Admission::Refused(why) => return Ok((why, true)),
        Admission::Cancelled => return Ok(("Cancelled by the user.".into(), true)),
    }
    let hidden = rec.hiding_call(call_id);
    let ctx = env.tool_context(&hidden, call_id, env.mode(rec), cancel);
    let result = tokio::select! {
        biased;
        () = cancel.cancelled() => return Ok(("Cancelled.".into(), true)),
        r = tool.call(input.clone(), &ctx) => r,
    };
    Ok(match result {
        Ok(mut out) => {
            let said =
                super::hooks::after_call(rec, env, name, call_id, &input, &out.text, cancel).await;
            if let Some(said) = said {
                out.text.push_str("\n\n");
                out.text.push_str(&said);
            }
            (out.text, false)
        }
        Err(
            ToolError::RespondToModel(msg)
            | ToolError::Fatal(msg)
            | ToolError::Cancelled(msg)
            | ToolError::SessionLog(msg),
        ) => (msg, true),
    })
}

/// The card's progress: the tools the subagent ran, one per line.
fn progress_text(progress: &[String]) -> String {
    if progress.is_empty() {
        return String::new();
    }
    let mut out = String::from("Subagent steps:\n");
    for p in progress {
        out.push_str(&format!("- {}\n", p.replace('\n', " ")));
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// The schema derived from `Input` is the one the model was shown when it was hand-written.
    #[test]
    fn the_schema_is_derived_from_the_input() {
        assert_eq!(
            super::spec(&[]).input_schema,
            json!({
                "type": "object",
                "properties": {
                    "description": {"type": "string", "description": "A few words for the user: what the subagent does."},
                    "prompt": {"type": "string", "description": "The whole task for the subagent."},
                    "tools": {"type": "array", "items": {"type": "string"}, "description": "Tool names it may use (a subset of yours); default read-only."}
                },
                "required": ["description", "prompt"]
            })
        );
    }
}
