//! `write`: create or replace a whole file. The editor is shown a diff against what was there.

use std::io::{Read as _, Write as _};
use std::path::Path;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::content::{Location, ToolContent, ToolKind, file_diff};
use crate::fsops::{self, Parents};
use crate::model::ToolSpec;
use crate::paths::{display, resolve};
use crate::tools::output::{blocking, count_lines, parse_input, plural};
use crate::tools::{
    Access, CallDescription, Tool, ToolContext, ToolError, ToolOutput, input_schema,
};

pub struct Write;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    // No descriptions: the tool's says what both are.
    path: String,
    content: String,
}

impl Tool for Write {
    fn name(&self) -> &str {
        "write"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write".into(),
            description: "Create a file or replace all its content (creating parent \
                directories). Prefer `edit` to change part of a file."
                .into(),
            input_schema: input_schema::<Input>(),
        }
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn describe(&self, input: &Value, cwd: &Path) -> CallDescription {
        path_description("Write", input, cwd)
    }

    fn access(&self, input: &Value, cwd: &Path) -> Access {
        Access::Write {
            paths: input_path(input, cwd).into_iter().collect(),
        }
    }

    fn preview(&self, input: &Value, cwd: &Path) -> Vec<ToolContent> {
        let (Some(path), Some(content)) = (
            input_path(input, cwd),
            input.get("content").and_then(Value::as_str),
        ) else {
            return vec![];
        };
        if path.is_dir() {
            return vec![ToolContent::Text {
                text: format!(
                    "This write will fail: {} is a directory.",
                    display(&path, cwd)
                )
                .into(),
            }];
        }
        let old = std::fs::read(&path)
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned());
        vec![file_diff(path, old, content.to_owned())]
    }

    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let input: Input = parse_input("write", input)?;
            let path = resolve(&ctx.cwd, &input.path);
            let shown = display(&path, &ctx.cwd);
            let written = path.clone();
            let (lsp_path, lsp_shown, content) =
                (path.clone(), shown.clone(), input.content.clone());
            let out = match crate::tools::delegated_writer(ctx, &path) {
                None => blocking(move || write_file(&path, &shown, input.content)).await,
                Some(client) => {
                    let (p, s) = (path.clone(), shown.clone());
                    let old_text = blocking(move || old_text(&p, &s)).await?;
                    crate::tools::write_through(
                        ctx,
                        client.as_ref(),
                        &path,
                        &shown,
                        &input.content,
                        Parents::Create,
                    )
                    .await?;
                    Ok(written_output(&path, &shown, old_text, input.content))
                }
            };
            let mut out = out?;
            ctx.recorder.wrote(&written);
            let changed = (lsp_path.as_path(), lsp_shown.as_str());
            crate::tools::diagnostics::after_edit(ctx.lsp.as_ref(), changed, &content, &mut out)
                .await;
            Ok(out)
        })
    }
}

/// The file's text before the write (`None`: a new file); a directory is refused.
fn old_text(path: &Path, shown: &str) -> Result<Option<String>, ToolError> {
    let respond = ToolError::RespondToModel;
    if path.is_dir() {
        return Err(respond(format!(
            "{shown} is a directory; give the path of a file inside it."
        )));
    }
    match read_existing(path) {
        Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(respond(format!("cannot read {shown} before writing: {e}"))),
    }
}

fn write_file(path: &Path, shown: &str, content: String) -> Result<ToolOutput, ToolError> {
    let respond = ToolError::RespondToModel;
    let old_text = old_text(path, shown)?;
    fsops::open_write(path, Parents::Create)
        .and_then(|mut f| f.write_all(content.as_bytes()))
        .map_err(|e| respond(format!("cannot write {shown}: {e}")))?;
    Ok(written_output(path, shown, old_text, content))
}

/// What the model and the editor are shown of a write.
fn written_output(
    path: &Path,
    shown: &str,
    old_text: Option<String>,
    content: String,
) -> ToolOutput {
    let lines = count_lines(&content);
    let text = match &old_text {
        None => format!(
            "Created {shown} ({}, {}).",
            plural(lines, "line"),
            plural(content.len(), "byte")
        ),
        Some(_) => format!(
            "Overwrote {shown} ({}, {}).",
            plural(lines, "line"),
            plural(content.len(), "byte")
        ),
    };
    ToolOutput {
        text,
        content: vec![file_diff(path.to_owned(), old_text, content)],
    }
}

/// The whole content of an existing file, opened without following links.
pub(crate) fn read_existing(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    fsops::open_read(path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The resolved `path` argument, when there is one.
pub(crate) fn input_path(input: &Value, cwd: &Path) -> Option<std::path::PathBuf> {
    input
        .get("path")
        .and_then(Value::as_str)
        .map(|p| resolve(cwd, p))
}

/// "<verb> <relative path>" with the file as the location.
pub(crate) fn path_description(verb: &str, input: &Value, cwd: &Path) -> CallDescription {
    match input_path(input, cwd) {
        Some(abs) => CallDescription {
            title: format!("{verb} {}", display(&abs, cwd)),
            locations: vec![Location {
                path: abs,
                line: None,
            }],
        },
        None => CallDescription {
            title: verb.to_owned(),
            locations: vec![],
        },
    }
}

/// [`path_description`] for a tool whose `path` is optional: without one, `whole` names what it
/// works on, and the location is the working directory.
pub(crate) fn optional_path_description(
    verb: &str,
    whole: &str,
    input: &Value,
    cwd: &Path,
) -> CallDescription {
    if input.get("path").and_then(Value::as_str).is_some() {
        return path_description(verb, input, cwd);
    }
    let mut d = path_description(verb, &serde_json::json!({"path": "."}), cwd);
    d.title = whole.to_owned();
    d
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::output::testing::TestEnv;

    #[tokio::test]
    async fn creates_new_file_with_parents() {
        let env = TestEnv::new();
        let out = env
            .call(
                &Write,
                json!({"path": "a/b/new.txt", "content": "hi\nthere\n"}),
            )
            .await
            .unwrap();
        assert_eq!(out.text, "Created a/b/new.txt (2 lines, 9 bytes).");
        assert_eq!(env.read("a/b/new.txt"), "hi\nthere\n");
        assert_eq!(
            out.content,
            vec![ToolContent::Diff {
                path: env.root.join("a/b/new.txt"),
                old_text: None,
                new_text: "hi\nthere\n".into()
            }]
        );
    }

    #[tokio::test]
    async fn overwrite_shows_old_text() {
        let env = TestEnv::new();
        env.write("f.txt", "old\n");
        let out = env
            .call(&Write, json!({"path": "f.txt", "content": "new\n"}))
            .await
            .unwrap();
        assert_eq!(out.text, "Overwrote f.txt (1 line, 4 bytes).");
        assert_eq!(env.read("f.txt"), "new\n");
        assert_eq!(
            out.content,
            vec![ToolContent::Diff {
                path: env.root.join("f.txt"),
                old_text: Some("old\n".into()),
                new_text: "new\n".into()
            }]
        );
    }

    #[tokio::test]
    async fn directory_target_is_an_error() {
        let env = TestEnv::new();
        env.write("d/x", "");
        let err = env.err(&Write, json!({"path": "d", "content": "x"})).await;
        assert!(err.contains("is a directory"), "{err}");
    }

    #[test]
    fn the_preview_is_a_diff_against_the_file_as_it_is() {
        let env = TestEnv::new();
        env.write("f.txt", "old\n");
        env.write("d/x", "");
        let preview =
            |path: &str| Write.preview(&json!({"path": path, "content": "new\n"}), &env.root);
        assert_eq!(
            preview("f.txt"),
            vec![ToolContent::Diff {
                path: env.root.join("f.txt"),
                old_text: Some("old\n".into()),
                new_text: "new\n".into()
            }]
        );
        assert_eq!(
            preview("d"),
            vec![ToolContent::Text {
                text: "This write will fail: d is a directory.".into()
            }]
        );
    }

    #[test]
    fn describe_and_access() {
        let env = TestEnv::new();
        let input = json!({"path": "sub/../n.rs", "content": ""});
        let d = Write.describe(&input, &env.root);
        assert_eq!(d.title, "Write n.rs");
        assert_eq!(d.locations[0].path, env.root.join("n.rs"));
        assert_eq!(
            Write.access(&input, &env.root),
            Access::Write {
                paths: vec![env.root.join("n.rs")]
            }
        );
        assert_eq!(Write.kind(), ToolKind::Edit);
    }

    #[cfg(unix)]
    #[test]
    fn access_reports_where_a_symlink_really_points() {
        let env = TestEnv::new();
        let outside = tempfile::tempdir().unwrap();
        let outside_root = std::fs::canonicalize(outside.path()).unwrap();
        std::os::unix::fs::symlink(&outside_root, env.root.join("escape")).unwrap();
        assert_eq!(
            Write.access(&json!({"path": "escape/new.txt", "content": ""}), &env.root),
            Access::Write {
                paths: vec![outside_root.join("new.txt")]
            }
        );
    }
}
