//! Why a turn failed, typed: every `errorKind` of `docs/acp.md` ("The prompt") is a
//! [`FailureKind`], each with its `terminalStatus`. The wire keeps strings (the log's
//! `turn_end.failure` and the prompt answer's `_meta.ferrite.turnFailure`), produced only by
//! [`FailureKind::id`]; a failed outcome is built only by `ferrite_core::events::TurnOutcome::failed`.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// `terminalStatus` of a failed turn (`docs/acp.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TerminalStatus {
    ConfigurationError,
    ProviderError,
    ToolError,
    Interrupted,
}

impl TerminalStatus {
    pub fn id(self) -> &'static str {
        match self {
            TerminalStatus::ConfigurationError => "configuration_error",
            TerminalStatus::ProviderError => "provider_error",
            TerminalStatus::ToolError => "tool_error",
            TerminalStatus::Interrupted => "interrupted",
        }
    }
}

/// The facts of a failed turn (`docs/acp.md`), with the text the user was shown. Logged as it is
/// sent: `error_kind` is a [`FailureKind::id`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnFailure {
    pub terminal_status: TerminalStatus,
    pub error_kind: String,
    pub message: String,
}

impl TurnFailure {
    pub fn new(kind: &FailureKind, message: impl Into<String>) -> Self {
        Self {
            terminal_status: kind.terminal_status(),
            error_kind: kind.id().into_owned(),
            message: message.into(),
        }
    }
}

/// Why a turn failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureKind {
    /// The config files cannot be used (`config`).
    Config,
    /// The stored "always" rules of the workspace cannot be used (`permission_rules`).
    PermissionRules,
    /// No usable model at all (`no_provider`).
    NoProvider,
    /// The model's provider needs a key and has none (`no_api_key`).
    NoApiKey,
    /// The model names a provider ferrite does not know (`unknown_provider`).
    UnknownProvider,
    /// The provider does not know the model (`model_not_found`).
    ModelNotFound,
    /// A non-success HTTP status (`http_500`).
    Http(u16),
    Auth,
    /// `insufficient_quota`: billing, retrying will not help.
    InsufficientQuota,
    ContextLength,
    /// The model's stream ended before its final event.
    StreamCut,
    IdleTimeout,
    Connection,
    /// The provider's answer could not be understood.
    InvalidResponse,
    /// An error code the provider reported in its stream (`overloaded_error`), as an identifier
    /// (see [`sanitize_error_kind`]). Build it with [`FailureKind::provider`].
    Provider(String),
    /// A model call reported cancellation where the turn did not expect it (`cancelled`).
    Cancelled,
    /// A tool failed fatally (`tool_failed`).
    ToolFailed,
    /// The session log could not be written (`session_log_write`).
    SessionLogWrite,
    /// The turn task panicked (`internal`).
    Internal,
    /// The session task died mid-turn (`session_task_died`).
    SessionTaskDied,
    /// The session task did not take the prompt in time (`session_unresponsive`).
    SessionUnresponsive,
}

impl FailureKind {
    /// A provider-reported code, made an identifier.
    pub fn provider(code: &str) -> Self {
        FailureKind::Provider(sanitize_error_kind(code))
    }

    /// The `errorKind` on the wire: lower-case ASCII, at most 64 bytes.
    pub fn id(&self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            FailureKind::Config => "config",
            FailureKind::PermissionRules => "permission_rules",
            FailureKind::NoProvider => "no_provider",
            FailureKind::NoApiKey => "no_api_key",
            FailureKind::UnknownProvider => "unknown_provider",
            FailureKind::ModelNotFound => "model_not_found",
            FailureKind::Http(status) => return Cow::Owned(format!("http_{status}")),
            FailureKind::Auth => "auth",
            FailureKind::InsufficientQuota => "insufficient_quota",
            FailureKind::ContextLength => "context_length",
            FailureKind::StreamCut => "stream_cut",
            FailureKind::IdleTimeout => "idle_timeout",
            FailureKind::Connection => "connection",
            FailureKind::InvalidResponse => "invalid_response",
            FailureKind::Provider(code) => return Cow::Owned(sanitize_error_kind(code)),
            FailureKind::Cancelled => "cancelled",
            FailureKind::ToolFailed => "tool_failed",
            FailureKind::SessionLogWrite => "session_log_write",
            FailureKind::Internal => "internal",
            FailureKind::SessionTaskDied => "session_task_died",
            FailureKind::SessionUnresponsive => "session_unresponsive",
        })
    }

    pub fn terminal_status(&self) -> TerminalStatus {
        match self {
            FailureKind::Config
            | FailureKind::PermissionRules
            | FailureKind::NoProvider
            | FailureKind::NoApiKey
            | FailureKind::UnknownProvider
            | FailureKind::ModelNotFound => TerminalStatus::ConfigurationError,
            FailureKind::Http(_)
            | FailureKind::Auth
            | FailureKind::InsufficientQuota
            | FailureKind::ContextLength
            | FailureKind::StreamCut
            | FailureKind::IdleTimeout
            | FailureKind::Connection
            | FailureKind::InvalidResponse
            | FailureKind::Provider(_) => TerminalStatus::ProviderError,
            FailureKind::ToolFailed => TerminalStatus::ToolError,
            FailureKind::Cancelled
            | FailureKind::SessionLogWrite
            | FailureKind::Internal
            | FailureKind::SessionTaskDied
            | FailureKind::SessionUnresponsive => TerminalStatus::Interrupted,
        }
    }
}

/// Forces `raw` into `^[a-z][a-z0-9_]*$`, at most 64 bytes.
pub fn sanitize_error_kind(raw: &str) -> String {
    let mut out: String = raw
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '_'
            }
        })
        .collect();
    if !out.starts_with(|c: char| c.is_ascii_lowercase()) {
        out.insert_str(0, "e_");
    }
    out.truncate(64);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// The table of `docs/acp.md`, kind by kind: a new kind must be added here (and there).
    #[test]
    fn every_kind_has_its_wire_id_and_status() {
        use TerminalStatus::{ConfigurationError, Interrupted, ProviderError, ToolError};
        let table = [
            (FailureKind::Config, "config", ConfigurationError),
            (
                FailureKind::PermissionRules,
                "permission_rules",
                ConfigurationError,
            ),
            (FailureKind::NoProvider, "no_provider", ConfigurationError),
            (FailureKind::NoApiKey, "no_api_key", ConfigurationError),
            (
                FailureKind::UnknownProvider,
                "unknown_provider",
                ConfigurationError,
            ),
            (
                FailureKind::ModelNotFound,
                "model_not_found",
                ConfigurationError,
            ),
            (FailureKind::Http(500), "http_500", ProviderError),
            (FailureKind::Auth, "auth", ProviderError),
            (
                FailureKind::InsufficientQuota,
                "insufficient_quota",
                ProviderError,
            ),
            (FailureKind::ContextLength, "context_length", ProviderError),
            (FailureKind::StreamCut, "stream_cut", ProviderError),
            (FailureKind::IdleTimeout, "idle_timeout", ProviderError),
            (FailureKind::Connection, "connection", ProviderError),
            (
                FailureKind::InvalidResponse,
                "invalid_response",
                ProviderError,
            ),
            (
                FailureKind::provider("Overloaded-Error"),
                "overloaded_error",
                ProviderError,
            ),
            (FailureKind::Cancelled, "cancelled", Interrupted),
            (FailureKind::ToolFailed, "tool_failed", ToolError),
            (
                FailureKind::SessionLogWrite,
                "session_log_write",
                Interrupted,
            ),
            (FailureKind::Internal, "internal", Interrupted),
            (
                FailureKind::SessionTaskDied,
                "session_task_died",
                Interrupted,
            ),
            (
                FailureKind::SessionUnresponsive,
                "session_unresponsive",
                Interrupted,
            ),
        ];
        for (kind, id, status) in table {
            assert_eq!((kind.id().as_ref(), kind.terminal_status()), (id, status));
        }
    }

    #[test]
    fn error_kinds_are_identifiers() {
        assert_eq!(sanitize_error_kind("overloaded_error"), "overloaded_error");
        assert_eq!(
            sanitize_error_kind("Rate-Limit.Exceeded"),
            "rate_limit_exceeded"
        );
        assert_eq!(sanitize_error_kind("429"), "e_429");
        assert_eq!(sanitize_error_kind(&"x".repeat(100)).len(), 64);
    }

    #[test]
    fn a_failure_serializes_as_before() {
        let f = TurnFailure::new(&FailureKind::SessionLogWrite, "disk full");
        assert_eq!(
            serde_json::to_string(&f).unwrap(),
            r#"{"terminal_status":"interrupted","error_kind":"session_log_write","message":"disk full"}"#
        );
    }
}
