use std::time::{Duration, Instant};

use ferrite_core::config::ApiKind;
use ferrite_core::model::{AssistantPart, ModelConnector, ModelErrorKind, ModelEvent};
use futures::StreamExt;
use pretty_assertions::assert_eq;
use tokio_util::sync::CancellationToken;

use super::common::*;
use crate::fake_provider::{Reply, Script};

const RATE_LIMITED: &str = r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your rate limit"}}"#;

#[tokio::test]
async fn rate_limit_honours_retry_after_ms_then_succeeds() {
    let fake = fake().await;
    fake.push(Reply::error_with_headers(
        429,
        &[("retry-after-ms", "300")],
        RATE_LIMITED,
    ));
    fake.push(Script::new().text("ok"));
    let (events, response) = complete(&client(ApiKind::Anthropic, &fake), request("x")).await;
    let ModelEvent::Retrying {
        attempt,
        delay_ms,
        reason,
        max_attempts,
    } = &events[0]
    else {
        panic!("{events:?}")
    };
    assert_eq!((*attempt, *delay_ms, *max_attempts), (1, 300, 3));
    assert!(
        reason.contains("429") && reason.contains("rate limit"),
        "{reason}"
    );
    assert_eq!(
        response.content,
        vec![AssistantPart::Text { text: "ok".into() }]
    );
    assert_eq!(fake.requests().len(), 2);
}

#[tokio::test]
async fn retry_after_seconds_is_honoured() {
    let fake = fake().await;
    fake.push(Reply::error_with_headers(
        503,
        &[("retry-after", "0.2")],
        "{}",
    ));
    fake.push(Script::new().text("ok"));
    let (events, _) = complete(&client(ApiKind::OpenAiChat, &fake), request("x")).await;
    assert!(
        matches!(
            events[0],
            ModelEvent::Retrying {
                attempt: 1,
                delay_ms: 200,
                ..
            }
        ),
        "{events:?}"
    );
}

#[tokio::test]
async fn overloaded_529_is_retried_with_backoff() {
    let fake = fake().await;
    let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    fake.push(Reply::error(529, body));
    fake.push(Reply::error(529, body));
    fake.push(Script::new().text("finally"));
    let (events, _) = complete(&client(ApiKind::Anthropic, &fake), request("x")).await;
    let retries: Vec<u32> = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::Retrying {
                attempt, delay_ms, ..
            } => {
                assert!(
                    *delay_ms <= 50,
                    "backoff is capped by the options: {delay_ms}"
                );
                Some(*attempt)
            }
            _ => None,
        })
        .collect();
    assert_eq!(retries, vec![1, 2]);
    assert_eq!(fake.requests().len(), 3);
}

#[tokio::test]
async fn retries_are_bounded() {
    let fake = fake().await;
    for _ in 0..3 {
        fake.push(Reply::error(
            500,
            r#"{"error":{"message":"internal","type":"server_error"}}"#,
        ));
    }
    let (events, error) = run(&client(ApiKind::OpenAiResponses, &fake), request("x")).await;
    assert_eq!(events.len(), 2, "two Retrying events: {events:?}");
    let error = error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::Http { status: 500 });
    assert!(error.message.contains("internal"), "{}", error.message);
    assert_eq!(fake.requests().len(), 3);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let fake = fake().await;
    let cases = [
        (
            400,
            r#"{"error":{"message":"bad field","type":"invalid_request_error"}}"#,
            ModelErrorKind::Http { status: 400 },
        ),
        (
            401,
            r#"{"error":{"message":"Incorrect API key provided: sk-test-key-0123456789","type":"invalid_request_error","code":"invalid_api_key"}}"#,
            ModelErrorKind::Auth,
        ),
        (
            403,
            r#"{"type":"error","error":{"type":"permission_error","message":"no"}}"#,
            ModelErrorKind::Auth,
        ),
        (
            404,
            r#"{"error":{"message":"no such model"}}"#,
            ModelErrorKind::ModelNotFound,
        ),
        (
            429,
            r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#,
            ModelErrorKind::Quota,
        ),
        (
            402,
            r#"{"type":"error","error":{"type":"billing_error","message":"pay"}}"#,
            ModelErrorKind::Quota,
        ),
        (
            400,
            r#"{"error":{"message":"This model's maximum context length is 128000 tokens","code":"context_length_exceeded"}}"#,
            ModelErrorKind::ContextLength,
        ),
        (
            413,
            r#"{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}"#,
            ModelErrorKind::ContextLength,
        ),
    ];
    let client = client(ApiKind::OpenAiChat, &fake);
    for (n, (status, body, kind)) in cases.into_iter().enumerate() {
        fake.push(Reply::error_with_headers(
            status,
            &[("retry-after-ms", "10")],
            body,
        ));
        let (events, error) = run(&client, request("x")).await;
        assert_eq!(events, vec![], "{status}");
        let error = error.unwrap();
        assert_eq!(error.kind, kind, "{status}");
        assert!(
            !error.message.contains(KEY),
            "key leaked: {}",
            error.message
        );
        assert_eq!(fake.requests().len(), n + 1, "{status} was retried");
    }
}

#[tokio::test]
async fn x_should_retry_overrides_the_status() {
    let fake = fake().await;
    fake.push(Reply::error_with_headers(
        500,
        &[("x-should-retry", "false")],
        "{}",
    ));
    let (_, error) = run(&client(ApiKind::Anthropic, &fake), request("x")).await;
    assert_eq!(error.unwrap().kind, ModelErrorKind::Http { status: 500 });
    assert_eq!(fake.requests().len(), 1);

    fake.push(Reply::error_with_headers(
        400,
        &[("x-should-retry", "true")],
        "{}",
    ));
    fake.push(Script::new().text("ok"));
    complete(&client(ApiKind::Anthropic, &fake), request("x")).await;
    assert_eq!(fake.requests().len(), 3);
}

#[tokio::test]
async fn cut_before_any_output_is_retried() {
    let fake = fake().await;
    fake.push(Script::new().cut());
    fake.push(Script::new().text("whole"));
    let (events, _) = complete(&client(ApiKind::OpenAiResponses, &fake), request("x")).await;
    assert!(
        matches!(&events[0], ModelEvent::Retrying { reason, .. } if reason.contains("ended")),
        "{events:?}"
    );
}

#[tokio::test]
async fn connection_refused_is_a_retried_connection_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let provider = ferrite_core::catalog::Provider {
        name: "local".into(),
        api: ApiKind::OpenAiChat,
        base_url: format!("http://{addr}/v1"),
        key_source: ferrite_core::catalog::KeySource::NotNeeded,
    };
    let client = ferrite_llm::Connector::new(options(1))
        .unwrap()
        .connect(&provider, None)
        .unwrap();
    let (events, error) = run(&client, request("x")).await;
    assert!(
        matches!(events[..], [ModelEvent::Retrying { attempt: 1, .. }]),
        "{events:?}"
    );
    let error = error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::Connection);
    assert!(
        error.message.contains(&addr.to_string()),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn stall_before_output_is_idle_timeout() {
    let fake = fake().await;
    fake.push(Script::new().stall(Duration::from_secs(600)).text("late"));
    let mut opts = options(0);
    opts.idle_timeout = Duration::from_millis(300);
    let started = Instant::now();
    let (events, error) = run(&client_with(ApiKind::Anthropic, &fake, opts), request("x")).await;
    assert_eq!(events, vec![]);
    assert_eq!(error.unwrap().kind, ModelErrorKind::IdleTimeout);
    assert!(started.elapsed() < HANG_GUARD, "{:?}", started.elapsed());
}

#[tokio::test]
async fn stall_after_output_is_idle_timeout_without_retry() {
    let fake = fake().await;
    fake.push(
        Script::new()
            .text("early")
            .stall(Duration::from_secs(5))
            .text("late"),
    );
    let mut opts = options(2);
    opts.idle_timeout = Duration::from_millis(300);
    let (events, error) = run(&client_with(ApiKind::OpenAiChat, &fake, opts), request("x")).await;
    assert_eq!(events, vec![ModelEvent::TextDelta("early".into())]);
    assert_eq!(error.unwrap().kind, ModelErrorKind::IdleTimeout);
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn cancel_during_stream_returns_promptly() {
    let fake = fake().await;
    fake.push(
        Script::new()
            .text("first")
            .stall(Duration::from_secs(600))
            .text("never"),
    );
    let client = client(ApiKind::OpenAiResponses, &fake);
    let cancel = CancellationToken::new();
    let mut stream = client.stream(request("x"), cancel.clone());
    assert_eq!(
        stream.next().await.unwrap().unwrap(),
        ModelEvent::TextDelta("first".into())
    );
    let started = Instant::now();
    cancel.cancel();
    let error = stream.next().await.unwrap().unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Cancelled);
    assert!(started.elapsed() < HANG_GUARD, "{:?}", started.elapsed());
    assert!(stream.next().await.is_none());
}

#[tokio::test]
async fn cancel_during_backoff_returns_promptly() {
    let fake = fake().await;
    fake.push(Reply::error_with_headers(
        429,
        // The longest wait honoured: a cancel that waited for it fails the hang guard.
        &[("retry-after-ms", "60000")],
        RATE_LIMITED,
    ));
    let client = client(ApiKind::Anthropic, &fake);
    let cancel = CancellationToken::new();
    let mut stream = client.stream(request("x"), cancel.clone());
    let first = stream.next().await.unwrap().unwrap();
    assert!(
        matches!(
            first,
            ModelEvent::Retrying {
                delay_ms: 60000,
                ..
            }
        ),
        "{first:?}"
    );
    let started = Instant::now();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    });
    let error = stream.next().await.unwrap().unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Cancelled);
    assert!(started.elapsed() < HANG_GUARD, "{:?}", started.elapsed());
    canceller.await.unwrap();
}

#[tokio::test]
async fn cancel_before_headers_returns_promptly() {
    // A server that accepts the connection and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let holder = tokio::spawn(async move {
        let (_socket, _) = listener.accept().await.unwrap();
        tokio::time::sleep(Duration::from_secs(600)).await;
    });
    let provider = ferrite_core::catalog::Provider {
        name: "silent".into(),
        api: ApiKind::Anthropic,
        base_url: format!("http://{addr}"),
        key_source: ferrite_core::catalog::KeySource::NotNeeded,
    };
    let client = ferrite_llm::Connector::new(options(2))
        .unwrap()
        .connect(&provider, Some(KEY))
        .unwrap();
    let cancel = CancellationToken::new();
    let stream = client.stream(request("x"), cancel.clone());
    let started = Instant::now();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
    });
    let (events, error) = drain(stream).await;
    assert_eq!(events, vec![]);
    assert_eq!(error.unwrap().kind, ModelErrorKind::Cancelled);
    assert!(started.elapsed() < HANG_GUARD, "{:?}", started.elapsed());
    holder.abort();
}

#[tokio::test]
async fn connector_reads_env_and_rejects_bad_urls() {
    let env = ferrite_core::env::Env::from_pairs([
        ("FERRITE_MAX_RETRIES", "0"),
        ("FERRITE_RETRY_BASE_MS", "1"),
    ]);
    let connector = ferrite_llm::Connector::from_env(&env).unwrap();
    assert_eq!(connector.options().max_retries, 0);
    let provider = ferrite_core::catalog::Provider {
        name: "odd".into(),
        api: ApiKind::OpenAiChat,
        base_url: "localhost:8080/v1".into(),
        key_source: ferrite_core::catalog::KeySource::NotNeeded,
    };
    let error = connector.connect(&provider, None).err().unwrap();
    assert_eq!(error.kind, ModelErrorKind::Configuration);
    let provider = ferrite_core::catalog::Provider {
        base_url: "http://127.0.0.1:1/v1".into(),
        ..provider
    };
    let error = connector
        .connect(&provider, Some("bad\nkey"))
        .err()
        .unwrap();
    assert_eq!(error.kind, ModelErrorKind::Configuration);
}
