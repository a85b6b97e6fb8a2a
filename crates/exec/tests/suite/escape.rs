//! Attacks on the sandbox and on process containment (issue 8), against the real kernel. As in
//! `sandbox.rs`, where this kernel cannot sandbox the tests check the documented refusal instead.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use ferrite_core::exec::{CommandRunner, Exit, Sandbox};
use pretty_assertions::assert_eq;
use tokio_util::sync::CancellationToken;

use super::common::{HANG_GUARD, alive, read_pid, run, runner, spec};
use super::sandbox::{restricted, run_sandboxed};

fn hiding(writable: &[&Path], hidden: &[&Path], network: bool) -> Sandbox {
    Sandbox::Restricted {
        writable: writable.iter().map(|p| p.to_path_buf()).collect(),
        hidden: hidden.iter().map(|p| p.to_path_buf()).collect(),
        protected: vec![],
        network,
        unix_sockets: vec![],
    }
}

/// FERRITE_HOME inside the workspace: hidden wins over writable, the rest of the workspace (its
/// siblings along the way included) stays writable, and names stay listable.
#[tokio::test]
async fn hidden_paths_are_neither_readable_nor_writable_even_inside_the_workspace() {
    let ws = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(ws.path()).unwrap();
    let home = ws.join("nest/home");
    std::fs::create_dir_all(home.join("sessions")).unwrap();
    std::fs::create_dir_all(ws.join("nest/src")).unwrap();
    std::fs::write(home.join("config.toml"), "# mine\n").unwrap();
    std::fs::write(home.join("credentials.json"), "SECRET").unwrap();
    // Files directly in a directory on the way to a hidden path can be changed, not created
    // (docs/sandbox.md).
    std::fs::write(ws.join("top.txt"), "").unwrap();
    let secrets = tempfile::tempdir().unwrap();
    std::fs::write(secrets.path().join("id_rsa"), "PRIVATE").unwrap();
    let command = format!(
        "echo evil >> {h}/config.toml; cat {h}/credentials.json; cat {s}/id_rsa; \
         touch {h}/sessions/x; rm -f {h}/config.toml; mv {h} {ws}/moved; \
         echo ok > {ws}/nest/src/a.txt && echo src-ok; echo ok > {ws}/top.txt && echo top-ok; \
         ls {h} | tr '\\n' ' '; echo",
        h = home.display(),
        s = secrets.path().display(),
        ws = ws.display()
    );
    let runner = runner();
    let Some(output) = run_sandboxed(
        &runner,
        &ws,
        &command,
        hiding(&[&ws], &[&home, secrets.path()], true),
    )
    .await
    else {
        return;
    };
    let text = output.excerpt;
    assert_eq!(
        std::fs::read_to_string(home.join("config.toml")).unwrap(),
        "# mine\n",
        "{text}"
    );
    assert!(!text.contains("SECRET"), "{text}");
    assert!(!text.contains("PRIVATE"), "{text}");
    assert!(!home.join("sessions/x").exists(), "{text}");
    assert!(!ws.join("moved").exists(), "{text}");
    assert!(text.contains("src-ok"), "{text}");
    assert!(text.contains("top-ok"), "{text}");
    assert!(
        text.contains("config.toml credentials.json sessions"),
        "{text}"
    );
}

/// The command has a session of its own (no controlling terminal), and seccomp refuses TIOCSTI
/// even on a terminal it opened itself (root could otherwise inject into any terminal).
#[tokio::test]
async fn no_controlling_terminal_and_no_tiocsti() {
    let dir = tempfile::tempdir().unwrap();
    let command = "python3 -c \"
import os, fcntl, termios
print('sid', os.getsid(0))
try:
    os.open('/dev/tty', os.O_RDWR); print('tty-opened')
except OSError as e:
    print('no-tty', e.errno)
m, s = os.openpty()
try:
    fcntl.ioctl(s, termios.TIOCSTI, b'x'); print('injected')
except OSError as e:
    print('tiocsti-refused', e.errno)
\"";
    let runner = runner();
    let Some(output) = run_sandboxed(
        &runner,
        dir.path(),
        command,
        restricted(&[dir.path()], true),
    )
    .await
    else {
        return;
    };
    let text = output.excerpt;
    let my_sid = std::fs::read_to_string("/proc/self/stat")
        .unwrap()
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(3)
        .unwrap()
        .to_owned();
    assert!(!text.contains(&format!("sid {my_sid}\n")), "{text}");
    assert!(text.contains("no-tty"), "{text}");
    assert!(text.contains("tiocsti-refused 1"), "{text}");
    assert!(!text.contains("injected"), "{text}");
}

/// Plan mode: not even `/dev/shm`, a file's mode or its times.
#[tokio::test]
async fn plan_mode_changes_no_metadata_and_not_shm() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let file = outside.path().join("f");
    std::fs::write(&file, "x").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let before = std::fs::metadata(&file).unwrap().modified().unwrap();
    let shm = format!("/dev/shm/ferrite-exec-plan-{}", std::process::id());
    let command = format!(
        "echo x > {shm}; chmod 600 {f}; touch -d 2001-01-01 {f}; chown 1:1 {f}; \
         python3 -c \"import os; os.setxattr('{f}', 'user.x', b'1')\"; echo tried",
        f = file.display()
    );
    let runner = runner();
    let Some(output) = run_sandboxed(&runner, dir.path(), &command, restricted(&[], false)).await
    else {
        return;
    };
    assert!(output.excerpt.contains("tried"), "{}", output.excerpt);
    assert!(!Path::new(&shm).exists(), "{}", output.excerpt);
    let meta = std::fs::metadata(&file).unwrap();
    assert_eq!(
        meta.permissions().mode() & 0o777,
        0o644,
        "{}",
        output.excerpt
    );
    assert_eq!(meta.modified().unwrap(), before, "{}", output.excerpt);
    assert!(xattr_absent(&file), "{}", output.excerpt);
}

fn xattr_absent(file: &Path) -> bool {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            &format!("import os; print(os.listxattr('{}'))", file.display()),
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim() == "[]"
}

/// Network off: a datagram to a named UNIX socket (sendto or sendmsg with an address) does not
/// arrive.
#[tokio::test]
async fn network_off_blocks_datagrams_to_unix_sockets() {
    let dir = tempfile::tempdir().unwrap();
    let sock_path = dir.path().join("sock");
    let receiver = std::os::unix::net::UnixDatagram::bind(&sock_path).unwrap();
    receiver.set_nonblocking(true).unwrap();
    let command = format!(
        "python3 -c \"
import socket
for kind in (socket.SOCK_DGRAM, socket.SOCK_RAW):
    try:
        s = socket.socket(socket.AF_UNIX, kind)
        s.sendto(b'via-sendto', '{p}'); s.sendmsg([b'via-sendmsg'], [], 0, '{p}'); print('sent')
    except OSError as e:
        print('refused', e.errno)
try:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.sendmsg([b'pair-sendmsg'], [], 0, '{p}'); print('sent')
except OSError as e:
    print('refused', e.errno)
\"",
        p = sock_path.display()
    );
    let runner = runner();
    let Some(output) = run_sandboxed(
        &runner,
        dir.path(),
        &command,
        restricted(&[dir.path()], false),
    )
    .await
    else {
        return;
    };
    let mut buf = [0u8; 64];
    let received = receiver.recv(&mut buf).ok().map(|n| buf[..n].to_vec());
    assert_eq!(received, None, "{}", output.excerpt);
    assert!(!output.excerpt.contains("sent"), "{}", output.excerpt);
}

/// The agent's memory is not readable from a sandboxed command, root included (Landlock forbids
/// ptrace-attach access to processes outside the sandbox). Its `environ` is, for root, on this
/// kernel: the agent wipes the keys from it instead (`wipe_keys_from_own_environment`, tested
/// end to end in the cli suite).
#[tokio::test]
async fn the_agents_memory_is_not_readable() {
    let dir = tempfile::tempdir().unwrap();
    let me = std::process::id();
    let command = format!("head -c 1 /proc/{me}/mem > /dev/null && echo mem-read; echo done");
    let runner = runner();
    let Some(output) = run_sandboxed(
        &runner,
        dir.path(),
        &command,
        restricted(&[dir.path()], true),
    )
    .await
    else {
        return;
    };
    assert!(output.excerpt.contains("done"), "{}", output.excerpt);
    assert!(!output.excerpt.contains("mem-read"), "{}", output.excerpt);
}

/// Variables named in `env_remove` are not inherited; the rest is.
#[tokio::test]
async fn removed_variables_are_not_inherited() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = spec(dir.path(), "echo \"home=${HOME:-unset} path=${PATH:+set}\"");
    spec.env_remove = vec!["HOME".into()];
    let (output, _) = run(&runner(), spec).await;
    assert_eq!(output.unwrap().excerpt, "home=unset path=set\n");
}

/// Cancel reaches processes that left the group too: TERM first (they may clean up), KILL after
/// 2 s for those that ignore it, and the run itself returns at once.
#[tokio::test]
async fn cancel_terms_then_kills_processes_that_left_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let command = format!(
        "setsid sh -c 'trap \"echo term > {d}/marker; exit 0\" TERM; echo $$ > {d}/polite; while :; do sleep 0.05; done' & \
         setsid sh -c 'trap \"\" TERM; echo $$ > {d}/stubborn; while :; do sleep 0.05; done' & \
         trap '' TERM; while :; do sleep 0.05; done"
    );
    let runner = runner();
    let cancel = CancellationToken::new();
    let on_output = |_: &str| {};
    let spec = spec(dir.path(), &command);
    let run = runner.run(spec, cancel.clone(), &on_output);
    let stubborn_file = dir.path().join("stubborn");
    let canceller = async {
        let pid = read_pid(&stubborn_file).await;
        // Both traps are set once the pids are written.
        read_pid(&dir.path().join("polite")).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
        (pid, Instant::now())
    };
    let (output, (stubborn, cancelled_at)) = tokio::join!(run, canceller);
    assert_eq!(output.unwrap().exit, Exit::Cancelled);
    // The run ends when the tree is gone, at KILL time: the leader and one of its escaped
    // children ignore TERM and loop forever, so ending at all is the KILL; the polite one's
    // marker below is the TERM that came first.
    let elapsed = cancelled_at.elapsed();
    assert!(elapsed < HANG_GUARD, "{elapsed:?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("marker")).unwrap(),
        "term\n"
    );
    assert!(!alive(stubborn));
}

/// Timeout and a dropped run (session closed) reach processes that left the group too.
#[tokio::test]
async fn timeout_and_drop_reach_processes_that_left_the_group() {
    let command = "setsid sh -c 'echo $$ > escaped; exec sleep 300' & sleep 300";
    // Timeout.
    let dir = tempfile::tempdir().unwrap();
    let mut timed = spec(dir.path(), command);
    timed.timeout = Duration::from_millis(500);
    let (output, _) = run(&runner(), timed).await;
    assert_eq!(output.unwrap().exit, Exit::TimedOut);
    let escaped = read_pid(&dir.path().join("escaped")).await;
    assert!(!alive(escaped), "gone when the timed-out run returns");

    // Dropped run: the supervisor finishes the job on its own.
    let dir = tempfile::tempdir().unwrap();
    let runner = runner();
    let on_output = |_: &str| {};
    let run = runner.run(
        spec(dir.path(), command),
        CancellationToken::new(),
        &on_output,
    );
    let pid_file = dir.path().join("escaped");
    let escaped = tokio::select! {
        _ = run => panic!("the command finished on its own"),
        pid = read_pid(&pid_file) => pid,
    };
    let deadline = Instant::now() + Duration::from_secs(1);
    while alive(escaped) {
        assert!(
            Instant::now() < deadline,
            "{escaped} survived the dropped run"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The supervisor dies with the agent, not with the agent's thread that happened to spawn it
/// (`PR_SET_PDEATHSIG` fires for both): a command started from a thread that then exits runs on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_outlives_the_thread_that_spawned_it() {
    use std::task::{Context, Poll};

    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let runner: &'static ferrite_exec::ExecRunner = Box::leak(Box::new(runner()));
    let on_output: &'static (dyn Fn(&str) + Send + Sync) = Box::leak(Box::new(|_: &str| {}));
    let spec = spec(
        dir.path(),
        &format!("echo $$ > {}; sleep 0.5; echo survived", pid_file.display()),
    );
    let runtime = tokio::runtime::Handle::current();
    let (send, receive) = std::sync::mpsc::channel();
    let spawner = std::thread::spawn(move || {
        let _entered = runtime.enter();
        let mut run = runner.run(spec, CancellationToken::new(), on_output);
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        // Poll here until the command runs, then hand the run over and let this thread end.
        while !pid_file.exists() {
            assert!(matches!(run.as_mut().poll(&mut cx), Poll::Pending));
            std::thread::sleep(Duration::from_millis(10));
        }
        send.send(run).unwrap();
    });
    spawner.join().unwrap();
    let run = receive.recv().unwrap();
    let output = run.await.unwrap();
    assert_eq!(
        (output.exit, output.excerpt.as_str()),
        (Exit::Code(0), "survived\n")
    );
}

/// Under a real terminal (`script` gives the helper a pty as controlling terminal, as `ferrite
/// run` in a terminal would have), a command can neither open `/dev/tty` nor push keystrokes into
/// the terminal it inherited through its parent.
#[test]
fn under_a_terminal_the_command_cannot_type_into_it() {
    let dir = tempfile::tempdir().unwrap();
    let probe = "import os, fcntl, termios\n\
        try:\n    fd = os.open('/dev/tty', os.O_RDWR); print('TTY-OPENED')\n\
        except OSError as e:\n    print('no-tty', e.errno)\n\
        for name in sorted(os.listdir('/proc/self/fd')):\n    \
            try:\n        fcntl.ioctl(int(name), termios.TIOCSTI, b'x'); print('INJECTED', name)\n    \
            except OSError:\n        pass\n\
        print('probe-done')\n";
    std::fs::write(dir.path().join("probe.py"), probe).unwrap();
    let helper = super::common::helper_exe();
    // `$$` is the shell script(1) starts: the helper's parent, as the agent would be.
    let inner = format!(
        "sh -c '{} __sandbox --parent $$ --write {} -- python3 {}/probe.py < /dev/tty; true'",
        helper.display(),
        dir.path().display(),
        dir.path().display()
    );
    let out = std::process::Command::new("script")
        .args(["-qec", &inner, "/dev/null"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    if text.contains("cannot enforce the sandbox") {
        return;
    }
    assert!(text.contains("probe-done"), "{text}");
    assert!(text.contains("no-tty"), "{text}");
    assert!(!text.contains("TTY-OPENED"), "{text}");
    assert!(!text.contains("INJECTED"), "{text}");
}

/// Commands start with no signal blocked (the supervisor blocks the ones it waits for; its child
/// must not pass that on), sandboxed or not: otherwise TERM would wait for the KILL.
#[tokio::test]
async fn commands_start_with_no_signal_blocked() {
    let dir = tempfile::tempdir().unwrap();
    let command = "grep SigBlk /proc/self/status";
    let (output, _) = run(&runner(), spec(dir.path(), command)).await;
    assert_eq!(output.unwrap().excerpt, "SigBlk:\t0000000000000000\n");
    let runner = runner();
    if let Some(output) = run_sandboxed(
        &runner,
        dir.path(),
        command,
        restricted(&[dir.path()], true),
    )
    .await
    {
        assert_eq!(output.excerpt, "SigBlk:\t0000000000000000\n");
    }
}
