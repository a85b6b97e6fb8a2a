//! The macOS implementations, run here: the supervisor in process-group mode (no subreaper, no
//! death signal, polled signals) and the Seatbelt backend, which must refuse restricted commands
//! where `sandbox-exec` does not exist. The same runner code and helper binary as in production;
//! only `Platform` differs.

use std::time::{Duration, Instant};

use ferrite_core::exec::{CommandRunner, ExecError, Exit};
use ferrite_exec::{ExecRunner, Platform, ProcessTree, SandboxBackend};
use pretty_assertions::assert_eq;
use tokio_util::sync::CancellationToken;

use super::common::HANG_GUARD;
use super::common::{
    assert_dead, background_children_die_with_the_leader_with, helper_exe, read_pid, restricted,
    run, spec, timeout_kills_the_command_with,
};

fn macos_like() -> ExecRunner {
    ExecRunner::new(helper_exe()).with_platform(Platform {
        tree: ProcessTree::ProcessGroup,
        sandbox: SandboxBackend::Seatbelt,
    })
}

#[tokio::test]
async fn group_mode_runs_commands_and_reports_exits() {
    let dir = tempfile::tempdir().unwrap();
    let runner = macos_like();
    for (command, exit) in [
        ("true", Exit::Code(0)),
        ("exit 3", Exit::Code(3)),
        ("kill -9 $$", Exit::Signal(9)),
    ] {
        let (output, _) = run(&runner, spec(dir.path(), command)).await;
        assert_eq!(output.unwrap().exit, exit, "{command}");
    }
    let (output, streamed) = run(&runner, spec(dir.path(), "echo out; echo err >&2")).await;
    assert_eq!(output.unwrap().excerpt, streamed);
    assert!(streamed.contains("out\n") && streamed.contains("err\n"));
}

#[tokio::test]
async fn group_mode_timeout_kills_the_command() {
    timeout_kills_the_command_with(&macos_like()).await;
}

/// Cancels `command` once it wrote its background child's pid to `pid`; returns the exit, the
/// latency of the cancel and that child's pid.
async fn cancel_after_pid(command: &str) -> (Exit, Duration, i32) {
    let dir = tempfile::tempdir().unwrap();
    let runner = macos_like();
    let cancel = CancellationToken::new();
    let on_output = |_: &str| {};
    let run = runner.run(spec(dir.path(), command), cancel.clone(), &on_output);
    let canceller = async {
        let grandchild = read_pid(&dir.path().join("pid")).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
        (grandchild, Instant::now())
    };
    let (output, (grandchild, cancelled_at)) = tokio::join!(run, canceller);
    (output.unwrap().exit, cancelled_at.elapsed(), grandchild)
}

/// Within the grace period rather than at once (the subreaper mode's `< 1 s`): the TERMed
/// background `sleep` is an orphan zombie until init reaps it, and this machine's init may not,
/// so the group only looks empty when the grace runs out.
#[tokio::test]
async fn group_mode_cancel_kills_the_group_within_the_grace_period() {
    let (exit, latency, grandchild) =
        cancel_after_pid("sleep 300 & echo $! > pid; sleep 300").await;
    assert_eq!(exit, Exit::Cancelled);
    // Left alone the command runs for minutes.
    assert!(latency < HANG_GUARD, "{latency:?}");
    assert_dead(grandchild).await;
}

#[tokio::test]
async fn group_mode_kills_a_command_that_ignores_term_after_the_grace_period() {
    let (exit, latency, grandchild) =
        cancel_after_pid("trap '' TERM; sleep 100 & echo $! > pid; while :; do sleep 1; done")
            .await;
    assert_eq!(exit, Exit::Cancelled);
    // The command never ends by itself, and ignores TERM: only the KILL ended it.
    assert!(latency < HANG_GUARD, "{latency:?}");
    assert_dead(grandchild).await;
}

/// The command is done while a background child still holds the pipes: the group is killed and
/// the run returns at once.
#[tokio::test]
async fn group_mode_background_children_die_with_the_leader() {
    background_children_die_with_the_leader_with(&macos_like()).await;
}

#[tokio::test]
async fn group_mode_dropping_the_run_kills_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let runner = macos_like();
    let on_output = |_: &str| {};
    let spec = spec(dir.path(), "sleep 100 & echo $! > pid; sleep 100");
    let pid_file = dir.path().join("pid");
    let pid = {
        let run = runner.run(spec, CancellationToken::new(), &on_output);
        tokio::select! {
            _ = run => panic!("the command ended by itself"),
            pid = read_pid(&pid_file) => pid,
        }
    };
    // TERM now, KILL after the 2 s grace at the latest.
    for _ in 0..40 {
        if !super::common::alive(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("process {pid} survived the dropped run");
}

/// Seatbelt where there is no `sandbox-exec` (here): restricted commands are refused without
/// running, saying why; unrestricted ones run.
#[tokio::test]
async fn seatbelt_without_sandbox_exec_refuses_restricted_commands() {
    if std::path::Path::new("/usr/bin/sandbox-exec").exists() {
        return; // macOS: the real thing is tested by CI there.
    }
    let dir = tempfile::tempdir().unwrap();
    let runner = macos_like();
    let support = runner.sandbox_support();
    assert!(!support.filesystem && !support.network, "{support:?}");
    assert!(
        support.summary.contains("/usr/bin/sandbox-exec"),
        "{}",
        support.summary
    );
    let mut restricted_spec = spec(dir.path(), "touch ran");
    restricted_spec.sandbox = restricted(&[dir.path()], true);
    match run(&runner, restricted_spec).await.0 {
        Err(ExecError::SandboxUnavailable(message)) => {
            assert!(message.contains("sandbox-exec"), "{message}");
            assert!(message.contains("`full` mode"), "{message}");
        }
        other => panic!("expected SandboxUnavailable, got {other:?}"),
    }
    assert!(!dir.path().join("ran").exists());
    let (output, _) = run(&runner, spec(dir.path(), "touch ran")).await;
    assert_eq!(output.unwrap().exit, Exit::Code(0));
    assert!(dir.path().join("ran").exists());
}

/// The Windows rule, on any system: no sandbox backend means every restricted command is refused
/// with the reason, and the residual risks say that `ask` asks for every command.
#[tokio::test]
async fn no_sandbox_backend_refuses_restricted_commands() {
    let dir = tempfile::tempdir().unwrap();
    let runner = ExecRunner::new(helper_exe()).with_platform(Platform {
        tree: ProcessTree::ProcessGroup,
        sandbox: SandboxBackend::Unsupported,
    });
    let support = runner.sandbox_support();
    assert!(!support.filesystem && !support.network);
    assert!(
        support.summary.contains("no command sandbox"),
        "{}",
        support.summary
    );
    let risks = runner.residual_risks().join("\n");
    assert!(risks.contains("asks before every command"), "{risks}");
    let mut restricted_spec = spec(dir.path(), "touch ran");
    restricted_spec.sandbox = restricted(&[dir.path()], false);
    match run(&runner, restricted_spec).await.0 {
        Err(ExecError::SandboxUnavailable(message)) => {
            assert!(message.contains("no command sandbox"), "{message}");
        }
        other => panic!("expected SandboxUnavailable, got {other:?}"),
    }
    assert!(!dir.path().join("ran").exists());
}
