//! Slash commands from the workspace's prompt files (`.ferrite/commands/<name>.md`, listed to the
//! editor in `available_commands_update`): a prompt that starts with `/<name>` gets the file's
//! text attached, with `$ARGUMENTS` replaced by the rest of the line.

use std::path::Path;

use crate::content::UserContent;

/// The prompt with the command's file attached, or unchanged when it names no prompt file.
pub fn expand(content: Vec<UserContent>, cwd: &Path) -> Vec<UserContent> {
    let Some(UserContent::Text { text }) = content.first() else {
        return content;
    };
    let Some(rest) = text.trim_start().strip_prefix('/') else {
        return content;
    };
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid {
        return content;
    }
    let path = cwd
        .join(".ferrite")
        .join("commands")
        .join(format!("{name}.md"));
    let Ok(template) = std::fs::read_to_string(&path) else {
        return content;
    };
    let args = args.trim();
    let body = if template.contains("$ARGUMENTS") {
        template.replace("$ARGUMENTS", args)
    } else if args.is_empty() {
        template
    } else {
        format!("{template}\n\n{args}")
    };
    let mut out = content;
    out.insert(
        1,
        UserContent::Resource {
            uri: format!("file://{}", path.display()),
            text: Some(body),
            blob: None,
            mime_type: Some("text/markdown".into()),
        },
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> Vec<UserContent> {
        vec![UserContent::Text { text: t.into() }]
    }

    #[test]
    fn expands_prompt_files() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join(".ferrite/commands")).unwrap();
        std::fs::write(
            ws.path().join(".ferrite/commands/review.md"),
            "Review $ARGUMENTS carefully.",
        )
        .unwrap();
        let out = expand(text("/review src/lib.rs"), ws.path());
        assert_eq!(out.len(), 2);
        match &out[1] {
            UserContent::Resource { text: Some(t), .. } => {
                assert_eq!(t, "Review src/lib.rs carefully.")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(expand(text("/nope x"), ws.path()).len(), 1);
        assert_eq!(expand(text("/../etc/passwd"), ws.path()).len(), 1);
        assert_eq!(expand(text("plain"), ws.path()).len(), 1);
    }
}
