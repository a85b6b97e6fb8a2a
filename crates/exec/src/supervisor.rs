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
//!
//! Where there is no subreaper nor `PR_SET_PDEATHSIG` (macOS, the BSDs: [`ProcessTree::ProcessGroup`],
//! selectable on Linux too) the command gets a process group of its own, the supervisor signals
//! that group, and it notices the agent's death by polling its parent pid (see `contain.rs`).

// Why unsafe: blocking signals and waiting for them synchronously (`pthread_sigmask`,
// `sigtimedwait`) has no safe wrapper in std or in rustix's enabled features. The calls only
// read and write `sigset_t`/`siginfo_t` values that live on our stack for the call's duration.
#![allow(unsafe_code)]

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitOptions, WaitStatus};

use crate::platform::ProcessTree;
use crate::setup_failure::{SETUP_FAILURE_CODE, SETUP_FAILURE_PREFIX, fail};

#[cfg(target_os = "linux")]
mod connect_broker;
mod contain;
mod signals;

#[cfg(target_os = "linux")]
pub(crate) use connect_broker::SocketRules;
/// Nothing to broker where there is no Landlock sandbox.
#[cfg(not(target_os = "linux"))]
pub(crate) enum SocketRules {}

use contain::Containment;
use signals::SignalSet;

use crate::tree::{KILL_GRACE, KILL_NOW};

/// The option by which the supervisor tells its child the descriptor of the broker channel.
pub(crate) const BROKER_FD_ARG: &str = "--broker-fd";

/// The signal the supervisor receives when the agent dies (subreaper mode; the process-group mode
/// polls instead).
const AGENT_DIED: Signal = Signal::USR2;

/// How often the process-group supervisor looks whether the agent is still there.
const PARENT_POLL: Duration = Duration::from_millis(100);

/// Makes sure this process does not outlive the process that started it (`parent`): with
/// `PR_SET_PDEATHSIG` (`signal` on its death) where the tree mode has it, else only checks that
/// the parent is still there now (the supervisor then watches for it). Fails when the parent is
/// already gone (we were reparented before the request and would never be told).
pub(crate) fn die_with_parent(tree: ProcessTree, parent: i32) -> Result<(), String> {
    match tree {
        #[cfg(target_os = "linux")]
        ProcessTree::Subreaper => {
            rustix::process::set_parent_process_death_signal(Some(Signal::KILL))
                .map_err(|err| format!("prctl(PR_SET_PDEATHSIG) failed: {err}"))?;
        }
        ProcessTree::ProcessGroup => {}
    }
    if parent_is(parent) {
        Ok(())
    } else {
        Err("the process that started the command is gone".to_owned())
    }
}

/// Runs the supervisor: `stage_two` is the argv (after the executable) of the child that
/// sandboxes itself and execs the command; with `sockets`, the command's `connect()` calls are
/// served here under those rules (`connect_broker.rs`). Returns the command's exit status (or
/// dies by the same signal as the command).
pub(crate) fn run(
    agent: i32,
    tree: ProcessTree,
    stage_two: &[OsString],
    sockets: Option<SocketRules>,
) -> ExitCode {
    // No controlling terminal for anything the command starts: a terminal is a way to type into
    // the user's shell (TIOCSTI). Fails only if we already lead a session, which the runner never
    // arranges.
    let _ = rustix::process::setsid();
    // Blocked before the death signal is armed: its default action would kill us, tree and all.
    let signals = SignalSet::block(&WATCHED, tree);
    let me = rustix::process::getpid();
    let mut containment = match Containment::prepare(tree, agent, AGENT_DIED, me) {
        Ok(containment) => containment,
        Err(err) => return fail(SETUP_FAILURE_CODE, &format!("{SETUP_FAILURE_PREFIX}{err}")),
    };
    let child = match spawn_stage_two(&containment, stage_two, sockets) {
        Ok(child) => child.id(),
        Err(err) => return fail(SETUP_FAILURE_CODE, &format!("{SETUP_FAILURE_PREFIX}{err}")),
    };
    let child = i32::try_from(child).ok().and_then(Pid::from_raw);
    containment.started(child);
    let mut status = None;
    let mut kill_at: Option<Instant> = None;
    loop {
        let mut wait = kill_at.map_or(Duration::from_secs(1), |at| {
            at.saturating_duration_since(Instant::now())
        });
        if containment.polls_parent() {
            wait = wait.min(PARENT_POLL);
        }
        let pending = all_pending(&signals, wait);
        let asked_to_stop = pending
            .iter()
            .any(|s| *s == Signal::TERM || *s == Signal::INT || *s == Signal::HUP);
        if asked_to_stop && kill_at.is_none() {
            containment.signal(Signal::TERM);
            kill_at = Some(Instant::now() + KILL_GRACE);
        }
        if pending.contains(&KILL_NOW) {
            break;
        }
        // The death signal also fires when only the agent's thread that spawned us exits (we
        // are then handed to another of its threads): the agent is gone only once we were
        // reparented outside it. A TERM already under way runs its course.
        let maybe_orphaned = pending.contains(&AGENT_DIED) || containment.polls_parent();
        if maybe_orphaned && kill_at.is_none() && !parent_is(agent) {
            break;
        }
        contain::reap(child, &mut status, WaitOptions::NOHANG);
        if kill_at.is_some_and(|at| Instant::now() >= at) {
            break;
        }
        // The command is done. Left-overs are killed at once, unless we are stopping it: then
        // they keep the rest of their 2 s to clean up after the TERM (or until none is left).
        if status.is_some() && (kill_at.is_none() || containment.is_empty()) {
            break;
        }
    }
    containment.kill_all(child, &mut status);
    exit_like(status)
}

/// The signals the supervisor waits for: asked to stop, to kill now, the agent's death, a child
/// changed state.
const WATCHED: [Signal; 6] = [
    Signal::TERM,
    Signal::INT,
    Signal::HUP,
    KILL_NOW,
    AGENT_DIED,
    Signal::CHILD,
];

/// Waits up to `wait` for a signal, then takes everything pending at once: `sigtimedwait` hands
/// out the lowest signal number first, and the agent's death (SIGUSR2, 12) must not overtake the
/// TERM it sent just before exiting (SIGTERM, 15) at EOF.
fn all_pending(signals: &SignalSet, wait: Duration) -> Vec<Signal> {
    let mut pending = Vec::new();
    if let Some(first) = signals.wait(wait) {
        pending.push(first);
        while let Some(more) = signals.wait(Duration::ZERO) {
            pending.push(more);
        }
    }
    pending
}

/// Starts the second stage, and the connect broker for it when there are socket rules.
fn spawn_stage_two(
    containment: &Containment,
    stage_two: &[OsString],
    sockets: Option<SocketRules>,
) -> Result<std::process::Child, String> {
    let mut command = std::process::Command::new(this_executable());
    let broker = with_broker(&mut command, stage_two, sockets)?;
    containment.configure(&mut command);
    // The child inherits our signal mask; it empties it itself (`unblock_all_signals`).
    let spawned = command.spawn();
    // Our copy of the child's end closes now: if the child dies before sending its listener,
    // the broker sees the channel end instead of waiting for ever.
    #[cfg(target_os = "linux")]
    if let Some((ours, theirs, rules)) = broker {
        drop(theirs);
        connect_broker::start(ours, rules);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = broker;
    spawned.map_err(|err| format!("cannot start the command: {err}"))
}

/// The broker's channel, when there are socket rules: ours, the child's end, the rules.
#[cfg(target_os = "linux")]
type Broker = Option<(std::os::fd::OwnedFd, std::os::fd::OwnedFd, SocketRules)>;
#[cfg(not(target_os = "linux"))]
type Broker = Option<std::convert::Infallible>;

/// Adds `stage_two` to `command`, with the broker channel's descriptor when `sockets` is given.
#[cfg(target_os = "linux")]
fn with_broker(
    command: &mut std::process::Command,
    stage_two: &[OsString],
    sockets: Option<SocketRules>,
) -> Result<Broker, String> {
    use std::os::fd::AsRawFd;
    let Some(rules) = sockets else {
        command.args(stage_two);
        return Ok(None);
    };
    let (ours, theirs) = connect_broker::channel()
        .map_err(|err| format!("cannot create the connect broker's channel: {err}"))?;
    let (head, tail) = stage_two.split_at(1.min(stage_two.len()));
    command
        .args(head)
        .arg(BROKER_FD_ARG)
        .arg(theirs.as_raw_fd().to_string())
        .args(tail);
    Ok(Some((ours, theirs, rules)))
}

#[cfg(not(target_os = "linux"))]
fn with_broker(
    command: &mut std::process::Command,
    stage_two: &[OsString],
    sockets: Option<SocketRules>,
) -> Result<Broker, String> {
    command.args(stage_two);
    Ok(sockets.map(|never| match never {}))
}

/// This very binary, even if it was replaced or deleted since the agent started (an upgrade),
/// where the system can name it so.
fn this_executable() -> std::path::PathBuf {
    #[cfg(target_os = "linux")]
    let exe = std::path::PathBuf::from("/proc/self/exe");
    #[cfg(not(target_os = "linux"))]
    let exe = std::env::current_exe().unwrap_or_else(|_| std::path::PathBuf::from("ferrite"));
    exe
}

fn parent_is(pid: i32) -> bool {
    rustix::process::getppid().is_some_and(|ppid| ppid.as_raw_nonzero().get() == pid)
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
        // SAFETY: plain `sigset_t` values on our stack; the calls touch them and our own mask;
        // `raise` only sends a signal to ourselves.
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
    // SAFETY: plain `sigset_t` values on our stack; the calls touch them and our own mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::pthread_sigmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
    }
}
