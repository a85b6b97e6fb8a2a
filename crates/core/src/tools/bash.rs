//! `bash`: a shell command through the session's [`CommandRunner`] (process group, timeout, spill
//! file and sandbox live there). Output streams to the editor while it runs; the model gets the
//! exit status and an excerpt that names the spill file when the output was cut.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::config::BASH_TIMEOUT_CAP_SECS;
use crate::content::{ToolContent, ToolKind};
use crate::display::{fenced, inline_code};
use crate::exec::{CommandOutput, CommandSpec, ExecError, Exit};
use crate::model::ToolSpec;
use crate::tools::markdown;
use crate::tools::output::{lock, parse_input};
use crate::tools::{
    Access, CallDescription, Tool, ToolContext, ToolError, ToolOutput, input_schema,
};

mod git_note;
mod stream;

use stream::Tail;

const TITLE_MAX_CHARS: usize = 120;

pub struct Bash;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    // No description: the tool's says it.
    command: String,
    /// Kill it after this many seconds.
    #[schemars(range(min = 1, max = BASH_TIMEOUT_CAP_SECS))]
    timeout_secs: Option<u64>,
    /// For servers and watch builds: returns an id at once.
    #[serde(default)]
    background: bool,
}

impl Tool for Bash {
    fn name(&self) -> &str {
        "bash"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "bash".into(),
            description: "Run a command with `bash -c` in the working directory: exit status \
                and output (stdout and stderr interleaved). Long output is cut and saved whole to \
                a file you can `read`. Anything that keeps running goes in the `background`; you \
                are told when it ends. No interactive programs. Prefer the read, grep, find and \
                ls tools to their shell commands."
                .into(),
            input_schema: input_schema::<Input>(),
        }
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }

    fn describe(&self, input: &Value, _cwd: &Path) -> CallDescription {
        let command = input.get("command").and_then(Value::as_str).unwrap_or("");
        CallDescription {
            title: title(command),
            locations: vec![],
        }
    }

    fn access(&self, input: &Value, _cwd: &Path) -> Access {
        Access::Execute {
            command: input
                .get("command")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
        }
    }

    fn preview(&self, input: &Value, cwd: &Path) -> Vec<ToolContent> {
        let command = input.get("command").and_then(Value::as_str).unwrap_or("");
        // What is approved says how long it runs: a background command outlives the call.
        let background = match input.get("background").and_then(Value::as_bool) {
            Some(true) => {
                ", in the background: it keeps running after this call, until it is stopped or \
                 the session ends"
            }
            _ => "",
        };
        vec![ToolContent::Text {
            text: format!(
                "{}\n\nin {}{background}",
                fenced(command, "sh"),
                inline_code(&cwd.display().to_string())
            )
            .into(),
        }]
    }

    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(run(input, ctx))
    }
}

async fn run(input: Value, ctx: &ToolContext<'_>) -> Result<ToolOutput, ToolError> {
    let input: Input = parse_input("bash", input)?;
    if input.command.trim().is_empty() {
        return Err(ToolError::RespondToModel("command is empty.".into()));
    }
    let runner = ctx
        .runner
        .clone()
        .ok_or_else(|| ToolError::Fatal("no command runner".into()))?;
    let timeout = input
        .timeout_secs
        .map_or(ctx.bash_timeout, |s| Duration::from_secs(s.max(1)))
        .min(Duration::from_secs(BASH_TIMEOUT_CAP_SECS));
    if let Err(e) = crate::private_fs::create_dir_all(&ctx.spill_dir) {
        // The runner reports the failure to open the spill file itself, with its own words.
        tracing::warn!(dir = %ctx.spill_dir.display(), error = %e, "cannot create spill dir");
    }
    let spec = CommandSpec {
        command: input.command,
        cwd: ctx.cwd.clone(),
        timeout,
        sandbox: ctx.sandbox.clone(),
        spill_dir: ctx.spill_dir.clone(),
        env_remove: vec![],
        max_bytes: ctx.limits.max_bytes,
        max_lines: ctx.limits.max_lines,
        stdin: None,
        separate_stderr: false,
        spill_budget: None,
    };

    if input.background {
        return start_background(ctx, runner, spec);
    }
    let tail = Arc::new(Mutex::new(Tail::default()));
    let result = stream::follow(ctx, runner, spec, &tail).await;
    match result {
        Ok(out) => {
            let recent = lock(&tail).text.clone();
            let shown = markdown::command_result(&out, &ending(&out, timeout), &recent);
            let mut text = result_text(&out, timeout);
            if let Some(note) = git_note::note(&out, &ctx.sandbox) {
                text.push('\n');
                text.push_str(&note);
                text.push('\n');
            }
            Ok(ToolOutput {
                text,
                content: vec![ToolContent::Text { text: shown.into() }],
            })
        }
        Err(ExecError::SandboxUnavailable(msg)) => Err(ToolError::RespondToModel(msg)),
        Err(e @ (ExecError::Spawn(_) | ExecError::Io(_))) => {
            Err(ToolError::RespondToModel(e.to_string()))
        }
    }
}

/// A command started in the background: the model is told its id and how to follow it.
fn start_background(
    ctx: &ToolContext<'_>,
    runner: Arc<dyn crate::exec::CommandRunner>,
    spec: CommandSpec,
) -> Result<ToolOutput, ToolError> {
    // Counted like any command: the turn's checkpoint covers what it may change.
    ctx.recorder.command_started();
    let id = ctx
        .background
        .start(runner, spec, ctx.max_background)
        .map_err(ToolError::RespondToModel)?;
    let text = format!(
        "Started in the background as {id}. `bash_output` with id {id:?} reads its output; \
         `bash_kill` stops it; you are told when it ends."
    );
    Ok(ToolOutput {
        content: vec![ToolContent::Text {
            text: text.as_str().into(),
        }],
        text,
    })
}

/// How the command ended, in a line.
fn ending(out: &CommandOutput, timeout: Duration) -> String {
    match out.exit {
        Exit::Code(c) => format!("Exit code {c}"),
        Exit::Signal(s) => format!("Killed by signal {s}{}", signal_name(s)),
        Exit::TimedOut => format!(
            "Timed out after {} s; the command was killed",
            timeout.as_secs()
        ),
        Exit::Cancelled => "Cancelled; the command was killed".to_owned(),
    }
}

/// What the model reads: how the command ended, its output, and where the rest is.
fn result_text(out: &CommandOutput, timeout: Duration) -> String {
    let mut text = ending(out, timeout);
    text.push('\n');
    if out.excerpt.is_empty() && out.total_bytes == 0 {
        text.push_str("(no output)\n");
        return text;
    }
    // Colours and other terminal escapes are for terminals, not for the model.
    let excerpt = crate::ansi::strip(&out.excerpt);
    text.push_str(&excerpt);
    if !excerpt.ends_with('\n') {
        text.push('\n');
    }
    if out.truncated {
        let shown_lines = crate::tools::output::count_lines(&out.excerpt);
        let tail_from = out.total_lines.saturating_sub(199).max(1);
        text.push_str(&format!(
            "\n[Output truncated: showing the first {shown_lines} of {} lines ({} of {} bytes). \
             The full output is in {}; use `read` with offset/limit (offset={tail_from} shows the \
             last 200 lines) or `grep` on that file to see the rest.]\n",
            out.total_lines,
            out.excerpt.len(),
            out.total_bytes,
            out.spill_path.display()
        ));
    }
    text
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        1 => " (SIGHUP)",
        2 => " (SIGINT)",
        6 => " (SIGABRT)",
        9 => " (SIGKILL)",
        11 => " (SIGSEGV)",
        13 => " (SIGPIPE)",
        15 => " (SIGTERM)",
        _ => "",
    }
}

/// The call's title: the command itself, first line, shortened.
fn title(command: &str) -> String {
    let command = command.trim();
    let mut lines = command.lines();
    let first = lines.next().unwrap_or("").trim_end();
    let mut title: String = first.chars().take(TITLE_MAX_CHARS).collect();
    if title.len() < first.len() || lines.next().is_some() {
        title.push('…');
    }
    if title.is_empty() {
        "Run a command".to_owned()
    } else {
        title
    }
}

#[cfg(test)]
mod tests {
    use super::stream::STREAM_TAIL_BYTES;
    use crate::content::ToolCallUpdateView;
    use serde_json::json;

    use super::*;
    use crate::events::Event;
    use crate::exec::{CommandRunner, Sandbox, SandboxSupport};
    use crate::tools::output::testing::TestEnv;
    use tokio_util::sync::CancellationToken;

    /// Replays `chunks` (with a pause before each) and returns `result`, recording the spec.
    struct FakeRunner {
        chunks: Vec<(u64, String)>,
        result: Result<CommandOutput, ExecError>,
        seen: Mutex<Vec<CommandSpec>>,
    }

    impl FakeRunner {
        fn new(chunks: &[(u64, &str)], result: Result<CommandOutput, ExecError>) -> Arc<Self> {
            Arc::new(Self {
                chunks: chunks.iter().map(|(d, c)| (*d, (*c).to_owned())).collect(),
                result,
                seen: Mutex::new(vec![]),
            })
        }
    }

    impl CommandRunner for FakeRunner {
        fn run<'a>(
            &'a self,
            spec: CommandSpec,
            _cancel: CancellationToken,
            on_output: &'a (dyn Fn(&str) + Send + Sync),
        ) -> BoxFuture<'a, Result<CommandOutput, ExecError>> {
            self.seen.lock().unwrap().push(spec);
            Box::pin(async move {
                for (delay, chunk) in &self.chunks {
                    tokio::time::sleep(Duration::from_millis(*delay)).await;
                    on_output(chunk);
                }
                self.result.clone()
            })
        }

        fn shell(&self) -> crate::exec::Shell {
            crate::exec::Shell::Bash
        }

        fn sandbox_support(&self) -> SandboxSupport {
            SandboxSupport {
                filesystem: false,
                network: false,
                summary: "fake".into(),
            }
        }
    }

    fn output(exit: Exit, excerpt: &str, truncated: bool) -> CommandOutput {
        CommandOutput {
            exit,
            excerpt: excerpt.into(),
            truncated,
            total_bytes: if truncated {
                10_000
            } else {
                excerpt.len() as u64
            },
            total_lines: if truncated { 1_000 } else { 2 },
            spill_path: "/spill/call_1.out".into(),
            duration: Duration::from_millis(5),
            stderr: String::new(),
        }
    }

    #[tokio::test]
    async fn builds_the_spec_and_reports_exit_code() {
        let mut env = TestEnv::new();
        let runner = FakeRunner::new(&[], Ok(output(Exit::Code(2), "oops\n", false)));
        env.runner = Some(runner.clone());
        let mut ctx = env.ctx();
        ctx.sandbox = Sandbox::Restricted {
            writable: vec![env.root.clone()],
            hidden: vec![],
            protected: vec![],
            network: false,
            unix_sockets: vec![],
        };
        let out = Bash
            .call(json!({"command": "make test", "timeout_secs": 5}), &ctx)
            .await
            .unwrap();
        assert_eq!(out.text, "Exit code 2\noops\n");
        let seen = runner.seen.lock().unwrap().clone();
        assert_eq!(
            seen,
            vec![CommandSpec {
                command: "make test".into(),
                cwd: env.root.clone(),
                timeout: Duration::from_secs(5),
                sandbox: ctx.sandbox.clone(),
                spill_dir: env.spill.clone(),
                env_remove: vec![],
                max_bytes: 51_200,
                max_lines: 2_000,
                stdin: None,
                separate_stderr: false,
                spill_budget: None,
            }]
        );
        assert!(env.spill.is_dir());
    }

    #[tokio::test]
    async fn timeout_defaults_and_is_capped() {
        let mut env = TestEnv::new();
        let runner = FakeRunner::new(&[], Ok(output(Exit::Code(0), "", false)));
        env.runner = Some(runner.clone());
        let out = env.ok(&Bash, json!({"command": "true"})).await;
        assert_eq!(out, "Exit code 0\n(no output)\n");
        env.ok(&Bash, json!({"command": "true", "timeout_secs": 100_000}))
            .await;
        let seen = runner.seen.lock().unwrap();
        assert_eq!(seen[0].timeout, Duration::from_secs(120));
        assert_eq!(seen[1].timeout, Duration::from_secs(600));
    }

    #[tokio::test]
    async fn truncated_output_names_the_spill_file() {
        let mut env = TestEnv::new();
        env.runner = Some(FakeRunner::new(
            &[],
            Ok(output(Exit::Code(0), "l1\nl2\n", true)),
        ));
        let out = env.ok(&Bash, json!({"command": "seq 1000"})).await;
        assert_eq!(
            out,
            "Exit code 0\nl1\nl2\n\n[Output truncated: showing the first 2 of 1000 lines (6 of 10000 \
             bytes). The full output is in /spill/call_1.out; use `read` with offset/limit \
             (offset=801 shows the last 200 lines) or `grep` on that file to see the rest.]\n"
        );
    }

    #[tokio::test]
    async fn how_it_ended() {
        for (exit, first) in [
            (Exit::Signal(9), "Killed by signal 9 (SIGKILL)"),
            (
                Exit::TimedOut,
                "Timed out after 3 s; the command was killed",
            ),
            (Exit::Cancelled, "Cancelled; the command was killed"),
        ] {
            let mut env = TestEnv::new();
            env.runner = Some(FakeRunner::new(&[], Ok(output(exit, "x\n", false))));
            let out = env
                .ok(&Bash, json!({"command": "sleep 9", "timeout_secs": 3}))
                .await;
            assert_eq!(out, format!("{first}\nx\n"));
        }
    }

    #[tokio::test]
    async fn runner_errors() {
        let mut env = TestEnv::new();
        let err = env.call(&Bash, json!({"command": "ls"})).await;
        assert_eq!(err, Err(ToolError::Fatal("no command runner".into())));
        env.runner = Some(FakeRunner::new(
            &[],
            Err(ExecError::SandboxUnavailable("no landlock here".into())),
        ));
        assert_eq!(
            env.err(&Bash, json!({"command": "ls"})).await,
            "no landlock here"
        );
        env.runner = Some(FakeRunner::new(&[], Err(ExecError::Spawn("no sh".into()))));
        assert_eq!(
            env.err(&Bash, json!({"command": "ls"})).await,
            "could not start the command: no sh"
        );
        assert!(
            env.err(&Bash, json!({"command": "  "}))
                .await
                .contains("empty")
        );
    }

    #[tokio::test]
    async fn output_streams_to_the_editor_throttled() {
        let mut env = TestEnv::new();
        let chunks: Vec<(u64, String)> = (0..20).map(|i| (10, format!("line {i}\n"))).collect();
        let chunk_refs: Vec<(u64, &str)> = chunks.iter().map(|(d, c)| (*d, c.as_str())).collect();
        env.runner = Some(FakeRunner::new(
            &chunk_refs,
            Ok(output(Exit::Code(0), "done\n", false)),
        ));
        env.ok(&Bash, json!({"command": "for i in ..."})).await;
        let updates: Vec<String> = env
            .drain_events()
            .into_iter()
            // The command's end for terminal views comes last, with no content.
            .filter(|e| {
                !matches!(e, Event::ToolCallUpdate(v) if v.content.is_none() && v.terminal_exit.is_some())
            })
            .map(|e| match e {
                Event::ToolCallUpdate(ToolCallUpdateView {
                    id,
                    content: Some(c),
                    ..
                }) => {
                    assert_eq!(id, "call_1");
                    match &c[..] {
                        [ToolContent::Text { text }] => text.to_string(),
                        other => panic!("{other:?}"),
                    }
                }
                other => panic!("{other:?}"),
            })
            .collect();
        // ~200 ms of output at 100 ms intervals: a few updates, not one per chunk.
        assert!(!updates.is_empty() && updates.len() <= 4, "{updates:?}");
        // Each update holds everything so far (it replaces the previous content).
        for w in updates.windows(2) {
            let earlier = w[0].trim_end_matches("```");
            assert!(w[1].starts_with(earlier), "{updates:?}");
        }
        assert!(updates[0].starts_with("```\nline 0\n"));
    }

    #[test]
    fn stream_tail_keeps_the_last_bytes() {
        let mut t = Tail::default();
        assert_eq!(t.take_if_changed(), None);
        t.push("a\n");
        assert_eq!(t.take_if_changed().as_deref(), Some("```\na\n```"));
        assert_eq!(t.take_if_changed(), None);
        for _ in 0..300 {
            t.push(&"é".repeat(500));
        }
        let s = t.take_if_changed().unwrap();
        assert!(
            s.starts_with("… earlier output omitted\n\n```\n"),
            "{s:.60}"
        );
        assert!(s.len() <= STREAM_TAIL_BYTES + 40, "{}", s.len());
    }

    #[test]
    fn titles_describe_and_access() {
        assert_eq!(title("  cargo test  "), "cargo test");
        assert_eq!(title("cd x\nmake"), "cd x…");
        assert_eq!(title(&"a".repeat(200)), format!("{}…", "a".repeat(120)));
        assert_eq!(title(""), "Run a command");
        let d = Bash.describe(&json!({"command": "ls -la"}), Path::new("/"));
        assert_eq!(d.title, "ls -la");
        assert_eq!(
            Bash.access(&json!({"command": "rm -rf x"}), Path::new("/")),
            Access::Execute {
                command: "rm -rf x".into()
            }
        );
        assert_eq!(Bash.kind(), ToolKind::Execute);
    }
}
