//! The anthropic stream grammar: SSE events in, [`ModelEvent`]s out.

use crate::error::{self, ErrorDetail};
use crate::grammar::{StreamDecoder, event_type};
use ferrite_core::model::{
    AssistantPart, HostedStatus, ModelError, ModelEvent, ModelResponse, StopKind, Usage,
};
use serde::Deserialize;
use serde_json::{Value, json};
use std::borrow::Cow;

use super::PROVIDER;

#[derive(Debug)]
enum Block {
    Text(String),
    Thinking {
        text: String,
        signature: String,
    },
    Redacted(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    /// A hosted tool call (`server_tool_use`): kept verbatim, `input` filled in at its stop.
    ServerTool {
        block: Value,
        json: String,
    },
    /// Hosted tool results and block types we don't know: sent back verbatim.
    Other(Value),
}

#[derive(Debug, Default, Deserialize)]
struct RawUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct MessageStart {
    message: StartMessage,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: Option<RawUsage>,
}

#[derive(Deserialize)]
struct BlockStart {
    index: u64,
    content_block: Value,
}

#[derive(Deserialize)]
struct BlockDelta<'a> {
    index: u64,
    #[serde(borrow)]
    delta: Delta<'a>,
}

/// A flat struct rather than a tagged enum: serde buffers internally tagged enums, and this is
/// the per-token hot path.
#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, rename = "type")]
    kind: Cow<'a, str>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    signature: Option<String>,
    #[serde(default)]
    partial_json: Option<String>,
}

#[derive(Deserialize)]
struct BlockStop {
    index: u64,
}

#[derive(Deserialize)]
struct MessageDelta {
    #[serde(default)]
    delta: Option<StopDelta>,
    #[serde(default)]
    usage: Option<RawUsage>,
}

#[derive(Deserialize)]
struct StopDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct ErrorEvent {
    #[serde(default)]
    error: Option<ErrorDetail>,
}

pub(crate) struct Decoder {
    label: String,
    blocks: Vec<(u64, Block)>,
    usage: RawUsage,
    stop_reason: Option<String>,
    done: bool,
}

impl Decoder {
    pub fn new(label: &str) -> Self {
        Self {
            label: label.to_owned(),
            blocks: Vec::new(),
            usage: RawUsage::default(),
            stop_reason: None,
            done: false,
        }
    }

    fn parse<'a, T: Deserialize<'a>>(&self, data: &'a str) -> Result<T, ModelError> {
        serde_json::from_str(data).map_err(|e| error::invalid(&self.label, e))
    }

    fn block(&mut self, index: u64) -> Option<&mut Block> {
        // Blocks arrive in index order, so the wanted one is almost always the last.
        self.blocks
            .iter_mut()
            .rev()
            .find(|(i, _)| *i == index)
            .map(|(_, b)| b)
    }

    fn merge_usage(&mut self, usage: RawUsage) {
        // `message_delta` usage is cumulative and may repeat the input counts; later values win.
        let u = &mut self.usage;
        u.input_tokens = usage.input_tokens.or(u.input_tokens);
        u.output_tokens = usage.output_tokens.or(u.output_tokens);
        u.cache_read_input_tokens = usage.cache_read_input_tokens.or(u.cache_read_input_tokens);
        u.cache_creation_input_tokens = usage
            .cache_creation_input_tokens
            .or(u.cache_creation_input_tokens);
    }

    fn start_block(&mut self, start: BlockStart, out: &mut Vec<ModelEvent>) {
        let BlockStart {
            index,
            content_block,
        } = start;
        let kind = content_block
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("");
        let text_of = |key: &str| {
            content_block
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let block = match kind {
            "text" => {
                let text = text_of("text");
                if !text.is_empty() {
                    out.push(ModelEvent::TextDelta(text.clone()));
                }
                Block::Text(text)
            }
            "thinking" => {
                let text = text_of("thinking");
                if !text.is_empty() {
                    out.push(ModelEvent::ReasoningDelta(text.clone()));
                }
                Block::Thinking {
                    text,
                    signature: text_of("signature"),
                }
            }
            "redacted_thinking" => Block::Redacted(text_of("data")),
            "tool_use" => {
                // Without streaming deltas the whole input may already be in the start block.
                let json = match content_block.get("input") {
                    Some(Value::Object(map)) if !map.is_empty() => {
                        Value::Object(map.clone()).to_string()
                    }
                    _ => String::new(),
                };
                Block::ToolUse {
                    id: text_of("id"),
                    name: text_of("name"),
                    json,
                }
            }
            "server_tool_use" => Block::ServerTool {
                block: content_block,
                json: String::new(),
            },
            "web_search_tool_result" => {
                let id = text_of("tool_use_id");
                let failed = content_block
                    .get("content")
                    .and_then(|c| c.get("type"))
                    .and_then(Value::as_str)
                    == Some("web_search_tool_result_error");
                let query = self.search_query(&id);
                out.push(ModelEvent::WebSearch {
                    id,
                    query,
                    status: if failed {
                        HostedStatus::Failed
                    } else {
                        HostedStatus::Completed
                    },
                });
                Block::Other(content_block)
            }
            _ => Block::Other(content_block),
        };
        self.blocks.push((index, block));
    }

    fn search_query(&self, id: &str) -> Option<String> {
        self.blocks.iter().find_map(|(_, b)| match b {
            Block::ServerTool { block, .. }
                if block.get("id").and_then(Value::as_str) == Some(id) =>
            {
                block
                    .get("input")
                    .and_then(|i| i.get("query"))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            }
            _ => None,
        })
    }

    fn delta(&mut self, delta: BlockDelta<'_>, out: &mut Vec<ModelEvent>) {
        let BlockDelta { index, delta } = delta;
        let Some(block) = self.block(index) else {
            tracing::debug!(index, "delta for an unknown content block");
            return;
        };
        match (block, delta.kind.as_ref()) {
            (Block::Text(text), "text_delta") => {
                if let Some(d) = delta.text.filter(|d| !d.is_empty()) {
                    text.push_str(&d);
                    out.push(ModelEvent::TextDelta(d));
                }
            }
            (Block::Thinking { text, .. }, "thinking_delta") => {
                if let Some(d) = delta.thinking.filter(|d| !d.is_empty()) {
                    text.push_str(&d);
                    out.push(ModelEvent::ReasoningDelta(d));
                }
            }
            (Block::Thinking { signature, .. }, "signature_delta") => {
                if let Some(s) = delta.signature {
                    signature.push_str(&s);
                }
            }
            (Block::ToolUse { json, .. } | Block::ServerTool { json, .. }, "input_json_delta") => {
                if let Some(p) = delta.partial_json {
                    json.push_str(&p);
                }
            }
            // citations_delta and future delta kinds carry nothing we keep.
            _ => {}
        }
    }

    fn stop_block(&mut self, index: u64, out: &mut Vec<ModelEvent>) {
        if let Some(Block::ServerTool { block, json }) = self.block(index) {
            if let Ok(input) = serde_json::from_str::<Value>(json)
                && let Some(obj) = block.as_object_mut()
            {
                obj.insert("input".into(), input);
            }
            json.clear();
            let id = block
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let query = block
                .get("input")
                .and_then(|i| i.get("query"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            out.push(ModelEvent::WebSearch {
                id,
                query,
                status: HostedStatus::InProgress,
            });
        }
    }

    fn finish(&mut self) -> ModelResponse {
        let mut blocks = std::mem::take(&mut self.blocks);
        blocks.sort_by_key(|(i, _)| *i);
        let content: Vec<AssistantPart> = blocks
            .into_iter()
            .filter_map(|(_, block)| match block {
                Block::Text(text) if text.is_empty() => None,
                Block::Text(text) => Some(AssistantPart::Text { text }),
                Block::Thinking { text, signature } => Some(AssistantPart::Reasoning {
                    text,
                    provider_data: Some(json!({"provider": PROVIDER, "signature": signature})),
                }),
                Block::Redacted(data) => Some(AssistantPart::Reasoning {
                    text: String::new(),
                    provider_data: Some(json!({"provider": PROVIDER, "redacted_data": data})),
                }),
                Block::ToolUse { id, name, json } => Some(AssistantPart::ToolCall {
                    id,
                    name,
                    arguments: tool_arguments(json),
                }),
                Block::ServerTool { block, .. } | Block::Other(block) => {
                    Some(AssistantPart::Opaque {
                        provider: PROVIDER.to_owned(),
                        data: block,
                    })
                }
            })
            .collect();
        let has_calls = content
            .iter()
            .any(|p| matches!(p, AssistantPart::ToolCall { .. }));
        let stop = match self.stop_reason.as_deref() {
            Some("tool_use") => StopKind::ToolUse,
            Some("max_tokens" | "model_context_window_exceeded") => StopKind::MaxTokens,
            Some("refusal") => StopKind::Refusal,
            None if has_calls => StopKind::ToolUse,
            // end_turn, stop_sequence, pause_turn and values added later all end the turn.
            Some(_) | None => StopKind::EndTurn,
        };
        let u = &self.usage;
        let cache_read = u.cache_read_input_tokens.unwrap_or(0);
        let usage = Usage {
            // Anthropic's input_tokens excludes cached tokens; ours counts all input.
            input_tokens: u.input_tokens.unwrap_or(0)
                + cache_read
                + u.cache_creation_input_tokens.unwrap_or(0),
            output_tokens: u.output_tokens.unwrap_or(0),
            cached_input_tokens: cache_read,
            cache_write_tokens: u.cache_creation_input_tokens.unwrap_or(0),
            // Thinking is billed as output and not counted apart.
            reasoning_tokens: 0,
        };
        ModelResponse {
            content,
            stop,
            usage,
        }
    }
}

/// The tool input as streamed: `{}` when empty; invalid JSON is kept as the raw text so the
/// turn loop can tell the model what it sent.
fn tool_arguments(json: String) -> String {
    if json.trim().is_empty() {
        "{}".to_owned()
    } else {
        json
    }
}

impl StreamDecoder for Decoder {
    fn on_event(
        &mut self,
        name: &str,
        data: &str,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        match event_type(name, data).as_ref() {
            "content_block_delta" => {
                let delta = self.parse::<BlockDelta<'_>>(data)?;
                self.delta(delta, out);
            }
            "message_start" => {
                if let Some(usage) = self.parse::<MessageStart>(data)?.message.usage {
                    self.merge_usage(usage);
                }
            }
            "content_block_start" => {
                let start = self.parse::<BlockStart>(data)?;
                self.start_block(start, out);
            }
            "content_block_stop" => {
                let stop = self.parse::<BlockStop>(data)?;
                self.stop_block(stop.index, out);
            }
            "message_delta" => {
                let delta = self.parse::<MessageDelta>(data)?;
                if let Some(reason) = delta.delta.and_then(|d| d.stop_reason) {
                    self.stop_reason = Some(reason);
                }
                if let Some(usage) = delta.usage {
                    self.merge_usage(usage);
                }
            }
            "message_stop" => {
                let response = self.finish();
                out.push(ModelEvent::Completed(response));
                self.done = true;
            }
            "error" => {
                let detail = self
                    .parse::<ErrorEvent>(data)
                    .ok()
                    .and_then(|e| e.error)
                    .unwrap_or_default();
                return Err(error::from_event(
                    detail.kind,
                    detail.message,
                    &self.label,
                    None,
                ));
            }
            // ping and event types added later.
            _ => {}
        }
        Ok(())
    }

    fn on_eof(&mut self, _out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        if self.done {
            Ok(())
        } else {
            Err(error::cut(&self.label, "before message_stop"))
        }
    }

    fn is_done(&self) -> bool {
        self.done
    }
}
