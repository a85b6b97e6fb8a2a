//! The platform layer: the two things about running a command that differ between operating
//! systems, chosen at run time so that every Unix variant can be exercised on Linux too.
//!
//! | platform | process tree                     | sandbox                          |
//! |----------|----------------------------------|----------------------------------|
//! | Linux    | supervisor as child subreaper    | Landlock + seccomp               |
//! | macOS    | supervisor + own process group   | Seatbelt (`sandbox-exec`)        |
//! | other Unix | supervisor + own process group | none                             |
//! | Windows  | job object, no supervisor        | none                             |
//!
//! [`Platform::native`] is what `ferrite` uses; tests pick the others with
//! [`ExecRunner::with_platform`](crate::ExecRunner::with_platform).

/// How a command's whole process tree is found and killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessTree {
    /// The supervisor is a child subreaper (Linux only): whatever the command starts, `setsid`
    /// and double forks included, stays below it and is killed with it.
    #[cfg(target_os = "linux")]
    Subreaper,
    /// The command gets a process group of its own, which the supervisor signals, and the
    /// supervisor watches for the agent's death itself (no `PR_SET_PDEATHSIG`). Plain POSIX, for
    /// macOS and the BSDs. A process that leaves the group (`setsid`) escapes the kill.
    #[cfg(unix)]
    ProcessGroup,
    /// Windows: the command is put in a job object that is terminated as a whole (there are no
    /// signals, so no grace period either) and closes with the agent.
    #[cfg(windows)]
    JobObject,
}

/// What confines a [`Sandbox::Restricted`](ferrite_core::exec::Sandbox::Restricted) command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxBackend {
    /// Landlock for files, seccomp for the network (Linux).
    Landlock,
    /// A generated Seatbelt profile applied by `/usr/bin/sandbox-exec` (macOS).
    Seatbelt,
    /// Nothing can confine commands here: restricted commands are refused (`ask` then runs them
    /// unsandboxed, each one approved; `auto` and `plan` refuse them, see core's `turn/sandbox.rs`).
    Unsupported,
}

/// The process tree and sandbox implementations commands run with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Platform {
    pub tree: ProcessTree,
    pub sandbox: SandboxBackend,
}

impl Platform {
    /// This operating system's own implementations.
    pub fn native() -> Self {
        #[cfg(target_os = "linux")]
        let platform = Platform {
            tree: ProcessTree::Subreaper,
            sandbox: SandboxBackend::Landlock,
        };
        #[cfg(target_os = "macos")]
        let platform = Platform {
            tree: ProcessTree::ProcessGroup,
            sandbox: SandboxBackend::Seatbelt,
        };
        #[cfg(all(unix, not(any(target_os = "linux", target_os = "macos"))))]
        let platform = Platform {
            tree: ProcessTree::ProcessGroup,
            sandbox: SandboxBackend::Unsupported,
        };
        #[cfg(windows)]
        let platform = Platform {
            tree: ProcessTree::JobObject,
            sandbox: SandboxBackend::Unsupported,
        };
        platform
    }
}

#[cfg(unix)]
impl SandboxBackend {
    /// The helper's name for the backend (`--sandbox NAME`).
    pub(crate) fn arg(self) -> &'static str {
        match self {
            SandboxBackend::Landlock => "landlock",
            SandboxBackend::Seatbelt => "seatbelt",
            SandboxBackend::Unsupported => "none",
        }
    }

    pub(crate) fn from_arg(arg: &str) -> Option<Self> {
        [
            SandboxBackend::Landlock,
            SandboxBackend::Seatbelt,
            SandboxBackend::Unsupported,
        ]
        .into_iter()
        .find(|backend| backend.arg() == arg)
    }
}

#[cfg(unix)]
impl ProcessTree {
    /// The helper's name for the implementation (`--tree NAME`).
    pub(crate) fn arg(self) -> &'static str {
        match self {
            #[cfg(target_os = "linux")]
            ProcessTree::Subreaper => "subreaper",
            ProcessTree::ProcessGroup => "group",
        }
    }

    pub(crate) fn from_arg(arg: &str) -> Option<Self> {
        [
            #[cfg(target_os = "linux")]
            ProcessTree::Subreaper,
            ProcessTree::ProcessGroup,
        ]
        .into_iter()
        .find(|tree| tree.arg() == arg)
    }
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;

    #[test]
    fn helper_names_round_trip() {
        for backend in [
            SandboxBackend::Landlock,
            SandboxBackend::Seatbelt,
            SandboxBackend::Unsupported,
        ] {
            assert_eq!(SandboxBackend::from_arg(backend.arg()), Some(backend));
        }
        assert_eq!(
            ProcessTree::from_arg(ProcessTree::ProcessGroup.arg()),
            Some(ProcessTree::ProcessGroup)
        );
        assert_eq!(ProcessTree::from_arg("bogus"), None);
        assert_eq!(SandboxBackend::from_arg("bogus"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn linux_is_native_subreaper_and_landlock() {
        assert_eq!(
            Platform::native(),
            Platform {
                tree: ProcessTree::Subreaper,
                sandbox: SandboxBackend::Landlock
            }
        );
    }
}
