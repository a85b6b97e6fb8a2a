//! Notices that must not reach the client before the session id does.

use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use crate::events::{Event, SessionEvent};
use crate::ids::SessionId;

/// Notices that must not reach the client before the session id does: buffered until
/// released, then sent as they come.
#[derive(Clone)]
pub struct NoticeGate {
    inner: Arc<Mutex<GateState>>,
    events: mpsc::Sender<SessionEvent>,
    session: SessionId,
}

struct GateState {
    released: bool,
    held: Vec<String>,
}

impl NoticeGate {
    pub(super) fn new(events: mpsc::Sender<SessionEvent>, session: SessionId) -> Self {
        Self {
            inner: Arc::new(Mutex::new(GateState {
                released: false,
                held: vec![],
            })),
            events,
            session,
        }
    }

    pub(super) fn notice(&self, text: String) {
        tracing::warn!(session = %self.session, "{text}");
        let mut st = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if st.released {
            drop(st);
            self.send(text);
        } else {
            st.held.push(text);
        }
    }

    fn send(&self, text: String) {
        let ev = SessionEvent {
            session: self.session.clone(),
            turn: None,
            event: Event::Notice { text },
        };
        // A notice is not worth blocking a server's task for; a full queue drops it (it is in
        // the log above).
        let _ = self.events.try_send(ev);
    }

    /// Sends what was held and lets later notices through.
    pub fn release(&self) {
        let held = {
            let mut st = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            st.released = true;
            std::mem::take(&mut st.held)
        };
        for text in held {
            self.send(text);
        }
    }
}
