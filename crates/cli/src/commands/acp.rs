//! `ferrite acp`: the agent editors start.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use ferrite_acp::ServeOptions;
use ferrite_core::env::Env;
use ferrite_core::runtime::Runtime;

/// Said once on stderr when a person starts `ferrite acp` in a terminal instead of an editor.
pub const TERMINAL_HINT: &str = "ferrite acp: waiting for an editor to speak the Agent Client \
Protocol on stdin/stdout (configure your editor as in README.md, section \"Use it from an \
editor\"); to work from this shell, run `ferrite run \"...\"` instead. Ctrl-D quits.";

/// `ferrite acp` that cannot start (no home directory): every request is answered with the
/// reason until stdin ends.
pub fn refuse(reason: &str) -> ExitCode {
    let Ok(rt) = super::runtime() else {
        return ExitCode::FAILURE;
    };
    let result = rt.block_on(ferrite_acp::refuse_all(
        reason,
        tokio::io::stdin(),
        tokio::io::stdout(),
    ));
    rt.shutdown_background();
    if let Err(e) = result {
        tracing::error!(error = %e, "answering the editor failed");
    }
    ExitCode::FAILURE
}

pub fn run(home: PathBuf, env: Env) -> anyhow::Result<ExitCode> {
    if std::io::stdin().is_terminal() {
        // An editor always pipes stdin; a terminal means someone typed the command. The
        // agent keeps serving either way (`docs/acp.md`: stdout stays ACP only).
        let _ = writeln!(std::io::stderr(), "{TERMINAL_HINT}");
    }
    let rt = super::runtime()?;
    // Boxed: the agent's future is tens of KiB, and each stack frame it passes through on its way
    // into the runtime (this one, `block_on`'s) would otherwise keep a copy of it resident.
    let result = rt.block_on(Box::pin(async move {
        let (runtime, events) = Runtime::new(super::services(home, env));
        let options = ServeOptions {
            agent_version: env!("CARGO_PKG_VERSION").to_owned(),
        };
        ferrite_acp::serve(
            runtime,
            events,
            tokio::io::stdin(),
            tokio::io::stdout(),
            options,
        )
        .await
    }));
    // Everything that matters is flushed by `serve`; don't wait on the thread blocked in a
    // read of stdin.
    rt.shutdown_background();
    result?;
    Ok(ExitCode::SUCCESS)
}
