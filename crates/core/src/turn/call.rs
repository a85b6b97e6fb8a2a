//! The steps every tool call shares, the turn's own and a subagent's alike: its arguments, its
//! admission (policy, approval, paths checked again, checkpoint) and its recorded end.

use std::path::Path;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::content::{ToolCallUpdateView, ToolCallView, ToolContent, ToolStatus};
use crate::events::{Event, TurnOutcome};
use crate::failure::FailureKind;
use crate::log::{EntryKind, StoreError};
use crate::model::AssistantPart;
use crate::session::Recorder;
use crate::tools::{Access, Tool};

use super::env::CallEnv;
use super::permission;

/// One tool call of a response.
pub(super) struct Call {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// The tool calls of a response, in order.
pub(super) fn calls_of(content: &[AssistantPart]) -> Vec<Call> {
    content
        .iter()
        .filter_map(|p| match p {
            AssistantPart::ToolCall {
                id,
                name,
                arguments,
            } => Some(Call {
                id: id.clone(),
                name: name.clone(),
                arguments: arguments.clone(),
            }),
            AssistantPart::Text { .. }
            | AssistantPart::Reasoning { .. }
            | AssistantPart::Opaque { .. } => None,
        })
        .collect()
}

/// How a call ended, for the turn.
pub(super) enum CallEnd {
    Done,
    Cancelled,
    Fatal(String),
    /// A tool could not write the session log (the error's text): the turn stops.
    LogFailed(String),
}

/// The turn's end when the session log cannot be written.
pub(super) fn log_failed(error: &str) -> TurnOutcome {
    TurnOutcome::failed(
        FailureKind::SessionLogWrite,
        format!("The session log could not be written, so the turn was stopped: {error}"),
    )
}

/// A call's arguments: a JSON object (empty arguments are `{}`), else `Null`.
pub(super) fn arguments(raw: &str) -> Value {
    let raw = if raw.trim().is_empty() { "{}" } else { raw };
    match serde_json::from_str(raw) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) | Err(_) => Value::Null,
    }
}

/// What [`admit`] says about a call.
pub(super) enum Admission {
    /// Run it; what it will touch, as decided.
    Run(Access),
    /// Refused; the text tells the model why.
    Refused(String),
    /// The turn was cancelled while the user was being asked.
    Cancelled,
}

/// Everything between a call's card and its run, for the turn's calls and a subagent's alike:
/// the policy's decision (asking the user about `asked_about` when it says so), the paths checked
/// again after the answer, and the checkpoint of what the call may change.
pub(super) async fn admit(
    rec: &Recorder,
    env: &CallEnv,
    asked_about: &ToolCallView,
    name: &str,
    tool: &Arc<dyn Tool>,
    input: &Value,
    cancel: &CancellationToken,
) -> Admission {
    let cwd = env.cwd.as_path();
    if let Some(why) = tool.pointless(input) {
        return Admission::Refused(why);
    }
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

/// What a permission request about this call shows, computed only when one is made. Reads (and
/// for `edit`, applies to) the file: off the runtime threads, like the tools.
fn previewer(
    tool: &Arc<dyn Tool>,
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

/// Records a call's result (what the model gets) and shows the card's final state.
pub(super) async fn finish_call(
    rec: &Recorder,
    id: &str,
    output: &str,
    is_error: bool,
    status: ToolStatus,
    content: Option<Vec<ToolContent>>,
) -> Result<(), StoreError> {
    // The card shows the output itself unless the tool made its own view: one text for both.
    let output: std::sync::Arc<str> = output.into();
    let update = ToolCallUpdateView {
        id: id.to_owned(),
        status: Some(status),
        content: content.or_else(|| {
            Some(vec![ToolContent::Text {
                text: output.clone(),
            }])
        }),
        ..Default::default()
    };
    // The log keeps the output once (`rawOutput` is made from it again on replay).
    let shown = ToolCallUpdateView {
        raw_output: Some(crate::content::raw_output(&output)),
        ..update.clone()
    };
    rec.record(EntryKind::ToolResult {
        call_id: id.to_owned(),
        output,
        is_error,
        update: Box::new(update),
    })?;
    rec.emit(Event::ToolCallUpdate(shown)).await;
    Ok(())
}

/// A call that did not run: its error is its result.
pub(super) async fn refuse(rec: &Recorder, id: &str, why: &str) -> Result<(), StoreError> {
    finish_call(rec, id, why, true, ToolStatus::Failed, None).await
}
