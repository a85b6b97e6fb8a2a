//! The one supervisor of a prompt: every prompt a session task was handed ends with exactly one
//! `TurnEnded` on the event channel, or with the session's refusal. The session task sends the
//! `TurnEnded` of every turn it ran (`task::finish_turn`); the supervisor sends it when the task
//! cannot: the task died before or during the turn, or did not take the prompt within
//! [`PROMPT_ACK_TIMEOUT`]. Callers (the ACP server) answer a prompt on its `TurnEnded` and keep
//! no watchdog of their own.

use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::handle::{Op, SessionHandle};
use super::task::interrupted;
use crate::events::{Event, Refusal, SessionEvent, TurnOutcome};
use crate::ids::{SessionId, TurnId};

/// How long a session task has to take a prompt before the prompt is ended as failed.
pub const PROMPT_ACK_TIMEOUT: Duration = Duration::from_secs(10);

/// A prompt handed to a session task.
pub struct Submitted {
    /// The turn's id: its events and its `TurnEnded` carry it.
    pub turn: TurnId,
    /// Resolves within [`PROMPT_ACK_TIMEOUT`]: `Ok` once the turn is the runtime's to end (its
    /// `TurnEnded` will follow), or the session's refusal (no event of the turn follows).
    pub admitted: oneshot::Receiver<Result<(), Refusal>>,
}

/// Marked by the session task right after it queued a turn's `TurnEnded`.
#[derive(Clone, Default)]
pub(super) struct TurnEnd(CancellationToken);

impl TurnEnd {
    pub(super) fn mark(&self) {
        self.0.cancel();
    }
}

/// What became of a prompt the session task did not refuse.
enum Taken {
    Running,
    /// The session task went away with the prompt still queued.
    Died,
    Unresponsive,
}

pub(super) fn supervise(
    handle: &SessionHandle,
    turn: TurnId,
    ack: oneshot::Receiver<Result<(), Refusal>>,
    ended: TurnEnd,
) -> Submitted {
    let (admit, admitted) = oneshot::channel();
    let ops = handle.ops.clone();
    let events = handle.events.clone();
    let session = handle.id.clone();
    tokio::spawn(async move {
        let taken = match wait_taken(ack).await {
            Ok(taken) => taken,
            Err(refusal) => {
                let _ = admit.send(Err(refusal));
                return;
            }
        };
        let _ = admit.send(Ok(()));
        let outcome = match taken {
            Taken::Running => {
                if !died_during_turn(&ops, &ended).await {
                    return;
                }
                interrupted(
                    "session_task_died",
                    "The session stopped unexpectedly during the turn; what was recorded is kept. Reload the session to continue.",
                )
            }
            Taken::Died => interrupted(
                "session_task_died",
                "The session stopped unexpectedly before the turn started; reload the session to continue.",
            ),
            Taken::Unresponsive => interrupted(
                "session_unresponsive",
                "The session did not respond; the turn was not started. Try again, or close and reload the session.",
            ),
        };
        send_turn_end(&events, &session, turn, outcome).await;
    });
    Submitted { turn, admitted }
}

async fn wait_taken(mut ack: oneshot::Receiver<Result<(), Refusal>>) -> Result<Taken, Refusal> {
    let answer = match tokio::time::timeout(PROMPT_ACK_TIMEOUT, &mut ack).await {
        Ok(answer) => answer,
        Err(_) => {
            // After `close` the task's `Ok` can no longer arrive, so it will not start the turn;
            // one sent before is still read here.
            ack.close();
            match ack.try_recv() {
                Ok(answer) => Ok(answer),
                Err(_) => return Ok(Taken::Unresponsive),
            }
        }
    };
    match answer {
        Ok(Ok(())) => Ok(Taken::Running),
        Ok(Err(r)) => Err(r),
        Err(_) => Ok(Taken::Died),
    }
}

/// Waits for the turn to end; true when the session task went away without ending it.
async fn died_during_turn(ops: &mpsc::Sender<Op>, ended: &TurnEnd) -> bool {
    tokio::select! {
        biased;
        () = ended.0.cancelled() => false,
        // The task marks before it can exit, so a task that ended the turn is never seen here.
        () = ops.closed() => !ended.0.is_cancelled(),
    }
}

/// Queues a turn's end: a failure's text as a message, then `TurnEnded`.
pub(super) async fn send_turn_end(
    events: &mpsc::Sender<SessionEvent>,
    session: &SessionId,
    turn: TurnId,
    outcome: TurnOutcome,
) {
    let send = |event| SessionEvent {
        session: session.clone(),
        turn: Some(turn),
        event,
    };
    if let Some(f) = &outcome.failure {
        let _ = events
            .send(send(Event::AgentMessageChunk {
                text: f.message.clone(),
            }))
            .await;
    }
    let _ = events.send(send(Event::TurnEnded(outcome))).await;
}
