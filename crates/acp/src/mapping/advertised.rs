//! The updates and fields of schema 1.20 that depend on what the client advertised or sent:
//! plans by id, notices, compactions, and a client's system prompt. Pure, like the rest of
//! `mapping`; which clients get them is decided in `mapping::updates`.

use agent_client_protocol_schema::v1 as acp;
use ferrite_core::events::CompactionStage;
use ferrite_core::prompt::{ClientPrompt, ClientPromptMode};

use super::text_block;

/// Which of the `session/update`s a client must advertise before it is sent them it did
/// advertise in `initialize`. A client without them is sent what ferrite sent before they
/// existed (a `plan`, an agent message marked as a notice).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Takes {
    /// `clientCapabilities.session.notices`: `notice`.
    pub notices: bool,
    /// `clientCapabilities.plan`: `plan_update` / `plan_removed`.
    pub plans: bool,
    /// `clientCapabilities.session.compaction`: `compaction_update` / `compaction_summary_chunk`.
    pub compaction: bool,
    /// `clientCapabilities.subagents`: `subagent_update`, `session_message`, the updates of
    /// child sessions, and `session` content on cards.
    pub subagents: bool,
    /// `clientCapabilities.session.cursors`: `cursor_update`, one before each user message.
    pub cursors: bool,
}

impl Takes {
    /// What every client takes.
    pub const BASE: Takes = Takes {
        notices: false,
        plans: false,
        compaction: false,
        subagents: false,
        cursors: false,
    };
}

/// The prefix of the cursor before a user message; the rest is the message's id.
pub(crate) const CURSOR_BEFORE: &str = "before:";

/// The message a cursor of ours is before, if `cursor` is one.
pub(crate) fn cursor_message(cursor: &str) -> Option<&str> {
    cursor
        .strip_prefix(CURSOR_BEFORE)
        .filter(|id| !id.is_empty())
}

/// The cursor just before user message `id`: `session/fork` there makes a session whose
/// history ends before that message.
pub(super) fn cursor_before(id: &str) -> acp::SessionUpdate {
    let anchor = acp::CursorAnchor::UserMessage(acp::CursorMessageAnchor::new(
        id.to_owned(),
        acp::CursorAnchorPosition::Before,
    ));
    acp::SessionUpdate::CursorUpdate(
        acp::CursorUpdate::new(format!("{CURSOR_BEFORE}{id}"))
            .anchor(anchor)
            .capabilities(acp::CursorCapabilities::new().fork(acp::CursorForkCapabilities::new())),
    )
}

/// The cursor before a message a rewind cut away: no method takes it any more.
pub(super) fn cursor_gone(id: &str) -> acp::SessionUpdate {
    acp::SessionUpdate::CursorUpdate(
        acp::CursorUpdate::new(format!("{CURSOR_BEFORE}{id}")).capabilities(None),
    )
}

/// A subagent session announced on its parent: its card's title, where it works, whether it
/// runs, and that `session/cancel` of it stops it alone.
pub(super) fn subagent(v: &ferrite_core::events::SubagentView) -> acp::SessionUpdate {
    let state = match v.running {
        true => acp::StateUpdate::Running(acp::RunningStateUpdate::new()),
        false => acp::StateUpdate::Idle(acp::IdleStateUpdate::new()),
    };
    acp::SessionUpdate::SubagentUpdate(
        acp::SubagentUpdate::new(v.session.as_str().to_owned())
            .title(super::shown(&v.title))
            .cwd(v.cwd.clone())
            .state(state)
            .capabilities(
                acp::SubagentSessionCapabilities::new()
                    .cancel(acp::SessionCancelCapabilities::new()),
            ),
    )
}

/// A message from another session, as the receiving session's transcript shows it.
pub(super) fn session_message(
    message_id: &str,
    from: &ferrite_store::ids::SessionId,
    to: &ferrite_store::ids::SessionId,
    content: Vec<acp::ContentBlock>,
) -> acp::SessionUpdate {
    acp::SessionUpdate::SessionMessage(
        acp::SessionMessage::new(message_id.to_owned())
            .sender_session_id(acp::SessionId::new(from.as_str().to_owned()))
            .recipient_session_id(acp::SessionId::new(to.as_str().to_owned()))
            .content(content),
    )
}

/// The id of the one plan ferrite keeps per session: `update_plan`'s checklist.
pub const CHECKLIST_PLAN_ID: &str = "checklist";

/// `update_plan`'s checklist as the plan of id [`CHECKLIST_PLAN_ID`]; emptied, it is a plan that
/// is gone.
pub(super) fn checklist(plan: acp::Plan) -> acp::SessionUpdate {
    match plan.entries.is_empty() {
        true => acp::SessionUpdate::PlanRemoved(acp::PlanRemoved::new(CHECKLIST_PLAN_ID)),
        false => acp::SessionUpdate::PlanUpdate(acp::PlanUpdate::new(
            acp::PlanUpdateContent::items(CHECKLIST_PLAN_ID, plan.entries),
        )),
    }
}

/// The plan `exit_plan` proposes, as a Markdown plan of its own id (beside the checklist).
pub(super) fn proposal(markdown: &str) -> acp::SessionUpdate {
    acp::SessionUpdate::PlanUpdate(acp::PlanUpdate::new(acp::PlanUpdateContent::markdown(
        PROPOSAL_PLAN_ID,
        markdown,
    )))
}

/// The id of the plan `exit_plan` proposes.
pub(super) const PROPOSAL_PLAN_ID: &str = "proposal";

/// A `notice`: its first line is the title (a title must stand alone and not be empty), the
/// rest its description. Most of Ferrite's notices are warnings (something did not go as
/// asked); news that is not (a background command that ended well) is `info`.
pub(super) fn notice(text: &str, severity: acp::NoticeSeverity) -> Option<acp::SessionUpdate> {
    let text = text.trim();
    let (title, rest) = text.split_once('\n').unwrap_or((text, ""));
    let rest = rest.trim();
    (!title.trim().is_empty()).then(|| {
        acp::SessionUpdate::Notice(
            acp::Notice::new(severity, title.trim().to_owned())
                .description((!rest.is_empty()).then(|| rest.to_owned())),
        )
    })
}

/// A compaction as ACP tells it: an upsert when it starts and when it ends, and the summary the
/// model continues from as a chunk before the end.
pub(super) fn compaction(id: &str, stage: &CompactionStage) -> Vec<acp::SessionUpdate> {
    use acp::SessionUpdate as U;
    let update = |status| U::CompactionUpdate(acp::CompactionUpdate::new(id.to_owned(), status));
    match stage {
        CompactionStage::Started => vec![update(acp::CompactionStatus::InProgress)],
        CompactionStage::Completed { summary, .. } => vec![
            U::CompactionSummaryChunk(acp::CompactionSummaryChunk::new(
                id.to_owned(),
                text_block(summary),
            )),
            update(acp::CompactionStatus::Completed),
        ],
        CompactionStage::Failed { error } => vec![U::CompactionUpdate(
            acp::CompactionUpdate::new(id.to_owned(), acp::CompactionStatus::Failed)
                .error(error.clone()),
        )],
        CompactionStage::Cancelled => vec![update(acp::CompactionStatus::Cancelled)],
    }
}

/// A client's `systemPrompt` in ferrite's terms. The schema: a mode ferrite does not know and
/// content other than text are refused (never taken as `append`), and so is an empty prompt.
pub fn system_prompt(p: acp::SystemPrompt) -> Result<ClientPrompt, String> {
    let mode = match p.mode {
        acp::SystemPromptMode::Append => ClientPromptMode::Append,
        acp::SystemPromptMode::Override => ClientPromptMode::Override,
        _ => return Err("unsupported `systemPrompt.mode`; use append or override".into()),
    };
    let mut texts = Vec::with_capacity(p.content.len());
    for block in p.content {
        match block {
            acp::ContentBlock::Text(t) => texts.push(t.text),
            _ => return Err("`systemPrompt.content` takes only text blocks".into()),
        }
    }
    if texts.iter().all(|t| t.trim().is_empty()) {
        return Err("`systemPrompt.content` is empty".into());
    }
    Ok(ClientPrompt {
        mode,
        text: texts.join("\n\n"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::{Value, json};

    fn wire(u: acp::SessionUpdate) -> Value {
        serde_json::to_value(u).unwrap()
    }

    #[test]
    fn a_checklist_is_a_plan_by_id_and_an_empty_one_is_removed() {
        let entry = acp::PlanEntry::new(
            "read",
            acp::PlanEntryPriority::Medium,
            acp::PlanEntryStatus::Pending,
        );
        assert_eq!(
            wire(checklist(acp::Plan::new(vec![entry]))),
            json!({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "checklist",
                "entries": [{"content": "read", "priority": "medium", "status": "pending"}]}})
        );
        assert_eq!(
            wire(checklist(acp::Plan::new(vec![]))),
            json!({"sessionUpdate": "plan_removed", "planId": "checklist"})
        );
    }

    #[test]
    fn a_notice_s_first_line_is_its_title() {
        let n = notice(
            "MCP server `x` failed.\nIts log:\nboom\n",
            acp::NoticeSeverity::Warning,
        )
        .unwrap();
        assert_eq!(
            wire(n),
            json!({"sessionUpdate": "notice", "severity": "warning",
                "title": "MCP server `x` failed.", "description": "Its log:\nboom"})
        );
        assert!(
            notice("  \n ", acp::NoticeSeverity::Warning).is_none(),
            "a title may not be empty"
        );
    }

    #[test]
    fn a_compaction_is_told_from_start_to_end() {
        let done = CompactionStage::Completed {
            summary: "S".into(),
            notice: "N".into(),
        };
        let wires: Vec<Value> = [CompactionStage::Started, done]
            .iter()
            .flat_map(|s| compaction("compaction-1", s))
            .map(wire)
            .collect();
        assert_eq!(
            wires,
            [
                json!({"sessionUpdate": "compaction_update", "compactionId": "compaction-1", "status": "in_progress"}),
                json!({"sessionUpdate": "compaction_summary_chunk", "compactionId": "compaction-1", "content": {"type": "text", "text": "S"}}),
                json!({"sessionUpdate": "compaction_update", "compactionId": "compaction-1", "status": "completed"}),
            ]
        );
        let failed = compaction(
            "compaction-2",
            &CompactionStage::Failed {
                error: "cut".into(),
            },
        );
        assert_eq!(wire(failed[0].clone())["error"], "cut");
    }

    #[test]
    fn system_prompts_are_text_in_a_known_mode() {
        let text = |t: &str| text_block(t);
        let p = acp::SystemPrompt::new(vec![text("a"), text("b")])
            .mode(acp::SystemPromptMode::Override);
        assert_eq!(
            system_prompt(p),
            Ok(ClientPrompt {
                mode: ClientPromptMode::Override,
                text: "a\n\nb".into()
            })
        );
        let unknown: acp::SystemPrompt = serde_json::from_value(
            json!({"mode": "_replace_all", "content": [{"type": "text", "text": "a"}]}),
        )
        .unwrap();
        assert!(system_prompt(unknown).is_err());
        assert!(system_prompt(acp::SystemPrompt::new(vec![])).is_err());
        let image = acp::ContentBlock::Image(acp::ImageContent::new("AAAA", "image/png"));
        assert!(system_prompt(acp::SystemPrompt::new(vec![image])).is_err());
    }
}
