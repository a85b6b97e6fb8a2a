//! `session/prompt` and `session/cancel`.
//!
//! A prompt is registered as waiting (`crate::prompts`), handed to its session, and answered by
//! the pump on its turn's `TurnEnded`, which the core guarantees, also when the session task
//! dies or does not take the prompt (`core::runtime::supervisor`). The handler answers only a
//! refusal: bad params or the session's own refusal. A prompt sent while a turn runs is queued
//! behind it and answered when its own turn ends; `session/cancel` ends the running turn and
//! every queued one. `_session/steering` hands a message to the running turn instead.

use agent_client_protocol_schema::v1 as acp;
use ferrite_core::steering::Steered;
use ferrite_store::ids::SessionId;
use serde::Deserialize;
use serde_json::json;

use crate::fail::Fail;
use crate::mapping;
use crate::params::{Call, session_id, turn_options};
use crate::reply::{Deferred, Json};
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
    s.prompts.begin(&sid, &id);
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
    // A subagent's session: it stops alone, its parent's turn goes on.
    s.runtime.services().children.cancel(&id);
    Ok(())
}

/// `_session/steering` params, as the Claude and Codex adapters take them. `_meta` (the
/// client's `idleBehavior`) is accepted and changes nothing: with no running turn the answer is
/// always `promptRequired`, so the client sends the message as a prompt and the one prompt path
/// owns every turn's start and answer.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SteeringRequest {
    session_id: acp::SessionId,
    prompt: Vec<acp::ContentBlock>,
}

/// A message for the running turn: it joins the conversation at the turn's next model request
/// (after the tool calls running now), is shown as the user's message and logged in its place.
pub(crate) async fn steering(s: &Server, req: SteeringRequest) -> Result<Json, Fail> {
    let sid = session_id(&req.session_id)?;
    let content = mapping::prompt_content(req.prompt).map_err(Fail::params)?;
    if content.is_empty() {
        return Err(Fail::params("the message is empty"));
    }
    let Some(handle) = s.runtime.get(&sid) else {
        // A running subagent's session: its next model request takes the message.
        return match s.runtime.services().children.steer(&sid, content) {
            Some(steered) => answer(steered),
            None => Err(Fail::params(
                "unknown session: create, load or resume it first",
            )),
        };
    };
    // Queued before the first await, like a prompt: it reaches the session in arrival order.
    let reply = handle.submit_steering(content)?;
    answer(reply.await.unwrap_or(Steered::NoRunningTurn))
}

/// The answer to `_session/steering`: a message past the cap is refused like a prompt past
/// the queue's (-32602).
fn answer(steered: Steered) -> Result<Json, Fail> {
    match steered {
        Steered::Injected => Ok(Json(json!({ "outcome": "injected" }))),
        Steered::NoRunningTurn => Ok(Json(
            json!({ "outcome": "promptRequired", "reason": "noRunningTurn" }),
        )),
        Steered::Full => Err(Fail::params(format!(
            "{} messages (or {} KiB) already wait for the running turn; wait until it takes \
             them, or cancel",
            ferrite_core::steering::MAX_WAITING,
            ferrite_core::steering::MAX_WAITING_BYTES / 1024
        ))),
    }
}
