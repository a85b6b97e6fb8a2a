//! Each API's request body: the seam between [`Draft`] (what the three mappings share) and the
//! API's mapping, as `decode` is for their event grammars. Above both, so `body` needs none of
//! the mappings it serves.

use bytes::Bytes;
use ferrite_core::config::ApiKind;
use ferrite_core::model::ModelRequest;

use crate::body::{Draft, Encoded, Pool};
use crate::{anthropic, openai_chat, openai_responses};

/// `req`'s body for `api`, in a buffer of `pool`: it keeps what it has in common with the
/// previous body there (see [`Pool`]) and remembers the request's messages for the next one.
pub(crate) fn encode(
    pool: &'static Pool,
    api: ApiKind,
    req: ModelRequest,
) -> serde_json::Result<Encoded> {
    let mut draft = Draft::new(pool, api, &req, true);
    write(api, &req, &mut draft)?;
    Ok(draft.finish(Some(req.messages)))
}

/// `req`'s body for `api`, written whole: the bytes the provider client sends for it. Public
/// for the benchmarks (`crates/cli/examples/request_build.rs`).
pub fn request_body(api: ApiKind, req: &ModelRequest) -> serde_json::Result<Bytes> {
    let mut draft = Draft::new(crate::body::pool(), api, req, false);
    write(api, req, &mut draft)?;
    Ok(draft.finish(None).body)
}

pub(crate) fn write(api: ApiKind, req: &ModelRequest, draft: &mut Draft) -> serde_json::Result<()> {
    match api {
        ApiKind::Anthropic => anthropic::write(req, draft),
        ApiKind::OpenAiResponses => openai_responses::write(req, draft),
        ApiKind::OpenAiChat => openai_chat::write(req, draft),
    }
}
