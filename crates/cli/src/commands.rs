//! One module per subcommand.

pub mod acp;
pub mod auth;
pub mod completions;
pub mod doctor;
pub mod mcp;
pub mod mcp_config;
pub mod models;
pub mod reachability;
pub mod run;
pub mod sessions;

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use ferrite_core::env::Env;
use ferrite_core::model::ModelConnector;

/// Prints an error for a person on stderr and returns the failure exit code.
pub fn fail(e: &anyhow::Error) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "ferrite: {e:#}");
    ExitCode::FAILURE
}

/// The model connector (ferrite-llm). `None` only if the HTTP client cannot be set up; turns then
/// fail with a configuration error that says so.
pub fn connector(env: &Env) -> Option<Arc<dyn ModelConnector>> {
    match ferrite_llm::Connector::from_env(env) {
        Ok(c) => Some(Arc::new(c)),
        Err(e) => {
            tracing::error!(error = %e, "model providers unavailable");
            None
        }
    }
}

/// The core's services with the real model connector and command runner.
pub fn services(home: std::path::PathBuf, env: Env) -> ferrite_core::runtime::Services {
    let connector = connector(&env);
    let mcp: Arc<dyn ferrite_core::mcp::McpLauncher> =
        Arc::new(ferrite_mcp::Launcher::from_env(&env, Some(&home)));
    let mut services = ferrite_core::runtime::Services::new(home, env, connector);
    services.mcp = Some(mcp);
    services.release_memory = release_memory;
    services.web = Some(Arc::new(ferrite_web::HttpFetcher::default()));
    match std::env::current_exe() {
        Ok(exe) => {
            let runner = Arc::new(ferrite_exec::ExecRunner::new(exe));
            // Language servers run under the same supervisor and sandbox as commands.
            #[cfg(unix)]
            {
                services.lsp = Some(Arc::new(ferrite_lsp::LspRunner::new(runner.clone())));
            }
            services.runner = Some(runner);
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot locate the ferrite binary; commands are unavailable")
        }
    }
    services
}

/// What the agent hands back once it rests: the request bodies kept for the next model call
/// (with the messages they were written from), then the allocator's free memory.
fn release_memory() {
    ferrite_llm::release_buffers();
    crate::alloc::release();
}

/// A multi-threaded runtime: the agent serves many sessions at once.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}
