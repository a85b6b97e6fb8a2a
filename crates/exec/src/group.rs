//! Signalling a command's whole process group, so that background grandchildren (`sleep 100 &`)
//! die with the command instead of being reparented to init and living on.

use rustix::process::{Pid, Signal, kill_process_group};

/// The process group of one command (its leader was spawned with `process_group(0)`, so the
/// group id is the leader's pid). Dropping it while still armed SIGKILLs the group: if the
/// future running the command is dropped (session closed, agent shutting down), nothing of the
/// command survives it. `kill_on_drop` alone would only reach the leader.
pub(crate) struct ProcessGroup {
    pgid: Option<Pid>,
}

impl ProcessGroup {
    pub(crate) fn new(leader_pid: Option<u32>) -> Self {
        let pgid = leader_pid
            .and_then(|pid| i32::try_from(pid).ok())
            .and_then(Pid::from_raw);
        ProcessGroup { pgid }
    }

    /// Asks every process of the group to stop (the first step of cancel and timeout).
    pub(crate) fn terminate(&self) {
        self.signal(Signal::TERM);
    }

    /// Kills every process of the group. Errors are ignored: `ESRCH` just means the group is
    /// already empty.
    pub(crate) fn kill(&self) {
        self.signal(Signal::KILL);
    }

    /// Forgets the group once the command is over and its group was killed, so that a later
    /// drop does not signal a group id the kernel may since have handed to someone else.
    pub(crate) fn disarm(&mut self) {
        self.pgid = None;
    }

    fn signal(&self, signal: Signal) {
        if let Some(pgid) = self.pgid
            && let Err(err) = kill_process_group(pgid, signal)
            && err != rustix::io::Errno::SRCH
        {
            tracing::debug!(pgid = pgid.as_raw_nonzero().get(), %err, "signalling the process group failed");
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}
