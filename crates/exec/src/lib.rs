//! `ferrite-exec`: the [`CommandRunner`](ferrite_core::exec::CommandRunner) that runs the agent's
//! shell commands.
//!
//! Every command runs as `bash -c COMMAND` (the shell whose grammar the permission rules read;
//! `sh` where there is no bash, see `shell.rs`) with stdin on `/dev/null`, stdout/stderr piped (never
//! the agent's stdout: that is the JSON-RPC channel) and an environment without the keys Ferrite
//! knows. Output streams to the caller, goes whole to a spill file the agent creates itself, and
//! only a bounded excerpt stays in memory.
//!
//! Every command, sandboxed or not, runs under a supervisor: the `ferrite` binary itself,
//! re-executed with a hidden `__sandbox` argument (see `helper.rs` and `supervisor.rs`). It starts
//! a new session (no controlling terminal), keeps the command's whole process tree as its own
//! (child subreaper) and kills all of it on cancel, timeout, close and EOF (TERM, then KILL after
//! 2 s), when the command exits, and at once when the agent dies. For a
//! [`Sandbox::Restricted`](ferrite_core::exec::Sandbox::Restricted) command its child applies
//! Landlock and seccomp to itself and then `exec`s the command: the restrictions never touch the
//! multi-threaded agent. The binary must dispatch to [`sandbox_helper_main`] as its very first
//! action when [`is_sandbox_helper_invocation`] says so.
//!
//! When a restricted sandbox cannot be enforced on this kernel, [`ExecRunner`]'s `run` returns
//! [`ExecError::SandboxUnavailable`](ferrite_core::exec::ExecError::SandboxUnavailable) without
//! running anything; the caller (core, which knows the session mode) decides: `ask` warns once and
//! re-runs the command with `Sandbox::None`, `auto` reports the message, which says why and how to
//! choose `full`.

//!
//! What differs between operating systems (how the tree is contained, what sandboxes commands) is
//! chosen at run time through [`Platform`]; see `platform.rs` and `docs/platforms.md`. On Windows
//! there is no supervisor: the shell runs in a job object, and commands have no sandbox.

#[cfg(unix)]
mod environ;
#[cfg(unix)]
mod helper;
mod platform;
mod runner;
mod sandbox;
#[cfg(unix)]
mod service;
#[cfg_attr(windows, allow(dead_code))]
mod setup_failure;
mod shell;
mod spill;
#[cfg(unix)]
mod supervisor;
mod tree;

#[cfg(unix)]
pub use environ::wipe_keys_from_own_environment;
#[cfg(unix)]
pub use helper::{is_sandbox_helper_invocation, sandbox_helper_main};
pub use platform::{Platform, ProcessTree, SandboxBackend};
pub use runner::ExecRunner;
#[cfg(unix)]
pub use service::{Service, ServiceSpec};
pub use shell::CommandShell;

/// Windows: another process of the same user can read the agent's memory and environment
/// whatever it does with its own environment block (there is no `/proc/<pid>/environ` to wipe,
/// and no sandbox keeps commands out of the agent); nothing to do.
#[cfg(windows)]
pub fn wipe_keys_from_own_environment() {}

/// Windows has no sandbox helper (commands run in a job object, not under a re-executed
/// supervisor): no argv is one.
#[cfg(windows)]
pub fn is_sandbox_helper_invocation(_args: &[std::ffi::OsString]) -> bool {
    false
}

/// Never called on Windows ([`is_sandbox_helper_invocation`] is always false there); exits as
/// the helper does when it cannot set a command up.
#[cfg(windows)]
pub fn sandbox_helper_main(_args: &[std::ffi::OsString]) -> std::process::ExitCode {
    std::process::ExitCode::from(125)
}
