use std::sync::Arc;
use std::time::Duration;

use ferrite_core::catalog::{KeySource, Provider};
use ferrite_core::config::ApiKind;
use ferrite_core::model::{
    Message, ModelClient, ModelConnector, ModelError, ModelEvent, ModelRequest, ModelResponse,
    ModelStream, UserPart,
};
use ferrite_core::modes::Effort;
use ferrite_llm::{Connector, LlmOptions};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::fake_provider::FakeProvider;

pub const KEY: &str = "sk-test-key-0123456789";

/// How long a test waits before it calls a call hung: a guard, not a claim about speed. Where a
/// test checks that something ends early, the way it should not end takes at least this long
/// (a stall of minutes, the longest `retry-after`), so passing the guard is the behaviour itself.
pub const HANG_GUARD: Duration = Duration::from_secs(60);

pub fn options(max_retries: u32) -> LlmOptions {
    LlmOptions {
        max_retries,
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(50),
        idle_timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(2),
    }
}

pub fn provider(api: ApiKind, fake: &FakeProvider) -> Provider {
    let base_url = match api {
        ApiKind::Anthropic => fake.base_url(),
        ApiKind::OpenAiResponses | ApiKind::OpenAiChat => format!("{}/v1", fake.base_url()),
    };
    Provider {
        name: api.id().to_owned(),
        api,
        base_url,
        key_source: KeySource::NotNeeded,
    }
}

pub fn client_with(api: ApiKind, fake: &FakeProvider, options: LlmOptions) -> Arc<dyn ModelClient> {
    Connector::new(options)
        .unwrap()
        .connect(&provider(api, fake), Some(KEY))
        .unwrap()
}

pub fn client(api: ApiKind, fake: &FakeProvider) -> Arc<dyn ModelClient> {
    client_with(api, fake, options(2))
}

pub fn request(text: &str) -> ModelRequest {
    ModelRequest {
        reasoning: true,
        model: "test-model".into(),
        system: "You are terse.".into(),
        messages: vec![Message::User {
            content: vec![UserPart::Text { text: text.into() }],
        }],
        tools: vec![],
        effort: Effort::Default,
        web_search: false,
        adaptive_thinking: false,
        max_output_tokens: Some(1000),
        cache_key: Some("session-1".into()),
    }
}

/// Every event until the end, and the error that ended the stream, if any. Checks that a
/// stream yields nothing after an error or after `Completed`.
pub async fn drain(mut stream: ModelStream) -> (Vec<ModelEvent>, Option<ModelError>) {
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => {
                let done = matches!(event, ModelEvent::Completed(_));
                events.push(event);
                if done {
                    assert!(stream.next().await.is_none(), "events after Completed");
                    return (events, None);
                }
            }
            Err(e) => {
                assert!(stream.next().await.is_none(), "events after an error");
                return (events, Some(e));
            }
        }
    }
    (events, None)
}

pub async fn run(
    client: &Arc<dyn ModelClient>,
    request: ModelRequest,
) -> (Vec<ModelEvent>, Option<ModelError>) {
    drain(client.stream(request, CancellationToken::new())).await
}

/// The response of a stream that must have succeeded.
pub async fn complete(
    client: &Arc<dyn ModelClient>,
    request: ModelRequest,
) -> (Vec<ModelEvent>, ModelResponse) {
    let (events, error) = run(client, request).await;
    assert_eq!(error, None, "events: {events:#?}");
    match events.last() {
        Some(ModelEvent::Completed(r)) => {
            let r = r.clone();
            (events, r)
        }
        other => panic!("no Completed at the end: {other:?}"),
    }
}

pub fn text_deltas(events: &[ModelEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

pub fn reasoning_deltas(events: &[ModelEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ReasoningDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

pub async fn fake() -> FakeProvider {
    FakeProvider::start().await.unwrap()
}
