//! The supervisor: the first stage of the helper (see `helper.rs`). It owns the command's whole
//! process tree and guarantees that nothing of it outlives the call.
//!
//! - It is a *child subreaper*: a process of the command that leaves its parent behind (`setsid`,
//!   double fork, `nohup … &`) is reparented to the supervisor, not to init, so the tree can
//!   always be found by walking parent links from here.
//! - SIGTERM/SIGINT/SIGHUP (the agent's cancel, timeout, close, EOF) send SIGTERM to every
//!   process of the tree and SIGKILL 2 s later (`docs/sandbox.md`).
//! - SIGUSR1 (the agent: the output cap was reached) kills the tree at once.
//! - The agent's death arrives as SIGUSR2 (`PR_SET_PDEATHSIG`) and kills the tree at once — unless
//!   a TERM is already under way (the agent exiting at EOF right after asking), which then runs
//!   its 2 s course.
//! - When the command itself exits, whatever it left behind is killed (after what remains of the
//!   2 s when it was asked to stop: background processes may be cleaning up), and the supervisor
//!   exits
//!   with the command's status only once every process of the tree is gone: the output pipes
//!   close then, so the runner sees the end of the output exactly when nothing is left.
//!
//! A process of the tree cannot escape by killing the supervisor: a sandboxed command cannot
//! signal processes outside its Landlock domain. In `full` mode it can (same user, no sandbox):
//! that residual risk is documented in `docs/sandbox.md`.

// Why unsafe: blocking signals and waiting for them synchronously (`pthread_sigmask`,
// `sigtimedwait`) has no safe wrapper in std or in rustix's enabled features. The calls only
// read and write `sigset_t`/`siginfo_t` values that live on our stack for the call's duration.
#![allow(unsafe_code)]

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::process::{Pid, Signal, WaitOptions, WaitStatus};

use crate::setup_failure::{SETUP_FAILURE_CODE, SETUP_FAILURE_PREFIX, fail};

/// Time between SIGTERM and SIGKILL (`docs/sandbox.md`).
pub(crate) const KILL_GRACE: Duration = Duration::from_secs(2);

/// The signal the agent sends to kill the tree at once (the output cap was reached).
pub(crate) const KILL_NOW: Signal = Signal::USR1;

/// The signal the supervisor receives when the agent dies.
const AGENT_DIED: Signal = Signal::USR2;

/// Asks the kernel to send `signal` when the process that started us dies, and checks it did not
/// die already (then we were reparented before the request and would never get the signal).
pub(crate) fn die_with_parent(parent: i32, signal: Signal) -> Result<(), String> {
    rustix::process::set_parent_process_death_signal(Some(signal))
        .map_err(|err| format!("prctl(PR_SET_PDEATHSIG) failed: {err}"))?;
    if parent_is(parent) {
        Ok(())
    } else {
        Err("the process that started the command is gone".to_owned())
    }
}

/// Runs the supervisor: `stage_two` is the argv (after the executable) of the child that
/// sandboxes itself and execs the command. Returns the command's exit status (or dies by the
/// same signal as the command).
pub(crate) fn run(agent: i32, stage_two: &[OsString]) -> ExitCode {
    // No controlling terminal for anything the command starts: a terminal is a way to type into
    // the user's shell (TIOCSTI). Fails only if we already lead a session, which the runner never
    // arranges.
    let _ = rustix::process::setsid();
    // Blocked before the death signal is armed: its default action would kill us, tree and all.
    let signals = SignalSet::block(&[
        Signal::TERM,
        Signal::INT,
        Signal::HUP,
        KILL_NOW,
        AGENT_DIED,
        Signal::CHILD,
    ]);
    if let Err(err) = die_with_parent(agent, AGENT_DIED) {
        return fail(SETUP_FAILURE_CODE, &format!("{SETUP_FAILURE_PREFIX}{err}"));
    }
    let me = rustix::process::getpid();
    if let Err(err) = rustix::process::set_child_subreaper(Some(me)) {
        return fail(
            SETUP_FAILURE_CODE,
            &format!("{SETUP_FAILURE_PREFIX}prctl(PR_SET_CHILD_SUBREAPER) failed: {err}"),
        );
    }
    // This very binary, even if it was replaced or deleted since the agent started (an upgrade).
    let exe = std::path::Path::new("/proc/self/exe");
    // The child inherits our signal mask; it empties it itself (`unblock_all_signals`).
    let child = match std::process::Command::new(exe).args(stage_two).spawn() {
        Ok(child) => child.id(),
        Err(err) => {
            return fail(
                SETUP_FAILURE_CODE,
                &format!("{SETUP_FAILURE_PREFIX}cannot start the command: {err}"),
            );
        }
    };
    let child = i32::try_from(child).ok().and_then(Pid::from_raw);
    let mut status = None;
    let mut kill_at: Option<Instant> = None;
    loop {
        let wait = kill_at.map_or(Duration::from_secs(1), |at| {
            at.saturating_duration_since(Instant::now())
        });
        // Everything pending at once: `sigtimedwait` hands out the lowest signal number first,
        // and the agent's death (SIGUSR2, 12) must not overtake the TERM it sent just before
        // exiting (SIGTERM, 15) at EOF.
        let mut pending = Vec::new();
        if let Some(first) = signals.wait(wait) {
            pending.push(first);
            while let Some(more) = signals.wait(Duration::ZERO) {
                pending.push(more);
            }
        }
        let asked_to_stop = pending
            .iter()
            .any(|s| *s == Signal::TERM || *s == Signal::INT || *s == Signal::HUP);
        if asked_to_stop && kill_at.is_none() {
            signal_tree(me, Signal::TERM);
            kill_at = Some(Instant::now() + KILL_GRACE);
        }
        if pending.contains(&KILL_NOW) {
            break;
        }
        // The death signal also fires when only the agent's thread that spawned us exits (we
        // are then handed to another of its threads): the agent is gone only once we were
        // reparented outside it. A TERM already under way runs its course.
        if pending.contains(&AGENT_DIED) && kill_at.is_none() && !parent_is(agent) {
            break;
        }
        reap(child, &mut status, WaitOptions::NOHANG);
        if kill_at.is_some_and(|at| Instant::now() >= at) {
            break;
        }
        // The command is done. Left-overs are killed at once, unless we are stopping it: then
        // they keep the rest of their 2 s to clean up after the TERM (or until none is left).
        if status.is_some() && (kill_at.is_none() || descendants(me).is_empty()) {
            break;
        }
    }
    kill_tree(me, child, &mut status);
    exit_like(status)
}

fn parent_is(pid: i32) -> bool {
    rustix::process::getppid().is_some_and(|ppid| ppid.as_raw_nonzero().get() == pid)
}

/// Reaps every child that has exited (the command, or orphans reparented to us), keeping the
/// command's status. (`wait`, i.e. `waitpid(-1)`: rustix's `waitpid(None)` is `waitpid(0)`,
/// which skips children in another process group — exactly the ones that called `setsid`.)
fn reap(child: Option<Pid>, status: &mut Option<WaitStatus>, options: WaitOptions) {
    loop {
        match rustix::process::wait(options) {
            Ok(Some((pid, st))) => {
                if Some(pid) == child {
                    *status = Some(st);
                }
                if options.contains(WaitOptions::NOHANG) {
                    continue;
                }
                return;
            }
            Err(Errno::INTR) => {}
            // Nothing left to reap (NOHANG), no children at all (ECHILD), or an error.
            Ok(None) | Err(_) => return,
        }
    }
}

/// SIGKILLs every process of the tree until none is left. Waiting for one child at a time and
/// walking the tree again catches processes forked while we were killing: once we have no child
/// left, we have no descendant left (orphans are reparented to us).
fn kill_tree(me: Pid, child: Option<Pid>, status: &mut Option<WaitStatus>) {
    loop {
        signal_tree(me, Signal::KILL);
        // Should `/proc` be unreadable, the command's own process still dies (and our wait
        // cannot block forever on it).
        if status.is_none()
            && let Some(child) = child
        {
            let _ = rustix::process::kill_process(child, Signal::KILL);
        }
        match rustix::process::wait(WaitOptions::empty()) {
            Ok(Some((pid, st))) => {
                if Some(pid) == child {
                    *status = Some(st);
                }
            }
            Ok(None) | Err(Errno::INTR) => {}
            Err(_) => return,
        }
    }
}

/// Sends `signal` to every process below `root` (children first found, then theirs).
fn signal_tree(root: Pid, signal: Signal) {
    for pid in descendants(root) {
        // ESRCH: it exited meanwhile.
        let _ = rustix::process::kill_process(pid, signal);
    }
}

/// The processes below `root`, from `/proc`'s parent links.
fn descendants(root: Pid) -> Vec<Pid> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let links: Vec<(i32, i32)> = entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| Some((pid, parent_of(pid)?)))
        .collect();
    let mut found = vec![root.as_raw_nonzero().get()];
    let mut next = 0;
    while next < found.len() {
        let parent = found[next];
        found.extend(
            links
                .iter()
                .filter(|(_, ppid)| *ppid == parent)
                .map(|(pid, _)| *pid),
        );
        next += 1;
    }
    found
        .into_iter()
        .skip(1)
        .filter_map(Pid::from_raw)
        .collect()
}

/// The parent pid in `/proc/<pid>/stat` (the field after the state, which follows the
/// parenthesised command name — itself free to contain spaces and parentheses).
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Exits as the command did: the same code, or death by the same signal.
fn exit_like(status: Option<WaitStatus>) -> ExitCode {
    let Some(status) = status else {
        return ExitCode::from(SETUP_FAILURE_CODE);
    };
    if let Some(code) = status.exit_status() {
        return ExitCode::from(u8::try_from(code & 0xff).unwrap_or(1));
    }
    if let Some(sig) = status.terminating_signal() {
        // Not blocked any more and never handled: its default action ends us the same way.
        // SAFETY: see `SignalSet`; `raise` only sends a signal to ourselves.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, sig);
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
        return ExitCode::from(u8::try_from(128 + sig).unwrap_or(1));
    }
    ExitCode::from(1)
}

/// Empties the signal mask: the second stage inherits the supervisor's (std does not reset it for
/// the child), and a command must not start with TERM, INT, HUP or CHLD blocked — it would then
/// ignore the TERM of a cancel until the KILL 2 s later.
pub(crate) fn unblock_all_signals() {
    // SAFETY: see `SignalSet`.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::pthread_sigmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
    }
}

/// Signals blocked for this (single-threaded) process and received synchronously.
struct SignalSet {
    set: libc::sigset_t,
}

impl SignalSet {
    fn block(signals: &[Signal]) -> Self {
        // SAFETY: `set` is a plain value initialised by `sigemptyset` before use; the calls only
        // touch it and the calling thread's mask.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for signal in signals {
                libc::sigaddset(&mut set, signal.as_raw());
            }
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            SignalSet { set }
        }
    }

    /// The next pending signal of the set, or `None` after `timeout` (or on EINTR).
    fn wait(&self, timeout: Duration) -> Option<Signal> {
        let timeout = libc::timespec {
            tv_sec: libc::time_t::try_from(timeout.as_secs()).unwrap_or(libc::time_t::MAX),
            tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
        };
        // SAFETY: `info` is written by the kernel; `self.set` and `timeout` live across the call.
        let sig = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::sigtimedwait(&self.set, &mut info, &timeout)
        };
        if sig <= 0 {
            return None;
        }
        // SAFETY: a signal number the kernel just delivered is a valid signal.
        Some(unsafe { Signal::from_raw_unchecked(sig) })
    }
}
