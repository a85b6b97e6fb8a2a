//! The command's half of UNIX-socket confinement: every `connect()` of the sandboxed command
//! waits for the supervisor (`SECCOMP_RET_USER_NOTIF`), which decides and connects the socket
//! itself (`supervisor/connect_broker.rs` says how and why).
//!
//! Why not the other ways: seccomp alone cannot read `connect()`'s address, so it could only
//! refuse every UNIX socket (Python's default `forkserver`, test suites that listen in a temp
//! directory would break); Landlock only scopes *abstract* sockets (ABI 6) and has no right for
//! connecting to a pathname socket; a mount namespace needs user namespaces, which containers
//! often lack, and hiding directories cannot name every place a socket may live.

// Why unsafe: installing a seccomp filter that returns a listener, and taking ownership of the
// channel descriptor the supervisor passed down by number, have no safe wrapper (seccompiler
// has no USER_NOTIF action; the descriptor comes from our own argv).
#![allow(unsafe_code)]

use std::os::fd::{AsFd, FromRawFd, OwnedFd, RawFd};

use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};

/// `AUDIT_ARCH_*` of the architectures seccompiler builds filters for.
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;
#[cfg(target_arch = "riscv64")]
const AUDIT_ARCH: u32 = 0xC000_00F3;

/// Installs the filter that hands every native `connect()` to the supervisor, and sends the
/// supervisor the listener over `channel` (a descriptor number inherited from it). Must run
/// after the main seccomp filter: calls that filter refuses (x32's `connect`, other
/// architectures) never reach this one's notification.
pub(super) fn install(channel: RawFd) -> Result<(), String> {
    // SAFETY: the supervisor created this descriptor for us alone and named it in our argv;
    // nothing else in this process owns it, and it is closed here once used.
    let channel = unsafe { OwnedFd::from_raw_fd(channel) };
    let listener = install_listener()?;
    let fds = [listener.as_fd()];
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    control.push(SendAncillaryMessage::ScmRights(&fds));
    rustix::net::sendmsg(
        &channel,
        &[std::io::IoSlice::new(b"L")],
        &mut control,
        SendFlags::empty(),
    )
    .map_err(|err| format!("cannot hand the connect filter to the supervisor: {err}"))?;
    // Both close here: the command keeps neither (the listener is close-on-exec anyway).
    Ok(())
}

fn install_listener() -> Result<OwnedFd, String> {
    const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    let stmt = |code, k| libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let jump = |k, jt, jf| libc::sock_filter {
        code: JEQ_K,
        jt,
        jf,
        k,
    };
    // Offsets into `struct seccomp_data`: nr at 0, arch at 4.
    let program = [
        stmt(LD_W_ABS, 4),
        jump(AUDIT_ARCH, 0, 3),
        stmt(LD_W_ABS, 0),
        jump(libc::SYS_connect as u32, 0, 1),
        stmt(RET_K, libc::SECCOMP_RET_USER_NOTIF),
        stmt(RET_K, libc::SECCOMP_RET_ALLOW),
    ];
    let prog = libc::sock_fprog {
        len: program.len() as u16,
        filter: program.as_ptr().cast_mut(),
    };
    // SAFETY: `prog` points to `program`, both alive across the call; the kernel copies the
    // filter and returns a new (close-on-exec) descriptor or -1.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
            &prog as *const libc::sock_fprog,
        )
    };
    if fd < 0 {
        return Err(format!(
            "could not install the connect filter: {}",
            std::io::Error::last_os_error()
        ));
    }
    let fd = RawFd::try_from(fd).map_err(|_| "bad listener descriptor".to_owned())?;
    // SAFETY: the kernel just created this descriptor for us.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
