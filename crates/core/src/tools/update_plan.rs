//! `update_plan`: the model keeps a visible plan. Sent to the editor as a `plan` update and
//! recorded in the log, so `session/load` replays it.

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::content::{PlanEntry, ToolKind};
use crate::model::ToolSpec;
use crate::tools::{
    Access, CallDescription, Tool, ToolContext, ToolError, ToolOutput, input_schema,
};

pub struct UpdatePlan;

/// The tool's name. Its calls get no tool call card: the `plan` update is what the user sees.
pub const UPDATE_PLAN: &str = "update_plan";

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    entries: Vec<PlanEntry>,
}

impl Tool for UpdatePlan {
    fn name(&self) -> &str {
        UPDATE_PLAN
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: UPDATE_PLAN.into(),
            description: "Your plan as a checklist the user sees. Send the whole list each \
                time, one entry in_progress while you work on it."
                .into(),
            input_schema: input_schema::<Input>(),
        }
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Think
    }

    fn describe(&self, _input: &Value, _cwd: &std::path::Path) -> CallDescription {
        CallDescription {
            title: "Update plan".into(),
            locations: vec![],
        }
    }

    fn access(&self, _input: &Value, _cwd: &std::path::Path) -> Access {
        Access::None
    }

    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let input: Input = serde_json::from_value(input).map_err(|e| {
                ToolError::RespondToModel(format!("invalid update_plan arguments: {e}"))
            })?;
            let n = input.entries.len();
            let done = input
                .entries
                .iter()
                .filter(|e| e.status == crate::content::PlanStatus::Completed)
                .count();
            ctx.recorder
                .plan(input.entries)
                .await
                .map_err(ToolError::SessionLog)?;
            Ok(ToolOutput {
                text: format!("Plan updated: {done} of {n} entries completed."),
                content: vec![],
            })
        })
    }
}
