//! The `ferrite` binary: parses arguments, sets up logging to stderr, wires the crates together.

mod alloc;
mod commands;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use ferrite_core::env::Env;

#[derive(Parser)]
#[command(
    name = "ferrite",
    version,
    about = "A coding agent for editors, over the Agent Client Protocol"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the Agent Client Protocol on stdin/stdout (what editors start).
    Acp {
        #[command(subcommand)]
        command: Option<AcpCommand>,
    },
    /// Run one headless turn in the current directory.
    Run {
        /// Model id, e.g. anthropic/claude-sonnet-4-5.
        #[arg(long)]
        model: Option<String>,
        /// plan, ask, auto or full.
        #[arg(long)]
        mode: Option<String>,
        /// Print events as JSON lines on stdout.
        #[arg(long)]
        json: bool,
        /// Continue this session instead of starting a new one.
        #[arg(long)]
        session: Option<String>,
        /// The prompt.
        #[arg(required = true, num_args = 1..)]
        prompt: Vec<String>,
    },
    /// Store an API key for a provider (read from stdin, never from arguments).
    Login {
        /// anthropic, openai, or a provider from config.toml.
        provider: Option<String>,
    },
    /// Remove stored credentials (all, or one provider's).
    Logout { provider: Option<String> },
    /// Inspect the session store.
    Sessions {
        #[command(subcommand)]
        command: SessionsCommand,
    },
    /// Check config, credentials, sandbox support and providers, and say what to fix.
    Doctor,
    /// List the usable models: id, provider, context window, where the facts come from.
    Models,
    /// Sign in to a remote MCP server that uses OAuth, or forget its token.
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
    /// Trust the folder (its repository): its hooks and agents may run (`docs/extending.md`).
    Trust {
        /// The folder; the current directory when absent.
        dir: Option<std::path::PathBuf>,
    },
}

/// What an editor runs to authenticate: the arguments of the terminal auth method are appended
/// to the agent's own command (`ferrite acp` + `login`), as the ACP schema says.
#[derive(Subcommand)]
enum AcpCommand {
    /// The same as `ferrite login`.
    Login { provider: Option<String> },
}

#[derive(Subcommand)]
enum McpCommand {
    /// Sign in (OAuth in the browser) and store the token for every later session.
    Login {
        /// A server's name in config.toml (`[mcp_servers.NAME]`), or its URL.
        server: String,
    },
    /// Remove a server's stored token.
    Logout {
        /// A server's name in config.toml, or its URL.
        server: String,
    },
}

#[derive(Subcommand)]
enum SessionsCommand {
    /// List sessions, newest first.
    List {
        #[arg(long)]
        cwd: Option<PathBuf>,
    },
    /// Print a session's conversation.
    Show { id: String },
    /// Delete a session.
    Delete { id: String },
}

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

fn init_logging(env: &Env) {
    let filter = tracing_subscriber::EnvFilter::try_new(env.get("FERRITE_LOG").unwrap_or("warn"))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
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
    init_logging(&env);
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
        Command::Run {
            model,
            mode,
            json,
            session,
            prompt,
        } => commands::run::run(
            home,
            env,
            commands::run::Args {
                model,
                mode,
                json,
                session,
                prompt: prompt.join(" "),
            },
        ),
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
        },
        Command::Trust { dir } => commands::doctor::trust(&home, &env, dir),
    };
    match result {
        Ok(code) => code,
        Err(e) => commands::fail(&e),
    }
}
