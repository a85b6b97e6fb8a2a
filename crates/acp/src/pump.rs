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
    loop {
        let ev = tokio::select! {
            ev = events.recv() => ev,
            () = stop.cancelled() => {
                // Shutting down: pass on what is already queued, then stop.
                while let Ok(ev) = events.try_recv() {
                    forward(&server, ev).await;
                }
                return;
            }
        };
        match ev {
            Some(ev) => forward(&server, ev).await,
            None => return,
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
