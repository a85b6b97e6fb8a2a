//! The HTTP side of the fake provider: the axum server, the request log, the reply queue, and
//! the timings a benchmark reads back from `GET /_fake/timings`.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::Response;
use serde::Serialize;
use serde_json::Value;

use super::{Piece, RecordedRequest, Reply, WireApi, render};

#[derive(Default)]
struct Shared {
    queue: VecDeque<Reply>,
    fallback: Option<Reply>,
    requests: Vec<RecordedRequest>,
    /// Model-listing requests (discovery, `ferrite doctor`), kept apart so `requests()` stays
    /// the model calls.
    listing_requests: Vec<RecordedRequest>,
    /// Session-title requests (`TITLE_MARKER` in the body), kept apart and answered from
    /// `titles` (else a fixed title), so that the scripts queued for turns stay theirs.
    title_requests: Vec<RecordedRequest>,
    titles: VecDeque<Reply>,
    listing: Option<Listing>,
    /// Listed models that take images: Ollama's `vision` capability in `/api/show`, input
    /// modalities in a `/v1/models` listing.
    vision: Vec<String>,
    timings: Vec<Timing>,
    /// Replace [`STAMP_MARKER`] in every streamed chunk with the time it is sent.
    stamp: bool,
}

/// When a model call reached the server and when its answer left, in nanoseconds since the
/// Unix epoch (the wall clock, so a benchmark on the same machine can compare them with its own
/// clock).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Timing {
    pub path: String,
    /// The request's headers were parsed (its first bytes had arrived).
    pub request_start_ns: u64,
    /// Its whole body had arrived.
    pub request_end_ns: u64,
    /// The body's size.
    pub request_bytes: usize,
    /// The last byte of the answer was handed to the connection (`None` while it streams).
    pub reply_end_ns: Option<u64>,
}

/// In a streamed chunk of a server with stamping on, this text becomes `ts=` and the send time
/// (nanoseconds since the Unix epoch, 19 digits: the same width, so JSON framing is unchanged).
pub const STAMP_MARKER: &str = "ts=0000000000000000000";

/// What tells a session-title request apart: the start of its system prompt
/// (`ferrite_core::runtime` titles).
pub const TITLE_MARKER: &str = "You write the title of a coding session.";

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The models the server says it has (model discovery).
#[derive(Debug, Clone, PartialEq)]
enum Listing {
    /// `GET /v1/models` only, vLLM-style (`max_model_len` when a window is given).
    OpenAi(Vec<(String, Option<u64>)>),
    /// Ollama: `GET /api/tags`, `POST /api/show` (context length), and `GET /v1/models`.
    Ollama(Vec<(String, u64)>),
    /// Every listing (`GET …/models`) answered with this status and body (a key rejected).
    Refused(u16, String),
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
            // History-sized request bodies (10,000 entries is several MB) must not get a 413.
            .layer(DefaultBodyLimit::disable())
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

    /// Answers every model listing (`GET …/models`) with `status` and `body`: a provider that
    /// rejects the key (`ferrite doctor`, `ferrite login`).
    pub fn refuse_listings(&self, status: u16, body: &str) {
        lock(&self.state).listing = Some(Listing::Refused(status, body.to_owned()));
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

    /// The listed models that say they take images (`set_*_models` lists them).
    pub fn set_vision_models(&self, ids: &[&str]) {
        lock(&self.state).vision = ids.iter().map(|id| (*id).to_owned()).collect();
    }

    /// Queues the answer to a later session-title request.
    pub fn push_title(&self, reply: impl Into<Reply>) {
        lock(&self.state).titles.push_back(reply.into());
    }

    /// The session-title requests received so far.
    pub fn title_requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state).title_requests.clone()
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

    /// Replace [`STAMP_MARKER`] in streamed chunks with their send time (latency benchmarks).
    pub fn set_stamp(&self, on: bool) {
        lock(&self.state).stamp = on;
    }

    /// The timings of every model call so far, in arrival order (also served as JSON on
    /// `GET /_fake/timings`).
    pub fn timings(&self) -> Vec<Timing> {
        lock(&self.state).timings.clone()
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
    body: Body,
) -> Response {
    let request_start_ns = now_ns();
    let path = uri.path().to_owned();
    if path == "/_fake/timings" {
        let timings = lock(&state).timings.clone();
        return http_reply(
            200,
            &[],
            &serde_json::to_string(&timings).unwrap_or_default(),
        );
    }
    let Ok(body) = axum::body::to_bytes(body, usize::MAX).await else {
        return http_reply(
            400,
            &[],
            r#"{"error":{"message":"fake provider: body cut"}}"#,
        );
    };
    if path == "/_fake/push" && method == Method::POST {
        return push_script(&state, &body);
    }
    let request_end_ns = now_ns();
    let api = WireApi::from_path(&path);
    // Parsed once: history-sized bodies are megabytes.
    let parsed = serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null);
    let (reply, sent) = {
        let mut shared = lock(&state);
        let listing = listing_answer(
            shared.listing.as_ref(),
            &shared.vision,
            &method,
            &path,
            &parsed,
        );
        // Title requests are kept and answered apart (`TITLE_MARKER`).
        let is_title = String::from_utf8_lossy(&body).contains(TITLE_MARKER);
        shared.record(
            recorded_request(&method, &path, &headers, parsed, api),
            is_title,
        );
        if let Some(answer) = listing {
            return answer;
        }
        // Only a model call takes a queued reply: a listing or a stray path must not eat one.
        if api.is_some() {
            let timing = Timing {
                path: path.clone(),
                request_start_ns,
                request_end_ns,
                request_bytes: body.len(),
                reply_end_ns: None,
            };
            let (reply, sent) = shared.take_reply(&state, timing, is_title.then_some(body.len()));
            (reply, Some(sent))
        } else {
            (None, None)
        }
    };
    let (Some(api), Some(sent)) = (api, sent) else {
        return http_reply(
            404,
            &[],
            &format!(
                r#"{{"error":{{"message":"fake provider: no endpoint {path}","type":"not_found_error"}}}}"#
            ),
        );
    };
    send_reply(api, reply, sent)
}

/// A benchmark queues the answers of the calls to come (a parent's, then its subagent's).
fn push_script(state: &SharedState, body: &[u8]) -> Response {
    match serde_json::from_slice::<super::Script>(body) {
        Ok(script) => {
            lock(state).queue.push_back(script.into());
            http_reply(200, &[], "{}")
        }
        Err(e) => http_reply(
            400,
            &[],
            &serde_json::json!({"error": e.to_string()}).to_string(),
        ),
    }
}

fn recorded_request(
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    body: Value,
    api: Option<WireApi>,
) -> RecordedRequest {
    RecordedRequest {
        method: method.to_string(),
        path: path.to_owned(),
        headers: headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body,
        api,
    }
}

impl Shared {
    /// Logs a request: a model listing and a title request apart from the model calls.
    fn record(&mut self, recorded: RecordedRequest, is_title: bool) {
        let is_listing = matches!(
            (recorded.method.as_str(), recorded.path.as_str()),
            ("GET", "/api/tags") | ("POST", "/api/show")
        ) || (recorded.method == "GET" && recorded.path.ends_with("/models"));
        if is_listing {
            self.listing_requests.push(recorded);
        } else if is_title {
            self.title_requests.push(recorded);
        } else {
            self.requests.push(recorded);
        }
    }

    /// The next queued reply (or the fallback) for a model call, with its timing recorded; a
    /// title request (`title_bytes`: its body's size) takes the next title reply, or a default
    /// title. Taken under the same lock as the push: requests arrive concurrently.
    fn take_reply(
        &mut self,
        state: &SharedState,
        timing: Timing,
        title_bytes: Option<usize>,
    ) -> (Option<Reply>, Sent) {
        self.timings.push(timing);
        let sent = Sent {
            state: Arc::clone(state),
            index: self.timings.len() - 1,
            stamp: self.stamp,
        };
        let reply = match title_bytes {
            // About the real count: a token per 4 bytes of the body.
            Some(bytes) => Some(self.titles.pop_front().unwrap_or_else(|| {
                super::Script::new()
                    .text("Fake session title")
                    .usage((bytes / 4) as u64, 5, 0)
                    .into()
            })),
            None => self.queue.pop_front().or_else(|| self.fallback.clone()),
        };
        (reply, sent)
    }
}

fn send_reply(api: WireApi, reply: Option<Reply>, sent: Sent) -> Response {
    match reply {
        None => sent.now(http_reply(
            500,
            &[],
            r#"{"error":{"message":"fake provider: no reply queued","type":"api_error"}}"#,
        )),
        Some(Reply::Http {
            status,
            headers,
            body,
        }) => {
            let headers: Vec<(&str, &str)> = headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            sent.now(http_reply(status, &headers, &body))
        }
        Some(Reply::Raw {
            status,
            content_type,
            pieces,
        }) => stream_reply(status, &content_type, pieces, sent),
        Some(Reply::Script(script)) => stream_reply(
            200,
            "text/event-stream; charset=utf-8",
            render::render(api, &script),
            sent,
        ),
    }
}

/// Records when the answer to one model call was sent, in its [`Timing`].
struct Sent {
    state: SharedState,
    index: usize,
    stamp: bool,
}

impl Sent {
    fn now(&self, response: Response) -> Response {
        self.done();
        response
    }

    fn done(&self) {
        if let Some(t) = lock(&self.state).timings.get_mut(self.index) {
            t.reply_end_ns = Some(now_ns());
        }
    }

    /// The chunk as it goes out: stamped with the send time when stamping is on.
    fn chunk(&self, mut data: Vec<u8>) -> Vec<u8> {
        if self.stamp {
            stamp(&mut data, now_ns());
        }
        data
    }
}

fn stamp(data: &mut [u8], ns: u64) {
    let marker = STAMP_MARKER.as_bytes();
    let digits = format!("ts={ns:019}");
    let mut at = 0;
    while let Some(found) = data[at..].windows(marker.len()).position(|w| w == marker) {
        let start = at + found;
        data[start..start + marker.len()].copy_from_slice(digits.as_bytes());
        at = start + marker.len();
    }
}

/// The answer to a model-listing request, when the server has a listing and this is one.
fn listing_answer(
    listing: Option<&Listing>,
    vision: &[String],
    method: &Method,
    path: &str,
    body: &Value,
) -> Option<Response> {
    let listing = listing?;
    let json = |v: Value| Some(http_reply(200, &[], &v.to_string()));
    let sees = |id: &str| vision.iter().any(|v| v == id);
    match (method.as_str(), path, listing) {
        ("GET", p, Listing::Refused(status, body)) if p.ends_with("/models") => {
            Some(http_reply(*status, &[], body))
        }
        ("GET", "/v1/models", Listing::OpenAi(models)) => json(serde_json::json!({
            "object": "list",
            "data": models.iter().map(|(id, w)| {
                let mut m = serde_json::json!({"id": id, "object": "model", "owned_by": "fake"});
                if let Some(w) = w {
                    m["max_model_len"] = (*w).into();
                }
                if !vision.is_empty() {
                    let input = if sees(id) { vec!["text", "image"] } else { vec!["text"] };
                    m["architecture"] = serde_json::json!({"input_modalities": input});
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
            let capabilities = if sees(wanted) {
                vec!["completion", "vision"]
            } else {
                vec!["completion"]
            };
            json(serde_json::json!({
                "model_info": {"general.architecture": "llama", "llama.context_length": window},
                "capabilities": capabilities,
            }))
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

fn stream_reply(status: u16, content_type: &str, pieces: Vec<Piece>, sent: Sent) -> Response {
    let stream = futures::stream::unfold(
        (pieces.into_iter(), sent),
        |(mut pieces, sent)| async move {
            loop {
                match pieces.next() {
                    Some(Piece::Data(data)) => {
                        let chunk = Bytes::from(sent.chunk(data));
                        return Some((Ok::<_, Infallible>(chunk), (pieces, sent)));
                    }
                    Some(Piece::Sleep(duration)) => tokio::time::sleep(duration).await,
                    None => {
                        sent.done();
                        return None;
                    }
                }
            }
        },
    );
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
