//! One [`ModelClient`] for all three APIs: builds the request, sends it with retries, and runs
//! the response through the API's decoder, watching the idle timeout and the cancel token.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use ferrite_core::config::ApiKind;
use ferrite_core::model::{
    ModelClient, ModelError, ModelErrorKind, ModelEvent, ModelRequest, ModelStream,
};
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue};
use tokio_util::sync::CancellationToken;

use crate::decode::{decoder_for, feed};
use crate::error;
use crate::options::LlmOptions;
use crate::retry;
use crate::sse::SseParser;

/// A request body this large comes with a history worth freeing off the turn's path.
const LARGE_BODY: usize = 256 * 1024;

/// Error bodies are read up to this size; the message keeps far less.
const MAX_ERROR_BODY: usize = 64 * 1024;

pub(crate) struct HttpModelClient {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) http: reqwest::Client,
    pub(crate) api: ApiKind,
    /// The provider's name, for error messages.
    pub(crate) label: String,
    pub(crate) url: String,
    pub(crate) headers: HeaderMap,
    /// Only to scrub it out of error messages.
    pub(crate) api_key: Option<String>,
    pub(crate) options: LlmOptions,
}

/// Why an attempt failed, and whether another attempt may help.
struct Failure {
    error: ModelError,
    retry: bool,
    /// The delay the server asked for.
    after: Option<Duration>,
}

impl Failure {
    fn fatal(error: ModelError) -> Self {
        Self {
            error,
            retry: false,
            after: None,
        }
    }

    /// Retryable by kind, unless something already reached the caller: a retry would then
    /// replay text (or calls) the caller has already acted on.
    fn mid_stream(error: ModelError, yielded: bool) -> Self {
        let retry = !yielded && error::is_retryable_kind(&error.kind);
        Self {
            error,
            retry,
            after: None,
        }
    }
}

fn cancelled() -> ModelError {
    ModelError::new(ModelErrorKind::Cancelled, "the model request was cancelled")
}

impl ModelClient for HttpModelClient {
    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream {
        let inner = Arc::clone(&self.inner);
        let body = encode_body(inner.api, request);
        Box::pin(async_stream::stream! {
            let body = match body {
                Ok(body) => body,
                Err(e) => {
                    yield Err(e);
                    return;
                }
            };
            let mut attempt: u32 = 0;
            loop {
                // One attempt: the labelled block ends with the reason it failed; success
                // returns from the whole stream.
                let failure: Failure = 'attempt: {
                    let response = match inner.open(&body, &cancel).await {
                        Ok(response) => response,
                        Err(failure) => break 'attempt failure,
                    };
                    let mut events = std::pin::pin!(inner.read(response, &cancel));
                    while let Some(event) = events.next().await {
                        match event {
                            Ok(event) => yield Ok(event),
                            Err(failure) => break 'attempt failure,
                        }
                    }
                    return;
                };

                if !failure.retry || attempt >= inner.options.max_retries {
                    yield Err(failure.error);
                    return;
                }
                let delay = failure
                    .after
                    .unwrap_or_else(|| retry::backoff(&inner.options, attempt));
                attempt += 1;
                yield Ok(inner.retrying(attempt, delay, &failure.error));
                if or_cancel(&cancel, tokio::time::sleep(delay)).await.is_err() {
                    yield Err(cancelled());
                    return;
                }
            }
        })
    }
}

/// Serializes the request once; every attempt sends the same bytes. The body keeps the
/// request's messages for the next one (`body::Pool`) and hands back the previous request's.
/// On a long session freeing those (tens of thousands of strings) takes milliseconds: that
/// happens on a blocking thread while the body goes out, not on the way to the provider.
fn encode_body(api: ApiKind, request: ModelRequest) -> Result<Bytes, ModelError> {
    let encoded = crate::encode::encode(crate::body::pool(), api, request).map_err(|e| {
        ModelError::new(
            ModelErrorKind::InvalidResponse,
            format!("could not encode the request: {e}"),
        )
    })?;
    tracing::debug!(
        bytes = encoded.body.len(),
        kept = encoded.kept,
        "request body (bytes of the history kept from the last one)"
    );
    let unused = encoded.unused;
    match tokio::runtime::Handle::try_current() {
        Ok(rt) if encoded.body.len() > LARGE_BODY => {
            rt.spawn_blocking(move || drop(unused));
        }
        _ => drop(unused),
    }
    Ok(encoded.body)
}

/// `future`, unless `cancel` fires first (checked first: a cancelled turn sends nothing more).
async fn or_cancel<F: std::future::Future>(
    cancel: &CancellationToken,
    future: F,
) -> Result<F::Output, Failure> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(Failure::fatal(cancelled())),
        output = future => Ok(output),
    }
}

impl Inner {
    /// Sends the body and checks the answer is an event stream: a failed status or a JSON
    /// body ends the attempt with what the server said.
    async fn open(
        &self,
        body: &Bytes,
        cancel: &CancellationToken,
    ) -> Result<reqwest::Response, Failure> {
        let response = or_cancel(
            cancel,
            tokio::time::timeout(self.options.idle_timeout, self.send(body.clone())),
        )
        .await?
        .map_err(|_| Failure::mid_stream(self.idle_timeout("did not answer within"), false))??;
        if !response.status().is_success() {
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            let text = self.read_error_body(response, cancel).await?;
            let error = error::from_status(status, &text, &self.label, self.api_key.as_deref());
            let retry = retry::should_retry_status(status, &headers, &error.kind);
            return Err(Failure {
                error,
                retry,
                after: retry::retry_after(&headers),
            });
        }
        let is_json = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("json"));
        if is_json {
            // A server that ignored `stream: true`, or a proxy's error page: show what it
            // said rather than a bare "stream ended".
            let text = self.read_error_body(response, cancel).await?;
            return Err(Failure::fatal(error::unexpected_json(
                &text,
                &self.label,
                self.api_key.as_deref(),
            )));
        }
        Ok(response)
    }

    /// The response's events through the API's decoder; the stream ends when the decoder is
    /// done, or with the failure that cut it short.
    fn read<'a>(
        &'a self,
        response: reqwest::Response,
        cancel: &'a CancellationToken,
    ) -> impl futures::Stream<Item = Result<ModelEvent, Failure>> + 'a {
        async_stream::stream! {
            let mut bytes = response.bytes_stream();
            let mut sse = SseParser::new();
            let mut decoder = decoder_for(self.api, &self.label);
            let mut out = Vec::new();
            let mut yielded = false;
            loop {
                let next = match or_cancel(
                    cancel,
                    tokio::time::timeout(self.options.idle_timeout, bytes.next()),
                )
                .await
                {
                    Ok(next) => next,
                    Err(failure) => {
                        yield Err(failure);
                        return;
                    }
                };
                let step = match next {
                    Err(_) => Err(self.idle_timeout("sent nothing for")),
                    Ok(Some(Ok(chunk))) => feed(&mut sse, decoder.as_mut(), &chunk, &mut out),
                    Ok(Some(Err(e))) => Err(error::cut(
                        &self.label,
                        &format!("when the connection broke: {}", describe(&e)),
                    )),
                    Ok(None) => decoder.on_eof(&mut out),
                };
                for event in out.drain(..) {
                    yielded = true;
                    yield Ok(event);
                }
                match step {
                    Err(e) => {
                        yield Err(Failure::mid_stream(e, yielded));
                        return;
                    }
                    Ok(()) if decoder.is_done() => return,
                    Ok(()) => {}
                }
            }
        }
    }

    /// An error status's or a JSON answer's body, for the message (empty if it stalls).
    async fn read_error_body(
        &self,
        response: reqwest::Response,
        cancel: &CancellationToken,
    ) -> Result<String, Failure> {
        let text = or_cancel(
            cancel,
            tokio::time::timeout(self.options.idle_timeout, read_limited(response)),
        )
        .await?;
        Ok(text.unwrap_or_default())
    }

    fn idle_timeout(&self, what: &str) -> ModelError {
        ModelError::new(
            ModelErrorKind::IdleTimeout,
            format!(
                "{} {what} {} s",
                self.label,
                self.options.idle_timeout.as_secs_f64()
            ),
        )
    }

    /// The event that tells the user another attempt follows, and the log line for it.
    fn retrying(&self, attempt: u32, delay: Duration, error: &ModelError) -> ModelEvent {
        tracing::warn!(
            provider = %self.label,
            attempt,
            delay_ms = delay.as_millis() as u64,
            error = %error.message,
            "retrying model request"
        );
        ModelEvent::Retrying {
            attempt,
            delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            reason: error.message.clone(),
            max_attempts: self.options.max_retries.saturating_add(1),
        }
    }

    async fn send(&self, body: Bytes) -> Result<reqwest::Response, Failure> {
        self.http
            .post(&self.url)
            .headers(self.headers.clone())
            .body(body)
            .send()
            .await
            .map_err(|e| {
                if e.is_builder() {
                    Failure::fatal(ModelError::new(
                        ModelErrorKind::Configuration,
                        format!("bad request for {}: {}", self.label, describe(&e)),
                    ))
                } else {
                    Failure {
                        error: ModelError::new(
                            ModelErrorKind::Connection,
                            format!(
                                "could not reach {} at {}: {}",
                                self.label,
                                self.url,
                                describe(&e)
                            ),
                        ),
                        retry: true,
                        after: None,
                    }
                }
            })
    }
}

/// The error with its causes: reqwest's own message ("error sending request") hides the
/// useful part (connection refused, DNS failure, ...) in its source chain.
pub(crate) fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

async fn read_limited(response: reqwest::Response) -> String {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        body.extend_from_slice(&chunk);
        if body.len() >= MAX_ERROR_BODY {
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// The request headers of `api`: auth, version and content negotiation.
pub(crate) fn headers(api: ApiKind, api_key: Option<&str>) -> Result<HeaderMap, ModelError> {
    let mut headers = HeaderMap::new();
    headers.insert(
        reqwest::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(
        reqwest::header::ACCEPT,
        HeaderValue::from_static("text/event-stream"),
    );
    let bad_key = || {
        ModelError::new(
            ModelErrorKind::Configuration,
            "the API key contains characters that cannot be sent in an HTTP header",
        )
    };
    match api {
        ApiKind::Anthropic => {
            headers.insert("anthropic-version", HeaderValue::from_static("2023-06-01"));
            if let Some(key) = api_key {
                let mut value = HeaderValue::from_str(key).map_err(|_| bad_key())?;
                value.set_sensitive(true);
                headers.insert("x-api-key", value);
            }
        }
        ApiKind::OpenAiResponses | ApiKind::OpenAiChat => {
            if let Some(key) = api_key {
                let mut value =
                    HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| bad_key())?;
                value.set_sensitive(true);
                headers.insert(reqwest::header::AUTHORIZATION, value);
            }
        }
    }
    Ok(headers)
}
