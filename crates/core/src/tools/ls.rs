//! `ls`: one directory's entries, gitignored ones left out so build output doesn't crowd the view.

use std::path::Path;

use futures::future::BoxFuture;
use ignore::WalkBuilder;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::content::ToolKind;
use crate::model::ToolSpec;
use crate::paths::{display, resolve};
use crate::tools::grep::search_root;
use crate::tools::output::{blocking, cap, parse_input, place};
use crate::tools::write::optional_path_description;
use crate::tools::{
    Access, CallDescription, ReadDeny, Tool, ToolContext, ToolError, ToolOutput, input_schema,
};

/// Entries listed when the model gives no `limit`.
pub const DEFAULT_LIMIT: usize = 500;

pub struct Ls;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    // No descriptions: the tool's says what each is.
    path: Option<String>,
    #[schemars(range(min = 1))]
    limit: Option<usize>,
}

impl Tool for Ls {
    fn name(&self) -> &str {
        "ls"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "ls".into(),
            description: format!(
                "List a directory (default: the working directory), sorted, directories ending \
                 in `/`, hidden ones shown, ignored ones not. At most `limit` (default {DEFAULT_LIMIT})."
            ),
            input_schema: input_schema::<Input>(),
        }
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn describe(&self, input: &Value, cwd: &Path) -> CallDescription {
        optional_path_description("List", "List the working directory", input, cwd)
    }

    fn access(&self, input: &Value, cwd: &Path) -> Access {
        Access::Read {
            paths: vec![search_root(input, cwd)],
        }
    }

    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let input: Input = parse_input("ls", input)?;
            let dir = resolve(&ctx.cwd, input.path.as_deref().unwrap_or("."));
            let shown = display(&dir, &ctx.cwd);
            let limit = input.limit.unwrap_or(DEFAULT_LIMIT).max(1);
            let deny = ctx.read_deny.clone();
            let text = blocking(move || list(&dir, &shown, limit, &deny)).await?;
            Ok(ToolOutput {
                text: cap(&text, ctx.limits, &ctx.spill_dir),
                content: vec![],
            })
        })
    }
}

fn list(dir: &Path, shown: &str, limit: usize, deny: &ReadDeny) -> Result<String, ToolError> {
    let respond = ToolError::RespondToModel;
    if !dir.is_dir() {
        return Err(respond(if dir.exists() {
            format!("{shown} is a file, not a directory. Use `read` to see its content.")
        } else {
            format!("{shown} does not exist.")
        }));
    }
    let mut entries: Vec<String> = Vec::new();
    let walk = WalkBuilder::new(dir)
        .max_depth(Some(1))
        .require_git(false)
        // Dotfiles (.github, .env.example) matter when exploring a project; ignore files still
        // apply, and `.git` itself is never interesting.
        .hidden(false)
        .filter_entry({
            let deny = deny.clone();
            move |e| e.file_name() != ".git" && !deny.denies("ls", e.path())
        })
        .sort_by_file_name(std::cmp::Ord::cmp)
        .build();
    for entry in walk {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                if entries.is_empty() && e.io_error().is_some() {
                    return Err(respond(format!("cannot list {shown}: {e}")));
                }
                continue;
            }
        };
        if entry.depth() == 0 {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        // A symlink to a directory is listed as a directory: that is how it is used.
        if entry.path().is_dir() {
            entries.push(format!("{name}/"));
        } else {
            entries.push(name);
        }
    }
    if entries.is_empty() {
        return Ok(format!("{} is empty.", place(shown)));
    }
    let mut out: String = entries
        .iter()
        .take(limit)
        .flat_map(|e| [e.as_str(), "\n"])
        .collect();
    if entries.len() > limit {
        out.push_str(&format!(
            "\n[{} more entries not shown ({} in all); raise limit or use `find`.]\n",
            entries.len() - limit,
            entries.len()
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::output::testing::TestEnv;
    use serde_json::json;

    #[tokio::test]
    async fn lists_sorted_with_dirs_marked_and_ignored_left_out() {
        let env = TestEnv::new();
        env.write(".gitignore", "target/\n*.log\n");
        env.write("b.txt", "");
        env.write("a/x.rs", "");
        env.write("target/debug/x", "");
        env.write("run.log", "");
        env.write(".github/ci.yml", "");
        env.write(".git/HEAD", "");
        let out = env.ok(&Ls, json!({})).await;
        assert_eq!(out, ".github/\n.gitignore\na/\nb.txt\n");
        let out = env.ok(&Ls, json!({"path": "a"})).await;
        assert_eq!(out, "x.rs\n");
    }

    #[tokio::test]
    async fn limit_empty_and_errors() {
        let env = TestEnv::new();
        for i in 0..4 {
            env.write(&format!("f{i}"), "");
        }
        std::fs::create_dir(env.root.join("empty")).unwrap();
        let out = env.ok(&Ls, json!({"limit": 2})).await;
        assert_eq!(
            out,
            "empty/\nf0\n\n[3 more entries not shown (5 in all); raise limit or use `find`.]\n"
        );
        assert_eq!(
            env.ok(&Ls, json!({"path": "empty"})).await,
            "empty is empty."
        );
        let err = env.err(&Ls, json!({"path": "f0"})).await;
        assert!(err.contains("Use `read`"), "{err}");
        let err = env.err(&Ls, json!({"path": "nope"})).await;
        assert!(err.contains("does not exist"), "{err}");
    }

    #[test]
    fn describe_and_access() {
        let env = TestEnv::new();
        assert_eq!(
            Ls.describe(&json!({}), &env.root).title,
            "List the working directory"
        );
        assert_eq!(
            Ls.describe(&json!({"path": "src"}), &env.root).title,
            "List src"
        );
        assert_eq!(
            Ls.access(&json!({}), &env.root),
            Access::Read {
                paths: vec![env.root.clone()]
            }
        );
        assert_eq!(Ls.kind(), ToolKind::Read);
    }
}
