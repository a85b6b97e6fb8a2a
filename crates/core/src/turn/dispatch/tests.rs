//! A call's lifecycle, seen as the editor sees it: the events, in order.

use std::path::PathBuf;
use std::sync::Arc;

use pretty_assertions::assert_eq;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::catalog::Catalog;
use crate::config::Config;
use crate::credentials::Credentials;
use crate::env::Env;
use crate::modes::Mode;
use crate::services::Services;
use crate::session::testing::TestSession;
use crate::turn::env::EnvParts;
use crate::turn::exit_plan::ExitPlan;
use crate::turn::resolve::TurnRules;

struct Rig {
    session: TestSession,
    env: CallEnv,
    root: PathBuf,
    _ws: tempfile::TempDir,
}

/// A `code` session (mode `ask`, nobody to ask) over a fresh workspace.
fn rig() -> Rig {
    let ws = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(ws.path()).unwrap();
    let session = TestSession::new(root.clone());
    let home = session.home.path().to_owned();
    let services = Services::new(
        home.clone(),
        Env::from_pairs([("HOME", "/nonexistent")]),
        None,
    );
    let config = Config::default();
    let start = session.recorder.start();
    let mut env = CallEnv::new(EnvParts {
        services: &services,
        rec: &session.recorder,
        config: &config,
        start: &start,
        rules: TurnRules::load(&home, &root, &config).unwrap(),
        catalog: Catalog::build(&config, &services.env, &Credentials::default()).into(),
        force_ask: false,
        model_images: true,
        background: Default::default(),
        lsp: None,
        skills: Default::default(),
        hooks: Default::default(),
        agents: Default::default(),
    });
    let exit_plan = ExitPlan::new(&session.recorder, &env);
    env.tools.add(Arc::new(exit_plan));
    Rig {
        session,
        env,
        root,
        _ws: ws,
    }
}

fn call(id: &str, name: &str, arguments: serde_json::Value) -> Call {
    Call {
        id: id.into(),
        name: name.into(),
        arguments: arguments.to_string(),
    }
}

/// Each event as `card <kind> <title>` or `update <status>: <text>`.
fn shown(events: Vec<Event>) -> Vec<String> {
    events
        .into_iter()
        .map(|e| match e {
            Event::ToolCall(v) => format!("card {:?} {}", v.kind, v.title),
            Event::ToolCallUpdate(u) => {
                let text = match u.content.as_deref() {
                    Some([crate::content::ToolContent::Text { text }]) => {
                        text.lines().next().unwrap_or_default().to_owned()
                    }
                    _ => String::new(),
                };
                format!("update {:?}: {text}", u.status)
            }
            other => format!("{other:?}"),
        })
        .collect()
}

#[tokio::test]
async fn a_call_shows_its_card_then_runs_then_shows_its_result() {
    let mut r = rig();
    std::fs::write(r.root.join("a.txt"), "alpha\n").unwrap();
    let c = call("c1", "read", serde_json::json!({"path": "a.txt"}));
    let end = run_call(&r.session.recorder, &r.env, &c, &CancellationToken::new()).await;
    assert!(matches!(end, Ok(CallEnd::Done)));
    let events = shown(r.session.drain_events());
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[0], "card Read Read a.txt");
    assert_eq!(events[1], "update Some(InProgress): ");
    assert!(
        events[2].starts_with("update Some(Completed)"),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_refused_call_is_never_shown_running() {
    let mut r = rig();
    r.session
        .recorder
        .record(EntryKind::Mode { mode: Mode::Plan })
        .unwrap();
    let c = call(
        "w1",
        "write",
        serde_json::json!({"path": "b.txt", "content": "x"}),
    );
    let end = run_call(&r.session.recorder, &r.env, &c, &CancellationToken::new()).await;
    assert!(matches!(end, Ok(CallEnd::Done)));
    let events = shown(r.session.drain_events());
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(events[0].starts_with("card Edit"), "{events:?}");
    assert_eq!(
        events[1],
        "update Some(Failed): Permission denied: plan mode does not write files; finish the plan with exit_plan first."
    );
    assert!(!r.root.join("b.txt").exists());
}

#[tokio::test]
async fn exit_plan_is_a_tool_of_plan_mode_only() {
    let mut r = rig();
    let c = call("p1", "exit_plan", serde_json::json!({"plan": "1. do it"}));
    run_call(&r.session.recorder, &r.env, &c, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        shown(r.session.drain_events()),
        [
            "card Other exit_plan",
            "update Some(Failed): Unknown tool `exit_plan`. Use one of the tools you were given."
        ]
    );
    assert!(
        !r.env
            .specs(&r.session.recorder)
            .iter()
            .any(|s| s.name == "exit_plan")
    );

    r.session
        .recorder
        .record(EntryKind::Mode { mode: Mode::Plan })
        .unwrap();
    assert!(
        r.env
            .specs(&r.session.recorder)
            .iter()
            .any(|s| s.name == "exit_plan")
    );
    run_call(&r.session.recorder, &r.env, &c, &CancellationToken::new())
        .await
        .unwrap();
    // Its own question (here: nobody to ask), never a policy decision or a "running" mark.
    assert_eq!(
        shown(r.session.drain_events()),
        [
            "card SwitchMode Ready to code?",
            "update Some(Failed): No one can approve a plan in this session, so it stays a plan. Stay in plan mode."
        ]
    );
}

#[tokio::test]
async fn calls_after_a_cancel_are_shown_and_get_results_without_running() {
    let mut r = rig();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let calls = [
        call("a", "read", serde_json::json!({"path": "x"})),
        call("b", "ls", serde_json::json!({})),
    ];
    let outcome = run_all(&r.session.recorder, &r.env, &calls, &cancel)
        .await
        .unwrap();
    assert_eq!(outcome, Some(TurnOutcome::ended(StopReason::Cancelled)));
    assert_eq!(
        shown(r.session.drain_events()),
        [
            "card Read Read x",
            "update Some(Failed): Cancelled by the user before it ran.",
            "card Read List the working directory",
            "update Some(Failed): Cancelled by the user before it ran."
        ]
    );
}

/// Answers every question with the option of `kind`, counting the questions.
struct Answers {
    kind: crate::permissions::OptionKind,
    asked: std::sync::atomic::AtomicUsize,
}

impl crate::permissions::Approver for Answers {
    fn request(
        &self,
        _session: &crate::ids::SessionId,
        req: crate::permissions::PermissionRequest,
    ) -> futures::future::BoxFuture<'_, crate::permissions::PermissionAnswer> {
        self.asked
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = req
            .options
            .iter()
            .find(|o| o.kind == self.kind)
            .map(|o| o.id.clone());
        Box::pin(async move {
            match id {
                Some(id) => crate::permissions::PermissionAnswer::Selected(id),
                None => crate::permissions::PermissionAnswer::Cancelled,
            }
        })
    }
}

#[tokio::test]
async fn an_always_answer_decides_the_later_calls_of_the_same_turn() {
    let mut r = rig();
    let answers = Arc::new(Answers {
        kind: crate::permissions::OptionKind::AllowAlways,
        asked: Default::default(),
    });
    r.env.approver = Some(answers.clone());
    let calls = [
        call(
            "w1",
            "write",
            serde_json::json!({"path": "a.txt", "content": "1"}),
        ),
        call(
            "w2",
            "write",
            serde_json::json!({"path": "b.txt", "content": "2"}),
        ),
    ];
    let outcome = run_all(
        &r.session.recorder,
        &r.env,
        &calls,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(outcome, None);
    assert_eq!(
        answers.asked.load(std::sync::atomic::Ordering::Relaxed),
        1,
        "the second write was allowed by the stored rule"
    );
    assert!(r.root.join("a.txt").exists() && r.root.join("b.txt").exists());
    // The question went to the approver between the card and the "running" mark.
    let events = shown(r.session.drain_events());
    assert!(
        events[1].starts_with("update Some(InProgress)"),
        "{events:?}"
    );
}
