//! Turns core events into `session/update`s and answers prompts when their turn ends. Every
//! event of a turn passes through here in order, so a prompt's answer always follows its
//! updates, and an event of a turn that was already answered is dropped.

use std::sync::Arc;

use agent_client_protocol::v1::schema as acp;
use ferrite_core::events::{Event, SessionEvent, TurnOutcome};
use ferrite_core::ids::SessionId;
use ferrite_core::log::StopReason;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::mapping;
use crate::server::Server;

pub(crate) async fn run(
    server: Arc<Server>,
    mut events: mpsc::Receiver<SessionEvent>,
    stop: CancellationToken,
) {
    let mut carry: Option<SessionEvent> = None;
    loop {
        let ev = match carry.take() {
            Some(ev) => ev,
            None => {
                let next = tokio::select! {
                    ev = events.recv() => ev,
                    () = stop.cancelled() => {
                        // Shutting down: pass on what is already queued, then stop.
                        while let Ok(ev) = events.try_recv() {
                            forward(&server, ev).await;
                        }
                        return;
                    }
                };
                match next {
                    Some(ev) => ev,
                    None => return,
                }
            }
        };
        let (ev, next) = coalesce(ev, &mut events);
        carry = next;
        forward(&server, ev).await;
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
pub(crate) async fn fail_prompt(
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
