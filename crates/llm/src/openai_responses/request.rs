//! A [`ModelRequest`] as a Responses API body, borrowed from the request and serialized
//! straight to bytes (see `anthropic/request.rs` for why there is no `Value` tree).

use ferrite_core::model::{AssistantPart, Message, ModelRequest, UserPart};
use serde::Serialize;
use serde_json::Value;

use super::PROVIDER;
use crate::body::Draft;

/// The body but its `input`, which the [`Draft`] writes after it.
#[derive(Serialize)]
struct Head<'a> {
    model: &'a str,
    stream: bool,
    // Nothing is stored server-side; reasoning survives between turns only as the encrypted
    // items we send back, hence the `include`.
    store: bool,
    /// Non-reasoning models refuse this include.
    #[serde(skip_serializing_if = "Option::is_none")]
    include: Option<[&'static str; 1]>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<Reasoning>,
    /// With no known limit nothing is sent: the server's own limit applies (a guess above it
    /// is answered with 400 by several compatible servers).
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    /// The session id: requests of one session are routed to the same prompt cache (what
    /// codex sends too).
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Tool<'a> {
    Function {
        name: &'a str,
        description: &'a str,
        parameters: &'a Value,
        strict: bool,
    },
    WebSearch,
}

#[derive(Serialize)]
struct Reasoning {
    effort: &'static str,
    summary: &'static str,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Item<'a> {
    Message {
        role: &'static str,
        content: Content<'a>,
    },
    Typed(Typed<'a>),
    /// An item this API produced, sent back as it came (minus its id).
    Verbatim(Value),
}

#[derive(Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(&'a str),
    Parts(Vec<Part<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    InputText { text: &'a str },
    InputImage { image_url: String },
    OutputText { text: &'a str },
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Typed<'a> {
    Message {
        role: &'static str,
        content: [Part<'a>; 1],
    },
    Reasoning {
        summary: &'a Value,
        encrypted_content: &'a str,
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: &'a str,
    },
}

/// Writes the request's body into `draft`.
pub(crate) fn write(req: &ModelRequest, draft: &mut Draft) -> serde_json::Result<()> {
    let mut tools: Vec<Tool> = req
        .tools
        .iter()
        .map(|t| Tool::Function {
            name: &t.name,
            description: &t.description,
            parameters: &t.input_schema,
            strict: false,
        })
        .collect();
    if req.web_search {
        tools.push(Tool::WebSearch);
    }
    let effort = crate::body::effort_param(req.effort);
    draft.head(
        &Head {
            model: &req.model,
            stream: true,
            store: false,
            include: req.reasoning.then_some(["reasoning.encrypted_content"]),
            tool_choice: (!tools.is_empty()).then_some("auto"),
            tools,
            reasoning: effort.map(|effort| Reasoning {
                effort,
                summary: "auto",
            }),
            max_output_tokens: req.max_output_tokens,
            prompt_cache_key: req.cache_key.as_deref(),
        },
        "input",
    )?;
    if !req.system.is_empty() {
        draft.lead(&Item::Message {
            role: "developer",
            content: Content::Text(&req.system),
        })?;
    }
    let from = draft.history();
    for (at, message) in req.messages.iter().enumerate().skip(from) {
        let messages = at..at + 1;
        match message {
            Message::User { content } => {
                let parts = content
                    .iter()
                    .map(|part| match part {
                        UserPart::Text { text } => Part::InputText { text },
                        UserPart::Image { mime_type, data } => Part::InputImage {
                            image_url: format!("data:{mime_type};base64,{data}"),
                        },
                    })
                    .collect();
                let item = Item::Message {
                    role: "user",
                    content: Content::Parts(parts),
                };
                draft.element(&item, messages)?;
            }
            Message::Assistant { content } => {
                for item in content.iter().filter_map(assistant_item) {
                    draft.element(&item, messages.clone())?;
                }
            }
            Message::ToolResults { results } => {
                for result in results {
                    let item = Item::Typed(Typed::FunctionCallOutput {
                        call_id: &result.call_id,
                        output: &result.content,
                    });
                    draft.element(&item, messages.clone())?;
                }
            }
        }
    }
    Ok(())
}

/// An empty reasoning summary, for items that arrived without one.
static NO_SUMMARY: Value = Value::Array(Vec::new());

fn assistant_item(part: &AssistantPart) -> Option<Item<'_>> {
    match part {
        AssistantPart::Text { text } if text.is_empty() => None,
        AssistantPart::Text { text } => Some(Item::Typed(Typed::Message {
            role: "assistant",
            content: [Part::OutputText { text }],
        })),
        AssistantPart::Reasoning { provider_data, .. } => {
            // Only our own reasoning items can go back, and only with their encrypted content
            // (with `store: false` the server cannot look them up by id).
            let data = provider_data.as_ref()?;
            if data.get("provider").and_then(Value::as_str) != Some(PROVIDER) {
                return None;
            }
            let item = data.get("item")?;
            let encrypted_content = item.get("encrypted_content").and_then(Value::as_str)?;
            Some(Item::Typed(Typed::Reasoning {
                summary: item.get("summary").unwrap_or(&NO_SUMMARY),
                encrypted_content,
            }))
        }
        AssistantPart::ToolCall {
            id,
            name,
            arguments,
        } => Some(Item::Typed(Typed::FunctionCall {
            call_id: id,
            name,
            arguments,
        })),
        AssistantPart::Opaque { provider, data } if provider == PROVIDER => {
            // Item ids refer to stored items, which `store: false` never creates.
            let mut data = data.clone();
            if let Some(obj) = data.as_object_mut() {
                obj.remove("id");
            }
            Some(Item::Verbatim(data))
        }
        AssistantPart::Opaque { .. } => None,
    }
}
