//! The openai_responses stream grammar: SSE events in, [`ModelEvent`]s out.

use crate::error::{self, CodeValue, ErrorBody, ErrorDetail};
use crate::grammar::{StreamDecoder, event_type};
use ferrite_core::model::{
    AssistantPart, HostedStatus, ModelError, ModelEvent, ModelResponse, StopKind, Usage,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::PROVIDER;

#[derive(Debug)]
enum Item {
    Message {
        text: String,
        refusal: bool,
    },
    Reasoning {
        text: String,
        summary_index: Option<u64>,
        item: Option<Value>,
    },
    Call {
        call_id: String,
        name: String,
        arguments: String,
    },
    WebSearch(Value),
    Other,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    output_index: Option<u64>,
    #[serde(default)]
    delta: String,
    #[serde(default)]
    summary_index: Option<u64>,
}

#[derive(Deserialize)]
struct ArgumentsDone {
    #[serde(default)]
    output_index: Option<u64>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct ItemEvent {
    #[serde(default)]
    output_index: Option<u64>,
    item: Value,
}

#[derive(Deserialize)]
struct ResponseEvent {
    #[serde(default)]
    response: ResponseBody,
}

#[derive(Default, Deserialize)]
struct ResponseBody {
    #[serde(default)]
    usage: Option<RawUsage>,
    #[serde(default)]
    error: Option<ErrorDetail>,
    #[serde(default)]
    incomplete_details: Option<IncompleteDetails>,
}

#[derive(Deserialize)]
struct IncompleteDetails {
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Default, Deserialize)]
struct RawUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
    #[serde(default)]
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Default, Deserialize)]
struct InputDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// The part of `output_tokens` spent reasoning.
#[derive(Default, Deserialize)]
struct OutputDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

pub(crate) struct Decoder {
    label: String,
    items: Vec<(u64, Item)>,
    done: bool,
}

fn str_field(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

impl Decoder {
    pub fn new(label: &str) -> Self {
        Self {
            label: label.to_owned(),
            items: Vec::new(),
            done: false,
        }
    }

    fn parse<'a, T: Deserialize<'a>>(&self, data: &'a str) -> Result<T, ModelError> {
        serde_json::from_str(data).map_err(|e| error::invalid(&self.label, e))
    }

    /// The item at `index` (the last one when a server leaves `output_index` out), created by
    /// `make` when a delta arrives without its `output_item.added`.
    fn item(&mut self, index: Option<u64>, make: impl FnOnce() -> Item) -> &mut Item {
        let index = index.unwrap_or_else(|| self.items.last().map_or(0, |(i, _)| *i));
        let pos = match self.items.iter().rposition(|(i, _)| *i == index) {
            Some(pos) => pos,
            None => {
                self.items.push((index, make()));
                self.items.len() - 1
            }
        };
        &mut self.items[pos].1
    }

    fn item_added(&mut self, event: ItemEvent, out: &mut Vec<ModelEvent>) {
        let item = event.item;
        let made = match item.get("type").and_then(Value::as_str).unwrap_or("") {
            "message" => Item::Message {
                text: String::new(),
                refusal: false,
            },
            "reasoning" => Item::Reasoning {
                text: String::new(),
                summary_index: None,
                item: None,
            },
            "function_call" => Item::Call {
                call_id: str_field(&item, "call_id"),
                name: str_field(&item, "name"),
                arguments: str_field(&item, "arguments"),
            },
            "web_search_call" => {
                out.push(ModelEvent::WebSearch {
                    id: str_field(&item, "id"),
                    query: search_query(&item),
                    status: HostedStatus::InProgress,
                });
                Item::WebSearch(item)
            }
            _ => Item::Other,
        };
        let index = event
            .output_index
            .unwrap_or_else(|| self.items.last().map_or(0, |(i, _)| i + 1));
        self.items.push((index, made));
    }

    fn item_done(&mut self, event: ItemEvent, out: &mut Vec<ModelEvent>) {
        let ItemEvent { output_index, item } = event;
        let kind = item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        match kind.as_str() {
            "message" => {
                let (text, refusal) = message_text(&item);
                if let Item::Message {
                    text: acc,
                    refusal: acc_refusal,
                } = self.item(output_index, || Item::Message {
                    text: String::new(),
                    refusal: false,
                }) {
                    // The done item is authoritative; deltas only previewed it.
                    if !text.is_empty() {
                        if acc.is_empty() {
                            out.push(ModelEvent::TextDelta(text.clone()));
                        }
                        *acc = text;
                    }
                    *acc_refusal |= refusal;
                }
            }
            "reasoning" => {
                let slot = self.item(output_index, || Item::Reasoning {
                    text: String::new(),
                    summary_index: None,
                    item: None,
                });
                if let Item::Reasoning {
                    text, item: kept, ..
                } = slot
                {
                    if text.is_empty() {
                        *text = summary_text(&item);
                    }
                    *kept = Some(item);
                }
            }
            "function_call" => {
                let call = Item::Call {
                    call_id: str_field(&item, "call_id"),
                    name: str_field(&item, "name"),
                    arguments: str_field(&item, "arguments"),
                };
                *self.item(output_index, || Item::Other) = call;
            }
            "web_search_call" => {
                let status = match item.get("status").and_then(Value::as_str) {
                    Some("failed") => HostedStatus::Failed,
                    _ => HostedStatus::Completed,
                };
                out.push(ModelEvent::WebSearch {
                    id: str_field(&item, "id"),
                    query: search_query(&item),
                    status,
                });
                *self.item(output_index, || Item::Other) = Item::WebSearch(item);
            }
            _ => {}
        }
    }

    fn complete(&mut self, usage: Option<RawUsage>, stop: Option<StopKind>) -> ModelResponse {
        let mut items = std::mem::take(&mut self.items);
        items.sort_by_key(|(i, _)| *i);
        let mut refused = false;
        let mut content = Vec::with_capacity(items.len());
        for (_, item) in items {
            match item {
                Item::Message { text, refusal } => {
                    refused |= refusal;
                    if !text.is_empty() {
                        content.push(AssistantPart::Text { text });
                    }
                }
                Item::Reasoning { text, item, .. } => {
                    content.push(AssistantPart::Reasoning {
                        text,
                        provider_data: item.map(|item| json!({"provider": PROVIDER, "item": item})),
                    });
                }
                Item::Call {
                    call_id,
                    name,
                    arguments,
                } => content.push(AssistantPart::ToolCall {
                    id: call_id,
                    name,
                    arguments: if arguments.trim().is_empty() {
                        "{}".to_owned()
                    } else {
                        arguments
                    },
                }),
                Item::WebSearch(data) => content.push(AssistantPart::Opaque {
                    provider: PROVIDER.to_owned(),
                    data,
                }),
                Item::Other => {}
            }
        }
        let has_calls = content
            .iter()
            .any(|p| matches!(p, AssistantPart::ToolCall { .. }));
        // The API has no stop reason: tool calls or a refusal in the output say why it ended.
        let stop = stop.unwrap_or(if has_calls {
            StopKind::ToolUse
        } else if refused {
            StopKind::Refusal
        } else {
            StopKind::EndTurn
        });
        let usage = usage.unwrap_or_default();
        ModelResponse {
            content,
            stop,
            usage: Usage {
                input_tokens: usage.input_tokens.unwrap_or(0),
                output_tokens: usage.output_tokens.unwrap_or(0),
                cached_input_tokens: usage
                    .input_tokens_details
                    .and_then(|d| d.cached_tokens)
                    .unwrap_or(0),
                cache_write_tokens: 0,
                reasoning_tokens: usage
                    .output_tokens_details
                    .and_then(|d| d.reasoning_tokens)
                    .unwrap_or(0),
            },
        }
    }
}

fn search_query(item: &Value) -> Option<String> {
    item.get("action")
        .and_then(|a| a.get("query"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The text of a message item and whether it holds a refusal.
fn message_text(item: &Value) -> (String, bool) {
    let mut text = String::new();
    let mut refusal = false;
    for part in item
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match part.get("type").and_then(Value::as_str) {
            Some("output_text") => {
                text.push_str(part.get("text").and_then(Value::as_str).unwrap_or(""))
            }
            Some("refusal") => {
                refusal = true;
                text.push_str(part.get("refusal").and_then(Value::as_str).unwrap_or(""));
            }
            _ => {}
        }
    }
    (text, refusal)
}

fn summary_text(item: &Value) -> String {
    let parts: Vec<&str> = item
        .get("summary")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("text").and_then(Value::as_str))
        .collect();
    parts.join("\n\n")
}

/// One method per event kind `on_event` dispatches on.
impl Decoder {
    fn text_delta(&mut self, data: &str, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        let delta = self.parse::<Delta>(data)?;
        if delta.delta.is_empty() {
            return Ok(());
        }
        if let Item::Message { text, .. } = self.item(delta.output_index, || Item::Message {
            text: String::new(),
            refusal: false,
        }) {
            text.push_str(&delta.delta);
        }
        out.push(ModelEvent::TextDelta(delta.delta));
        Ok(())
    }

    fn reasoning_delta(&mut self, data: &str, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        let delta = self.parse::<Delta>(data)?;
        if delta.delta.is_empty() {
            return Ok(());
        }
        let slot = self.item(delta.output_index, || Item::Reasoning {
            text: String::new(),
            summary_index: None,
            item: None,
        });
        if let Item::Reasoning {
            text,
            summary_index,
            ..
        } = slot
        {
            let mut chunk = delta.delta;
            // Summary parts are separate paragraphs.
            if delta.summary_index.is_some()
                && *summary_index != delta.summary_index
                && !text.is_empty()
            {
                chunk.insert_str(0, "\n\n");
            }
            *summary_index = delta.summary_index.or(*summary_index);
            text.push_str(&chunk);
            out.push(ModelEvent::ReasoningDelta(chunk));
        }
        Ok(())
    }

    fn arguments_delta(&mut self, data: &str) -> Result<(), ModelError> {
        let delta = self.parse::<Delta>(data)?;
        if let Item::Call { arguments, .. } = self.item(delta.output_index, || Item::Call {
            call_id: String::new(),
            name: String::new(),
            arguments: String::new(),
        }) {
            arguments.push_str(&delta.delta);
        }
        Ok(())
    }

    fn arguments_done(&mut self, data: &str) -> Result<(), ModelError> {
        let done = self.parse::<ArgumentsDone>(data)?;
        if let (Item::Call { arguments, .. }, Some(full)) =
            (self.item(done.output_index, || Item::Other), done.arguments)
        {
            *arguments = full;
        }
        Ok(())
    }

    /// `response.completed`, or `response.incomplete`: a legitimate end with partial output,
    /// whose reason becomes the stop kind.
    fn finished(
        &mut self,
        data: &str,
        incomplete: bool,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        let body = self.parse::<ResponseEvent>(data)?.response;
        let stop =
            incomplete.then(
                || match body.incomplete_details.and_then(|d| d.reason).as_deref() {
                    Some("content_filter") => StopKind::Refusal,
                    _ => StopKind::MaxTokens,
                },
            );
        let response = self.complete(body.usage, stop);
        out.push(ModelEvent::Completed(response));
        self.done = true;
        Ok(())
    }

    fn failed(&self, data: &str) -> ModelError {
        let detail = self
            .parse::<ResponseEvent>(data)
            .ok()
            .and_then(|e| e.response.error)
            .unwrap_or_default();
        let code = detail.code.map(CodeValue::into_string).or(detail.kind);
        error::from_event(code, detail.message, &self.label, None)
    }

    /// Seen both nested (`{"error":{code,message}}`) and flat (`{code,message}`).
    fn error_event(&self, data: &str) -> ModelError {
        let (code, message) = serde_json::from_str::<ErrorBody>(data)
            .map(ErrorBody::into_parts)
            .unwrap_or((None, None));
        error::from_event(code, message, &self.label, None)
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
            "response.output_text.delta" => self.text_delta(data, out),
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                self.reasoning_delta(data, out)
            }
            "response.function_call_arguments.delta" => self.arguments_delta(data),
            "response.function_call_arguments.done" => self.arguments_done(data),
            "response.output_item.added" => {
                let event = self.parse::<ItemEvent>(data)?;
                self.item_added(event, out);
                Ok(())
            }
            "response.output_item.done" => {
                let event = self.parse::<ItemEvent>(data)?;
                self.item_done(event, out);
                Ok(())
            }
            "response.completed" => self.finished(data, false, out),
            "response.incomplete" => self.finished(data, true, out),
            "response.failed" => Err(self.failed(data)),
            "error" => Err(self.error_event(data)),
            _ => Ok(()),
        }
    }

    fn on_eof(&mut self, _out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        if self.done {
            Ok(())
        } else {
            Err(error::cut(&self.label, "before response.completed"))
        }
    }

    fn is_done(&self) -> bool {
        self.done
    }
}
