//! [`ExecRunner`]: runs one command under its supervisor, streams and spills its output, and
//! makes sure nothing of it outlives the call.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use ferrite_core::exec::{
    CommandOutput, CommandRunner, CommandSpec, ExecError, Exit, Sandbox, SandboxSupport, Shell,
    is_secret_env,
};
use futures::future::BoxFuture;
use tokio::io::AsyncReadExt;
use tokio::process::{ChildStderr, ChildStdout, Command};
use tokio_util::sync::CancellationToken;

use crate::platform::Platform;
use crate::sandbox::{self, Network};
use crate::setup_failure::{SETUP_FAILURE_CODE, SETUP_FAILURE_PREFIX};
use crate::shell::CommandShell;
use crate::spill::{OutputSink, Pushed, Stream};
use crate::tree::{KILL_GRACE, Tree};

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
///     sandbox: Sandbox::Restricted {
///         writable: vec!["/work/project".into()],
///         hidden: vec!["/home/me/.ferrite".into()],
///         protected: vec!["/work/project/.claude".into()],
///         network: false,
///         unix_sockets: vec![],
///     },
///     spill_dir: "/home/me/.ferrite/sessions/s1/tool-output".into(),
///     env_remove: vec!["MY_PROVIDER_KEY".into()],
///     max_bytes: 16 * 1024,
///     max_lines: 400,
///     stdin: None,
///     separate_stderr: false,
///     spill_budget: None,
/// };
/// let cancel = tokio_util::sync::CancellationToken::new();
/// let output = runner.run(spec, cancel, &|chunk| { let _ = chunk; }).await?;
/// # let _ = output; Ok(()) }
/// ```
pub struct ExecRunner {
    #[cfg_attr(windows, allow(dead_code))]
    helper_exe: PathBuf,
    platform: Platform,
    spill_limit: u64,
    support: OnceLock<SandboxSupport>,
    shell: OnceLock<CommandShell>,
}

/// How long the supervisor gets, past the 2 s between TERM and KILL it enforces itself, before we
/// stop waiting for it and kill it.
const SUPERVISOR_SLACK: Duration = Duration::from_secs(3);

/// How long to keep reading after the supervisor exited. It exits only once the whole tree is
/// gone, so the pipes are closed by then; this only guards against a pipe handed to a process
/// outside the tree (which cannot happen short of a bug) — then we stop reading rather than hang.
const DRAIN_GRACE: Duration = Duration::from_millis(250);

/// Default cap on what one command may write to its spill file before it is killed.
const DEFAULT_SPILL_LIMIT: u64 = 2 * 1024 * 1024 * 1024;

const READ_BUFFER: usize = 64 * 1024;

impl ExecRunner {
    /// `helper_exe` understands the hidden sandbox-helper argv: in production the `ferrite`
    /// binary itself (`std::env::current_exe()`), whose `main` dispatches to
    /// [`crate::sandbox_helper_main`].
    ///
    /// Also makes the calling process (the agent) not dumpable: a command running as the same
    /// user can then neither read its memory nor its environment through `/proc` (sandboxed
    /// commands never have `CAP_SYS_PTRACE`, root included), and it leaves no core dumps.
    pub fn new(helper_exe: PathBuf) -> Self {
        #[cfg(target_os = "linux")]
        if let Err(err) =
            rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
        {
            tracing::warn!(%err, "could not make the agent non-dumpable");
        }
        ExecRunner {
            helper_exe,
            platform: Platform::native(),
            spill_limit: DEFAULT_SPILL_LIMIT,
            support: OnceLock::new(),
            shell: OnceLock::new(),
        }
    }

    /// Caps the bytes one command may write to its spill file (default 2 GiB); past it the
    /// command is killed and its output says so.
    pub fn with_spill_limit(mut self, bytes: u64) -> Self {
        self.spill_limit = bytes;
        self
    }

    /// Runs commands with `platform`'s process tree and sandbox instead of this system's own
    /// ([`Platform::native`]): how the macOS implementations are tested on Linux.
    pub fn with_platform(mut self, platform: Platform) -> Self {
        self.platform = platform;
        self.support = OnceLock::new();
        self
    }

    /// The process tree and sandbox implementations in use.
    pub fn platform(&self) -> Platform {
        self.platform
    }

    /// What this machine can enforce, probed once per runner.
    pub fn sandbox_support(&self) -> SandboxSupport {
        self.support
            .get_or_init(|| sandbox::support(self.platform.sandbox))
            .clone()
    }

    /// What the sandbox does not guarantee on this machine, one sentence each (for `ferrite
    /// doctor`; `docs/sandbox.md` and `docs/platforms.md` explain them).
    pub fn residual_risks(&self) -> Vec<String> {
        sandbox::residual_risks(self.platform.sandbox)
    }

    /// What the sandbox enforces for UNIX sockets on this machine, one sentence (`ferrite
    /// doctor`; `docs/sandbox.md`, "UNIX sockets").
    pub fn unix_socket_confinement(&self) -> String {
        sandbox::unix_sockets(self.platform.sandbox)
    }

    /// The shell every command runs with (bash, found on `PATH` the first time it is asked
    /// for; `sh` where there is no bash), for `ferrite doctor`.
    pub fn command_shell(&self) -> &CommandShell {
        self.shell
            .get_or_init(|| CommandShell::find(std::env::var_os("PATH").as_deref()))
    }

    /// The command line for `spec`: `bash -c` under the supervisor, sandboxed when restricted.
    fn command(&self, spec: &CommandSpec) -> Result<Command, ExecError> {
        let shell = [
            self.command_shell().path.as_os_str(),
            OsStr::new("-c"),
            OsStr::new(&spec.command),
        ];
        let mut command = self.launcher(&spec.sandbox, &shell)?;
        confine_environment(&mut command, &spec.env_remove);
        command.current_dir(&spec.cwd);
        command
            .stdin(if spec.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Never: SIGKILL would leave the tree without its supervisor. A dropped run TERMs
            // the supervisor instead (see `Tree`), and tokio reaps it in the background.
            .kill_on_drop(false);
        Ok(command)
    }

    /// The supervisor (`ferrite __sandbox …`) that runs `shell` confined as `sandbox` says.
    #[cfg(unix)]
    pub(crate) fn launcher(
        &self,
        sandbox: &Sandbox,
        shell: &[&OsStr],
    ) -> Result<Command, ExecError> {
        use crate::helper::{Confinement, helper_args};
        use crate::sandbox::Policy;
        let confinement = match sandbox {
            Sandbox::None => Confinement::Unrestricted,
            Sandbox::Restricted {
                writable,
                hidden,
                protected,
                network,
                unix_sockets,
            } => {
                let network = if *network { Network::On } else { Network::Off };
                self.check_enforceable(network)?;
                let policy = Policy {
                    writable: writable.clone(),
                    hidden: hidden.clone(),
                    protected: protected.clone(),
                    network,
                    unix_sockets: unix_sockets.clone(),
                };
                Confinement::Sandboxed(policy, self.platform.sandbox)
            }
        };
        let mut command = Command::new(&self.helper_exe);
        command.args(helper_args(
            std::process::id(),
            self.platform.tree,
            &confinement,
            shell,
        ));
        Ok(command)
    }

    /// Windows: the shell itself, put in a job object once started (`tree/job.rs`). There is no
    /// sandbox, so a restricted command is refused with the reason (core decides what then).
    #[cfg(windows)]
    pub(crate) fn launcher(
        &self,
        sandbox: &Sandbox,
        shell: &[&OsStr],
    ) -> Result<Command, ExecError> {
        if let Sandbox::Restricted { network, .. } = sandbox {
            let network = if *network { Network::On } else { Network::Off };
            self.check_enforceable(network)?;
            return Err(ExecError::SandboxUnavailable(
                "This command was not run: there is no command sandbox on Windows.".to_owned(),
            ));
        }
        let (program, args) = shell
            .split_first()
            .ok_or_else(|| ExecError::Spawn("no shell".to_owned()))?;
        let mut command = Command::new(program);
        // No console window flashing up for every command the agent runs.
        const CREATE_NO_WINDOW: u32 = 0x0800_0000;
        command.args(args).creation_flags(CREATE_NO_WINDOW);
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
        let mut sink = self.open_sink(&spec, on_output).await?;
        let mut child = command.spawn().map_err(|err| {
            ExecError::Spawn(format!(
                "{} in {}: {err}",
                self.helper_exe.display(),
                spec.cwd.display()
            ))
        })?;
        // On an early drop the supervisor is told to stop the whole tree.
        let mut tree = Tree::new(&child);
        if let (Some(bytes), Some(mut pipe)) = (spec.stdin.clone(), child.stdin.take()) {
            // Written beside the output loop, so a command that prints before it reads cannot
            // deadlock against us; one that never reads (or exits first) just closes the pipe.
            tokio::spawn(async move {
                use tokio::io::AsyncWriteExt;
                let _ = pipe.write_all(&bytes).await;
            });
        }
        let missing = || ExecError::Spawn("the command's output pipes are missing".to_owned());
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(missing());
        };
        let mut guard = DrainOnDrop(Some(Pipes::new(stdout, stderr)));
        let Some(pipes) = guard.0.as_mut() else {
            return Err(missing());
        };
        let mut watch = Watch {
            child: &mut child,
            tree: &mut tree,
            pipes,
            sink: &mut sink,
        };
        let (stop, status) = watch.until_done(&spec, &cancel).await;
        tree.disarm();

        let status = status
            .unwrap_or_else(|| Err(std::io::Error::other("no exit status")))
            .map_err(|err| ExecError::Io(format!("waiting for the command failed: {err}")))?;
        if stop == Some(Stop::OutputLimit) {
            sink.note(output_limit_note(sink.budget_spent(), self.spill_limit));
        }
        let summary = sink.finish().await;
        if matches!(spec.sandbox, Sandbox::Restricted { .. }) {
            sandbox_setup_failure(status, &summary.head)?;
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
            spill_path: summary.path,
            duration: started.elapsed(),
            stderr: summary.stderr,
        })
    }

    /// Where the command's output goes: streamed to `on_output`, kept within the spec's limits,
    /// spilled to a file in its `spill_dir`.
    async fn open_sink<'a>(
        &self,
        spec: &CommandSpec,
        on_output: &'a (dyn Fn(&str) + Send + Sync),
    ) -> Result<OutputSink<'a>, ExecError> {
        let sink = OutputSink::create(
            &spec.spill_dir,
            self.spill_limit,
            spec.max_bytes,
            spec.max_lines,
            on_output,
        )
        .await
        .map_err(|err| {
            ExecError::Io(format!(
                "could not create an output file in {}: {err}",
                spec.spill_dir.display()
            ))
        })?;
        Ok(sink
            .with_separate_stderr(spec.separate_stderr)
            .with_budget(spec.spill_budget.clone()))
    }
}

/// A sandboxed command whose helper exited with the setup-failure code and message never ran:
/// the sandbox could not be put in place.
fn sandbox_setup_failure(status: ExitStatus, head: &[u8]) -> Result<(), ExecError> {
    if status.code() == Some(i32::from(SETUP_FAILURE_CODE))
        && let Some(message) = String::from_utf8_lossy(head).strip_prefix(SETUP_FAILURE_PREFIX)
    {
        let reason = message.lines().next().unwrap_or_default();
        return Err(ExecError::SandboxUnavailable(format!(
            "This command was not run: the sandbox could not be enforced ({reason}). Switch \
             the session to `full` mode to run commands without a sandbox."
        )));
    }
    Ok(())
}

/// One running command: its supervisor, its process tree, its output pipes and where the
/// output goes.
struct Watch<'w, 'a> {
    child: &'w mut tokio::process::Child,
    tree: &'w mut Tree,
    pipes: &'w mut Pipes,
    sink: &'w mut OutputSink<'a>,
}

impl Watch<'_, '_> {
    /// Reads the output until the supervisor has exited and both pipes are closed, stopping the
    /// tree on cancel, timeout or too much output (and killing the supervisor if it does not
    /// stop in time). Returns why we stopped it, if we did, and its exit status.
    async fn until_done(
        &mut self,
        spec: &CommandSpec,
        cancel: &CancellationToken,
    ) -> (Option<Stop>, Option<std::io::Result<ExitStatus>>) {
        let timeout = tokio::time::sleep(spec.timeout);
        tokio::pin!(timeout);
        let mut stop: Option<Stop> = None;
        let mut status: Option<std::io::Result<ExitStatus>> = None;
        let mut kill_at: Option<tokio::time::Instant> = None;
        let mut drain_until: Option<tokio::time::Instant> = None;
        let grace = || Some(tokio::time::Instant::now() + KILL_GRACE + SUPERVISOR_SLACK);

        while status.is_none() || !self.pipes.closed() {
            tokio::select! {
                // Cancel first: it must win over a busy output stream.
                biased;
                () = cancel.cancelled(), if stop.is_none() && status.is_none() => {
                    stop = Some(Stop::Cancelled);
                    self.tree.terminate();
                    kill_at = grace();
                }
                () = &mut timeout, if stop.is_none() && status.is_none() => {
                    stop = Some(Stop::TimedOut);
                    self.tree.terminate();
                    kill_at = grace();
                }
                () = sleep_until(kill_at), if kill_at.is_some() && status.is_none() => {
                    tracing::warn!(command = %spec.command, "the command's supervisor did not stop in time; killing it");
                    self.tree.kill_supervisor();
                    kill_at = None;
                }
                exited = self.child.wait(), if status.is_none() => {
                    // The supervisor exits last: the whole tree is gone.
                    status = Some(exited);
                    self.tree.disarm();
                    drain_until = Some(tokio::time::Instant::now() + DRAIN_GRACE);
                }
                () = sleep_until(drain_until), if drain_until.is_some() => {
                    tracing::debug!(
                        command = %spec.command,
                        "output pipes still open after the command's supervisor exited; not waiting"
                    );
                    break;
                }
                chunk = self.pipes.stdout.read(), if self.pipes.stdout.open => {
                    if self.sink.push(Stream::Stdout, chunk).await == Pushed::SpillLimitReached
                        && stop.is_none()
                    {
                        stop = Some(Stop::OutputLimit);
                        self.tree.kill_now();
                    }
                }
                chunk = self.pipes.stderr.read(), if self.pipes.stderr.open => {
                    if self.sink.push(Stream::Stderr, chunk).await == Pushed::SpillLimitReached
                        && stop.is_none()
                    {
                        stop = Some(Stop::OutputLimit);
                        self.tree.kill_now();
                    }
                }
            }
        }
        (stop, status)
    }
}

/// The environment every process the runner starts gets: the agent's, less the keys Ferrite
/// knows (`is_secret_env`, `env_remove`) and the shell's startup variables, with `PATH` cleaned
/// of entries that would make a lookup depend on the current directory.
pub(crate) fn confine_environment(command: &mut Command, env_remove: &[String]) {
    command
        .env_clear()
        .envs(std::env::vars_os().filter(|(name, _)| {
            let name = name.to_string_lossy();
            !is_secret_env(&name)
                && !CommandShell::is_startup_variable(&name)
                && !env_remove.iter().any(|r| *r == name)
                && name != "PATH"
        }));
    if let Some(path) = std::env::var_os("PATH")
        .as_deref()
        .and_then(CommandShell::command_search_path)
    {
        command.env("PATH", path);
    }
}

/// Why a command was killed for its output: the session's budget (`budget`, when that was it) or
/// the command's own cap.
fn output_limit_note(budget: Option<u64>, limit: u64) -> String {
    match budget {
        Some(budget) => format!(
            "[ferrite: this session's commands wrote more than {budget} bytes of output \
             (`tools.spill_max_bytes`) even after removing the output of ended commands; the \
             command was killed]"
        ),
        None => {
            format!("[ferrite: the command wrote more than {limit} bytes of output and was killed]")
        }
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

    fn shell(&self) -> Shell {
        self.command_shell().kind
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
    #[cfg(unix)]
    let signal = std::os::unix::process::ExitStatusExt::signal(&status);
    // Windows has no signals: a killed process has an exit code.
    #[cfg(not(unix))]
    let signal: Option<i32> = None;
    match (status.code(), signal) {
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

/// Keeps reading (and discarding) the output of a run that was dropped before its command ended
/// (turn cancelled, session closed) until the supervisor has finished the tree, so that a
/// command printing something while it handles SIGTERM is not killed by SIGPIPE before its
/// cleanup ran.
struct DrainOnDrop(Option<Pipes>);

impl Drop for DrainOnDrop {
    fn drop(&mut self) {
        let Some(mut pipes) = self.0.take() else {
            return;
        };
        if pipes.closed() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let deadline = tokio::time::sleep(KILL_GRACE + SUPERVISOR_SLACK);
            tokio::pin!(deadline);
            while !pipes.closed() {
                tokio::select! {
                    () = &mut deadline => break,
                    _ = pipes.stdout.read(), if pipes.stdout.open => {}
                    _ = pipes.stderr.read(), if pipes.stderr.open => {}
                }
            }
        });
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
