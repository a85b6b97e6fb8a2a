//! The Linux sandbox: Landlock confines writes, seccomp turns the network off. Applied by the
//! helper process to itself right before it `exec`s the command (see `helper.rs`), never in the
//! agent. [`probe`] says, without restricting anything, what this kernel can enforce.

#[cfg(target_os = "linux")]
mod landlock;
mod probe;
#[cfg(target_os = "linux")]
mod seccomp;

use std::path::PathBuf;

pub(crate) use probe::probe;

/// Whether commands may reach the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Network {
    On,
    Off,
}

/// What the helper enforces before it runs the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Policy {
    /// Directories (or files) under which the command may write; everything else is read-only.
    pub(crate) writable: Vec<PathBuf>,
    pub(crate) network: Network,
}

/// Restricts the calling process, for good, to `policy`. Only for a single-threaded process that
/// is about to `exec` (the helper): Landlock and seccomp apply to the calling thread and are
/// inherited across `exec` and `fork`.
#[cfg(target_os = "linux")]
pub(crate) fn apply(policy: &Policy) -> Result<(), String> {
    // Before anything else: seccomp without CAP_SYS_ADMIN requires it, and it keeps setuid
    // binaries from gaining privileges (and so from shedding the sandbox) inside the command.
    rustix::thread::set_no_new_privs(true)
        .map_err(|err| format!("prctl(PR_SET_NO_NEW_PRIVS) failed: {err}"))?;
    landlock::restrict(&policy.writable, policy.network)?;
    match policy.network {
        Network::On => Ok(()),
        Network::Off => seccomp::deny_network(),
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn apply(_policy: &Policy) -> Result<(), String> {
    Err("the command sandbox is only implemented on Linux".to_owned())
}
