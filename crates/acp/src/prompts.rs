//! Prompts waiting for their turn to end: the one place a prompt's waiting state lives. A prompt
//! is registered before it is handed to its session, learns its turn when the core accepts it,
//! and is answered by the pump on that turn's `TurnEnded` (or by its handler when the session
//! refuses it). The core guarantees the `TurnEnded` (`core::runtime::supervisor`).

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};

use ferrite_store::ids::{SessionId, TurnId};
use serde_json::Value;

/// Per session, the prompts waiting, in the order they were sent: the running one first, then
/// those queued behind it (the core starts each when the one before it ends).
#[derive(Default)]
pub(crate) struct Prompts {
    waiting: Mutex<HashMap<SessionId, VecDeque<Waiting>>>,
    /// Told whenever a request stops waiting, for [`Prompts::until_idle`].
    ended: tokio::sync::Notify,
}

/// Which request a turn answers, so its answer has that request's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Asked {
    /// `session/prompt`: `{stopReason}`.
    Prompt,
    /// `_session/rewind`: `{}` or an error.
    Rewind,
}

struct Waiting {
    request: Value,
    asked: Asked,
    /// `None` for the moment between handing the prompt over and learning its turn.
    turn: Option<TurnId>,
}

impl Prompts {
    fn map(&self) -> MutexGuard<'_, HashMap<SessionId, VecDeque<Waiting>>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers `request` as a prompt of `session`, behind those already waiting there.
    pub fn begin(&self, session: &SessionId, request: &Value) {
        self.begin_as(session, request, Asked::Prompt);
    }

    /// Registers `request`, answered when its turn ends, in the shape `asked` says.
    pub fn begin_as(&self, session: &SessionId, request: &Value, asked: Asked) {
        let waiting = Waiting {
            request: request.clone(),
            asked,
            turn: None,
        };
        self.map()
            .entry(session.clone())
            .or_default()
            .push_back(waiting);
    }

    /// The prompt `request` runs as `turn`.
    pub fn started(&self, session: &SessionId, request: &Value, turn: TurnId) {
        if let Some(w) = self
            .map()
            .get_mut(session)
            .and_then(|q| q.iter_mut().find(|w| w.request == *request))
        {
            w.turn = Some(turn);
        }
    }

    /// Forgets prompt `request`: it was refused and is answered with an error.
    pub fn abandon(&self, session: &SessionId, request: &Value) {
        let mut map = self.map();
        if let Some(q) = map.get_mut(session) {
            q.retain(|w| w.request != *request);
            if q.is_empty() {
                map.remove(session);
            }
        }
        drop(map);
        self.ended.notify_waiters();
    }

    /// Returns once no request of `session` waits for a turn (every prompt answered).
    pub async fn until_idle(&self, session: &SessionId) {
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            // Registered before the check, so an end between the two is not missed.
            ended.as_mut().enable();
            if !self.is_waiting(session) {
                return;
            }
            ended.await;
        }
    }

    pub fn is_waiting(&self, session: &SessionId) -> bool {
        self.map().contains_key(session)
    }

    /// Whether an event of `turn` is for a prompt waiting in `session`. False once the
    /// prompt was answered: the event is late and dropped.
    pub fn wants(&self, session: &SessionId, turn: TurnId) -> bool {
        self.map()
            .get(session)
            .is_some_and(|q| q.iter().any(|w| w.turn.is_none_or(|t| t == turn)))
    }

    /// The request that `turn`'s end answers, no longer waiting, and what it asked.
    pub fn end(&self, session: &SessionId, turn: TurnId) -> Option<(Value, Asked)> {
        let mut map = self.map();
        let q = map.get_mut(session)?;
        let at = q
            .iter()
            .position(|w| w.turn == Some(turn))
            .or_else(|| q.iter().position(|w| w.turn.is_none()))?;
        let request = q.remove(at).map(|w| (w.request, w.asked));
        if q.is_empty() {
            map.remove(session);
        }
        drop(map);
        self.ended.notify_waiters();
        request
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn prompts_wait_in_order_and_are_answered_once_by_their_own_turns() {
        let p = Prompts::default();
        let s = SessionId::parse("s").unwrap();
        p.begin(&s, &json!(1));
        p.begin(&s, &json!(2));
        p.started(&s, &json!(2), TurnId(8));
        p.started(&s, &json!(1), TurnId(7));
        assert!(p.wants(&s, TurnId(8)), "a queued prompt's turn");
        assert_eq!(p.end(&s, TurnId(8)), Some((json!(2), Asked::Prompt)));
        assert!(p.is_waiting(&s));
        assert!(p.wants(&s, TurnId(7)));
        assert!(!p.wants(&s, TurnId(6)), "another turn's events are dropped");
        assert_eq!(p.end(&s, TurnId(6)), None);
        assert_eq!(p.end(&s, TurnId(7)), Some((json!(1), Asked::Prompt)));
        assert_eq!(p.end(&s, TurnId(7)), None, "answered once");
        assert!(!p.wants(&s, TurnId(7)), "late events are dropped");
        p.begin(&s, &json!(3));
        p.abandon(&s, &json!(3));
        assert!(!p.is_waiting(&s));
    }
}
