use ferrite_core::config::ApiKind;
use ferrite_core::model::{
    AssistantPart, HostedStatus, Message, ModelErrorKind, ModelEvent, ModelResponse, StopKind,
    ToolResultPart, ToolSpec, Usage, UserPart,
};
use ferrite_core::modes::Effort;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::*;
use crate::fake_provider::{Reply, Script, StopReason};

const API: ApiKind = ApiKind::Anthropic;

#[tokio::test]
async fn streams_text_with_usage_including_cache() {
    let fake = fake().await;
    fake.push(Script::new().text("Hel").text("lo!").usage(100, 7, 40));
    let (events, _) = complete(&client(API, &fake), request("hi")).await;
    assert_eq!(
        events,
        vec![
            ModelEvent::TextDelta("Hel".into()),
            ModelEvent::TextDelta("lo!".into()),
            ModelEvent::Completed(ModelResponse {
                content: vec![AssistantPart::Text {
                    text: "Hello!".into()
                }],
                stop: StopKind::EndTurn,
                usage: Usage {
                    input_tokens: 100,
                    output_tokens: 7,
                    cached_input_tokens: 40,
                    cache_write_tokens: 0,
                    reasoning_tokens: 0
                },
            }),
        ]
    );
    let req = &fake.requests()[0];
    assert_eq!(req.method, "POST");
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.header("x-api-key"), Some(KEY));
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(req.header("authorization"), None);
    assert_eq!(
        req.body,
        json!({
            "model": "test-model",
            "max_tokens": 1000,
            "stream": true,
            "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}
            ]}],
        })
    );
}

#[tokio::test]
async fn thinking_signature_and_tool_calls_round_trip() {
    let fake = fake().await;
    fake.push(
        Script::new()
            .thinking("I should list files.", "sig-abc==")
            .text("Looking.")
            .parallel_tool_calls(&[
                ("toolu_1", "list", r#"{"path":"src"}"#),
                ("toolu_2", "read", r#"{"path":"a.rs","limit":5}"#),
            ]),
    );
    let client = client(API, &fake);
    let (events, response) = complete(&client, request("go")).await;
    assert_eq!(reasoning_deltas(&events), "I should list files.");
    assert_eq!(
        response.content,
        vec![
            AssistantPart::Reasoning {
                text: "I should list files.".into(),
                provider_data: Some(json!({"provider": "anthropic", "signature": "sig-abc=="})),
            },
            AssistantPart::Text {
                text: "Looking.".into()
            },
            AssistantPart::ToolCall {
                id: "toolu_1".into(),
                name: "list".into(),
                arguments: r#"{"path":"src"}"#.into()
            },
            AssistantPart::ToolCall {
                id: "toolu_2".into(),
                name: "read".into(),
                arguments: r#"{"path":"a.rs","limit":5}"#.into()
            },
        ]
    );
    assert_eq!(response.stop, StopKind::ToolUse);

    fake.push(Script::new().text("Done."));
    let mut next = request("go");
    next.messages.push(Message::Assistant {
        content: response.content.clone().into(),
    });
    next.messages.push(Message::ToolResults {
        results: vec![
            ToolResultPart {
                call_id: "toolu_1".into(),
                content: "a.rs".into(),
                is_error: false,
            },
            ToolResultPart {
                call_id: "toolu_2".into(),
                content: "".into(),
                is_error: true,
            },
        ],
    });
    complete(&client, next).await;
    let body = &fake.requests()[1].body;
    assert_eq!(
        body["messages"][1],
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "I should list files.", "signature": "sig-abc=="},
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "toolu_1", "name": "list", "input": {"path": "src"}},
            {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {"path": "a.rs", "limit": 5}},
        ]})
    );
    assert_eq!(
        body["messages"][2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": false,
             "content": [{"type": "text", "text": "a.rs"}]},
            {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true,
             "cache_control": {"type": "ephemeral"}},
        ]})
    );
}

/// A user message with an image, an answer with another provider's reasoning (no signature) and
/// a call whose arguments are not JSON, its failed result, then the user again.
fn history_with_an_image_a_foreign_thought_and_a_bad_call() -> Vec<Message> {
    vec![
        Message::User {
            content: vec![
                UserPart::Text {
                    text: "what is this".into(),
                },
                UserPart::Image {
                    mime_type: "image/png".into(),
                    data: "iVBORw0KGgo=".into(),
                },
            ],
        },
        Message::Assistant {
            content: vec![
                // Reasoning of another provider has no signature and cannot be sent.
                AssistantPart::Reasoning {
                    text: "foreign".into(),
                    provider_data: None,
                },
                AssistantPart::ToolCall {
                    id: "t1".into(),
                    name: "read".into(),
                    arguments: "not json".into(),
                },
            ]
            .into(),
        },
        Message::ToolResults {
            results: vec![ToolResultPart {
                call_id: "t1".into(),
                content: "bad arguments".into(),
                is_error: true,
            }],
        },
        Message::User {
            content: vec![UserPart::Text {
                text: "and now?".into(),
            }],
        },
    ]
}

#[tokio::test]
async fn request_shape_effort_tools_images_and_merged_user_turns() {
    let fake = fake().await;
    fake.push(Script::new().text("ok"));
    let mut req = request("look");
    req.effort = Effort::High;
    req.web_search = true;
    req.max_output_tokens = Some(64_000);
    req.tools = vec![ToolSpec {
        name: "read".into(),
        description: "Read a file".into(),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}).into(),
    }];
    req.messages = history_with_an_image_a_foreign_thought_and_a_bad_call();
    complete(&client(API, &fake), req).await;
    let body = &fake.requests()[0].body;
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 24576})
    );
    assert_eq!(body["max_tokens"], json!(64_000));
    assert_eq!(
        body["tools"],
        json!([
            {"name": "read", "description": "Read a file",
             "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}},
            {"type": "web_search_20250305", "name": "web_search"},
        ])
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [
                {"type": "text", "text": "what is this"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            ]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "read", "input": {}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "is_error": true,
                 "content": [{"type": "text", "text": "bad arguments"}]},
                {"type": "text", "text": "and now?", "cache_control": {"type": "ephemeral"}},
            ]},
        ])
    );
}

#[tokio::test]
async fn lower_efforts_think_with_smaller_budgets_below_max_tokens() {
    let fake = fake().await;
    for (effort, budget) in [(Effort::Low, 2048), (Effort::Medium, 8192)] {
        fake.push(Script::new().text("ok"));
        let mut req = request("x");
        req.effort = effort;
        req.max_output_tokens = Some(32_000);
        complete(&client(API, &fake), req).await;
        let body = fake.requests().last().unwrap().body.clone();
        assert_eq!(body["thinking"]["budget_tokens"], json!(budget));
        assert!(body["max_tokens"].as_u64().unwrap() > budget);
    }
}

#[tokio::test]
async fn web_search_blocks_become_events_and_opaque_parts() {
    let fake = fake().await;
    fake.push(
        Script::new()
            .web_search("srvtoolu_1", "rust sse")
            .text("Found it."),
    );
    let client = client(API, &fake);
    let mut req = request("search");
    req.web_search = true;
    let (events, response) = complete(&client, req.clone()).await;
    assert_eq!(
        events[..2],
        [
            ModelEvent::WebSearch {
                id: "srvtoolu_1".into(),
                query: Some("rust sse".into()),
                status: HostedStatus::InProgress
            },
            ModelEvent::WebSearch {
                id: "srvtoolu_1".into(),
                query: Some("rust sse".into()),
                status: HostedStatus::Completed
            },
        ]
    );
    let AssistantPart::Opaque { provider, data } = &response.content[0] else {
        panic!("{:?}", response.content)
    };
    assert_eq!(provider, "anthropic");
    assert_eq!(
        *data,
        json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "rust sse"}})
    );
    assert!(
        matches!(&response.content[1], AssistantPart::Opaque { data, .. } if data["type"] == "web_search_tool_result")
    );
    assert_eq!(
        response.content[2],
        AssistantPart::Text {
            text: "Found it.".into()
        }
    );

    fake.push(Script::new().text("ok"));
    req.messages.push(Message::Assistant {
        content: response.content.clone().into(),
    });
    req.messages.push(Message::User {
        content: vec![UserPart::Text {
            text: "more".into(),
        }],
    });
    complete(&client, req).await;
    let sent = &fake.requests()[1].body["messages"][1]["content"];
    assert_eq!(sent[0], *data);
    assert_eq!(sent[1]["type"], "web_search_tool_result");
}

#[tokio::test]
async fn tool_input_empty_is_an_object_and_invalid_is_kept_raw() {
    let fake = fake().await;
    fake.push(Reply::raw_sse(concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t0\",\"name\":\"a\",\"input\":{}}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"b\",\"input\":{}}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \\\"x\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"ENCRYPTED\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"input_tokens\":5,\"cache_read_input_tokens\":3,\"cache_creation_input_tokens\":2,\"output_tokens\":9}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    )));
    let (_, response) = complete(&client(API, &fake), request("x")).await;
    assert_eq!(
        response,
        ModelResponse {
            content: vec![
                AssistantPart::ToolCall {
                    id: "t0".into(),
                    name: "a".into(),
                    arguments: "{}".into()
                },
                AssistantPart::ToolCall {
                    id: "t1".into(),
                    name: "b".into(),
                    arguments: "{\"path\": \"x".into()
                },
                AssistantPart::Reasoning {
                    text: "".into(),
                    provider_data: Some(
                        json!({"provider": "anthropic", "redacted_data": "ENCRYPTED"})
                    )
                },
            ],
            stop: StopKind::ToolUse,
            usage: Usage {
                input_tokens: 10,
                output_tokens: 9,
                cached_input_tokens: 3,
                cache_write_tokens: 2,
                reasoning_tokens: 0
            },
        }
    );
}

#[tokio::test]
async fn stop_reasons_map() {
    let fake = fake().await;
    for (reason, kind) in [
        (StopReason::MaxTokens, StopKind::MaxTokens),
        (StopReason::Refusal, StopKind::Refusal),
        (StopReason::EndTurn, StopKind::EndTurn),
    ] {
        fake.push(Script::new().text("x").stop(reason));
        let (_, response) = complete(&client(API, &fake), request("x")).await;
        assert_eq!(response.stop, kind);
    }
}

#[tokio::test]
async fn error_event_after_text_is_returned_not_retried() {
    let fake = fake().await;
    fake.push(
        Script::new()
            .text("partial")
            .mid_stream_error("overloaded_error", "Overloaded"),
    );
    let (events, error) = run(&client(API, &fake), request("x")).await;
    assert_eq!(events, vec![ModelEvent::TextDelta("partial".into())]);
    let error = error.unwrap();
    assert_eq!(
        error.kind,
        ModelErrorKind::Provider {
            code: "overloaded_error".into()
        }
    );
    assert!(error.message.contains("Overloaded"), "{}", error.message);
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn error_event_before_any_output_is_retried() {
    let fake = fake().await;
    fake.push(Script::new().mid_stream_error("overloaded_error", "Overloaded"));
    fake.push(Script::new().text("fine"));
    let (events, response) = complete(&client(API, &fake), request("x")).await;
    assert!(
        matches!(events[0], ModelEvent::Retrying { attempt: 1, .. }),
        "{events:?}"
    );
    assert_eq!(
        response.content,
        vec![AssistantPart::Text {
            text: "fine".into()
        }]
    );
    assert_eq!(fake.requests().len(), 2);
}

#[tokio::test]
async fn cut_stream_is_stream_cut() {
    let fake = fake().await;
    fake.push(Script::new().text("half").cut());
    let (events, error) = run(&client(API, &fake), request("x")).await;
    assert_eq!(events, vec![ModelEvent::TextDelta("half".into())]);
    assert_eq!(error.unwrap().kind, ModelErrorKind::StreamCut);
    assert_eq!(fake.requests().len(), 1, "output was yielded: no retry");
}

#[tokio::test]
async fn thinking_fits_the_models_output_limit_and_adaptive_models_get_adaptive() {
    let fake = fake().await;
    // A small model limit: the budget shrinks to leave the answer room, never past the limit.
    fake.push(Script::new().text("ok"));
    let mut req = request("think");
    req.effort = Effort::High;
    req.max_output_tokens = Some(4000);
    complete(&client(API, &fake), req).await;
    let body = &fake.requests()[0].body;
    assert_eq!(body["max_tokens"], json!(4000));
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2976})
    );
    // Too small for any thinking budget: no thinking rather than a request the API refuses.
    fake.push(Script::new().text("ok"));
    let mut req = request("think");
    req.effort = Effort::Low;
    req.max_output_tokens = Some(1500);
    complete(&client(API, &fake), req).await;
    let body = &fake.requests()[1].body;
    assert_eq!(body["max_tokens"], json!(1500));
    assert!(body.get("thinking").is_none(), "{body}");
    // Claude 4.6+: adaptive thinking steered by the effort.
    fake.push(Script::new().text("ok"));
    let mut req = request("think");
    req.effort = Effort::Medium;
    req.adaptive_thinking = true;
    req.max_output_tokens = Some(128_000);
    complete(&client(API, &fake), req).await;
    let body = &fake.requests()[2].body;
    assert_eq!(body["thinking"], json!({"type": "adaptive"}));
    assert_eq!(body["output_config"], json!({"effort": "medium"}));
    assert_eq!(body["max_tokens"], json!(128_000));
}
