//! The prompt watchdog, in-process: `ferrite_acp::serve` over an in-memory pipe, a runtime with
//! the scripted model, and a session task that dies or stalls while a prompt waits for its answer.
//! (Here rather than in `crates/acp/tests`: the stall waits out the 10 s prompt acknowledgement,
//! which alongside the e2e suite costs one test thread for 10 s instead of a test binary that
//! cargo runs on its own.)
//!
//! No public trait of core runs on the session task (the model, tools, approver, client file
//! system and MCP tools all run on the turn's task), so the failure is injected through the one
//! interface the session task does call: `tracing`. A log layer that panics kills the task; a
//! log write that blocks (stderr a full pipe nobody reads) stalls it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ferrite_test_support::scripted_model::{Reply, ScriptedModel};
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

use super::common::HANG_GUARD;
use super::inproc::{Editor, agent_text};

/// What the trap does to the first event it matches.
#[derive(Clone, Copy)]
enum Trap {
    Panic,
    /// Blocks the thread until released (or 60 s).
    Block,
}

/// A subscriber that springs once, on the first event of `level` from ferrite-core whose message
/// contains `needle`: an event the session task logs, so the trap springs on that task.
struct Tripwire {
    level: Level,
    needle: &'static str,
    trap: Trap,
    sprung: AtomicBool,
    release: Mutex<Option<std::sync::mpsc::Receiver<()>>>,
}

struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl Subscriber for Tripwire {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let meta = event.metadata();
        if *meta.level() != self.level || !meta.target().starts_with("ferrite_core") {
            return;
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        if !message.0.contains(self.needle) || self.sprung.swap(true, Ordering::SeqCst) {
            return;
        }
        match self.trap {
            Trap::Panic => panic!("a log layer failed on the session task"),
            Trap::Block => {
                let release = self.release.lock().unwrap().take();
                if let Some(rx) = release {
                    let _ = rx.recv_timeout(Duration::from_secs(60));
                }
            }
        }
    }
}

#[tokio::test]
async fn a_session_task_that_dies_mid_turn_still_answers_the_prompt() {
    let tripwire = Tripwire {
        level: Level::ERROR,
        needle: "turn task failed",
        trap: Trap::Panic,
        sprung: AtomicBool::new(false),
        release: Mutex::new(None),
    };
    // The test's runtime runs every task on this thread: the session task logs through it.
    let _log = tracing::subscriber::set_default(tripwire);
    let model = ScriptedModel::new();
    // The turn dies (a provider client's bug); the session task, logging that, dies too.
    model.push(
        Reply::new()
            .text("working")
            .panic("a bug in a provider client"),
    );
    let mut e = Editor::start(&model).await;
    let session = e.new_session().await;
    let t = Instant::now();
    let prompt = e.prompt(&session, "go").await;
    let (before, answer) = e.answer(&prompt).await;
    assert_eq!(
        answer["result"]["_meta"]["ferrite"]["turnFailure"],
        json!({"terminalStatus": "interrupted", "errorKind": "session_task_died"})
    );
    assert!(t.elapsed() < HANG_GUARD);
    assert!(
        agent_text(&before).contains("stopped unexpectedly"),
        "{before:?}"
    );
    // The server keeps serving other requests.
    let other = e.new_session().await;
    assert_ne!(other, session);
}

#[test]
fn a_stalled_session_task_cannot_block_the_prompt_or_other_requests() {
    let (release, released) = std::sync::mpsc::channel();
    let tripwire = tracing::Dispatch::new(Tripwire {
        level: Level::DEBUG,
        needle: "taking a prompt",
        trap: Trap::Block,
        sprung: AtomicBool::new(false),
        release: Mutex::new(Some(released)),
    });
    // Blocking a thread needs more than one: the watchdog runs on another worker.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(3)
        .enable_all()
        .on_thread_start(move || {
            std::mem::forget(tracing::dispatcher::set_default(&tripwire));
        })
        .build()
        .unwrap();
    rt.block_on(async {
        let model = ScriptedModel::new();
        let mut e = Editor::start(&model).await;
        let session = e.new_session().await;
        let t = Instant::now();
        let stuck = e.prompt(&session, "hello").await;
        // Meanwhile the server answers other requests at once.
        let list = e.send("session/list", json!({})).await;
        let (_, answer) = e.answer(&list).await;
        assert!(answer.get("result").is_some(), "{answer}");
        // The stuck task is released only at the end: an answer at all is the behaviour.
        assert!(t.elapsed() < HANG_GUARD);
        e.notify("session/cancel", json!({"sessionId": session}))
            .await;
        let (_, answer) = e.answer(&stuck).await;
        assert_eq!(
            answer["result"]["_meta"]["ferrite"]["turnFailure"]["errorKind"],
            "session_unresponsive",
            "{answer}"
        );
        assert!(t.elapsed() < HANG_GUARD, "bounded: {:?}", t.elapsed());
        let _ = release.send(());
    });
    rt.shutdown_timeout(Duration::from_secs(5));
}
