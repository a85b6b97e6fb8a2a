//! Compaction: the conversation so far is summarized by the model and the summary replaces it in
//! what the model is sent (the log keeps everything, and `session/load` still replays it all).
//! Runs on `/compact` and, before a request, when the context passed `compaction.threshold` of
//! the model's window.

use std::sync::Arc;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::catalog::{ModelInfo, ReasoningStyle};
use crate::content::UserContent;
use crate::events::{CompactionStage, Event, TurnOutcome};
use crate::log::{EntryKind, StopReason, StoreError};
use crate::model::{
    AssistantPart, Message, ModelClient, ModelError, ModelErrorKind, ModelEvent, ModelRequest,
    UserPart,
};
use crate::modes::Effort;
use crate::session::Recorder;

use super::resolve::TurnModel;

const INSTRUCTIONS: &str = "Summarize the conversation so far so that the work can continue from \
the summary alone: the user's goals and constraints, decisions made, files read or changed (with \
paths), commands run and their outcomes, the current state, and the next steps. Be specific and \
concise; do not call tools.";

/// The longest summary asked for.
const SUMMARY_MAX_TOKENS: u32 = 8_000;

/// `Some(extra instructions)` when the prompt is `/compact [instructions]`.
pub(crate) fn requested(content: &[UserContent]) -> Option<String> {
    let Some(UserContent::Text { text }) = content.first() else {
        return None;
    };
    let rest = text.trim().strip_prefix("/compact")?;
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then(|| rest.trim().to_owned())
}

/// `/compact`: the turn is the compaction.
pub(super) async fn on_request(
    rec: &Recorder,
    model: &TurnModel,
    cancel: &CancellationToken,
    extra: &str,
) -> Result<TurnOutcome, StoreError> {
    Ok(
        match run(rec, &model.client, &model.info, cancel, extra).await? {
            Outcome::Compacted { .. } => TurnOutcome::ended(StopReason::EndTurn),
            Outcome::NothingToDo => {
                rec.emit(Event::AgentMessageChunk {
                    text: "Nothing to compact yet.".into(),
                })
                .await;
                TurnOutcome::ended(StopReason::EndTurn)
            }
            Outcome::Cancelled => TurnOutcome::ended(StopReason::Cancelled),
            Outcome::Failed(e) => super::stream::model_failure(&e),
        },
    )
}

/// Before a model request: compacts when the context passed `threshold` of the window. A failed
/// compaction is logged and the full history sent; only a cancel ends the turn (`Err`).
pub(super) async fn if_due(
    rec: &Recorder,
    model: &TurnModel,
    threshold: f64,
    cancel: &CancellationToken,
) -> Result<Result<(), TurnOutcome>, StoreError> {
    if !due(rec, &model.info, threshold) {
        return Ok(Ok(()));
    }
    match run(rec, &model.client, &model.info, cancel, "").await? {
        Outcome::Cancelled => return Ok(Err(TurnOutcome::ended(StopReason::Cancelled))),
        Outcome::Failed(e) => {
            tracing::warn!(error = %e, "automatic compaction failed; sending the full history")
        }
        Outcome::Compacted { .. } | Outcome::NothingToDo => {}
    }
    Ok(Ok(()))
}

/// Whether the context has passed the threshold.
fn due(rec: &Recorder, info: &ModelInfo, threshold: f64) -> bool {
    let used = rec.context_tokens();
    used > 0 && (used as f64) > threshold * (info.context_window as f64)
}

enum Outcome {
    /// Recorded; its usage is recorded after the editor is told (the order clients saw before
    /// compactions had updates of their own: the notice, then the usage).
    Compacted {
        summary: String,
        notice: String,
        usage: crate::model::Usage,
    },
    NothingToDo,
    Cancelled,
    Failed(ModelError),
}

/// One compaction, told to the editor from its start to its end ([`Event::Compaction`]).
async fn run(
    rec: &Recorder,
    client: &Arc<dyn ModelClient>,
    info: &ModelInfo,
    cancel: &CancellationToken,
    extra: &str,
) -> Result<Outcome, StoreError> {
    let messages = rec.model_messages();
    if messages.is_empty() {
        return Ok(Outcome::NothingToDo);
    }
    let n = rec.read(|s| {
        s.history
            .iter()
            .filter(|k| matches!(k, EntryKind::Compaction { .. }))
            .count()
    }) + 1;
    let id = crate::events::compaction_id(n);
    let stage = |stage| Event::Compaction {
        id: id.clone(),
        stage,
    };
    rec.emit(stage(CompactionStage::Started)).await;
    let outcome = summarize(rec, client, info, cancel, extra, messages).await?;
    let end = match &outcome {
        Outcome::Compacted {
            summary, notice, ..
        } => CompactionStage::Completed {
            summary: summary.clone(),
            notice: notice.clone(),
        },
        Outcome::Cancelled => CompactionStage::Cancelled,
        Outcome::Failed(e) => CompactionStage::Failed {
            error: e.to_string(),
        },
        Outcome::NothingToDo => return Ok(outcome),
    };
    rec.emit(stage(end)).await;
    if let Outcome::Compacted { usage, .. } = &outcome {
        super::model_call::record_usage(rec, info, usage, usage.output_tokens).await?;
    }
    Ok(outcome)
}

async fn summarize(
    rec: &Recorder,
    client: &Arc<dyn ModelClient>,
    info: &ModelInfo,
    cancel: &CancellationToken,
    extra: &str,
    mut messages: Vec<Message>,
) -> Result<Outcome, StoreError> {
    let ask = if extra.is_empty() {
        INSTRUCTIONS.to_owned()
    } else {
        format!("{INSTRUCTIONS}\n\nAlso: {extra}")
    };
    messages.push(Message::User {
        content: vec![UserPart::Text { text: ask.into() }],
    });
    let request = ModelRequest {
        model: info.model.clone(),
        system: "You write precise working summaries of coding sessions.".into(),
        messages,
        tools: vec![],
        effort: Effort::Default,
        reasoning: info.reasoning.is_reasoner(),
        adaptive_thinking: info.reasoning == ReasoningStyle::Adaptive,
        web_search: false,
        max_output_tokens: info.max_output_tokens.map(|m| m.min(SUMMARY_MAX_TOKENS)),
        cache_key: Some(rec.session_id().as_str().to_owned()),
    };
    let before = rec.context_tokens();
    let mut stream = client.stream(request, cancel.child_token());
    let response = loop {
        let item = tokio::select! {
            biased;
            () = cancel.cancelled() => return Ok(Outcome::Cancelled),
            item = stream.next() => item,
        };
        match item {
            Some(Ok(ModelEvent::Completed(r))) => break r,
            Some(Ok(_)) => {}
            Some(Err(e)) if e.kind == ModelErrorKind::Cancelled => return Ok(Outcome::Cancelled),
            Some(Err(e)) => return Ok(Outcome::Failed(e)),
            None => {
                return Ok(Outcome::Failed(ModelError::new(
                    ModelErrorKind::StreamCut,
                    "the summary stream ended early",
                )));
            }
        }
    };
    let summary: String = response
        .content
        .iter()
        .filter_map(|p| match p {
            AssistantPart::Text { text } => Some(text.as_str()),
            AssistantPart::Reasoning { .. }
            | AssistantPart::ToolCall { .. }
            | AssistantPart::Opaque { .. } => None,
        })
        .collect();
    if summary.trim().is_empty() {
        return Ok(Outcome::Failed(ModelError::new(
            ModelErrorKind::InvalidResponse,
            "the model returned an empty summary",
        )));
    }
    rec.record(EntryKind::Compaction {
        summary: summary.clone(),
    })?;
    rec.sync()?;
    let after = response.usage.output_tokens;
    let notice = format!("Compacted the conversation: about {before} → {after} tokens in context.");
    Ok(Outcome::Compacted {
        summary,
        notice,
        usage: response.usage,
    })
}
