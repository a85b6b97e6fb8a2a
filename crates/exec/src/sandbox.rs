//! The command sandbox. On Linux Landlock confines reads and writes, seccomp turns the network off
//! and closes what Landlock does not cover: applied by the helper's second stage to itself right
//! before it `exec`s the command (see `helper.rs`), never in the agent. On macOS the second stage
//! `exec`s the command under `sandbox-exec` with a generated Seatbelt profile (`seatbelt.rs`).
//! [`support`] says, without restricting anything, what the chosen backend can enforce here.

#[cfg(target_os = "linux")]
mod carve;
#[cfg(target_os = "linux")]
mod connect_filter;
#[cfg(target_os = "linux")]
mod landlock;
#[cfg(unix)]
mod probe;
#[cfg(unix)]
pub(crate) mod seatbelt;
#[cfg(target_os = "linux")]
mod seccomp;

#[cfg(unix)]
use std::path::PathBuf;

use ferrite_core::exec::SandboxSupport;

use crate::platform::SandboxBackend;

/// Whether commands may reach the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Network {
    On,
    Off,
}

/// What the helper enforces before it runs the command.
#[cfg(unix)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Policy {
    /// Directories (or files) under which the command may write; everything else is read-only.
    /// None at all means read-only everywhere (`plan` mode), metadata included.
    pub(crate) writable: Vec<PathBuf>,
    /// Neither readable nor writable, whatever `writable` says (FERRITE_HOME, `deny_read`).
    pub(crate) hidden: Vec<PathBuf>,
    /// Readable but writable nowhere, whatever `writable` says: the files that define what runs
    /// (hook scripts, agents, skills, settings). One that does not exist yet cannot be created
    /// either (see `carve.rs`).
    pub(crate) protected: Vec<PathBuf>,
    pub(crate) network: Network,
    /// UNIX sockets outside the writable roots the command may connect to
    /// (`sandbox.allow_unix_sockets`); every other connect is checked by the supervisor.
    pub(crate) unix_sockets: Vec<PathBuf>,
}

#[cfg(unix)]
impl Policy {
    /// `plan` mode: nothing may change, not even `/dev/shm` or a file's mode.
    pub(crate) fn read_only(&self) -> bool {
        self.writable.is_empty()
    }
}

/// What `backend` can enforce on this machine, asked without restricting anything.
pub(crate) fn support(backend: SandboxBackend) -> SandboxSupport {
    match backend {
        #[cfg(unix)]
        SandboxBackend::Landlock => probe::probe(),
        #[cfg(unix)]
        SandboxBackend::Seatbelt => seatbelt_support(),
        #[cfg(not(unix))]
        SandboxBackend::Landlock | SandboxBackend::Seatbelt => unsupported(),
        SandboxBackend::Unsupported => unsupported(),
    }
}

/// What the sandbox does not guarantee on this machine, one sentence each (`ferrite doctor`).
pub(crate) fn residual_risks(backend: SandboxBackend) -> Vec<String> {
    match backend {
        #[cfg(unix)]
        SandboxBackend::Landlock => probe::residual_risks(),
        #[cfg(unix)]
        SandboxBackend::Seatbelt => vec![
            "commands can read every file you can, except FERRITE_HOME and \
             `sandbox.deny_read`; with the network on they can send what they read anywhere"
                .to_owned(),
            "with the network on, commands can connect to any UNIX socket (the Seatbelt \
             profile does not filter them yet): your ssh-agent, Docker, tmux"
                .to_owned(),
            "a command that starts a new session (`setsid`) leaves the process group Ferrite \
             kills: it can outlive a cancel or timeout"
                .to_owned(),
            "sandbox-exec is deprecated by Apple; should a macOS release drop it, commands are \
             refused in `auto`/`plan` and run unsandboxed in `ask`"
                .to_owned(),
            "`full` mode has no sandbox".to_owned(),
        ],
        #[cfg(not(unix))]
        SandboxBackend::Landlock | SandboxBackend::Seatbelt => unsupported_risks(),
        SandboxBackend::Unsupported => unsupported_risks(),
    }
}

/// What `backend` enforces for UNIX sockets here, in one sentence (`ferrite doctor`).
pub(crate) fn unix_sockets(backend: SandboxBackend) -> String {
    match backend {
        #[cfg(unix)]
        SandboxBackend::Landlock => probe::unix_sockets(),
        SandboxBackend::Seatbelt => "not filtered: with the network on, sandboxed commands can \
                                     connect to any UNIX socket (ssh-agent, Docker, tmux)"
            .to_owned(),
        #[cfg(not(unix))]
        SandboxBackend::Landlock => "not confined: there is no sandbox here".to_owned(),
        SandboxBackend::Unsupported => "not confined: there is no sandbox here".to_owned(),
    }
}

fn unsupported() -> SandboxSupport {
    SandboxSupport {
        filesystem: false,
        network: false,
        summary: format!(
            "Ferrite has no command sandbox on {} yet: commands cannot be confined to the \
             workspace and their network cannot be turned off.",
            os_name()
        ),
    }
}

fn unsupported_risks() -> Vec<String> {
    vec![format!(
        "no command sandbox on {}: `ask` mode asks before every command and runs it with your \
         full rights; `auto` and `plan` refuse commands",
        os_name()
    )]
}

fn os_name() -> &'static str {
    match std::env::consts::OS {
        "macos" => "macOS",
        "windows" => "Windows",
        "linux" => "Linux",
        other => other,
    }
}

#[cfg(unix)]
fn seatbelt_support() -> SandboxSupport {
    if std::path::Path::new(seatbelt::SANDBOX_EXEC).is_file() {
        SandboxSupport {
            filesystem: true,
            network: true,
            summary: "Seatbelt (sandbox-exec): command writes are confined to the workspace and \
                      temp directories, FERRITE_HOME and `sandbox.deny_read` are out of reach, and \
                      the network can be turned off."
                .to_owned(),
        }
    } else {
        SandboxSupport {
            filesystem: false,
            network: false,
            summary: format!(
                "{} is missing: commands cannot be confined to the workspace and their network \
                 cannot be turned off.",
                seatbelt::SANDBOX_EXEC
            ),
        }
    }
}

/// Restricts the calling process, for good, to `policy`. Only for a single-threaded process that
/// is about to `exec` (the helper's second stage): Landlock and seccomp apply to the calling
/// thread and are inherited across `exec` and `fork`. `broker` is the channel to the supervisor,
/// which is handed every `connect()` of the command (`connect_filter.rs`).
#[cfg(target_os = "linux")]
pub(crate) fn apply(policy: &Policy, broker: Option<i32>) -> Result<(), String> {
    // Before anything else: seccomp without CAP_SYS_ADMIN requires it, and it keeps setuid
    // binaries from gaining privileges (and so from shedding the sandbox) inside the command.
    rustix::thread::set_no_new_privs(true)
        .map_err(|err| format!("prctl(PR_SET_NO_NEW_PRIVS) failed: {err}"))?;
    drop_ptrace_capability()?;
    landlock::restrict(policy)?;
    seccomp::install(policy)?;
    // Without the broker a connect would go unchecked: refuse to run rather than run open.
    let broker = broker.ok_or("no channel to the supervisor's connect broker")?;
    connect_filter::install(broker)
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

#[cfg(all(unix, not(target_os = "linux")))]
pub(crate) fn apply(_policy: &Policy, _broker: Option<i32>) -> Result<(), String> {
    Err("Landlock and seccomp exist only on Linux".to_owned())
}
