//! What a server's prompts and resources become for core: commands with sane names and
//! descriptions, prompt messages and resource parts in the shapes a prompt holds. Everything
//! here is a server's word, so nothing is taken as it came: a prompt whose name or arguments
//! could not be shown or typed safely is not offered at all.

use std::collections::HashSet;

use ferrite_core::mcp::{
    McpContent, McpPrompt, McpPromptArgument, McpPromptMessage, McpResourcePart, McpRole,
};
use ferrite_store::content::UserContent;
use rmcp::model::{ContentBlock, GetPromptResult, Prompt, ReadResourceResult, ResourceContents};

use crate::names;

/// Longest real name (of a prompt or one of its arguments) that is offered.
const MAX_NAME_CHARS: usize = 64;
/// Arguments a prompt may declare and still be offered.
const MAX_ARGUMENTS: usize = 16;
/// Characters of a description shown in the editor's list.
const MAX_DESCRIPTION_CHARS: usize = 200;

/// The prompt as a command named `mcp__<server>__<prompt>` (not in `taken`), or `None` when it
/// is not offered: a name or argument name with control characters or slashes, empty or over
/// 64 characters, or too many arguments.
pub(crate) fn command(server: &str, prompt: &Prompt, taken: &HashSet<String>) -> Option<McpPrompt> {
    if !offerable(&prompt.name) {
        tracing::warn!(server, prompt = %prompt.name.escape_debug(), "MCP prompt not offered: bad name");
        return None;
    }
    let declared = prompt.arguments.as_deref().unwrap_or_default();
    if declared.len() > MAX_ARGUMENTS || declared.iter().any(|a| !offerable(&a.name)) {
        tracing::warn!(server, prompt = %prompt.name, "MCP prompt not offered: bad arguments");
        return None;
    }
    let description = prompt
        .description
        .as_deref()
        .or(prompt.title.as_deref())
        .map(one_line)
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| format!("Prompt `{}` of MCP server `{server}`", prompt.name));
    Some(McpPrompt {
        command: names::unique_tool_name(server, &prompt.name, taken),
        description,
        arguments: declared
            .iter()
            .map(|a| McpPromptArgument {
                name: a.name.clone(),
                required: a.required == Some(true),
            })
            .collect(),
    })
}

/// A name that can be shown and typed as it is: no control characters, no slashes.
fn offerable(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && !name
            .chars()
            .any(|c| c.is_control() || c == '/' || c == '\\')
}

/// One line, no control characters, at most [`MAX_DESCRIPTION_CHARS`].
fn one_line(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let words: Vec<&str> = flat.split_whitespace().collect();
    let line = words.join(" ");
    match line.char_indices().nth(MAX_DESCRIPTION_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// The prompt's messages for core.
pub(crate) fn messages(result: GetPromptResult) -> Vec<McpPromptMessage> {
    result
        .messages
        .into_iter()
        .map(|m| McpPromptMessage {
            role: match m.role {
                rmcp::model::Role::User => McpRole::User,
                rmcp::model::Role::Assistant => McpRole::Assistant,
            },
            content: content(m.content),
        })
        .collect()
}

fn content(block: ContentBlock) -> McpContent {
    match block {
        ContentBlock::Text(t) => McpContent::Text(t.text.clone()),
        ContentBlock::Image(i) => McpContent::Block(UserContent::Image {
            mime_type: i.mime_type.clone(),
            data: i.data.as_str().into(),
            uri: None,
        }),
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::TextResourceContents {
                uri,
                mime_type,
                text,
                ..
            } => McpContent::Block(UserContent::Resource {
                uri: uri.clone(),
                text: Some(text.clone()),
                blob: None,
                mime_type: mime_type.clone(),
            }),
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => McpContent::Block(UserContent::Resource {
                uri: uri.clone(),
                text: None,
                blob: Some(blob.clone()),
                mime_type: mime_type.clone(),
            }),
            other => McpContent::Text(crate::content::unsupported(other)),
        },
        // A link is named, never followed: the server does not get to choose what is read.
        ContentBlock::ResourceLink(link) => {
            McpContent::Text(format!("[resource link: {} <{}>]", link.name, link.uri))
        }
        ContentBlock::Audio(a) => McpContent::Text(format!("[audio: {}]", a.mime_type)),
        // `ContentBlock` is non-exhaustive: a block type newer than this code is still named.
        other => McpContent::Text(crate::content::unsupported(&other)),
    }
}

/// A read resource's parts for core.
pub(crate) fn resource_parts(result: ReadResourceResult) -> Vec<McpResourcePart> {
    result
        .contents
        .into_iter()
        .map(|c| match c {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                McpResourcePart::Text { uri, text }
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => McpResourcePart::Blob {
                uri,
                mime_type,
                data: blob,
            },
            other => McpResourcePart::Text {
                uri: String::new(),
                text: crate::content::unsupported(&other),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use rmcp::model::PromptArgument;

    use super::*;

    fn offered(name: &str) -> Option<String> {
        let p = Prompt::new(name, Some("d"), None);
        command("srv", &p, &HashSet::new()).map(|c| c.command)
    }

    #[test]
    fn hostile_names_are_not_offered() {
        assert_eq!(offered("review").as_deref(), Some("mcp__srv__review"));
        assert_eq!(
            offered("code review").as_deref(),
            Some("mcp__srv__code_review")
        );
        assert_eq!(offered("a/b"), None);
        assert_eq!(offered("..\\x"), None);
        assert_eq!(offered("bell\u{7}"), None);
        assert_eq!(offered("line\nbreak"), None);
        assert_eq!(offered("\u{1b}[31mred"), None);
        assert_eq!(offered(""), None);
        assert_eq!(offered(&"x".repeat(65)), None);
        let long = offered(&"x".repeat(64)).unwrap();
        assert!(
            long.len() <= 64 && long.starts_with("mcp__srv__xxx"),
            "{long}"
        );
        let bad_arg = Prompt::new("p", Some("d"), Some(vec![PromptArgument::new("a\u{0}b")]));
        assert!(command("srv", &bad_arg, &HashSet::new()).is_none());
        let many: Vec<PromptArgument> = (0..17)
            .map(|i| PromptArgument::new(format!("a{i}")))
            .collect();
        assert!(
            command(
                "srv",
                &Prompt::new("p", Some("d"), Some(many)),
                &HashSet::new()
            )
            .is_none()
        );
    }

    #[test]
    fn descriptions_are_one_short_line() {
        let p = Prompt::new(
            "p",
            Some(format!("first\nsecond\u{1b}[2J {}", "y".repeat(300))),
            None,
        );
        let d = command("srv", &p, &HashSet::new()).unwrap().description;
        assert!(d.starts_with("first second [2J yyy"), "{d}");
        assert_eq!(d.chars().count(), MAX_DESCRIPTION_CHARS + 1);
        let bare = Prompt::new("p", None::<String>, None);
        assert_eq!(
            command("srv", &bare, &HashSet::new()).unwrap().description,
            "Prompt `p` of MCP server `srv`"
        );
    }
}
