//! Golden request bodies: every part of a conversation, mapped by each API, compared as JSON
//! with `tests/golden/<api>-<case>.json`. The files are the wire format under review: a change
//! to one is a change to what the provider receives. `FERRITE_BLESS=1 cargo test -p ferrite-llm
//! golden` rewrites them.

use std::path::PathBuf;

use ferrite_core::config::ApiKind;
use ferrite_core::model::{
    AssistantPart, Message, ModelRequest, ToolResultPart, ToolSpec, UserPart,
};
use ferrite_core::modes::Effort;
use serde_json::{Value, json};

fn text(t: &str) -> UserPart {
    UserPart::Text { text: t.into() }
}

fn reasoning(text: &str, data: Value) -> AssistantPart {
    AssistantPart::Reasoning {
        text: text.into(),
        provider_data: Some(data),
    }
}

fn call(id: &str, arguments: &str) -> AssistantPart {
    AssistantPart::ToolCall {
        id: id.into(),
        name: "read".into(),
        arguments: arguments.into(),
    }
}

fn result(id: &str, content: &str, is_error: bool) -> ToolResultPart {
    ToolResultPart {
        call_id: id.into(),
        content: content.into(),
        is_error,
    }
}

/// A conversation with every kind of part, including ones each API must drop or rewrite.
pub(crate) fn rich() -> ModelRequest {
    ModelRequest {
        model: "m-1".into(),
        system: "You are \"Ferrite\".\nBe brief.".into(),
        messages: vec![
            Message::User {
                content: vec![
                    text("look at this <img> & \u{1F600}"),
                    UserPart::Image {
                        mime_type: "image/png".into(),
                        data: "iVBORw0KGgo=".into(),
                    },
                ],
            },
            Message::Assistant {
                content: every_assistant_part().into(),
            },
            Message::ToolResults {
                results: vec![
                    result("call_1", "fn main() {}\n", false),
                    result("call_2", "", true),
                ],
            },
            Message::User {
                content: vec![text("thanks"), text("and now?")],
            },
            Message::Assistant {
                content: vec![].into(),
            },
            Message::Assistant {
                content: vec![call("call_3", "")].into(),
            },
            Message::ToolResults {
                results: vec![result("call_3", "done", false)],
            },
        ],
        tools: two_tools(),
        effort: Effort::Medium,
        reasoning: true,
        adaptive_thinking: false,
        web_search: true,
        max_output_tokens: Some(32_000),
        cache_key: Some("0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b".into()),
    }
}

/// An assistant turn with reasoning from each provider (signed, redacted, encrypted, chat,
/// foreign), an empty and a plain text, each provider's server-side tool use, and two calls
/// (one whose arguments are not JSON).
fn every_assistant_part() -> Vec<AssistantPart> {
    vec![
        reasoning(
            "signed thought",
            json!({"provider": "anthropic", "signature": "sig-1"}),
        ),
        reasoning(
            "",
            json!({"provider": "anthropic", "redacted_data": "opaque-bytes"}),
        ),
        reasoning(
            "encrypted thought",
            json!({"provider": "openai-responses", "item": {
                "type": "reasoning", "id": "rs_1",
                "encrypted_content": "enc-1",
                "summary": [{"type": "summary_text", "text": "s"}]}}),
        ),
        reasoning(
            "chat thought",
            json!({"provider": "openai-chat", "field": "reasoning_content"}),
        ),
        reasoning("unsigned thought", json!({"provider": "elsewhere"})),
        AssistantPart::Text {
            text: String::new(),
        },
        AssistantPart::Text {
            text: "I will read two files.".into(),
        },
        AssistantPart::Opaque {
            provider: "anthropic".into(),
            data: json!({"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "q"}}),
        },
        AssistantPart::Opaque {
            provider: "openai-responses".into(),
            data: json!({"type": "web_search_call", "id": "ws_1", "status": "completed"}),
        },
        call("call_1", r#"{"path":"a.rs"}"#),
        call("call_2", "{not json"),
    ]
}

fn two_tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "read".into(),
            description: "Read a file".into(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}).into(),
        },
        ToolSpec {
            name: "bash".into(),
            description: "Run a command".into(),
            input_schema: json!({"type": "object"}).into(),
        },
    ]
}

/// The least a request can be: no system prompt, no tools, no effort, no known limit.
pub(crate) fn minimal() -> ModelRequest {
    ModelRequest {
        model: "m-2".into(),
        system: String::new(),
        messages: vec![Message::User {
            content: vec![text("hi")],
        }],
        tools: vec![],
        effort: Effort::Default,
        reasoning: false,
        adaptive_thinking: false,
        web_search: false,
        max_output_tokens: None,
        cache_key: None,
    }
}

/// Adaptive thinking (Anthropic), and a limit too small for a thinking budget elsewhere.
fn adaptive() -> ModelRequest {
    ModelRequest {
        adaptive_thinking: true,
        effort: Effort::High,
        max_output_tokens: Some(1500),
        ..minimal()
    }
}

fn body(api: ApiKind, req: &ModelRequest) -> Value {
    serde_json::from_slice(&crate::request_body(api, req).unwrap()).unwrap()
}

fn check(api: ApiKind, case: &str, req: &ModelRequest) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{}-{case}.json", api.id()));
    let got = body(api, req);
    if std::env::var_os("FERRITE_BLESS").is_some() {
        let mut text = serde_json::to_string_pretty(&got).unwrap();
        text.push('\n');
        std::fs::write(&path, text).unwrap();
        return;
    }
    let want: Value = serde_json::from_str(
        &std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (FERRITE_BLESS=1 writes it)", path.display())),
    )
    .unwrap();
    assert_eq!(
        got,
        want,
        "{} differs; the body sent was\n{}",
        path.display(),
        serde_json::to_string_pretty(&got).unwrap()
    );
}

#[test]
fn golden_request_bodies() {
    for api in [
        ApiKind::Anthropic,
        ApiKind::OpenAiResponses,
        ApiKind::OpenAiChat,
    ] {
        check(api, "rich", &rich());
        check(api, "minimal", &minimal());
        check(api, "adaptive", &adaptive());
    }
}

/// A history of one answer: a `read` call with these arguments.
fn one_call(arguments: &str) -> ModelRequest {
    ModelRequest {
        messages: vec![Message::Assistant {
            content: vec![AssistantPart::ToolCall {
                id: "c".into(),
                name: "read".into(),
                arguments: arguments.into(),
            }]
            .into(),
        }],
        ..minimal()
    }
}

/// The Messages API gets a call's arguments as the object the model wrote (whatever its padding
/// and layout), and `{}` for anything that is not an object.
#[test]
fn tool_call_input_is_the_models_object_or_empty() {
    let cases = [
        (
            " {\"path\": \"a.rs\",\n \"n\": [1, 2]}\n",
            json!({"path": "a.rs", "n": [1, 2]}),
        ),
        ("[1, 2]", json!({})),
        ("{\"path\":", json!({})),
        ("", json!({})),
    ];
    for (arguments, input) in cases {
        let req = one_call(arguments);
        let got = body(ApiKind::Anthropic, &req);
        assert_eq!(
            got["messages"][0]["content"][0]["input"], input,
            "{arguments:?}"
        );
    }
}

/// A hostile or broken model can write arguments that a lenient JSON check passes but Ferrite's
/// own parse refuses (a lone surrogate, a number out of range) or reads differently (a repeated
/// key: the last one counts). The call ran with what Ferrite read, or was answered with a tool
/// error; the Messages API must get the same `input`. Sent as written, such a call would make
/// every later request of the session a body the API rejects: the session would be stuck.
#[test]
fn tool_call_input_is_what_ferrite_read_not_what_the_model_wrote() {
    let cases = [
        (r#"{"path": "a.rs", "x": "\ud800"}"#, r#""input":{}"#),
        (r#"{"n": 1e999}"#, r#""input":{}"#),
        (
            r#"{"path": "a.rs", "path": "/etc/shadow"}"#,
            r#""input":{"path":"/etc/shadow"}"#,
        ),
    ];
    for (arguments, sent) in cases {
        let req = one_call(arguments);
        let bytes = crate::request_body(ApiKind::Anthropic, &req).unwrap();
        let text = std::str::from_utf8(&bytes).unwrap();
        assert!(
            serde_json::from_str::<Value>(text).is_ok(),
            "{arguments:?}: the body is not JSON Ferrite can read: {text}"
        );
        assert!(text.contains(sent), "{arguments:?}: sent {text}");
    }
}
