//! The sandbox against the real kernel. Where this kernel lacks Landlock (or seccomp), the tests
//! assert the documented `SandboxUnavailable` answer instead: they never skip silently.

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use ferrite_core::exec::{CommandOutput, ExecError, Exit, Sandbox};
use ferrite_exec::ExecRunner;
use pretty_assertions::assert_eq;

use super::common::{run, runner, spec};

pub use super::common::restricted;

/// Runs `command` in `cwd` under `sandbox`; `None` when the runner said the sandbox is
/// unavailable, after checking that this is what the probe predicted and the message is the
/// documented one.
pub async fn run_sandboxed(
    runner: &ExecRunner,
    cwd: &Path,
    command: &str,
    sandbox: Sandbox,
) -> Option<CommandOutput> {
    let support = runner.sandbox_support();
    let needs_network_off = matches!(sandbox, Sandbox::Restricted { network: false, .. });
    let mut spec = spec(cwd, command);
    spec.spill_dir = std::env::temp_dir().join(format!(
        "ferrite-exec-test-{}-{}",
        std::process::id(),
        rand_suffix()
    ));
    spec.sandbox = sandbox;
    let (result, _) = run(runner, spec.clone()).await;
    let _ = std::fs::remove_dir_all(&spec.spill_dir);
    if support.filesystem && (support.network || !needs_network_off) {
        Some(result.unwrap())
    } else {
        match result {
            Err(ExecError::SandboxUnavailable(message)) => {
                assert!(message.contains("`full` mode"), "{message}");
                assert!(message.contains("was not run"), "{message}");
                None
            }
            other => panic!("expected SandboxUnavailable, got {other:?}"),
        }
    }
}

pub fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

#[test]
fn support_is_reported_with_a_summary() {
    let support = runner().sandbox_support();
    eprintln!("sandbox support: {support:?}");
    assert!(!support.summary.is_empty());
    // Where securityfs is mounted it must agree with the probe.
    if let Ok(lsm) = std::fs::read_to_string("/sys/kernel/security/lsm") {
        assert_eq!(
            support.filesystem,
            lsm.split(',').any(|l| l.trim() == "landlock"),
            "{lsm}"
        );
    }
    if support.filesystem {
        assert!(
            support.summary.starts_with("Landlock ABI "),
            "{}",
            support.summary
        );
    } else {
        assert!(
            support.summary.contains("cannot be confined"),
            "{}",
            support.summary
        );
    }
}

/// Tests run as root here: Landlock confines root too.
#[tokio::test]
async fn writes_are_confined_to_the_writable_dirs_even_for_root() {
    let inside = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("readable"), "read me\n").unwrap();
    // The denied write's error goes to stdout, so that it arrives in order with the rest.
    let command = format!(
        "echo in > inside.txt && echo in-ok; \
         cat {out}/readable; \
         (echo out > {out}/outside.txt) 2>&1 || echo out-denied; \
         echo hidden > /dev/null && echo devnull-ok; \
         echo via-dev-stdout > /dev/stdout",
        out = outside.path().display()
    );
    let runner = runner();
    let Some(output) = run_sandboxed(
        &runner,
        inside.path(),
        &command,
        restricted(&[inside.path()], true),
    )
    .await
    else {
        assert!(!inside.path().join("inside.txt").exists());
        return;
    };
    assert_eq!(output.exit, Exit::Code(0), "{}", output.excerpt);
    assert_eq!(
        output
            .excerpt
            .lines()
            .filter(|l| !l.contains("Permission denied"))
            .collect::<Vec<_>>(),
        vec![
            "in-ok",
            "read me",
            "out-denied",
            "devnull-ok",
            "via-dev-stdout"
        ]
    );
    assert!(
        output.excerpt.contains("Permission denied"),
        "{}",
        output.excerpt
    );
    assert_eq!(
        std::fs::read_to_string(inside.path().join("inside.txt")).unwrap(),
        "in\n"
    );
    assert!(!outside.path().join("outside.txt").exists());
}

#[tokio::test]
async fn plan_mode_sandbox_writes_nowhere() {
    let dir = tempfile::tempdir().unwrap();
    let runner = runner();
    let Some(output) = run_sandboxed(
        &runner,
        dir.path(),
        "ls /; touch made-it",
        restricted(&[], false),
    )
    .await
    else {
        return;
    };
    assert_eq!(output.exit, Exit::Code(1));
    assert!(
        output.excerpt.contains("Permission denied"),
        "{}",
        output.excerpt
    );
    assert!(output.excerpt.contains("usr"), "{}", output.excerpt);
    assert!(!dir.path().join("made-it").exists());
}

#[tokio::test]
async fn no_sandbox_writes_anywhere() {
    let inside = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("anywhere.txt");
    let mut spec = spec(inside.path(), &format!("echo free > {}", target.display()));
    spec.sandbox = Sandbox::None;
    let (output, _) = run(&runner(), spec).await;
    assert_eq!(output.unwrap().exit, Exit::Code(0));
    assert_eq!(std::fs::read_to_string(target).unwrap(), "free\n");
}

fn connect_command(port: u16) -> String {
    format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5); print('connected')\""
    )
}

#[tokio::test]
async fn network_off_makes_connecting_fail_with_eperm() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let runner = runner();
    let Some(output) = run_sandboxed(
        &runner,
        dir.path(),
        &connect_command(port),
        restricted(&[dir.path()], false),
    )
    .await
    else {
        return;
    };
    assert_eq!(output.exit, Exit::Code(1), "{}", output.excerpt);
    assert!(
        output
            .excerpt
            .contains("PermissionError: [Errno 1] Operation not permitted"),
        "{}",
        output.excerpt
    );
    assert!(!output.excerpt.contains("connected"));
}

#[tokio::test]
async fn network_on_connects() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let runner = runner();
    let Some(output) = run_sandboxed(
        &runner,
        dir.path(),
        &connect_command(port),
        restricted(&[dir.path()], true),
    )
    .await
    else {
        return;
    };
    assert_eq!(output.exit, Exit::Code(0), "{}", output.excerpt);
    assert_eq!(output.excerpt, "connected\n");
}

/// With the network off, local pipes and UNIX socket pairs (how tools talk to their children)
/// still work.
#[tokio::test]
async fn network_off_keeps_unix_socketpairs_working() {
    let dir = tempfile::tempdir().unwrap();
    let runner = runner();
    let command = "python3 -c \"import socket; a, b = socket.socketpair(); a.send(b'hi'); print(b.recv(2).decode())\"";
    let Some(output) = run_sandboxed(
        &runner,
        dir.path(),
        command,
        restricted(&[dir.path()], false),
    )
    .await
    else {
        return;
    };
    assert_eq!(
        (output.exit, output.excerpt.as_str()),
        (Exit::Code(0), "hi\n")
    );
}

/// A helper that could not set the sandbox up is reported as `SandboxUnavailable`, not as the
/// command's failure.
#[tokio::test]
async fn a_helper_setup_failure_is_sandbox_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let fake: PathBuf = dir.path().join("fake-helper");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'ferrite sandbox: cannot enforce the sandbox: Landlock is not enforced' >&2\nexit 125\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let runner = ExecRunner::new(fake);
    let mut spec = spec(dir.path(), "true");
    spec.sandbox = restricted(&[dir.path()], true);
    let (result, _) = run(&runner, spec).await;
    match result {
        Err(ExecError::SandboxUnavailable(message)) => {
            assert!(message.contains("`full` mode"), "{message}");
            if runner.sandbox_support().filesystem {
                assert!(message.contains("Landlock is not enforced"), "{message}");
            }
        }
        other => panic!("expected SandboxUnavailable, got {other:?}"),
    }
}
