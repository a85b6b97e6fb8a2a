//! MCP prompts as slash commands: how they join the editor's command list, how the words after
//! `/mcp__<server>__<prompt>` become the prompt's arguments, and what the messages the server
//! returns become in the user's prompt.
//!
//! - A name the list already has (a built-in, a prompt file, a skill) keeps its command; the
//!   prompt is not offered under it.
//! - Words are given to the declared arguments in order; the last declared argument takes the
//!   rest of the line as typed. A required argument left without a word is an error for the
//!   user, and nothing reaches the model.
//! - User messages become the prompt's text, assistant messages are quoted as context (a prompt
//!   cannot make the model believe it said something), images and embedded resources are kept
//!   as such, anything else becomes a line naming it.
//! - Text is capped like a prompt file ([`MAX_TEXT_BYTES`]), binary data at
//!   [`MAX_BINARY_BYTES`]; what was cut is said in a note the model and the user both see.

use super::budget::Budget;
use super::{McpContent, McpPrompt, McpPromptArgument, McpPromptMessage, McpRole};
use crate::commands::CommandInfo;
use crate::content::UserContent;

/// The text a prompt's messages may add to the user's prompt: the cap prompt files have.
pub const MAX_TEXT_BYTES: usize = crate::own_files::MAX_BYTES as usize;
/// Images and blobs (base64) a prompt may add.
pub const MAX_BINARY_BYTES: usize = 4 * 1024 * 1024;
/// Messages taken from one prompt; the rest are left out (and noted).
pub const MAX_MESSAGES: usize = 100;

/// Adds the prompts to the editor's command list. A name already listed keeps its command: the
/// built-ins, prompt files and skills win over a server.
pub fn add_commands(list: &mut Vec<CommandInfo>, prompts: &[McpPrompt]) {
    for prompt in prompts {
        if list.iter().any(|c| c.name == prompt.command) {
            continue;
        }
        list.push(CommandInfo {
            name: prompt.command.clone(),
            description: prompt.description.clone(),
            hint: hint(&prompt.arguments),
        });
    }
}

/// `<required> [optional]`, in the declared order; `None` when the prompt takes nothing.
pub fn hint(arguments: &[McpPromptArgument]) -> Option<String> {
    let words: Vec<String> = arguments
        .iter()
        .map(|a| match a.required {
            true => format!("<{}>", a.name),
            false => format!("[{}]", a.name),
        })
        .collect();
    (!words.is_empty()).then(|| words.join(" "))
}

/// The arguments for `prompt` from the text typed after its command: one whitespace-separated
/// word per declared argument, in order, the last one taking the rest of the line. `Err` names
/// the required argument that got no word, with the usage.
pub fn map_arguments(prompt: &McpPrompt, line: &str) -> Result<Vec<(String, String)>, String> {
    let mut rest = line.trim();
    let mut out = Vec::new();
    let count = prompt.arguments.len();
    for (i, arg) in prompt.arguments.iter().enumerate() {
        let value = if i + 1 == count {
            std::mem::take(&mut rest)
        } else {
            let (word, after) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            rest = after.trim_start();
            word
        };
        if value.is_empty() {
            if arg.required {
                let usage = match hint(&prompt.arguments) {
                    Some(h) => format!("/{} {h}", prompt.command),
                    None => format!("/{}", prompt.command),
                };
                return Err(format!(
                    "`/{}` needs the argument `{}`. Usage: `{usage}`",
                    prompt.command, arg.name
                ));
            }
            continue;
        }
        out.push((arg.name.clone(), value.to_owned()));
    }
    Ok(out)
}

/// What the prompt adds to the user's prompt, after the line that ran it, and the note about
/// what was cut (also the last block), if anything was. `extra` is text typed after a prompt
/// that declares no arguments: it is kept, after the messages, rather than dropped.
pub fn prompt_content(
    command: &str,
    messages: Vec<McpPromptMessage>,
    extra: &str,
) -> (Vec<UserContent>, Option<String>) {
    let mut budget = Budget::new(MAX_TEXT_BYTES, MAX_BINARY_BYTES);
    let mut out = Vec::new();
    let total = messages.len();
    for (i, message) in messages.into_iter().enumerate() {
        if i >= MAX_MESSAGES {
            budget.drop_part();
            continue;
        }
        let block = match (message.role, message.content) {
            (McpRole::User, McpContent::Text(text)) => budget.text(&text).map(text_block),
            (McpRole::Assistant, McpContent::Text(text)) => budget
                .text(&text)
                .map(|t| text_block(quote_assistant(command, &t))),
            (_, McpContent::Block(block)) => keep_block(block, &mut budget),
        };
        out.extend(block);
    }
    if total > MAX_MESSAGES {
        tracing::warn!(command, total, "MCP prompt returned too many messages");
    }
    let extra = extra.trim();
    if !extra.is_empty() {
        out.push(text_block(extra.to_owned()));
    }
    let note = budget.note(&format!("the MCP prompt `/{command}`"));
    if let Some(note) = &note {
        out.push(text_block(note.clone()));
    }
    (out, note)
}

/// An assistant message of a prompt, quoted: context the prompt brings, never words the model
/// said.
fn quote_assistant(command: &str, text: &str) -> String {
    let quoted: Vec<String> = text.lines().map(|l| format!("> {l}")).collect();
    format!(
        "(The prompt `/{command}` includes this example assistant message:)\n{}",
        quoted.join("\n")
    )
}

fn text_block(text: String) -> UserContent {
    UserContent::Text { text: text.into() }
}

/// An image or an embedded resource, within the budget; one over it is left out (and counted).
fn keep_block(block: UserContent, budget: &mut Budget) -> Option<UserContent> {
    match block {
        UserContent::Image { ref data, .. } => budget.binary(data.len()).then_some(block),
        UserContent::Resource {
            uri,
            text,
            blob,
            mime_type,
        } => {
            let text = match text {
                Some(t) => Some(budget.text(&t)?),
                None => None,
            };
            let blob = blob.filter(|b| budget.binary(b.len()));
            if text.is_none() && blob.is_none() {
                return None;
            }
            Some(UserContent::Resource {
                uri,
                text,
                blob,
                mime_type,
            })
        }
        UserContent::Text { text } => budget.text(&text).map(text_block),
        // A server's link is named, never followed: as a link block, the workspace-file
        // expansion after this stage would read it.
        UserContent::ResourceLink { uri, name, .. } => budget
            .text(&format!("[resource link: {name} <{uri}>]"))
            .map(text_block),
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn arg(name: &str, required: bool) -> McpPromptArgument {
        McpPromptArgument {
            name: name.into(),
            required,
        }
    }

    fn prompt(arguments: Vec<McpPromptArgument>) -> McpPrompt {
        McpPrompt {
            command: "mcp__srv__review".into(),
            description: "Review".into(),
            arguments,
        }
    }

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    }

    fn user(text: &str) -> McpPromptMessage {
        McpPromptMessage {
            role: McpRole::User,
            content: McpContent::Text(text.into()),
        }
    }

    fn texts(content: &[UserContent]) -> Vec<String> {
        content
            .iter()
            .map(|c| match c {
                UserContent::Text { text } => text.to_string(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn words_go_to_arguments_in_order_and_the_last_takes_the_rest() {
        let p = prompt(vec![arg("file", true), arg("focus", false)]);
        assert_eq!(
            map_arguments(&p, "  src/lib.rs   error handling  and tests ").unwrap(),
            pairs(&[
                ("file", "src/lib.rs"),
                ("focus", "error handling  and tests")
            ])
        );
        assert_eq!(
            map_arguments(&p, "src/lib.rs").unwrap(),
            pairs(&[("file", "src/lib.rs")])
        );
        let one = prompt(vec![arg("text", true)]);
        assert_eq!(
            map_arguments(&one, "all of it").unwrap(),
            pairs(&[("text", "all of it")])
        );
        assert_eq!(map_arguments(&prompt(vec![]), "ignored here").unwrap(), []);
    }

    #[test]
    fn a_missing_required_argument_is_an_error_with_the_usage() {
        let p = prompt(vec![arg("file", true), arg("focus", false), arg("n", true)]);
        assert_eq!(
            map_arguments(&p, "a.rs b").unwrap_err(),
            "`/mcp__srv__review` needs the argument `n`. Usage: \
             `/mcp__srv__review <file> [focus] <n>`"
        );
        assert!(map_arguments(&p, "").unwrap_err().contains("`file`"));
    }

    #[test]
    fn prompts_join_the_list_without_shadowing_a_listed_name() {
        let mut list = vec![CommandInfo {
            name: "mcp__srv__review".into(),
            description: "a prompt file".into(),
            hint: None,
        }];
        let other = McpPrompt {
            command: "mcp__srv__other".into(),
            description: "Other".into(),
            arguments: vec![arg("a", true), arg("b", false)],
        };
        add_commands(&mut list, &[prompt(vec![]), other]);
        assert_eq!(
            list,
            [
                CommandInfo {
                    name: "mcp__srv__review".into(),
                    description: "a prompt file".into(),
                    hint: None,
                },
                CommandInfo {
                    name: "mcp__srv__other".into(),
                    description: "Other".into(),
                    hint: Some("<a> [b]".into()),
                }
            ]
        );
    }

    #[test]
    fn messages_become_text_with_assistant_ones_quoted() {
        let messages = vec![
            user("Review this."),
            McpPromptMessage {
                role: McpRole::Assistant,
                content: McpContent::Text("Sure.\nWhich file?".into()),
            },
            McpPromptMessage {
                role: McpRole::User,
                content: McpContent::Block(UserContent::Image {
                    mime_type: "image/png".into(),
                    data: "aGk=".into(),
                    uri: None,
                }),
            },
        ];
        let (content, note) = prompt_content("mcp__s__p", messages, "also this");
        assert_eq!(note, None);
        assert_eq!(
            texts(&content),
            [
                "Review this.".to_owned(),
                "(The prompt `/mcp__s__p` includes this example assistant message:)\n> Sure.\n> \
                 Which file?"
                    .to_owned(),
                format!("{:?}", content[2]),
                "also this".to_owned(),
            ]
        );
        assert!(matches!(content[2], UserContent::Image { .. }));
    }

    #[test]
    fn a_flood_of_text_is_cut_at_the_prompt_file_cap_and_noted() {
        let big = "x".repeat(MAX_TEXT_BYTES - 10);
        let messages = vec![user(&big), user("0123456789abcdef"), user("more")];
        let (content, note) = prompt_content("mcp__s__p", messages, "");
        let kept: usize = content[..content.len() - 1]
            .iter()
            .map(|c| match c {
                UserContent::Text { text } => text.len(),
                _ => 0,
            })
            .sum();
        assert_eq!(kept, MAX_TEXT_BYTES);
        let note = note.unwrap();
        assert!(note.contains("cut at the 65536-byte cap"), "{note}");
        assert_eq!(texts(&content).last().unwrap(), &note);
    }

    #[test]
    fn too_many_messages_and_huge_images_are_left_out() {
        let mut messages: Vec<McpPromptMessage> =
            (0..MAX_MESSAGES + 5).map(|_| user("a")).collect();
        messages[0] = McpPromptMessage {
            role: McpRole::User,
            content: McpContent::Block(UserContent::Image {
                mime_type: "image/png".into(),
                data: "A".repeat(MAX_BINARY_BYTES + 4).into(),
                uri: None,
            }),
        };
        let (content, note) = prompt_content("mcp__s__p", messages, "");
        // 99 texts kept (the image and 5 over the count dropped), then the note.
        assert_eq!(content.len(), MAX_MESSAGES - 1 + 1);
        assert!(note.unwrap().contains("6 part(s)"));
    }
}
