//! What this kernel can enforce, asked without restricting anything: the agent itself must stay
//! unconfined.

// Why unsafe: the two questions are raw syscalls with no safe wrapper — the landlock crate keeps
// its ABI query private, and neither rustix nor std exposes `seccomp(SECCOMP_GET_ACTION_AVAIL)`.
// Both only read kernel state; no memory is handed to the kernel except a `u32` on our stack.
#![allow(unsafe_code)]

use ferrite_core::exec::SandboxSupport;

/// Whether Landlock works here, and at which ABI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) enum LandlockAbi {
    Available(i32),
    /// Built into the kernel but not in the boot-time LSM list.
    NotEnabled,
    /// Not built into the kernel (too old, or configured out), or not Linux.
    NotImplemented,
}

pub(crate) fn probe() -> SandboxSupport {
    let landlock = landlock_abi();
    // seccompiler generates filters only for these architectures.
    let seccomp = seccomp_filters_available()
        && cfg!(any(
            target_arch = "x86_64",
            target_arch = "aarch64",
            target_arch = "riscv64"
        ));
    let fs_part = match landlock {
        LandlockAbi::Available(abi) => format!(
            "Landlock ABI {abi}: command writes are confined to the workspace and temp \
             directories, FERRITE_HOME and `sandbox.deny_read` are out of reach"
        ),
        LandlockAbi::NotEnabled => "Landlock is built into this kernel but not enabled at boot \
             (add `landlock` to the `lsm=` kernel parameter): commands cannot be confined to the \
             workspace"
            .to_owned(),
        LandlockAbi::NotImplemented => "Landlock is not available on this kernel (it needs \
             Linux 5.13 or newer): commands cannot be confined to the workspace"
            .to_owned(),
    };
    let net_part = if seccomp {
        "seccomp: network can be turned off for commands"
    } else {
        "seccomp filters are not available: network cannot be turned off for commands"
    };
    SandboxSupport {
        filesystem: matches!(landlock, LandlockAbi::Available(_)),
        network: seccomp,
        summary: format!("{fs_part}; {net_part}."),
    }
}

/// What this machine enforces for UNIX sockets (`ferrite doctor`'s "unix sockets:" line).
pub(crate) fn unix_sockets() -> String {
    let abi = match landlock_abi() {
        LandlockAbi::Available(abi) => abi,
        LandlockAbi::NotEnabled | LandlockAbi::NotImplemented => {
            return "not confined: without Landlock there is no sandbox (`ask` runs commands \
                    unsandboxed)"
                .to_owned();
        }
    };
    if !seccomp_action_available(SECCOMP_RET_USER_NOTIF) {
        return "this kernel has no seccomp user notification (Linux 5.0+): sandboxed commands \
                cannot be checked and are not run"
            .to_owned();
    }
    let scope = if abi >= 6 {
        format!("also scoped by Landlock ABI {abi}")
    } else {
        format!("Landlock ABI {abi} < 6 cannot scope them too")
    };
    format!(
        "sandboxed commands connect (network on or off) only to the sockets listed in \
         `sandbox.allow_unix_sockets` and to those they created under their writable roots \
         (checked by the supervisor); abstract sockets are refused ({scope}); `full` mode \
         reaches every socket"
    )
}

/// `SECCOMP_RET_USER_NOTIF` (include/uapi/linux/seccomp.h).
const SECCOMP_RET_USER_NOTIF: u32 = 0x7fc0_0000;

/// What the sandbox does not guarantee on this machine (docs/sandbox.md has the full list): the
/// limits that always hold, and those that come from this kernel or from running as root.
pub(crate) fn residual_risks() -> Vec<String> {
    let mut risks = Vec::new();
    let abi = match landlock_abi() {
        LandlockAbi::Available(abi) => abi,
        LandlockAbi::NotEnabled | LandlockAbi::NotImplemented => {
            risks.push(
                "no Landlock: `ask` mode runs commands with no sandbox at all (each one approved)"
                    .to_owned(),
            );
            return risks;
        }
    };
    if abi < 6 {
        risks.push(format!(
            "Landlock ABI {abi} < 6: a sandboxed command can signal processes outside its \
             sandbox (including the supervisor that kills its process tree); abstract UNIX \
             sockets are refused by the supervisor only"
        ));
    }
    if abi < 5 {
        risks.push(format!(
            "Landlock ABI {abi} < 5: ioctl on devices is not restricted"
        ));
    }
    if abi < 4 {
        risks.push(format!(
            "Landlock ABI {abi} < 4: with the network off only seccomp blocks TCP"
        ));
    }
    if abi < 3 {
        risks.push(format!(
            "Landlock ABI {abi} < 3: truncating files outside the workspace is not prevented"
        ));
    }
    if rustix::process::geteuid().is_root() {
        risks.push(
            "running as root: in `ask`/`auto` a command can change the mode, owner, times and \
             extended attributes of any file (Landlock does not cover metadata; `plan` blocks \
             them), and read other root processes' /proc/<pid>/environ (the agent wipes its \
             keys from its own)"
                .to_owned(),
        );
    } else {
        risks.push(
            "in `ask`/`auto` a command can change the mode, times and extended attributes of \
             your files outside the workspace (Landlock does not cover metadata; `plan` blocks \
             them)"
                .to_owned(),
        );
    }
    risks.push(
        "commands can read every file you can, except FERRITE_HOME and `sandbox.deny_read`, and \
         list names everywhere; with the network on (`ask`, or `sandbox.network = true`) they \
         can send what they read anywhere"
            .to_owned(),
    );
    risks.push(
        "UNIX sockets under the writable roots created after a command started (by it, or by \
         another process meanwhile) are reachable to it; a non-dumpable command (ssh-agent) \
         cannot connect at all"
            .to_owned(),
    );
    risks.push(
        "`full` mode has no sandbox: a command there can also kill its supervisor and leave \
         processes behind"
            .to_owned(),
    );
    risks
}

#[cfg(target_os = "linux")]
pub(crate) fn landlock_abi() -> LandlockAbi {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag the kernel only returns
    // the ABI version (or an error); it reads and writes no memory and creates no descriptor.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if version >= 1 {
        return LandlockAbi::Available(i32::try_from(version).unwrap_or(i32::MAX));
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::EOPNOTSUPP) => LandlockAbi::NotEnabled,
        _ => LandlockAbi::NotImplemented,
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn landlock_abi() -> LandlockAbi {
    LandlockAbi::NotImplemented
}

#[cfg(target_os = "linux")]
fn seccomp_filters_available() -> bool {
    // The filter returns EPERM for denied calls: ask whether that action is supported, which also
    // tells whether seccomp filters exist at all (ENOSYS/EINVAL otherwise).
    seccomp_action_available(libc::SECCOMP_RET_ERRNO)
}

#[cfg(target_os = "linux")]
fn seccomp_action_available(action: u32) -> bool {
    // SAFETY: the kernel reads one u32 through the pointer, which lives across the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_GET_ACTION_AVAIL,
            0u32,
            &action as *const u32,
        )
    };
    rc == 0
}

#[cfg(not(target_os = "linux"))]
fn seccomp_filters_available() -> bool {
    false
}

#[cfg(not(target_os = "linux"))]
fn seccomp_action_available(_action: u32) -> bool {
    false
}
