//! A [`ModelRequest`] as a Chat Completions body, borrowed from the request and serialized
//! straight to bytes (see `anthropic/request.rs` for why there is no `Value` tree).

use std::borrow::Cow;

use ferrite_core::model::{AssistantPart, Message, ModelRequest, UserPart};
use serde::Serialize;
use serde_json::Value;

use super::{FIELD_REASONING_CONTENT, PROVIDER};
use crate::body::Draft;

/// The body but its `messages`, which the [`Draft`] writes after it.
#[derive(Serialize)]
struct Head<'a> {
    model: &'a str,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
    /// `max_tokens` rather than the newer `max_completion_tokens`: every compatible server
    /// (llama.cpp, vLLM, Ollama, LM Studio) understands it. With no known limit nothing is
    /// sent: the server's own limit applies (a guess above it is answered with 400 by several
    /// compatible servers).
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct Tool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
}

#[derive(Serialize)]
struct Function<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
    strict: bool,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
enum ChatMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: UserContent<'a>,
    },
    Assistant {
        /// `null` when the message is only tool calls.
        content: Option<Cow<'a, str>>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<Call<'a>>,
        #[serde(skip_serializing_if = "is_empty")]
        reasoning_content: Cow<'a, str>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

#[derive(Serialize)]
#[serde(untagged)]
enum UserContent<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<UserContentPart<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum UserContentPart<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Serialize)]
struct ImageUrl {
    url: String,
}

#[derive(Serialize)]
struct Call<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: CallFunction<'a>,
}

#[derive(Serialize)]
struct CallFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

/// Writes the request's body into `draft`.
pub(crate) fn write(req: &ModelRequest, draft: &mut Draft) -> serde_json::Result<()> {
    let tools: Vec<Tool> = req
        .tools
        .iter()
        .map(|t| Tool {
            kind: "function",
            function: Function {
                name: &t.name,
                description: &t.description,
                parameters: &t.input_schema,
                strict: false,
            },
        })
        .collect();
    // Hosted web search does not exist in this API; the turn loop refuses it before we get here.
    let reasoning_effort = crate::body::effort_param(req.effort);
    draft.head(
        &Head {
            model: &req.model,
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
            tool_choice: (!tools.is_empty()).then_some("auto"),
            tools,
            reasoning_effort,
            max_tokens: req.max_output_tokens,
        },
        "messages",
    )?;
    if !req.system.is_empty() {
        draft.lead(&ChatMessage::System {
            content: &req.system,
        })?;
    }
    let from = draft.history();
    for (at, message) in req.messages.iter().enumerate().skip(from) {
        let messages = at..at + 1;
        match message {
            Message::User { content } => draft.element(&user_message(content), messages)?,
            Message::Assistant { content } => {
                if let Some(message) = assistant_message(content) {
                    draft.element(&message, messages)?;
                }
            }
            Message::ToolResults { results } => {
                for r in results.iter() {
                    let message = ChatMessage::Tool {
                        tool_call_id: &r.call_id,
                        content: &r.content,
                    };
                    draft.element(&message, messages.clone())?;
                }
            }
        }
    }
    Ok(())
}

fn user_message(content: &[UserPart]) -> ChatMessage<'_> {
    let has_image = content.iter().any(|p| matches!(p, UserPart::Image { .. }));
    if !has_image {
        // Plain string content: the one form every compatible server accepts.
        let texts: Vec<&str> = content
            .iter()
            .filter_map(|p| match p {
                UserPart::Text { text } => Some(&**text),
                UserPart::Image { .. } => None,
            })
            .collect();
        let text = match texts.as_slice() {
            [one] => Cow::Borrowed(*one),
            _ => Cow::Owned(texts.join("\n\n")),
        };
        return ChatMessage::User {
            content: UserContent::Text(text),
        };
    }
    let parts = content
        .iter()
        .map(|p| match p {
            UserPart::Text { text } => UserContentPart::Text { text },
            UserPart::Image { mime_type, data } => UserContentPart::ImageUrl {
                image_url: ImageUrl {
                    url: format!("data:{mime_type};base64,{data}"),
                },
            },
        })
        .collect();
    ChatMessage::User {
        content: UserContent::Parts(parts),
    }
}

// serde hands `skip_serializing_if` a `&Cow`, so the argument cannot be `&str`.
#[allow(clippy::ptr_arg)]
fn is_empty(s: &Cow<'_, str>) -> bool {
    s.is_empty()
}

/// Appends `next` to `acc`, borrowing while there is only one piece.
fn concat<'a>(acc: &mut Cow<'a, str>, next: &'a str) {
    if acc.is_empty() {
        *acc = Cow::Borrowed(next);
    } else if !next.is_empty() {
        acc.to_mut().push_str(next);
    }
}

fn assistant_message(content: &[AssistantPart]) -> Option<ChatMessage<'_>> {
    let mut text = Cow::Borrowed("");
    let mut reasoning = Cow::Borrowed("");
    let mut tool_calls = Vec::new();
    for part in content {
        match part {
            AssistantPart::Text { text: t } => concat(&mut text, t),
            AssistantPart::Reasoning {
                text: t,
                provider_data,
            } => {
                let echo = provider_data.as_ref().is_some_and(|d| {
                    d.get("provider").and_then(Value::as_str) == Some(PROVIDER)
                        && d.get("field").and_then(Value::as_str) == Some(FIELD_REASONING_CONTENT)
                });
                if echo {
                    concat(&mut reasoning, t);
                }
            }
            AssistantPart::ToolCall {
                id,
                name,
                arguments,
            } => tool_calls.push(Call {
                id,
                kind: "function",
                function: CallFunction { name, arguments },
            }),
            // Hosted tool blocks of other APIs mean nothing here.
            AssistantPart::Opaque { .. } => {}
        }
    }
    if text.is_empty() && tool_calls.is_empty() && reasoning.is_empty() {
        return None;
    }
    Some(ChatMessage::Assistant {
        content: (!text.is_empty()).then_some(text),
        tool_calls,
        reasoning_content: reasoning,
    })
}
