//! Subagent sessions (`task`): each runs as a child session with a log of its own. This is what
//! the rest of the process knows of them while they run: which are running (a `session/cancel`
//! naming one stops it alone, `_session/steering` hands it a message, and it cannot be loaded
//! meanwhile), and whether the editor shows child sessions (ACP `clientCapabilities.subagents`)
//! or only the parent's card.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::content::UserContent;
use crate::ids::SessionId;
use crate::steering::Inbox;

#[derive(Default)]
pub struct Children {
    running: Mutex<HashMap<SessionId, Child>>,
    client_shows: AtomicBool,
}

/// A running child: how to stop it, and the messages the user sends it while it works.
struct Child {
    cancel: CancellationToken,
    inbox: Inbox,
}

impl Children {
    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Child>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The editor advertised `subagents`: it is sent child sessions' updates.
    pub fn set_client_shows(&self, shows: bool) {
        self.client_shows.store(shows, Ordering::Relaxed);
    }

    pub fn client_shows(&self) -> bool {
        self.client_shows.load(Ordering::Relaxed)
    }

    /// Stops the running child `id` (its parent's turn goes on without its answer); false when
    /// no child of that id runs.
    pub fn cancel(&self, id: &SessionId) -> bool {
        match self.running().get(id) {
            Some(child) => {
                child.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Hands the running child `id` a message from the user (`_session/steering`): its next
    /// model request takes it. `None`: no child of that id runs.
    pub fn steer(
        &self,
        id: &SessionId,
        content: Vec<UserContent>,
    ) -> Option<crate::steering::Steered> {
        self.running()
            .get(id)
            .map(|child| child.inbox.push(content))
    }

    pub fn is_running(&self, id: &SessionId) -> bool {
        self.running().contains_key(id)
    }

    /// Marks `id` running until the returned guard is dropped.
    pub(crate) fn register(
        self: &Arc<Self>,
        id: SessionId,
        cancel: CancellationToken,
        inbox: Inbox,
    ) -> Running {
        self.running().insert(id.clone(), Child { cancel, inbox });
        Running {
            children: self.clone(),
            id,
        }
    }
}

/// A child's place in [`Children`], given up when the child ends (however it ends).
pub(crate) struct Running {
    children: Arc<Children>,
    id: SessionId,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.children.running().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_is_cancellable_while_it_runs_and_forgotten_after() {
        let children = Arc::new(Children::default());
        let id = SessionId::generate();
        let token = CancellationToken::new();
        let inbox = Inbox::default();
        let running = children.register(id.clone(), token.clone(), inbox.clone());
        assert!(children.is_running(&id));
        let said = vec![UserContent::Text {
            text: "look in src/ too".into(),
        }];
        assert_eq!(
            children.steer(&id, said),
            Some(crate::steering::Steered::Injected)
        );
        assert_eq!(inbox.take().len(), 1);
        assert!(children.cancel(&id));
        assert!(token.is_cancelled());
        drop(running);
        assert!(!children.is_running(&id));
        assert!(!children.cancel(&id));
        assert_eq!(children.steer(&id, vec![]), None);
    }
}
