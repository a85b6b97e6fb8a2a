//! Signals blocked for the (single-threaded) supervisor and received synchronously.
//!
//! Two ways to wait for them with a timeout: `sigtimedwait` (Linux) and, where it does not exist
//! (macOS), polling `sigpending` and taking a pending one with `sigwait`. The process-group mode
//! uses the portable one on every system, so Linux tests exercise macOS's path.

use std::time::{Duration, Instant};

use rustix::process::Signal;

use crate::platform::ProcessTree;

/// How long the portable wait sleeps between looks at the pending set: the latency it adds to a
/// cancel, against waking a sleeping supervisor 50 times a second for as long as a command runs.
const POLL: Duration = Duration::from_millis(20);

pub(super) struct SignalSet {
    /// Only `sigtimedwait` takes the whole set.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    set: libc::sigset_t,
    signals: Vec<Signal>,
    tree: ProcessTree,
}

impl SignalSet {
    pub(super) fn block(signals: &[Signal], tree: ProcessTree) -> Self {
        // SAFETY: `set` is a plain value initialised by `sigemptyset` before use; the calls only
        // touch it and the calling thread's mask.
        let set = unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for signal in signals {
                libc::sigaddset(&mut set, signal.as_raw());
            }
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            set
        };
        SignalSet {
            set,
            signals: signals.to_vec(),
            tree,
        }
    }

    /// The next pending signal of the set, or `None` after `timeout` (or on EINTR).
    pub(super) fn wait(&self, timeout: Duration) -> Option<Signal> {
        match self.tree {
            #[cfg(target_os = "linux")]
            ProcessTree::Subreaper => self.timed_wait(timeout),
            ProcessTree::ProcessGroup => self.polled_wait(timeout),
        }
    }

    #[cfg(target_os = "linux")]
    fn timed_wait(&self, timeout: Duration) -> Option<Signal> {
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

    fn polled_wait(&self, timeout: Duration) -> Option<Signal> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(signal) = self.take_pending() {
                return Some(signal);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            std::thread::sleep(left.min(POLL));
        }
    }

    /// Takes the lowest-numbered pending signal of the set (as `sigtimedwait` does), if any.
    fn take_pending(&self) -> Option<Signal> {
        // SAFETY: `pending` and `one` are plain values on our stack, initialised by
        // `sigpending`/`sigemptyset` before they are read; `sigwait` returns at once because the
        // signal it waits for is pending and blocked.
        unsafe {
            let mut pending: libc::sigset_t = std::mem::zeroed();
            if libc::sigpending(&mut pending) != 0 {
                return None;
            }
            let mut ours: Vec<Signal> = self
                .signals
                .iter()
                .copied()
                .filter(|s| libc::sigismember(&pending, s.as_raw()) == 1)
                .collect();
            ours.sort_by_key(|s| s.as_raw());
            let signal = *ours.first()?;
            let mut one: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut one);
            libc::sigaddset(&mut one, signal.as_raw());
            let mut got: libc::c_int = 0;
            if libc::sigwait(&one, &mut got) != 0 {
                return None;
            }
            Some(signal)
        }
    }
}
