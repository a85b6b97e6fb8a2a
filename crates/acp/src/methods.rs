//! The ACP methods, one file per group, each handler `async fn(&Server, Req) -> Result<Resp,
//! Fail>` (see `crate::reply`). Which method runs which handler is in `crate::dispatch`.

pub(crate) mod initialize;
pub(crate) mod prompt;
pub(crate) mod rewind;
pub(crate) mod sessions;
pub(crate) mod settings;

use serde_json::{Map, Value};

/// `Some(object)` for `_meta`.
fn meta(v: Value) -> Option<Map<String, Value>> {
    match v {
        Value::Object(m) => Some(m),
        _ => None,
    }
}
