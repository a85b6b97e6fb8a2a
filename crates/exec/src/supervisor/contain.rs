//! Finding and killing every process of the command's tree, one way per [`ProcessTree`]:
//!
//! - `Subreaper` (Linux): we are a child subreaper, so every process the command starts stays
//!   below us whatever it does; `/proc`'s parent links find them all.
//! - `ProcessGroup` (macOS, the BSDs; selectable on Linux): the command leads a process group of
//!   its own and everything it starts inherits it; the group is signalled as a whole. A process
//!   that calls `setsid` or `setpgid` leaves it (a documented limit of this mode), and orphans go
//!   to init, not to us.

use std::process::Command;
use std::time::Duration;

use rustix::io::Errno;
use rustix::process::{Pid, Signal, WaitOptions, WaitStatus};

use crate::platform::ProcessTree;

pub(super) struct Containment {
    tree: ProcessTree,
    /// The supervisor: the root of the tree in subreaper mode.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    me: Pid,
    /// The command's process group (its own pid) in process-group mode, once started.
    group: Option<Pid>,
}

impl Containment {
    /// Sets this process up to contain a tree: in subreaper mode it dies with the agent
    /// (`died` when it does) and adopts orphans; in process-group mode nothing is needed.
    pub(super) fn prepare(
        tree: ProcessTree,
        agent: i32,
        died: Signal,
        me: Pid,
    ) -> Result<Self, String> {
        match tree {
            #[cfg(target_os = "linux")]
            ProcessTree::Subreaper => {
                rustix::process::set_parent_process_death_signal(Some(died))
                    .map_err(|err| format!("prctl(PR_SET_PDEATHSIG) failed: {err}"))?;
                if !super::parent_is(agent) {
                    return Err("the process that started the command is gone".to_owned());
                }
                rustix::process::set_child_subreaper(Some(me))
                    .map_err(|err| format!("prctl(PR_SET_CHILD_SUBREAPER) failed: {err}"))?;
            }
            ProcessTree::ProcessGroup => {
                let _ = died;
                if !super::parent_is(agent) {
                    return Err("the process that started the command is gone".to_owned());
                }
            }
        }
        Ok(Containment {
            tree,
            me,
            group: None,
        })
    }

    /// How the command's first process must be started.
    pub(super) fn configure(&self, command: &mut Command) {
        match self.tree {
            #[cfg(target_os = "linux")]
            ProcessTree::Subreaper => {}
            ProcessTree::ProcessGroup => {
                use std::os::unix::process::CommandExt;
                command.process_group(0);
            }
        }
    }

    pub(super) fn started(&mut self, child: Option<Pid>) {
        self.group = child;
    }

    /// Whether the supervisor must look for the agent's death itself (no death signal).
    pub(super) fn polls_parent(&self) -> bool {
        match self.tree {
            #[cfg(target_os = "linux")]
            ProcessTree::Subreaper => false,
            ProcessTree::ProcessGroup => true,
        }
    }

    /// Sends `signal` to every process of the tree.
    pub(super) fn signal(&self, signal: Signal) {
        match self.tree {
            #[cfg(target_os = "linux")]
            ProcessTree::Subreaper => {
                for pid in descendants(self.me) {
                    // ESRCH: it exited meanwhile.
                    let _ = rustix::process::kill_process(pid, signal);
                }
            }
            ProcessTree::ProcessGroup => {
                if let Some(group) = self.group {
                    let _ = rustix::process::kill_process_group(group, signal);
                }
            }
        }
    }

    /// Whether no process of the tree is left (other than our unreaped child). In process-group
    /// mode a killed orphan counts until init reaps it: where init is slow to (some containers),
    /// a stopped command's tree is waited for until the end of its 2 s grace.
    pub(super) fn is_empty(&self) -> bool {
        match self.tree {
            #[cfg(target_os = "linux")]
            ProcessTree::Subreaper => descendants(self.me).is_empty(),
            ProcessTree::ProcessGroup => self.group.is_none_or(group_gone),
        }
    }

    /// SIGKILLs every process of the tree until none is left, reaping the command.
    pub(super) fn kill_all(&self, child: Option<Pid>, status: &mut Option<WaitStatus>) {
        match self.tree {
            #[cfg(target_os = "linux")]
            ProcessTree::Subreaper => self.kill_descendants(child, status),
            ProcessTree::ProcessGroup => self.kill_group(child, status),
        }
    }

    /// Waiting for one child at a time and walking the tree again catches processes forked
    /// while we were killing: once we have no child left, we have no descendant left (orphans
    /// are reparented to us).
    #[cfg(target_os = "linux")]
    fn kill_descendants(&self, child: Option<Pid>, status: &mut Option<WaitStatus>) {
        loop {
            self.signal(Signal::KILL);
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

    /// Kills the group three times, a few milliseconds apart: a process forking while a KILL is
    /// delivered can add a member the previous one missed. Not until the group is empty: killed
    /// orphans stay members as zombies until init reaps them, which some containers' init never
    /// does. Dead processes hold no pipes, so the runner sees the end of the output all the same.
    fn kill_group(&self, child: Option<Pid>, status: &mut Option<WaitStatus>) {
        let Some(group) = self.group else {
            return;
        };
        for _ in 0..3 {
            let _ = rustix::process::kill_process_group(group, Signal::KILL);
            reap(child, status, WaitOptions::NOHANG);
            std::thread::sleep(Duration::from_millis(5));
        }
        if status.is_none() {
            // The command was just killed: its exit is a moment away.
            reap(child, status, WaitOptions::empty());
        }
    }
}

/// Whether no process is left in `group` (a signal 0 finds nobody).
fn group_gone(group: Pid) -> bool {
    rustix::process::test_kill_process_group(group) == Err(Errno::SRCH)
}

/// Reaps every child that has exited (the command, or orphans reparented to us), keeping the
/// command's status. (`wait`, i.e. `waitpid(-1)`: rustix's `waitpid(None)` is `waitpid(0)`,
/// which skips children in another process group — exactly the ones that called `setsid`.)
pub(super) fn reap(child: Option<Pid>, status: &mut Option<WaitStatus>, options: WaitOptions) {
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

#[cfg(target_os = "linux")]
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

#[cfg(target_os = "linux")]
/// The parent pid in `/proc/<pid>/stat` (the field after the state, which follows the
/// parenthesised command name — itself free to contain spaces and parentheses).
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}
