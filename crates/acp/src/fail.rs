//! An error answer (JSON-RPC code, message, data) and how core errors become one.

use ferrite_core::catalog::AuthNeeded;
use ferrite_core::events::Refusal;
use ferrite_core::runtime::RuntimeError;
use ferrite_core::runtime::queries::KeyError;
use ferrite_store::log::StoreError;
use serde_json::Value;

use crate::rpc;

/// An error answer: JSON-RPC code and message.
#[derive(Debug)]
pub(crate) struct Fail {
    pub code: i64,
    pub message: String,
    /// The error's `data`, when there is more than the message to say.
    pub data: Option<Value>,
}

impl Fail {
    /// -32000: the user must set up a provider; `data` says what would do (`docs/acp.md`).
    pub fn auth_required(need: &AuthNeeded) -> Self {
        Self {
            code: rpc::AUTH_REQUIRED,
            message: format!("Authentication required: {}", need.message),
            data: serde_json::to_value(need).ok(),
        }
    }

    /// -32602: the client asked for something wrong.
    pub fn params(message: impl Into<String>) -> Self {
        Self {
            code: rpc::INVALID_PARAMS,
            message: message.into(),
            data: None,
        }
    }

    /// -32603: the agent failed (its files, its session tasks), not the client.
    pub fn internal(message: impl Into<String>) -> Self {
        Self {
            code: rpc::INTERNAL_ERROR,
            message: message.into(),
            data: None,
        }
    }

    /// The error line answering `id`.
    pub fn to_line(&self, id: &Value) -> String {
        match &self.data {
            Some(data) => rpc::error_line_with_data(id, self.code, &self.message, data.clone()),
            None => rpc::error_line(id, self.code, &self.message),
        }
    }
}

impl From<RuntimeError> for Fail {
    fn from(e: RuntimeError) -> Self {
        match e {
            RuntimeError::Invalid(m) => Fail::params(m),
            RuntimeError::UnknownSession => Fail::params("unknown session"),
            RuntimeError::AuthRequired(need) => Fail::auth_required(&need),
            RuntimeError::Refused(r) => Fail::from(r),
            RuntimeError::Config(c) => Fail::internal(c.to_string()),
            // The client can act on this one: the session is in use elsewhere.
            RuntimeError::Store(StoreError::Locked) => {
                Fail::params("the session is open in another ferrite process")
            }
            // The log could not be read or written: the agent's failure, whatever was asked.
            RuntimeError::Store(s) => Fail::internal(s.to_string()),
        }
    }
}

impl From<Refusal> for Fail {
    fn from(r: Refusal) -> Self {
        Fail::params(r.to_string())
    }
}

impl From<KeyError> for Fail {
    fn from(e: KeyError) -> Self {
        match e {
            KeyError::TakesNoKey(_) | KeyError::UnknownProvider { .. } => {
                Fail::params(e.to_string())
            }
            KeyError::Config(_) | KeyError::Credentials(_) => Fail::internal(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log that cannot be written is never blamed on the client's params.
    #[test]
    fn store_errors_are_internal_except_a_lock_held_elsewhere() {
        let io = StoreError::Io {
            path: "/s.jsonl".into(),
            source: std::io::Error::other("No space left on device"),
        };
        let corrupt = StoreError::Corrupt {
            path: "/s.jsonl".into(),
            reason: "changed".into(),
        };
        for e in [io, corrupt, StoreError::Exists] {
            let f = Fail::from(RuntimeError::Store(e));
            assert_eq!(f.code, rpc::INTERNAL_ERROR, "{}", f.message);
            assert!(f.message.contains("session"), "{}", f.message);
        }
        let locked = Fail::from(RuntimeError::Store(StoreError::Locked));
        assert_eq!(locked.code, rpc::INVALID_PARAMS);
    }
}
