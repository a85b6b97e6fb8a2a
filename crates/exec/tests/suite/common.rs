use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use ferrite_core::exec::{CommandOutput, CommandRunner, CommandSpec, ExecError, Sandbox};
use ferrite_exec::ExecRunner;
use tokio_util::sync::CancellationToken;

/// How long a test waits before it calls a run hung: a guard, not a claim about speed. Where a
/// test checks that something ends early, the way it should not end takes longer than this
/// (a `sleep 300`, a timeout never reached), so passing the guard is the behaviour itself.
pub const HANG_GUARD: Duration = Duration::from_secs(60);

pub fn helper_exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ferrite-exec-helper"))
}

#[cfg(target_os = "linux")]
pub fn runner() -> ExecRunner {
    ExecRunner::new(helper_exe())
}

pub fn restricted(writable: &[&Path], network: bool) -> Sandbox {
    Sandbox::Restricted {
        writable: writable.iter().map(|p| p.to_path_buf()).collect(),
        hidden: vec![],
        protected: vec![],
        network,
        unix_sockets: vec![],
    }
}

pub fn spec(dir: &Path, command: &str) -> CommandSpec {
    CommandSpec {
        command: command.to_owned(),
        cwd: dir.to_owned(),
        timeout: Duration::from_secs(30),
        sandbox: Sandbox::None,
        spill_dir: dir.join("spill"),
        env_remove: vec![],
        max_bytes: 4096,
        max_lines: 100,
        stdin: None,
        separate_stderr: false,
        spill_budget: None,
    }
}

/// Everything `on_output` was given, chunk by chunk.
#[derive(Default)]
pub struct Streamed(Mutex<Vec<String>>);

impl Streamed {
    pub fn push(&self, chunk: &str) {
        self.0.lock().unwrap().push(chunk.to_owned());
    }

    pub fn text(&self) -> String {
        self.0.lock().unwrap().concat()
    }
}

pub async fn run(
    runner: &ExecRunner,
    spec: CommandSpec,
) -> (Result<CommandOutput, ExecError>, String) {
    let streamed = Streamed::default();
    let on_output = |chunk: &str| streamed.push(chunk);
    let result = runner.run(spec, CancellationToken::new(), &on_output).await;
    (result, streamed.text())
}

/// Waits until `path` holds a pid (written by the command), for at most 10 s.
pub async fn read_pid(path: &Path) -> i32 {
    for _ in 0..1000 {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no pid in {}", path.display());
}

/// Whether `pid` is still a live process (a zombie waiting for init to reap it counts as dead).
#[cfg(target_os = "linux")]
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            // The state follows the parenthesised command name.
            let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
            !matches!(state.and_then(|s| s.chars().next()), Some('Z' | 'X'))
        }
        Err(_) => false,
    }
}

/// Whether `pid` is still a live process, where there is no `/proc` (macOS): asks `ps`.
#[cfg(not(target_os = "linux"))]
pub fn alive(pid: i32) -> bool {
    let out = std::process::Command::new("ps")
        .args(["-o", "stat=", "-p", &pid.to_string()])
        .output()
        .unwrap();
    let stat = String::from_utf8_lossy(&out.stdout);
    let stat = stat.trim();
    !stat.is_empty() && !stat.starts_with('Z')
}

/// Asserts `pid` is gone, allowing the kernel a moment to finish delivering SIGKILL.
pub async fn assert_dead(pid: i32) {
    for _ in 0..50 {
        if !alive(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("process {pid} survived its command");
}

/// The number of processes whose process group is `pgid`.
#[cfg(target_os = "linux")]
pub fn group_members(pgid: i32) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            // Fields after the name: state, ppid, pgrp.
            let fields: Vec<&str> = rest.split_whitespace().collect();
            fields.first().is_some_and(|s| *s != "Z")
                && fields.get(2) == Some(&pgid.to_string().as_str())
        })
        .count()
}

/// The peak resident set size of this process so far, in KiB.
#[cfg(target_os = "linux")]
pub fn vm_hwm_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// A command past its timeout is killed, and what it wrote before is kept (each platform's
/// process tree).
pub async fn timeout_kills_the_command_with(runner: &ExecRunner) {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = spec(dir.path(), "echo started; sleep 300");
    spec.timeout = std::time::Duration::from_millis(300);
    let started = std::time::Instant::now();
    let (output, _) = run(runner, spec).await;
    let output = output.unwrap();
    assert_eq!(output.exit, ferrite_core::exec::Exit::TimedOut);
    assert_eq!(output.excerpt, "started\n");
    assert!(
        started.elapsed() < HANG_GUARD,
        "the run outlived the timeout"
    );
}

/// The leader exits while a background child still holds the output pipes open: the run does
/// not wait for that child's EOF, and the child does not survive (each platform's process tree).
pub async fn background_children_die_with_the_leader_with(runner: &ExecRunner) {
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let (output, _) = run(
        runner,
        spec(dir.path(), "sleep 300 & echo $! > pid; echo done"),
    )
    .await;
    let output = output.unwrap();
    assert_eq!(output.exit, ferrite_core::exec::Exit::Code(0));
    assert_eq!(output.excerpt, "done\n");
    assert!(
        started.elapsed() < HANG_GUARD,
        "the run waited for the child's end"
    );
    assert_dead(read_pid(&dir.path().join("pid")).await).await;
}
