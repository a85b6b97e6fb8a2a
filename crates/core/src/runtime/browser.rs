//! The browser step of a session's MCP sign-ins, through the editor's URL elicitation.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::notices::NoticeGate;
use crate::elicit::{Elicitor, Page, Reply};
use crate::ids::SessionId;
use crate::mcp::Browser;

/// Sends the session's user to a page through `elicitor` (URL mode).
pub(super) struct SessionBrowser {
    pub elicitor: Arc<dyn Elicitor>,
    pub session: SessionId,
    /// Servers start while `session/new` is answered: a request about a session the client has
    /// not learned yet would be dropped, so it waits for the gate like notices do.
    pub gate: NoticeGate,
}

impl Browser for SessionBrowser {
    fn can_open(&self) -> bool {
        self.elicitor.opens_pages()
    }

    fn open(&self, page: Page) -> BoxFuture<'_, Result<Reply, String>> {
        Box::pin(async move {
            self.gate.wait_released().await;
            self.elicitor.open_page(&self.session, page).await
        })
    }

    fn done(&self, id: &str) {
        self.elicitor.page_done(id);
    }
}
