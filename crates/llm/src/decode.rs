//! The seam between SSE framing and each API's event grammar, and the pure decoding entry point
//! used by the clients and by tests.

use std::fmt::Display;

use bytes::Bytes;
use ferrite_core::config::ApiKind;
use ferrite_core::model::{ModelError, ModelEvent, ModelStream};
use futures::{Stream, StreamExt};

use crate::error;
use crate::grammar::StreamDecoder;
use crate::sse::SseParser;
use crate::{anthropic, openai_chat, openai_responses};

pub(crate) fn decoder_for(api: ApiKind, label: &str) -> Box<dyn StreamDecoder> {
    match api {
        ApiKind::Anthropic => Box::new(anthropic::Decoder::new(label)),
        ApiKind::OpenAiResponses => Box::new(openai_responses::Decoder::new(label)),
        ApiKind::OpenAiChat => Box::new(openai_chat::Decoder::new(label)),
    }
}

/// Feeds one network chunk through the SSE parser into `decoder`.
pub(crate) fn feed(
    sse: &mut SseParser,
    decoder: &mut dyn StreamDecoder,
    chunk: &[u8],
    out: &mut Vec<ModelEvent>,
) -> Result<(), ModelError> {
    sse.feed(chunk, &mut |name, data| {
        if decoder.is_done() {
            return Ok(());
        }
        decoder.on_event(name, data, out)
    })
}

/// Decodes a complete SSE byte stream of `api` into model events, without HTTP, retries or
/// timeouts. The clients run the same code per chunk; this entry point exists so that the
/// decoding can be tested (and benchmarked) on in-memory bytes split in any way.
pub fn decode_sse<S, E>(api: ApiKind, bytes: S) -> ModelStream
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: Display + Send + 'static,
{
    let label = api.id();
    Box::pin(async_stream::stream! {
        let mut sse = SseParser::new();
        let mut decoder = decoder_for(api, label);
        let mut out = Vec::new();
        let mut bytes = std::pin::pin!(bytes);
        loop {
            let step = match bytes.next().await {
                Some(Ok(chunk)) => feed(&mut sse, decoder.as_mut(), &chunk, &mut out),
                Some(Err(e)) => Err(error::cut(label, &format!("with a transport error: {e}"))),
                None => decoder.on_eof(&mut out),
            };
            for event in out.drain(..) {
                yield Ok(event);
            }
            if let Err(e) = step {
                yield Err(e);
                return;
            }
            if decoder.is_done() {
                return;
            }
        }
    })
}
