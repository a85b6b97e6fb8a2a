//! The turn's side of hooks (`crate::hooks`): which hooks this turn has (asking the user to
//! trust the workspace when a repository brought some), and running an event's hooks as the
//! session's commands run: through the turn's runner, sandboxed as the mode says, without the
//! provider keys, bounded in time and output. A session without hooks spends nothing here: no
//! matching hook, no process, no JSON.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::content::ToolCallView;
use crate::events::Event;
use crate::exec::{CommandSpec, Exit, Sandbox};
use crate::hooks::answer::{Ran, combine, interpret};
use crate::hooks::{Combined, Hook, HookEvent};
use crate::session::{Recorder, TurnStart};

use super::env::CallEnv;
use super::sandbox::ModeAwareRunner;

/// What one hook may print that is kept (the answer's text is cut further).
const MAX_OUTPUT_BYTES: usize = 64 * 1024;

/// Runs the hooks `event` has for `subject` (a tool name, a `SessionStart` source) with the
/// event's own `fields`, all at once, and says what they said together; `None` when no hook
/// matches. Their messages (a failure, a `systemMessage`) are shown to the user here.
pub(super) async fn run(
    rec: &Recorder,
    env: &CallEnv,
    event: HookEvent,
    subject: Option<&str>,
    fields: Map<String, Value>,
    cancel: &CancellationToken,
) -> Option<Combined> {
    let hooks = env.hooks.matching(event, subject);
    if hooks.is_empty() {
        return None;
    }
    let mode = env.mode(rec);
    let mut input = Map::new();
    input.insert("session_id".into(), json!(rec.session_id().as_str()));
    input.insert("transcript_path".into(), json!(env.transcript));
    input.insert("cwd".into(), json!(env.cwd));
    input.insert("hook_event_name".into(), json!(event.name()));
    input.insert(
        "permission_mode".into(),
        json!(crate::hooks::claude_mode(mode)),
    );
    input.extend(fields);
    let stdin: Arc<[u8]> = serde_json::to_vec(&Value::Object(input))
        .unwrap_or_default()
        .into();
    let runs = hooks
        .iter()
        .map(|h| run_one(env, h, mode, stdin.clone(), cancel));
    let mut answers = futures::future::join_all(runs).await;
    for (hook, answer) in hooks.iter().zip(answers.iter_mut()) {
        if answer.failed || answer.errored {
            answer.message = failure_once(env, hook, mode, answer.message.take());
        }
    }
    let combined = combine(answers);
    for m in &combined.messages {
        rec.emit(Event::Notice { text: m.clone() }).await;
    }
    Some(combined)
}

/// The failure of `hook` for the user the first time in the session, with how hooks run in
/// `mode` (the usual reason: the sandbox kept it from writing); `None` after (a hook that
/// fails on every prompt is not a notice on every prompt).
fn failure_once(
    env: &CallEnv,
    hook: &Hook,
    mode: crate::modes::Mode,
    message: Option<String>,
) -> Option<String> {
    let first = env
        .hooks
        .session
        .failures_told
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(hook.fingerprint());
    let how = super::trust_ask::how_hooks_run(mode, env.base.sandbox_network);
    first.then(|| {
        format!(
            "{} {how} Further failures of this hook are not reported in this session.",
            message.unwrap_or_default()
        )
    })
}

async fn run_one(
    env: &CallEnv,
    hook: &Hook,
    mode: crate::modes::Mode,
    stdin: Arc<[u8]>,
    cancel: &CancellationToken,
) -> crate::hooks::Answer {
    let Some(turn) = env.base.runner.clone() else {
        return interpret(
            hook.event,
            &hook.command,
            Ran::Failed("no command runner".into()),
        );
    };
    let runner = ModeAwareRunner { turn, mode };
    // Hooks written for Claude Code find their scripts through this variable.
    let project = crate::trust::workspace_of(&env.cwd);
    let command = format!(
        "export CLAUDE_PROJECT_DIR={}\n{}",
        single_quoted(&project.to_string_lossy()),
        hook.command
    );
    let spec = CommandSpec {
        command,
        cwd: env.cwd.clone(),
        timeout: hook.timeout,
        sandbox: Sandbox::for_mode(
            mode,
            &env.roots,
            (&env.home, &env.protected.sandbox_paths()),
            &env.base.deny_read,
            env.base.sandbox_network,
        ),
        spill_dir: env.base.spill_dir.clone(),
        env_remove: vec![],
        max_bytes: MAX_OUTPUT_BYTES,
        max_lines: usize::MAX,
        stdin: Some(stdin),
        separate_stderr: true,
        spill_budget: None,
    };
    let ran =
        match crate::exec::CommandRunner::run(&runner, spec, cancel.child_token(), &|_| {}).await {
            Ok(out) => {
                // What a hook printed is in its answer; the runner's copy of it on disk is not
                // kept (a hook on every tool call would leave a file per call).
                let _ = std::fs::remove_file(&out.spill_path);
                ran_of(out, hook)
            }
            Err(e) => Ran::Failed(e.to_string()),
        };
    interpret(hook.event, &hook.command, ran)
}

/// How a hook's process ended, from the runner's account of it.
fn ran_of(out: crate::exec::CommandOutput, hook: &Hook) -> Ran {
    match out.exit {
        Exit::Code(code) => Ran::Exited {
            code,
            stdout: out.excerpt,
            stderr: out.stderr,
        },
        Exit::Signal(s) => Ran::Failed(format!("killed by signal {s}")),
        Exit::TimedOut => Ran::Failed(format!("timed out after {} s", hook.timeout.as_secs())),
        Exit::Cancelled => Ran::Failed("cancelled".into()),
    }
}

/// `text` as one POSIX shell word.
pub(super) fn single_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// A tool call's fields in Claude Code's shape: its name there (`Bash`, `Edit`, ...; Ferrite's
/// own name in `ferrite_tool_name`) and its input with `file_path` (absolute) beside `path`.
pub(super) fn tool_fields(
    env: &CallEnv,
    name: &str,
    id: &str,
    input: &Value,
) -> Map<String, Value> {
    let mut tool_input = input.clone();
    if let Some(obj) = tool_input.as_object_mut()
        && let Some(path) = obj.get("path").and_then(Value::as_str)
    {
        let abs = crate::paths::resolve(&env.cwd, path);
        obj.insert("file_path".into(), json!(abs));
    }
    let mut fields = Map::new();
    fields.insert(
        "tool_name".into(),
        json!(crate::hooks::claude_tool_name(name).unwrap_or(name)),
    );
    fields.insert("ferrite_tool_name".into(), json!(name));
    fields.insert("tool_input".into(), tool_input);
    fields.insert("tool_use_id".into(), json!(id));
    fields
}

/// What hooks told the model, as a note in the conversation.
pub(super) fn note(event: HookEvent, kind: &str, text: &str) -> String {
    crate::hooks::note(event.name(), kind, text)
}

/// `SessionStart` (once per session in this process: `startup` for a new conversation,
/// `resume` for one with turns before) and `UserPromptSubmit`, before the first request. What
/// they add is a note in the conversation; a block or `continue: false` ends the turn before
/// the model is asked (the prompt stays in the log: the user wrote it).
pub(super) async fn before_prompt(
    rec: &Recorder,
    env: &CallEnv,
    start: &TurnStart,
    content: &[crate::content::UserContent],
    cancel: &CancellationToken,
) -> Result<Option<crate::events::TurnOutcome>, crate::log::StoreError> {
    use crate::log::StopReason;
    if env.hooks.is_empty() {
        return Ok(None);
    }
    let mut said = Vec::new();
    if !start.extensions.started.swap(true, Ordering::Relaxed) {
        let source = if start.first_prompt {
            "startup"
        } else {
            "resume"
        };
        let mut fields = Map::new();
        fields.insert("source".into(), json!(source));
        if let Some(c) = run(
            rec,
            env,
            HookEvent::SessionStart,
            Some(source),
            fields,
            cancel,
        )
        .await
        {
            said.push((HookEvent::SessionStart, c));
        }
    }
    let prompt: String = content
        .iter()
        .filter_map(|c| match c {
            crate::content::UserContent::Text { text } => Some(text.as_ref()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut fields = Map::new();
    fields.insert("prompt".into(), json!(prompt));
    if let Some(c) = run(rec, env, HookEvent::UserPromptSubmit, None, fields, cancel).await {
        said.push((HookEvent::UserPromptSubmit, c));
    }
    for (event, c) in said {
        if let Some(why) = c.block.or(c.stop) {
            let text = format!("A {} hook stopped this prompt: {why}", event.name());
            rec.emit(Event::Notice { text }).await;
            return Ok(Some(crate::events::TurnOutcome::ended(StopReason::EndTurn)));
        }
        for context in c.context {
            add_context(rec, event, &context).await?;
        }
    }
    Ok(None)
}

/// Context a hook added: a note the model reads in the conversation, and a notice for the user.
async fn add_context(
    rec: &Recorder,
    event: HookEvent,
    context: &str,
) -> Result<(), crate::log::StoreError> {
    rec.record(crate::log::EntryKind::HookContext {
        event: event.name().to_owned(),
        context: context.to_owned(),
    })?;
    let text = crate::hooks::context_notice(event.name(), context);
    rec.emit(Event::Notice { text }).await;
    Ok(())
}

/// How many times `Stop` hooks may send one turn back to work (a hook that always blocks must not
/// spend the user's money up to `max_turn_requests`).
pub(super) const MAX_STOP_CONTINUES: u32 = 5;

/// `Stop` (or a subagent's `SubagentStop`) hooks when the model would end: the reason a hook
/// blocked with, to go on with, or `None` to stop. `continues` counts the turn's earlier ones
/// (`stop_hook_active`).
pub(super) async fn on_stop(
    rec: &Recorder,
    env: &CallEnv,
    event: HookEvent,
    continues: &mut u32,
    cancel: &CancellationToken,
) -> Option<String> {
    if env.hooks.is_empty() || *continues >= MAX_STOP_CONTINUES {
        return None;
    }
    let mut fields = Map::new();
    fields.insert("stop_hook_active".into(), json!(*continues > 0));
    let c = run(rec, env, event, None, fields, cancel).await?;
    if c.stop.is_some() {
        return None;
    }
    let reason = c.block?;
    *continues += 1;
    let text = format!(
        "A {} hook sent the agent back to work: {reason}",
        event.name()
    );
    rec.emit(Event::Notice { text }).await;
    Some(note(event, "feedback", &reason))
}

/// `PostToolUse` hooks of a call that succeeded: what they said for the model, to follow the
/// call's output (and shown to the user).
pub(super) async fn after_call(
    rec: &Recorder,
    env: &CallEnv,
    name: &str,
    id: &str,
    input: &Value,
    output: &str,
    cancel: &CancellationToken,
) -> Option<String> {
    if env.hooks.is_empty() {
        return None;
    }
    let mut fields = tool_fields(env, name, id, input);
    fields.insert("tool_response".into(), json!({ "output": output }));
    let c = run(rec, env, HookEvent::PostToolUse, Some(name), fields, cancel).await?;
    let mut said = Vec::new();
    if let Some(b) = c.block.or(c.stop) {
        said.push(note(HookEvent::PostToolUse, "feedback", &b));
    }
    for context in &c.context {
        said.push(note(HookEvent::PostToolUse, "context", context));
    }
    if said.is_empty() {
        return None;
    }
    let text = format!(
        "A PostToolUse hook said of `{name}`:\n\n{}",
        said.join("\n")
    );
    rec.emit(Event::Notice { text }).await;
    Some(said.join("\n"))
}

/// `PreToolUse` hooks of a call the policy lets through (`permission::check` weighs them).
pub(super) async fn before_call(
    rec: &Recorder,
    env: &CallEnv,
    name: &str,
    view: &ToolCallView,
    cancel: &CancellationToken,
) -> Option<Combined> {
    if env.hooks.is_empty() {
        return None;
    }
    let input = view.raw_input.clone().unwrap_or(Value::Null);
    let fields = tool_fields(env, name, &view.id, &input);
    run(rec, env, HookEvent::PreToolUse, Some(name), fields, cancel).await
}
