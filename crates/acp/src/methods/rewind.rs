//! `_session/rewind {sessionId, messageId, restoreFiles, interrupt?}` (`docs/sessions.md`,
//! "Rewind"): the session's history cut back to just before one of its user messages, and with
//! `restoreFiles` the files later turns changed brought back from the checkpoints.
//!
//! The rewind runs as a turn of its own (no prompt recorded, no model call), so it takes the
//! session's queue like a prompt, asks its questions (a file someone else changed since) through
//! the same path, and is answered by the pump when that turn ends. While a prompt runs or waits
//! it is refused, unless `interrupt` says to cancel them first.

use agent_client_protocol_schema::v1 as acp;
use ferrite_core::events::{RewindTo, TurnOptions};
use serde::Deserialize;

use crate::fail::Fail;
use crate::params::{Call, session_id};
use crate::prompts::Asked;
use crate::reply::Deferred;
use crate::state::Server;

/// How long an interrupted turn may take to end before the rewind gives up.
const INTERRUPT_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RewindRequest {
    session_id: acp::SessionId,
    message_id: String,
    /// Omitted: the conversation only; files are changed only when asked for.
    #[serde(default)]
    restore_files: bool,
    #[serde(default)]
    interrupt: bool,
}

pub(crate) async fn rewind(s: &Server, call: Call<RewindRequest>) -> Result<Deferred, Fail> {
    let Call { id, params: req } = call;
    let sid = session_id(&req.session_id)?;
    if req.message_id.trim().is_empty() {
        return Err(Fail::params("`messageId` is empty"));
    }
    let handle = s
        .runtime
        .get(&sid)
        .ok_or_else(|| Fail::params("unknown session: create, load or resume it first"))?;
    if s.prompts.is_waiting(&sid) {
        if !req.interrupt {
            return Err(Fail::params(
                "a turn is running in this session: wait for it to end, or send \
                 `interrupt: true` to stop it first",
            ));
        }
        // As `session/cancel`: the client's pending questions refused, the turn and the
        // prompts queued behind it ended (each answered `cancelled`).
        s.caller.cancel_session(&sid);
        handle.cancel();
        if tokio::time::timeout(INTERRUPT_WAIT, s.prompts.until_idle(&sid))
            .await
            .is_err()
        {
            return Err(Fail::internal(
                "the running turn did not stop; nothing was rewound",
            ));
        }
    }
    let options = TurnOptions {
        rewind: Some(RewindTo {
            message_id: req.message_id,
            restore_files: req.restore_files,
        }),
        ..TurnOptions::default()
    };
    s.prompts.begin_as(&sid, &id, Asked::Rewind);
    let submitted = match handle.submit_prompt(vec![], options) {
        Ok(submitted) => submitted,
        Err(refusal) => {
            s.prompts.abandon(&sid, &id);
            return Err(refusal.into());
        }
    };
    s.prompts.started(&sid, &id, submitted.turn);
    match submitted.admitted.await {
        Ok(Err(refusal)) => {
            s.prompts.abandon(&sid, &id);
            Err(refusal.into())
        }
        // Taken: the pump answers when the rewind's turn ends.
        Ok(Ok(())) | Err(_) => Ok(Deferred),
    }
}
