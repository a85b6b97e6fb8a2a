//! `exit_plan`: how plan mode ends (`docs/permissions.md`). The model proposes its plan; the user
//! picks "Yes, and auto-accept edits" (→ `auto`), "Yes, ask before edits" (→ `ask`) or "No, keep
//! planning", never above the session's ceiling.
//!
//! An ordinary tool of the turn's registry, built for each turn (it changes the session's mode,
//! so it holds the turn's recorder): callable in plan mode only, offered only where the session
//! can leave it, and it puts its own question to the user ([`Approval::OwnQuestion`]).

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::Value;

use crate::catalog::Catalog;
use crate::content::{ToolCallView, ToolContent, ToolKind, ToolStatus};
use crate::events::Event;
use crate::log::EntryKind;
use crate::model::ToolSpec;
use crate::modes::Mode;
use crate::permissions::{Approver, OptionKind, PermissionOption, PermissionRequest};
use crate::session::Recorder;
use crate::tools::{Access, Approval, CallDescription, Tool, ToolContext, ToolError, ToolOutput};

use super::ask::{Asked, ask_user};
use super::env::CallEnv;

pub(crate) const NAME: &str = "exit_plan";

const TITLE: &str = "Ready to code?";

/// `exit_plan` for one turn.
pub(super) struct ExitPlan {
    rec: Recorder,
    approver: Option<Arc<dyn Approver>>,
    /// Whether the session's harness lets anyone be asked.
    may_ask: bool,
    ceiling: Mode,
    /// A read-only command (`/review`) never leaves plan mode.
    read_only: bool,
    timeout: Duration,
    catalog: Arc<Catalog>,
    /// The custom agents the user may choose (for the settings shown after the change).
    agents: Vec<(String, String)>,
}

impl ExitPlan {
    pub fn new(rec: &Recorder, env: &CallEnv) -> Self {
        Self {
            rec: rec.clone(),
            approver: env.approver.clone(),
            may_ask: env.harness.may_ask(),
            ceiling: env.ceiling,
            read_only: env.read_only,
            timeout: env.permission_timeout,
            catalog: env.catalog.clone(),
            agents: env
                .agents
                .iter()
                .map(|a| (a.name.clone(), a.description.clone()))
                .collect(),
        }
    }

    /// Why the plan cannot be put to the user, if it cannot.
    fn refusal(&self, plan: &str) -> Option<&'static str> {
        if plan.trim().is_empty() {
            Some("`plan` is empty: describe what you will do.")
        } else if self.rec.mode() != Mode::Plan {
            Some("You are not in plan mode; there is nothing to exit.")
        } else if !self.may_ask || self.approver.is_none() {
            Some(
                "No one can approve a plan in this session, so it stays a plan. Stay in plan mode.",
            )
        } else if self.ceiling <= Mode::Plan {
            Some("This session cannot leave plan mode (its ceiling is plan).")
        } else {
            None
        }
    }

    /// The choices, never above the ceiling.
    fn options(&self) -> Vec<PermissionOption> {
        let mut options = Vec::new();
        if self.ceiling >= Mode::Auto {
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
        options
    }

    /// Asks the user about the plan shown on the call's card; `None`: keep planning.
    async fn ask(
        &self,
        card: ToolCallView,
        ctx: &ToolContext<'_>,
    ) -> Result<Option<Mode>, ToolError> {
        let Some(approver) = self.approver.as_ref() else {
            return Ok(None);
        };
        let req = PermissionRequest {
            call: card,
            options: self.options(),
        };
        let session = self.rec.session_id();
        let kind = match ask_user(session, self.timeout, approver.as_ref(), req, &ctx.cancel).await
        {
            Asked::Cancelled => return Err(ToolError::Cancelled("Cancelled by the user.".into())),
            // Nobody answered in time, or the editor could not ask: the plan stays a plan.
            Asked::TimedOut | Asked::Unanswered(_) => None,
            Asked::Picked(kind) => kind,
        };
        Ok(match kind {
            Some(OptionKind::AllowAlways) => Some(Mode::Auto.min(self.ceiling)),
            Some(OptionKind::AllowOnce) => Some(Mode::Ask.min(self.ceiling)),
            Some(OptionKind::RejectOnce | OptionKind::RejectAlways) | None => None,
        })
    }

    /// Records the new mode and tells the editor.
    async fn switch(&self, mode: Mode) -> Result<(), ToolError> {
        let fatal = |e: crate::log::StoreError| ToolError::SessionLog(e.to_string());
        self.rec.record(EntryKind::Mode { mode }).map_err(fatal)?;
        self.rec.sync().map_err(fatal)?;
        self.rec.emit(Event::ModeChanged { mode }).await;
        let settings = self.rec.read(|state| {
            crate::session_view::settings_for(state, &self.catalog, self.ceiling, &self.agents)
        });
        self.rec.emit(Event::SettingsChanged(settings)).await;
        Ok(())
    }
}

/// `exit_plan`'s arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {
    /// The plan, in markdown: what will be done, step by step.
    plan: String,
}

/// The plan in the arguments; empty when there is none (the call is then refused as empty).
fn plan_of(input: &Value) -> String {
    Input::deserialize(input)
        .map(|i| i.plan)
        .unwrap_or_default()
}

impl Tool for ExitPlan {
    fn name(&self) -> &str {
        NAME
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: "Present your plan to the user and ask to leave plan mode so you can \
                start making changes. Call it once the plan is complete; the user may approve \
                (you can then edit and run commands) or ask you to keep planning."
                .into(),
            input_schema: crate::tools::input_schema::<Input>(),
        }
    }

    fn kind(&self) -> ToolKind {
        ToolKind::SwitchMode
    }

    fn describe(&self, _input: &Value, _cwd: &std::path::Path) -> CallDescription {
        CallDescription {
            title: TITLE.into(),
            locations: vec![],
        }
    }

    fn card_content(&self, input: &Value) -> Vec<ToolContent> {
        vec![ToolContent::Text {
            text: plan_of(input).into(),
        }]
    }

    fn access(&self, _input: &Value, _cwd: &std::path::Path) -> Access {
        Access::None
    }

    fn approval(&self) -> Approval {
        Approval::OwnQuestion
    }

    fn callable(&self, mode: Mode) -> bool {
        mode == Mode::Plan
    }

    fn offered(&self, mode: Mode) -> bool {
        mode == Mode::Plan && self.ceiling > Mode::Plan && !self.read_only
    }

    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let plan = plan_of(&input);
            if let Some(why) = self.refusal(&plan) {
                return Err(ToolError::RespondToModel(why.into()));
            }
            let card = ToolCallView {
                id: ctx.call_id.clone(),
                title: TITLE.into(),
                kind: ToolKind::SwitchMode,
                status: ToolStatus::Pending,
                locations: vec![],
                content: self.card_content(&input),
                raw_input: Some(input),
            };
            self.rec
                .emit(crate::events::Event::PlanProposal {
                    markdown: plan.clone(),
                })
                .await;
            let text = match self.ask(card, ctx).await? {
                None => "The user wants to keep planning. Stay in plan mode: refine the plan, \
                         then call exit_plan again."
                    .to_owned(),
                Some(mode) => {
                    self.switch(mode).await?;
                    format!(
                        "The user approved the plan. You are now in `{mode}` mode: carry it out."
                    )
                }
            };
            Ok(ToolOutput {
                text,
                content: vec![],
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// The schema derived from `Input` is the one the model was shown when it was hand-written.
    #[test]
    fn the_schema_is_derived_from_the_input() {
        assert_eq!(
            *crate::tools::input_schema::<super::Input>(),
            json!({
                "type": "object",
                "properties": {"plan": {"type": "string", "description": "The plan, in markdown: what will be done, step by step."}},
                "required": ["plan"]
            })
        );
        assert_eq!(super::plan_of(&json!({"plan": "1. read"})), "1. read");
        assert_eq!(super::plan_of(&json!({"plan": 3})), "");
    }
}
