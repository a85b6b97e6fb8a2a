//! The one supervisor of a prompt: every prompt a session task was handed ends with exactly one
//! `TurnEnded` on the event channel, or with the session's refusal. The session task sends the
//! `TurnEnded` of every turn it ran (`task::finish_turn`); the supervisor sends it when the task
//! cannot: the task died before or during the turn, did not take the prompt within
//! [`PROMPT_ACK_TIMEOUT`], or is stuck while the user waits for a cancel (the turn is answered
//! `cancelled` [`CANCEL_ANSWER_DEADLINE`] after the request; the task's own end, if it ever
//! comes, is then recorded but not sent again). Callers (the ACP server) answer a prompt on its `TurnEnded` and keep
//! no watchdog of their own.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::events::{Event, Refusal, SessionEvent, TurnOutcome};
use crate::failure::FailureKind;
use crate::ids::{SessionId, TurnId};

/// How long a session task has to take a prompt before the prompt is ended as failed.
pub const PROMPT_ACK_TIMEOUT: Duration = Duration::from_secs(10);

/// How long after a cancel request a turn is answered `cancelled` even if its session task never
/// ends it: the task's own grace for a turn that ignores cancel ([`super::CANCEL_GRACE`]), plus
/// time for the task to record and send the end.
pub const CANCEL_ANSWER_DEADLINE: Duration = Duration::from_secs(5);

/// The supervisor's waits.
#[derive(Clone, Copy)]
pub(super) struct Limits {
    pub ack: Duration,
    pub after_cancel: Duration,
}

/// A prompt handed to a session task.
pub struct Submitted {
    /// The turn's id: its events and its `TurnEnded` carry it.
    pub turn: TurnId,
    /// Resolves within [`PROMPT_ACK_TIMEOUT`]: `Ok` once the turn is the runtime's to end (its
    /// `TurnEnded` will follow), or the session's refusal (no event of the turn follows).
    pub admitted: oneshot::Receiver<Result<(), Refusal>>,
}

/// A turn's end, shared by the session task and the supervisor: whoever claims it sends the
/// `TurnEnded` (so it is sent once); the task marks it right after queuing its own.
#[derive(Clone, Default)]
pub(super) struct TurnEnd {
    sent: CancellationToken,
    claimed: Arc<AtomicBool>,
}

impl TurnEnd {
    /// True for the first caller only: it sends the `TurnEnded`.
    pub(super) fn claim(&self) -> bool {
        !self.claimed.swap(true, Ordering::AcqRel)
    }

    pub(super) fn mark(&self) {
        self.sent.cancel();
    }
}

/// What became of a prompt the session task did not refuse.
enum Taken {
    Running,
    /// The session task went away with the prompt still queued.
    Died,
    Unresponsive,
}

/// The prompt of `turn` in `session`, handed to its task.
pub(super) struct Handed<G> {
    pub session: SessionId,
    pub turn: TurnId,
    /// The task's answer: took it, or refused it.
    pub ack: oneshot::Receiver<Result<(), Refusal>>,
    /// Marked by the task once it queued the turn's `TurnEnded`.
    pub ended: TurnEnd,
    /// Resolves when the session task is gone (its op queue closed).
    pub task_gone: G,
    /// Bumped by every `SessionHandle::cancel`.
    pub cancel_requests: watch::Receiver<u64>,
    pub events: mpsc::Sender<SessionEvent>,
}

/// Starts the supervisor of a prompt just handed to its session task.
pub(super) fn supervise<G>(handed: Handed<G>) -> Submitted
where
    G: Future<Output = ()> + Send + 'static,
{
    let limits = Limits {
        ack: PROMPT_ACK_TIMEOUT,
        after_cancel: CANCEL_ANSWER_DEADLINE,
    };
    supervise_within(handed, limits)
}

fn supervise_within<G>(handed: Handed<G>, limits: Limits) -> Submitted
where
    G: Future<Output = ()> + Send + 'static,
{
    let Handed {
        session,
        turn,
        ack,
        ended,
        task_gone,
        mut cancel_requests,
        events,
    } = handed;
    let (admit, admitted) = oneshot::channel();
    tokio::spawn(async move {
        let taken = match wait_taken(ack, limits.ack).await {
            Ok(taken) => taken,
            Err(refusal) => {
                let _ = admit.send(Err(refusal));
                return;
            }
        };
        let _ = admit.send(Ok(()));
        let outcome = match taken {
            Taken::Running => {
                match watch_turn(task_gone, &ended, &mut cancel_requests, limits).await {
                    Watched::Ended => return,
                    Watched::TaskDied => TurnOutcome::failed(
                        FailureKind::SessionTaskDied,
                        "The session stopped unexpectedly during the turn; what was recorded is kept. Reload the session to continue.",
                    ),
                    Watched::CancelUnanswered => {
                        if !ended.claim() {
                            return;
                        }
                        tracing::warn!(session = %session, "the session task did not end a cancelled turn; answering it");
                        TurnOutcome::ended(crate::log::StopReason::Cancelled)
                    }
                }
            }
            Taken::Died => TurnOutcome::failed(
                FailureKind::SessionTaskDied,
                "The session stopped unexpectedly before the turn started; reload the session to continue.",
            ),
            Taken::Unresponsive => TurnOutcome::failed(
                FailureKind::SessionUnresponsive,
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

/// How a running turn's watch ended.
enum Watched {
    /// The session task sent the turn's `TurnEnded`.
    Ended,
    /// The session task went away without sending it.
    TaskDied,
    /// A cancel was asked for and the task had not ended the turn `after_cancel` later.
    CancelUnanswered,
}

async fn watch_turn(
    task_gone: impl Future<Output = ()>,
    ended: &TurnEnd,
    cancel_requests: &mut watch::Receiver<u64>,
    limits: Limits,
) -> Watched {
    let cancel_overdue = async {
        if cancel_requests.changed().await.is_err() {
            // The handle is gone: no cancel can come.
            return std::future::pending().await;
        }
        tokio::time::sleep(limits.after_cancel).await;
    };
    tokio::select! {
        biased;
        () = ended.sent.cancelled() => Watched::Ended,
        // The task marks before it can exit, so a task that ended the turn is never seen here.
        () = task_gone => if ended.sent.is_cancelled() { Watched::Ended } else { Watched::TaskDied },
        () = cancel_overdue => Watched::CancelUnanswered,
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
    use super::*;

    const SHORT: Duration = Duration::from_millis(100);

    /// A prompt handed to a session task that is the test: it holds the task's side.
    struct Task {
        reply: oneshot::Sender<Result<(), Refusal>>,
        ended: TurnEnd,
        /// Dropping it is the task going away.
        alive: oneshot::Sender<()>,
        /// The session handle's cancel requests.
        cancels: watch::Sender<u64>,
    }

    fn submit() -> (Submitted, Task, mpsc::Receiver<SessionEvent>) {
        let (reply, ack) = oneshot::channel();
        let (alive, gone) = oneshot::channel::<()>();
        let (events, events_rx) = mpsc::channel(8);
        let ended = TurnEnd::default();
        let (cancels, cancel_requests) = watch::channel(0);
        let handed = Handed {
            session: SessionId::parse("s").unwrap(),
            turn: TurnId(7),
            ack,
            ended: ended.clone(),
            task_gone: async move {
                let _ = gone.await;
            },
            cancel_requests,
            events,
        };
        let task = Task {
            reply,
            ended,
            alive,
            cancels,
        };
        let limits = Limits {
            ack: SHORT,
            after_cancel: SHORT,
        };
        (supervise_within(handed, limits), task, events_rx)
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
        let (submitted, task, mut events) = submit();
        assert_eq!(submitted.admitted.await.unwrap(), Ok(()));
        let (text, kind) = ending(&mut events).await;
        assert_eq!(kind, "session_unresponsive");
        assert!(text.contains("did not respond"), "{text}");
        // The task wakes up late: its `Ok` fails, so it knows not to start the turn.
        assert!(task.reply.send(Ok(())).is_err());
        assert!(events.recv().await.is_none(), "exactly one TurnEnded");
    }

    #[tokio::test]
    async fn a_task_that_dies_before_or_during_the_turn_still_ends_it_once() {
        let (submitted, task, mut events) = submit();
        drop(task);
        assert_eq!(submitted.admitted.await.unwrap(), Ok(()));
        let (text, kind) = ending(&mut events).await;
        assert_eq!(kind, "session_task_died");
        assert!(text.contains("before the turn started"), "{text}");

        let (submitted, task, mut events) = submit();
        task.reply.send(Ok(())).unwrap();
        assert_eq!(submitted.admitted.await.unwrap(), Ok(()));
        drop(task.alive);
        let (text, kind) = ending(&mut events).await;
        assert_eq!(kind, "session_task_died");
        assert!(text.contains("during the turn"), "{text}");
        assert!(events.recv().await.is_none(), "exactly one TurnEnded");
    }

    #[tokio::test]
    async fn a_turn_the_task_ended_and_a_refused_prompt_get_nothing_from_the_supervisor() {
        let (submitted, task, mut events) = submit();
        task.reply.send(Ok(())).unwrap();
        assert_eq!(submitted.admitted.await.unwrap(), Ok(()));
        task.ended.mark();
        drop(task.alive);
        assert!(events.recv().await.is_none());

        let (submitted, task, mut events) = submit();
        task.reply.send(Err(Refusal::Busy)).unwrap();
        assert_eq!(submitted.admitted.await.unwrap(), Err(Refusal::Busy));
        drop(task.alive);
        assert!(events.recv().await.is_none());
    }

    /// A session task stuck while its turn runs (say, blocked on a full pipe) never takes the
    /// cancel: the prompt is still answered `cancelled`, once, and the task's late end is not
    /// sent a second time.
    #[tokio::test]
    async fn a_cancelled_turn_is_answered_even_when_its_session_task_is_stuck() {
        let (submitted, task, mut events) = submit();
        task.reply.send(Ok(())).unwrap();
        assert_eq!(submitted.admitted.await.unwrap(), Ok(()));
        task.cancels.send_modify(|n| *n += 1);
        let end = events.recv().await.unwrap();
        assert_eq!(end.turn, Some(TurnId(7)));
        assert_eq!(
            end.event,
            Event::TurnEnded(TurnOutcome::ended(crate::log::StopReason::Cancelled))
        );
        // The task wakes up and ends the turn: it must not send a second `TurnEnded`.
        assert!(!task.ended.claim(), "the supervisor answered already");
        drop(task.alive);
        assert!(events.recv().await.is_none(), "exactly one TurnEnded");
    }

    /// Without a cancel, a turn may run as long as it likes.
    #[tokio::test]
    async fn a_long_turn_is_not_ended_by_the_supervisor() {
        let (submitted, task, mut events) = submit();
        task.reply.send(Ok(())).unwrap();
        assert_eq!(submitted.admitted.await.unwrap(), Ok(()));
        let waited = tokio::time::timeout(SHORT * 5, events.recv()).await;
        assert!(waited.is_err(), "{waited:?}");
        assert!(task.ended.claim());
    }
}
