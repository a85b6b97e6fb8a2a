//! What the three request mappings share: serializing a body, and the effort parameter.
//!
//! The history makes bodies of megabytes on long sessions: the buffer is sized for the body up
//! front, because growing it by doubling copies it about twice over on the path from the prompt
//! to the provider.

use ferrite_core::model::{AssistantPart, Message, ModelRequest, UserPart};
use ferrite_core::modes::Effort;
use serde::Serialize;

/// The effort as every API names it (`low`, `medium`, `high`); `None` for the model's default,
/// for which nothing is sent.
pub(crate) fn effort_param(effort: Effort) -> Option<&'static str> {
    (effort != Effort::Default).then(|| effort.id())
}

pub(crate) fn to_bytes(body: &impl Serialize, req: &ModelRequest) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(size_hint(req));
    serde_json::to_writer(&mut out, body)?;
    Ok(out)
}

/// About the body's size: the text it carries, an eighth more for escapes, and room for the
/// JSON around each part and for the tool schemas. Too small costs one reallocation.
fn size_hint(req: &ModelRequest) -> usize {
    let mut text = req.system.len();
    let mut parts = 0;
    for message in &req.messages {
        match message {
            Message::User { content } => {
                parts += content.len();
                text += content
                    .iter()
                    .map(|p| match p {
                        UserPart::Text { text } => text.len(),
                        UserPart::Image { data, .. } => data.len(),
                    })
                    .sum::<usize>();
            }
            Message::Assistant { content } => {
                parts += content.len();
                text += content
                    .iter()
                    .map(|p| match p {
                        AssistantPart::Text { text } | AssistantPart::Reasoning { text, .. } => {
                            text.len()
                        }
                        AssistantPart::ToolCall { arguments, .. } => arguments.len(),
                        AssistantPart::Opaque { .. } => 256,
                    })
                    .sum::<usize>();
            }
            Message::ToolResults { results } => {
                parts += results.len();
                text += results.iter().map(|r| r.content.len()).sum::<usize>();
            }
        }
    }
    text + text / 8 + parts * 96 + req.tools.len() * 1024 + 1024
}
