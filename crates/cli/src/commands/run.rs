//! `ferrite run`: one headless turn. The answer's text goes to stdout, activity to stderr;
//! `--json` prints every event as a JSON line instead. Exit code 1 when the turn failed.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use ferrite_core::content::UserContent;
use ferrite_core::env::Env;
use ferrite_core::events::{Event, SettingChange, TurnOptions};
use ferrite_core::ids::SessionId;
use ferrite_core::log::StopReason;
use ferrite_core::modes::{Harness, Mode};
use ferrite_core::runtime::{NewSession, Runtime};

pub struct Args {
    pub model: Option<String>,
    pub mode: Option<String>,
    pub json: bool,
    pub session: Option<String>,
    pub prompt: String,
}

pub fn run(home: PathBuf, env: Env, args: Args) -> anyhow::Result<ExitCode> {
    let rt = super::runtime()?;
    // Boxed, as in `acp::run`: the future is large, and `main`'s frame would hold it.
    let code = rt.block_on(Box::pin(async move {
        let services = super::services(home, env);
        // The browser step of an MCP server's sign-in: the link is printed on stderr.
        let _ = services
            .elicitor
            .set(std::sync::Arc::new(super::mcp::TerminalLinks));
        let (runtime, mut events) = Runtime::new(services);
        let result = turn(&runtime, &mut events, args).await;
        runtime.shutdown().await;
        result
    }));
    rt.shutdown_background();
    code
}

async fn turn(
    runtime: &Runtime,
    events: &mut tokio::sync::mpsc::Receiver<ferrite_core::events::SessionEvent>,
    args: Args,
) -> anyhow::Result<ExitCode> {
    let opened = match &args.session {
        Some(id) => {
            let id = SessionId::parse(id).map_err(|e| anyhow::anyhow!("{e}"))?;
            runtime.open_session(&id, false, vec![]).await?
        }
        None => {
            let cwd = std::env::current_dir().context("current directory")?;
            runtime
                .new_session(NewSession {
                    cwd,
                    additional_directories: vec![],
                    harness: Harness::Code,
                    mcp_servers: vec![],
                    model: args.model.clone(),
                })
                .await?
        }
    };
    opened.notices.release();
    let handle = opened.handle;
    if let Some(mode) = &args.mode {
        let mode: Mode = mode.parse()?;
        handle.change(SettingChange::Mode(mode)).await?;
    }
    if let (Some(model), Some(_)) = (&args.model, &args.session) {
        handle.change(SettingChange::Model(model.clone())).await?;
    }
    handle
        .prompt(
            vec![UserContent::Text {
                text: args.prompt.as_str().into(),
            }],
            TurnOptions::default(),
        )
        .await?;
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr();
    let mut failed = false;
    while let Some(ev) = events.recv().await {
        if args.json {
            writeln!(stdout, "{}", serde_json::to_string(&ev)?)?;
        }
        match ev.event {
            Event::AgentMessageChunk { text } if !args.json => {
                write!(stdout, "{text}")?;
                stdout.flush()?;
            }
            // A terminal obeys ESC sequences and CR: the title is shown escaped, as in editors.
            // Activity is for whoever watches: a stderr closed under the turn does not end it.
            Event::ToolCall(c) if !args.json => {
                let _ = writeln!(
                    stderr,
                    "[{:?}] {}",
                    c.kind,
                    ferrite_core::display::visible(&c.title)
                );
            }
            Event::TurnEnded(outcome) => {
                failed = outcome.failure.is_some()
                    || matches!(outcome.stop, StopReason::Refusal | StopReason::Cancelled);
                break;
            }
            _ => {}
        }
    }
    if !args.json {
        writeln!(stdout)?;
    }
    let _ = writeln!(stderr, "session: {}", handle.id());
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
