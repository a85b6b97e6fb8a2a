use std::time::Instant;

use ferrite_core::exec::{ExecError, Exit};
use pretty_assertions::assert_eq;

use super::common::{HANG_GUARD, run, runner, spec, vm_hwm_kib};

#[tokio::test]
async fn output_is_streamed_spilled_and_the_excerpt_capped() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = spec(dir.path(), "seq 1 1000; echo oops >&2");
    spec.max_lines = 10;
    let (output, streamed) = run(&runner(), spec).await;
    let output = output.unwrap();

    let spilled = std::fs::read_to_string(&output.spill_path).unwrap();
    let expected: String = (1..=1000).map(|n| format!("{n}\n")).collect::<String>() + "oops\n";
    assert_eq!(spilled, expected);
    assert_eq!(streamed, expected);
    assert_eq!(output.exit, Exit::Code(0));
    assert_eq!(output.excerpt, "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n");
    assert!(output.truncated);
    assert_eq!(output.total_bytes, expected.len() as u64);
    assert_eq!(output.total_lines, 1001);
    assert_eq!(
        output.spill_path.parent(),
        Some(dir.path().join("spill").as_path())
    );
}

#[tokio::test]
async fn small_output_is_whole_and_not_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let (output, _) = run(&runner(), spec(dir.path(), "printf 'a\\nb'")).await;
    let output = output.unwrap();
    assert_eq!(output.excerpt, "a\nb");
    assert!(!output.truncated);
    assert_eq!((output.total_bytes, output.total_lines), (3, 2));
}

#[tokio::test]
async fn exit_codes_and_signals_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let runner = runner();
    for (command, exit) in [
        ("true", Exit::Code(0)),
        ("exit 3", Exit::Code(3)),
        ("no-such-command-ferrite", Exit::Code(127)),
        ("kill -9 $$", Exit::Signal(9)),
    ] {
        let (output, _) = run(&runner, spec(dir.path(), command)).await;
        assert_eq!(output.unwrap().exit, exit, "{command}");
    }
}

#[tokio::test]
async fn command_runs_in_cwd_with_stdin_on_dev_null() {
    let dir = tempfile::tempdir().unwrap();
    let (output, _) = run(
        &runner(),
        spec(dir.path(), "pwd; readlink /proc/self/fd/0; cat"),
    )
    .await;
    let canonical = dir.path().canonicalize().unwrap();
    assert_eq!(
        output.unwrap().excerpt,
        format!("{}\n/dev/null\n", canonical.display())
    );
}

/// A hook reads its event on stdin and answers on stdout, with words on stderr: the bytes
/// given arrive whole (more than a pipe holds, so the writer cannot block the reader), and the
/// two output streams come back apart, in the read-only sandbox too.
#[tokio::test]
async fn stdin_is_fed_and_stderr_kept_apart_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let input: String = (0..20_000).map(|n| format!("{n}\n")).collect();
    for sandbox in [
        ferrite_core::exec::Sandbox::None,
        super::common::restricted(&[], false),
    ] {
        let mut spec = spec(dir.path(), "echo before >&2; wc -l; echo after >&2; exit 2");
        spec.stdin = Some(input.as_bytes().into());
        spec.separate_stderr = true;
        spec.sandbox = sandbox;
        let (output, streamed) = run(&runner(), spec).await;
        let output = output.unwrap();
        assert_eq!(output.exit, Exit::Code(2));
        assert_eq!(output.excerpt.trim(), "20000");
        assert_eq!(output.stderr, "before\nafter\n");
        assert!(streamed.contains("before") && streamed.contains("20000"));
    }
    // Without asking, stderr stays in the excerpt, as the model has always read it.
    let (output, _) = run(&runner(), spec(dir.path(), "echo out; echo err >&2")).await;
    let output = output.unwrap();
    assert_eq!(
        (output.excerpt.as_str(), output.stderr.as_str()),
        ("out\nerr\n", "")
    );
}

/// The agent's stdout is the JSON-RPC channel: a command writing to "its stdout", even through
/// /dev/stdout, must land in the captured output and never on the agent's fd 1.
#[tokio::test]
async fn the_agents_stdout_is_never_inherited() {
    let dir = tempfile::tempdir().unwrap();
    let ours = std::fs::read_link("/proc/self/fd/1").unwrap();
    let (output, _) = run(
        &runner(),
        spec(
            dir.path(),
            "echo via-dev-stdout > /dev/stdout; readlink /proc/self/fd/1; readlink /proc/self/fd/2",
        ),
    )
    .await;
    let output = output.unwrap();
    let lines: Vec<&str> = output.excerpt.lines().collect();
    assert_eq!(lines[0], "via-dev-stdout");
    assert!(lines[1].starts_with("pipe:"), "{lines:?}");
    assert!(lines[2].starts_with("pipe:"), "{lines:?}");
    assert_ne!(lines[1], ours.to_string_lossy());
    assert_ne!(lines[2], ours.to_string_lossy());
}

#[tokio::test]
async fn characters_split_across_reads_are_streamed_whole() {
    let dir = tempfile::tempdir().unwrap();
    let (output, streamed) = run(
        &runner(),
        spec(dir.path(), r"printf '\342\202'; sleep 0.2; printf '\254\n'"),
    )
    .await;
    assert_eq!(streamed, "€\n");
    assert_eq!(output.unwrap().excerpt, "€\n");
}

#[tokio::test]
async fn hundred_megabytes_go_to_the_spill_file_not_to_memory() {
    let dir = tempfile::tempdir().unwrap();
    let before = vm_hwm_kib();
    let started = Instant::now();
    let mut spec = spec(dir.path(), "yes | head -c 100000000");
    spec.max_bytes = 16 * 1024;
    spec.max_lines = 1_000_000;
    let streamed_bytes = std::sync::atomic::AtomicU64::new(0);
    let on_output = |chunk: &str| {
        streamed_bytes.fetch_add(chunk.len() as u64, std::sync::atomic::Ordering::Relaxed);
    };
    let output = ferrite_core::exec::CommandRunner::run(
        &runner(),
        spec,
        tokio_util::sync::CancellationToken::new(),
        &on_output,
    )
    .await
    .unwrap();
    let elapsed = started.elapsed();
    let after = vm_hwm_kib();

    assert_eq!(output.exit, Exit::Code(0));
    assert_eq!(output.total_bytes, 100_000_000);
    assert_eq!(output.total_lines, 50_000_000);
    assert_eq!(streamed_bytes.into_inner(), 100_000_000);
    assert_eq!(output.excerpt.len(), 16 * 1024);
    assert!(output.truncated);
    let spilled = std::fs::metadata(&output.spill_path).unwrap().len();
    assert_eq!(spilled, 100_000_000);
    let growth_kib = after.saturating_sub(before);
    eprintln!(
        "100 MB output: {elapsed:?}, peak RSS {before} KiB -> {after} KiB (+{growth_kib} KiB)"
    );
    assert!(growth_kib < 64 * 1024, "peak RSS grew by {growth_kib} KiB");
}

#[tokio::test]
async fn output_past_the_spill_limit_kills_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let runner = runner().with_spill_limit(1_000_000);
    let started = Instant::now();
    let (output, streamed) = run(&runner, spec(dir.path(), "yes")).await;
    let output = output.unwrap();
    // `yes` never ends by itself: returning at all is the kill.
    assert!(started.elapsed() < HANG_GUARD);
    assert_eq!(output.exit, Exit::Signal(9));
    let spilled = std::fs::metadata(&output.spill_path).unwrap().len();
    assert_eq!(spilled, 1_000_000);
    assert!(
        output.excerpt.ends_with(
            "[ferrite: the command wrote more than 1000000 bytes of output and was killed]\n"
        ),
        "{}",
        &output.excerpt[output.excerpt.len().saturating_sub(200)..]
    );
    assert!(streamed.contains("and was killed]"));
}

#[tokio::test]
async fn a_missing_cwd_is_a_spawn_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = spec(dir.path(), "true");
    spec.cwd = dir.path().join("nope");
    let (output, _) = run(&runner(), spec).await;
    assert!(matches!(output, Err(ExecError::Spawn(_))), "{output:?}");
}
