//! `ferrite acp`: the agent editors start.

use std::path::PathBuf;
use std::process::ExitCode;

use ferrite_acp::ServeOptions;
use ferrite_core::env::Env;
use ferrite_core::runtime::Runtime;

pub fn run(home: PathBuf, env: Env) -> anyhow::Result<ExitCode> {
    let rt = super::runtime()?;
    let result = rt.block_on(async move {
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
    });
    // Everything that matters is flushed by `serve`; don't wait on the thread blocked in a
    // read of stdin.
    rt.shutdown_background();
    result?;
    Ok(ExitCode::SUCCESS)
}
