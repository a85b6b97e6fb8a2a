//! The openai_chat stream grammar: SSE events in, [`ModelEvent`]s out.

use crate::error::{self, ErrorBody};
use crate::grammar::StreamDecoder;
use crate::think::{Channel, ThinkSplitter};
use ferrite_core::model::{AssistantPart, ModelError, ModelEvent, ModelResponse, StopKind, Usage};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{FIELD_REASONING_CONTENT, PROVIDER};

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<RawUsage>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    object: Option<String>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    index: u64,
    #[serde(default)]
    delta: Option<ChoiceDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceDelta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    /// Ollama and OpenRouter: a string, or an object on some servers.
    #[serde(default)]
    reasoning: Option<Value>,
    #[serde(default)]
    reasoning_details: Option<Vec<Value>>,
    #[serde(default)]
    tool_calls: Option<Vec<CallDelta>>,
}

#[derive(Deserialize)]
struct CallDelta {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Default, Deserialize)]
struct RawUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Default, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// The part of `completion_tokens` spent reasoning (o-series, gpt-5; compat servers omit it).
#[derive(Default, Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

#[derive(Debug, Default)]
struct Call {
    index: Option<u64>,
    id: String,
    name: String,
    arguments: String,
}

pub(crate) struct Decoder {
    label: String,
    text: String,
    reasoning: String,
    reasoning_field: Option<&'static str>,
    think: ThinkSplitter,
    calls: Vec<Call>,
    finish_reason: Option<String>,
    usage: Option<RawUsage>,
    done: bool,
}

impl Decoder {
    pub fn new(label: &str) -> Self {
        Self {
            label: label.to_owned(),
            text: String::new(),
            reasoning: String::new(),
            reasoning_field: None,
            think: ThinkSplitter::default(),
            calls: Vec::new(),
            finish_reason: None,
            usage: None,
            done: false,
        }
    }

    fn content(&mut self, content: String, out: &mut Vec<ModelEvent>) {
        // The per-token hot path: plain text moves into the event without another copy.
        if self.think.is_plain_text(&content) {
            self.text.push_str(&content);
            out.push(ModelEvent::TextDelta(content));
            return;
        }
        let Self {
            think,
            text,
            reasoning,
            reasoning_field,
            ..
        } = self;
        think.push(&content, &mut |channel, piece| {
            push_piece(channel, piece, text, reasoning, reasoning_field, out)
        });
    }

    fn reasoning_delta(&mut self, piece: String, field: &'static str, out: &mut Vec<ModelEvent>) {
        if piece.is_empty() {
            return;
        }
        self.reasoning_field.get_or_insert(field);
        self.reasoning.push_str(&piece);
        out.push(ModelEvent::ReasoningDelta(piece));
    }

    fn tool_call(&mut self, delta: CallDelta) {
        let id = delta.id.filter(|id| !id.is_empty());
        let slot = match (delta.index, &id) {
            // Keyed by index; a new id at a known index is a new call (servers that number
            // every call 0).
            (Some(index), _) => self.calls.iter().rposition(|c| {
                c.index == Some(index)
                    && id.as_ref().is_none_or(|id| c.id.is_empty() || c.id == *id)
            }),
            // No index: a known id continues its call, an unseen one opens a new call.
            (None, Some(id)) => self.calls.iter().rposition(|c| c.id == *id),
            // Neither: a continuation of the call being streamed.
            (None, None) => self.calls.len().checked_sub(1),
        };
        let call = match slot {
            Some(pos) => &mut self.calls[pos],
            None => {
                self.calls.push(Call {
                    index: delta.index,
                    ..Call::default()
                });
                let last = self.calls.len() - 1;
                &mut self.calls[last]
            }
        };
        if let Some(id) = id
            && call.id.is_empty()
        {
            call.id = id;
        }
        if let Some(function) = delta.function {
            // Some servers repeat the name in every fragment: it is set once, never appended.
            if let Some(name) = function.name.filter(|n| !n.is_empty())
                && call.name.is_empty()
            {
                call.name = name;
            }
            if let Some(arguments) = function.arguments {
                call.arguments.push_str(&arguments);
            }
        }
    }

    fn complete(&mut self, out: &mut Vec<ModelEvent>) {
        {
            let Self {
                think,
                text,
                reasoning,
                reasoning_field,
                ..
            } = self;
            think.finish(&mut |channel, piece| {
                push_piece(channel, piece, text, reasoning, reasoning_field, out)
            });
        }
        let mut content = Vec::new();
        if !self.reasoning.is_empty() {
            content.push(AssistantPart::Reasoning {
                text: std::mem::take(&mut self.reasoning),
                provider_data: self
                    .reasoning_field
                    .map(|field| json!({"provider": PROVIDER, "field": field})),
            });
        }
        if !self.text.is_empty() {
            content.push(AssistantPart::Text {
                text: std::mem::take(&mut self.text),
            });
        }
        for (n, call) in std::mem::take(&mut self.calls).into_iter().enumerate() {
            content.push(AssistantPart::ToolCall {
                // Results are paired with calls by id, so every call needs one.
                id: if call.id.is_empty() {
                    format!("call_{n}")
                } else {
                    call.id
                },
                name: call.name,
                arguments: if call.arguments.trim().is_empty() {
                    "{}".to_owned()
                } else {
                    call.arguments
                },
            });
        }
        let has_calls = content
            .iter()
            .any(|p| matches!(p, AssistantPart::ToolCall { .. }));
        let stop = match self.finish_reason.as_deref() {
            Some("tool_calls" | "function_call") => StopKind::ToolUse,
            Some("length") => StopKind::MaxTokens,
            Some("content_filter") => StopKind::Refusal,
            // Several local servers say "stop" after tool calls.
            _ if has_calls => StopKind::ToolUse,
            _ => StopKind::EndTurn,
        };
        let usage = self.usage.take().unwrap_or_default();
        out.push(ModelEvent::Completed(ModelResponse {
            content,
            stop,
            usage: Usage {
                input_tokens: usage.prompt_tokens.unwrap_or(0),
                output_tokens: usage.completion_tokens.unwrap_or(0),
                cached_input_tokens: usage
                    .prompt_tokens_details
                    .and_then(|d| d.cached_tokens)
                    .unwrap_or(0),
                cache_write_tokens: 0,
                reasoning_tokens: usage
                    .completion_tokens_details
                    .and_then(|d| d.reasoning_tokens)
                    .unwrap_or(0),
            },
        }));
        self.done = true;
    }
}

fn push_piece(
    channel: Channel,
    piece: &str,
    text: &mut String,
    reasoning: &mut String,
    reasoning_field: &mut Option<&'static str>,
    out: &mut Vec<ModelEvent>,
) {
    match channel {
        Channel::Text => {
            text.push_str(piece);
            out.push(ModelEvent::TextDelta(piece.to_owned()));
        }
        Channel::Reasoning => {
            reasoning_field.get_or_insert("think_tag");
            reasoning.push_str(piece);
            out.push(ModelEvent::ReasoningDelta(piece.to_owned()));
        }
    }
}

/// The text of a `reasoning` value: a string, or an object with `text`/`content`/`summary`.
fn reasoning_text(value: Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s),
        Value::Object(mut map) => {
            ["text", "content", "summary"]
                .iter()
                .find_map(|k| match map.remove(*k) {
                    Some(Value::String(s)) => Some(s),
                    _ => None,
                })
        }
        _ => None,
    }
}

impl StreamDecoder for Decoder {
    fn on_event(
        &mut self,
        _name: &str,
        data: &str,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.complete(out);
            return Ok(());
        }
        let chunk: Chunk =
            serde_json::from_str(data).map_err(|e| error::invalid(&self.label, e))?;
        if chunk.error.as_ref().is_some_and(|e| !e.is_null())
            || chunk.object.as_deref() == Some("error")
        {
            let (code, message) = serde_json::from_str::<ErrorBody>(data)
                .map(ErrorBody::into_parts)
                .unwrap_or((None, None));
            return Err(error::from_event(code, message, &self.label, None));
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage);
        }
        // We ask for one choice; any others are ignored.
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            if let Some(delta) = choice.delta {
                // Servers that send the same reasoning in several fields get it counted once.
                if let Some(r) = delta.reasoning_content.filter(|r| !r.is_empty()) {
                    self.reasoning_delta(r, FIELD_REASONING_CONTENT, out);
                } else if let Some(r) = delta.reasoning.and_then(reasoning_text) {
                    self.reasoning_delta(r, "reasoning", out);
                } else if let Some(details) = delta.reasoning_details {
                    let r: String = details
                        .into_iter()
                        .filter_map(|d| d.get("text").and_then(Value::as_str).map(str::to_owned))
                        .collect();
                    self.reasoning_delta(r, "reasoning_details", out);
                }
                if let Some(content) = delta.content.filter(|c| !c.is_empty()) {
                    self.content(content, out);
                }
                for call in delta.tool_calls.into_iter().flatten() {
                    self.tool_call(call);
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
            }
        }
        Ok(())
    }

    /// Many local servers omit `[DONE]`. A stream that ended after its finish reason *and* its
    /// usage (which we always request) is whole; anything less was cut.
    fn on_eof(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        if self.done {
            return Ok(());
        }
        if self.finish_reason.is_some() && self.usage.is_some() {
            self.complete(out);
            return Ok(());
        }
        Err(error::cut(&self.label, "before [DONE]"))
    }

    fn is_done(&self) -> bool {
        self.done
    }
}
