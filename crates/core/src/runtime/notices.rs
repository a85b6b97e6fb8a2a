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
    /// `true` once released: what else must wait for the session id to reach the client
    /// (an MCP sign-in's `elicitation/create`) waits for this.
    released: tokio::sync::watch::Sender<bool>,
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
            released: tokio::sync::watch::Sender::new(false),
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
        self.released.send_replace(true);
    }

    /// Waits until the gate is released (the client knows the session id).
    pub(super) async fn wait_released(&self) {
        let mut rx = self.released.subscribe();
        let _ = rx.wait_for(|r| *r).await;
    }
}
