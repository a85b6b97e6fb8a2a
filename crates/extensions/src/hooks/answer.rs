//! What a hook's answer means, in Claude Code's terms:
//!
//! - exit 0: done; its stdout may be JSON (below), or for `UserPromptSubmit` and `SessionStart`
//!   plain text, which is context for the model;
//! - exit 2: blocks (the tool call, the prompt, the stop), its stderr the reason;
//! - any other exit: an error the user is shown; the session goes on as if there were no hook.
//!
//! JSON on stdout: `decision: "block"` with `reason`; `continue: false` with `stopReason` (the
//! turn stops); `systemMessage` (shown to the user); `hookSpecificOutput.permissionDecision`
//! (`allow`, `ask`, `deny`, with `permissionDecisionReason`) for `PreToolUse`, the older
//! `decision: "approve"` too; `hookSpecificOutput.additionalContext`.

use super::HookEvent;

/// Text a hook hands the model or the user, at most (the runner's output bound is larger).
const MAX_TEXT: usize = 8 * 1024;

/// How a hook's process ended, as the runner saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ran {
    Exited {
        code: i32,
        stdout: String,
        stderr: String,
    },
    /// It did not run to an exit code: not started, killed by a signal, timed out; in words.
    Failed(String),
}

/// What `PreToolUse` hooks say of a call, strictest last.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum PreVerdict {
    Allow,
    Ask(String),
    Deny(String),
}

/// One hook's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answer {
    /// Exit 2 or `decision: "block"`, with the reason.
    pub block: Option<String>,
    pub verdict: Option<PreVerdict>,
    pub context: Option<String>,
    /// For the user: `systemMessage`, or why the hook failed.
    pub message: Option<String>,
    /// `continue: false`, with `stopReason`.
    pub stop: Option<String>,
    /// It did not run to an exit code.
    pub failed: bool,
    /// It exited with an error (not 2, which blocks): `message` says so.
    pub errored: bool,
}

fn bounded(text: &str) -> String {
    let text = text.trim();
    if text.len() <= MAX_TEXT {
        return text.to_owned();
    }
    let mut cut = MAX_TEXT;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… [cut at {MAX_TEXT} bytes]", &text[..cut])
}

fn field<'a>(v: &'a serde_json::Value, path: &[&str]) -> Option<&'a str> {
    path.iter()
        .try_fold(v, |v, k| v.get(k))
        .and_then(|v| v.as_str())
        .filter(|s| !s.trim().is_empty())
}

/// The answer of the hook `command` for `event`, from how it ran.
pub fn interpret(event: HookEvent, command: &str, ran: Ran) -> Answer {
    let (code, stdout, stderr) = match ran {
        Ran::Failed(why) => {
            return Answer {
                message: Some(format!(
                    "The {} hook `{command}` did not finish: {why}.",
                    event.name()
                )),
                failed: true,
                ..Answer::default()
            };
        }
        Ran::Exited {
            code,
            stdout,
            stderr,
        } => (code, stdout, stderr),
    };
    if code == 2 {
        let reason = if stderr.trim().is_empty() {
            format!("blocked by the hook `{command}`")
        } else {
            bounded(&stderr)
        };
        let verdict = (event == HookEvent::PreToolUse).then(|| PreVerdict::Deny(reason.clone()));
        return Answer {
            block: Some(reason),
            verdict,
            ..Answer::default()
        };
    }
    if code != 0 {
        let said = stderr.trim().lines().next().unwrap_or("").to_owned();
        return Answer {
            message: Some(format!(
                "The {} hook `{command}` failed (exit {code}){}{}",
                event.name(),
                if said.is_empty() { "" } else { ": " },
                bounded(&said)
            )),
            errored: true,
            ..Answer::default()
        };
    }
    let trimmed = stdout.trim();
    let Some(json) = trimmed
        .starts_with('{')
        .then(|| serde_json::from_str::<serde_json::Value>(trimmed).ok())
        .flatten()
    else {
        // Plain text is context only where Claude Code takes it so.
        let context = matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart)
            .then(|| bounded(trimmed))
            .filter(|t| !t.is_empty());
        return Answer {
            context,
            ..Answer::default()
        };
    };
    from_json(event, &json)
}

fn from_json(event: HookEvent, json: &serde_json::Value) -> Answer {
    let reason = field(json, &["reason"]).map(bounded);
    let mut answer = Answer {
        context: field(json, &["hookSpecificOutput", "additionalContext"]).map(bounded),
        message: field(json, &["systemMessage"]).map(bounded),
        ..Answer::default()
    };
    if json.get("continue") == Some(&serde_json::Value::Bool(false)) {
        answer.stop = Some(
            field(json, &["stopReason"]).map_or_else(|| "a hook stopped the turn".into(), bounded),
        );
    }
    match field(json, &["decision"]) {
        Some("block") => {
            answer.block = Some(reason.clone().unwrap_or_else(|| "blocked by a hook".into()));
        }
        Some("approve") if event == HookEvent::PreToolUse => {
            answer.verdict = Some(PreVerdict::Allow);
        }
        _ => {}
    }
    if event == HookEvent::PreToolUse {
        let why = field(json, &["hookSpecificOutput", "permissionDecisionReason"])
            .map(bounded)
            .or(reason)
            .unwrap_or_else(|| "a hook said so".into());
        let decided = match field(json, &["hookSpecificOutput", "permissionDecision"]) {
            Some("allow") => Some(PreVerdict::Allow),
            Some("ask") => Some(PreVerdict::Ask(why.clone())),
            Some("deny") => Some(PreVerdict::Deny(why.clone())),
            _ => None,
        };
        if decided.is_some() {
            answer.verdict = decided;
        }
        if let Some(block) = &answer.block {
            answer.verdict = Some(PreVerdict::Deny(block.clone()));
        }
    }
    answer
}

/// What the hooks of one event said together: the strictest verdict, every block reason and
/// piece of context, every message for the user.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Combined {
    pub block: Option<String>,
    pub verdict: Option<PreVerdict>,
    pub context: Vec<String>,
    pub messages: Vec<String>,
    pub stop: Option<String>,
    /// A hook did not run to an exit code.
    pub failed: bool,
}

pub fn combine(answers: Vec<Answer>) -> Combined {
    let mut out = Combined::default();
    for a in answers {
        if let Some(b) = a.block {
            out.block = Some(match out.block.take() {
                Some(prev) => format!("{prev}\n{b}"),
                None => b,
            });
        }
        out.verdict = out.verdict.max(a.verdict);
        out.context.extend(a.context);
        out.messages.extend(a.message);
        out.stop = out.stop.or(a.stop);
        out.failed |= a.failed;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exited(code: i32, stdout: &str, stderr: &str) -> Ran {
        Ran::Exited {
            code,
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }

    #[test]
    fn exit_codes_mean_what_they_mean_in_claude_code() {
        let pre = HookEvent::PreToolUse;
        let blocked = interpret(pre, "c", exited(2, "", "no rm here\n"));
        assert_eq!(blocked.verdict, Some(PreVerdict::Deny("no rm here".into())));
        let failed = interpret(pre, "c", exited(1, "", "oops\nmore"));
        assert_eq!(failed.verdict, None);
        assert!(failed.message.unwrap().contains("failed (exit 1): oops"));
        assert_eq!(
            interpret(pre, "c", exited(0, "hello", "")),
            Answer::default()
        );
        let prompt = interpret(HookEvent::UserPromptSubmit, "c", exited(0, "ctx\n", ""));
        assert_eq!(prompt.context.as_deref(), Some("ctx"));
        assert!(interpret(pre, "c", Ran::Failed("timed out".into())).failed);
    }

    #[test]
    fn json_answers_and_the_strictest_verdict_wins() {
        let pre = HookEvent::PreToolUse;
        let ask = interpret(
            pre,
            "c",
            exited(
                0,
                r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"check"}}"#,
                "",
            ),
        );
        let allow = interpret(pre, "c", exited(0, r#"{"decision":"approve"}"#, ""));
        let ctx = interpret(
            HookEvent::PostToolUse,
            "c",
            exited(
                0,
                r#"{"decision":"block","reason":"lint failed","hookSpecificOutput":{"additionalContext":"see x"},"systemMessage":"hi"}"#,
                "",
            ),
        );
        assert_eq!(allow.verdict, Some(PreVerdict::Allow));
        assert_eq!(ctx.block.as_deref(), Some("lint failed"));
        assert_eq!(ctx.context.as_deref(), Some("see x"));
        let all = combine(vec![allow.clone(), ask.clone(), ctx]);
        assert_eq!(all.verdict, Some(PreVerdict::Ask("check".into())));
        assert_eq!(all.messages, vec!["hi".to_owned()]);
        let deny = interpret(pre, "c", exited(2, "", "no"));
        assert_eq!(
            combine(vec![deny, allow, ask]).verdict,
            Some(PreVerdict::Deny("no".into()))
        );
        let stop = interpret(HookEvent::Stop, "c", exited(0, r#"{"continue":false}"#, ""));
        assert!(stop.stop.is_some());
    }
}
