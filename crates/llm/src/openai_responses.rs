//! OpenAI Responses API: `POST {base}/responses` with `stream: true`, `store: false`.

mod decoder;
mod request;

pub(crate) use decoder::Decoder;
pub(crate) use request::write;

/// The `provider` of Opaque parts and of reasoning `provider_data` made here.
pub(crate) const PROVIDER: &str = "openai-responses";
