//! Identifiers. Session ids are generated here (UUIDv7: time-ordered, so a directory listing sorts
//! by creation) and every id that arrives from outside is checked before it touches a path.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The longest session id accepted from a client (`docs/sessions.md`).
pub const MAX_SESSION_ID_LEN: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SessionId(String);

/// A client-supplied session id that does not match `^[A-Za-z0-9_-]{1,64}$`. Deliberately carries
/// no copy of the input: a hostile id is never echoed back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("invalid session id: expected 1-64 characters from [A-Za-z0-9_-]")]
pub struct InvalidSessionId;

impl SessionId {
    /// A fresh, time-ordered id.
    pub fn generate() -> Self {
        Self(uuid::Uuid::now_v7().as_hyphenated().to_string())
    }

    pub fn parse(raw: &str) -> Result<Self, InvalidSessionId> {
        let ok = !raw.is_empty()
            && raw.len() <= MAX_SESSION_ID_LEN
            && raw
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if ok {
            Ok(Self(raw.to_owned()))
        } else {
            Err(InvalidSessionId)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A fresh id for a user message (`EntryKind::UserMessage::id`): time-ordered and unique.
pub fn new_message_id() -> String {
    format!("msg-{}", uuid::Uuid::now_v7().as_simple())
}

impl TryFrom<String> for SessionId {
    type Error = InvalidSessionId;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<SessionId> for String {
    fn from(value: SessionId) -> Self {
        value.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Identifies one turn within a process, so late events of an already-answered turn can be dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TurnId(pub u64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_are_valid_and_ordered() {
        let a = SessionId::generate();
        let b = SessionId::generate();
        assert!(SessionId::parse(a.as_str()).is_ok());
        assert!(a < b, "{a} should sort before {b}");
    }

    #[test]
    fn hostile_ids_are_refused() {
        for bad in [
            "",
            "../etc/passwd",
            "a/b",
            "a b",
            "é",
            &"x".repeat(65),
            "a\0b",
            ".",
            "..",
        ] {
            assert_eq!(SessionId::parse(bad), Err(InvalidSessionId), "{bad:?}");
        }
        assert!(SessionId::parse(&"x".repeat(64)).is_ok());
        assert!(SessionId::parse("A-z_09").is_ok());
    }
}
