//! Long-running processes the agent talks to over their standard input and output (language
//! servers): started under the same supervisor as commands (`helper.rs`), confined by the same
//! sandbox, and never left behind. Dropping a [`Service`] asks its supervisor to stop the whole
//! tree (TERM, KILL 2 s later); the agent's death kills it at once (`PR_SET_PDEATHSIG`), as for
//! commands.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};

use ferrite_core::exec::{ExecError, Sandbox};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};

use crate::runner::{ExecRunner, confine_environment};
use crate::tree::Tree;

/// One process to start: a program (resolved already: no shell runs) and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub sandbox: Sandbox,
    /// Environment variables it must not inherit, on top of `is_secret_env`.
    pub env_remove: Vec<String>,
    /// Variables set for it (a cache directory inside its writable roots).
    pub env: Vec<(String, String)>,
}

/// A running service: its pipes, and the handle that stops it.
pub struct Service {
    child: Child,
    tree: Tree,
    pub stdin: Option<ChildStdin>,
    pub stdout: Option<ChildStdout>,
    pub stderr: Option<ChildStderr>,
}

impl ExecRunner {
    /// Starts `spec` under its supervisor with piped stdio. A restricted sandbox this machine
    /// cannot enforce is [`ExecError::SandboxUnavailable`] and nothing starts.
    pub fn spawn_service(&self, spec: &ServiceSpec) -> Result<Service, ExecError> {
        let mut argv: Vec<&OsStr> = vec![spec.program.as_os_str()];
        argv.extend(spec.args.iter().map(OsStr::new));
        let mut command = self.launcher(&spec.sandbox, &argv)?;
        confine_environment(&mut command, &spec.env_remove);
        command
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&spec.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Never: SIGKILL would leave the tree without its supervisor (see `runner.rs`).
            .kill_on_drop(false);
        let mut child = command
            .spawn()
            .map_err(|err| ExecError::Spawn(format!("{}: {err}", spec.program.display())))?;
        let tree = Tree::new(&child);
        Ok(Service {
            stdin: child.stdin.take(),
            stdout: child.stdout.take(),
            stderr: child.stderr.take(),
            child,
            tree,
        })
    }
}

impl Service {
    /// Waits until the service (its whole tree) has exited.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        let status = self.child.wait().await;
        if status.is_ok() {
            self.tree.disarm();
        }
        status
    }

    /// Whether it has exited already (never blocks).
    pub fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// TERM to every process of its tree, KILL 2 s later.
    pub fn terminate(&self) {
        self.tree.terminate();
    }

    /// Every process of its tree killed at once.
    pub fn kill_now(&self) {
        self.tree.kill_now();
    }

    /// The supervisor's process id (tests look for what is left of a tree).
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }
}
