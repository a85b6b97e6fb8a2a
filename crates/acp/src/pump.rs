//! The one path from a session to the client. Core events become `session/update`s, prompts are
//! answered when their turn ends, and requests to the client (`session/request_permission`,
//! `fs/read_text_file`) are written here too, after every event the session produced before
//! asking. So the client always sees a `tool_call` before any question about it, and a prompt's
//! answer after all of its updates; an event of a turn that was already answered is dropped.
//!
//! Why a barrier and not one queue: the core sends events on its own channel and asks through the
//! `Approver`/`ClientFs` traits, which know nothing of that channel. A core event is in the channel
//! once its `send` returned, and the core asks only after that, so "forward everything already
//! queued, then write the request" keeps the order the turn produced.

use std::sync::Arc;

use agent_client_protocol::v1::schema as acp;
use ferrite_core::events::{Event, SessionEvent, TurnOutcome};
use ferrite_core::ids::SessionId;
use ferrite_core::log::StopReason;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::mapping;
use crate::rpc;
use crate::server::Server;

/// What the server (not the core) has to say about a session, queued behind the core's events.
pub(crate) enum Outbound {
    /// A request to the client, written only if its waiter still waits.
    Request { id: Value, line: String },
    /// The waiter of `id` gave up after the request was written: withdraw it.
    Withdraw { id: Value },
    /// The session task cannot answer this prompt (it died or is stuck): answer it as failed.
    FailPrompt {
        session: SessionId,
        request_id: Value,
        kind: &'static str,
        message: &'static str,
    },
}

pub(crate) async fn run(
    server: Arc<Server>,
    events: mpsc::Receiver<SessionEvent>,
    mut outbound: mpsc::UnboundedReceiver<Outbound>,
    stop: CancellationToken,
) {
    let mut pump = Pump {
        server,
        events,
        carry: None,
    };
    loop {
        if let Some(ev) = pump.carry.take() {
            pump.forward_merged(ev).await;
            continue;
        }
        tokio::select! {
            biased;
            item = outbound.recv() => match item {
                Some(item) => {
                    pump.flush_queued().await;
                    pump.outbound(item).await;
                }
                None => return,
            },
            ev = pump.events.recv() => match ev {
                Some(ev) => pump.forward_merged(ev).await,
                None => return,
            },
            () = stop.cancelled() => {
                // Shutting down: pass on what is already queued, then stop.
                pump.flush_queued().await;
                return;
            }
        }
    }
}

struct Pump {
    server: Arc<Server>,
    events: mpsc::Receiver<SessionEvent>,
    /// An event read while merging deltas that did not merge.
    carry: Option<SessionEvent>,
}

impl Pump {
    async fn forward_merged(&mut self, ev: SessionEvent) {
        let (ev, next) = coalesce(ev, &mut self.events);
        self.carry = next;
        forward(&self.server, ev).await;
    }

    /// Forwards every event queued right now. Bounded by the queue's length at the start, so a
    /// busy session elsewhere cannot hold a request back for long.
    async fn flush_queued(&mut self) {
        if let Some(ev) = self.carry.take() {
            self.forward_merged(ev).await;
        }
        let mut left = self.events.len();
        while left > 0 {
            let Ok(ev) = self.events.try_recv() else {
                break;
            };
            left -= 1;
            self.forward_merged(ev).await;
        }
        if let Some(ev) = self.carry.take() {
            self.forward_merged(ev).await;
        }
    }

    async fn outbound(&mut self, item: Outbound) {
        let server = &self.server;
        match item {
            Outbound::Request { id, line } => {
                // A request answered or withdrawn while it waited here is never written.
                if server.calls.mark_written(&id) {
                    server.out.line(line).await;
                }
            }
            Outbound::Withdraw { id } => {
                let line = rpc::notification_line("$/cancel_request", json!({ "requestId": id }));
                server.out.line(line).await;
            }
            Outbound::FailPrompt {
                session,
                request_id,
                kind,
                message,
            } => fail_prompt(server, &session, &request_id, kind, message).await,
        }
    }
}

/// Merges the text deltas already queued behind `ev` (same session, turn and kind) into one
/// update. Only what is already waiting is merged, so this never delays a delta; it only keeps a
/// slow reader from paying per-delta costs. Returns the first event that did not merge.
fn coalesce(
    mut ev: SessionEvent,
    events: &mut mpsc::Receiver<SessionEvent>,
) -> (SessionEvent, Option<SessionEvent>) {
    const MAX_MERGED_BYTES: usize = 64 * 1024;
    loop {
        match &ev.event {
            Event::AgentMessageChunk { text } | Event::AgentThoughtChunk { text }
                if text.len() < MAX_MERGED_BYTES => {}
            _ => return (ev, None),
        }
        let Ok(next) = events.try_recv() else {
            return (ev, None);
        };
        if next.session != ev.session || next.turn != ev.turn {
            return (ev, Some(next));
        }
        match (&mut ev.event, next.event) {
            (Event::AgentMessageChunk { text }, Event::AgentMessageChunk { text: more })
            | (Event::AgentThoughtChunk { text }, Event::AgentThoughtChunk { text: more }) => {
                text.push_str(&more);
            }
            (_, other) => {
                let rest = SessionEvent {
                    session: next.session,
                    turn: next.turn,
                    event: other,
                };
                return (ev, Some(rest));
            }
        }
    }
}

async fn forward(server: &Server, ev: SessionEvent) {
    if let Some(turn) = ev.turn {
        let current = server.prompts().get(&ev.session).map(|p| p.turn);
        match current {
            // No prompt waits: this turn was already answered (e.g. by a watchdog).
            None => return,
            Some(Some(t)) if t != turn => return,
            Some(_) => {}
        }
    }
    if let Event::TurnEnded(outcome) = &ev.event {
        let pending = server.prompts().remove(&ev.session);
        if let Some(p) = pending {
            p.done.cancel();
            server
                .out
                .reply(&p.request_id, Ok(prompt_response(outcome)))
                .await;
        }
        return;
    }
    let notices = server.client().notices;
    for u in mapping::updates(&ev.event, notices) {
        server.out.update(&ev.session, u).await;
    }
}

pub(crate) fn prompt_response(outcome: &TurnOutcome) -> Value {
    let mut resp = acp::PromptResponse::new(mapping::stop_reason(outcome.stop));
    if let Some(f) = &outcome.failure {
        let facts = json!({"ferrite": {"turnFailure": {"terminalStatus": f.terminal_status.id(), "errorKind": f.error_kind}}});
        if let Value::Object(m) = facts {
            resp = resp.meta(m);
        }
    }
    serde_json::to_value(resp).unwrap_or_else(|_| json!({"stopReason": "end_turn"}))
}

/// Answers a prompt whose session cannot (a dead or stuck session task), if it is still waiting.
async fn fail_prompt(
    server: &Server,
    session: &SessionId,
    request_id: &Value,
    kind: &str,
    message: &str,
) {
    let pending = {
        let mut prompts = server.prompts();
        match prompts.get(session) {
            Some(p) if p.request_id == *request_id => prompts.remove(session),
            _ => None,
        }
    };
    let Some(p) = pending else { return };
    p.done.cancel();
    server
        .out
        .update(
            session,
            acp::SessionUpdate::AgentMessageChunk(acp::ContentChunk::new(acp::ContentBlock::Text(
                acp::TextContent::new(message.to_owned()),
            ))),
        )
        .await;
    let outcome = TurnOutcome {
        stop: StopReason::EndTurn,
        failure: Some(ferrite_core::log::TurnFailure {
            terminal_status: ferrite_core::model::TerminalStatus::Interrupted,
            error_kind: kind.to_owned(),
            message: message.to_owned(),
        }),
    };
    server
        .out
        .reply(request_id, Ok(prompt_response(&outcome)))
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrite_core::ids::TurnId;

    fn ev(turn: u64, event: Event) -> SessionEvent {
        SessionEvent {
            session: SessionId::parse("s").unwrap(),
            turn: Some(TurnId(turn)),
            event,
        }
    }

    fn text(t: &str) -> Event {
        Event::AgentMessageChunk { text: t.into() }
    }

    #[tokio::test]
    async fn queued_deltas_merge_but_nothing_else_does() {
        let (tx, mut rx) = mpsc::channel(16);
        for e in [
            ev(1, text("b")),
            ev(1, text("c")),
            ev(1, Event::AgentThoughtChunk { text: "t".into() }),
            ev(1, text("d")),
        ] {
            tx.send(e).await.unwrap();
        }
        let (merged, carry) = coalesce(ev(1, text("a")), &mut rx);
        assert_eq!(merged.event, text("abc"));
        assert_eq!(
            carry.unwrap().event,
            Event::AgentThoughtChunk { text: "t".into() }
        );
        let (next, carry) = coalesce(rx.try_recv().unwrap(), &mut rx);
        assert_eq!((next.event, carry), (text("d"), None));
        // Another turn's delta is not merged.
        tx.send(ev(2, text("x"))).await.unwrap();
        let (one, carry) = coalesce(ev(1, text("y")), &mut rx);
        assert_eq!(one.event, text("y"));
        assert_eq!(carry.unwrap().turn, Some(TurnId(2)));
    }
}

#[cfg(test)]
mod ordering_tests {
    use std::collections::HashMap;
    use std::sync::Mutex;

    use ferrite_core::content::{ToolCallView, ToolKind, ToolStatus};
    use ferrite_core::ids::TurnId;
    use ferrite_core::runtime::{Runtime, Services};

    use super::*;
    use crate::server::{ClientInfo, Out, PendingPrompt};

    /// A server whose stdout is `out`, with a prompt of session "s" waiting on turn 1.
    fn server(out: mpsc::Sender<String>) -> (Arc<Server>, mpsc::UnboundedReceiver<Outbound>) {
        let home = std::env::temp_dir().join("ferrite-pump-test-unused");
        let env = ferrite_core::env::Env::from_pairs(Vec::<(String, String)>::new());
        let (runtime, _events) = Runtime::new(Services::new(home, env, None));
        let (pump_tx, pump_rx) = mpsc::unbounded_channel();
        let server = Arc::new(Server {
            runtime: Arc::new(runtime),
            out: Out(out),
            prompts: Mutex::new(HashMap::new()),
            client: Mutex::new(ClientInfo::default()),
            version: "test".into(),
            calls: Default::default(),
            pump: pump_tx,
        });
        server.prompts().insert(
            SessionId::parse("s").unwrap(),
            PendingPrompt {
                request_id: json!(1),
                turn: Some(TurnId(1)),
                done: CancellationToken::new(),
            },
        );
        (server, pump_rx)
    }

    fn tool_call(id: &str) -> SessionEvent {
        SessionEvent {
            session: SessionId::parse("s").unwrap(),
            turn: Some(TurnId(1)),
            event: Event::ToolCall(ToolCallView {
                id: id.into(),
                title: "Edit a.rs".into(),
                kind: ToolKind::Edit,
                status: ToolStatus::Pending,
                locations: vec![],
                content: vec![],
                raw_input: None,
            }),
        }
    }

    /// The worst case of the old race: the request is queued while the `tool_call` it is about
    /// still waits in the event queue, and the pump sees both at once.
    #[tokio::test]
    async fn a_request_waits_for_the_events_queued_before_it() {
        let (out_tx, mut out_rx) = mpsc::channel(64);
        let (server, pump_rx) = server(out_tx);
        let (events_tx, events_rx) = mpsc::channel(64);
        for id in ["t1", "t2"] {
            events_tx.send(tool_call(id)).await.unwrap();
        }
        let request = json!("ferrite-0");
        server.calls.test_insert_pending(&request);
        assert!(server.to_pump(Outbound::Request {
            id: request.clone(),
            line: rpc::request_line(&request, "session/request_permission", json!({})),
        }));
        let stop = CancellationToken::new();
        let pump = tokio::spawn(run(server.clone(), events_rx, pump_rx, stop.clone()));
        let mut lines = vec![];
        for _ in 0..3 {
            lines.push(out_rx.recv().await.unwrap());
        }
        stop.cancel();
        pump.await.unwrap();
        assert!(
            lines[0].contains("\"t1\"") && lines[1].contains("\"t2\""),
            "{lines:?}"
        );
        assert!(lines[2].contains("session/request_permission"), "{lines:?}");
    }

    /// A request whose waiter gave up before the pump got to it is never written.
    #[tokio::test]
    async fn a_request_withdrawn_before_it_was_written_is_dropped_silently() {
        let (out_tx, mut out_rx) = mpsc::channel(64);
        let (server, pump_rx) = server(out_tx);
        let (_events_tx, events_rx) = mpsc::channel::<SessionEvent>(64);
        // "ferrite-0" is queued but no longer pending: skipped.
        let request = json!("ferrite-0");
        let line = rpc::request_line(&request, "session/request_permission", json!({}));
        server.to_pump(Outbound::Request { id: request, line });
        server.calls.test_insert_pending(&json!("ferrite-1"));
        server.to_pump(Outbound::Request {
            id: json!("ferrite-1"),
            line: "marker".into(),
        });
        let stop = CancellationToken::new();
        let pump = tokio::spawn(run(server.clone(), events_rx, pump_rx, stop.clone()));
        assert_eq!(out_rx.recv().await.unwrap(), "marker");
        stop.cancel();
        pump.await.unwrap();
    }
}
