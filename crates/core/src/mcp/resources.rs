//! `resource_link`s in the user's prompt that name a resource of an MCP server (any URI that is
//! not a local file): read through the server when the prompt arrives, as
//! [`crate::attachments`] does for workspace files, so the model sees what the user pointed at.
//!
//! Text parts fill the link's text, capped like a linked file ([`MAX_TEXT_BYTES`]); images
//! follow the link as embedded blocks (the model gets them when it takes images); other binary
//! parts become a line naming them. A URI no server claims is left as it was.

use super::McpResourcePart;
use super::budget::Budget;
use crate::content::UserContent;

/// The text a resource may add: the cap of a linked workspace file.
pub const MAX_TEXT_BYTES: usize = crate::attachments::MAX_INLINE_BYTES as usize;
/// Images (base64) a resource may add.
pub const MAX_BINARY_BYTES: usize = 4 * 1024 * 1024;
/// Parts taken from one resource.
pub const MAX_PARTS: usize = 16;

/// Whether `uri` is one to ask the MCP servers about: it has a scheme and is not a local file
/// (those are [`crate::attachments`]'s to read, or to leave alone).
pub fn is_server_uri(uri: &str) -> bool {
    let Some((scheme, _)) = uri.split_once(':') else {
        return false;
    };
    !scheme.is_empty()
        && !scheme.eq_ignore_ascii_case("file")
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// The link with the resource's text, then the resource's images; and the note about what was
/// cut (also at the end of the link's text), if anything was.
pub fn fill_link(
    uri: String,
    name: String,
    mime_type: Option<String>,
    parts: Vec<McpResourcePart>,
) -> (Vec<UserContent>, Option<String>) {
    let mut budget = Budget::new(MAX_TEXT_BYTES, MAX_BINARY_BYTES);
    let mut texts = Vec::new();
    let mut images = Vec::new();
    for (i, part) in parts.into_iter().enumerate() {
        if i >= MAX_PARTS {
            budget.drop_part();
            continue;
        }
        match part {
            McpResourcePart::Text { text, .. } => texts.extend(budget.text(&text)),
            McpResourcePart::Blob {
                uri: part_uri,
                mime_type: Some(mime),
                data,
            } if mime.starts_with("image/") => {
                if budget.binary(data.len()) {
                    images.push(UserContent::Resource {
                        uri: part_uri,
                        text: None,
                        blob: Some(data),
                        mime_type: Some(mime),
                    });
                }
            }
            McpResourcePart::Blob {
                uri: part_uri,
                mime_type,
                data,
            } => {
                let mime = mime_type.as_deref().unwrap_or("application/octet-stream");
                let line = format!(
                    "[binary content: {part_uri}, {mime}, {} bytes]",
                    base64_len(&data)
                );
                texts.extend(budget.text(&line));
            }
        }
    }
    let note = budget.note(&format!("the resource `{uri}`"));
    texts.extend(note.clone());
    let text = (!texts.is_empty()).then(|| texts.join("\n"));
    let mut out = vec![UserContent::ResourceLink {
        uri,
        name,
        mime_type,
        text,
    }];
    out.extend(images);
    (out, note)
}

/// The decoded size of base64 `data`, without decoding it.
fn base64_len(data: &str) -> usize {
    let trimmed = data.trim_end_matches('=');
    let padding = data.len() - trimmed.len();
    (data.len() / 4 * 3).saturating_sub(padding.min(2))
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn text(t: &str) -> McpResourcePart {
        McpResourcePart::Text {
            uri: "test://a".into(),
            text: t.into(),
        }
    }

    fn link_text(content: &[UserContent]) -> Option<&str> {
        match &content[0] {
            UserContent::ResourceLink { text, .. } => text.as_deref(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn only_uris_with_a_scheme_that_are_not_local_files_go_to_servers() {
        assert!(is_server_uri("test://greeting"));
        assert!(is_server_uri("postgres://db/table"));
        assert!(is_server_uri("urn:x"));
        assert!(!is_server_uri("file:///etc/passwd"));
        assert!(!is_server_uri("FILE:///etc/passwd"));
        assert!(!is_server_uri("/etc/passwd"));
        assert!(!is_server_uri("notes.txt"));
        assert!(!is_server_uri("a b:c"));
    }

    #[test]
    fn text_fills_the_link_and_images_follow_it() {
        let parts = vec![
            text("hello"),
            McpResourcePart::Blob {
                uri: "test://a.png".into(),
                mime_type: Some("image/png".into()),
                data: "aGVsbG8=".into(),
            },
            McpResourcePart::Blob {
                uri: "test://a.bin".into(),
                mime_type: None,
                data: "aGVsbG8=".into(),
            },
        ];
        let (content, note) = fill_link("test://a".into(), "a".into(), None, parts);
        assert_eq!(note, None);
        assert_eq!(
            link_text(&content),
            Some("hello\n[binary content: test://a.bin, application/octet-stream, 5 bytes]")
        );
        assert_eq!(
            content[1],
            UserContent::Resource {
                uri: "test://a.png".into(),
                text: None,
                blob: Some("aGVsbG8=".into()),
                mime_type: Some("image/png".into()),
            }
        );
    }

    #[test]
    fn a_huge_resource_is_cut_at_the_linked_file_cap_and_says_so() {
        let (content, note) = fill_link(
            "test://big".into(),
            "big".into(),
            None,
            vec![text(&"y".repeat(MAX_TEXT_BYTES + 100))],
        );
        let note = note.unwrap();
        let got = link_text(&content).unwrap();
        assert!(got.starts_with(&"y".repeat(MAX_TEXT_BYTES)));
        assert!(got.ends_with(&note), "{note}");
        assert_eq!(got.len(), MAX_TEXT_BYTES + 1 + note.len());
    }

    #[test]
    fn an_empty_resource_leaves_the_link_without_text() {
        let (content, note) = fill_link("test://e".into(), "e".into(), None, vec![]);
        assert_eq!((link_text(&content), note), (None, None));
    }
}
