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
    supervise_within(handle, turn, ack, ended, PROMPT_ACK_TIMEOUT)
}

fn supervise_within(
    handle: &SessionHandle,
    turn: TurnId,
    ack: oneshot::Receiver<Result<(), Refusal>>,
    ended: TurnEnd,
    ack_timeout: Duration,
) -> Submitted {
    let (admit, admitted) = oneshot::channel();
    let ops = handle.ops.clone();
    let events = handle.events.clone();
    let session = handle.id.clone();
    tokio::spawn(async move {
        let taken = match wait_taken(ack, ack_timeout).await {
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

async fn wait_taken(
    mut ack: oneshot::Receiver<Result<(), Refusal>>,
    timeout: Duration,
) -> Result<Taken, Refusal> {
    let answer = match tokio::time::timeout(timeout, &mut ack).await {
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicU64;

    use super::*;

    const SHORT: Duration = Duration::from_millis(100);

    /// A handle whose session task is the test: it holds the op queue's receiving end.
    fn handle() -> (
        SessionHandle,
        mpsc::Receiver<Op>,
        mpsc::Receiver<SessionEvent>,
    ) {
        let (ops, ops_rx) = mpsc::channel(8);
        let (events, events_rx) = mpsc::channel(8);
        let handle = SessionHandle {
            id: SessionId::parse("s").unwrap(),
            ops,
            abort: tokio::spawn(async {}).abort_handle(),
            last_used: Arc::default(),
            events,
            next_turn: Arc::new(AtomicU64::new(1)),
        };
        (handle, ops_rx, events_rx)
    }

    fn submit(h: &SessionHandle) -> (Submitted, oneshot::Sender<Result<(), Refusal>>, TurnEnd) {
        let (reply, ack) = oneshot::channel();
        let ended = TurnEnd::default();
        let submitted = supervise_within(h, TurnId(7), ack, ended.clone(), SHORT);
        (submitted, reply, ended)
    }

    /// The events the supervisor sent for turn 7: the failure text, then `TurnEnded`'s kind.
    async fn ending(events: &mut mpsc::Receiver<SessionEvent>) -> (String, String) {
        let text = match events.recv().await.unwrap().event {
            Event::AgentMessageChunk { text } => text,
            other => panic!("{other:?}"),
        };
        let end = events.recv().await.unwrap();
        assert_eq!(end.turn, Some(TurnId(7)));
        let Event::TurnEnded(outcome) = end.event else {
            panic!("{:?}", end.event)
        };
        (text, outcome.failure.unwrap().error_kind)
    }

    #[tokio::test]
    async fn a_task_that_never_takes_the_prompt_is_unresponsive_and_cannot_start_it_later() {
        let (h, _ops, mut events) = handle();
        let (submitted, reply, _) = submit(&h);
        assert_eq!(submitted.admitted.await.unwrap(), Ok(()));
        let (text, kind) = ending(&mut events).await;
        assert_eq!(kind, "session_unresponsive");
        assert!(text.contains("did not respond"), "{text}");
        // The task wakes up late: its `Ok` fails, so it knows not to start the turn.
        assert!(reply.send(Ok(())).is_err());
    }

    #[tokio::test]
    async fn a_task_that_dies_before_or_during_the_turn_still_ends_it_once() {
        let (h, ops, mut events) = handle();
        let (submitted, reply, _) = submit(&h);
        drop(reply);
        drop(ops);
        assert_eq!(submitted.admitted.await.unwrap(), Ok(()));
        assert_eq!(ending(&mut events).await.1, "session_task_died");

        let (h, ops, mut events) = handle();
        let (submitted, reply, _) = submit(&h);
        reply.send(Ok(())).unwrap();
        assert_eq!(submitted.admitted.await.unwrap(), Ok(()));
        drop(ops);
        let (text, kind) = ending(&mut events).await;
        assert_eq!(kind, "session_task_died");
        assert!(text.contains("during the turn"), "{text}");
        drop(h);
        assert!(events.recv().await.is_none(), "exactly one TurnEnded");
    }

    #[tokio::test]
    async fn a_turn_the_task_ended_and_a_refused_prompt_get_nothing_from_the_supervisor() {
        let (h, ops, mut events) = handle();
        let (submitted, reply, ended) = submit(&h);
        reply.send(Ok(())).unwrap();
        assert_eq!(submitted.admitted.await.unwrap(), Ok(()));
        ended.mark();
        drop(ops);
        let (h2, _ops2, mut events2) = handle();
        let (submitted, reply, _) = submit(&h2);
        reply.send(Err(Refusal::Busy)).unwrap();
        assert_eq!(submitted.admitted.await.unwrap(), Err(Refusal::Busy));
        drop((h, h2));
        assert!(events.recv().await.is_none());
        assert!(events2.recv().await.is_none());
    }
}
