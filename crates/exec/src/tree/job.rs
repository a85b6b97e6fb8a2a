//! Windows: the command's process tree is a job object. Every process the shell starts joins the
//! job (unless it explicitly breaks away, which a job without `JOB_OBJECT_LIMIT_BREAKAWAY_OK`
//! refuses), and terminating the job kills all of them. The job is created with
//! `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`, so when the agent dies, the kernel closes its handle and
//! kills the tree: no supervisor process is needed.
//!
//! Windows has no SIGTERM: cancel and timeout terminate at once, without the 2 s grace period.
//! The shell is assigned to the job right after it was spawned; a process it starts in that
//! instant, before the assignment, escapes (std cannot start a process suspended).

// Why unsafe: job objects exist only as Win32 calls. Each call gets a handle we own (the job, or
// the child's process handle that tokio keeps open until the child is dropped) and a limit
// structure on our stack.
#![allow(unsafe_code)]

use std::ffi::c_void;

use tokio::process::Child;
use windows_sys::Win32::Foundation::CloseHandle;
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JobObjectExtendedLimitInformation,
    SetInformationJobObject, TerminateJobObject,
};

/// The exit code every process of a terminated job gets (as when killed with `taskkill /F`).
const KILLED: u32 = 1;

pub(crate) struct Tree {
    /// The job's handle, as an address so the tree can move between threads (a raw pointer is
    /// not `Send`); `None` when no job could be made (then only the shell itself is killed).
    job: Option<usize>,
    /// The shell's process id, for the fallback.
    pid: Option<u32>,
}

impl Tree {
    pub(crate) fn new(child: &Child) -> Self {
        let job = child.raw_handle().and_then(|process| {
            let job = create_job()?;
            // SAFETY: both handles are open: the job was just created, the process handle is
            // owned by `child`, which outlives this call.
            let assigned = unsafe { AssignProcessToJobObject(job as _, process as _) } != 0;
            if assigned {
                Some(job)
            } else {
                tracing::warn!(
                    err = %std::io::Error::last_os_error(),
                    "could not put the command in a job object; only the shell itself can be killed"
                );
                close(job);
                None
            }
        });
        Tree {
            job,
            pid: child.id(),
        }
    }

    /// Cancel, timeout, close, EOF: every process of the job, at once (no TERM on Windows).
    pub(crate) fn terminate(&self) {
        self.kill();
    }

    /// The output cap was reached.
    pub(crate) fn kill_now(&self) {
        self.kill();
    }

    /// Last resort when the shell does not exit after being killed.
    pub(crate) fn kill_supervisor(&self) {
        self.kill();
    }

    /// The shell exited: what it left behind in the job dies now, as the Unix supervisor kills
    /// the command's left-overs when the command ends; the pipes then close.
    pub(crate) fn disarm(&mut self) {
        self.kill();
        if let Some(job) = self.job.take() {
            close(job);
        }
        self.pid = None;
    }

    fn kill(&self) {
        match self.job {
            Some(job) => {
                // SAFETY: `job` is a handle we own and have not closed.
                if unsafe { TerminateJobObject(job as _, KILLED) } == 0 {
                    tracing::debug!(err = %std::io::Error::last_os_error(), "terminating the command's job failed");
                }
            }
            None => {
                if let Some(pid) = self.pid {
                    tracing::debug!(pid, "no job object: the command's children may survive");
                }
            }
        }
    }
}

impl Drop for Tree {
    /// The run was dropped (turn cancelled, session closed): the whole job dies with its handle.
    fn drop(&mut self) {
        self.kill();
        if let Some(job) = self.job.take() {
            close(job);
        }
    }
}

/// A new job whose processes all die when its last handle closes.
fn create_job() -> Option<usize> {
    // SAFETY: null name and attributes ask for an anonymous job with default security; `limits`
    // lives on our stack across the call, and its size is passed with it.
    unsafe {
        let job = CreateJobObjectW(std::ptr::null(), std::ptr::null());
        if job.is_null() {
            return None;
        }
        let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = std::mem::zeroed();
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        let set = SetInformationJobObject(
            job,
            JobObjectExtendedLimitInformation,
            (&limits as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast::<c_void>(),
            u32::try_from(std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>())
                .unwrap_or(u32::MAX),
        );
        if set == 0 {
            CloseHandle(job);
            return None;
        }
        Some(job as usize)
    }
}

fn close(job: usize) {
    // SAFETY: called once per job handle we own.
    unsafe {
        CloseHandle(job as _);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Compiled and run by CI on Windows only.
    #[tokio::test]
    async fn terminating_the_job_kills_the_shell_and_what_it_started() {
        let mut child = tokio::process::Command::new("cmd")
            .args([
                "/C",
                "start /B ping -n 60 127.0.0.1 >NUL & ping -n 60 127.0.0.1 >NUL",
            ])
            .spawn()
            .unwrap();
        let tree = Tree::new(&child);
        assert!(tree.job.is_some(), "the shell is in a job");
        tree.terminate();
        let status = tokio::time::timeout(Duration::from_secs(5), child.wait())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(status.code(), Some(i32::try_from(KILLED).unwrap()));
    }
}
