//! Applying the permission policy to one tool call: decide, ask the user when the policy says so,
//! and store "always" answers as rules for the workspace.

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::content::{ToolCallView, ToolContent};
use crate::display::fenced;
use crate::hooks::PreVerdict;
use crate::permissions::{self, Call, Decision, OptionKind, PermissionRequest};
use crate::protected::Verdict;
use crate::session::Recorder;
use crate::tools::Access;

use super::env::CallEnv;

/// What the policy lets a call do.
pub(crate) enum Gate {
    Run,
    /// Refused; the text tells the model why.
    Refused(String),
    /// The turn was cancelled while the user was being asked.
    Cancelled,
}

/// What the user sees of a call when asked: computed only when asking, from the files as they
/// are at that moment.
pub(crate) type Preview<'a> = &'a (dyn Fn() -> BoxFuture<'static, Vec<ToolContent>> + Sync);

pub(crate) async fn check(
    rec: &Recorder,
    env: &CallEnv,
    view: &ToolCallView,
    tool: &str,
    access: &Access,
    preview: Preview<'_>,
    cancel: &CancellationToken,
) -> Gate {
    let mode = env.mode(rec);
    let harness = env.harness;
    // Rules that cannot be used refuse the call: a dropped deny rule is a hole. (An unreadable
    // rules file failed the turn when it began; this catches one broken by an "always" answer.)
    let rules = match env.rules.in_force() {
        Ok(r) => r,
        Err(e) => return Gate::Refused(format!("Permission denied: {e}.")),
    };
    let call = Call {
        tool,
        access,
        mode,
        harness,
        force_ask: env.force_ask,
        roots: &env.roots,
        shell: env.shell,
    };
    let protected = env.protected.check(access, mode);
    let unprotected = matches!(protected, Verdict::Pass);
    // Why a protected file is asked about even where the rules allow: the user reads it first.
    let why_asked = match &protected {
        Verdict::Ask(why) => Some(format!("Asked in every mode below `full`: {why}.")),
        Verdict::Pass | Verdict::Refuse(_) => None,
    };
    let shown = move || with_reason(preview, why_asked.clone());
    let decision = match (permissions::decide(&call, &rules), protected) {
        (Decision::Deny(why), _) | (_, Verdict::Refuse(why)) => Decision::Deny(why),
        (Decision::Allow, Verdict::Ask(why)) if !harness.may_ask() => {
            Decision::Deny(format!("{why}, and this session runs unattended"))
        }
        (Decision::Allow | Decision::Ask, Verdict::Ask(_)) => Decision::Ask,
        (d, Verdict::Pass) => d,
    };
    // PreToolUse hooks run for what the policy lets through: they can refuse it or have the
    // user asked; their allow saves only the policy's question, never one about Ferrite's
    // own files, and never overrides a deny. A hook that did not finish has the user asked.
    let decision = match decision {
        Decision::Deny(_) => decision,
        d => match super::hooks::before_call(rec, env, tool, view, cancel).await {
            None => d,
            Some(said) => match (said.verdict, said.stop, said.failed) {
                (Some(PreVerdict::Deny(why)), _, _) | (_, Some(why), _) => {
                    return Gate::Refused(format!("Blocked by a PreToolUse hook: {why}"));
                }
                (Some(PreVerdict::Ask(_)), _, _) | (_, _, true) => Decision::Ask,
                (Some(PreVerdict::Allow), _, _) if unprotected => Decision::Allow,
                _ => d,
            },
        },
    };
    match decision {
        Decision::Allow => Gate::Run,
        Decision::Deny(why) => Gate::Refused(format!("Permission denied: {why}.")),
        Decision::Ask => {
            let question = Question {
                preview: &shown,
                protected: !unprotected,
            };
            ask(rec, env, view, tool, access, question, cancel).await
        }
    }
}

/// The preview, after the reason a protected file is asked about (the user reads it first).
fn with_reason(preview: Preview<'_>, why: Option<String>) -> BoxFuture<'static, Vec<ToolContent>> {
    let content = preview();
    Box::pin(async move {
        let mut content = content.await;
        if let Some(why) = why {
            content.insert(0, ToolContent::Text { text: why.into() });
        }
        content
    })
}

/// The content of a permission request: the tool's preview, or for an MCP tool its arguments.
async fn request_content(
    view: &ToolCallView,
    access: &Access,
    preview: Preview<'_>,
) -> Vec<ToolContent> {
    let content = preview().await;
    if !content.is_empty() {
        return content;
    }
    match (access, &view.raw_input) {
        (Access::Mcp, Some(args)) => {
            let pretty = serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string());
            vec![ToolContent::Text {
                text: format!("Arguments:\n\n{}", fenced(&pretty, "json")).into(),
            }]
        }
        _ => vec![],
    }
}

/// What the user is shown besides the options: the call's preview, and whether it touches a
/// protected file (asked in every mode: "Always allow" would store a rule that never skips the
/// question, so it is not offered).
struct Question<'a> {
    preview: Preview<'a>,
    protected: bool,
}

async fn ask(
    rec: &Recorder,
    env: &CallEnv,
    view: &ToolCallView,
    tool: &str,
    access: &Access,
    question: Question<'_>,
    cancel: &CancellationToken,
) -> Gate {
    let Some(approver) = env.approver.as_ref() else {
        return Gate::Refused(permissions::NO_ONE_TO_ASK.into());
    };
    let mut options = permissions::options_for(tool, access, &env.roots, env.shell);
    if question.protected {
        options.retain(|o| !matches!(o.kind, OptionKind::AllowAlways));
    }
    let preview = question.preview;
    // A subagent's call is asked about on its parent's card where the editor does not show the
    // subagent's session.
    let (session, mut call) = rec.asked_about(view);
    call.content = request_content(view, access, preview).await;
    let req = PermissionRequest { call, options };
    let timeout = env.permission_timeout;
    let kind = match super::ask::ask_user(&session, timeout, approver.as_ref(), req, cancel).await {
        super::ask::Asked::Cancelled => return Gate::Cancelled,
        super::ask::Asked::TimedOut => {
            return Gate::Refused(format!(
                "Permission denied: the user did not answer within {} s.",
                env.permission_timeout.as_secs()
            ));
        }
        super::ask::Asked::Unanswered(why) => {
            return Gate::Refused(format!(
                "Permission denied: the editor could not ask the user ({why}); the call did not \
                 run."
            ));
        }
        super::ask::Asked::Picked(kind) => kind,
    };
    match kind {
        Some(OptionKind::AllowOnce) => Gate::Run,
        Some(OptionKind::AllowAlways) => {
            env.rules
                .remember(tool, access, &env.roots, env.shell, true);
            Gate::Run
        }
        Some(OptionKind::RejectOnce) => Gate::Refused("The user declined this call.".into()),
        Some(OptionKind::RejectAlways) => {
            env.rules
                .remember(tool, access, &env.roots, env.shell, false);
            Gate::Refused("The user declined this call and calls like it.".into())
        }
        None => {
            Gate::Refused("The answer was not one of the options; the call did not run.".into())
        }
    }
}
