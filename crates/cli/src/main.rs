//! The `ferrite` binary: parses arguments, sets up logging to stderr, wires the crates together.

mod alloc;
mod args;
mod commands;

use std::path::PathBuf;
use std::process::ExitCode;

use args::{AcpCommand, Cli, Command, McpCommand, SessionsCommand};
use clap::Parser;
use ferrite_core::env::Env;

/// `FERRITE_HOME`, else `.ferrite` in the user's home (`HOME`, else the passwd entry).
fn ferrite_home(env: &Env) -> anyhow::Result<PathBuf> {
    if let Some(h) = env.get("FERRITE_HOME") {
        return Ok(PathBuf::from(h));
    }
    match env.home() {
        Some(home) => Ok(home.join(".ferrite")),
        None => anyhow::bail!(
            "no home directory for Ferrite's files: HOME is not set (or not an absolute path) and \
             the user has no passwd entry; set FERRITE_HOME (or HOME)"
        ),
    }
}

/// Log lines on stderr only when `FERRITE_LOG` asks for them; `ferrite acp` logs warnings to
/// the editor's log (its stderr) without being asked.
fn init_logging(env: &Env, default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(env.get("FERRITE_LOG").unwrap_or(default))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_target(false)
        .init();
}

fn main() -> ExitCode {
    // The sandbox helper re-executes this binary: dispatch before parsing, logging or threads.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if ferrite_exec::is_sandbox_helper_invocation(&args) {
        return ferrite_exec::sandbox_helper_main(&args);
    }
    alloc::tune();
    let cli = Cli::parse();
    let env = Env::from_process();
    // Read once above; nothing else may see the keys (not even through /proc): commands get an
    // environment without them, and the block the agent was started with loses their values.
    ferrite_exec::wipe_keys_from_own_environment();
    let default_log = match cli.command {
        Command::Acp { .. } => "warn",
        _ => "off",
    };
    init_logging(&env, default_log);
    // Output only: needs no home, config or provider.
    if let Command::Completions { target } = cli.command {
        return commands::completions::print(target);
    }
    let home = match ferrite_home(&env) {
        Ok(h) => h,
        // An editor gets the reason as the answer to each of its requests, not a silent exit.
        Err(e) if matches!(cli.command, Command::Acp { command: None }) => {
            let _ = commands::fail(&e);
            return commands::acp::refuse(&format!("{e:#}"));
        }
        Err(e) => return commands::fail(&e),
    };
    let result = match cli.command {
        Command::Acp { command: None } => commands::acp::run(home, env),
        Command::Acp {
            command: Some(AcpCommand::Login { provider }),
        } => commands::auth::login(&home, &env, provider.as_deref()),
        Command::Run(args) => commands::run::run(home, env, args),
        Command::Login { provider } => commands::auth::login(&home, &env, provider.as_deref()),
        Command::Logout { provider } => commands::auth::logout(&home, provider.as_deref()),
        Command::Sessions { command } => match command {
            SessionsCommand::List { cwd } => commands::sessions::list(&home, cwd),
            SessionsCommand::Show { id } => commands::sessions::show(&home, &id),
            SessionsCommand::Delete { id } => commands::sessions::delete(&home, &id),
        },
        Command::Doctor => commands::doctor::run(&home, &env),
        Command::Models => commands::models::run(home, env),
        Command::Mcp { command } => match command {
            McpCommand::Login { server } => commands::mcp::login(&home, &server),
            McpCommand::Logout { server } => commands::mcp::logout(&home, &server),
            McpCommand::Add {
                name,
                env,
                headers,
                target,
            } => commands::mcp_config::add(&home, &name, &target, &env, &headers),
            McpCommand::List => commands::mcp_config::list(&home),
            McpCommand::Remove { name } => commands::mcp_config::remove(&home, &name),
        },
        Command::Trust { dir } => commands::doctor::trust(&home, &env, dir),
        // Printed above, before the home directory is looked for.
        Command::Completions { target } => Ok(commands::completions::print(target)),
    };
    match result {
        Ok(code) => code,
        Err(e) => commands::fail(&e),
    }
}
