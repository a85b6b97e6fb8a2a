//! The command line, as clap reads it. One definition serves parsing, `--help`, the shell
//! completions and the man page (`ferrite completions`).

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// The environment variables every command reads, shown under `--help`.
const ENVIRONMENT: &str = "\
Environment:
  FERRITE_HOME   where config.toml, credentials and sessions live [default: ~/.ferrite]
  FERRITE_MODEL  the default model (provider/model), over `model` in config.toml
  FERRITE_LOG    diagnostic log lines on stderr, e.g. FERRITE_LOG=debug or
                 FERRITE_LOG=ferrite_llm=trace [default: none; `ferrite acp`: warn]";

/// `ferrite run --help`: what the exit status says, then the environment.
const RUN_AFTER_HELP: &str = "\
Exit status:
  0  the turn ended and no call was refused for want of approval
  1  the turn failed (provider unreachable or erroring, no model or key, config error, ...)
     or the run could not start
  2  usage error (unknown option, bad --mode, no prompt)
  3  the turn ended, but a call was refused because it needed approval (--mode ask, or a
     write outside the workspace in auto)
  4  the turn ended, but a file change failed (e.g. a read-only or foreign-owned file) and
     no later call made it; stderr names the file and why

The answer goes to stdout; each call's outcome, failures and a final usage line go to stderr.
A run the model never answered leaves no session behind.

Environment:
  FERRITE_HOME   where config.toml, credentials and sessions live [default: ~/.ferrite]
  FERRITE_MODEL  the default model (provider/model), over `model` in config.toml
  FERRITE_LOG    diagnostic log lines on stderr, e.g. FERRITE_LOG=debug [default: none]";

#[derive(Parser)]
#[command(
    name = "ferrite",
    version,
    about = "A coding agent for editors, over the Agent Client Protocol",
    after_help = ENVIRONMENT
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Serve the Agent Client Protocol on stdin/stdout (what editors start).
    Acp {
        #[command(subcommand)]
        command: Option<AcpCommand>,
    },
    /// Run one headless turn in the current directory (also `ferrite -p PROMPT`).
    #[command(short_flag = 'p', long_flag = "print", after_help = RUN_AFTER_HELP)]
    Run(RunArgs),
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
    /// Manage MCP servers in the user config; sign in to one that uses OAuth.
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
    /// Trust the folder (its repository): its hooks and agents may run (`docs/extending.md`).
    Trust {
        /// The folder; the current directory when absent.
        dir: Option<PathBuf>,
    },
    /// Print shell completions (bash, zsh, fish) or the man page (man) on stdout.
    Completions {
        /// `ferrite completions bash > ~/.local/share/bash-completion/completions/ferrite`;
        /// `ferrite completions man > ferrite.1`.
        target: CompletionTarget,
    },
}

/// `ferrite run`'s options (the conventions of `claude -p` and `codex exec`).
#[derive(clap::Args)]
pub struct RunArgs {
    /// Model id (provider/model), e.g. anthropic/claude-sonnet-4-5 [default: FERRITE_MODEL,
    /// then `model` in config.toml].
    #[arg(short = 'm', long)]
    pub model: Option<String>,
    /// What the agent may do without asking; no one is there to ask, so what would ask is
    /// refused [default: auto, or max_mode in config when lower].
    #[arg(long, value_enum)]
    pub mode: Option<RunMode>,
    /// Print events as JSON lines on stdout instead of the answer.
    #[arg(long)]
    pub json: bool,
    /// Continue this session instead of starting a new one.
    #[arg(long, conflicts_with = "continue_last")]
    pub session: Option<String>,
    /// Continue the last session of this directory.
    #[arg(short = 'c', long = "continue")]
    pub continue_last: bool,
    /// Also write the agent's last message to FILE.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output_last_message: Option<PathBuf>,
    /// Work in DIR instead of the current directory.
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    pub cd: Option<PathBuf>,
    /// Another directory the agent may work in, besides the working directory (repeatable).
    #[arg(long = "add-dir", value_name = "DIR")]
    pub add_dirs: Vec<PathBuf>,
    /// The prompt; read from stdin when absent or `-`.
    #[arg(num_args = 0..)]
    pub prompt: Vec<String>,
}

/// The modes of `ferrite run` (`docs/permissions.md`).
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RunMode {
    /// Read and plan only: writes refused, read-only commands in a read-only sandbox.
    Plan,
    /// Refuse every write and command that would ask (unless an allow rule lets it through).
    Ask,
    /// Write inside the workspace, run commands in the sandbox with the network off.
    Auto,
    /// Anything, anywhere, no sandbox.
    Full,
}

impl RunMode {
    pub fn mode(self) -> ferrite_core::modes::Mode {
        use ferrite_core::modes::Mode;
        match self {
            RunMode::Plan => Mode::Plan,
            RunMode::Ask => Mode::Ask,
            RunMode::Auto => Mode::Auto,
            RunMode::Full => Mode::Full,
        }
    }
}

/// What `ferrite completions` prints.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompletionTarget {
    Bash,
    Zsh,
    Fish,
    /// The man page (roff), from the same definitions.
    Man,
}

/// What an editor runs to authenticate: the arguments of the terminal auth method are appended
/// to the agent's own command (`ferrite acp` + `login`), as the ACP schema says.
#[derive(Subcommand)]
pub enum AcpCommand {
    /// The same as `ferrite login`.
    Login { provider: Option<String> },
}

#[derive(Subcommand)]
pub enum McpCommand {
    /// Add a server to the user config: a URL (remote), or a command and its arguments (local;
    /// put `--` before arguments that start with `-`).
    Add {
        /// Its name, `[mcp_servers.NAME]`.
        name: String,
        /// Environment of a local server's command, KEY=VALUE (repeatable).
        #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// HTTP header of a remote server, NAME=VALUE (repeatable).
        #[arg(long = "header", value_name = "NAME=VALUE")]
        headers: Vec<String>,
        /// `https://…` for a remote server, else the command and its arguments.
        #[arg(required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true)]
        target: Vec<String>,
    },
    /// List the configured servers (the user's, and the workspace's of this directory).
    List,
    /// Remove a server from the user config.
    Remove {
        /// Its name, `[mcp_servers.NAME]`.
        name: String,
    },
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
pub enum SessionsCommand {
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
