//! On Unix the agent's handle on one command's supervisor (see `supervisor.rs`), which owns the
//! command's whole process tree. The agent never signals the tree itself: the supervisor does,
//! and it is the only one that can find every process (`setsid`, double forks) and outlive the
//! agent long enough to finish the job.

use rustix::process::{Pid, Signal, kill_process};

/// The signal the agent sends to kill the tree at once (the output cap was reached).
pub(crate) const KILL_NOW: Signal = Signal::USR1;

pub(crate) struct Tree {
    supervisor: Option<Pid>,
}

impl Tree {
    pub(crate) fn new(supervisor: &tokio::process::Child) -> Self {
        let supervisor = supervisor
            .id()
            .and_then(|pid| i32::try_from(pid).ok())
            .and_then(Pid::from_raw);
        Tree { supervisor }
    }

    /// TERM to every process of the tree, KILL 2 s later (cancel, timeout, close, EOF).
    pub(crate) fn terminate(&self) {
        self.signal(Signal::TERM);
    }

    /// Every process of the tree killed at once (the output cap was reached).
    pub(crate) fn kill_now(&self) {
        self.signal(KILL_NOW);
    }

    /// Last resort when the supervisor itself does not exit: the command's own process dies
    /// with it (`PR_SET_PDEATHSIG`), anything else of the tree may survive.
    pub(crate) fn kill_supervisor(&self) {
        self.signal(Signal::KILL);
    }

    /// Forgets the supervisor once it has been reaped, so that a later drop does not signal a pid
    /// the kernel may since have handed to someone else.
    pub(crate) fn disarm(&mut self) {
        self.supervisor = None;
    }

    fn signal(&self, signal: Signal) {
        if let Some(pid) = self.supervisor
            && let Err(err) = kill_process(pid, signal)
            && err != rustix::io::Errno::SRCH
        {
            tracing::debug!(pid = pid.as_raw_nonzero().get(), %err, "signalling the command's supervisor failed");
        }
    }
}

impl Drop for Tree {
    /// The future running the command was dropped (turn cancelled, session closed, agent shutting
    /// down): the usual TERM, then KILL after 2 s, carried out by the supervisor without us.
    fn drop(&mut self) {
        self.terminate();
    }
}
