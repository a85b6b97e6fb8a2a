//! Stage: one model call. Sends the conversation, streams the answer to the editor (text and
//! thoughts as they come, merged per network read; hosted web searches as cards; retry
//! notices), and records the response with its usage. A cancelled or failed call keeps what the
//! user already saw, so history matches the screen.

use futures::{FutureExt, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::catalog::ReasoningStyle;
use crate::content::{ToolCallView, ToolKind, ToolStatus};
use crate::events::{Event, TurnOutcome};
use crate::log::{EntryKind, StopReason, StoreError};
use crate::model::{
    AssistantPart, HostedStatus, Message, ModelError, ModelErrorKind, ModelEvent, ModelRequest,
    ModelResponse, ModelStream, UserPart,
};
use crate::session::Recorder;

use super::env::CallEnv;
use super::model_call::{explain_model_error, output_limit, record_usage};
use super::resolve::TurnModel;

/// The most text merged into one `agent_message_chunk` from deltas that arrived together.
const MERGE_LIMIT_BYTES: usize = 16 * 1024;

/// How a model call ended.
pub(super) enum Streamed {
    /// The response, recorded.
    Response(ModelResponse),
    /// The turn ends here (cancelled, or the call failed).
    Stopped(TurnOutcome),
}

/// Makes one model call with the conversation so far and the tools offered now (none when
/// `offer_tools` is false: the model must answer).
pub(super) async fn model_call(
    rec: &Recorder,
    model: &TurnModel,
    env: &CallEnv,
    system: &str,
    after_text: bool,
    offer_tools: bool,
    cancel: &CancellationToken,
) -> Result<Streamed, StoreError> {
    let info = &model.info;
    let mut messages = rec.model_messages();
    if !info.images {
        without_images(&mut messages);
    }
    let request = ModelRequest {
        model: info.model.clone(),
        system: system.to_owned(),
        messages,
        tools: match offer_tools {
            true => super::subagent::offered(env, rec),
            false => vec![],
        },
        effort: model.effort,
        reasoning: info.reasoning.is_reasoner(),
        adaptive_thinking: info.reasoning == ReasoningStyle::Adaptive,
        web_search: model.web_search,
        max_output_tokens: output_limit(info, rec.context_tokens()),
        cache_key: Some(rec.session_id().as_str().to_owned()),
    };
    let stream = model.client.stream(request, cancel.child_token());
    let mut shown = Shown::default();
    let end = consume(rec, stream, &mut shown, after_text, cancel).await?;
    let response = match end {
        End::Completed(response) => response,
        End::Cancelled => {
            shown.record(rec)?;
            return Ok(Streamed::Stopped(TurnOutcome::ended(StopReason::Cancelled)));
        }
        End::Failed(e) => {
            shown.record(rec)?;
            let e = explain_model_error(e, info, model.origin, model.effort);
            return Ok(Streamed::Stopped(model_failure(&e)));
        }
    };
    rec.record(EntryKind::Assistant {
        content: response.content.as_slice().into(),
    })?;
    record_usage(rec, info, &response.usage, response.usage.context_tokens()).await?;
    // Not synced here: the turn syncs a response that calls tools before they run, and a final
    // answer with the turn's end (one sync for both).
    Ok(Streamed::Response(response))
}

/// A failed model call as the turn's failure.
pub(super) fn model_failure(e: &ModelError) -> TurnOutcome {
    TurnOutcome::failed(
        e.failure_kind(),
        format!("The model request failed: {}", e.message),
    )
}

/// What the user was shown of a response that did not complete.
#[derive(Default)]
struct Shown {
    text: String,
    thought: String,
}

impl Shown {
    /// Keeps what the user already saw, so history matches the screen.
    fn record(&self, rec: &Recorder) -> Result<(), StoreError> {
        let mut content = Vec::new();
        if !self.thought.is_empty() {
            content.push(AssistantPart::Reasoning {
                text: self.thought.clone(),
                provider_data: None,
            });
        }
        if !self.text.is_empty() {
            content.push(AssistantPart::Text {
                text: self.text.clone(),
            });
        }
        if !content.is_empty() {
            rec.record(EntryKind::Assistant {
                content: content.into(),
            })?;
        }
        Ok(())
    }
}

enum End {
    Completed(ModelResponse),
    Cancelled,
    /// As the provider reported it (not yet explained).
    Failed(ModelError),
}

type Item = Option<Result<ModelEvent, ModelError>>;

/// Streams until the response is complete, the call fails or the turn is cancelled.
async fn consume(
    rec: &Recorder,
    mut stream: ModelStream,
    shown: &mut Shown,
    after_text: bool,
    cancel: &CancellationToken,
) -> Result<End, StoreError> {
    // The first text of this response, when the editor was last shown text: a paragraph break
    // goes before it (shown only: the model's text is kept as it wrote it).
    let mut separate = after_text;
    // An event taken from the stream while merging deltas, to be handled next.
    let mut held: Option<Item> = None;
    // One waiter for the whole stream: a fresh `cancelled()` per event registers and
    // unregisters with the token (a lock) for every delta.
    let cancelled = cancel.cancelled();
    tokio::pin!(cancelled);
    loop {
        let next = match held.take() {
            Some(item) => Some(item),
            None => tokio::select! {
                biased;
                () = &mut cancelled => None,
                item = stream.next() => Some(item),
            },
        };
        let Some(item) = next else {
            return Ok(End::Cancelled);
        };
        match item {
            Some(Ok(ModelEvent::TextDelta(mut t))) => {
                // Deltas that are already decoded (one network read carries many) go out as one
                // update: a fast stream costs an update per read, not per token.
                while t.len() < MERGE_LIMIT_BYTES {
                    match stream.next().now_or_never() {
                        Some(Some(Ok(ModelEvent::TextDelta(more)))) => t.push_str(&more),
                        Some(other) => {
                            held = Some(other);
                            break;
                        }
                        None => break,
                    }
                }
                shown.text.push_str(&t);
                if std::mem::take(&mut separate) {
                    t.insert_str(0, crate::state::RESPONSE_BREAK);
                }
                rec.emit(Event::AgentMessageChunk { text: t }).await;
            }
            Some(Ok(ModelEvent::Completed(resp))) => return Ok(End::Completed(resp)),
            Some(Ok(event)) => on_event(rec, event, shown).await?,
            Some(Err(e)) if e.kind == ModelErrorKind::Cancelled => return Ok(End::Cancelled),
            Some(Err(e)) => return Ok(End::Failed(e)),
            None => {
                return Ok(End::Failed(ModelError::new(
                    ModelErrorKind::StreamCut,
                    "The model's stream ended without a final event.",
                )));
            }
        }
    }
}

/// An event of the stream other than text and its end.
async fn on_event(rec: &Recorder, event: ModelEvent, shown: &mut Shown) -> Result<(), StoreError> {
    match event {
        ModelEvent::ReasoningDelta(t) => {
            shown.thought.push_str(&t);
            rec.emit(Event::AgentThoughtChunk { text: t }).await;
        }
        ModelEvent::WebSearch { id, query, status } => {
            let call = ToolCallView {
                id,
                title: match &query {
                    Some(q) => format!("Web search: {q}"),
                    None => "Web search".into(),
                },
                kind: ToolKind::Fetch,
                status: match status {
                    HostedStatus::InProgress => ToolStatus::InProgress,
                    HostedStatus::Completed => ToolStatus::Completed,
                    HostedStatus::Failed => ToolStatus::Failed,
                },
                locations: vec![],
                content: vec![],
                raw_input: query.map(|q| serde_json::json!({ "query": q })),
            };
            if status != HostedStatus::InProgress {
                rec.record(EntryKind::DisplayToolCall {
                    call: Box::new(call.clone()),
                })?;
            }
            rec.emit(Event::ToolCall(call)).await;
        }
        ModelEvent::Retrying {
            attempt,
            delay_ms,
            reason,
            max_attempts,
        } => {
            tracing::info!(attempt, delay_ms, %reason, "retrying model request");
            // For the user only: not logged, not replayed, never sent to the model.
            let text = retry_notice(&reason, delay_ms, attempt + 1, max_attempts);
            rec.emit(Event::Notice { text }).await;
        }
        // Handled by the caller.
        ModelEvent::TextDelta(_) | ModelEvent::Completed(_) => {}
    }
    Ok(())
}

/// "anthropic returned HTTP 529 (overloaded_error): Overloaded — retrying in 4 s (attempt 2 of 5)."
fn retry_notice(reason: &str, delay_ms: u64, next_attempt: u32, max_attempts: u32) -> String {
    let wait = if delay_ms < 1000 {
        format!("{delay_ms} ms")
    } else {
        format!("{} s", delay_ms.div_ceil(1000))
    };
    let reason = reason.trim_end_matches('.');
    format!("{reason} — retrying in {wait} (attempt {next_attempt} of {max_attempts}).")
}

/// For a model that takes no images: each image the history holds (a prompt attachment, an MCP
/// tool's image) becomes a short note, so the request is one the model accepts.
fn without_images(messages: &mut [Message]) {
    for m in messages {
        if let Message::User { content } = m {
            for part in content.iter_mut() {
                if let UserPart::Image { mime_type, .. } = part {
                    *part = UserPart::Text {
                        text: format!(
                            "[an image ({mime_type}) was left out: this model does not take images]"
                        )
                        .into(),
                    };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
