//! A real HTTP server on loopback that speaks the streaming formats of the three model APIs
//! (Anthropic Messages, OpenAI Responses, OpenAI Chat Completions) from scripted replies, and
//! records every request for assertions.
//!
//! ```text
//! let fake = FakeProvider::start().await?;
//! fake.push(Reply::error_with_headers(429, &[("retry-after-ms", "100")], r#"{"error":{"message":"slow down","type":"rate_limit_error"}}"#));
//! fake.push(Script::new().text("Hel").text("lo").usage(12, 3, 0));
//! // Anthropic: base_url = fake.base_url(); OpenAI APIs: format!("{}/v1", fake.base_url())
//! let first = &fake.requests()[0];
//! assert_eq!(first.path, "/v1/messages");
//! ```
//!
//! Replies are served first in, first out, whichever endpoint is hit; the script is rendered
//! in the format of that endpoint. With the queue empty the fallback reply (if set) answers,
//! else a 500 that names the problem.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod render;
mod server;

pub use server::{FakeProvider, STAMP_MARKER, TITLE_MARKER, Timing};

/// Which wire format a request asked for, from its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireApi {
    /// `.../v1/messages`
    Anthropic,
    /// `.../responses`
    Responses,
    /// `.../chat/completions`
    Chat,
}

impl WireApi {
    fn from_path(path: &str) -> Option<Self> {
        if path.ends_with("/messages") {
            Some(WireApi::Anthropic)
        } else if path.ends_with("/responses") {
            Some(WireApi::Responses)
        } else if path.ends_with("/chat/completions") {
            Some(WireApi::Chat)
        } else {
            None
        }
    }
}

/// A request as the server received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Header names lower-cased; a repeated header keeps its last value.
    pub headers: BTreeMap<String, String>,
    /// The body parsed as JSON (`Value::Null` when it is not JSON).
    pub body: Value,
    pub api: Option<WireApi>,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
}

/// One scripted streaming answer: the steps in order, rendered per API.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Script {
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallSpec {
    pub id: String,
    pub name: String,
    /// The arguments as JSON text; streamed in several fragments.
    pub args_json: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Step {
    /// One text delta (consecutive ones form one text block / message).
    Text {
        text: String,
    },
    /// A reasoning block. `signature` becomes Anthropic's signature and the Responses
    /// `encrypted_content`; Chat Completions streams the text as `reasoning_content`.
    Thinking {
        text: String,
        signature: String,
    },
    ToolCall(ToolCallSpec),
    /// Several calls in one response (streamed one after another with increasing indices).
    ParallelToolCalls {
        calls: Vec<ToolCallSpec>,
    },
    /// A hosted web search call and its result (Anthropic, Responses; Chat ignores it).
    WebSearch {
        id: String,
        query: String,
    },
    /// Token counts reported at the end (`input` includes `cached` and `cache_write`; `output`
    /// includes `reasoning`, which Anthropic does not report apart).
    Usage {
        input: u64,
        output: u64,
        cached: u64,
        #[serde(default)]
        cache_write: u64,
        #[serde(default)]
        reasoning: u64,
    },
    /// The stop reason; by default `tool_use` when the script has calls, else `end_turn`.
    Stop {
        reason: StopReason,
    },
    /// Sleep before sending the rest.
    Stall {
        ms: u64,
    },
    /// End the body here, without the terminal event.
    Cut,
    /// An error event after HTTP 200 (Anthropic `event: error`, Responses `response.failed`,
    /// Chat `{"error":{...}}`), then the end of the body.
    MidStreamError {
        code: String,
        message: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    Refusal,
}

impl Script {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn step(mut self, step: Step) -> Self {
        self.steps.push(step);
        self
    }

    pub fn text(self, text: impl Into<String>) -> Self {
        self.step(Step::Text { text: text.into() })
    }

    /// One text step per item.
    pub fn text_deltas<I, S>(self, deltas: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        deltas.into_iter().fold(self, |s, d| s.text(d))
    }

    pub fn thinking(self, text: impl Into<String>, signature: impl Into<String>) -> Self {
        self.step(Step::Thinking {
            text: text.into(),
            signature: signature.into(),
        })
    }

    pub fn tool_call(
        self,
        id: impl Into<String>,
        name: impl Into<String>,
        args_json: impl Into<String>,
    ) -> Self {
        self.step(Step::ToolCall(ToolCallSpec {
            id: id.into(),
            name: name.into(),
            args_json: args_json.into(),
        }))
    }

    /// `(id, name, args_json)` triples.
    pub fn parallel_tool_calls(self, calls: &[(&str, &str, &str)]) -> Self {
        let calls = calls
            .iter()
            .map(|(id, name, args)| ToolCallSpec {
                id: (*id).to_owned(),
                name: (*name).to_owned(),
                args_json: (*args).to_owned(),
            })
            .collect();
        self.step(Step::ParallelToolCalls { calls })
    }

    pub fn web_search(self, id: impl Into<String>, query: impl Into<String>) -> Self {
        self.step(Step::WebSearch {
            id: id.into(),
            query: query.into(),
        })
    }

    pub fn usage(self, input: u64, output: u64, cached: u64) -> Self {
        self.step(Step::Usage {
            input,
            output,
            cached,
            cache_write: 0,
            reasoning: 0,
        })
    }

    /// Usage with the cache writes and reasoning tokens the APIs report beside the totals.
    pub fn usage_details(
        self,
        input: u64,
        output: u64,
        cached: u64,
        cache_write: u64,
        reasoning: u64,
    ) -> Self {
        self.step(Step::Usage {
            input,
            output,
            cached,
            cache_write,
            reasoning,
        })
    }

    pub fn stop(self, reason: StopReason) -> Self {
        self.step(Step::Stop { reason })
    }

    pub fn stall(self, duration: Duration) -> Self {
        let ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        self.step(Step::Stall { ms })
    }

    pub fn cut(self) -> Self {
        self.step(Step::Cut)
    }

    pub fn mid_stream_error(self, code: impl Into<String>, message: impl Into<String>) -> Self {
        self.step(Step::MidStreamError {
            code: code.into(),
            message: message.into(),
        })
    }
}

/// A piece of a raw body: bytes to send as one chunk, or a pause.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    Data(Vec<u8>),
    Sleep(Duration),
}

/// What the server answers one request with.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// An SSE stream rendered from the script in the endpoint's format.
    Script(Script),
    /// A non-streaming HTTP answer (usually an error), JSON body.
    Http {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Exactly these bytes, chunk by chunk (for the quirks of real servers).
    Raw {
        status: u16,
        content_type: String,
        pieces: Vec<Piece>,
    },
}

impl From<Script> for Reply {
    fn from(script: Script) -> Self {
        Reply::Script(script)
    }
}

impl Reply {
    pub fn error(status: u16, body: impl Into<String>) -> Self {
        Reply::Http {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    pub fn error_with_headers(
        status: u16,
        headers: &[(&str, &str)],
        body: impl Into<String>,
    ) -> Self {
        Reply::Http {
            status,
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            body: body.into(),
        }
    }

    /// A `text/event-stream` body sent as one chunk.
    pub fn raw_sse(body: impl Into<String>) -> Self {
        Self::raw_chunks([body.into()])
    }

    /// A `text/event-stream` body sent as these chunks, in order.
    pub fn raw_chunks<I, S>(chunks: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Reply::Raw {
            status: 200,
            content_type: "text/event-stream; charset=utf-8".to_owned(),
            pieces: chunks
                .into_iter()
                .map(|c| Piece::Data(c.into().into_bytes()))
                .collect(),
        }
    }
}
