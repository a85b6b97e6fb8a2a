//! Background commands: `bash` with `background: true` starts a command that outlives the call
//! (a dev server, a watch build) and returns its id at once; `bash_output` reads what it wrote
//! since the last read and `bash_kill` stops it.
//!
//! A session owns its [`BackgroundJobs`]; the commands run through the same runner, sandbox and
//! process-tree supervision as any command (`CommandRunner::run`), and every one is stopped
//! (TERM, then KILL) when the session closes, at EOF and when the agent exits
//! ([`BackgroundJobs::stop_all`]). Output goes to the runner's spill file, in a directory of
//! the job's own, and is read from there in bounded pieces: a command that floods output costs
//! disk, not memory.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::exec::{CommandRunner, CommandSpec, Exit};
use crate::spill_budget::SpillBudget;

/// The most one `bash_output` returns; the rest waits for the next read.
pub const READ_MAX_BYTES: u64 = 32 * 1024;
/// How long a background command may run: until the session ends, within this bound.
pub const BACKGROUND_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);
/// How long stopping waits for a command's processes to go (the runner sends TERM, then KILL
/// after 2 s); within a session close's grace (`runtime::timing::CLOSE_GRACE`).
const STOP_WAIT: Duration = Duration::from_secs(3);

/// A session's background commands.
#[derive(Clone, Default)]
pub struct BackgroundJobs(Arc<Mutex<Jobs>>);

#[derive(Default)]
struct Jobs {
    next: u32,
    by_id: BTreeMap<String, Job>,
    /// Signalled when a command ends, so an idle session tells the user at once.
    ended: Arc<tokio::sync::Notify>,
    /// The session's budget for all spilled output, made on first use.
    spill_budget: Option<SpillBudget>,
}

/// Ended commands a session remembers (for `bash_output`) beyond its running ones; the oldest
/// that were already reported are forgotten, their output removed, as new ones start.
pub const MAX_ENDED_JOBS: usize = 32;

struct Job {
    command: String,
    /// The job's own directory: the runner writes its one output file there.
    dir: PathBuf,
    /// Bytes of output already returned by `bash_output`.
    read: u64,
    cancel: CancellationToken,
    state: Arc<Mutex<State>>,
    task: Option<JoinHandle<()>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    Running,
    /// How it ended, in words (`ok`: exit code 0); `told` once the model heard of it, `shown`
    /// once the user did (an idle session shows it at once, the model hears at the next turn).
    Ended {
        how: String,
        ok: bool,
        told: bool,
        shown: bool,
    },
}

/// Who is told of a command's end.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Audience {
    Model,
    User,
}

/// A background command that ended and the model (or the user) was not told of yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    pub id: String,
    pub command: String,
    pub how: String,
    /// It exited with code 0.
    pub ok: bool,
    /// The user was shown it already.
    pub shown: bool,
}

/// What `bash_output` reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    pub output: String,
    /// More output is waiting beyond this piece.
    pub more: bool,
    /// `None` while the command runs.
    pub ended: Option<String>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl BackgroundJobs {
    /// The session's one budget for spilled output, foreground and background alike: made on
    /// the first call for `root` (the session's spill directory) with `max` bytes.
    pub fn spill_budget(&self, root: &Path, max: u64) -> SpillBudget {
        lock(&self.0)
            .spill_budget
            .get_or_insert_with(|| SpillBudget::new(root.to_owned(), max))
            .clone()
    }

    /// Whether the session knows a background command (running, or ended and still readable):
    /// until then `bash_output` and `bash_kill` have nothing to act on and are not offered.
    pub fn any(&self) -> bool {
        !lock(&self.0).by_id.is_empty()
    }

    /// Starts `spec` in the background; its id, or why not (`max` already run).
    pub fn start(
        &self,
        runner: Arc<dyn CommandRunner>,
        mut spec: CommandSpec,
        max: usize,
    ) -> Result<String, String> {
        let mut jobs = lock(&self.0);
        let running = jobs
            .by_id
            .values()
            .filter(|j| *lock(&j.state) == State::Running)
            .count();
        if running >= max {
            return Err(format!(
                "{running} background commands are running, the most this session allows \
                 (`tools.max_background_commands`); stop one with bash_kill first."
            ));
        }
        jobs.forget_oldest_ended();
        jobs.next += 1;
        let id = format!("bg-{}", jobs.next);
        // Ids start again at bg-1 when a session is opened again: the directory is new each
        // time (created, never reused), so a read never finds an earlier run's output.
        crate::private_fs::create_dir_all(&spec.spill_dir)
            .map_err(|e| format!("cannot create the output directory: {e}"))?;
        let dir = new_dir(&spec.spill_dir, &id)
            .map_err(|e| format!("cannot create the output directory: {e}"))?;
        spec.spill_dir = dir.clone();
        spec.timeout = BACKGROUND_TIMEOUT;
        let command = spec.command.clone();
        let cancel = CancellationToken::new();
        let state = Arc::new(Mutex::new(State::Running));
        let task = tokio::spawn({
            let (cancel, state, signal) = (cancel.clone(), state.clone(), jobs.ended.clone());
            async move {
                let quiet = |_: &str| {};
                let (how, ok) = match runner.run(spec, cancel, &quiet).await {
                    Ok(out) => (ending(&out.exit), out.exit == Exit::Code(0)),
                    Err(e) => (format!("could not run: {e}"), false),
                };
                *lock(&state) = State::Ended {
                    how,
                    ok,
                    told: false,
                    shown: false,
                };
                signal.notify_one();
            }
        });
        jobs.by_id.insert(
            id.clone(),
            Job {
                command,
                dir,
                read: 0,
                cancel,
                state,
                task: Some(task),
            },
        );
        Ok(id)
    }

    /// The output of `id` written since the last read (at most [`READ_MAX_BYTES`]).
    pub fn read(&self, id: &str) -> Result<Piece, String> {
        let mut jobs = lock(&self.0);
        let known = jobs.by_id.keys().cloned().collect::<Vec<_>>();
        let job = jobs.by_id.get_mut(id).ok_or_else(|| unknown(id, &known))?;
        // Read the state first: output written before the end is then all in the file.
        let ended = match &mut *lock(&job.state) {
            State::Running => None,
            State::Ended {
                how, told, shown, ..
            } => {
                (*told, *shown) = (true, true);
                Some(how.clone())
            }
        };
        if !job.dir.exists() {
            return Ok(Piece {
                output: "[ferrite: this command's output was removed to keep the session within \
                         `tools.spill_max_bytes`]"
                    .to_owned(),
                more: false,
                ended,
            });
        }
        let (bytes, more) = match output_file(&job.dir) {
            Some(path) => read_from(&path, job.read)
                .map_err(|e| format!("cannot read the output of {id}: {e}"))?,
            None => (Vec::new(), false),
        };
        job.read += bytes.len() as u64;
        Ok(Piece {
            output: crate::ansi::strip(&String::from_utf8_lossy(&bytes)),
            more,
            ended,
        })
    }

    /// Stops `id` (TERM, then KILL) and says how it ended.
    pub async fn kill(&self, id: &str) -> Result<String, String> {
        let (cancel, task, state) = {
            let mut jobs = lock(&self.0);
            let known = jobs.by_id.keys().cloned().collect::<Vec<_>>();
            let job = jobs.by_id.get_mut(id).ok_or_else(|| unknown(id, &known))?;
            (job.cancel.clone(), job.task.take(), job.state.clone())
        };
        cancel.cancel();
        if let Some(task) = task {
            let _ = tokio::time::timeout(STOP_WAIT, task).await;
        }
        let mut state = lock(&state);
        Ok(match &mut *state {
            State::Ended {
                how, told, shown, ..
            } => {
                (*told, *shown) = (true, true);
                how.clone()
            }
            State::Running => "still stopping".to_owned(),
        })
    }

    /// The commands that ended and the model was not told of, marked told (and shown).
    pub fn take_ended(&self) -> Vec<Ended> {
        self.take(Audience::Model)
    }

    /// The commands that ended and the user was not shown, marked shown: the model is told
    /// at its next turn ([`Self::take_ended`]).
    pub fn take_unshown(&self) -> Vec<Ended> {
        self.take(Audience::User)
    }

    fn take(&self, audience: Audience) -> Vec<Ended> {
        let jobs = lock(&self.0);
        let mut out = Vec::new();
        for (id, job) in &jobs.by_id {
            let mut state = lock(&job.state);
            let State::Ended {
                how,
                ok,
                told,
                shown,
            } = &mut *state
            else {
                continue;
            };
            let new = match audience {
                Audience::Model => !*told,
                Audience::User => !*shown,
            };
            if !new {
                continue;
            }
            out.push(Ended {
                id: id.clone(),
                command: job.command.clone(),
                how: how.clone(),
                ok: *ok,
                shown: *shown,
            });
            *shown = true;
            *told |= audience == Audience::Model;
        }
        out
    }

    /// Waits until a command ends (at once if one ended since the last wait).
    pub async fn ended(&self) {
        let signal = lock(&self.0).ended.clone();
        signal.notified().await;
    }

    /// Stops every command and waits (bounded) until their processes are gone.
    pub async fn stop_all(&self) {
        let tasks: Vec<JoinHandle<()>> = {
            let mut jobs = lock(&self.0);
            jobs.by_id
                .values_mut()
                .filter_map(|j| {
                    j.cancel.cancel();
                    j.task.take()
                })
                .collect()
        };
        let _ = tokio::time::timeout(STOP_WAIT, futures::future::join_all(tasks)).await;
    }
}

impl Jobs {
    /// Forgets the oldest ended commands that were reported, beyond [`MAX_ENDED_JOBS`], and
    /// removes their output: a long session does not keep every command it ever ran.
    fn forget_oldest_ended(&mut self) {
        let reported = |job: &Job| matches!(*lock(&job.state), State::Ended { told: true, .. });
        let mut ended: Vec<(u32, String)> = self
            .by_id
            .iter()
            .filter(|(_, job)| reported(job))
            .map(|(id, _)| (job_number(id), id.clone()))
            .collect();
        if ended.len() < MAX_ENDED_JOBS {
            return;
        }
        ended.sort();
        for (_, id) in &ended[..=ended.len() - MAX_ENDED_JOBS] {
            if let Some(job) = self.by_id.remove(id) {
                let _ = std::fs::remove_dir_all(&job.dir);
            }
        }
    }
}

/// The number in `bg-N` (ids sort as text otherwise: `bg-10` before `bg-9`).
fn job_number(id: &str) -> u32 {
    id.trim_start_matches("bg-").parse().unwrap_or(0)
}

impl Drop for Jobs {
    /// A session that goes away without [`BackgroundJobs::stop_all`] still stops its commands:
    /// the runner kills a command's processes when its run is cancelled or dropped.
    fn drop(&mut self) {
        for job in self.by_id.values() {
            job.cancel.cancel();
        }
    }
}

/// A directory for one command's output that did not exist before (`bg-1`, else `bg-1.2`, ...).
fn new_dir(parent: &Path, id: &str) -> std::io::Result<PathBuf> {
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    for n in 0..1000u32 {
        let dir = match n {
            0 => parent.join(id),
            n => parent.join(format!("{id}.{n}")),
        };
        match builder.create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(
        "too many output directories of that name",
    ))
}

fn unknown(id: &str, known: &[String]) -> String {
    if known.is_empty() {
        format!("no background command {id:?}: none was started in this session.")
    } else {
        format!(
            "no background command {id:?}; this session's are {}.",
            known.join(", ")
        )
    }
}

fn ending(exit: &Exit) -> String {
    match exit {
        Exit::Code(c) => format!("exited with code {c}"),
        Exit::Signal(s) => format!("was killed by signal {s}"),
        Exit::TimedOut => "ran too long and was killed".to_owned(),
        Exit::Cancelled => "was stopped".to_owned(),
    }
}

/// The runner's output file in a job's directory (it creates exactly one, once it starts).
fn output_file(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.is_file())
}

/// At most [`READ_MAX_BYTES`] from `offset`, cut at a line end when one is near, and whether
/// more follows.
fn read_from(path: &Path, offset: u64) -> std::io::Result<(Vec<u8>, bool)> {
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    if offset >= len {
        return Ok((Vec::new(), false));
    }
    f.seek(SeekFrom::Start(offset))?;
    let mut buf = Vec::new();
    f.take(READ_MAX_BYTES).read_to_end(&mut buf)?;
    let more = offset + (buf.len() as u64) < len;
    if more && let Some(nl) = buf.iter().rposition(|b| *b == b'\n') {
        buf.truncate(nl + 1);
    }
    Ok((buf, more))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_command_gets_a_directory_no_earlier_run_used() {
        let dir = tempfile::tempdir().unwrap();
        let a = new_dir(dir.path(), "bg-1").unwrap();
        std::fs::write(a.join("old.out"), "earlier").unwrap();
        let b = new_dir(dir.path(), "bg-1").unwrap();
        assert_ne!(a, b);
        assert!(
            output_file(&b).is_none(),
            "the new command's directory is empty"
        );
        // A link planted under the name is not used either.
        #[cfg(unix)]
        std::os::unix::fs::symlink("/tmp", dir.path().join("bg-2")).unwrap();
        #[cfg(not(unix))]
        std::fs::create_dir(dir.path().join("bg-2")).unwrap();
        let c = new_dir(dir.path(), "bg-2").unwrap();
        assert_eq!(c, dir.path().join("bg-2.1"));
    }

    #[test]
    fn reads_come_in_bounded_pieces_cut_at_a_line_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let line = "x".repeat(99) + "\n";
        std::fs::write(&path, line.repeat(1000)).unwrap();
        let (first, more) = read_from(&path, 0).unwrap();
        assert!(more && first.len() as u64 <= READ_MAX_BYTES && first.ends_with(b"\n"));
        let (rest, more) = read_from(&path, first.len() as u64).unwrap();
        assert!(!more || rest.len() as u64 <= READ_MAX_BYTES);
        let (none, more) = read_from(&path, 100_000).unwrap();
        assert!(none.is_empty() && !more);
    }

    #[test]
    fn ended_commands_past_the_count_are_forgotten_with_their_output() {
        let dir = tempfile::tempdir().unwrap();
        let mut jobs = Jobs::default();
        let total = MAX_ENDED_JOBS + 5;
        for n in 1..=total {
            let id = format!("bg-{n}");
            let job_dir = new_dir(dir.path(), &id).unwrap();
            // The last one is still running; one ended unreported.
            let state = match n {
                n if n == total => State::Running,
                2 => State::Ended {
                    how: "done".into(),
                    ok: true,
                    told: false,
                    shown: false,
                },
                _ => State::Ended {
                    how: "done".into(),
                    ok: true,
                    told: true,
                    shown: true,
                },
            };
            jobs.by_id.insert(
                id,
                Job {
                    command: "true".into(),
                    dir: job_dir,
                    read: 0,
                    cancel: CancellationToken::new(),
                    state: Arc::new(Mutex::new(state)),
                    task: None,
                },
            );
        }
        jobs.forget_oldest_ended();
        // Room for the next one: MAX_ENDED_JOBS - 1 reported ones stay, the newest.
        let kept_reported = jobs
            .by_id
            .values()
            .filter(|j| matches!(*lock(&j.state), State::Ended { told: true, .. }))
            .count();
        assert_eq!(kept_reported, MAX_ENDED_JOBS - 1);
        assert!(jobs.by_id.contains_key("bg-2") && jobs.by_id.contains_key(&format!("bg-{total}")));
        assert!(!jobs.by_id.contains_key("bg-1") && !dir.path().join("bg-1").exists());
        assert!(!jobs.by_id.contains_key("bg-5") && jobs.by_id.contains_key("bg-6"));
    }
}
