//! Which hooks and agents a turn has, asking the user to trust the workspace when a repository
//! brought some that are not trusted as they are now (new, or a command, matcher or a file a
//! hook runs changed). The question shows each hook's whole command verbatim
//! (`crate::hooks::shown`), what changed since the folder was last trusted, and how hooks run
//! in the session's mode.

use tokio_util::sync::CancellationToken;

use crate::content::{ToolCallUpdateView, ToolCallView, ToolContent, ToolKind, ToolStatus};
use crate::events::Event;
use crate::hooks::shown::{code, hook_markdown};
use crate::hooks::{Hook, Hooks};
use crate::modes::Mode;
use crate::permissions::{OptionKind, PermissionOption, PermissionRequest};
use crate::services::Services;
use crate::session::{Recorder, TurnStart};
use crate::trust::Approved;

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
    let load = |approved: &Approved| {
        let mut hooks = crate::hooks::table::load(&config.hooks, own, &start.cwd, approved);
        hooks.session = start.extensions.clone();
        Extensions {
            hooks,
            agents: crate::agents::discover(own, &start.cwd, approved),
        }
    };
    let approved = crate::trust::approved(&services.home, &start.cwd);
    let found = load(&approved);
    for p in &found.hooks.problems {
        tracing::warn!("hooks: {p}");
    }
    if !first_time_asked(start, &found) {
        return found;
    }
    let ws = crate::trust::workspace_of(&start.cwd);
    if declined(services).contains(&ws) {
        return found;
    }
    let asked = ask_trust(services, rec, start, (&found, &approved), config, cancel);
    match asked.await {
        Trust::Trusted => return load(&crate::trust::approved(&services.home, &start.cwd)),
        Trust::NotNow => {
            declined(services).insert(ws);
        }
        Trust::Unanswered => {}
    }
    found
}

/// Whether something waits for trust that this session has not asked about yet (then it is
/// marked asked).
fn first_time_asked(start: &TurnStart, found: &Extensions) -> bool {
    let (waiting, _) = records(found);
    let mut asked = start
        .extensions
        .trust_asked
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut new = false;
    for fingerprint in waiting {
        new |= asked.insert(fingerprint);
    }
    new
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

/// What waits for trust, in Markdown: each hook with its command fenced, each agent by name.
fn listed(found: &Extensions, approved: &Approved, ws: &std::path::Path) -> String {
    let hooks = found
        .hooks
        .inert
        .iter()
        .filter(|h| h.unverifiable().is_none())
        .map(|h| hook_markdown(h, approved, ws));
    let agents = found.agents.inert.iter().map(|a| {
        format!(
            "Agent {} from {}\n",
            code(&a.name),
            code(&a.file.to_string_lossy())
        )
    });
    hooks.chain(agents).collect::<Vec<_>>().join("\n")
}

/// How hooks run in `mode`: what they can write and reach (they run as the session's commands).
pub(crate) fn how_hooks_run(mode: Mode, network: bool) -> String {
    let confined = "sandboxed like the session's commands: they can write only in the workspace \
                    and the temp directory, never in `.claude/`, `.ferrite/`, the files hooks run \
                    or Ferrite's own directory, so a hook that writes elsewhere (a log in your \
                    home, say) fails";
    match mode {
        Mode::Plan => format!(
            "In `plan` mode hooks run {confined}; here they can write nothing at all and have no \
             network."
        ),
        Mode::Ask => format!("In `ask` mode hooks run {confined}; they have the network."),
        Mode::Auto => format!(
            "In `auto` mode hooks run {confined}; {}.",
            if network {
                "they have the network (`sandbox.network`)"
            } else {
                "they have no network"
            }
        ),
        Mode::Full => "In `full` mode hooks run unsandboxed, with all your rights.".to_owned(),
    }
}

/// The fingerprints trust records, and the files the hooks run with their digests.
fn records(found: &Extensions) -> (Vec<String>, Vec<(std::path::PathBuf, String)>) {
    let verifiable = || {
        found
            .hooks
            .inert
            .iter()
            .filter(|h| h.unverifiable().is_none())
    };
    let fingerprints = verifiable()
        .map(Hook::fingerprint)
        .chain(found.agents.inert.iter().map(|a| a.fingerprint()))
        .collect();
    let files = verifiable()
        .flat_map(|h| &h.runs)
        .map(|r| (r.path.clone(), r.digest.as_record()))
        .collect();
    (fingerprints, files)
}

/// Asks the user whether to trust the workspace (a permission request about no tool call: its
/// card is shown, never logged), and records a yes. Where no one can be asked, says why the
/// project's hooks are off.
async fn ask_trust(
    services: &Services,
    rec: &Recorder,
    start: &TurnStart,
    (found, approved): (&Extensions, &Approved),
    config: &crate::config::Config,
    cancel: &CancellationToken,
) -> Trust {
    let ws = crate::trust::workspace_of(&start.cwd);
    let list = listed(found, approved, &ws);
    let how = how_hooks_run(rec.mode(), config.sandbox_network);
    let approver = services.approver.get().filter(|_| start.harness.may_ask());
    let Some(approver) = approver else {
        let text = format!(
            "This folder ({}) is not trusted as it is now, so what it brings that would run is \
             off:\n\n{list}\nRun `ferrite trust` in it to turn them on.",
            code(&ws.to_string_lossy())
        );
        rec.emit(Event::Notice { text }).await;
        return Trust::Unanswered;
    };
    let id = format!("trust-{}", uuid::Uuid::now_v7().simple());
    let view = ToolCallView {
        id: id.clone(),
        title: format!(
            "Trust the folder {}?",
            crate::display::visible(&ws.to_string_lossy())
        ),
        kind: ToolKind::Other,
        status: ToolStatus::Pending,
        locations: vec![],
        content: vec![ToolContent::Text {
            text: format!(
                "This folder brings hooks (commands that run on your machine) or agents (prompts \
                 that steer subagents with your tools) that are used once you trust it:\n\n\
                 {list}\n{how}\n\nTrust it only if you trust who wrote it. Until then they stay \
                 off. A change to a hook, or to a file it runs, turns it off until you are asked \
                 again."
            )
            .into(),
        }],
        raw_input: None,
    };
    rec.emit(Event::ToolCall(view.clone())).await;
    let req = PermissionRequest {
        call: view,
        options: vec![
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
        ],
    };
    let timeout = std::time::Duration::from_secs(config.permissions.timeout_secs);
    let asked =
        super::ask::ask_user(rec.session_id(), timeout, approver.as_ref(), req, cancel).await;
    let answer = match asked {
        super::ask::Asked::Picked(Some(OptionKind::AllowAlways)) => Trust::Trusted,
        super::ask::Asked::Picked(Some(OptionKind::RejectOnce)) => Trust::NotNow,
        _ => Trust::Unanswered,
    };
    let saved = answer == Trust::Trusted && record(services, rec, start, found, &id).await;
    if answer != Trust::Trusted {
        let text = "Not trusted: the folder's hooks and agents stay off (you are asked again \
                    when Ferrite restarts, or run `ferrite trust`).";
        finish(rec, &id, ToolStatus::Failed, text.to_owned()).await;
    }
    match answer {
        Trust::Trusted if !saved => Trust::Unanswered,
        other => other,
    }
}

/// Saves a yes; whether it was saved (the card says so either way).
async fn record(
    services: &Services,
    rec: &Recorder,
    start: &TurnStart,
    found: &Extensions,
    id: &str,
) -> bool {
    let (fingerprints, files) = records(found);
    match crate::trust::trust(&services.home, &start.cwd, fingerprints, files) {
        Ok(ws) => {
            let text = format!(
                "Trusted {}: its hooks and agents are on.",
                crate::display::visible(&ws.to_string_lossy())
            );
            finish(rec, id, ToolStatus::Completed, text).await;
            true
        }
        Err(e) => {
            let text = format!(
                "The answer could not be saved ({e}); the folder's hooks and agents stay off."
            );
            finish(rec, id, ToolStatus::Failed, text).await;
            false
        }
    }
}

async fn finish(rec: &Recorder, id: &str, status: ToolStatus, text: String) {
    rec.emit(Event::ToolCallUpdate(ToolCallUpdateView {
        id: id.to_owned(),
        status: Some(status),
        content: Some(vec![ToolContent::Text { text: text.into() }]),
        ..Default::default()
    }))
    .await;
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
