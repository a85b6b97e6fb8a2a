//! The boundary to running commands. `crates/exec` implements [`CommandRunner`] (process trees,
//! timeouts, output spill, the Landlock + seccomp sandbox); core never spawns a process itself.

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::modes::Mode;
// Part of this port (`CommandRunner::shell`), defined in `crate::shell` because the permission
// rules, a layer below, read commands with its grammar.
pub use crate::shell::Shell;

/// What a command may touch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sandbox {
    /// No restrictions (`full` mode). The command is still contained as a process tree: nothing
    /// it starts outlives the call.
    None,
    /// Writes only under `writable` (workspace roots, temp); reads anywhere except under
    /// `hidden`; network as given. An empty `writable` is read-only (`plan`): not even `/dev/shm`,
    /// and no chmod/chown/utimes/xattr changes anywhere.
    Restricted {
        writable: Vec<PathBuf>,
        /// Neither readable nor writable, whatever `writable` says: FERRITE_HOME (config,
        /// credentials, rules, sessions, spill files) and `sandbox.deny_read`.
        hidden: Vec<PathBuf>,
        /// Readable, writable nowhere (and not creatable where missing): the files that define
        /// what runs (`crate::protected::Protected::sandbox_paths`).
        protected: Vec<PathBuf>,
        network: bool,
        /// UNIX sockets the command may connect to although they lie outside the writable roots
        /// (`sandbox.allow_unix_sockets`, user config only). Every other UNIX socket outside
        /// them is refused, with the network on or off (`docs/sandbox.md`).
        unix_sockets: Vec<PathBuf>,
    },
}

impl Sandbox {
    /// The sandbox of a session mode (`docs/sandbox.md`): `plan` writes nowhere and has no
    /// network; `ask` writes in the workspace with network; `auto` writes in the workspace with
    /// network only when `sandbox.network` says so; `full` is unrestricted. `ferrite_home` and
    /// `deny_read` are hidden in every restricted mode: no command below `full` can read or change
    /// the agent's own files, even when the workspace contains them.
    pub fn for_mode(
        mode: Mode,
        roots: &[PathBuf],
        (ferrite_home, protected): (&Path, &[PathBuf]),
        deny_read: &[PathBuf],
        network: bool,
    ) -> Self {
        let protected = protected.to_vec();
        let mut writable: Vec<PathBuf> = roots.to_vec();
        writable.push(std::env::temp_dir());
        let mut hidden = vec![ferrite_home.to_owned()];
        hidden.extend(deny_read.iter().cloned());
        match mode {
            Mode::Plan => Sandbox::Restricted {
                writable: vec![],
                hidden,
                protected,
                network: false,
                unix_sockets: vec![],
            },
            Mode::Ask => Sandbox::Restricted {
                writable,
                hidden,
                protected,
                network: true,
                unix_sockets: vec![],
            },
            Mode::Auto => Sandbox::Restricted {
                writable,
                hidden,
                protected,
                network,
                unix_sockets: vec![],
            },
            Mode::Full => Sandbox::None,
        }
    }

    /// This sandbox with `sockets` connectable (`sandbox.allow_unix_sockets`); `full` is
    /// unrestricted already.
    pub fn allowing_unix_sockets(mut self, sockets: Vec<PathBuf>) -> Self {
        if let Sandbox::Restricted { unix_sockets, .. } = &mut self {
            *unix_sockets = sockets;
        }
        self
    }
}

/// The environment variables that hold keys Ferrite knows: every provider's key variable
/// (built-in and configured `api_key_env`). Commands and MCP servers never see them; runners also
/// drop every `*_API_KEY` and `FERRITE_*` variable (see [`is_secret_env`]).
pub fn secret_env_names(config: &crate::config::Config) -> Vec<String> {
    let mut names = vec!["ANTHROPIC_API_KEY".to_owned(), "OPENAI_API_KEY".to_owned()];
    names.extend(
        config
            .providers
            .values()
            .filter_map(|p| p.api_key_env.clone()),
    );
    names.sort();
    names.dedup();
    names
}

/// Whether an environment variable is withheld from commands and MCP servers whatever the
/// configuration: API keys by their conventional name, and Ferrite's own settings.
pub fn is_secret_env(name: &str) -> bool {
    name.starts_with("FERRITE_") || name.ends_with("_API_KEY")
}

/// Creates a new file for spilled output in `dir` (created 0700 if missing): `out-<unique>.<ext>`,
/// mode 0600, opened with `O_CREAT|O_EXCL` — never an existing file, never through a symlink
/// planted under the name (even a dangling one) — under a name of the agent's own, not derived
/// from a model's or a provider's call id. Retries on the (unlikely) name clash.
pub fn create_spill_file(dir: &Path, ext: &str) -> std::io::Result<(PathBuf, std::fs::File)> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    crate::private_fs::create_dir_all(dir)?;
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    let mut clash = None;
    for _ in 0..16 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("out-{started}-{}-{n}.{ext}", std::process::id()));
        match crate::private_fs::file_options()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(file) => {
                prune_spill_files(dir, &path);
                return Ok((path, file));
            }
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => clash = Some(err),
            Err(err) => return Err(err),
        }
    }
    Err(clash.unwrap_or_else(|| std::io::Error::other("no free spill file name")))
}

/// Spill files one directory keeps, at most: the newest (the model may still `read` them);
/// older ones are removed as new ones are made, so a long session does not fill the disk.
pub const MAX_SPILL_FILES: usize = 100;

/// Removes the oldest `out-*` files of `dir` beyond [`MAX_SPILL_FILES`], never `just_made`.
/// Best effort: a file that cannot be removed stays.
fn prune_spill_files(dir: &Path, just_made: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("out-"))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    if files.len() <= MAX_SPILL_FILES {
        return;
    }
    files.sort();
    let excess = files.len() - MAX_SPILL_FILES;
    for (_, path) in files.into_iter().take(excess) {
        if path != just_made {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// One command to run through the runner's shell (`bash -c`, or `sh -c` where there is no
/// bash: [`CommandRunner::shell`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    pub command: String,
    pub cwd: PathBuf,
    pub timeout: Duration,
    pub sandbox: Sandbox,
    /// The directory the complete output (stdout and stderr interleaved as they arrive) is
    /// written to. The runner creates a new file there itself (exclusively, never following a
    /// link, under a name of its own) and reports it in [`CommandOutput::spill_path`].
    pub spill_dir: PathBuf,
    /// Environment variables the command must not inherit (on top of [`is_secret_env`]).
    pub env_remove: Vec<String>,
    /// How much output to keep in memory for the model: the rest is only in the spill file.
    pub max_bytes: usize,
    pub max_lines: usize,
    /// Bytes written to the command's standard input, which is then closed; `None` is
    /// `/dev/null` (a hook reads its event here).
    pub stdin: Option<std::sync::Arc<[u8]>>,
    /// Whether standard error is kept apart ([`CommandOutput::stderr`]) instead of interleaved
    /// with standard output in the excerpt: a hook answers in JSON on one and in words on the
    /// other.
    pub separate_stderr: bool,
    /// The session's budget for all spilled output (`tools.spill_max_bytes`); `None`: only the
    /// runner's own cap per command applies.
    pub spill_budget: Option<crate::spill_budget::SpillBudget>,
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    TimedOut,
    Cancelled,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutput {
    pub exit: Exit,
    /// The output kept in memory: the first `max_bytes`/`max_lines` (lossy UTF-8).
    pub excerpt: String,
    /// Whether `excerpt` is all of the output.
    pub truncated: bool,
    pub total_bytes: u64,
    pub total_lines: u64,
    pub spill_path: PathBuf,
    pub duration: Duration,
    /// Standard error, bounded like the excerpt, when [`CommandSpec::separate_stderr`] (the
    /// excerpt then holds standard output only); empty otherwise.
    pub stderr: String,
}

/// What the sandbox can enforce on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSupport {
    /// Landlock is available and enforces file-system rules.
    pub filesystem: bool,
    /// Network can be cut off for commands (seccomp).
    pub network: bool,
    /// A sentence for the user: what is and is not enforced, and why.
    pub summary: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecError {
    /// The sandbox asked for cannot be enforced here; the message says why and what to do.
    #[error("{0}")]
    SandboxUnavailable(String),
    #[error("could not start the command: {0}")]
    Spawn(String),
    #[error("{0}")]
    Io(String),
}

pub trait CommandRunner: Send + Sync {
    /// Runs `spec`. Output chunks are passed to `on_output` as they arrive (for streaming to the
    /// editor) while being written to the spill file. On `cancel`, timeout or when the returned
    /// future is dropped, every process the command started gets SIGTERM, then SIGKILL after
    /// 2 s; no process it started outlives the call (`setsid` and double forks included).
    fn run<'a>(
        &'a self,
        spec: CommandSpec,
        cancel: CancellationToken,
        on_output: &'a (dyn Fn(&str) + Send + Sync),
    ) -> BoxFuture<'a, Result<CommandOutput, ExecError>>;

    fn sandbox_support(&self) -> SandboxSupport;

    /// The shell `run` runs commands with.
    fn shell(&self) -> Shell;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spill_files_are_new_private_and_never_follow_links() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "original").unwrap();
        let spill = dir.path().join("spill");
        let (a, _) = create_spill_file(&spill, "out").unwrap();
        let (b, _) = create_spill_file(&spill, "txt").unwrap();
        assert_ne!(a, b);
        assert!(a.starts_with(&spill) && b.extension().unwrap() == "txt");
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode(&spill), mode(&a)), (0o700, 0o600));
        // A link planted under any name is never opened: create_new refuses existing paths,
        // dangling links included.
        let link = spill.join("planted");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &link).unwrap();
        assert!(
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&link)
                .is_err()
        );
        assert!(!dir.path().join("nowhere").exists());
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "original");
    }

    #[test]
    fn only_the_newest_spill_files_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let spill = dir.path().join("spill");
        let mut made = vec![];
        for _ in 0..MAX_SPILL_FILES + 5 {
            made.push(create_spill_file(&spill, "out").unwrap().0);
            // Distinct modification times, as commands a moment apart have.
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        std::fs::write(spill.join("notes.txt"), "not a spill file").unwrap();
        create_spill_file(&spill, "out").unwrap();
        let left = std::fs::read_dir(&spill).unwrap().count();
        assert_eq!(
            left,
            MAX_SPILL_FILES + 1,
            "the newest spill files and the other file"
        );
        assert!(!made[0].exists() && !made[5].exists());
        assert!(made[6].exists() && made.last().unwrap().exists());
    }
}
