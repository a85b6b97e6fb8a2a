//! Anthropic Messages API: `POST {base}/v1/messages` with `stream: true`.

mod decoder;
mod request;

pub(crate) use decoder::Decoder;
pub(crate) use request::write;

/// The `provider` of Opaque parts and of reasoning `provider_data` made here.
pub(crate) const PROVIDER: &str = "anthropic";
