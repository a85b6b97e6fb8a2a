//! The Linux sandbox: Landlock confines reads and writes, seccomp turns the network off and
//! closes what Landlock does not cover. Applied by the helper's second stage to itself right before
//! it `exec`s the command (see `helper.rs`), never in the agent. [`probe`] says, without
//! restricting anything, what this kernel can enforce.

#[cfg(target_os = "linux")]
mod carve;
#[cfg(target_os = "linux")]
mod landlock;
mod probe;
#[cfg(target_os = "linux")]
mod seccomp;

use std::path::PathBuf;

pub(crate) use probe::{probe, residual_risks};

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
    /// None at all means read-only everywhere (`plan` mode), metadata included.
    pub(crate) writable: Vec<PathBuf>,
    /// Neither readable nor writable, whatever `writable` says (FERRITE_HOME, `deny_read`).
    pub(crate) hidden: Vec<PathBuf>,
    pub(crate) network: Network,
}

impl Policy {
    /// `plan` mode: nothing may change, not even `/dev/shm` or a file's mode.
    pub(crate) fn read_only(&self) -> bool {
        self.writable.is_empty()
    }
}

/// Restricts the calling process, for good, to `policy`. Only for a single-threaded process that
/// is about to `exec` (the helper's second stage): Landlock and seccomp apply to the calling
/// thread and are inherited across `exec` and `fork`.
#[cfg(target_os = "linux")]
pub(crate) fn apply(policy: &Policy) -> Result<(), String> {
    // Before anything else: seccomp without CAP_SYS_ADMIN requires it, and it keeps setuid
    // binaries from gaining privileges (and so from shedding the sandbox) inside the command.
    rustix::thread::set_no_new_privs(true)
        .map_err(|err| format!("prctl(PR_SET_NO_NEW_PRIVS) failed: {err}"))?;
    drop_ptrace_capability()?;
    landlock::restrict(policy)?;
    seccomp::install(policy)
}

/// Root bypasses the "not dumpable" protection of the agent's memory and environment
/// (`/proc/<agent>/environ`, `mem`) through `CAP_SYS_PTRACE`: a sandboxed command never has it,
/// not even after `exec` of a root binary (bounding set).
#[cfg(target_os = "linux")]
fn drop_ptrace_capability() -> Result<(), String> {
    use rustix::thread::CapabilitySet;
    let mut sets =
        rustix::thread::capabilities(None).map_err(|err| format!("capget failed: {err}"))?;
    if sets.permitted.contains(CapabilitySet::SYS_PTRACE) {
        rustix::thread::remove_capability_from_bounding_set(CapabilitySet::SYS_PTRACE)
            .map_err(|err| format!("cannot drop CAP_SYS_PTRACE: {err}"))?;
    }
    sets.effective.remove(CapabilitySet::SYS_PTRACE);
    sets.permitted.remove(CapabilitySet::SYS_PTRACE);
    sets.inheritable.remove(CapabilitySet::SYS_PTRACE);
    rustix::thread::set_capabilities(None, sets).map_err(|err| format!("capset failed: {err}"))?;
    let _ = rustix::thread::clear_ambient_capability_set();
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn apply(_policy: &Policy) -> Result<(), String> {
    Err("the command sandbox is only implemented on Linux".to_owned())
}
