//! A [`ModelRequest`] as a Messages API body. The body borrows from the request and is
//! serialized straight to bytes: the history is the bulk of every request, and building a
//! `serde_json::Value` tree first would copy all of it once more per request.

use ferrite_core::model::{AssistantPart, Message, ModelRequest, ToolResultPart, UserPart};
use std::ops::Range;

use ferrite_core::modes::Effort;
use serde::Serialize;
use serde_json::Value;

use super::PROVIDER;
use crate::body::Draft;

/// Thinking budgets per effort level. 2048 is above the API minimum of 1024.
fn thinking_budget(effort: Effort) -> Option<u32> {
    match effort {
        Effort::Default => None,
        Effort::Low => Some(2048),
        Effort::Medium => Some(8192),
        Effort::High => Some(24576),
    }
}

/// The smallest thinking budget the API takes.
const MIN_THINKING_BUDGET: u32 = 1024;
/// Room kept for the answer after the thinking when the budget has to shrink to fit.
const ANSWER_ROOM: u32 = 1024;

/// The body but its `messages`, which the [`Draft`] writes after it.
#[derive(Serialize)]
struct Head<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<OutputConfig>,
    max_tokens: u32,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<[Block<'a>; 1]>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Thinking {
    Adaptive,
    Enabled { budget_tokens: u32 },
}

#[derive(Serialize)]
struct OutputConfig {
    effort: &'static str,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Tool<'a> {
    Function {
        name: &'a str,
        description: &'a str,
        input_schema: &'a Value,
    },
    Hosted {
        #[serde(rename = "type")]
        kind: &'static str,
        name: &'static str,
    },
}

#[derive(Serialize)]
struct Turn<'a> {
    role: &'static str,
    content: &'a [Block<'a>],
}

/// `{"type": "ephemeral"}`: cache the prompt up to and including this block.
#[derive(Serialize)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

#[derive(Serialize)]
struct ImageSource<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: &'a str,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Image {
        source: ImageSource<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        is_error: bool,
        /// An empty text block is rejected; an absent `content` is allowed.
        #[serde(skip_serializing_if = "Option::is_none")]
        content: Option<[Text<'a>; 1]>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// A block this API produced, sent back verbatim (it carries its own `type`).
    #[serde(untagged)]
    Verbatim(&'a Value),
}

#[derive(Serialize)]
struct Text<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

/// Writes the request's body into `draft`.
pub(crate) fn write(req: &ModelRequest, draft: &mut Draft) -> serde_json::Result<()> {
    // The Messages API requires `max_tokens`; the turn loop always knows a limit for it (the
    // catalog's, config's, or the documented default).
    let max_tokens = req
        .max_output_tokens
        .unwrap_or(ferrite_core::catalog::DEFAULT_ANTHROPIC_MAX_OUTPUT)
        .max(1);
    let mut thinking = None;
    let mut output_config = None;
    if req.adaptive_thinking {
        // Claude 4.6+: the model decides how much to think; the effort steers it.
        if let Some(effort) = crate::body::effort_param(req.effort) {
            thinking = Some(Thinking::Adaptive);
            output_config = Some(OutputConfig { effort });
        }
    } else if let Some(wanted) = thinking_budget(req.effort) {
        // The budget counts against `max_tokens`, which is the model's hard limit here: it
        // shrinks to leave the answer room, and thinking is left out when too little is left.
        let budget = wanted.min(max_tokens.saturating_sub(ANSWER_ROOM));
        if budget >= MIN_THINKING_BUDGET {
            thinking = Some(Thinking::Enabled {
                budget_tokens: budget,
            });
        }
    }
    // The system prompt is the stable prefix of every request: mark it for prompt caching.
    let system = (!req.system.is_empty()).then(|| {
        [Block::Text {
            text: &req.system,
            cache_control: Some(EPHEMERAL),
        }]
    });
    let mut tools: Vec<Tool> = req
        .tools
        .iter()
        .map(|t| Tool::Function {
            name: &t.name,
            description: &t.description,
            input_schema: &t.input_schema,
        })
        .collect();
    if req.web_search {
        tools.push(Tool::Hosted {
            kind: "web_search_20250305",
            name: "web_search",
        });
    }
    draft.head(
        &Head {
            model: &req.model,
            thinking,
            output_config,
            max_tokens,
            stream: true,
            system,
            tools,
        },
        "messages",
    )?;
    let from = draft.history();
    let (blocks, turns) = blocks(&req.messages, from);
    for (role, range, messages) in turns {
        let turn = Turn {
            role,
            content: &blocks[range],
        };
        draft.element(&turn, messages)?;
    }
    Ok(())
}

/// A turn of the history: its role, its range of blocks and the range of messages they came from.
type TurnAt = (&'static str, Range<usize>, Range<usize>);

/// The blocks of the history from message `from` on, in order, and the turns they make.
/// Tool results and a following user message are both `user` turns; the API wants roles to
/// alternate, so same-role neighbours are one turn. One vector of blocks for the whole history,
/// not one per turn: on a long session those allocations cost more than serializing the text.
fn blocks(history: &[Message], from: usize) -> (Vec<Block<'_>>, Vec<TurnAt>) {
    let rest = history.get(from..).unwrap_or_default();
    let mut blocks: Vec<Block> = Vec::with_capacity(rest.len() * 2);
    let mut turns: Vec<TurnAt> = Vec::new();
    for (at, message) in (from..).zip(rest) {
        let start = blocks.len();
        let role = match message {
            Message::User { content } => {
                blocks.extend(content.iter().map(user_block));
                "user"
            }
            Message::Assistant { content } => {
                blocks.extend(content.iter().filter_map(assistant_block));
                "assistant"
            }
            Message::ToolResults { results } => {
                blocks.extend(results.iter().map(tool_result_block));
                "user"
            }
        };
        if blocks.len() == start {
            continue;
        }
        match turns.last_mut() {
            Some((last, range, messages)) if *last == role => {
                range.end = blocks.len();
                messages.end = at + 1;
            }
            _ => turns.push((role, start..blocks.len(), at..at + 1)),
        }
    }
    // Cache everything up to the newest message: the next request repeats this prefix.
    if let Some(
        Block::Text { cache_control, .. }
        | Block::Image { cache_control, .. }
        | Block::ToolResult { cache_control, .. },
    ) = blocks.last_mut()
    {
        *cache_control = Some(EPHEMERAL);
    }
    (blocks, turns)
}

fn user_block(part: &UserPart) -> Block<'_> {
    match part {
        UserPart::Text { text } => Block::Text {
            text,
            cache_control: None,
        },
        UserPart::Image { mime_type, data } => Block::Image {
            source: ImageSource {
                kind: "base64",
                media_type: mime_type,
                data,
            },
            cache_control: None,
        },
    }
}

fn assistant_block(part: &AssistantPart) -> Option<Block<'_>> {
    match part {
        // The API rejects empty text blocks.
        AssistantPart::Text { text } if text.is_empty() => None,
        AssistantPart::Text { text } => Some(Block::Text {
            text,
            cache_control: None,
        }),
        AssistantPart::Reasoning {
            text,
            provider_data,
        } => {
            // Only thinking this API produced can go back: it must carry its signature.
            // Reasoning from another provider is dropped rather than sent unsigned.
            let data = provider_data.as_ref()?;
            if data.get("provider").and_then(Value::as_str) != Some(PROVIDER) {
                return None;
            }
            if let Some(data) = data.get("redacted_data").and_then(Value::as_str) {
                return Some(Block::RedactedThinking { data });
            }
            let signature = data.get("signature").and_then(Value::as_str)?;
            Some(Block::Thinking {
                thinking: text,
                signature,
            })
        }
        AssistantPart::ToolCall {
            id,
            name,
            arguments,
        } => {
            // `input` must be an object; arguments the model got wrong were already answered
            // with a tool error, so `{}` stands in for them. Parsed as the turn parsed them
            // (`turn::call::arguments`), not sent as written: a lenient check passes text that
            // parse refuses (a lone surrogate, a number out of range) and the API then rejects
            // every later request of the session; a repeated key must read as it ran.
            let input = match serde_json::from_str::<Value>(arguments) {
                Ok(v @ Value::Object(_)) => v,
                _ => Value::Object(serde_json::Map::new()),
            };
            Some(Block::ToolUse { id, name, input })
        }
        AssistantPart::Opaque { provider, data } if provider == PROVIDER => {
            Some(Block::Verbatim(data))
        }
        AssistantPart::Opaque { .. } => None,
    }
}

fn tool_result_block(result: &ToolResultPart) -> Block<'_> {
    Block::ToolResult {
        tool_use_id: &result.call_id,
        is_error: result.is_error,
        content: (!result.content.is_empty()).then(|| {
            [Text {
                kind: "text",
                text: &result.content,
            }]
        }),
        cache_control: None,
    }
}
