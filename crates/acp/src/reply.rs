//! What a handler answers: its response, and what must follow the response on the wire.
//!
//! Every handler has one shape, `async fn(&Server, Req) -> Result<Resp, Fail>` with
//! `Resp: Respond`. The dispatcher (`crate::dispatch`) writes the answer and then performs the
//! [`After`] steps in order: updates a client only accepts once it knows the session id, notices
//! held until then, discovery started once the answer is out.

use agent_client_protocol_schema::v1 as acp;
use ferrite_core::runtime::NoticeGate;
use ferrite_store::ids::SessionId;
use serde::Serialize;
use serde_json::Value;

use crate::fail::Fail;

/// An answer ready to write.
pub(crate) struct Reply {
    /// The `result`; `None` when someone else answers (the pump answers `session/prompt`).
    pub body: Option<Value>,
    pub then: Vec<After>,
}

/// A step after the answer.
pub(crate) enum After {
    /// A `session/update` line (see [`After::update`]).
    Line(String),
    /// Lets the session's held notices through (`NoticeGate`).
    ReleaseNotices(NoticeGate),
    /// Starts model discovery in the background.
    Discover,
}

impl After {
    pub fn update(session: &SessionId, update: acp::SessionUpdate) -> Self {
        After::Line(crate::mapping::update_line(session, update))
    }
}

pub(crate) trait Respond {
    fn into_reply(self) -> Result<Reply, Fail>;
}

fn body(v: &impl Serialize) -> Result<Reply, Fail> {
    let body = serde_json::to_value(v).map_err(|e| Fail::internal(e.to_string()))?;
    Ok(Reply {
        body: Some(body),
        then: vec![],
    })
}

/// ACP schema responses answer as they serialize.
macro_rules! respond_as_serialized {
    ($($t:ty),* $(,)?) => {$(
        impl Respond for $t {
            fn into_reply(self) -> Result<Reply, Fail> {
                body(&self)
            }
        }
    )*};
}

respond_as_serialized!(
    acp::InitializeResponse,
    acp::ListSessionsResponse,
    acp::NewSessionResponse,
    acp::LoadSessionResponse,
    acp::ResumeSessionResponse,
    acp::ForkSessionResponse,
    acp::SetSessionConfigOptionResponse,
    acp::SetSessionTitleResponse,
);

/// A response of ferrite's own shape (`{}`, `_ferrite/session/fork`).
pub(crate) struct Json(pub Value);

impl Respond for Json {
    fn into_reply(self) -> Result<Reply, Fail> {
        body(&self.0)
    }
}

/// A response followed by more messages.
pub(crate) struct Followed<T> {
    pub response: T,
    pub then: Vec<After>,
}

impl<T: Respond> Respond for Followed<T> {
    fn into_reply(self) -> Result<Reply, Fail> {
        let mut reply = self.response.into_reply()?;
        reply.then.extend(self.then);
        Ok(reply)
    }
}

/// Answered later, by someone else: the pump answers a prompt on its turn's `TurnEnded`.
pub(crate) struct Deferred;

impl Respond for Deferred {
    fn into_reply(self) -> Result<Reply, Fail> {
        Ok(Reply {
            body: None,
            then: vec![],
        })
    }
}

/// A notification has no answer.
impl Respond for () {
    fn into_reply(self) -> Result<Reply, Fail> {
        Ok(Reply {
            body: None,
            then: vec![],
        })
    }
}
