//! A session driven in-process: a temporary FERRITE_HOME and workspace, the scripted model, a
//! command runner that only records (or holds, or cannot sandbox), and an approver whose
//! questions the test answers. What the test reads is what an editor would see: the session's
//! events and its permission requests, in the order they happened.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferrite_core::env::Env;
use ferrite_core::events::{Event, SessionEvent, SettingChange, TurnOptions, TurnOutcome};
use ferrite_core::exec::{
    CommandOutput, CommandRunner, CommandSpec, ExecError, Exit, Sandbox, SandboxSupport,
};
use ferrite_core::modes::{Harness, Mode};
use ferrite_core::permissions::{Approver, PermissionAnswer, PermissionRequest};
use ferrite_core::runtime::{NewSession, Runtime, Services, SessionHandle};
use ferrite_store::content::{ToolCallUpdateView, ToolCallView, ToolStatus, UserContent};
use ferrite_store::ids::TurnId;
use ferrite_store::log::StopReason;
use ferrite_test_support::scripted_model::ScriptedModel;
use futures::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// A model of a known provider (its facts come from the built-in catalog).
pub const MODEL: &str = "anthropic/claude-sonnet-5";

/// The longest a test waits for the next thing it expects.
const WAIT: Duration = Duration::from_secs(10);

/// What the editor is shown: an event, or a permission request.
#[derive(Debug, Clone)]
pub enum Seen {
    Event(Event),
    Asked(PermissionRequest),
}

pub struct Rig {
    pub home: tempfile::TempDir,
    pub ws: tempfile::TempDir,
    pub model: Arc<ScriptedModel>,
    pub runner: Arc<FakeRunner>,
    pub runtime: Runtime,
    pub session: SessionHandle,
    events: mpsc::Receiver<SessionEvent>,
    questions: mpsc::UnboundedReceiver<Question>,
    /// The answer channel of the question asked last, until answered.
    open_question: Option<oneshot::Sender<PermissionAnswer>>,
}

struct Question {
    request: PermissionRequest,
    answer: oneshot::Sender<PermissionAnswer>,
}

impl Rig {
    pub async fn new() -> Rig {
        Rig::with_runner(FakeRunner::default()).await
    }

    pub async fn with_runner(runner: FakeRunner) -> Rig {
        let home = tempfile::tempdir().unwrap();
        // The rig's tests follow one turn's events to its end and then expect quiet; a title
        // written after the first turn (covered by the binary's tests, `titles.rs`) is off.
        std::fs::write(home.path().join("config.toml"), "titles = false\n").unwrap();
        let ws = tempfile::tempdir().unwrap();
        Rig::open(home, ws, ScriptedModel::new(), Arc::new(runner)).await
    }

    /// A new runtime (as after a restart) over the same FERRITE_HOME and workspace, with a new
    /// session.
    pub async fn restart(self) -> Rig {
        let Rig {
            home,
            ws,
            model,
            runner,
            runtime,
            ..
        } = self;
        runtime.shutdown().await;
        Rig::open(home, ws, model, runner).await
    }

    async fn open(
        home: tempfile::TempDir,
        ws: tempfile::TempDir,
        model: Arc<ScriptedModel>,
        runner: Arc<FakeRunner>,
    ) -> Rig {
        let env = Env::from_pairs([
            ("ANTHROPIC_API_KEY", "test-key"),
            ("FERRITE_MODEL", MODEL),
            ("HOME", home.path().to_str().unwrap()),
        ]);
        let mut services = Services::new(home.path().to_owned(), env, Some(model.connector()));
        services.runner = Some(runner.clone());
        let (tx, questions) = mpsc::unbounded_channel();
        assert!(
            services
                .approver
                .set(Arc::new(TestApprover { questions: tx }))
                .is_ok()
        );
        let (runtime, events) = Runtime::new(services);
        let opened = runtime
            .new_session(NewSession {
                cwd: ws.path().to_owned(),
                additional_directories: vec![],
                harness: Harness::Code,
                mcp_servers: vec![],
                model: None,
            })
            .await
            .unwrap();
        opened.notices.release();
        Rig {
            home,
            ws,
            model,
            runner,
            runtime,
            session: opened.handle,
            events,
            questions,
            open_question: None,
        }
    }

    pub fn ws(&self) -> &Path {
        self.ws.path()
    }

    pub async fn set_mode(&self, mode: Mode) {
        self.session
            .change(SettingChange::Mode(mode))
            .await
            .unwrap();
    }

    /// Starts a turn with a text prompt.
    pub async fn prompt(&self, text: &str) -> TurnId {
        self.session
            .prompt(text_prompt(text), TurnOptions::default())
            .await
            .unwrap()
    }

    /// The next thing the editor is shown, events first: an event sent before a question was
    /// asked is read before it, so the order is the order they happened in.
    pub async fn next(&mut self) -> Seen {
        let next = tokio::time::timeout(WAIT, async {
            tokio::select! {
                biased;
                e = self.events.recv() => e.map(|e| Seen::Event(e.event)),
                q = self.questions.recv() => q.map(|q| {
                    self.open_question = Some(q.answer);
                    Seen::Asked(q.request)
                }),
            }
        })
        .await;
        next.expect("the session went quiet").expect("channel open")
    }

    /// Reads until `pred` holds for what was seen; returns everything read.
    pub async fn until(&mut self, pred: impl Fn(&Seen) -> bool) -> Vec<Seen> {
        let mut seen = vec![];
        loop {
            let s = self.next().await;
            let done = pred(&s);
            seen.push(s);
            if done {
                return seen;
            }
        }
    }

    /// Answers the open permission request with option `id`.
    pub fn answer(&mut self, id: &str) {
        let tx = self.open_question.take().expect("a question is open");
        let _ = tx.send(PermissionAnswer::Selected(id.to_owned()));
    }

    /// Answers the open permission request "cancelled", as an editor does for every open request
    /// when the user cancels the turn (ACP: before its `session/cancel` arrives, or after it).
    pub fn answer_cancelled(&mut self) {
        let tx = self.open_question.take().expect("a question is open");
        let _ = tx.send(PermissionAnswer::Cancelled);
    }

    /// Reads to the end of the current turn, answering permission requests with `answers` in
    /// order (a request beyond them fails the test).
    pub async fn finish(&mut self, answers: &[&str]) -> (Vec<Seen>, TurnOutcome) {
        let mut answers = answers.iter();
        let mut seen = vec![];
        loop {
            let s = self.next().await;
            match &s {
                Seen::Asked(r) => {
                    let a = answers.next().unwrap_or_else(|| panic!("unexpected {r:?}"));
                    self.answer(a);
                }
                Seen::Event(Event::TurnEnded(outcome)) => {
                    // How a turn stopped is what these tests compare; its usage sum is checked
                    // through the binary (crates/cli/tests/suite/turn_usage.rs).
                    let outcome = TurnOutcome {
                        usage: None,
                        ..outcome.clone()
                    };
                    seen.push(s);
                    return (seen, outcome);
                }
                Seen::Event(_) => {}
            }
            seen.push(s);
        }
    }

    /// Prompts and reads the whole turn.
    pub async fn turn(&mut self, text: &str, answers: &[&str]) -> (Vec<Seen>, TurnOutcome) {
        self.prompt(text).await;
        self.finish(answers).await
    }

    /// Asserts that nothing is shown for a while.
    pub async fn quiet(&mut self) {
        let r = tokio::time::timeout(Duration::from_millis(200), self.next()).await;
        assert!(r.is_err(), "expected nothing, got {:?}", r.ok());
    }
}

pub fn text_prompt(text: &str) -> Vec<UserContent> {
    vec![UserContent::Text { text: text.into() }]
}

pub fn ended(stop: StopReason) -> TurnOutcome {
    TurnOutcome {
        stop,
        failure: None,
        usage: None,
        answer: None,
    }
}

/// The agent's text of a turn.
pub fn agent_text(seen: &[Seen]) -> String {
    seen.iter()
        .filter_map(|s| match s {
            Seen::Event(Event::AgentMessageChunk { text }) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// What a tool call looked like to the editor, one line per step: `call <id>`, `asked <id>`,
/// `<status> <id>` for updates that set one, `output <id>` for streamed output (a command's
/// end for terminal views, which other editors are not sent, is left out).
pub fn call_steps(seen: &[Seen]) -> Vec<String> {
    seen.iter()
        .filter_map(|s| match s {
            Seen::Event(Event::ToolCall(ToolCallView { id, .. })) => Some(format!("call {id}")),
            Seen::Asked(r) => Some(format!("asked {}", r.call.id)),
            // A command's end for terminal views: editors without them are not sent it.
            Seen::Event(Event::ToolCallUpdate(v))
                if v.status.is_none() && v.content.is_none() && v.terminal_exit.is_some() =>
            {
                None
            }
            Seen::Event(Event::ToolCallUpdate(ToolCallUpdateView { id, status, .. })) => {
                Some(match status {
                    Some(ToolStatus::Pending) => format!("pending {id}"),
                    Some(ToolStatus::InProgress) => format!("in_progress {id}"),
                    Some(ToolStatus::Completed) => format!("completed {id}"),
                    Some(ToolStatus::Failed) => format!("failed {id}"),
                    None => format!("output {id}"),
                })
            }
            _ => None,
        })
        .collect()
}

/// The text of the last update of tool call `id`.
pub fn call_result(seen: &[Seen], id: &str) -> String {
    seen.iter()
        .rev()
        .find_map(|s| match s {
            Seen::Event(Event::ToolCallUpdate(u)) if u.id == id && u.status.is_some() => {
                serde_json::to_string(&u.content).ok()
            }
            _ => None,
        })
        .unwrap_or_default()
}

struct TestApprover {
    questions: mpsc::UnboundedSender<Question>,
}

impl Approver for TestApprover {
    fn request(
        &self,
        _session: &ferrite_store::ids::SessionId,
        request: PermissionRequest,
    ) -> BoxFuture<'_, PermissionAnswer> {
        let (answer, rx) = oneshot::channel();
        let sent = self.questions.send(Question { request, answer });
        Box::pin(async move {
            if sent.is_err() {
                return PermissionAnswer::Cancelled;
            }
            rx.await.unwrap_or(PermissionAnswer::Cancelled)
        })
    }
}

/// How the fake runner behaves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RunnerKind {
    /// Every command "runs" at once and prints `ran: <command>`.
    #[default]
    Instant,
    /// Every command runs until cancelled.
    Hold,
    /// The kernel cannot sandbox: restricted commands fail as `SandboxUnavailable`.
    NoSandbox,
}

/// A command runner that runs nothing: it records what it was asked to run.
#[derive(Default)]
pub struct FakeRunner {
    pub kind: RunnerKind,
    ran: Mutex<Vec<CommandSpec>>,
}

impl FakeRunner {
    pub fn new(kind: RunnerKind) -> Self {
        Self {
            kind,
            ran: Mutex::default(),
        }
    }

    /// The commands run, with the sandbox each ran in.
    pub fn ran(&self) -> Vec<(String, Sandbox)> {
        self.ran
            .lock()
            .unwrap()
            .iter()
            .map(|s| (s.command.clone(), s.sandbox.clone()))
            .collect()
    }
}

impl CommandRunner for FakeRunner {
    fn run<'a>(
        &'a self,
        spec: CommandSpec,
        cancel: CancellationToken,
        on_output: &'a (dyn Fn(&str) + Send + Sync),
    ) -> BoxFuture<'a, Result<CommandOutput, ExecError>> {
        Box::pin(async move {
            let restricted = matches!(spec.sandbox, Sandbox::Restricted { .. });
            if self.kind == RunnerKind::NoSandbox && restricted {
                return Err(ExecError::SandboxUnavailable(
                    "this kernel has no Landlock".into(),
                ));
            }
            self.ran.lock().unwrap().push(spec.clone());
            let exit = if self.kind == RunnerKind::Hold {
                cancel.cancelled().await;
                Exit::Cancelled
            } else {
                Exit::Code(0)
            };
            let excerpt = format!("ran: {}\n", spec.command);
            on_output(&excerpt);
            Ok(CommandOutput {
                exit,
                total_bytes: excerpt.len() as u64,
                excerpt,
                truncated: false,
                total_lines: 1,
                spill_path: spec.spill_dir.join("fake.out"),
                duration: Duration::ZERO,
                stderr: String::new(),
            })
        })
    }

    fn shell(&self) -> ferrite_core::exec::Shell {
        ferrite_core::exec::Shell::Bash
    }

    fn sandbox_support(&self) -> SandboxSupport {
        let ok = self.kind != RunnerKind::NoSandbox;
        SandboxSupport {
            filesystem: ok,
            network: ok,
            summary: "a test runner".into(),
        }
    }
}

/// Every update of a tool call comes after the call's card, as an editor needs it (an update of
/// a card it never saw is lost, or breaks its view).
pub fn assert_cards_before_updates(seen: &[Seen]) {
    let mut shown = std::collections::HashSet::new();
    for s in seen {
        match s {
            Seen::Event(Event::ToolCall(v)) => {
                shown.insert(v.id.clone());
            }
            Seen::Event(Event::ToolCallUpdate(u)) => {
                assert!(
                    shown.contains(&u.id),
                    "update of {} before its card: {seen:?}",
                    u.id
                );
            }
            Seen::Asked(r) => {
                assert!(
                    shown.contains(&r.call.id),
                    "question about {} before its card",
                    r.call.id
                );
            }
            Seen::Event(_) => {}
        }
    }
}
