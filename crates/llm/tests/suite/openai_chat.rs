use ferrite_core::config::ApiKind;
use ferrite_core::model::{
    AssistantPart, Message, ModelConnector, ModelErrorKind, ModelEvent, ModelResponse, StopKind,
    ToolResultPart, ToolSpec, Usage, UserPart,
};
use ferrite_core::modes::Effort;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::*;
use crate::fake_provider::{Reply, Script, StopReason};

const API: ApiKind = ApiKind::OpenAiChat;

fn chunk(delta: serde_json::Value) -> String {
    format!(
        "data: {}\n\n",
        json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
    )
}

fn finish(reason: &str) -> String {
    format!(
        "data: {}\n\n",
        json!({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}], "usage": null})
    )
}

const USAGE: &str = "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3,\"prompt_tokens_details\":{\"cached_tokens\":2}}}\n\n";
const DONE: &str = "data: [DONE]\n\n";

#[tokio::test]
async fn streams_text_and_sends_the_documented_request() {
    let fake = fake().await;
    fake.push(Script::new().text("Hel").text("lo").usage(30, 2, 10));
    let (events, _) = complete(&client(API, &fake), request("hi")).await;
    assert_eq!(
        events,
        vec![
            ModelEvent::TextDelta("Hel".into()),
            ModelEvent::TextDelta("lo".into()),
            ModelEvent::Completed(ModelResponse {
                content: vec![AssistantPart::Text {
                    text: "Hello".into()
                }],
                stop: StopKind::EndTurn,
                usage: Usage {
                    input_tokens: 30,
                    output_tokens: 2,
                    cached_input_tokens: 10,
                    cache_write_tokens: 0,
                    reasoning_tokens: 0
                },
            }),
        ]
    );
    let req = &fake.requests()[0];
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(
        req.body,
        json!({
            "model": "test-model",
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "hi"},
            ],
            "max_tokens": 1000,
        })
    );
}

#[tokio::test]
async fn no_key_means_no_authorization_header() {
    let fake = fake().await;
    fake.push(Script::new().text("ok"));
    let client = ferrite_llm::Connector::new(options(0))
        .unwrap()
        .connect(&provider(API, &fake), None)
        .unwrap();
    complete(&client, request("x")).await;
    assert_eq!(fake.requests()[0].header("authorization"), None);
}

/// After `answer` (two calls): their results (5 and 20), then the user again with an image.
fn add_results_and_an_image(
    req: &mut ferrite_core::model::ModelRequest,
    answer: Vec<AssistantPart>,
) {
    req.messages.push(Message::Assistant {
        content: answer.into(),
    });
    req.messages.push(Message::ToolResults {
        results: vec![
            ToolResultPart {
                call_id: "call_1".into(),
                content: "5".into(),
                is_error: false,
            },
            ToolResultPart {
                call_id: "call_2".into(),
                content: "20".into(),
                is_error: false,
            },
        ],
    });
    req.messages.push(Message::User {
        content: vec![
            UserPart::Text {
                text: "and this?".into(),
            },
            UserPart::Image {
                mime_type: "image/png".into(),
                data: "AAAA".into(),
            },
        ],
    });
}

#[tokio::test]
async fn tool_calls_reasoning_content_and_the_follow_up_request() {
    let fake = fake().await;
    fake.push(
        Script::new()
            .thinking("need both", "ignored")
            .parallel_tool_calls(&[
                ("call_1", "add", r#"{"a": 2, "b": 3}"#),
                ("call_2", "multiply", r#"{"a": 4, "b": 5}"#),
            ]),
    );
    let client = client(API, &fake);
    let mut req = request("compute");
    req.effort = Effort::High;
    req.tools = vec![ToolSpec {
        name: "add".into(),
        description: "Add".into(),
        input_schema: json!({"type": "object"}).into(),
    }];
    let (events, response) = complete(&client, req.clone()).await;
    assert_eq!(reasoning_deltas(&events), "need both");
    assert_eq!(
        response.content,
        vec![
            AssistantPart::Reasoning {
                text: "need both".into(),
                provider_data: Some(
                    json!({"provider": "openai-chat", "field": "reasoning_content"})
                ),
            },
            AssistantPart::ToolCall {
                id: "call_1".into(),
                name: "add".into(),
                arguments: r#"{"a": 2, "b": 3}"#.into()
            },
            AssistantPart::ToolCall {
                id: "call_2".into(),
                name: "multiply".into(),
                arguments: r#"{"a": 4, "b": 5}"#.into()
            },
        ]
    );
    assert_eq!(response.stop, StopKind::ToolUse);
    let body = &fake.requests()[0].body;
    assert_eq!(body["reasoning_effort"], "high");
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {"name": "add", "description": "Add", "parameters": {"type": "object"}, "strict": false}}])
    );

    fake.push(Script::new().text("20 and 5"));
    req.effort = Effort::Default;
    add_results_and_an_image(&mut req, response.content);
    complete(&client, req).await;
    let body = &fake.requests()[1].body;
    assert_eq!(body.get("reasoning_effort"), None);
    assert_eq!(
        body["messages"].as_array().unwrap()[2..],
        [
            json!({"role": "assistant", "content": null, "reasoning_content": "need both", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": r#"{"a": 2, "b": 3}"#}},
                {"id": "call_2", "type": "function", "function": {"name": "multiply", "arguments": r#"{"a": 4, "b": 5}"#}},
            ]}),
            json!({"role": "tool", "tool_call_id": "call_1", "content": "5"}),
            json!({"role": "tool", "tool_call_id": "call_2", "content": "20"}),
            json!({"role": "user", "content": [
                {"type": "text", "text": "and this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ]}),
        ]
    );
}

#[tokio::test]
async fn tool_call_fragments_without_index() {
    let fake = fake().await;
    // Old Ollama / Gemini: no `index`; an id opens a call, id-less fragments continue it.
    fake.push(Reply::raw_sse(
        [
            chunk(json!({"tool_calls": [{"id": "a1", "type": "function", "function": {"name": "read", "arguments": "{\"pa"}}]})),
            chunk(json!({"tool_calls": [{"function": {"arguments": "th\":1}"}}]})),
            chunk(json!({"tool_calls": [{"id": "b2", "type": "function", "function": {"name": "list", "arguments": ""}}]})),
            chunk(json!({"tool_calls": [{"id": "b2", "function": {"arguments": "{}"}}]})),
            finish("tool_calls"),
            USAGE.to_owned(),
            DONE.to_owned(),
        ]
        .concat(),
    ));
    let (_, response) = complete(&client(API, &fake), request("x")).await;
    assert_eq!(
        response.content,
        vec![
            AssistantPart::ToolCall {
                id: "a1".into(),
                name: "read".into(),
                arguments: "{\"path\":1}".into()
            },
            AssistantPart::ToolCall {
                id: "b2".into(),
                name: "list".into(),
                arguments: "{}".into()
            },
        ]
    );
}

#[tokio::test]
async fn whole_calls_in_one_chunk_usage_in_finish_chunk_and_no_done() {
    let fake = fake().await;
    // GLM style: each call whole (both at index 0 with distinct ids), usage in the finish
    // chunk, and the stream ends without [DONE].
    fake.push(Reply::raw_sse(
        [
            chunk(json!({"tool_calls": [{"id": "call_x", "index": 0, "type": "function", "function": {"name": "weather", "arguments": "{\"location\":\"Florence\"}"}}]})),
            chunk(json!({"tool_calls": [{"id": "call_y", "index": 0, "type": "function", "function": {"name": "weather", "arguments": "{\"location\":\"Rome\"}"}}]})),
            format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 7, "completion_tokens": 4}})),
        ]
        .concat(),
    ));
    let (_, response) = complete(&client(API, &fake), request("x")).await;
    assert_eq!(
        response,
        ModelResponse {
            content: vec![
                AssistantPart::ToolCall {
                    id: "call_x".into(),
                    name: "weather".into(),
                    arguments: "{\"location\":\"Florence\"}".into()
                },
                AssistantPart::ToolCall {
                    id: "call_y".into(),
                    name: "weather".into(),
                    arguments: "{\"location\":\"Rome\"}".into()
                },
            ],
            // "stop" with calls present: still a tool-use turn.
            stop: StopKind::ToolUse,
            usage: Usage {
                input_tokens: 7,
                output_tokens: 4,
                cached_input_tokens: 0,
                cache_write_tokens: 0,
                reasoning_tokens: 0
            },
        }
    );
}

#[tokio::test]
async fn empty_usage_object_and_reasoning_field_variants() {
    let fake = fake().await;
    fake.push(Reply::raw_sse(
        [
            chunk(json!({"reasoning": "string form. "})),
            chunk(json!({"reasoning": {"text": "object form."}})),
            chunk(json!({"content": "answer", "obfuscation": "xx"})),
            format!("data: {}   \n\n", json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}], "usage": {}})),
            DONE.to_owned(),
        ]
        .concat(),
    ));
    let (events, response) = complete(&client(API, &fake), request("x")).await;
    assert_eq!(reasoning_deltas(&events), "string form. object form.");
    assert_eq!(
        response,
        ModelResponse {
            content: vec![
                AssistantPart::Reasoning {
                    text: "string form. object form.".into(),
                    provider_data: Some(json!({"provider": "openai-chat", "field": "reasoning"})),
                },
                AssistantPart::Text {
                    text: "answer".into()
                },
            ],
            stop: StopKind::MaxTokens,
            usage: Usage::default(),
        }
    );
}

#[tokio::test]
async fn think_tags_split_across_chunks() {
    let fake = fake().await;
    fake.push(Reply::raw_chunks([
        chunk(json!({"content": "<thi"})),
        chunk(json!({"content": "nk>Let me see"})),
        chunk(json!({"content": " more.</th"})),
        chunk(json!({"content": "ink>\n\nThe answer"})),
        chunk(json!({"content": " is <b>42</b>"})),
        finish("stop"),
        USAGE.to_owned(),
        DONE.to_owned(),
    ]));
    let (events, response) = complete(&client(API, &fake), request("x")).await;
    assert_eq!(reasoning_deltas(&events), "Let me see more.");
    assert_eq!(text_deltas(&events), "\n\nThe answer is <b>42</b>");
    assert_eq!(
        response.content,
        vec![
            AssistantPart::Reasoning {
                text: "Let me see more.".into(),
                provider_data: Some(json!({"provider": "openai-chat", "field": "think_tag"})),
            },
            AssistantPart::Text {
                text: "\n\nThe answer is <b>42</b>".into()
            },
        ]
    );
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 9,
            output_tokens: 3,
            cached_input_tokens: 2,
            cache_write_tokens: 0,
            reasoning_tokens: 0
        }
    );
}

#[tokio::test]
async fn error_chunk_mid_stream() {
    let fake = fake().await;
    fake.push(
        Script::new()
            .text("so")
            .mid_stream_error("server_error", "boom"),
    );
    let (events, error) = run(&client(API, &fake), request("x")).await;
    assert_eq!(events, vec![ModelEvent::TextDelta("so".into())]);
    assert_eq!(
        error.unwrap().kind,
        ModelErrorKind::Provider {
            code: "server_error".into()
        }
    );
}

#[tokio::test]
async fn cut_streams_are_detected() {
    let fake = fake().await;
    let no_retry = client_with(API, &fake, options(0));
    // Text then EOF.
    fake.push(Reply::raw_sse(chunk(json!({"content": "half"}))));
    let (_, error) = run(&no_retry, request("x")).await;
    assert_eq!(error.unwrap().kind, ModelErrorKind::StreamCut);
    // A finish reason but neither the usage we asked for nor [DONE].
    fake.push(Reply::raw_sse(
        [chunk(json!({"content": "a"})), finish("stop")].concat(),
    ));
    let (_, error) = run(&no_retry, request("x")).await;
    assert_eq!(error.unwrap().kind, ModelErrorKind::StreamCut);
    // A script cut mid tool call.
    fake.push(Script::new().tool_call("c", "f", "{\"a\":1}").cut());
    let (_, error) = run(&no_retry, request("x")).await;
    assert_eq!(error.unwrap().kind, ModelErrorKind::StreamCut);
}

#[tokio::test]
async fn finish_reasons_map() {
    let fake = fake().await;
    for (reason, kind) in [
        (StopReason::MaxTokens, StopKind::MaxTokens),
        (StopReason::Refusal, StopKind::Refusal),
    ] {
        fake.push(Script::new().text("x").stop(reason));
        let (_, response) = complete(&client(API, &fake), request("x")).await;
        assert_eq!(response.stop, kind);
    }
}

#[tokio::test]
async fn json_instead_of_a_stream_is_reported_with_its_body() {
    let fake = fake().await;
    fake.push(crate::fake_provider::Reply::Raw {
        status: 200,
        content_type: "application/json".into(),
        pieces: vec![crate::fake_provider::Piece::Data(
            br#"{"id":"x","choices":[{"message":{"content":"whole answer"}}]}"#.to_vec(),
        )],
    });
    let (events, error) = run(&client(API, &fake), request("x")).await;
    assert_eq!(events, vec![]);
    let error = error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
    assert!(error.message.contains("whole answer"), "{}", error.message);
    assert_eq!(fake.requests().len(), 1);

    fake.push(crate::fake_provider::Reply::Raw {
        status: 200,
        content_type: "application/json".into(),
        pieces: vec![crate::fake_provider::Piece::Data(
            br#"{"error":{"message":"model not loaded","code":"model_not_found"}}"#.to_vec(),
        )],
    });
    let (_, error) = run(&client(API, &fake), request("x")).await;
    assert_eq!(
        error.unwrap().kind,
        ModelErrorKind::Provider {
            code: "model_not_found".into()
        }
    );
}
