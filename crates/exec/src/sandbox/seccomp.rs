//! seccomp: what Landlock does not cover.
//! - Always: `ioctl(TIOCSTI)` and `ioctl(TIOCLINUX)`, which push keystrokes into a terminal (the
//!   user's shell would run them, unsandboxed).
//! - Always: UNIX datagram sockets (`sendto` reaches any named socket without `connect`, and
//!   seccomp cannot read the address) and io_uring (it connects without the `connect` syscall).
//!   `connect` itself goes to the supervisor (`connect_filter.rs`), which checks UNIX addresses.
//! - Network off: every way to reach a network peer fails with EPERM — the set codex's Linux
//!   sandbox denies, minus the calls that are harmless once no network socket can exist
//!   (send/recv on connected UNIX sockets, get/setsockopt), which everyday tools use to talk to
//!   their own children over `socketpair`.
//! - Read-only (`plan`): changing a file's mode, owner, times or extended attributes, which
//!   Landlock does not control at all.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::{Network, Policy};

pub(super) fn install(policy: &Policy) -> Result<(), String> {
    let program = filter(policy.network, policy.read_only())
        .map_err(|err| format!("could not build the seccomp filter: {err}"))?;
    seccompiler::apply_filter(&program)
        .map_err(|err| format!("could not install the seccomp filter: {err}"))
}

type Rules = BTreeMap<i64, Vec<SeccompRule>>;

fn filter(network: Network, read_only: bool) -> Result<BpfProgram, seccompiler::Error> {
    let mut rules: Rules = BTreeMap::new();
    deny_terminal_injection(&mut rules)?;
    deny_unix_escapes(&mut rules)?;
    if network == Network::Off {
        deny_network(&mut rules)?;
    }
    if read_only {
        for syscall in metadata_syscalls() {
            rules.insert(syscall, vec![]);
        }
    }
    add_x32_denials(&mut rules, network, read_only);

    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    // Everything else is allowed; syscalls of another architecture (i386's socketcall through
    // `int 0x80`) kill the process: seccompiler checks the audit arch first.
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?;
    Ok(filter.try_into()?)
}

fn deny_terminal_injection(rules: &mut Rules) -> Result<(), seccompiler::Error> {
    // The request number is an `unsigned int`: compare the low 32 bits only.
    let request = |value: u64| -> Result<SeccompRule, seccompiler::Error> {
        SeccompRule::new(vec![SeccompCondition::new(
            1,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            value,
        )?])
        .map_err(Into::into)
    };
    rules.insert(
        libc::SYS_ioctl,
        vec![request(TIOCSTI)?, request(TIOCLINUX)?],
    );
    Ok(())
}

/// `TIOCSTI` and `TIOCLINUX` (include/uapi/asm-generic/ioctls.h; the libc crate exports only the
/// first, with a type that differs between libcs).
const TIOCSTI: u64 = 0x5412;
const TIOCLINUX: u64 = 0x541C;

/// What reaches a UNIX socket without the supervisor's check, network on or off.
fn deny_unix_escapes(rules: &mut Rules) -> Result<(), seccompiler::Error> {
    // io_uring can open sockets and connect without going through these syscalls at all.
    for syscall in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        rules.insert(syscall, vec![]);
    }
    // A UNIX datagram socket needs no `connect` to reach a named socket (`sendto`/`sendmsg`
    // with an address, even on a connected pair), and seccomp cannot read `sendmsg`'s address.
    // (AF_UNIX turns SOCK_RAW into SOCK_DGRAM.) Stream and seqpacket sockets refuse an address.
    let unix_of_type = |kind: libc::c_int| -> Result<SeccompRule, seccompiler::Error> {
        SeccompRule::new(vec![
            SeccompCondition::new(
                0,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Eq,
                libc::AF_UNIX as u64,
            )?,
            SeccompCondition::new(
                1,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK),
                kind as u64,
            )?,
        ])
        .map_err(Into::into)
    };
    let datagrams = vec![
        unix_of_type(libc::SOCK_DGRAM)?,
        unix_of_type(libc::SOCK_RAW)?,
    ];
    rules.insert(libc::SYS_socket, datagrams.clone());
    rules.insert(libc::SYS_socketpair, datagrams);
    Ok(())
}

fn deny_network(rules: &mut Rules) -> Result<(), seccompiler::Error> {
    // Denied outright. Not `connect`: the supervisor serves it (`connect_filter.rs`), and with
    // the network off no socket but a UNIX one can exist to connect.
    for syscall in [
        libc::SYS_bind,
        libc::SYS_listen,
        libc::SYS_accept,
        libc::SYS_accept4,
        libc::SYS_sendmmsg,
        libc::SYS_recvmmsg,
        // A traced process's syscalls can be rewritten after seccomp has checked them.
        libc::SYS_ptrace,
    ] {
        rules.insert(syscall, vec![]);
    }
    // Sockets only for AF_UNIX, and only connection-oriented ones (`deny_unix_escapes`): pipes
    // between a tool and its children, not the network.
    let not_unix = SeccompRule::new(vec![SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Ne,
        libc::AF_UNIX as u64,
    )?])?;
    let of_type = |kind: libc::c_int| -> Result<SeccompRule, seccompiler::Error> {
        SeccompRule::new(vec![SeccompCondition::new(
            1,
            SeccompCmpArgLen::Dword,
            // The type argument also carries SOCK_NONBLOCK and SOCK_CLOEXEC.
            SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK),
            kind as u64,
        )?])
        .map_err(Into::into)
    };
    let socket_rules = vec![
        not_unix,
        of_type(libc::SOCK_DGRAM)?,
        of_type(libc::SOCK_RAW)?,
    ];
    rules.insert(libc::SYS_socket, socket_rules.clone());
    rules.insert(libc::SYS_socketpair, socket_rules);
    // `send()` is `sendto(.., NULL, 0)` in glibc: only a datagram with an explicit address is
    // denied (no datagram socket can exist, but an inherited one could).
    let with_address = SeccompRule::new(vec![SeccompCondition::new(
        4,
        SeccompCmpArgLen::Qword,
        SeccompCmpOp::Ne,
        0,
    )?])?;
    rules.insert(libc::SYS_sendto, vec![with_address]);
    Ok(())
}

/// `SOCK_TYPE_MASK` (include/linux/net.h).
const SOCK_TYPE_MASK: u64 = 0xf;

/// Syscalls that change a file's metadata, none of which Landlock checks. The newest ones have
/// the same number on every architecture (the unified syscall table).
fn metadata_syscalls() -> Vec<i64> {
    const FCHMODAT2: i64 = 452;
    const SETXATTRAT: i64 = 463;
    const REMOVEXATTRAT: i64 = 466;
    // Extended below on x86_64 only.
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
    let mut calls = vec![
        libc::SYS_fchmod,
        libc::SYS_fchmodat,
        FCHMODAT2,
        libc::SYS_fchown,
        libc::SYS_fchownat,
        libc::SYS_utimensat,
        libc::SYS_setxattr,
        libc::SYS_lsetxattr,
        libc::SYS_fsetxattr,
        SETXATTRAT,
        libc::SYS_removexattr,
        libc::SYS_lremovexattr,
        libc::SYS_fremovexattr,
        REMOVEXATTRAT,
    ];
    // Older calls that newer architectures (aarch64, riscv64) never had.
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        libc::SYS_chmod,
        libc::SYS_chown,
        libc::SYS_lchown,
        libc::SYS_utime,
        libc::SYS_utimes,
        libc::SYS_futimesat,
    ]);
    calls
}

/// x32 binaries run with the x86_64 audit arch but their own syscall numbers (bit 30 set), so the
/// arch check does not stop them: deny their socket calls by number, all families included.
#[cfg(target_arch = "x86_64")]
fn add_x32_denials(rules: &mut Rules, network: Network, read_only: bool) {
    const X32: i64 = 0x4000_0000;
    // x32's ioctl is its own number (514): deny it whole, x32 binaries are vanishingly rare.
    rules.insert(514 | X32, vec![]);
    if read_only {
        for syscall in metadata_syscalls() {
            rules.insert(syscall | X32, vec![]);
        }
    }
    // Always: x32's `connect` would not reach the supervisor (the notification filter matches
    // the native number only), nor would its io_uring calls be checked.
    for syscall in [
        libc::SYS_connect,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_socket,
        libc::SYS_socketpair,
    ] {
        rules.insert(syscall | X32, vec![]);
    }
    if network == Network::On {
        return;
    }
    let common = [
        libc::SYS_socket,
        libc::SYS_socketpair,
        libc::SYS_connect,
        libc::SYS_bind,
        libc::SYS_listen,
        libc::SYS_accept,
        libc::SYS_accept4,
        libc::SYS_sendto,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ];
    // x32's own numbers for ptrace, recvmmsg and sendmmsg (arch/x86/entry/syscalls/syscall_64.tbl).
    let x32_only = [521, 537, 538];
    for syscall in common
        .into_iter()
        .map(|nr| nr | X32)
        .chain(x32_only.map(|nr| nr | X32))
    {
        rules.insert(syscall, vec![]);
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn add_x32_denials(_rules: &mut Rules, _network: Network, _read_only: bool) {}

#[cfg(test)]
mod tests {
    #[test]
    fn filter_compiles_for_this_arch() {
        use super::Network;
        for network in [Network::On, Network::Off] {
            for read_only in [false, true] {
                let program = super::filter(network, read_only).unwrap();
                assert!(!program.is_empty());
            }
        }
    }
}
