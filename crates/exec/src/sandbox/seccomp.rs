//! seccomp: with the network off, every way to reach a network peer fails with EPERM — the same
//! set codex's Linux sandbox denies, minus the calls that are harmless once no network socket can
//! exist (send/recv on UNIX sockets, get/setsockopt), which everyday tools use to talk to their
//! own children over `socketpair`.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

pub(super) fn deny_network() -> Result<(), String> {
    let program = filter().map_err(|err| format!("could not build the seccomp filter: {err}"))?;
    seccompiler::apply_filter(&program)
        .map_err(|err| format!("could not install the seccomp filter: {err}"))
}

fn filter() -> Result<BpfProgram, seccompiler::Error> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    // Denied outright. `connect` also covers UNIX sockets: seccomp cannot read the address, and
    // a UNIX socket (a proxy, docker.sock) is a way out too.
    for syscall in [
        libc::SYS_connect,
        libc::SYS_bind,
        libc::SYS_listen,
        libc::SYS_accept,
        libc::SYS_accept4,
        libc::SYS_sendmmsg,
        libc::SYS_recvmmsg,
        // A traced process's syscalls can be rewritten after seccomp has checked them.
        libc::SYS_ptrace,
        // io_uring can open sockets and connect without going through these syscalls at all.
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        rules.insert(syscall, vec![]);
    }
    // Sockets only for AF_UNIX: pipes between a tool and its children, not the network.
    let not_unix = SeccompRule::new(vec![SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Ne,
        libc::AF_UNIX as u64,
    )?])?;
    rules.insert(libc::SYS_socket, vec![not_unix.clone()]);
    rules.insert(libc::SYS_socketpair, vec![not_unix]);
    // `send()` is `sendto(.., NULL, 0)` in glibc: only a datagram with an explicit address is
    // denied.
    let with_address = SeccompRule::new(vec![SeccompCondition::new(
        4,
        SeccompCmpArgLen::Qword,
        SeccompCmpOp::Ne,
        0,
    )?])?;
    rules.insert(libc::SYS_sendto, vec![with_address]);
    add_x32_denials(&mut rules);

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

/// x32 binaries run with the x86_64 audit arch but their own syscall numbers (bit 30 set), so the
/// arch check does not stop them: deny their socket calls by number, all families included.
#[cfg(target_arch = "x86_64")]
fn add_x32_denials(rules: &mut BTreeMap<i64, Vec<SeccompRule>>) {
    const X32: i64 = 0x4000_0000;
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
fn add_x32_denials(_rules: &mut BTreeMap<i64, Vec<SeccompRule>>) {}

#[cfg(test)]
mod tests {
    #[test]
    fn filter_compiles_for_this_arch() {
        let program = super::filter().unwrap();
        assert!(!program.is_empty());
    }
}
