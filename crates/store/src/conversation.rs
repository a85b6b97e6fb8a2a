//! The conversation as a model sees it: the messages a request carries. The log's `assistant`
//! entries hold [`AssistantPart`]s and a request is built from the history by sharing them, so
//! the words live with the log; `ferrite_core::model` (the port to model vendors) re-exports
//! them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The conversation as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    User {
        content: Vec<UserPart>,
    },
    /// Shared with the session's history (see `EntryKind::Assistant`): a request is built
    /// from the whole history, and copying every part of every answer for each one cost more
    /// than serializing them.
    Assistant {
        content: std::sync::Arc<[AssistantPart]>,
    },
    /// Results of the tool calls of the preceding assistant message, in call order.
    ToolResults {
        results: Vec<ToolResultPart>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum UserPart {
    /// Shared with the session's history: every request repeats the whole conversation, and
    /// a copy per request of each prompt and image cost more than serializing them.
    Text { text: std::sync::Arc<str> },
    /// Base64 image data.
    Image {
        mime_type: String,
        data: std::sync::Arc<str>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AssistantPart {
    Text {
        text: String,
    },
    /// Reasoning shown to the user as thoughts. `provider_data` is what the provider needs back
    /// verbatim on the next request (Anthropic's signature, OpenAI's encrypted reasoning item).
    Reasoning {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_data: Option<Value>,
    },
    ToolCall {
        id: String,
        name: String,
        /// The arguments as the model produced them (a JSON object in text form).
        arguments: String,
    },
    /// A provider-specific block that must be sent back as-is (hosted tool calls and results).
    Opaque {
        provider: String,
        data: Value,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultPart {
    pub call_id: String,
    /// Shared with the session's history: a long session's requests repeat megabytes of tool
    /// output, which is then not copied for each one.
    pub content: std::sync::Arc<str>,
    #[serde(default)]
    pub is_error: bool,
}
