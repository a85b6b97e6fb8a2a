//! `session/prompt` and `session/cancel`.
//!
//! A prompt is registered as waiting (`crate::prompts`), handed to its session, and answered by
//! the pump on its turn's `TurnEnded`, which the core guarantees, also when the session task
//! dies or does not take the prompt (`core::runtime::supervisor`). The handler answers only a
//! refusal: bad params, a turn already running, or the session's own refusal.

use agent_client_protocol::v1::schema as acp;
use ferrite_core::ids::SessionId;

use crate::fail::Fail;
use crate::mapping;
use crate::params::{Call, session_id, turn_options};
use crate::reply::Deferred;
use crate::state::Server;

pub(crate) async fn prompt(s: &Server, call: Call<acp::PromptRequest>) -> Result<Deferred, Fail> {
    let Call { id, params: req } = call;
    let sid = session_id(&req.session_id)?;
    let options = turn_options(req.meta.as_ref())?;
    let content = mapping::prompt_content(req.prompt).map_err(Fail::params)?;
    if content.is_empty() {
        return Err(Fail::params("the prompt is empty"));
    }
    let handle = s
        .runtime
        .get(&sid)
        .ok_or_else(|| Fail::params("unknown session: create, load or resume it first"))?;
    if !s.prompts.begin(&sid, &id) {
        return Err(Fail::params("a turn is already running"));
    }
    // Queued before the first await: a session's requests reach it in arrival order.
    let submitted = match handle.submit_prompt(content, options) {
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
        // Taken (or ended by the supervisor): the pump answers on `TurnEnded`. A dropped
        // admission means the runtime is shutting down; there is no one left to answer.
        Ok(Ok(())) | Err(_) => Ok(Deferred),
    }
}

/// Pending questions to the client are answered as refused first, then the turn stops.
pub(crate) async fn cancel(s: &Server, req: acp::CancelNotification) -> Result<(), Fail> {
    let Ok(id) = SessionId::parse(&req.session_id.0) else {
        return Ok(());
    };
    s.caller.cancel_session(&id);
    if let Some(h) = s.runtime.get(&id) {
        h.cancel();
    }
    Ok(())
}
