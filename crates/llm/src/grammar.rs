//! What each API's stream decoder implements, and the helpers they share. Kept apart from
//! `decode` (which picks a decoder per API) so that the APIs do not import their dispatcher.

use std::borrow::Cow;

use ferrite_core::model::{ModelError, ModelEvent};
use serde::Deserialize;

/// One API's stream grammar: fed SSE events, it pushes [`ModelEvent`]s and finally exactly one
/// [`ModelEvent::Completed`].
pub(crate) trait StreamDecoder: Send {
    fn on_event(
        &mut self,
        name: &str,
        data: &str,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError>;

    /// The byte stream ended. Pushes `Completed` if what arrived is a whole response, else
    /// reports a [`ferrite_core::model::ModelErrorKind::StreamCut`].
    fn on_eof(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelError>;

    /// `Completed` has been pushed; nothing after it matters.
    fn is_done(&self) -> bool;
}

/// The `type` of an event's JSON, for streams whose SSE event name is missing.
#[derive(Deserialize)]
struct TypeOnly<'a> {
    #[serde(borrow, rename = "type", default)]
    kind: Option<Cow<'a, str>>,
}

/// The event type: the SSE `event:` name, or the JSON `type` when the name is absent. Both
/// Anthropic and the Responses API send both and keep them equal.
pub(crate) fn event_type<'a>(name: &'a str, data: &'a str) -> Cow<'a, str> {
    if name != "message" {
        return Cow::Borrowed(name);
    }
    serde_json::from_str::<TypeOnly<'a>>(data)
        .ok()
        .and_then(|t| t.kind)
        .unwrap_or(Cow::Borrowed(""))
}
