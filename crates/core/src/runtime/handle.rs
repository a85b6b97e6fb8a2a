//! The submit side of a session's queue pair: what callers (the ACP server, `ferrite run`, tests)
//! hold to talk to a session task.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use super::error::RuntimeError;
use super::supervisor::{self, Handed, Submitted, TurnEnd};
use super::timing::{CLOSE_GRACE, uptime_ms};
use crate::content::UserContent;
use crate::events::{Event, Refusal, SessionEvent, SettingChange, Settings, TurnOptions};
use crate::ids::{SessionId, TurnId};

pub(super) enum Op {
    Prompt {
        content: Vec<UserContent>,
        options: TurnOptions,
        /// Assigned on submission, so the caller knows the turn before it starts.
        turn: TurnId,
        /// Answered when the task takes or refuses the prompt. If sending `Ok` fails, the
        /// supervisor gave up waiting (and answered the prompt): the turn must not start.
        reply: oneshot::Sender<Result<(), Refusal>>,
        /// Marked once the turn's `TurnEnded` is queued.
        ended: TurnEnd,
    },
    Cancel,
    /// A message for the running turn (`crate::steering`).
    Steer {
        content: Vec<UserContent>,
        reply: oneshot::Sender<crate::steering::Steered>,
    },
    Change {
        change: SettingChange,
        reply: oneshot::Sender<Result<Settings, RuntimeError>>,
    },
    Snapshot {
        reply: oneshot::Sender<Snapshot>,
    },
    Close {
        reply: oneshot::Sender<()>,
    },
    /// Idle and least recently used among many: give the log's descriptor back until the next
    /// write (ignored while a turn runs).
    Release,
    /// Provider listings changed: rebuild the catalog and tell the editor if the options did.
    Refresh,
}

pub(super) struct Snapshot {
    pub settings: Settings,
    pub usage: Event,
    pub replay: Vec<Event>,
    pub parent: Option<SessionId>,
    pub title: Option<String>,
    pub cwd: std::path::PathBuf,
    pub running: bool,
    /// The prompts of its MCP servers that are running, for the command list.
    pub mcp_prompts: Vec<crate::mcp::McpPrompt>,
}

/// The submit side of a session's queue pair.
#[derive(Clone)]
pub struct SessionHandle {
    pub(super) id: SessionId,
    pub(super) ops: mpsc::Sender<Op>,
    pub(super) abort: AbortHandle,
    /// When the client last used the session (ms since the process started), for parking the
    /// least recently used ones.
    pub(super) last_used: Arc<AtomicU64>,
    /// Where the supervisor of a prompt sends the `TurnEnded` the session task cannot.
    pub(super) events: mpsc::Sender<SessionEvent>,
    /// Turn ids, unique in the process.
    pub(super) next_turn: Arc<AtomicU64>,
    /// Bumped by every cancel, so a prompt's supervisor knows one was asked for.
    pub(super) cancels: Arc<tokio::sync::watch::Sender<u64>>,
}

impl SessionHandle {
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    fn touch(&self) {
        self.last_used.store(uptime_ms(), Ordering::Relaxed);
    }

    /// Starts a turn and waits until the session task took it; the turn's events and its
    /// `TurnEnded` follow on the event channel.
    pub async fn prompt(
        &self,
        content: Vec<UserContent>,
        options: TurnOptions,
    ) -> Result<TurnId, Refusal> {
        let submitted = self.submit_prompt(content, options)?;
        submitted.admitted.await.map_err(|_| Refusal::Closed)??;
        Ok(submitted.turn)
    }

    /// Queues a prompt without waiting; queuing in the caller's order keeps a session's requests
    /// in arrival order. From here on the runtime guarantees the prompt an end: either
    /// `admitted` yields the session's refusal (and no event of the turn is sent), or exactly one
    /// `TurnEnded` of `turn` follows on the event channel, also when the session task dies or
    /// does not take the prompt within [`supervisor::PROMPT_ACK_TIMEOUT`].
    pub fn submit_prompt(
        &self,
        content: Vec<UserContent>,
        options: TurnOptions,
    ) -> Result<Submitted, Refusal> {
        let turn = TurnId(self.next_turn.fetch_add(1, Ordering::Relaxed));
        let (reply, ack) = oneshot::channel();
        let ended = TurnEnd::default();
        self.try_submit(Op::Prompt {
            content,
            options,
            turn,
            reply,
            ended: ended.clone(),
        })?;
        let ops = self.ops.clone();
        Ok(supervisor::supervise(Handed {
            session: self.id.clone(),
            turn,
            ack,
            ended,
            task_gone: async move { ops.closed().await },
            cancel_requests: self.cancels.subscribe(),
            events: self.events.clone(),
        }))
    }

    /// Hands a message to the running turn, which takes it at its next model request. Queued
    /// like a prompt (in arrival order); answers [`Steered::NoRunningTurn`] when no turn runs
    /// or the running one already stopped taking messages.
    ///
    /// [`Steered::NoRunningTurn`]: crate::steering::Steered::NoRunningTurn
    pub fn submit_steering(
        &self,
        content: Vec<UserContent>,
    ) -> Result<oneshot::Receiver<crate::steering::Steered>, Refusal> {
        let (reply, rx) = oneshot::channel();
        self.try_submit(Op::Steer { content, reply })?;
        Ok(rx)
    }

    /// Queues a settings change without waiting (see [`Self::submit_prompt`]). A change that
    /// cannot be recorded in the log answers [`RuntimeError::Store`].
    pub fn submit_change(
        &self,
        change: SettingChange,
    ) -> Result<oneshot::Receiver<Result<Settings, RuntimeError>>, Refusal> {
        let (reply, rx) = oneshot::channel();
        self.try_submit(Op::Change { change, reply })?;
        Ok(rx)
    }

    fn try_submit(&self, op: Op) -> Result<(), Refusal> {
        self.touch();
        self.ops.try_send(op).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => {
                Refusal::Invalid("the session is not responding; try again or close it".into())
            }
            mpsc::error::TrySendError::Closed(_) => Refusal::Closed,
        })
    }

    /// Asks the running turn, if any, to stop. Never blocks.
    pub fn cancel(&self) {
        self.cancels.send_modify(|n| *n += 1);
        if let Err(mpsc::error::TrySendError::Full(op)) = self.ops.try_send(Op::Cancel) {
            // A full queue means the session task is busy; deliver the cancel without blocking
            // the caller.
            let ops = self.ops.clone();
            tokio::spawn(async move {
                let _ = ops.send(op).await;
            });
        }
    }

    pub async fn change(&self, change: SettingChange) -> Result<Settings, RuntimeError> {
        self.touch();
        let (reply, rx) = oneshot::channel();
        self.ops
            .send(Op::Change { change, reply })
            .await
            .map_err(|_| Refusal::Closed)?;
        rx.await.map_err(|_| Refusal::Closed)?
    }

    pub(super) async fn snapshot(&self) -> Result<Snapshot, Refusal> {
        let (reply, rx) = oneshot::channel();
        self.ops
            .send(Op::Snapshot { reply })
            .await
            .map_err(|_| Refusal::Closed)?;
        rx.await.map_err(|_| Refusal::Closed)
    }

    pub fn is_alive(&self) -> bool {
        !self.ops.is_closed()
    }

    pub(super) async fn close(&self) {
        let (reply, rx) = oneshot::channel();
        if self.ops.send(Op::Close { reply }).await.is_ok()
            && tokio::time::timeout(CLOSE_GRACE, rx).await.is_err()
        {
            tracing::warn!(session = %self.id, "session did not close in time; aborting it");
            self.abort.abort();
        }
    }
}
