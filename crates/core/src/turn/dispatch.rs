//! Stage: the tool calls of one model response. A call's lifecycle is in one place
//! ([`run_call`]): its card, its admission (policy → approval → paths checked again →
//! checkpoint), the sandbox it runs in (from the mode at that moment), the run (raced against
//! cancel), and its result. The calls of a response run one after another, except several
//! `task` calls, which run at once.

use futures::StreamExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::content::{ToolCallUpdateView, ToolCallView, ToolKind, ToolStatus};
use crate::events::{Event, TurnOutcome};
use crate::failure::FailureKind;
use crate::log::{EntryKind, StopReason, StoreError};
use crate::session::Recorder;
use crate::tools::{Access, Approval, Tool, ToolError, ToolOutput};

use super::call::{Admission, Call, CallEnd, admit, arguments, finish_call, log_failed, refuse};
use super::env::CallEnv;
use super::subagent;

/// Runs a response's calls. `Some(outcome)` when they end the turn (a cancel, a fatal tool
/// error); every call has a result either way, so the next request is well formed.
pub(super) async fn run_all(
    rec: &Recorder,
    env: &CallEnv,
    calls: &[Call],
    cancel: &CancellationToken,
) -> Result<Option<TurnOutcome>, StoreError> {
    if calls.len() > 1 && subagent::all_tasks(env, calls) {
        return run_at_once(rec, env, calls, cancel).await;
    }
    for (i, call) in calls.iter().enumerate() {
        if cancel.is_cancelled() {
            skip(
                rec,
                env,
                &calls[i..],
                "Cancelled by the user before it ran.",
            )
            .await?;
            return Ok(Some(TurnOutcome::ended(StopReason::Cancelled)));
        }
        match run_call(rec, env, call, cancel).await? {
            CallEnd::Done => {}
            CallEnd::Cancelled => {
                skip(
                    rec,
                    env,
                    &calls[i + 1..],
                    "Cancelled by the user before it ran.",
                )
                .await?;
                return Ok(Some(TurnOutcome::ended(StopReason::Cancelled)));
            }
            CallEnd::Fatal(msg) => {
                skip(
                    rec,
                    env,
                    &calls[i + 1..],
                    "Not run: an earlier tool failed fatally.",
                )
                .await?;
                return Ok(Some(TurnOutcome::failed(FailureKind::ToolFailed, msg)));
            }
            CallEnd::LogFailed(e) => return Ok(Some(log_failed(&e))),
        }
    }
    Ok(None)
}

/// Subagents work on their own: several of one response run at once (bounded).
async fn run_at_once(
    rec: &Recorder,
    env: &CallEnv,
    calls: &[Call],
    cancel: &CancellationToken,
) -> Result<Option<TurnOutcome>, StoreError> {
    // Collected first: a lazy `map` here makes the turn's future not provably `Send`.
    let mut runs = Vec::with_capacity(calls.len());
    for call in calls {
        runs.push(run_call(rec, env, call, cancel));
    }
    let ends: Vec<Result<CallEnd, StoreError>> = futures::stream::iter(runs)
        .buffered(env.subagent_parallel.max(1))
        .collect()
        .await;
    let mut stop = None;
    for end in ends {
        match end? {
            CallEnd::Done => {}
            CallEnd::Cancelled => stop = Some(TurnOutcome::ended(StopReason::Cancelled)),
            CallEnd::Fatal(msg) => {
                stop = Some(TurnOutcome::failed(FailureKind::ToolFailed, msg));
            }
            CallEnd::LogFailed(e) => return Ok(Some(log_failed(&e))),
        }
    }
    Ok(stop)
}

/// Gives each call that will not run its result.
/// Calls of the response that will not run: each is shown (its card, then its result), so the
/// editor never gets an update of a card it was not sent, and the model gets a result for each.
async fn skip(rec: &Recorder, env: &CallEnv, calls: &[Call], why: &str) -> Result<(), StoreError> {
    for call in calls {
        let input = arguments(&call.arguments);
        let quiet;
        let rec = if call.name == crate::tools::UPDATE_PLAN {
            quiet = rec.hiding_call(&call.id);
            &quiet
        } else {
            rec
        };
        let view = card(env, &call.id, &call.name, input);
        show_card(rec, &call.name, &view).await?;
        refuse(rec, &call.id, why).await?;
    }
    Ok(())
}

/// A call's card as first shown: what its tool says of it, or its name for an unknown tool.
fn card(env: &CallEnv, id: &str, name: &str, input: Value) -> ToolCallView {
    let tool = env.tools.get(name);
    let desc = tool.map(|t| t.describe(&input, &env.cwd));
    ToolCallView {
        id: id.to_owned(),
        title: desc
            .as_ref()
            .map_or_else(|| name.to_owned(), |d| d.title.clone()),
        kind: tool.map_or(ToolKind::Other, |t| t.kind()),
        status: ToolStatus::Pending,
        locations: desc.map(|d| d.locations).unwrap_or_default(),
        content: tool.map(|t| t.card_content(&input)).unwrap_or_default(),
        raw_input: Some(input),
    }
}

/// One call, from its card to its result.
pub(super) async fn run_call(
    rec: &Recorder,
    env: &CallEnv,
    call: &Call,
    cancel: &CancellationToken,
) -> Result<CallEnd, StoreError> {
    let Call {
        id,
        name,
        arguments: raw,
    } = call;
    if name == subagent::NAME && env.subagent.is_some() {
        return subagent::run(rec, env, id, raw, cancel).await;
    }
    let input = arguments(raw);
    let Some(tool) = env.tools.callable(name, env.mode(rec)) else {
        return unknown_tool(rec, id, name, input).await;
    };
    // `update_plan` has no card: its `plan` update is what the editor shows.
    let quiet;
    let rec = if name == crate::tools::UPDATE_PLAN {
        quiet = rec.hiding_call(id);
        &quiet
    } else {
        rec
    };
    let view = card(env, id, name, input.clone());
    show_card(rec, name, &view).await?;
    if input.is_null() {
        let msg = format!("The arguments of `{name}` are not a JSON object: {raw}");
        refuse(rec, id, &msg).await?;
        return Ok(CallEnd::Done);
    }
    let access = match tool.approval() {
        // The tool asks the user itself, about exactly this call.
        Approval::OwnQuestion => tool.access(&input, &env.cwd),
        Approval::Policy => match admit(rec, env, &view, name, tool, &input, cancel).await {
            Admission::Run(access) => access,
            Admission::Refused(why) => {
                refuse(rec, id, &why).await?;
                return Ok(CallEnd::Done);
            }
            Admission::Cancelled => {
                refuse(rec, id, "Cancelled by the user.").await?;
                return Ok(CallEnd::Cancelled);
            }
        },
    };
    let ran = Ran {
        id,
        name,
        input,
        access,
    };
    run_admitted(rec, env, tool.as_ref(), ran, cancel).await
}

/// A call that was admitted.
struct Ran<'a> {
    id: &'a str,
    name: &'a str,
    input: Value,
    /// What it may touch, as decided.
    access: Access,
}

/// Runs an admitted call in the sandbox of the mode now (after any question was answered),
/// raced against cancel, and records its result.
async fn run_admitted(
    rec: &Recorder,
    env: &CallEnv,
    tool: &dyn Tool,
    ran: Ran<'_>,
    cancel: &CancellationToken,
) -> Result<CallEnd, StoreError> {
    let id = ran.id;
    let result = match tool.approval() {
        Approval::Policy => {
            rec.emit(Event::ToolCallUpdate(ToolCallUpdateView {
                id: id.to_owned(),
                status: Some(ToolStatus::InProgress),
                ..Default::default()
            }))
            .await;
            let ctx = env.tool_context(rec, id, env.mode(rec), cancel);
            tokio::select! {
                biased;
                () = cancel.cancelled() => None,
                r = tool.call(ran.input.clone(), &ctx) => Some(r),
            }
        }
        // It asks the user, and answers a cancel while it asks itself.
        Approval::OwnQuestion => {
            let ctx = env.tool_context(rec, id, env.mode(rec), cancel);
            Some(tool.call(ran.input.clone(), &ctx).await)
        }
    };
    match result {
        None => {
            refuse(rec, id, "Cancelled by the user while it ran.").await?;
            Ok(CallEnd::Cancelled)
        }
        Some(Ok(out)) => {
            succeeded(rec, env, &ran, out, cancel).await?;
            Ok(CallEnd::Done)
        }
        Some(Err(ToolError::RespondToModel(msg))) => {
            refuse(rec, id, &msg).await?;
            Ok(CallEnd::Done)
        }
        Some(Err(ToolError::Fatal(msg))) => {
            refuse(rec, id, &msg).await?;
            Ok(CallEnd::Fatal(msg))
        }
        Some(Err(ToolError::Cancelled(msg))) => {
            refuse(rec, id, &msg).await?;
            Ok(CallEnd::Cancelled)
        }
        // The log is what failed: nothing more is recorded; the turn stops.
        Some(Err(ToolError::SessionLog(msg))) => Ok(CallEnd::LogFailed(msg)),
    }
}

/// Records the call as the model made it and shows its card.
async fn show_card(rec: &Recorder, name: &str, view: &ToolCallView) -> Result<(), StoreError> {
    rec.record(EntryKind::ToolCall {
        name: name.to_owned(),
        call: Box::new(view.clone()),
    })?;
    rec.emit(Event::ToolCall(view.clone())).await;
    Ok(())
}

/// A call of a tool this turn does not have: a card, and an error for the model.
async fn unknown_tool(
    rec: &Recorder,
    id: &str,
    name: &str,
    input: Value,
) -> Result<CallEnd, StoreError> {
    let view = ToolCallView {
        id: id.to_owned(),
        title: name.to_owned(),
        kind: ToolKind::Other,
        status: ToolStatus::Pending,
        locations: vec![],
        content: vec![],
        raw_input: Some(input),
    };
    show_card(rec, name, &view).await?;
    let msg = format!("Unknown tool `{name}`. Use one of the tools you were given.");
    refuse(rec, id, &msg).await?;
    Ok(CallEnd::Done)
}

/// The result of a call that succeeded: what the user sees, and what the model reads (plus the
/// instructions of a nested package the call's files are in, the first time).
async fn succeeded(
    rec: &Recorder,
    env: &CallEnv,
    ran: &Ran<'_>,
    mut out: ToolOutput,
    cancel: &CancellationToken,
) -> Result<(), StoreError> {
    // What the user sees is built before the model's text gets nested instructions.
    let content = if !out.content.is_empty() {
        Some(std::mem::take(&mut out.content))
    } else if crate::tools::markdown::renders(ran.name) {
        crate::tools::markdown::file_tool_result(ran.name, &ran.input, &env.cwd, &out.text)
    } else {
        None
    };
    if let Access::Read { paths } | Access::Write { paths } = &ran.access
        && let Some(extra) = rec.nested_instructions(&env.own_files(), paths, &env.cwd, &env.roots)
    {
        out.text.push_str(&extra);
    }
    if let Some(said) =
        super::hooks::after_call(rec, env, ran.name, ran.id, &ran.input, &out.text, cancel).await
    {
        out.text.push_str("\n\n");
        out.text.push_str(&said);
    }
    finish_call(
        rec,
        ran.id,
        &out.text,
        false,
        ToolStatus::Completed,
        content,
    )
    .await
}

#[cfg(test)]
mod tests;
