use std::time::{Duration, Instant};

use ferrite_core::exec::{CommandRunner, Exit};
use pretty_assertions::assert_eq;
use tokio_util::sync::CancellationToken;

use super::common::HANG_GUARD;
use super::common::{
    alive, assert_dead, background_children_die_with_the_leader_with, group_members, read_pid, run,
    runner, spec, timeout_kills_the_command_with,
};

#[tokio::test]
async fn timeout_kills_the_command() {
    timeout_kills_the_command_with(&runner()).await;
}

/// Runs `command` (which writes its background child's pid to `pid`), cancels it once that pid
/// is there, and returns the output, the cancel latency, the grandchild's pid and the command's
/// process group (read while it ran).
async fn cancel_after_pid(
    command: &str,
) -> (ferrite_core::exec::CommandOutput, Duration, i32, i32) {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let runner = runner();
    let cancel = CancellationToken::new();
    let leader = std::sync::Mutex::new(None);
    let on_output = |chunk: &str| {
        if let Some(pid) = chunk.lines().find_map(|l| l.strip_prefix("leader ")) {
            *leader.lock().unwrap() = pid.trim().parse::<i32>().ok();
        }
    };
    let spec = spec(dir.path(), &format!("echo leader $$; {command}"));
    let run = runner.run(spec, cancel.clone(), &on_output);
    let canceller = async {
        let grandchild = read_pid(&pid_file).await;
        // Let the command settle into its wait.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let leader = leader
            .lock()
            .unwrap()
            .expect("the leader's pid was printed");
        let stat = std::fs::read_to_string(format!("/proc/{leader}/stat")).unwrap();
        let group: i32 = stat
            .rsplit_once(')')
            .unwrap()
            .1
            .split_whitespace()
            .nth(2)
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            group_members(group) >= 2,
            "leader and grandchild share a group"
        );
        cancel.cancel();
        (grandchild, group, Instant::now())
    };
    let (output, (grandchild, group, cancelled_at)) = tokio::join!(run, canceller);
    let latency = cancelled_at.elapsed();
    (output.unwrap(), latency, grandchild, group)
}

#[tokio::test]
async fn cancel_kills_the_whole_group_promptly() {
    let (output, latency, grandchild, group) =
        cancel_after_pid("sleep 300 & echo $! > pid; sleep 300").await;
    eprintln!("cancel latency (command handles TERM): {latency:?}");
    assert_eq!(output.exit, Exit::Cancelled);
    // Left alone the command runs for minutes.
    assert!(latency < HANG_GUARD, "{latency:?}");
    assert_dead(grandchild).await;
    assert_eq!(group_members(group), 0);
}

#[tokio::test]
async fn cancel_kills_a_command_that_ignores_term_after_the_grace_period() {
    let (output, latency, grandchild, group) =
        cancel_after_pid("trap '' TERM; sleep 100 & echo $! > pid; while :; do sleep 1; done")
            .await;
    eprintln!("cancel latency (command ignores TERM): {latency:?}");
    assert_eq!(output.exit, Exit::Cancelled);
    // It never ends by itself and ignores TERM: only the KILL ended it.
    assert!(latency < HANG_GUARD, "{latency:?}");
    assert_dead(grandchild).await;
    assert_eq!(group_members(group), 0);
}

/// The leader exits while a background child still holds the output pipes open: the run must
/// not wait for that child's EOF, and the child must not survive.
#[tokio::test]
async fn background_children_die_with_the_leader() {
    background_children_die_with_the_leader_with(&runner()).await;
}

/// A process that left the group (`setsid`) or was double-forked away still dies with the
/// command: the supervisor is its subreaper. The run returns as soon as the command is done.
#[tokio::test]
async fn processes_that_left_the_group_die_with_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (output, _) = run(
        &runner(),
        spec(
            dir.path(),
            "setsid sh -c 'echo $$ > pid; exec sleep 300' & \
             (sh -c 'echo $$ > pid2; exec sleep 301' &) ; sleep 0.2; echo done",
        ),
    )
    .await;
    let elapsed = started.elapsed();
    let escaped = read_pid(&dir.path().join("pid")).await;
    let orphan = read_pid(&dir.path().join("pid2")).await;
    let output = output.unwrap();
    assert_eq!(output.exit, Exit::Code(0));
    assert_eq!(output.excerpt, "done\n");
    // The escaped processes sleep for minutes: the run did not wait for them.
    assert!(elapsed < HANG_GUARD, "{elapsed:?}");
    assert!(
        !alive(escaped),
        "the setsid process is gone when the run returns"
    );
    assert!(
        !alive(orphan),
        "the double-forked process is gone when the run returns"
    );
}

/// Dropping the run (session closed, agent shutting down) kills the group too.
#[tokio::test]
async fn dropping_the_run_kills_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let runner = runner();
    let spec = spec(dir.path(), "sleep 100 & echo $! > pid; sleep 100");
    let on_output = |_: &str| {};
    let run = runner.run(spec, CancellationToken::new(), &on_output);
    let pid_file = dir.path().join("pid");
    tokio::select! {
        _ = run => panic!("the command finished on its own"),
        _ = read_pid(&pid_file) => {}
    }
    let grandchild = read_pid(&pid_file).await;
    assert_dead(grandchild).await;
    assert!(!alive(grandchild));
}
