//! OpenAI Chat Completions: `POST {base}/chat/completions` with `stream: true`. The API most
//! local and third-party servers speak, each with its quirks (see the reference notes): tool
//! call fragments with or without `index`, usage in varying places, reasoning in varying fields.

mod decoder;
mod request;

pub(crate) use decoder::Decoder;
pub(crate) use request::write;

/// The `provider` of reasoning `provider_data` made here.
pub(crate) const PROVIDER: &str = "openai-chat";
/// Reasoning that arrived in `delta.reasoning_content`; DeepSeek and Kimi require it echoed
/// back on assistant messages, so it is the one field we send back.
const FIELD_REASONING_CONTENT: &str = "reasoning_content";
