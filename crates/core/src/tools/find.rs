//! `find`: files whose path matches a glob, .gitignore respected, sorted so the answer is stable.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkState;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::content::ToolKind;
use crate::model::ToolSpec;
use crate::paths::{display, resolve};
use crate::tools::grep::{relative, search_description, search_root, walker};
use crate::tools::output::{lock, parse_input, place, search_output};
use crate::tools::{
    Access, CallDescription, ReadDeny, Tool, ToolContext, ToolError, ToolOutput, input_schema,
};

/// Files listed when the model gives no `limit`.
pub const DEFAULT_LIMIT: usize = 1_000;

pub struct Find;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    // No descriptions: the tool's says what each is.
    pattern: String,
    path: Option<String>,
    #[schemars(range(min = 1))]
    limit: Option<usize>,
}

impl Tool for Find {
    fn name(&self) -> &str {
        "find"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "find".into(),
            description: format!(
                "Find files by glob: without `/` it matches names at any depth (\"*.rs\"), \
                 with `/` the path below `path` (\"src/**/*.ts\"). Skips ignored and hidden \
                 files. Prints sorted paths, at most `limit` (default {DEFAULT_LIMIT})."
            ),
            input_schema: input_schema::<Input>(),
        }
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }

    fn describe(&self, input: &Value, cwd: &Path) -> CallDescription {
        let pattern = input.get("pattern").and_then(Value::as_str).unwrap_or("");
        search_description("Find", pattern, input, cwd)
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
        Box::pin(search_output(ctx, input, run))
    }
}

/// The whole tool without the async shell and the output cap. Public for the benchmark.
pub fn run(
    input: Value,
    cwd: &Path,
    deny: &ReadDeny,
    cancel: &CancellationToken,
) -> Result<String, ToolError> {
    let input: Input = parse_input("find", input)?;
    let respond = ToolError::RespondToModel;
    let root = resolve(cwd, input.path.as_deref().unwrap_or("."));
    let shown_root = display(&root, cwd);
    if !root.is_dir() {
        return Err(respond(if root.exists() {
            format!("{shown_root} is a file; `find` searches a directory.")
        } else {
            format!("{shown_root} does not exist.")
        }));
    }
    let glob = Pattern::new(&input.pattern)?;
    let limit = input.limit.unwrap_or(DEFAULT_LIMIT).max(1);

    let found: Arc<Mutex<Vec<PathBuf>>> = Arc::default();
    walker(&root, None, "find", deny)?.run(|| {
        let found = found.clone();
        let glob = &glob;
        let root = &root;
        let cancel = cancel.clone();
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if entry.file_type().is_some_and(|t| t.is_file()) && glob.matches(entry.path(), root) {
                lock(&found).push(entry.into_path());
            }
            WalkState::Continue
        })
    });
    if cancel.is_cancelled() {
        return Err(respond("The search was cancelled.".into()));
    }
    let mut files = std::mem::take(&mut *lock(&found));
    if files.is_empty() {
        return Ok(format!(
            "No files match `{}` in {}.",
            input.pattern,
            place(&shown_root)
        ));
    }
    files.sort_unstable();
    let base = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_owned());
    let mut out = String::with_capacity(files.len().min(limit) * 40);
    for f in files.iter().take(limit) {
        out.push_str(&relative(f, &base));
        out.push('\n');
    }
    if files.len() > limit {
        out.push_str(&format!(
            "\n[{} more files not shown ({} in all); narrow the pattern or path, or raise \
             limit.]\n",
            files.len() - limit,
            files.len()
        ));
    }
    Ok(out)
}

/// A glob matched against the file name (no `/` in the pattern) or the path below the root.
struct Pattern {
    matcher: GlobMatcher,
    whole_path: bool,
}

impl Pattern {
    fn new(pattern: &str) -> Result<Self, ToolError> {
        let trimmed = pattern.strip_prefix("./").unwrap_or(pattern);
        let matcher = GlobBuilder::new(trimmed)
            .literal_separator(true)
            .build()
            .map_err(|e| ToolError::RespondToModel(format!("invalid glob `{pattern}`: {e}")))?
            .compile_matcher();
        Ok(Self {
            matcher,
            whole_path: trimmed.contains('/'),
        })
    }

    fn matches(&self, path: &Path, root: &Path) -> bool {
        if self.whole_path {
            let rel = path.strip_prefix(root).unwrap_or(path);
            self.matcher.is_match(rel)
        } else {
            path.file_name()
                .is_some_and(|name| self.matcher.is_match(Path::new(name)))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::output::testing::TestEnv;

    fn tree(env: &TestEnv) {
        env.write(".gitignore", "target/\n");
        env.write("Cargo.toml", "");
        env.write("src/main.rs", "");
        env.write("src/tools/grep.rs", "");
        env.write("src/notes.md", "");
        env.write("target/debug/build.rs", "");
        env.write(".git/config.rs", "");
    }

    #[tokio::test]
    async fn name_globs_match_at_any_depth_and_skip_ignored() {
        let env = TestEnv::new();
        tree(&env);
        let out = env.ok(&Find, json!({"pattern": "*.rs"})).await;
        assert_eq!(out, "src/main.rs\nsrc/tools/grep.rs\n");
        let out = env.ok(&Find, json!({"pattern": "Cargo.toml"})).await;
        assert_eq!(out, "Cargo.toml\n");
    }

    #[tokio::test]
    async fn path_globs_are_relative_to_the_search_root() {
        let env = TestEnv::new();
        tree(&env);
        let out = env.ok(&Find, json!({"pattern": "src/*.rs"})).await;
        assert_eq!(out, "src/main.rs\n");
        let out = env.ok(&Find, json!({"pattern": "src/**/*.{rs,md}"})).await;
        assert_eq!(out, "src/main.rs\nsrc/notes.md\nsrc/tools/grep.rs\n");
        let out = env
            .ok(&Find, json!({"pattern": "tools/*.rs", "path": "src"}))
            .await;
        assert_eq!(out, "src/tools/grep.rs\n");
    }

    #[tokio::test]
    async fn limit_and_errors() {
        let env = TestEnv::new();
        for i in 0..5 {
            env.write(&format!("f{i}.txt"), "");
        }
        let out = env.ok(&Find, json!({"pattern": "*.txt", "limit": 2})).await;
        assert_eq!(
            out,
            "f0.txt\nf1.txt\n\n[3 more files not shown (5 in all); narrow the pattern or path, or raise limit.]\n"
        );
        let out = env.ok(&Find, json!({"pattern": "*.zig"})).await;
        assert_eq!(out, "No files match `*.zig` in the working directory.");
        let err = env.err(&Find, json!({"pattern": "a[", "path": "."})).await;
        assert!(err.contains("invalid glob"), "{err}");
        let err = env
            .err(&Find, json!({"pattern": "*", "path": "f0.txt"}))
            .await;
        assert!(err.contains("is a file"), "{err}");
    }

    #[test]
    fn describe_and_access() {
        let env = TestEnv::new();
        let d = Find.describe(&json!({"pattern": "*.rs"}), &env.root);
        assert_eq!(d.title, "Find `*.rs`");
        assert_eq!(
            Find.access(&json!({"pattern": "*", "path": ".."}), &env.root),
            Access::Read {
                paths: vec![env.root.parent().unwrap().to_owned()]
            }
        );
    }
}
