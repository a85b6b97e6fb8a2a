//! The boundary to model vendors. `crates/llm` implements [`ModelConnector`] and [`ModelClient`]
//! for each wire API; the turn loop only sees these wire-neutral types.

use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::catalog::{ListedModel, Provider};
use crate::modes::Effort;

pub use crate::failure::{FailureKind, TerminalStatus, sanitize_error_kind};
pub use crate::usage::Usage;
// The conversation is the session's (`ferrite_store::conversation`): the log's entries hold it.
pub use ferrite_store::conversation::{AssistantPart, Message, ToolResultPart, UserPart};

/// One request to a model: everything needed to produce the next assistant message.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// The model name as the provider's API expects it (no `provider/` prefix).
    pub model: String,
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub effort: Effort,
    /// Whether the model is known to reason (returns reasoning items). Some APIs refuse
    /// reasoning parameters for models that do not.
    pub reasoning: bool,
    /// Anthropic: the model takes adaptive thinking rather than a thinking budget.
    pub adaptive_thinking: bool,
    /// Turn on the provider's hosted web search.
    pub web_search: bool,
    /// The most output tokens to allow: within the model's limit and what its context window
    /// leaves. `None`: the limit is unknown, so none is sent where the API allows that.
    pub max_output_tokens: Option<u32>,
    /// A key the provider may route the request's prompt cache by (OpenAI Responses
    /// `prompt_cache_key`): the session id, so every request of a session shares its cache.
    pub cache_key: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object: shared, since every model request lists the tools
    /// and a deep copy of a schema per tool per request cost more than the rest of the list.
    pub input_schema: Arc<Value>,
}

/// What a model stream yields.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelEvent {
    TextDelta(String),
    ReasoningDelta(String),
    /// The provider's hosted web search ran (shown to the editor as a `fetch` tool call).
    WebSearch {
        id: String,
        query: Option<String>,
        status: HostedStatus,
    },
    /// The request is being retried after a retryable failure (for logs and the user).
    Retrying {
        /// Retries so far, this one included (1 for the first retry).
        attempt: u32,
        delay_ms: u64,
        reason: String,
        /// Attempts allowed in all, the first one included.
        max_attempts: u32,
    },
    /// The terminal event: the complete assistant message, why it stopped, and usage.
    Completed(ModelResponse),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostedStatus {
    InProgress,
    Completed,
    Failed,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ModelResponse {
    pub content: Vec<AssistantPart>,
    pub stop: StopKind,
    pub usage: Usage,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopKind {
    EndTurn,
    ToolUse,
    MaxTokens,
    Refusal,
}

/// A failed model call, classified so the turn loop can branch on it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ModelError {
    pub kind: ModelErrorKind,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelErrorKind {
    /// A non-success HTTP status not covered by a more specific kind.
    Http {
        status: u16,
    },
    /// 401/403 or an authentication error event.
    Auth,
    /// 429 `insufficient_quota` or a billing error: retrying will not help.
    Quota,
    ContextLength,
    /// The stream ended before its terminal event.
    StreamCut,
    /// No event within the idle timeout.
    IdleTimeout,
    /// Could not connect or the connection broke before a response.
    Connection,
    /// An error event in the stream (`overloaded_error`, `server_error`, ...).
    Provider {
        code: String,
    },
    /// The response could not be understood.
    InvalidResponse,
    /// The provider is not set up (no key, unknown API) — a configuration problem.
    Configuration,
    /// The provider does not know the model name (404 / `model_not_found`).
    ModelNotFound,
    Cancelled,
}

impl ModelError {
    pub fn new(kind: ModelErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// What this failure is for a turn: its `errorKind` and `terminalStatus`.
    pub fn failure_kind(&self) -> FailureKind {
        FailureKind::from(&self.kind)
    }

    /// The `errorKind` (`docs/acp.md`): lower-case ASCII, at most 64 bytes.
    pub fn error_kind(&self) -> String {
        self.failure_kind().id().into_owned()
    }

    pub fn terminal_status(&self) -> TerminalStatus {
        self.failure_kind().terminal_status()
    }
}

impl From<&ModelErrorKind> for FailureKind {
    fn from(kind: &ModelErrorKind) -> Self {
        match kind {
            ModelErrorKind::Http { status } => FailureKind::Http(*status),
            ModelErrorKind::Auth => FailureKind::Auth,
            ModelErrorKind::Quota => FailureKind::InsufficientQuota,
            ModelErrorKind::ContextLength => FailureKind::ContextLength,
            ModelErrorKind::StreamCut => FailureKind::StreamCut,
            ModelErrorKind::IdleTimeout => FailureKind::IdleTimeout,
            ModelErrorKind::Connection => FailureKind::Connection,
            ModelErrorKind::Provider { code } => FailureKind::provider(code),
            ModelErrorKind::InvalidResponse => FailureKind::InvalidResponse,
            ModelErrorKind::Configuration => FailureKind::NoProvider,
            ModelErrorKind::ModelNotFound => FailureKind::ModelNotFound,
            ModelErrorKind::Cancelled => FailureKind::Cancelled,
        }
    }
}

pub type ModelStream = Pin<Box<dyn Stream<Item = Result<ModelEvent, ModelError>> + Send>>;

/// One provider's API. Implementations retry retryable failures themselves (they see the
/// headers), stop at once when `cancel` fires, and end every successful stream with
/// [`ModelEvent::Completed`]; a stream that ends without it is a [`ModelErrorKind::StreamCut`].
pub trait ModelClient: Send + Sync {
    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream;
}

/// What a provider's model listing yields.
pub type ListingFuture =
    Pin<Box<dyn std::future::Future<Output = Result<Vec<ListedModel>, ModelError>> + Send>>;

/// Builds clients for providers of the catalog.
pub trait ModelConnector: Send + Sync {
    fn connect(
        &self,
        provider: &Provider,
        api_key: Option<&str>,
    ) -> Result<Arc<dyn ModelClient>, ModelError>;

    /// The models `provider`'s server reports (`GET /v1/models`; Ollama's native listing),
    /// within `timeout`. Connectors that cannot list report none.
    fn list_models(
        &self,
        provider: &Provider,
        api_key: Option<&str>,
        timeout: std::time::Duration,
    ) -> ListingFuture {
        let _ = (provider, api_key, timeout);
        Box::pin(async { Ok(Vec::new()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_errors_have_failure_kinds() {
        let p = ModelError::new(
            ModelErrorKind::Provider {
                code: "Overloaded.Error".into(),
            },
            "busy",
        );
        assert_eq!(p.error_kind(), "overloaded_error");
        let c = ModelError::new(ModelErrorKind::Configuration, "no key");
        assert_eq!(c.error_kind(), "no_provider");
        assert_eq!(c.terminal_status(), TerminalStatus::ConfigurationError);
        let e = ModelError::new(ModelErrorKind::Http { status: 429 }, "slow down");
        assert_eq!(e.error_kind(), "http_429");
        assert_eq!(e.terminal_status(), TerminalStatus::ProviderError);
    }
}
