//! Renders a [`Script`] as the SSE body of each API, following the shapes of real recordings
//! (including their noise: pings, padded data lines, `obfuscation`, `usage: null`).

use std::time::Duration;

use serde_json::{Value, json};

use super::{Piece, Script, Step, StopReason, ToolCallSpec, WireApi};

pub(super) fn render(api: WireApi, script: &Script) -> Vec<Piece> {
    let facts = Facts::of(script);
    match api {
        WireApi::Anthropic => Anthropic::default().render(script, &facts),
        WireApi::Responses => Responses::default().render(script, &facts),
        WireApi::Chat => Chat::default().render(script, &facts),
    }
}

/// What the terminal events need to know up front.
struct Facts {
    input: u64,
    output: u64,
    cached: u64,
    cache_write: u64,
    reasoning: u64,
    stop: StopReason,
}

impl Facts {
    fn of(script: &Script) -> Self {
        let mut facts = Facts {
            input: 10,
            output: 5,
            cached: 0,
            cache_write: 0,
            reasoning: 0,
            stop: StopReason::EndTurn,
        };
        let mut explicit_stop = None;
        for step in &script.steps {
            match step {
                Step::Usage {
                    input,
                    output,
                    cached,
                    cache_write,
                    reasoning,
                } => {
                    facts.input = *input;
                    facts.output = *output;
                    facts.cached = *cached;
                    facts.cache_write = *cache_write;
                    facts.reasoning = *reasoning;
                }
                Step::Stop { reason } => explicit_stop = Some(*reason),
                Step::ToolCall(_) | Step::ParallelToolCalls { .. } => {
                    facts.stop = StopReason::ToolUse;
                }
                Step::Text { .. }
                | Step::Thinking { .. }
                | Step::WebSearch { .. }
                | Step::Stall { .. }
                | Step::Cut
                | Step::MidStreamError { .. } => {}
            }
        }
        if let Some(stop) = explicit_stop {
            facts.stop = stop;
        }
        facts
    }
}

fn event(name: Option<&str>, data: &Value) -> Piece {
    let text = match name {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    };
    Piece::Data(text.into_bytes())
}

/// `text` in `n` pieces of about equal length, cut on character boundaries.
fn fragments(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len().div_ceil(n.max(1)).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// What a step sequence does once a step ends the body early.
enum Flow {
    Continue,
    End,
}

#[derive(Default)]
struct Anthropic {
    out: Vec<Piece>,
    index: u64,
    /// The index of the text block being streamed into.
    open_text: Option<u64>,
}

impl Anthropic {
    fn send(&mut self, name: &str, data: Value) {
        // Real Anthropic streams pad their data lines with spaces; keep a parser honest.
        let text = format!("event: {name}\ndata: {data}    \n\n");
        self.out.push(Piece::Data(text.into_bytes()));
    }

    fn close_text(&mut self) {
        if let Some(index) = self.open_text.take() {
            self.send(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            );
        }
    }

    fn start(&mut self, block: Value) -> u64 {
        self.close_text();
        let index = self.index;
        self.index += 1;
        self.send(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": block}),
        );
        index
    }

    fn delta(&mut self, index: u64, delta: Value) {
        self.send(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        );
    }

    fn stop(&mut self, index: u64) {
        self.send(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
    }

    fn tool_call(&mut self, call: &ToolCallSpec) {
        let index = self.start(json!({
            "type": "tool_use", "id": call.id, "name": call.name, "input": {},
        }));
        self.delta(
            index,
            json!({"type": "input_json_delta", "partial_json": ""}),
        );
        for part in fragments(&call.args_json, 3) {
            self.delta(
                index,
                json!({"type": "input_json_delta", "partial_json": part}),
            );
        }
        self.stop(index);
    }

    fn step(&mut self, step: &Step) -> Flow {
        match step {
            Step::Text { text } => {
                let index = match self.open_text {
                    Some(index) => index,
                    None => {
                        let index = self.start(json!({"type": "text", "text": ""}));
                        self.open_text = Some(index);
                        index
                    }
                };
                self.delta(index, json!({"type": "text_delta", "text": text}));
            }
            Step::Thinking { text, signature } => {
                let index =
                    self.start(json!({"type": "thinking", "thinking": "", "signature": ""}));
                for part in fragments(text, 2) {
                    self.delta(index, json!({"type": "thinking_delta", "thinking": part}));
                }
                self.delta(
                    index,
                    json!({"type": "signature_delta", "signature": signature}),
                );
                self.stop(index);
            }
            Step::ToolCall(call) => self.tool_call(call),
            Step::ParallelToolCalls { calls } => calls.iter().for_each(|c| self.tool_call(c)),
            Step::WebSearch { id, query } => {
                let index = self.start(json!({
                    "type": "server_tool_use", "id": id, "name": "web_search", "input": {},
                }));
                let input = json!({"query": query}).to_string();
                self.delta(
                    index,
                    json!({"type": "input_json_delta", "partial_json": input}),
                );
                self.stop(index);
                let index = self.start(json!({
                    "type": "web_search_tool_result",
                    "tool_use_id": id,
                    "content": [{
                        "type": "web_search_result",
                        "title": "Example result",
                        "url": "https://example.com/",
                        "encrypted_content": "EqQBCgIYAhIM",
                    }],
                }));
                self.stop(index);
            }
            Step::Stall { ms } => self.out.push(Piece::Sleep(Duration::from_millis(*ms))),
            Step::Cut => return Flow::End,
            Step::MidStreamError { code, message } => {
                self.send(
                    "error",
                    json!({"type": "error", "error": {"type": code, "message": message}}),
                );
                return Flow::End;
            }
            Step::Usage { .. } | Step::Stop { .. } => {}
        }
        Flow::Continue
    }

    fn render(mut self, script: &Script, facts: &Facts) -> Vec<Piece> {
        self.send(
            "message_start",
            json!({"type": "message_start", "message": {
                "id": "msg_fake", "type": "message", "role": "assistant", "model": "fake-model",
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {
                    "input_tokens": facts.input.saturating_sub(facts.cached + facts.cache_write),
                    "cache_creation_input_tokens": facts.cache_write,
                    "cache_read_input_tokens": facts.cached,
                    "output_tokens": 1,
                },
            }}),
        );
        self.send("ping", json!({"type": "ping"}));
        for step in &script.steps {
            if let Flow::End = self.step(step) {
                return self.out;
            }
        }
        self.close_text();
        let reason = match facts.stop {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::Refusal => "refusal",
        };
        self.send(
            "message_delta",
            json!({"type": "message_delta",
                "delta": {"stop_reason": reason, "stop_sequence": null},
                "usage": {"output_tokens": facts.output}}),
        );
        self.send("message_stop", json!({"type": "message_stop"}));
        self.out
    }
}

#[derive(Default)]
struct Responses {
    out: Vec<Piece>,
    seq: u64,
    output_index: u64,
    /// The message item being streamed into: (output index, item id, text so far).
    open_message: Option<(u64, String, String)>,
}

impl Responses {
    fn send(&mut self, mut data: Value) {
        let name = data
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if let Some(obj) = data.as_object_mut() {
            obj.insert("sequence_number".into(), json!(self.seq));
        }
        self.seq += 1;
        self.out.push(event(Some(&name), &data));
    }

    fn next_index(&mut self) -> u64 {
        let index = self.output_index;
        self.output_index += 1;
        index
    }

    fn close_message(&mut self) {
        if let Some((index, id, text)) = self.open_message.take() {
            let part = json!({"type": "output_text", "annotations": [], "text": text});
            self.send(json!({"type": "response.output_text.done", "item_id": id, "output_index": index, "content_index": 0, "text": text}));
            self.send(json!({"type": "response.content_part.done", "item_id": id, "output_index": index, "content_index": 0, "part": part}));
            self.send(json!({"type": "response.output_item.done", "output_index": index, "item": {
                "id": id, "type": "message", "status": "completed", "role": "assistant", "content": [part],
            }}));
        }
    }

    fn tool_call(&mut self, call: &ToolCallSpec) {
        self.close_message();
        let index = self.next_index();
        let id = format!("fc_{index}");
        let item = |args: &str, status: &str| json!({"id": id, "type": "function_call", "status": status, "arguments": args, "call_id": call.id, "name": call.name});
        self.send(json!({"type": "response.output_item.added", "output_index": index, "item": item("", "in_progress")}));
        for part in fragments(&call.args_json, 3) {
            self.send(json!({"type": "response.function_call_arguments.delta", "item_id": id, "output_index": index, "delta": part, "obfuscation": "Zx1"}));
        }
        self.send(json!({"type": "response.function_call_arguments.done", "item_id": id, "output_index": index, "arguments": call.args_json}));
        self.send(json!({"type": "response.output_item.done", "output_index": index, "item": item(&call.args_json, "completed")}));
    }

    fn step(&mut self, step: &Step) -> Flow {
        match step {
            Step::Text { text } => {
                if self.open_message.is_none() {
                    let index = self.next_index();
                    let id = format!("msg_{index}");
                    self.send(json!({"type": "response.output_item.added", "output_index": index, "item": {
                        "id": id, "type": "message", "status": "in_progress", "role": "assistant", "content": [],
                    }}));
                    self.send(json!({"type": "response.content_part.added", "item_id": id, "output_index": index, "content_index": 0,
                        "part": {"type": "output_text", "annotations": [], "text": ""}}));
                    self.open_message = Some((index, id, String::new()));
                }
                if let Some((index, id, acc)) = self.open_message.as_mut() {
                    acc.push_str(text);
                    let data = json!({"type": "response.output_text.delta", "item_id": id, "output_index": index, "content_index": 0, "delta": text, "logprobs": []});
                    self.send(data);
                }
            }
            Step::Thinking { text, signature } => {
                self.close_message();
                let index = self.next_index();
                let id = format!("rs_{index}");
                self.send(json!({"type": "response.output_item.added", "output_index": index, "item": {
                    "id": id, "type": "reasoning", "content": [], "encrypted_content": signature, "summary": [],
                }}));
                self.send(json!({"type": "response.reasoning_summary_part.added", "item_id": id, "output_index": index, "summary_index": 0,
                    "part": {"type": "summary_text", "text": ""}}));
                for part in fragments(text, 2) {
                    self.send(json!({"type": "response.reasoning_summary_text.delta", "item_id": id, "output_index": index, "summary_index": 0, "delta": part}));
                }
                self.send(json!({"type": "response.reasoning_summary_text.done", "item_id": id, "output_index": index, "summary_index": 0, "text": text}));
                self.send(json!({"type": "response.reasoning_summary_part.done", "item_id": id, "output_index": index, "summary_index": 0,
                    "part": {"type": "summary_text", "text": text}}));
                self.send(
                    json!({"type": "response.output_item.done", "output_index": index, "item": {
                        "id": id, "type": "reasoning", "encrypted_content": signature,
                        "summary": [{"type": "summary_text", "text": text}],
                    }}),
                );
            }
            Step::ToolCall(call) => self.tool_call(call),
            Step::ParallelToolCalls { calls } => calls.iter().for_each(|c| self.tool_call(c)),
            Step::WebSearch { id, query } => {
                self.close_message();
                let index = self.next_index();
                self.send(
                    json!({"type": "response.output_item.added", "output_index": index, "item": {
                        "id": id, "type": "web_search_call", "status": "in_progress",
                    }}),
                );
                self.send(json!({"type": "response.web_search_call.completed", "item_id": id, "output_index": index}));
                self.send(
                    json!({"type": "response.output_item.done", "output_index": index, "item": {
                        "id": id, "type": "web_search_call", "status": "completed",
                        "action": {"type": "search", "query": query},
                    }}),
                );
            }
            Step::Stall { ms } => self.out.push(Piece::Sleep(Duration::from_millis(*ms))),
            Step::Cut => return Flow::End,
            Step::MidStreamError { code, message } => {
                self.send(json!({"type": "response.failed", "response": {
                    "id": "resp_fake", "status": "failed", "output": [],
                    "error": {"code": code, "message": message},
                }}));
                return Flow::End;
            }
            Step::Usage { .. } | Step::Stop { .. } => {}
        }
        Flow::Continue
    }

    fn render(mut self, script: &Script, facts: &Facts) -> Vec<Piece> {
        self.send(json!({"type": "response.created", "response": {
            "id": "resp_fake", "object": "response", "status": "in_progress", "output": [], "usage": null,
        }}));
        self.send(json!({"type": "response.in_progress", "response": {
            "id": "resp_fake", "object": "response", "status": "in_progress", "output": [], "usage": null,
        }}));
        for step in &script.steps {
            if let Flow::End = self.step(step) {
                return self.out;
            }
        }
        self.close_message();
        let usage = json!({
            "input_tokens": facts.input,
            "input_tokens_details": {"cached_tokens": facts.cached},
            "output_tokens": facts.output,
            "output_tokens_details": {"reasoning_tokens": facts.reasoning},
            "total_tokens": facts.input + facts.output,
        });
        let incomplete = match facts.stop {
            StopReason::MaxTokens => Some("max_output_tokens"),
            StopReason::Refusal => Some("content_filter"),
            StopReason::EndTurn | StopReason::ToolUse => None,
        };
        match incomplete {
            Some(reason) => self.send(json!({"type": "response.incomplete", "response": {
                "id": "resp_fake", "status": "incomplete", "incomplete_details": {"reason": reason}, "usage": usage,
            }})),
            None => self.send(json!({"type": "response.completed", "response": {
                "id": "resp_fake", "status": "completed", "usage": usage,
            }})),
        }
        self.out
    }
}

#[derive(Default)]
struct Chat {
    out: Vec<Piece>,
    call_index: u64,
}

impl Chat {
    fn chunk(&mut self, delta: Value, finish_reason: Value) {
        let data = json!({
            "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1_782_321_900,
            "model": "fake-model", "usage": null,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
            "obfuscation": "aZ",
        });
        self.out.push(event(None, &data));
    }

    fn tool_call(&mut self, call: &ToolCallSpec) {
        let index = self.call_index;
        self.call_index += 1;
        self.chunk(
            json!({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                "function": {"name": call.name, "arguments": ""}}]}),
            Value::Null,
        );
        for part in fragments(&call.args_json, 3) {
            self.chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": part}}]}),
                Value::Null,
            );
        }
    }

    fn step(&mut self, step: &Step) -> Flow {
        match step {
            Step::Text { text } => self.chunk(json!({"content": text}), Value::Null),
            Step::Thinking { text, .. } => {
                for part in fragments(text, 2) {
                    self.chunk(json!({"reasoning_content": part}), Value::Null);
                }
            }
            Step::ToolCall(call) => self.tool_call(call),
            Step::ParallelToolCalls { calls } => calls.iter().for_each(|c| self.tool_call(c)),
            // No hosted tools in this API.
            Step::WebSearch { .. } => {}
            Step::Stall { ms } => self.out.push(Piece::Sleep(Duration::from_millis(*ms))),
            Step::Cut => return Flow::End,
            Step::MidStreamError { code, message } => {
                let data = json!({"error": {"message": message, "type": code, "param": null, "code": code}});
                self.out.push(event(None, &data));
                return Flow::End;
            }
            Step::Usage { .. } | Step::Stop { .. } => {}
        }
        Flow::Continue
    }

    fn render(mut self, script: &Script, facts: &Facts) -> Vec<Piece> {
        self.chunk(json!({"role": "assistant", "content": ""}), Value::Null);
        for step in &script.steps {
            if let Flow::End = self.step(step) {
                return self.out;
            }
        }
        let reason = match facts.stop {
            StopReason::EndTurn => "stop",
            StopReason::ToolUse => "tool_calls",
            StopReason::MaxTokens => "length",
            StopReason::Refusal => "content_filter",
        };
        self.chunk(json!({}), json!(reason));
        let usage = json!({
            "id": "chatcmpl-fake", "object": "chat.completion.chunk", "choices": [],
            "usage": {
                "prompt_tokens": facts.input, "completion_tokens": facts.output,
                "total_tokens": facts.input + facts.output,
                "prompt_tokens_details": {"cached_tokens": facts.cached},
                "completion_tokens_details": {"reasoning_tokens": facts.reasoning},
            },
        });
        self.out.push(event(None, &usage));
        self.out.push(Piece::Data(b"data: [DONE]\n\n".to_vec()));
        self.out
    }
}
