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

const API: ApiKind = ApiKind::OpenAiResponses;

#[tokio::test]
async fn streams_text_and_sends_the_documented_request() {
    let fake = fake().await;
    fake.push(Script::new().text("Hi").text(" there").usage(50, 4, 20));
    let (events, _) = complete(&client(API, &fake), request("hello")).await;
    assert_eq!(
        events,
        vec![
            ModelEvent::TextDelta("Hi".into()),
            ModelEvent::TextDelta(" there".into()),
            ModelEvent::Completed(ModelResponse {
                content: vec![AssistantPart::Text {
                    text: "Hi there".into()
                }],
                stop: StopKind::EndTurn,
                usage: Usage {
                    input_tokens: 50,
                    output_tokens: 4,
                    cached_input_tokens: 20,
                    cache_write_tokens: 0,
                    reasoning_tokens: 0
                },
            }),
        ]
    );
    let req = &fake.requests()[0];
    assert_eq!(req.path, "/v1/responses");
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(
        req.body,
        json!({
            "model": "test-model",
            "stream": true,
            "store": false,
            "include": ["reasoning.encrypted_content"],
            "input": [
                {"role": "developer", "content": "You are terse."},
                {"role": "user", "content": [{"type": "input_text", "text": "hello"}]},
            ],
            "max_output_tokens": 1000,
            // The session's prompt cache, as codex routes it.
            "prompt_cache_key": "session-1",
        })
    );
}

/// The successful results of calls, as `(call id, output)`.
fn results(outputs: &[(&str, &str)]) -> Message {
    let results = outputs
        .iter()
        .map(|(id, out)| ToolResultPart {
            call_id: (*id).into(),
            content: (*out).into(),
            is_error: false,
        })
        .collect();
    Message::ToolResults { results }
}

#[tokio::test]
async fn reasoning_items_and_calls_go_back_with_their_outputs() {
    let fake = fake().await;
    fake.push(
        Script::new()
            .thinking("**Plan** read it", "gAAAA-encrypted")
            .parallel_tool_calls(&[
                ("call_A", "read", r#"{"path":"a"}"#),
                ("call_B", "read", r#"{"path":"b"}"#),
            ]),
    );
    let client = client(API, &fake);
    let mut req = request("read both");
    req.effort = Effort::Medium;
    req.tools = vec![ToolSpec {
        name: "read".into(),
        description: "Read".into(),
        input_schema: json!({"type": "object"}).into(),
    }];
    let (events, response) = complete(&client, req.clone()).await;
    assert_eq!(reasoning_deltas(&events), "**Plan** read it");
    assert_eq!(response.stop, StopKind::ToolUse);
    assert_eq!(response.content.len(), 3);
    let AssistantPart::Reasoning {
        text,
        provider_data,
    } = &response.content[0]
    else {
        panic!("{:?}", response.content)
    };
    assert_eq!(text, "**Plan** read it");
    assert_eq!(
        provider_data.as_ref().unwrap()["provider"],
        "openai-responses"
    );
    assert_eq!(
        response.content[1..],
        [
            AssistantPart::ToolCall {
                id: "call_A".into(),
                name: "read".into(),
                arguments: r#"{"path":"a"}"#.into()
            },
            AssistantPart::ToolCall {
                id: "call_B".into(),
                name: "read".into(),
                arguments: r#"{"path":"b"}"#.into()
            },
        ]
    );
    let body = &fake.requests()[0].body;
    assert_eq!(
        body["reasoning"],
        json!({"effort": "medium", "summary": "auto"})
    );
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "name": "read", "description": "Read", "parameters": {"type": "object"}, "strict": false}])
    );
    assert_eq!(body["tool_choice"], "auto");

    fake.push(Script::new().text("done"));
    req.messages.push(Message::Assistant {
        content: response.content.into(),
    });
    req.messages
        .push(results(&[("call_A", "A"), ("call_B", "B")]));
    complete(&client, req).await;
    let input = &fake.requests()[1].body["input"];
    assert_eq!(
        input.as_array().unwrap()[2..],
        [
            json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Plan** read it"}], "encrypted_content": "gAAAA-encrypted"}),
            json!({"type": "function_call", "call_id": "call_A", "name": "read", "arguments": r#"{"path":"a"}"#}),
            json!({"type": "function_call", "call_id": "call_B", "name": "read", "arguments": r#"{"path":"b"}"#}),
            json!({"type": "function_call_output", "call_id": "call_A", "output": "A"}),
            json!({"type": "function_call_output", "call_id": "call_B", "output": "B"}),
        ]
    );
}

#[tokio::test]
async fn images_and_assistant_text_in_input() {
    let fake = fake().await;
    fake.push(Script::new().text("ok"));
    let mut req = request("x");
    req.system = String::new();
    req.messages = vec![
        Message::User {
            content: vec![
                UserPart::Text { text: "see".into() },
                UserPart::Image {
                    mime_type: "image/jpeg".into(),
                    data: "/9j/4AAQ".into(),
                },
            ],
        },
        Message::Assistant {
            content: vec![AssistantPart::Text {
                text: "a cat".into(),
            }]
            .into(),
        },
    ];
    complete(&client(API, &fake), req).await;
    assert_eq!(
        fake.requests()[0].body["input"],
        json!([
            {"role": "user", "content": [
                {"type": "input_text", "text": "see"},
                {"type": "input_image", "image_url": "data:image/jpeg;base64,/9j/4AAQ"},
            ]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a cat"}]},
        ])
    );
}

#[tokio::test]
async fn web_search_calls_become_events_and_opaque_items() {
    let fake = fake().await;
    fake.push(
        Script::new()
            .web_search("ws_1", "tokio select")
            .text("Answer"),
    );
    let mut req = request("x");
    req.web_search = true;
    let client = client(API, &fake);
    let (events, response) = complete(&client, req.clone()).await;
    assert_eq!(
        events[..2],
        [
            ModelEvent::WebSearch {
                id: "ws_1".into(),
                query: None,
                status: HostedStatus::InProgress
            },
            ModelEvent::WebSearch {
                id: "ws_1".into(),
                query: Some("tokio select".into()),
                status: HostedStatus::Completed
            },
        ]
    );
    assert_eq!(
        fake.requests()[0].body["tools"],
        json!([{"type": "web_search"}])
    );
    assert!(
        matches!(&response.content[0], AssistantPart::Opaque { provider, data } if provider == "openai-responses" && data["type"] == "web_search_call")
    );

    fake.push(Script::new().text("ok"));
    req.messages.push(Message::Assistant {
        content: response.content.into(),
    });
    complete(&client, req).await;
    assert_eq!(
        fake.requests()[1].body["input"][2],
        json!({"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "tokio select"}})
    );
}

#[tokio::test]
async fn incomplete_response_maps_to_stop_kind() {
    let fake = fake().await;
    fake.push(Script::new().text("trunc").stop(StopReason::MaxTokens));
    let (_, response) = complete(&client(API, &fake), request("x")).await;
    assert_eq!(response.stop, StopKind::MaxTokens);
    assert_eq!(
        response.content,
        vec![AssistantPart::Text {
            text: "trunc".into()
        }]
    );
    fake.push(Script::new().stop(StopReason::Refusal));
    let (_, response) = complete(&client(API, &fake), request("x")).await;
    assert_eq!(response.stop, StopKind::Refusal);
}

#[tokio::test]
async fn failed_response_and_error_events() {
    let fake = fake().await;
    fake.push(
        Script::new()
            .text("a")
            .mid_stream_error("server_error", "The server had an error"),
    );
    let (events, error) = run(&client(API, &fake), request("x")).await;
    assert_eq!(events, vec![ModelEvent::TextDelta("a".into())]);
    let error = error.unwrap();
    assert_eq!(
        error.kind,
        ModelErrorKind::Provider {
            code: "server_error".into()
        }
    );
    assert!(error.message.contains("The server had an error"));

    // Both shapes of the `error` event, and a context-length failure.
    for (data, kind) in [
        (
            r#"{"type":"error","sequence_number":2,"error":{"code":"rate_limit_exceeded","message":"slow","param":null}}"#,
            ModelErrorKind::Provider {
                code: "rate_limit_exceeded".into(),
            },
        ),
        (
            r#"{"type":"error","code":"invalid_prompt","message":"bad","param":null}"#,
            ModelErrorKind::Provider {
                code: "invalid_prompt".into(),
            },
        ),
        (
            r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"context_length_exceeded","message":"too long"}}}"#,
            ModelErrorKind::ContextLength,
        ),
    ] {
        let name = if data.contains("response.failed") {
            "response.failed"
        } else {
            "error"
        };
        fake.push(Reply::raw_sse(format!(
            "event: response.created\ndata: {{\"type\":\"response.created\",\"response\":{{}}}}\n\nevent: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"output_index\":0,\"delta\":\"x\"}}\n\nevent: {name}\ndata: {data}\n\n"
        )));
        let (_, error) = run(&client_with(API, &fake, options(0)), request("x")).await;
        assert_eq!(error.unwrap().kind, kind, "{data}");
    }
}

#[tokio::test]
async fn eof_before_completed_is_stream_cut() {
    let fake = fake().await;
    fake.push(Script::new().text("a").tool_call("c", "f", "{}").cut());
    let (_, error) = run(&client(API, &fake), request("x")).await;
    assert_eq!(error.unwrap().kind, ModelErrorKind::StreamCut);
}
