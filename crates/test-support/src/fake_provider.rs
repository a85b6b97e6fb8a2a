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

use std::collections::{BTreeMap, VecDeque};
use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::Response;
use serde::{Deserialize, Serialize};
use serde_json::Value;

// An explicit path so this file also compiles when another crate includes it with `#[path]`.
#[path = "fake_provider/render.rs"]
mod render;

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
    /// Token counts reported at the end (`input` includes `cached`).
    Usage {
        input: u64,
        output: u64,
        cached: u64,
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

#[derive(Default)]
struct Shared {
    queue: VecDeque<Reply>,
    fallback: Option<Reply>,
    requests: Vec<RecordedRequest>,
    /// Model-listing requests (discovery, `ferrite doctor`), kept apart so `requests()` stays
    /// the model calls.
    listing_requests: Vec<RecordedRequest>,
    listing: Option<Listing>,
}

/// The models the server says it has (model discovery).
#[derive(Debug, Clone, PartialEq)]
enum Listing {
    /// `GET /v1/models` only, vLLM-style (`max_model_len` when a window is given).
    OpenAi(Vec<(String, Option<u64>)>),
    /// Ollama: `GET /api/tags`, `POST /api/show` (context length), and `GET /v1/models`.
    Ollama(Vec<(String, u64)>),
}

type SharedState = Arc<Mutex<Shared>>;

fn lock(state: &SharedState) -> MutexGuard<'_, Shared> {
    // A panicking test thread must not hide the recorded requests from the others.
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The running server; stops accepting connections when dropped.
pub struct FakeProvider {
    addr: SocketAddr,
    state: SharedState,
    task: tokio::task::JoinHandle<()>,
}

impl FakeProvider {
    /// Starts on `127.0.0.1` with a free port.
    pub async fn start() -> std::io::Result<Self> {
        Self::start_on(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).await
    }

    pub async fn start_on(addr: SocketAddr) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let state = SharedState::default();
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&state));
        let task = tokio::spawn(async move {
            // `serve` only returns on a listener failure; the server is gone then either way.
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { addr, state, task })
    }

    /// The origin, e.g. `http://127.0.0.1:41234` (Anthropic's base URL; the OpenAI APIs take
    /// this plus `/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Queues the answer to a coming request.
    pub fn push(&self, reply: impl Into<Reply>) {
        lock(&self.state).queue.push_back(reply.into());
    }

    /// The answer to every request that finds the queue empty.
    pub fn set_fallback(&self, reply: impl Into<Reply>) {
        lock(&self.state).fallback = Some(reply.into());
    }

    /// Answers `GET /v1/models` with these models (vLLM-style: `max_model_len` is the window).
    pub fn set_openai_models(&self, models: &[(&str, Option<u64>)]) {
        lock(&self.state).listing = Some(Listing::OpenAi(
            models
                .iter()
                .map(|(id, w)| ((*id).to_owned(), *w))
                .collect(),
        ));
    }

    /// Answers like Ollama: `GET /api/tags`, `POST /api/show` with each model's context length,
    /// and `GET /v1/models`.
    pub fn set_ollama_models(&self, models: &[(&str, u64)]) {
        lock(&self.state).listing = Some(Listing::Ollama(
            models
                .iter()
                .map(|(id, w)| ((*id).to_owned(), *w))
                .collect(),
        ));
    }

    /// Replies queued and not yet served.
    pub fn pending(&self) -> usize {
        lock(&self.state).queue.len()
    }

    /// Every request received so far, in arrival order, except model listings.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state).requests.clone()
    }

    /// The model-listing requests received so far (`GET …/models`, `GET /api/tags`,
    /// `POST /api/show`), in arrival order.
    pub fn listing_requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state).listing_requests.clone()
    }

    /// Runs until the server stops (for the binary, which serves until it is killed).
    pub async fn wait(&mut self) {
        let _ = (&mut self.task).await;
    }
}

impl Drop for FakeProvider {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(
    State(state): State<SharedState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let api = WireApi::from_path(&path);
    let listing_body = serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null);
    let reply = {
        let mut shared = lock(&state);
        let is_listing = matches!(
            (method.as_str(), path.as_str()),
            ("GET", "/api/tags") | ("POST", "/api/show")
        ) || (method == Method::GET && path.ends_with("/models"));
        let recorded = RecordedRequest {
            method: method.to_string(),
            path: path.clone(),
            headers: headers
                .iter()
                .map(|(k, v)| {
                    (
                        k.as_str().to_owned(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
            api,
        };
        if is_listing {
            shared.listing_requests.push(recorded);
        } else {
            shared.requests.push(recorded);
        }
        if let Some(answer) = listing_answer(shared.listing.as_ref(), &method, &path, &listing_body)
        {
            return answer;
        }
        // Only a model call takes a queued reply: a listing or a stray path must not eat one.
        if api.is_some() {
            shared.queue.pop_front().or_else(|| shared.fallback.clone())
        } else {
            None
        }
    };
    let Some(api) = api else {
        return http_reply(
            404,
            &[],
            &format!(
                r#"{{"error":{{"message":"fake provider: no endpoint {path}","type":"not_found_error"}}}}"#
            ),
        );
    };
    match reply {
        None => http_reply(
            500,
            &[],
            r#"{"error":{"message":"fake provider: no reply queued","type":"api_error"}}"#,
        ),
        Some(Reply::Http {
            status,
            headers,
            body,
        }) => {
            let headers: Vec<(&str, &str)> = headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            http_reply(status, &headers, &body)
        }
        Some(Reply::Raw {
            status,
            content_type,
            pieces,
        }) => stream_reply(status, &content_type, pieces),
        Some(Reply::Script(script)) => stream_reply(
            200,
            "text/event-stream; charset=utf-8",
            render::render(api, &script),
        ),
    }
}

/// The answer to a model-listing request, when the server has a listing and this is one.
fn listing_answer(
    listing: Option<&Listing>,
    method: &Method,
    path: &str,
    body: &Value,
) -> Option<Response> {
    let listing = listing?;
    let json = |v: Value| Some(http_reply(200, &[], &v.to_string()));
    match (method.as_str(), path, listing) {
        ("GET", "/v1/models", Listing::OpenAi(models)) => json(serde_json::json!({
            "object": "list",
            "data": models.iter().map(|(id, w)| {
                let mut m = serde_json::json!({"id": id, "object": "model", "owned_by": "fake"});
                if let Some(w) = w {
                    m["max_model_len"] = (*w).into();
                }
                m
            }).collect::<Vec<_>>(),
        })),
        ("GET", "/v1/models", Listing::Ollama(models)) => json(serde_json::json!({
            "object": "list",
            "data": models.iter().map(|(id, _)| serde_json::json!({"id": id, "object": "model"})).collect::<Vec<_>>(),
        })),
        ("GET", "/api/tags", Listing::Ollama(models)) => json(serde_json::json!({
            "models": models.iter().map(|(id, _)| serde_json::json!({"name": id, "model": id})).collect::<Vec<_>>(),
        })),
        ("POST", "/api/show", Listing::Ollama(models)) => {
            let wanted = body.get("model").and_then(Value::as_str)?;
            let (_, window) = models.iter().find(|(id, _)| id == wanted)?;
            json(
                serde_json::json!({"model_info": {"general.architecture": "llama", "llama.context_length": window}}),
            )
        }
        _ => None,
    }
}

fn http_reply(status: u16, headers: &[(&str, &str)], body: &str) -> Response {
    let mut response = Response::new(Body::from(body.to_owned()));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let map = response.headers_mut();
    map.insert("content-type", HeaderValue::from_static("application/json"));
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            map.insert(name, value);
        }
    }
    response
}

fn stream_reply(status: u16, content_type: &str, pieces: Vec<Piece>) -> Response {
    let stream = futures::stream::unfold(pieces.into_iter(), |mut pieces| async move {
        loop {
            match pieces.next()? {
                Piece::Data(data) => return Some((Ok::<_, Infallible>(Bytes::from(data)), pieces)),
                Piece::Sleep(duration) => tokio::time::sleep(duration).await,
            }
        }
    });
    let mut response = Response::new(Body::from_stream(stream));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    if let Ok(value) = HeaderValue::from_str(content_type) {
        response.headers_mut().insert("content-type", value);
    }
    response
        .headers_mut()
        .insert("cache-control", HeaderValue::from_static("no-cache"));
    response
}
