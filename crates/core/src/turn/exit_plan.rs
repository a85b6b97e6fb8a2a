//! `exit_plan`: how plan mode ends (`docs/permissions.md`). The model proposes its plan; the user picks
//! "Yes, and auto-accept edits" (→ `auto`), "Yes, ask before edits" (→ `ask`) or "No, keep
//! planning", never above the session's ceiling. Offered only in plan mode.

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::content::{ToolCallView, ToolContent, ToolKind, ToolStatus};
use crate::events::Event;
use crate::log::{EntryKind, StoreError};
use crate::model::ToolSpec;
use crate::modes::Mode;
use crate::permissions::{OptionKind, PermissionOption, PermissionRequest};
use crate::turn::{CallEnd, CallEnv, Recorder, finish_call, lock, permission};

pub(crate) const NAME: &str = "exit_plan";

pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.into(),
        description: "Present your plan to the user and ask to leave plan mode so you can start \
            making changes. Call it once the plan is complete; the user may approve (you can then \
            edit and run commands) or ask you to keep planning."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {"plan": {"type": "string", "description": "The plan, in markdown: what will be done, step by step."}},
            "required": ["plan"]
        }),
    }
}

pub(crate) async fn run(
    rec: &Recorder,
    env: &CallEnv,
    id: &str,
    input: &Value,
    cancel: &CancellationToken,
) -> Result<CallEnd, StoreError> {
    let plan = input
        .get("plan")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let view = ToolCallView {
        id: id.to_owned(),
        title: "Ready to code?".into(),
        kind: ToolKind::SwitchMode,
        status: ToolStatus::Pending,
        locations: vec![],
        content: vec![ToolContent::Text { text: plan.clone() }],
        raw_input: Some(input.clone()),
    };
    rec.record(EntryKind::ToolCall {
        name: NAME.into(),
        call: view.clone(),
    })?;
    rec.emit(Event::ToolCall(view.clone())).await;
    let fail = |msg: &str| msg.to_owned();
    let (mode, harness) = {
        let core = lock(&rec.core);
        (core.state.mode, core.state.harness)
    };
    let refusal = if plan.trim().is_empty() {
        Some(fail("`plan` is empty: describe what you will do."))
    } else if mode != Mode::Plan {
        Some(fail("You are not in plan mode; there is nothing to exit."))
    } else if !harness.may_ask() || env.approver.is_none() {
        Some(fail(
            "No one can approve a plan in this session, so it stays a plan. Stay in plan mode.",
        ))
    } else if env.ceiling <= Mode::Plan {
        Some(fail(
            "This session cannot leave plan mode (its ceiling is plan).",
        ))
    } else {
        None
    };
    if let Some(msg) = refusal {
        finish_call(rec, id, &msg, true, ToolStatus::Failed, None).await?;
        return Ok(CallEnd::Done);
    }
    let mut options = Vec::new();
    if env.ceiling >= Mode::Auto {
        options.push(PermissionOption {
            id: "allow_always".into(),
            name: "Yes, and auto-accept edits".into(),
            kind: OptionKind::AllowAlways,
        });
    }
    options.push(PermissionOption {
        id: "allow_once".into(),
        name: "Yes, ask before edits".into(),
        kind: OptionKind::AllowOnce,
    });
    options.push(PermissionOption {
        id: "reject_once".into(),
        name: "No, keep planning".into(),
        kind: OptionKind::RejectOnce,
    });
    let Some(approver) = env.approver.as_ref() else {
        return Ok(CallEnd::Done);
    };
    let req = PermissionRequest {
        call: view,
        options,
    };
    let kind = match permission::ask_user(rec, env, approver.as_ref(), req, cancel).await {
        permission::Asked::Cancelled => {
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
        // Nobody answered in time: the plan stays a plan.
        permission::Asked::TimedOut => None,
        permission::Asked::Picked(kind) => kind,
    };
    let new_mode = match kind {
        Some(OptionKind::AllowAlways) => Mode::Auto,
        Some(OptionKind::AllowOnce) => Mode::Ask,
        Some(OptionKind::RejectOnce | OptionKind::RejectAlways) | None => {
            let msg = "The user wants to keep planning. Stay in plan mode: refine the plan, then call exit_plan again.";
            finish_call(rec, id, msg, false, ToolStatus::Completed, None).await?;
            return Ok(CallEnd::Done);
        }
    }
    .min(env.ceiling);
    rec.record(EntryKind::Mode { mode: new_mode })?;
    rec.sync()?;
    rec.emit(Event::ModeChanged { mode: new_mode }).await;
    let settings = {
        let core = lock(&rec.core);
        crate::runtime::settings_for(&core.state, &env.catalog, env.ceiling)
    };
    rec.emit(Event::SettingsChanged(settings)).await;
    let msg =
        format!("The user approved the plan. You are now in `{new_mode}` mode: carry it out.");
    finish_call(rec, id, &msg, false, ToolStatus::Completed, None).await?;
    Ok(CallEnd::Done)
}
