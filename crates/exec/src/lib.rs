//! `ferrite-exec`: the [`CommandRunner`](ferrite_core::exec::CommandRunner) that runs the agent's
//! shell commands.
//!
//! Every command runs as `sh -c COMMAND` in its own process group with stdin on `/dev/null` and
//! stdout/stderr piped (never the agent's stdout: that is the JSON-RPC channel). Output streams to
//! the caller, goes whole to a spill file and only a bounded excerpt stays in memory. Cancel,
//! timeout and the end of the leader kill the whole group (TERM, then KILL after 2 s).
//!
//! On Linux a [`Sandbox::Restricted`](ferrite_core::exec::Sandbox::Restricted) command runs
//! through a helper process (the `ferrite` binary itself, re-executed with a hidden `__sandbox`
//! argument) that applies Landlock and seccomp to itself and then `exec`s the command: the
//! restrictions never touch the multi-threaded agent. The binary must dispatch to
//! [`sandbox_helper_main`] as its very first action when [`is_sandbox_helper_invocation`] says so.
//!
//! When a restricted sandbox cannot be enforced on this kernel, [`ExecRunner`]'s `run` returns
//! [`ExecError::SandboxUnavailable`](ferrite_core::exec::ExecError::SandboxUnavailable) without
//! running anything; the caller (core, which knows the session mode) decides: `ask` warns once and
//! re-runs the command with `Sandbox::None`, `auto` reports the message, which says why and how to
//! choose `full`.

mod group;
mod helper;
mod runner;
mod sandbox;
mod spill;

pub use helper::{is_sandbox_helper_invocation, sandbox_helper_main};
pub use runner::ExecRunner;
