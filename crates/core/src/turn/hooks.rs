//! The turn's side of hooks (`crate::hooks`): which hooks this turn has (asking the user to
//! trust the workspace when a repository brought some), and running an event's hooks as the
//! session's commands run: through the turn's runner, sandboxed as the mode says, without the
//! provider keys, bounded in time and output. A session without hooks spends nothing here: no
//! matching hook, no process, no JSON.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::content::{ToolCallUpdateView, ToolCallView, ToolContent, ToolKind, ToolStatus};
use crate::events::Event;
use crate::exec::{CommandSpec, Exit, Sandbox};
use crate::hooks::answer::{Ran, combine, interpret};
use crate::hooks::{Combined, Hook, HookEvent, Hooks};
use crate::permissions::{OptionKind, PermissionOption, PermissionRequest};
use crate::services::Services;
use crate::session::{Recorder, TurnStart};

use super::env::CallEnv;
use super::sandbox::ModeAwareRunner;

/// What one hook may print that is kept (the answer's text is cut further).
const MAX_OUTPUT_BYTES: usize = 64 * 1024;

/// What the workspace adds to this turn: hooks and custom agents.
pub(super) struct Extensions {
    pub hooks: Hooks,
    pub agents: crate::agents::Agents,
}

/// The hooks and agents of this turn. The project's are in use when the workspace is trusted;
/// when it is not and it brings some, the user is asked once per session (or told, where no one
/// can be asked).
pub(super) async fn for_turn(
    services: &Services,
    rec: &Recorder,
    config: &crate::config::Config,
    own: &crate::own_files::OwnFiles,
    start: &TurnStart,
    cancel: &CancellationToken,
) -> Extensions {
    let load = || {
        let approved = crate::trust::approved(&services.home, &start.cwd);
        Extensions {
            hooks: crate::hooks::table::load(&config.hooks, own, &start.cwd, &approved),
            agents: crate::agents::discover(own, &start.cwd, &approved),
        }
    };
    let found = load();
    for p in &found.hooks.problems {
        tracing::warn!("hooks: {p}");
    }
    let nothing_waits = found.hooks.inert.is_empty() && found.agents.inert.is_empty();
    if nothing_waits || start.extensions.trust_settled.swap(true, Ordering::Relaxed) {
        return found;
    }
    let ws = crate::trust::workspace_of(&start.cwd);
    if declined(services).contains(&ws) {
        return found;
    }
    let listed: Vec<String> = found
        .hooks
        .inert
        .iter()
        .map(describe)
        .chain(
            found
                .agents
                .inert
                .iter()
                .map(|a| format!("agent `{}` ({})", a.name, a.file.display())),
        )
        .collect();
    let fingerprints: Vec<String> = found
        .hooks
        .inert
        .iter()
        .map(Hook::fingerprint)
        .chain(found.agents.inert.iter().map(|a| a.fingerprint()))
        .collect();
    let asked = ask_trust(
        services,
        rec,
        start,
        (&listed, fingerprints),
        config,
        cancel,
    );
    match asked.await {
        Trust::Trusted => return load(),
        Trust::NotNow => {
            declined(services).insert(ws);
        }
        Trust::Unanswered => {}
    }
    found
}

/// The workspaces the user said "Not now" for, in this process.
fn declined(
    services: &Services,
) -> std::sync::MutexGuard<'_, std::collections::HashSet<std::path::PathBuf>> {
    services
        .trust_declined
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A hook in one line, for the user.
pub(crate) fn describe(h: &Hook) -> String {
    format!(
        "{} hook `{}` ({})",
        h.event.name(),
        h.command,
        h.file.display()
    )
}

/// Asks the user whether to trust the workspace (a permission request about no tool call: its
/// card is shown, never logged), and records a yes. Where no one can be asked, says why the
/// project's hooks are off.
async fn ask_trust(
    services: &Services,
    rec: &Recorder,
    start: &TurnStart,
    (listed, fingerprints): (&[String], Vec<String>),
    config: &crate::config::Config,
    cancel: &CancellationToken,
) -> Trust {
    let ws = crate::trust::workspace_of(&start.cwd);
    let list = listed
        .iter()
        .map(|l| format!("- {l}"))
        .collect::<Vec<_>>()
        .join("\n");
    let approver = services.approver.get().filter(|_| start.harness.may_ask());
    let Some(approver) = approver else {
        let text = format!(
            "This folder ({}) is not trusted, so what it brings that would run is off:\n\n{list}\n\n\
             Run `ferrite trust` in it to turn them on.",
            ws.display()
        );
        rec.emit(Event::Notice { text }).await;
        return Trust::Unanswered;
    };
    let id = format!("trust-{}", uuid::Uuid::now_v7().simple());
    let view = ToolCallView {
        id: id.clone(),
        title: format!("Trust the folder {}?", ws.display()),
        kind: ToolKind::Other,
        status: ToolStatus::Pending,
        locations: vec![],
        content: vec![ToolContent::Text {
            text: format!(
                "This folder brings hooks (commands that run on your machine) or agents (prompts \
                 that steer subagents with your tools) that are used once you trust it:\n\n\
                 {list}\n\nTrust it only if you trust who wrote it. Until then they stay off."
            )
            .into(),
        }],
        raw_input: None,
    };
    rec.emit(Event::ToolCall(view.clone())).await;
    let options = vec![
        PermissionOption {
            id: "trust".into(),
            name: "Trust this folder".into(),
            kind: OptionKind::AllowAlways,
        },
        PermissionOption {
            id: "not-now".into(),
            name: "Not now".into(),
            kind: OptionKind::RejectOnce,
        },
    ];
    let req = PermissionRequest {
        call: view,
        options,
    };
    let timeout = std::time::Duration::from_secs(config.permissions.timeout_secs);
    let asked =
        super::ask::ask_user(rec.session_id(), timeout, approver.as_ref(), req, cancel).await;
    let answer = match asked {
        super::ask::Asked::Picked(Some(OptionKind::AllowAlways)) => Trust::Trusted,
        super::ask::Asked::Picked(Some(OptionKind::RejectOnce)) => Trust::NotNow,
        _ => Trust::Unanswered,
    };
    let trusted = answer == Trust::Trusted;
    let (status, text) = if trusted {
        match crate::trust::trust(&services.home, &start.cwd, fingerprints) {
            Ok(ws) => (
                ToolStatus::Completed,
                format!("Trusted {}: its hooks and agents are on.", ws.display()),
            ),
            Err(e) => (
                ToolStatus::Failed,
                format!(
                    "The answer could not be saved ({e}); the folder's hooks and agents stay off."
                ),
            ),
        }
    } else {
        (
            ToolStatus::Failed,
            "Not trusted: the folder's hooks and agents stay off (you are asked again when Ferrite \
             restarts, or run `ferrite trust`)."
                .to_owned(),
        )
    };
    rec.emit(Event::ToolCallUpdate(ToolCallUpdateView {
        id,
        status: Some(status),
        content: Some(vec![ToolContent::Text { text: text.into() }]),
        ..Default::default()
    }))
    .await;
    match answer {
        Trust::Trusted if status != ToolStatus::Completed => Trust::Unanswered,
        other => other,
    }
}

/// What came of the trust question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trust {
    Trusted,
    /// "Not now": not asked again while this process runs.
    NotNow,
    /// No one could be asked, the question went unanswered, or the answer was not saved.
    Unanswered,
}

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
    let answers = futures::future::join_all(runs).await;
    let combined = combine(answers);
    for m in &combined.messages {
        rec.emit(Event::Notice { text: m.clone() }).await;
    }
    Some(combined)
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
            &env.home,
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

fn single_quoted(text: &str) -> String {
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
    format!("[{} hook {kind}: {text}]", event.name())
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
    rec.record(crate::log::EntryKind::UserMessage {
        content: vec![crate::content::UserContent::Text {
            text: note(event, "context", context).into(),
        }],
    })?;
    let text = format!(
        "A {} hook added context for the model:\n\n{context}",
        event.name()
    );
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
