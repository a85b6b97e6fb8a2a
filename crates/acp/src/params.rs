//! Reading a request's params: typed, checked, and never echoing client input in errors.

use agent_client_protocol_schema::v1 as acp;
use ferrite_core::events::TurnOptions;
use ferrite_store::ids::SessionId;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::fail::Fail;

/// Deserializes params, answering -32602 with a message that does not quote the input.
pub(crate) fn parse<T: DeserializeOwned>(params: Value) -> Result<T, Fail> {
    serde_json::from_value(params)
        .map_err(|e| Fail::params(format!("Invalid params: {}", scrub(&e.to_string()))))
}

/// A request's params together with its id, for a handler whose answer is written later by
/// someone else (the pump answers `session/prompt`).
pub(crate) struct Call<T> {
    pub id: Value,
    pub params: T,
}

/// Removes quoted values from a serde message so client input is never echoed back.
fn scrub(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut quote: Option<char> = None;
    for c in msg.chars() {
        match quote {
            Some(q) if c == q => {
                out.push('…');
                out.push(c);
                quote = None;
            }
            Some(_) => {}
            None if c == '`' || c == '"' => {
                out.push(c);
                quote = Some(c);
            }
            None => out.push(c),
        }
    }
    out
}

/// A client-supplied session id, checked before anything else touches it.
pub(crate) fn session_id(raw: &acp::SessionId) -> Result<SessionId, Fail> {
    SessionId::parse(&raw.0).map_err(|e| Fail::params(e.to_string()))
}

/// A string in `_meta`.
pub(crate) fn meta_str<'a>(m: Option<&'a Map<String, Value>>, key: &str) -> Option<&'a str> {
    m.and_then(|m| m.get(key)).and_then(Value::as_str)
}

/// Per-turn knobs from `session/prompt` `_meta` (`docs/acp.md`).
pub(crate) fn turn_options(meta: Option<&Map<String, Value>>) -> Result<TurnOptions, Fail> {
    let mut o = TurnOptions::default();
    let Some(meta) = meta else { return Ok(o) };
    if let Some(v) = meta.get("model") {
        o.model = Some(
            v.as_str()
                .ok_or_else(|| Fail::params("`_meta.model` must be a string"))?
                .to_owned(),
        );
    }
    if let Some(v) = meta.get("reasoning_effort") {
        let s = v
            .as_str()
            .ok_or_else(|| Fail::params("`_meta.reasoning_effort` must be a string"))?;
        o.effort = Some(
            s.parse()
                .map_err(|e: ferrite_core::modes::UnknownName| Fail::params(e.to_string()))?,
        );
    }
    if let Some(v) = meta.get("web_search") {
        o.web_search = Some(
            v.as_bool()
                .ok_or_else(|| Fail::params("`_meta.web_search` must be true or false"))?,
        );
    }
    if let Some(v) = meta.get("permission_mode") {
        match v.as_str() {
            Some("ask") => o.force_ask = true,
            _ => return Err(Fail::params("`_meta.permission_mode` accepts only \"ask\"")),
        }
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_hides_quoted_input() {
        assert_eq!(
            scrub("invalid type: string \"../../etc\", expected u64"),
            "invalid type: string \"…\", expected u64"
        );
        assert_eq!(
            scrub("unknown variant `evil`, expected one of `a`"),
            "unknown variant `…`, expected one of `…`"
        );
    }
}
