//! [`ExecRunner`]: runs one command in its own process group, streams and spills its output, and
//! makes sure nothing of it outlives the call.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use ferrite_core::exec::{
    CommandOutput, CommandRunner, CommandSpec, ExecError, Exit, Sandbox, SandboxSupport,
};
use futures::future::BoxFuture;
use tokio::io::AsyncReadExt;
use tokio::process::{ChildStderr, ChildStdout, Command};
use tokio_util::sync::CancellationToken;

use crate::group::ProcessGroup;
use crate::helper::{SETUP_FAILURE_CODE, SETUP_FAILURE_PREFIX, helper_args};
use crate::sandbox::{self, Network, Policy};
use crate::spill::{OutputSink, Pushed, Stream};

/// Runs commands for the agent (see the crate docs).
///
/// ```no_run
/// # async fn demo() -> Result<(), ferrite_core::exec::ExecError> {
/// use ferrite_core::exec::{CommandRunner, CommandSpec, Sandbox};
/// use ferrite_exec::ExecRunner;
///
/// let exe = std::env::current_exe().map_err(|e| ferrite_core::exec::ExecError::Io(e.to_string()))?;
/// let runner = ExecRunner::new(exe);
/// let spec = CommandSpec {
///     command: "cargo test".into(),
///     cwd: "/work/project".into(),
///     timeout: std::time::Duration::from_secs(600),
///     sandbox: Sandbox::Restricted { writable: vec!["/work/project".into()], network: false },
///     spill_path: "/home/me/.ferrite/sessions/s1/tool-output/call-1.log".into(),
///     max_bytes: 16 * 1024,
///     max_lines: 400,
/// };
/// let cancel = tokio_util::sync::CancellationToken::new();
/// let output = runner.run(spec, cancel, &|chunk| { let _ = chunk; }).await?;
/// # let _ = output; Ok(()) }
/// ```
pub struct ExecRunner {
    helper_exe: PathBuf,
    spill_limit: u64,
    support: OnceLock<SandboxSupport>,
}

/// Time between SIGTERM and SIGKILL on cancel and timeout (contract §6).
const KILL_GRACE: Duration = Duration::from_secs(2);

/// How long to keep reading after the leader exited and its group was killed. Output already in
/// the pipes is read at once; this only bites when a process that left the group (`setsid`)
/// still holds the pipes open — then we stop reading rather than hang.
const DRAIN_GRACE: Duration = Duration::from_millis(250);

/// Default cap on what one command may write to its spill file before it is killed.
const DEFAULT_SPILL_LIMIT: u64 = 2 * 1024 * 1024 * 1024;

const READ_BUFFER: usize = 64 * 1024;

impl ExecRunner {
    /// `helper_exe` understands the hidden sandbox-helper argv: in production the `ferrite`
    /// binary itself (`std::env::current_exe()`), whose `main` dispatches to
    /// [`crate::sandbox_helper_main`].
    pub fn new(helper_exe: PathBuf) -> Self {
        ExecRunner {
            helper_exe,
            spill_limit: DEFAULT_SPILL_LIMIT,
            support: OnceLock::new(),
        }
    }

    /// Caps the bytes one command may write to its spill file (default 2 GiB); past it the
    /// command is killed and its output says so.
    pub fn with_spill_limit(mut self, bytes: u64) -> Self {
        self.spill_limit = bytes;
        self
    }

    /// What this kernel can enforce, probed once per runner.
    pub fn sandbox_support(&self) -> SandboxSupport {
        self.support.get_or_init(sandbox::probe).clone()
    }

    /// The command line for `spec`: `sh -c` directly, or through the helper when restricted.
    fn command(&self, spec: &CommandSpec) -> Result<Command, ExecError> {
        let shell = [
            OsStr::new("sh"),
            OsStr::new("-c"),
            OsStr::new(&spec.command),
        ];
        let mut command = match &spec.sandbox {
            Sandbox::None => {
                let mut command = Command::new(shell[0]);
                command.args(&shell[1..]);
                command
            }
            Sandbox::Restricted { writable, network } => {
                let network = if *network { Network::On } else { Network::Off };
                self.check_enforceable(network)?;
                let policy = Policy {
                    writable: writable.clone(),
                    network,
                };
                let mut command = Command::new(&self.helper_exe);
                command.args(helper_args(&policy, &shell));
                command
            }
        };
        command
            .current_dir(&spec.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        Ok(command)
    }

    fn check_enforceable(&self, network: Network) -> Result<(), ExecError> {
        let support = self.sandbox_support();
        if !support.filesystem {
            return Err(ExecError::SandboxUnavailable(format!(
                "This command was not run: the sandbox cannot be enforced here. {} Switch the \
                 session to `full` mode to run commands without a sandbox.",
                support.summary
            )));
        }
        if network == Network::Off && !support.network {
            return Err(ExecError::SandboxUnavailable(format!(
                "This command was not run: network access cannot be turned off here. {} Allow \
                 network for commands (`sandbox.network = true`) or switch the session to `full` \
                 mode.",
                support.summary
            )));
        }
        Ok(())
    }

    async fn run_spec(
        &self,
        spec: CommandSpec,
        cancel: CancellationToken,
        on_output: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<CommandOutput, ExecError> {
        let started = Instant::now();
        let mut command = self.command(&spec)?;
        let mut sink = OutputSink::create(
            &spec.spill_path,
            self.spill_limit,
            spec.max_bytes,
            spec.max_lines,
            on_output,
        )
        .await
        .map_err(|err| {
            ExecError::Io(format!(
                "could not create the output file {}: {err}",
                spec.spill_path.display()
            ))
        })?;
        let mut child = command.spawn().map_err(|err| {
            let program = match spec.sandbox {
                Sandbox::None => "sh".to_owned(),
                Sandbox::Restricted { .. } => self.helper_exe.display().to_string(),
            };
            ExecError::Spawn(format!("{program} in {}: {err}", spec.cwd.display()))
        })?;
        // Declared after `child`, so dropped before it: on an early drop the whole group is
        // killed, then `kill_on_drop` reaps the leader.
        let mut group = ProcessGroup::new(child.id());
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(ExecError::Spawn(
                "the command's output pipes are missing".to_owned(),
            ));
        };

        let mut pipes = Pipes::new(stdout, stderr);
        let timeout = tokio::time::sleep(spec.timeout);
        tokio::pin!(timeout);
        let mut stop: Option<Stop> = None;
        let mut status: Option<std::io::Result<ExitStatus>> = None;
        let mut kill_at: Option<tokio::time::Instant> = None;
        let mut drain_until: Option<tokio::time::Instant> = None;

        while status.is_none() || !pipes.closed() {
            tokio::select! {
                // Cancel first: it must win over a busy output stream.
                biased;
                () = cancel.cancelled(), if stop.is_none() && status.is_none() => {
                    stop = Some(Stop::Cancelled);
                    group.terminate();
                    kill_at = Some(tokio::time::Instant::now() + KILL_GRACE);
                }
                () = &mut timeout, if stop.is_none() && status.is_none() => {
                    stop = Some(Stop::TimedOut);
                    group.terminate();
                    kill_at = Some(tokio::time::Instant::now() + KILL_GRACE);
                }
                () = sleep_until(kill_at), if kill_at.is_some() && status.is_none() => {
                    group.kill();
                    kill_at = None;
                }
                exited = child.wait(), if status.is_none() => {
                    status = Some(exited);
                    // Background children of the command (`sleep 100 &`) die with it.
                    group.kill();
                    drain_until = Some(tokio::time::Instant::now() + DRAIN_GRACE);
                }
                () = sleep_until(drain_until), if drain_until.is_some() => {
                    tracing::debug!(
                        command = %spec.command,
                        "output pipes still open after the command's group was killed; not waiting"
                    );
                    break;
                }
                chunk = pipes.stdout.read(), if pipes.stdout.open => {
                    if sink.push(Stream::Stdout, chunk).await == Pushed::SpillLimitReached
                        && stop.is_none()
                    {
                        stop = Some(Stop::OutputLimit);
                        group.kill();
                    }
                }
                chunk = pipes.stderr.read(), if pipes.stderr.open => {
                    if sink.push(Stream::Stderr, chunk).await == Pushed::SpillLimitReached
                        && stop.is_none()
                    {
                        stop = Some(Stop::OutputLimit);
                        group.kill();
                    }
                }
            }
        }
        // The leader is reaped and its group killed: forget the group id before it can be reused.
        group.disarm();

        let status = status
            .unwrap_or_else(|| Err(std::io::Error::other("no exit status")))
            .map_err(|err| ExecError::Io(format!("waiting for the command failed: {err}")))?;
        if stop == Some(Stop::OutputLimit) {
            sink.note(format!(
                "[ferrite: the command wrote more than {} bytes of output and was killed]",
                self.spill_limit
            ));
        }
        let summary = sink.finish().await;
        if matches!(spec.sandbox, Sandbox::Restricted { .. })
            && status.code() == Some(i32::from(SETUP_FAILURE_CODE))
            && let Some(message) =
                String::from_utf8_lossy(&summary.head).strip_prefix(SETUP_FAILURE_PREFIX)
        {
            let reason = message.lines().next().unwrap_or_default();
            return Err(ExecError::SandboxUnavailable(format!(
                "This command was not run: the sandbox could not be enforced ({reason}). Switch \
                 the session to `full` mode to run commands without a sandbox."
            )));
        }
        let exit = match stop {
            Some(Stop::Cancelled) => Exit::Cancelled,
            Some(Stop::TimedOut) => Exit::TimedOut,
            Some(Stop::OutputLimit) | None => exit_of(status),
        };
        Ok(CommandOutput {
            exit,
            excerpt: summary.excerpt,
            truncated: summary.truncated,
            total_bytes: summary.total_bytes,
            total_lines: summary.total_lines,
            spill_path: spec.spill_path,
            duration: started.elapsed(),
        })
    }
}

impl CommandRunner for ExecRunner {
    /// Runs `spec`. A `Sandbox::Restricted` that this kernel cannot enforce is
    /// `ExecError::SandboxUnavailable` and nothing runs: the caller decides by mode (`ask`: warn
    /// once and run again with `Sandbox::None`; `auto`: refuse with the message).
    fn run<'a>(
        &'a self,
        spec: CommandSpec,
        cancel: CancellationToken,
        on_output: &'a (dyn Fn(&str) + Send + Sync),
    ) -> BoxFuture<'a, Result<CommandOutput, ExecError>> {
        Box::pin(self.run_spec(spec, cancel, on_output))
    }

    fn sandbox_support(&self) -> SandboxSupport {
        ExecRunner::sandbox_support(self)
    }
}

/// Why we stopped the command ourselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Cancelled,
    TimedOut,
    OutputLimit,
}

fn exit_of(status: ExitStatus) -> Exit {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Exit::Code(code),
        (None, Some(signal)) => Exit::Signal(signal),
        // Neither code nor signal: a stopped/continued status, which `wait` does not return.
        (None, None) => Exit::Code(-1),
    }
}

/// Sleeps until `at`, or forever when there is no such instant (its `select!` branch is disabled
/// then anyway).
async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

struct Pipes {
    stdout: Pipe<ChildStdout>,
    stderr: Pipe<ChildStderr>,
}

impl Pipes {
    fn new(stdout: ChildStdout, stderr: ChildStderr) -> Self {
        Pipes {
            stdout: Pipe::new(stdout),
            stderr: Pipe::new(stderr),
        }
    }

    fn closed(&self) -> bool {
        !self.stdout.open && !self.stderr.open
    }
}

/// One output pipe with its own buffer, so both can be read in the same `select!`.
struct Pipe<R> {
    reader: R,
    buffer: Vec<u8>,
    filled: usize,
    open: bool,
}

impl<R: tokio::io::AsyncRead + Unpin> Pipe<R> {
    fn new(reader: R) -> Self {
        Pipe {
            reader,
            buffer: vec![0; READ_BUFFER],
            filled: 0,
            open: true,
        }
    }

    /// Reads the next chunk (empty at end of file or on a read error, which both end the pipe).
    /// Cancel-safe: a read that lost the `select!` race consumed nothing.
    async fn read(&mut self) -> &[u8] {
        self.filled = match self.reader.read(&mut self.buffer).await {
            Ok(n) => n,
            Err(err) => {
                tracing::debug!(%err, "reading command output failed");
                0
            }
        };
        if self.filled == 0 {
            self.open = false;
        }
        &self.buffer[..self.filled]
    }
}
