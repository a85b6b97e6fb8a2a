//! Why a runtime request failed.

use crate::config::ConfigError;
use crate::events::Refusal;
use crate::log::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// Bad parameters (JSON-RPC -32602).
    #[error("{0}")]
    Invalid(String),
    #[error("unknown session")]
    UnknownSession,
    /// No model can be used, or the default model's provider needs a key and has none
    /// (-32000).
    #[error("{}", .0.message)]
    AuthRequired(crate::catalog::AuthNeeded),
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Store(StoreError),
}

impl From<StoreError> for RuntimeError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound => RuntimeError::UnknownSession,
            other => RuntimeError::Store(other),
        }
    }
}
