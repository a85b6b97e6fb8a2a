//! JSON-RPC 2.0 framing: classify an incoming line, build outgoing lines.

use serde_json::{Map, Value, json};

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
pub const AUTH_REQUIRED: i64 = -32000;
/// The request was cancelled (LSP's code, which ACP uses for cancelled requests).
pub const REQUEST_CANCELLED: i64 = -32800;

#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    /// An answer to a request ferrite sent to the client.
    Response {
        id: Value,
        outcome: Result<Value, Value>,
    },
}

/// An error to send back, addressed to `id` (`null` when the request could not be identified).
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub id: Value,
    pub code: i64,
    pub message: String,
}

impl RpcError {
    pub fn to_line(&self) -> String {
        error_line(&self.id, self.code, &self.message)
    }
}

fn valid_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(n) => n.is_i64() || n.is_u64(),
        Value::Null | Value::Bool(_) | Value::Array(_) | Value::Object(_) => false,
    }
}

/// Parses one line. Malformed JSON is -32700 (id null); valid JSON that is not a JSON-RPC
/// message is -32600, addressed to its id when it has a usable one.
pub fn classify(line: &str) -> Result<Message, RpcError> {
    let value: Value = serde_json::from_str(line).map_err(|_| RpcError {
        id: Value::Null,
        code: PARSE_ERROR,
        message: "Parse error: not valid JSON".into(),
    })?;
    let invalid = |id: Value, why: &str| RpcError {
        id,
        code: INVALID_REQUEST,
        message: format!("Invalid request: {why}"),
    };
    let Value::Object(mut obj) = value else {
        return Err(invalid(
            Value::Null,
            "expected a JSON-RPC object (batches are not supported)",
        ));
    };
    let id = obj.remove("id");
    let usable_id = id.clone().filter(valid_id).unwrap_or(Value::Null);
    match obj.get("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => {}
        None => {}
        Some(_) => return Err(invalid(usable_id, "`jsonrpc` must be \"2.0\"")),
    }
    let params = match obj.remove("params") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(p @ (Value::Object(_) | Value::Array(_))) => p,
        Some(_) => return Err(invalid(usable_id, "`params` must be an object or an array")),
    };
    match obj.remove("method") {
        Some(Value::String(method)) => match id {
            None => Ok(Message::Notification { method, params }),
            Some(id) if valid_id(&id) => Ok(Message::Request { id, method, params }),
            Some(_) => Err(invalid(Value::Null, "`id` must be a string or an integer")),
        },
        Some(_) => Err(invalid(usable_id, "`method` must be a string")),
        None => {
            let Some(id) = id.filter(valid_id) else {
                return Err(invalid(Value::Null, "neither a request nor a response"));
            };
            if let Some(result) = obj.remove("result") {
                Ok(Message::Response {
                    id,
                    outcome: Ok(result),
                })
            } else if let Some(error) = obj.remove("error") {
                Ok(Message::Response {
                    id,
                    outcome: Err(error),
                })
            } else {
                Err(invalid(id, "neither a request nor a response"))
            }
        }
    }
}

pub fn result_line(id: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

/// An error answer. Its `data.details` repeats the message: some clients (Toad) show only that.
pub fn error_line(id: &Value, code: i64, message: &str) -> String {
    error_line_with_data(id, code, message, json!({}))
}

/// The longest client string an error message quotes (between backticks) before it is cut.
const MAX_QUOTED: usize = 64;
/// The longest error message sent at all.
const MAX_MESSAGE: usize = 1024;

/// Error messages name what was wrong (`unknown mode \`x\``) but never echo a client's string
/// unbounded: a 4 MiB mode id must not come back as a 4 MiB error. Every backtick-quoted span is
/// cut to [`MAX_QUOTED`] bytes and the whole message to [`MAX_MESSAGE`].
fn bounded_message(message: &str) -> std::borrow::Cow<'_, str> {
    let long_quote = message
        .split('`')
        .skip(1)
        .step_by(2)
        .any(|q| q.len() > MAX_QUOTED);
    if !long_quote && message.len() <= MAX_MESSAGE {
        return std::borrow::Cow::Borrowed(message);
    }
    let mut out = String::new();
    for (i, part) in message.split('`').enumerate() {
        if i > 0 {
            out.push('`');
        }
        if i % 2 == 1 && part.len() > MAX_QUOTED {
            out.push_str(&part[..floor_boundary(part, MAX_QUOTED)]);
            out.push('…');
        } else {
            out.push_str(part);
        }
    }
    if out.len() > MAX_MESSAGE {
        out.truncate(floor_boundary(&out, MAX_MESSAGE));
        out.push('…');
    }
    std::borrow::Cow::Owned(out)
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// An error answer with `data`; an object gets `details` (the message) unless it has one.
pub fn error_line_with_data(id: &Value, code: i64, message: &str, data: Value) -> String {
    let message = bounded_message(message);
    let data = match data {
        Value::Object(mut fields) => {
            fields
                .entry("details")
                .or_insert_with(|| Value::String(message.clone().into_owned()));
            Value::Object(fields)
        }
        other => other,
    };
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message, "data": data}})
        .to_string()
}

pub fn notification_line(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
}

pub fn request_line(id: &Value, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_never_echo_long_client_strings() {
        let big = "m".repeat(4 << 20);
        // The message is bounded, and `data.details` is the same bounded message.
        let message = |line: &str| -> String {
            let v: Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["error"]["data"]["details"], v["error"]["message"]);
            v["error"]["message"].as_str().unwrap().to_owned()
        };
        let line = error_line(&json!(1), -32602, &format!("unknown mode `{big}`"));
        assert!(line.len() < 600, "{}", line.len());
        assert!(message(&line).len() < 100);
        assert!(message(&line).starts_with("unknown mode `mmmm"), "{line}");
        let short = error_line(&json!(1), -32602, "unknown mode `turbo`");
        assert_eq!(message(&short), "unknown mode `turbo`");
        let unquoted = error_line(&json!(1), -32602, &format!("bad: {big}"));
        assert!(message(&unquoted).len() < 1100);
        assert!(unquoted.len() < 2400);
        // Multi-byte text is cut on a character boundary.
        let wide = "é".repeat(100);
        let line = error_line(&json!(1), -32602, &format!("unknown `{wide}`"));
        assert!(line.contains('…'));
    }

    #[test]
    fn classifies() {
        assert_eq!(classify("{").unwrap_err().code, PARSE_ERROR);
        assert_eq!(classify("[]").unwrap_err().code, INVALID_REQUEST);
        assert_eq!(classify("42").unwrap_err().code, INVALID_REQUEST);
        let e = classify(r#"{"id":3,"foo":1}"#).unwrap_err();
        assert_eq!((e.code, e.id), (INVALID_REQUEST, json!(3)));
        assert_eq!(
            classify(r#"{"id":1.5,"method":"x"}"#).unwrap_err().id,
            Value::Null
        );
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","id":"a","method":"m"}"#),
            Ok(Message::Request { ref method, .. }) if method == "m"
        ));
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","method":"n"}"#),
            Ok(Message::Notification { .. })
        ));
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","id":0,"result":{}}"#),
            Ok(Message::Response { .. })
        ));
        assert_eq!(
            classify(r#"{"jsonrpc":"1.0","id":2,"method":"m"}"#)
                .unwrap_err()
                .id,
            json!(2)
        );
    }
}
