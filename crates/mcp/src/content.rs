//! What an MCP tool result becomes for the model: text.
//!
//! Tool results sent to the model are text, so non-text blocks are described in a line the model
//! can reason about ("[image: image/png, 1234 bytes]") rather than dropped silently; the editor
//! also gets images as images.

use ferrite_core::tools::OutputLimits;
use ferrite_store::content::ToolContent;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// The text of `result`, one block after another.
pub(crate) fn result_text(result: &CallToolResult) -> String {
    let mut parts: Vec<String> = result.content.iter().map(block_text).collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        // A tool may answer with structured content only; the JSON is what there is to read.
        parts.push(structured.to_string());
    }
    parts.join("\n")
}

/// What the editor shows: the (capped) text, then any images the server returned as images.
pub(crate) fn editor_content(result: &CallToolResult, text: &str) -> Vec<ToolContent> {
    let mut out = vec![ToolContent::Text { text: text.into() }];
    out.extend(result.content.iter().filter_map(|b| match b {
        ContentBlock::Image(i) => Some(ToolContent::Image {
            mime_type: i.mime_type.clone(),
            data: i.data.as_str().into(),
        }),
        _ => None,
    }));
    out
}

fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => format!("[image: {}, {} bytes]", i.mime_type, b64_len(&i.data)),
        ContentBlock::Audio(a) => format!("[audio: {}, {} bytes]", a.mime_type, b64_len(&a.data)),
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource: {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[resource: {uri}, {}, {} bytes]",
                mime_type.as_deref().unwrap_or("application/octet-stream"),
                b64_len(blob)
            ),
            other => unsupported(other),
        },
        ContentBlock::ResourceLink(link) => {
            format!("[resource link: {} <{}>]", link.name, link.uri)
        }
        // `ContentBlock` is non-exhaustive: a block type newer than this code is still shown.
        other => unsupported(other),
    }
}

/// A line for a block kind newer than this code (rmcp's content enums are non-exhaustive).
pub(crate) fn unsupported(block: &impl serde::Serialize) -> String {
    let kind = serde_json::to_value(block)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned());
    format!("[unsupported content: {kind}]")
}

/// The decoded size of base64 `data`, without decoding it.
fn b64_len(data: &str) -> usize {
    let trimmed = data.trim_end_matches('=');
    let padding = data.len() - trimmed.len();
    (data.len() / 4 * 3).saturating_sub(padding.min(2))
}

/// `text` within `limits`: the first lines and bytes, and a note saying what was left out.
/// (Core's spill-to-file helper can replace this once it exists; a plain cut keeps this crate
/// independent of it.)
pub(crate) fn truncate(text: String, limits: OutputLimits) -> String {
    let total_lines = text.lines().count();
    let total_bytes = text.len();
    if total_bytes <= limits.max_bytes && total_lines <= limits.max_lines {
        return text;
    }
    let mut end = 0;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        if n >= limits.max_lines || end + line.len() > limits.max_bytes {
            break;
        }
        end += line.len();
    }
    if end == 0 {
        // A single line longer than the byte limit: cut inside it, on a char boundary.
        end = limits.max_bytes.min(total_bytes);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
    }
    let mut out = text[..end].to_owned();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!(
        "[output truncated: showing {end} of {total_bytes} bytes, {total_lines} lines in all]"
    ));
    out
}

#[cfg(test)]
mod tests {
    use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

    use super::*;

    #[test]
    fn blocks_become_text() {
        let result = CallToolResult::success(vec![
            ContentBlock::text("hello"),
            ContentBlock::image("aGVsbG8=", "image/png"),
            ContentBlock::resource(ResourceContents::text("body", "file:///a.txt")),
        ]);
        assert_eq!(
            result_text(&result),
            "hello\n[image: image/png, 5 bytes]\n[resource: file:///a.txt]\nbody"
        );
    }

    #[test]
    fn long_text_is_cut_with_a_note() {
        let limits = OutputLimits {
            max_bytes: 10,
            max_lines: 2,
        };
        assert_eq!(truncate("a\nb\n".into(), limits), "a\nb\n");
        assert_eq!(
            truncate("a\nb\nc\n".into(), limits),
            "a\nb\n[output truncated: showing 4 of 6 bytes, 3 lines in all]"
        );
        assert_eq!(
            truncate("0123456789abc".into(), limits),
            "0123456789\n[output truncated: showing 10 of 13 bytes, 1 lines in all]"
        );
    }
}
