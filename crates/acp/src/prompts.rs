//! Prompts waiting for their turn to end: the one place a prompt's waiting state lives. A prompt
//! is registered before it is handed to its session, learns its turn when the core accepts it,
//! and is answered by the pump on that turn's `TurnEnded` (or by its handler when the session
//! refuses it). The core guarantees the `TurnEnded` (`core::runtime::supervisor`).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use ferrite_core::ids::{SessionId, TurnId};
use serde_json::Value;

#[derive(Default)]
pub(crate) struct Prompts(Mutex<HashMap<SessionId, Waiting>>);

struct Waiting {
    request: Value,
    /// `None` for the moment between handing the prompt over and learning its turn.
    turn: Option<TurnId>,
}

impl Prompts {
    fn map(&self) -> MutexGuard<'_, HashMap<SessionId, Waiting>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers `request` as the prompt of `session`; false when one already waits there.
    pub fn begin(&self, session: &SessionId, request: &Value) -> bool {
        let mut map = self.map();
        if map.contains_key(session) {
            return false;
        }
        let waiting = Waiting {
            request: request.clone(),
            turn: None,
        };
        map.insert(session.clone(), waiting);
        true
    }

    /// The prompt `request` runs as `turn`.
    pub fn started(&self, session: &SessionId, request: &Value, turn: TurnId) {
        if let Some(w) = self.map().get_mut(session)
            && w.request == *request
        {
            w.turn = Some(turn);
        }
    }

    /// Forgets prompt `request`: it was refused and is answered with an error.
    pub fn abandon(&self, session: &SessionId, request: &Value) {
        let mut map = self.map();
        if map.get(session).is_some_and(|w| w.request == *request) {
            map.remove(session);
        }
    }

    pub fn is_waiting(&self, session: &SessionId) -> bool {
        self.map().contains_key(session)
    }

    /// Whether an event of `turn` is for the prompt waiting in `session`. False once the
    /// prompt was answered: the event is late and dropped.
    pub fn wants(&self, session: &SessionId, turn: TurnId) -> bool {
        match self.map().get(session) {
            None => false,
            Some(w) => w.turn.is_none_or(|t| t == turn),
        }
    }

    /// The request that `turn`'s end answers, no longer waiting.
    pub fn end(&self, session: &SessionId, turn: TurnId) -> Option<Value> {
        let mut map = self.map();
        match map.get(session) {
            Some(w) if w.turn.is_none_or(|t| t == turn) => map.remove(session).map(|w| w.request),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn one_prompt_per_session_answered_once_by_its_own_turn() {
        let p = Prompts::default();
        let s = SessionId::parse("s").unwrap();
        assert!(p.begin(&s, &json!(1)));
        assert!(!p.begin(&s, &json!(2)), "a second prompt is refused");
        p.started(&s, &json!(1), TurnId(7));
        assert!(p.wants(&s, TurnId(7)));
        assert!(!p.wants(&s, TurnId(6)), "another turn's events are dropped");
        assert_eq!(p.end(&s, TurnId(6)), None);
        assert_eq!(p.end(&s, TurnId(7)), Some(json!(1)));
        assert_eq!(p.end(&s, TurnId(7)), None, "answered once");
        assert!(!p.wants(&s, TurnId(7)), "late events are dropped");
        assert!(p.begin(&s, &json!(3)));
        p.abandon(&s, &json!(3));
        assert!(!p.is_waiting(&s));
    }
}
