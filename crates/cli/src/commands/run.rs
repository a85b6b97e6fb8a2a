//! `ferrite run` (also `ferrite -p`): one headless turn. The answer goes to stdout; each call's
//! outcome, failures and a final usage line go to stderr (`--json`: every event as a JSON line
//! on stdout instead). No one is there to approve anything: the default mode is `auto`, and a
//! call that would ask is refused and makes the exit status [`REFUSED`].

mod input;
mod progress;
mod report;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ferrite_core::env::Env;
use ferrite_core::events::{SessionEvent, SettingChange, TurnOptions};
use ferrite_core::modes::{Harness, Mode};
use ferrite_core::runtime::{NewSession, Opened, Runtime};
use ferrite_store::content::UserContent;
use ferrite_store::ids::SessionId;
use ferrite_store::log::{EntryKind, SessionStore};
use tokio::sync::mpsc::Receiver;

use crate::args::RunArgs;
use report::{Ended, Report};

/// Exit status: the turn failed (provider, configuration, no model) or the run could not start.
pub const FAILED: u8 = 1;
/// Exit status: the command line was wrong (clap uses the same code for its own errors).
pub const USAGE: u8 = 2;
/// Exit status: the turn ended, but a call was refused because it needed approval.
pub const REFUSED: u8 = 3;
/// Exit status: the turn ended, but a file change it made failed and no later call made it.
pub const UNWRITTEN: u8 = 4;

/// A run that cannot go on, and the exit status it ends with.
struct Stop {
    code: u8,
    error: anyhow::Error,
}

impl Stop {
    fn failed(error: anyhow::Error) -> Self {
        Self {
            code: FAILED,
            error,
        }
    }
}

impl From<anyhow::Error> for Stop {
    fn from(error: anyhow::Error) -> Self {
        Stop::failed(error)
    }
}

pub fn run(home: PathBuf, env: Env, args: RunArgs) -> anyhow::Result<ExitCode> {
    let json = args.json;
    let request = match input::Request::from_args(args) {
        Ok(r) => r,
        Err(stop) => return Ok(report::stopped(json, None, stop.code, &stop.error)),
    };
    let rt = super::runtime()?;
    // Boxed, as in `acp::run`: the future is large, and `main`'s frame would hold it.
    let code = rt.block_on(Box::pin(async move {
        let services = super::services(home.clone(), env);
        // The browser step of an MCP server's sign-in: the link is printed on stderr.
        let _ = services
            .elicitor
            .set(std::sync::Arc::new(super::mcp::TerminalLinks));
        let (runtime, mut events) = Runtime::new(services);
        let mut opened_new = None;
        let result = turn(&runtime, &mut events, &home, &request, &mut opened_new).await;
        // The log is complete (and its lock released) once the runtime is down.
        runtime.shutdown().await;
        finish(&home, &request, opened_new, result)
    }));
    rt.shutdown_background();
    Ok(code)
}

/// After the runtime is down: a new session the model never answered is deleted, the last
/// message written, the usage line (or event) printed, and the exit status chosen.
fn finish(
    home: &Path,
    request: &input::Request,
    opened_new: Option<SessionId>,
    result: Result<(SessionId, Ended), Stop>,
) -> ExitCode {
    let store = SessionStore::new(home);
    let session = match &result {
        Ok((id, _)) => Some(id.clone()),
        Err(_) => opened_new.clone(),
    };
    let failed = !matches!(&result, Ok((_, e)) if e.failure.is_none());
    let kept = match (&session, &opened_new) {
        (Some(id), Some(new)) if id == new && failed && !model_answered(&store, id) => {
            if let Err(e) = store.delete_with_subagents(id) {
                tracing::warn!(session = %id, error = %e, "could not delete the unanswered session");
            }
            None
        }
        _ => session,
    };
    let (id, ended) = match result {
        Ok(r) => r,
        Err(stop) => return report::stopped(request.json, kept.as_ref(), stop.code, &stop.error),
    };
    if let (Some(file), None) = (&request.output_last_message, &ended.failure)
        && let Err(e) = std::fs::write(file, &ended.last_message)
    {
        let e = anyhow::anyhow!("cannot write the last message to {}: {e}", file.display());
        return report::stopped(request.json, kept.as_ref(), FAILED, &e);
    }
    let code = if ended.failure.is_some() {
        FAILED
    } else if ended.refused_for_approval > 0 {
        REFUSED
    } else if !ended.unwritten.is_empty() {
        UNWRITTEN
    } else {
        0
    };
    let usage = kept.as_ref().map(|_| turn_usage(&store, &id));
    report::summary(request.json, kept.as_ref(), &ended, usage.as_ref(), code);
    ExitCode::from(code)
}

/// Whether the model ever answered in the session (a message, or a call's usage).
fn model_answered(store: &SessionStore, id: &SessionId) -> bool {
    store.read(id).map_or(true, |log| {
        log.entries.iter().any(|e| {
            matches!(
                e.kind,
                EntryKind::Assistant { .. } | EntryKind::Usage { .. }
            )
        })
    })
}

/// What the last turn's model calls used: the usage entries after the session's last prompt.
fn turn_usage(store: &SessionStore, id: &SessionId) -> report::TurnUsage {
    let mut usage = report::TurnUsage::default();
    let Ok(log) = store.read(id) else {
        return usage;
    };
    let start = (log.entries.iter())
        .rposition(|e| matches!(e.kind, EntryKind::UserMessage { .. }))
        .unwrap_or(0);
    for entry in &log.entries[start..] {
        if let EntryKind::Usage {
            usage: u, cost_usd, ..
        } = &entry.kind
        {
            usage.add(u, *cost_usd);
        }
    }
    usage
}

/// Opens (or continues) the session, sets its mode, runs the prompt and follows the turn.
/// `opened_new` names a session this run created, as soon as it exists.
async fn turn(
    runtime: &Runtime,
    events: &mut Receiver<SessionEvent>,
    home: &Path,
    request: &input::Request,
    opened_new: &mut Option<SessionId>,
) -> Result<(SessionId, Ended), Stop> {
    let opened = open(runtime, home, request).await?;
    if opened.1 {
        *opened_new = Some(opened.0.handle.id().clone());
    }
    let opened = opened.0;
    opened.notices.release();
    let handle = opened.handle;
    let mode = choose_mode(request.mode, &opened.settings.available_modes)?;
    if mode != opened.settings.mode {
        handle
            .change(SettingChange::Mode(mode))
            .await
            .map_err(|e| Stop::failed(e.into()))?;
    }
    let text = request.prompt.as_str().into();
    handle
        .prompt(vec![UserContent::Text { text }], TurnOptions::default())
        .await
        .map_err(|e| Stop::failed(e.into()))?;
    let mut report = Report::new(request.json, handle.id().clone());
    let ended = report.follow(events).await?;
    Ok((handle.id().clone(), ended))
}

/// The session of this run, and whether the run created it.
async fn open(
    runtime: &Runtime,
    home: &Path,
    request: &input::Request,
) -> Result<(Opened, bool), Stop> {
    let existing = match (&request.session, request.continue_last) {
        (Some(id), _) => Some(SessionId::parse(id).map_err(|e| Stop {
            code: USAGE,
            error: anyhow::anyhow!("--session: {e}"),
        })?),
        (None, true) => Some(last_session_here(home, &request.cwd)?),
        (None, false) => None,
    };
    let Some(id) = existing else {
        let opened = runtime
            .new_session(NewSession {
                cwd: request.cwd.clone(),
                additional_directories: request.add_dirs.clone(),
                harness: Harness::Code,
                mcp_servers: vec![],
                model: request.model.clone(),
            })
            .await
            .map_err(|e| Stop::failed(e.into()))?;
        return Ok((opened, true));
    };
    let opened = (runtime.open_session(&id, false, vec![]).await)
        .map_err(|e| Stop::failed(anyhow::anyhow!("cannot continue session {id}: {e}")))?;
    let handle = &opened.handle;
    if !request.add_dirs.is_empty() {
        let dirs = SettingChange::Directories(request.add_dirs.clone());
        handle
            .change(dirs)
            .await
            .map_err(|e| Stop::failed(e.into()))?;
    }
    if let Some(model) = &request.model {
        let model = SettingChange::Model(model.clone());
        handle
            .change(model)
            .await
            .map_err(|e| Stop::failed(e.into()))?;
    }
    Ok((opened, false))
}

/// `-c`: the newest session started in `cwd` (not a subagent's).
fn last_session_here(home: &Path, cwd: &Path) -> Result<SessionId, Stop> {
    let sessions = SessionStore::new(home)
        .list()
        .map_err(|e| Stop::failed(e.into()))?;
    sessions
        .into_iter()
        .find(|s| !s.subagent && s.prompted && s.cwd == cwd)
        .map(|s| s.id)
        .ok_or_else(|| {
            Stop::failed(anyhow::anyhow!(
                "no session to continue in {} (`ferrite sessions list` shows them all)",
                cwd.display()
            ))
        })
}

/// The mode asked for, or `auto`; without `--mode`, the highest the config allows when that is
/// lower (and stderr says so). An explicit mode above the ceiling is refused.
fn choose_mode(asked: Option<Mode>, available: &[Mode]) -> Result<Mode, Stop> {
    let wanted = asked.unwrap_or(Mode::Auto);
    if available.contains(&wanted) {
        return Ok(wanted);
    }
    let highest = available.iter().copied().max().unwrap_or(Mode::Plan);
    if asked.is_some() {
        return Err(Stop::failed(anyhow::anyhow!(
            "mode `{wanted}` is above what config.toml allows (max_mode = \"{highest}\")"
        )));
    }
    let _ = writeln!(
        std::io::stderr(),
        "mode: {highest} (max_mode in config.toml is below auto)"
    );
    Ok(highest)
}
