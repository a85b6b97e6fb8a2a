//! What this kernel can enforce, asked without restricting anything: the agent itself must stay
//! unconfined.

// Why unsafe: the two questions are raw syscalls with no safe wrapper — the landlock crate keeps
// its ABI query private, and neither rustix nor std exposes `seccomp(SECCOMP_GET_ACTION_AVAIL)`.
// Both only read kernel state; no memory is handed to the kernel except a `u32` on our stack.
#![allow(unsafe_code)]

use ferrite_core::exec::SandboxSupport;

/// Whether Landlock works here, and at which ABI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
            "Landlock ABI {abi}: command writes are confined to the workspace, temp and spill \
             directories"
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
    let action: u32 = libc::SECCOMP_RET_ERRNO;
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
