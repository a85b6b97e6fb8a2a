//! The one path from a session to the client. Core events become `session/update`s, prompts are
//! answered when their turn ends (`TurnEnded`, which the core guarantees), and requests to the
//! client (`session/request_permission`,
//! `fs/read_text_file`) are written here too, after every event the session produced before
//! asking. So the client always sees a `tool_call` before any question about it, and a prompt's
//! answer after all of its updates; an event of a turn that was already answered is dropped.
//!
//! Why a barrier and not one queue: the core sends events on its own channel and asks through the
//! `Approver`/`ClientFs` traits, which know nothing of that channel. A core event is in the channel
//! once its `send` returned, and the core asks only after that, so "forward everything already
//! queued, then write the request" keeps the order the turn produced.

use std::sync::Arc;

use agent_client_protocol_schema::v1 as acp;
use ferrite_core::events::{Event, SessionEvent, TurnOutcome};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::calls::Caller;
use crate::client::Client;
use crate::mapping;
use crate::out::Out;
use crate::outbound::Outbound;
use crate::prompts::{Asked, Prompts};
use crate::rpc;

/// What the pump writes with and to.
pub(crate) struct Pump {
    pub out: Out,
    pub prompts: Arc<Prompts>,
    pub caller: Arc<Caller>,
    pub client: Arc<Client>,
    /// Commands drawn as terminals, for clients that do that.
    pub terminals: crate::terminal::Terminals,
}

pub(crate) async fn run(
    pump: Pump,
    events: mpsc::Receiver<SessionEvent>,
    mut outbound: mpsc::UnboundedReceiver<Outbound>,
    stop: CancellationToken,
) {
    let mut pump = Running {
        pump,
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

struct Running {
    pump: Pump,
    events: mpsc::Receiver<SessionEvent>,
    /// An event read while merging deltas that did not merge.
    carry: Option<SessionEvent>,
}

impl Running {
    async fn forward_merged(&mut self, ev: SessionEvent) {
        let (ev, next) = coalesce(ev, &mut self.events);
        self.carry = next;
        self.pump.forward(ev).await;
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
        let pump = &self.pump;
        match item {
            Outbound::Request { id, line } => {
                // A request answered or withdrawn while it waited here is never written.
                if pump.caller.mark_written(&id) {
                    pump.out.line(line).await;
                }
            }
            Outbound::Withdraw { id } => {
                let line = rpc::notification_line("$/cancel_request", json!({ "requestId": id }));
                pump.out.line(line).await;
            }
            Outbound::Notify { line } => pump.out.line(line).await,
            Outbound::Barrier { done } => {
                let _ = done.send(());
            }
        }
    }
}

impl Pump {
    async fn forward(&self, ev: SessionEvent) {
        if let Some(turn) = ev.turn {
            if !self.prompts.wants(&ev.session, turn) {
                // No prompt waits for this turn: it was already answered.
                return;
            }
            if let Event::TurnEnded(outcome) = &ev.event {
                self.terminals.turn_ended(&ev.session);
                match self.prompts.end(&ev.session, turn) {
                    Some((request, Asked::Prompt)) => {
                        self.out.result(&request, prompt_response(outcome)).await;
                    }
                    Some((request, Asked::Rewind)) => match rewind_response(outcome) {
                        Ok(body) => self.out.result(&request, body).await,
                        Err(fail) => self.out.fail(&request, &fail).await,
                    },
                    None => {}
                }
                return;
            }
        }
        let updates = match self.client.terminal_output() {
            true => self.terminals.updates(&ev.session, &ev.event),
            false => None,
        }
        .unwrap_or_else(|| mapping::updates(&ev.event, self.client.takes()));
        for u in updates {
            self.out.update(&ev.session, u).await;
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

pub(crate) fn prompt_response(outcome: &TurnOutcome) -> Value {
    let mut resp = acp::PromptResponse::new(mapping::stop_reason(outcome.stop))
        .usage(outcome.usage.as_ref().and_then(turn_usage));
    if let Some(f) = &outcome.failure {
        let facts = json!({"ferrite": {"turnFailure": {"terminalStatus": f.terminal_status.id(), "errorKind": f.error_kind}}});
        if let Value::Object(m) = facts {
            resp = resp.meta(m);
        }
    }
    serde_json::to_value(resp).unwrap_or_else(|_| json!({"stopReason": "end_turn"}))
}

/// `_session/rewind`'s answer: `{}` with what was done in `_meta.ferrite.summary`, or an error
/// (an unknown message, a cancel at a question, a turn that failed).
fn rewind_response(outcome: &TurnOutcome) -> Result<Value, crate::fail::Fail> {
    use crate::fail::Fail;
    if let Some(f) = &outcome.failure {
        return Err(Fail::internal(f.message.clone()));
    }
    match &outcome.answer {
        _ if outcome.stop == ferrite_store::log::StopReason::Cancelled => Err(Fail {
            code: crate::rpc::REQUEST_CANCELLED,
            message: "the rewind was cancelled; nothing was changed".into(),
            data: None,
        }),
        Some(a) if !a.done => Err(Fail::params(a.text.clone())),
        Some(a) => Ok(json!({"_meta": {"ferrite": {"summary": a.text}}})),
        None => Err(Fail::internal("the rewind ended without an answer")),
    }
}

/// The turn's tokens in the schema's unstable `usage` (docs/acp.md, "The prompt"): input counts
/// cached reads and writes, output counts thought tokens, so the total is input + output. A turn
/// whose calls reported nothing (none ran, or the server sent no usage) has none.
fn turn_usage(u: &ferrite_store::usage::Usage) -> Option<acp::Usage> {
    if *u == ferrite_store::usage::Usage::default() {
        return None;
    }
    let usage = acp::Usage::new(
        u.input_tokens + u.output_tokens,
        u.input_tokens,
        u.output_tokens,
    )
    .cached_read_tokens(u.cached_input_tokens)
    .cached_write_tokens(u.cache_write_tokens)
    // Zero is what a provider that does not count thinking apart says: not reported.
    .thought_tokens((u.reasoning_tokens > 0).then_some(u.reasoning_tokens));
    Some(usage)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrite_store::ids::{SessionId, TurnId};

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
    use ferrite_store::content::{ToolCallView, ToolKind, ToolStatus};
    use ferrite_store::ids::{SessionId, TurnId};

    use super::*;

    /// A pump writing to `out`, with a prompt of session "s" waiting on turn 1.
    fn pump(out: mpsc::Sender<String>) -> (Pump, mpsc::UnboundedReceiver<Outbound>) {
        let (pump_tx, pump_rx) = mpsc::unbounded_channel();
        let prompts = Arc::new(Prompts::default());
        let s = SessionId::parse("s").unwrap();
        prompts.begin(&s, &json!(1));
        prompts.started(&s, &json!(1), TurnId(1));
        let pump = Pump {
            out: Out(out),
            prompts,
            caller: Arc::new(Caller::new(pump_tx)),
            client: Arc::default(),
            terminals: Default::default(),
        };
        (pump, pump_rx)
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
        let (pump, pump_rx) = pump(out_tx);
        let caller = pump.caller.clone();
        let (events_tx, events_rx) = mpsc::channel(64);
        for id in ["t1", "t2"] {
            events_tx.send(tool_call(id)).await.unwrap();
        }
        let request = json!("ferrite-0");
        caller.test_insert_pending(&request);
        assert!(caller.to_pump(Outbound::Request {
            id: request.clone(),
            line: rpc::request_line(&request, "session/request_permission", json!({})),
        }));
        let stop = CancellationToken::new();
        let pump = tokio::spawn(run(pump, events_rx, pump_rx, stop.clone()));
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
        let (pump, pump_rx) = pump(out_tx);
        let caller = pump.caller.clone();
        let (_events_tx, events_rx) = mpsc::channel::<SessionEvent>(64);
        // "ferrite-0" is queued but no longer pending: skipped.
        let request = json!("ferrite-0");
        let line = rpc::request_line(&request, "session/request_permission", json!({}));
        caller.to_pump(Outbound::Request { id: request, line });
        caller.test_insert_pending(&json!("ferrite-1"));
        caller.to_pump(Outbound::Request {
            id: json!("ferrite-1"),
            line: "marker".into(),
        });
        let stop = CancellationToken::new();
        let pump = tokio::spawn(run(pump, events_rx, pump_rx, stop.clone()));
        assert_eq!(out_rx.recv().await.unwrap(), "marker");
        stop.cancel();
        pump.await.unwrap();
    }
}
