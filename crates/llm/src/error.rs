//! Turning provider failures into [`ModelError`]s the turn loop can branch on.

use ferrite_core::model::{ModelError, ModelErrorKind};
use serde::Deserialize;

/// Bodies and provider messages are cut to this many characters in error messages: enough for
/// the provider's explanation, short enough for a log line or an editor notification.
const MAX_DETAIL_CHARS: usize = 500;

/// The error envelope all three APIs share closely enough:
/// OpenAI `{"error":{"message","type","code"}}`, Anthropic `{"type":"error","error":{"type","message"}}`,
/// and the flat `{"code","message"}` of some Responses error events.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ErrorBody {
    #[serde(default)]
    pub error: Option<ErrorDetail>,
    #[serde(default)]
    pub code: Option<CodeValue>,
    #[serde(default)]
    pub message: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct ErrorDetail {
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub code: Option<CodeValue>,
    #[serde(default)]
    pub message: Option<String>,
}

/// Error codes are strings on OpenAI and Anthropic but numbers on some compatible servers.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum CodeValue {
    Text(String),
    Number(i64),
}

impl CodeValue {
    pub(crate) fn into_string(self) -> String {
        match self {
            CodeValue::Text(s) => s,
            CodeValue::Number(n) => n.to_string(),
        }
    }
}

impl ErrorBody {
    /// `(code, message)`: the most specific code available (`code` before `type`).
    pub fn into_parts(self) -> (Option<String>, Option<String>) {
        match self.error {
            Some(detail) => {
                let code = detail
                    .code
                    .map(CodeValue::into_string)
                    .filter(|c| !c.is_empty())
                    .or(detail.kind.filter(|k| !k.is_empty()));
                (code, detail.message.or(self.message))
            }
            None => (self.code.map(CodeValue::into_string), self.message),
        }
    }
}

/// Classifies a non-success HTTP response. `body` is the raw response body.
pub(crate) fn from_status(
    status: u16,
    body: &str,
    provider: &str,
    api_key: Option<&str>,
) -> ModelError {
    let (code, message) = serde_json::from_str::<ErrorBody>(body)
        .map(ErrorBody::into_parts)
        .unwrap_or((None, None));
    let detail = message.unwrap_or_else(|| body.trim().to_owned());
    let code_text = code.as_deref().unwrap_or("");
    let kind = match status {
        401 | 403 => ModelErrorKind::Auth,
        402 => ModelErrorKind::Quota,
        413 => ModelErrorKind::ContextLength,
        _ if is_quota(code_text) => ModelErrorKind::Quota,
        _ if is_context_length(code_text, &detail) => ModelErrorKind::ContextLength,
        _ if is_model_not_found(status, code_text, &detail) => ModelErrorKind::ModelNotFound,
        _ => ModelErrorKind::Http { status },
    };
    let what = match &code {
        Some(code) => format!("{provider} returned HTTP {status} ({code})"),
        None => format!("{provider} returned HTTP {status}"),
    };
    ModelError::new(kind, compose(&what, &detail, api_key))
}

/// Classifies an error reported inside a stream (an error event or a failed response).
pub(crate) fn from_event(
    code: Option<String>,
    message: Option<String>,
    provider: &str,
    api_key: Option<&str>,
) -> ModelError {
    let code = code
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "provider_error".to_owned());
    let detail = message.unwrap_or_default();
    let kind = if is_quota(&code) {
        ModelErrorKind::Quota
    } else if is_context_length(&code, &detail) {
        ModelErrorKind::ContextLength
    } else if matches!(
        code.as_str(),
        "authentication_error" | "permission_error" | "invalid_api_key"
    ) {
        ModelErrorKind::Auth
    } else {
        ModelErrorKind::Provider { code: code.clone() }
    };
    let what = format!("{provider} stream error ({code})");
    ModelError::new(kind, compose(&what, &detail, api_key))
}

/// Whether a failure that happened before anything reached the caller is worth sending the
/// request again for. HTTP statuses are decided separately (they have headers to consult).
pub(crate) fn is_retryable_kind(kind: &ModelErrorKind) -> bool {
    match kind {
        ModelErrorKind::StreamCut | ModelErrorKind::IdleTimeout | ModelErrorKind::Connection => {
            true
        }
        ModelErrorKind::Provider { code } => matches!(
            code.as_str(),
            "overloaded_error"
                | "api_error"
                | "server_error"
                | "internal_error"
                | "internal_server_error"
                | "timeout_error"
                | "rate_limit_error"
                | "rate_limit_exceeded"
                | "service_unavailable"
                | "server_is_overloaded"
        ),
        ModelErrorKind::Http { .. }
        | ModelErrorKind::Auth
        | ModelErrorKind::Quota
        | ModelErrorKind::ContextLength
        | ModelErrorKind::InvalidResponse
        | ModelErrorKind::Configuration
        | ModelErrorKind::ModelNotFound
        | ModelErrorKind::Cancelled => false,
    }
}

/// The provider does not know the model name: OpenAI's `model_not_found`, Anthropic's 404
/// `not_found_error` ("model: x"), Ollama's "model \"x\" not found, try pulling it first", and
/// the like from compatible servers. A 404 that does not mention a model (a wrong base URL)
/// stays an HTTP error.
fn is_model_not_found(status: u16, code: &str, message: &str) -> bool {
    if code == "model_not_found" {
        return true;
    }
    let lower = message.to_ascii_lowercase();
    let about_model = lower.contains("model");
    let missing = lower.contains("not found")
        || lower.contains("does not exist")
        || lower.contains("not_found")
        || lower.contains("unknown model")
        || lower.contains("no such model");
    match status {
        404 => about_model && (missing || code == "not_found_error" || lower.starts_with("model:")),
        400 | 422 => about_model && missing,
        _ => false,
    }
}

fn is_quota(code: &str) -> bool {
    matches!(code, "insufficient_quota" | "billing_error")
}

fn is_context_length(code: &str, message: &str) -> bool {
    if matches!(
        code,
        "context_length_exceeded" | "request_too_large" | "string_above_max_length"
    ) {
        return true;
    }
    let lower = message.to_ascii_lowercase();
    lower.contains("prompt is too long")
        || lower.contains("context_length_exceeded")
        || lower.contains("maximum context length")
        || lower.contains("context window")
}

/// `what: detail`, the detail truncated and scrubbed of the API key (some providers echo a
/// partly masked key; a proxy might echo all of it).
/// Redaction comes first: a key that straddles the cut would otherwise survive in part.
fn compose(what: &str, detail: &str, api_key: Option<&str>) -> String {
    let detail = match api_key {
        Some(key) if key.len() >= 8 => detail.trim().replace(key, "[redacted]"),
        _ => detail.trim().to_owned(),
    };
    let detail = truncate(&detail, MAX_DETAIL_CHARS);
    if detail.is_empty() {
        what.to_owned()
    } else {
        format!("{what}: {detail}")
    }
}

/// A success status with a JSON body where an event stream was expected: an error envelope
/// is classified like an error event, anything else is an invalid response.
pub(crate) fn unexpected_json(body: &str, provider: &str, api_key: Option<&str>) -> ModelError {
    if let Ok((code, Some(message))) =
        serde_json::from_str::<ErrorBody>(body).map(ErrorBody::into_parts)
    {
        return from_event(code, Some(message), provider, api_key);
    }
    ModelError::new(
        ModelErrorKind::InvalidResponse,
        compose(
            &format!("{provider} answered with JSON instead of an event stream"),
            body,
            api_key,
        ),
    )
}

pub(crate) fn truncate(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

pub(crate) fn invalid(provider: &str, what: impl std::fmt::Display) -> ModelError {
    ModelError::new(
        ModelErrorKind::InvalidResponse,
        format!("{provider} sent an unexpected stream: {what}"),
    )
}

pub(crate) fn cut(provider: &str, what: &str) -> ModelError {
    ModelError::new(
        ModelErrorKind::StreamCut,
        format!("{provider} stream ended {what}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_across_the_cut_is_redacted_whole() {
        let key = "sk-ant-0123456789abcdefghijklmnopqrstuvwxyz";
        // The key starts 20 characters before the truncation point.
        let detail = format!("{}{key} trailing", "x".repeat(MAX_DETAIL_CHARS - 20));
        let msg = compose("failed", &detail, Some(key));
        assert!(!msg.contains("sk-ant-0123"), "{msg}");
        assert!(msg.contains("[redacted]"), "{msg}");
    }

    #[test]
    fn statuses_and_codes_map_to_kinds() {
        let quota = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
        assert_eq!(
            from_status(429, quota, "openai", None).kind,
            ModelErrorKind::Quota
        );
        let too_long = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        let e = from_status(400, too_long, "anthropic", None);
        assert_eq!(e.kind, ModelErrorKind::ContextLength);
        assert!(e.message.contains("prompt is too long"), "{}", e.message);
        assert_eq!(
            from_status(401, "nope", "x", None).kind,
            ModelErrorKind::Auth
        );
        assert_eq!(
            from_status(503, "", "x", None).kind,
            ModelErrorKind::Http { status: 503 }
        );
    }

    #[test]
    fn unknown_model_names_are_model_not_found() {
        let cases = [
            (
                404,
                r#"{"error":{"message":"The model `gpt-9` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}"#,
            ),
            (
                404,
                r#"{"type":"error","error":{"type":"not_found_error","message":"model: claude-nine"}}"#,
            ),
            (
                404,
                r#"{"error":{"message":"model \"llama9\" not found, try pulling it first","type":"api_error"}}"#,
            ),
            (
                400,
                r#"{"error":{"message":"The model 'x' does not exist","type":"invalid_request_error"}}"#,
            ),
        ];
        for (status, body) in cases {
            assert_eq!(
                from_status(status, body, "p", None).kind,
                ModelErrorKind::ModelNotFound,
                "{body}"
            );
        }
        assert_eq!(
            from_status(404, "404 page not found", "p", None).kind,
            ModelErrorKind::Http { status: 404 }
        );
    }

    #[test]
    fn messages_are_short_and_never_carry_the_key() {
        let key = "sk-secret-123456";
        let body = format!("bad key {key} {}", "x".repeat(2000));
        let e = from_status(401, &body, "openai", Some(key));
        assert!(!e.message.contains(key));
        assert!(e.message.chars().count() < 600, "{}", e.message.len());
    }
}
