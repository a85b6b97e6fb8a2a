//! The supervisor's half of UNIX-socket confinement (the command's half is
//! `sandbox/connect_filter.rs`): every `connect()` of a sandboxed command stops in the kernel and
//! waits here. The broker copies the address once, takes a duplicate of the command's socket
//! (`pidfd_getfd`: the same open socket, not a new one) and connects *that* itself:
//!
//! - an IP (or any non-UNIX) socket is connected to the copied address: the command's network
//!   switch is enforced by the main seccomp filter, which refuses such sockets when it is off;
//! - a UNIX socket is connected only to a pathname socket that is listed in
//!   `sandbox.allow_unix_sockets`, or that lies under a writable root and was created after the
//!   command started (by the command itself: the user's tmux, ssh-agent or X11 sockets in `/tmp`
//!   are older). Abstract sockets are refused. The broker opens the path (`O_PATH`), checks what
//!   it opened, and connects through `/proc/self/fd/N`: exactly the file it checked.
//!
//! Nothing is ever let through with `SECCOMP_USER_NOTIF_FLAG_CONTINUE`: the kernel would read the
//! address (and the descriptor table) again after the check, and another thread of the command
//! could have swapped them by then. Denials answer `EACCES`, as a socket file without write
//! permission does.

// Why unsafe: the seccomp notification ioctls and `connect` with a raw address copied from the
// command have no safe wrapper. Every pointer handed to the kernel points to a value on our
// stack (or a Vec) that lives across the call.
#![allow(unsafe_code)]

use std::io::IoSliceMut;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, StatxFlags};
use rustix::net::{AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
use rustix::process::{Pid, PidfdFlags, PidfdGetfdFlags};

/// Which UNIX sockets a command may connect to (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct SocketRules {
    writable: Vec<PathBuf>,
    hidden: Vec<PathBuf>,
    allowed: Vec<PathBuf>,
    /// When the command started (the coarse clock file times come from).
    since: (i64, u32),
}

impl SocketRules {
    /// Rules for a command starting now; paths are compared once resolved (symlinks followed).
    pub(crate) fn starting_now(
        writable: &[PathBuf],
        hidden: &[PathBuf],
        allowed: &[PathBuf],
    ) -> Self {
        let now = rustix::time::clock_gettime(rustix::time::ClockId::RealtimeCoarse);
        let nanos = u32::try_from(now.tv_nsec).unwrap_or(0);
        SocketRules {
            writable: writable.iter().map(|p| resolved(p)).collect(),
            hidden: hidden.iter().map(|p| resolved(p)).collect(),
            allowed: allowed.iter().map(|p| resolved(p)).collect(),
            since: (now.tv_sec, nanos),
        }
    }

    /// Whether the socket file at `real` (resolved), created at `born` (when the file system
    /// says), may be connected to.
    fn may_connect(&self, real: &Path, born: Option<(i64, u32)>) -> bool {
        if self.hidden.iter().any(|h| real.starts_with(h)) {
            return false;
        }
        if self.allowed.iter().any(|a| a == real) {
            return true;
        }
        self.writable.iter().any(|w| real.starts_with(w)) && born.is_some_and(|b| b >= self.since)
    }
}

/// `path` with symlinks resolved, as far as it exists (a listed socket may not exist yet).
fn resolved(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => std::fs::canonicalize(parent)
            .map(|p| p.join(name))
            .unwrap_or_else(|_| path.to_owned()),
        _ => path.to_owned(),
    }
}

/// The channel the second stage sends its listener over: (the supervisor's end, close-on-exec;
/// the end the second stage inherits).
pub(crate) fn channel() -> std::io::Result<(OwnedFd, OwnedFd)> {
    use rustix::net::{SocketFlags, SocketType, socketpair};
    let (ours, theirs) = socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::empty(),
        None,
    )?;
    rustix::io::fcntl_setfd(&ours, rustix::io::FdFlags::CLOEXEC)?;
    Ok((ours, theirs))
}

/// Serves the command's `connect()` calls from a thread of the supervisor, once the second
/// stage has sent its listener over `channel` (it sends nothing when it fails before: then
/// there is nothing to serve).
pub(crate) fn start(channel: OwnedFd, rules: SocketRules) {
    let spawned = std::thread::Builder::new()
        .name("connect-broker".to_owned())
        .spawn(move || {
            let Some(listener) = receive_listener(&channel) else {
                return;
            };
            drop(channel);
            serve(Arc::new(listener), Arc::new(rules));
        });
    if let Err(err) = spawned {
        // The command's connects then fail (ENOSYS once the listener is gone): closed, not open.
        say(&format!("cannot start the connect broker: {err}"));
    }
}

fn receive_listener(channel: &OwnedFd) -> Option<OwnedFd> {
    let mut byte = [0u8; 1];
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = rustix::net::recvmsg(
        channel,
        &mut [IoSliceMut::new(&mut byte)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )
    .ok()?;
    if got.bytes == 0 {
        return None;
    }
    control.drain().find_map(|message| match message {
        RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
        _ => None,
    })
}

fn serve(listener: Arc<OwnedFd>, rules: Arc<SocketRules>) {
    loop {
        // SAFETY: a zeroed `seccomp_notif` (the kernel requires it zeroed) that the kernel fills.
        let mut request: libc::seccomp_notif = unsafe { std::mem::zeroed() };
        // SAFETY: see above; the pointer is valid for the call.
        let rc = unsafe {
            libc::ioctl(
                listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_RECV,
                &mut request as *mut libc::seccomp_notif,
            )
        };
        if rc != 0 {
            match std::io::Error::last_os_error().raw_os_error() {
                // Interrupted, or the caller died before we took its call.
                Some(libc::EINTR) | Some(libc::ENOENT) => continue,
                // Every process of the command is gone.
                _ => return,
            }
        }
        // One thread per call: a TCP connect can take minutes and must not hold up the others.
        let (theirs, rules) = (Arc::clone(&listener), Arc::clone(&rules));
        let answer = move || {
            let errno = connect_for(&theirs, &request, &rules).err().unwrap_or(0);
            respond(&theirs, request.id, errno);
        };
        if std::thread::Builder::new()
            .stack_size(128 * 1024)
            .spawn(answer)
            .is_err()
        {
            // No thread left: the call fails as when the system is out of resources.
            respond(&listener, request.id, libc::EAGAIN);
        }
    }
}

/// Connects the command's socket as it asked, if the rules allow; the errno to answer otherwise.
fn connect_for(
    listener: &OwnedFd,
    request: &libc::seccomp_notif,
    rules: &SocketRules,
) -> Result<(), i32> {
    let tid = i32::try_from(request.pid).map_err(|_| libc::EPERM)?;
    let tgid = thread_group(tid).ok_or(libc::EPERM)?;
    let pid = Pid::from_raw(tgid).ok_or(libc::EPERM)?;
    let pidfd = rustix::process::pidfd_open(pid, PidfdFlags::empty()).map_err(errno)?;
    // The pid could have been reused before `pidfd_open`: only a call still waiting proves the
    // pidfd names the caller.
    if !still_waiting(listener, request.id) {
        return Err(libc::ENOENT);
    }
    let [fd, address, length, ..] = request.data.args;
    let fd = i32::try_from(fd & 0xffff_ffff).map_err(|_| libc::EBADF)?;
    let socket =
        rustix::process::pidfd_getfd(&pidfd, fd, PidfdGetfdFlags::empty()).map_err(errno)?;
    let length = usize::try_from(length & 0xffff_ffff).map_err(|_| libc::EINVAL)?;
    if length > std::mem::size_of::<libc::sockaddr_storage>() {
        return Err(libc::EINVAL);
    }
    let address = read_memory(tgid, address, length)?;
    if !still_waiting(listener, request.id) {
        return Err(libc::ENOENT);
    }
    if rustix::net::sockopt::socket_domain(&socket).map_err(errno)? == AddressFamily::UNIX {
        connect_unix(&socket, &address, tid, rules)
    } else {
        connect_raw(&socket, &address)
    }
}

fn connect_unix(
    socket: &OwnedFd,
    address: &[u8],
    tid: i32,
    rules: &SocketRules,
) -> Result<(), i32> {
    let family = address
        .get(..2)
        .map(|f| u16::from_ne_bytes([f[0], f[1]]))
        .ok_or(libc::EINVAL)?;
    let path = &address[2..];
    if libc::c_int::from(family) != libc::AF_UNIX || path.is_empty() {
        return Err(libc::EINVAL);
    }
    if path[0] == 0 {
        // Abstract: no file, no owner to check; the user's daemons (X11, D-Bus) listen there.
        return Err(libc::EACCES);
    }
    let end = path.iter().position(|b| *b == 0).unwrap_or(path.len());
    let path = Path::new(std::ffi::OsStr::from_bytes(&path[..end]));
    // Relative to the caller's working directory (ignored for an absolute path).
    let cwd = rustix::fs::open(
        format!("/proc/{tid}/cwd"),
        OFlags::PATH | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(errno)?;
    let target = rustix::fs::openat(&cwd, path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty())
        .map_err(errno)?;
    let info = rustix::fs::statx(
        &target,
        "",
        AtFlags::EMPTY_PATH,
        StatxFlags::TYPE | StatxFlags::BTIME,
    )
    .map_err(errno)?;
    if FileType::from_raw_mode(u32::from(info.stx_mode)) != FileType::Socket {
        return Err(libc::ECONNREFUSED);
    }
    let by_fd = format!("/proc/self/fd/{}", target.as_raw_fd());
    let real = std::fs::read_link(&by_fd).map_err(|_| libc::EACCES)?;
    let born = (info.stx_mask & StatxFlags::BTIME.bits() != 0)
        .then_some((info.stx_btime.tv_sec, info.stx_btime.tv_nsec));
    if !rules.may_connect(&real, born) {
        return Err(libc::EACCES);
    }
    let via = rustix::net::SocketAddrUnix::new(by_fd.as_str()).map_err(errno)?;
    rustix::net::connect(socket, &via).map_err(errno)
}

fn connect_raw(socket: &OwnedFd, address: &[u8]) -> Result<(), i32> {
    let length = libc::socklen_t::try_from(address.len()).map_err(|_| libc::EINVAL)?;
    // SAFETY: `address` is a live buffer of `length` bytes; the kernel only reads it.
    let rc = unsafe { libc::connect(socket.as_raw_fd(), address.as_ptr().cast(), length) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO))
    }
}

/// `length` bytes at `address` in the memory of process `tgid`.
fn read_memory(tgid: i32, address: u64, length: usize) -> Result<Vec<u8>, i32> {
    let mut bytes = vec![0u8; length];
    if length == 0 {
        return Ok(bytes);
    }
    let mem = std::fs::File::open(format!("/proc/{tgid}/mem")).map_err(|_| libc::EFAULT)?;
    mem.read_exact_at(&mut bytes, address)
        .map_err(|_| libc::EFAULT)?;
    Ok(bytes)
}

/// The process a thread belongs to (`Tgid:` in its status).
fn thread_group(tid: i32) -> Option<i32> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

fn still_waiting(listener: &OwnedFd, id: u64) -> bool {
    // SAFETY: the kernel reads one u64 through the pointer, which lives across the call.
    let rc = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
            &id as *const u64,
        )
    };
    rc == 0
}

fn respond(listener: &OwnedFd, id: u64, errno: i32) {
    let mut response = libc::seccomp_notif_resp {
        id,
        val: 0,
        error: -errno,
        flags: 0,
    };
    // SAFETY: the kernel reads the response through the pointer, which lives across the call.
    // A caller that died (or was interrupted) in the meantime makes this fail: nothing to do.
    let _ = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SEND,
            &mut response as *mut libc::seccomp_notif_resp,
        )
    };
}

/// A line on the command's stderr (the supervisor's is the command's pipe).
fn say(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "ferrite sandbox: {message}");
}

fn errno(err: rustix::io::Errno) -> i32 {
    err.raw_os_error()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_listed_or_fresh_sockets_under_writable_roots() {
        let rules = SocketRules {
            writable: vec![PathBuf::from("/w"), PathBuf::from("/tmp")],
            hidden: vec![PathBuf::from("/w/.ferrite")],
            allowed: vec![PathBuf::from("/run/dev.sock")],
            since: (100, 5),
        };
        assert!(rules.may_connect(Path::new("/run/dev.sock"), None));
        assert!(rules.may_connect(Path::new("/tmp/x/s"), Some((100, 5))));
        assert!(rules.may_connect(Path::new("/w/s"), Some((101, 0))));
        // Older than the command (the user's tmux in /tmp), unknown age, outside, hidden.
        assert!(!rules.may_connect(Path::new("/tmp/tmux-1000/default"), Some((99, 9))));
        assert!(!rules.may_connect(Path::new("/w/s"), None));
        assert!(!rules.may_connect(Path::new("/run/user/1/bus"), Some((200, 0))));
        assert!(!rules.may_connect(Path::new("/w/.ferrite/s"), Some((200, 0))));
        assert!(!rules.may_connect(Path::new("/wx/s"), Some((200, 0))));
    }
}
