//! The boundary to running commands. `crates/exec` implements [`CommandRunner`] (process groups,
//! timeouts, output spill, the Landlock + seccomp sandbox); core never spawns a process itself.

use std::path::PathBuf;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::modes::Mode;

/// What a command may touch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sandbox {
    /// No restrictions (`full` mode).
    None,
    /// Writes only under `writable` (workspace roots, temp, the spill directory); reads anywhere;
    /// network as given.
    Restricted {
        writable: Vec<PathBuf>,
        network: bool,
    },
}

impl Sandbox {
    /// The sandbox of contract §5/§6 for a session mode: `plan` writes nowhere and has no
    /// network; `ask` writes in the workspace with network; `auto` writes in the workspace with
    /// network only when `sandbox.network` says so; `full` is unrestricted.
    pub fn for_mode(
        mode: Mode,
        roots: &[PathBuf],
        spill_dir: &std::path::Path,
        network: bool,
    ) -> Self {
        let mut writable: Vec<PathBuf> = roots.to_vec();
        writable.push(std::env::temp_dir());
        writable.push(spill_dir.to_owned());
        match mode {
            Mode::Plan => Sandbox::Restricted {
                writable: vec![],
                network: false,
            },
            Mode::Ask => Sandbox::Restricted {
                writable,
                network: true,
            },
            Mode::Auto => Sandbox::Restricted { writable, network },
            Mode::Full => Sandbox::None,
        }
    }
}

/// One command to run through `sh -c`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    pub command: String,
    pub cwd: PathBuf,
    pub timeout: Duration,
    pub sandbox: Sandbox,
    /// Where the complete output (stdout and stderr interleaved as they arrive) is written.
    pub spill_path: PathBuf,
    /// How much output to keep in memory for the model: the rest is only in the spill file.
    pub max_bytes: usize,
    pub max_lines: usize,
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    TimedOut,
    Cancelled,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutput {
    pub exit: Exit,
    /// The output kept in memory: the first `max_bytes`/`max_lines` (lossy UTF-8).
    pub excerpt: String,
    /// Whether `excerpt` is all of the output.
    pub truncated: bool,
    pub total_bytes: u64,
    pub total_lines: u64,
    pub spill_path: PathBuf,
    pub duration: Duration,
}

/// What the sandbox can enforce on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSupport {
    /// Landlock is available and enforces file-system rules.
    pub filesystem: bool,
    /// Network can be cut off for commands (seccomp).
    pub network: bool,
    /// A sentence for the user: what is and is not enforced, and why.
    pub summary: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecError {
    /// The sandbox asked for cannot be enforced here; the message says why and what to do.
    #[error("{0}")]
    SandboxUnavailable(String),
    #[error("could not start the command: {0}")]
    Spawn(String),
    #[error("{0}")]
    Io(String),
}

pub trait CommandRunner: Send + Sync {
    /// Runs `spec`. Output chunks are passed to `on_output` as they arrive (for streaming to the
    /// editor) while being written to the spill file. On `cancel` or timeout the whole process
    /// group gets SIGTERM, then SIGKILL after 2 s; no process of the group outlives the call.
    fn run<'a>(
        &'a self,
        spec: CommandSpec,
        cancel: CancellationToken,
        on_output: &'a (dyn Fn(&str) + Send + Sync),
    ) -> BoxFuture<'a, Result<CommandOutput, ExecError>>;

    fn sandbox_support(&self) -> SandboxSupport;
}
