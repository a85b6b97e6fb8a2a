//! `grep`: ripgrep's engine in-process. The walk is parallel (as `rg` does it) and respects
//! `.gitignore`, `.ignore` and hidden files; the results are sorted by path and line afterwards so
//! the model sees the same answer every time.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use ignore::{WalkBuilder, WalkState};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::content::{Location, ToolKind};
use crate::model::ToolSpec;
use crate::paths::{display, resolve};
use crate::tools::output::{lock, parse_input, place, plural, search_output, truncate_line};
use crate::tools::{
    Access, CallDescription, ReadDeny, Tool, ToolContext, ToolError, ToolOutput, input_schema,
};

/// Matches shown when the model gives no `limit`.
pub const DEFAULT_LIMIT: usize = 200;
/// A matching line longer than this is cut (minified code would fill the budget in one line).
const MAX_LINE_BYTES: usize = 500;

pub struct Grep;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    // No descriptions: the tool's says what each is.
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    #[serde(default)]
    ignore_case: bool,
    #[schemars(range(min = 1))]
    limit: Option<usize>,
}

impl Tool for Grep {
    fn name(&self) -> &str {
        "grep"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "grep".into(),
            description: format!(
                "Search file contents for a regex (ripgrep syntax) in `path` (a directory, \
                 recursively, or a file; default: the working directory), skipping ignored, \
                 hidden and binary files; `glob` filters files (\"src/**/*.ts\"). Prints \
                 `path:line:text`, at most `limit` matches (default {DEFAULT_LIMIT})."
            ),
            input_schema: input_schema::<Input>(),
        }
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }

    fn describe(&self, input: &Value, cwd: &Path) -> CallDescription {
        let pattern = input.get("pattern").and_then(Value::as_str).unwrap_or("");
        search_description("Grep", pattern, input, cwd)
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

/// The whole tool without the async shell and the output cap: what the model would read. Public
/// so the benchmark can time it without an agent around it.
pub fn run(
    input: Value,
    cwd: &Path,
    deny: &ReadDeny,
    cancel: &CancellationToken,
) -> Result<String, ToolError> {
    let input: Input = parse_input("grep", input)?;
    let respond = ToolError::RespondToModel;
    let root = resolve(cwd, input.path.as_deref().unwrap_or("."));
    let shown_root = display(&root, cwd);
    if !root.exists() {
        return Err(respond(format!("{shown_root} does not exist.")));
    }
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(input.ignore_case)
        // Lets the engine search line by line without ever matching across a newline.
        .line_terminator(Some(b'\n'))
        .build(&input.pattern)
        .map_err(|e| respond(format!("invalid regex `{}`: {e}", input.pattern)))?;
    let limit = input.limit.unwrap_or(DEFAULT_LIMIT).max(1);
    let walker = walker(&root, input.glob.as_deref(), "grep", deny)?;

    let found = count_matches(walker, &matcher, cancel);
    if cancel.is_cancelled() {
        return Err(respond("The search was cancelled.".into()));
    }
    if found.total == 0 {
        return Ok(format!(
            "No matches for `{}` in {}.",
            input.pattern,
            place(&shown_root)
        ));
    }
    let base = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_owned());
    let mut out = String::new();
    let mut shown = 0;
    let mut searcher = searcher(true);
    for (path, _) in &found.files {
        if shown == limit {
            break;
        }
        let mut sink = Collect {
            limit: limit - shown,
            lines: Vec::new(),
            binary: false,
        };
        if searcher.search_path(&matcher, path, &mut sink).is_err() || sink.binary {
            continue;
        }
        let rel = relative(path, &base);
        for (line, text) in &sink.lines {
            out.push_str(&format!("{rel}:{line}:{text}\n"));
        }
        shown += sink.lines.len();
    }
    if found.total > shown {
        out.push_str(&format!(
            "\n[{} more matches not shown ({} in {}); narrow the pattern, path or glob, or \
             raise limit.]\n",
            found.total - shown,
            if found.total == 1 {
                "1 match".to_owned()
            } else {
                format!("{} matches", found.total)
            },
            plural(found.files.len(), "file"),
        ));
    }
    Ok(out)
}

/// Files with matches, sorted by path, and how many matches in all.
struct Found {
    files: Vec<(PathBuf, usize)>,
    total: usize,
}

/// The parallel pass over the whole tree only counts: most matches are never shown, so the lines
/// shown are collected afterwards by searching again the first few files in sorted order. That
/// keeps allocation out of the hot loop (a common pattern has matches in every file).
fn count_matches(
    walker: ignore::WalkParallel,
    matcher: &RegexMatcher,
    cancel: &CancellationToken,
) -> Found {
    let results: Arc<Mutex<Found>> = Arc::new(Mutex::new(Found {
        files: Vec::new(),
        total: 0,
    }));
    walker.run(|| {
        let matcher = matcher.clone();
        let results = results.clone();
        let mut searcher = searcher(false);
        let cancel = cancel.clone();
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                // Unreadable directories are skipped, like rg without its warnings.
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let mut sink = Count {
                count: 0,
                binary: false,
            };
            let searched = searcher.search_path(&matcher, entry.path(), &mut sink);
            if searched.is_ok() && !sink.binary && sink.count > 0 {
                let mut r = lock(&results);
                r.total += sink.count;
                r.files.push((entry.into_path(), sink.count));
            }
            WalkState::Continue
        })
    });
    let mut found = std::mem::replace(
        &mut *lock(&results),
        Found {
            files: Vec::new(),
            total: 0,
        },
    );
    found.files.sort_unstable();
    found
}

fn searcher(line_numbers: bool) -> Searcher {
    SearcherBuilder::new()
        // Stop at the first NUL byte, as rg does for files it found by walking.
        .binary_detection(BinaryDetection::quit(0))
        .line_number(line_numbers)
        .build()
}

struct Count {
    count: usize,
    binary: bool,
}

impl Sink for Count {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, _: &SinkMatch<'_>) -> Result<bool, std::io::Error> {
        self.count += 1;
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> Result<bool, std::io::Error> {
        // Matches already seen before the NUL byte don't count: the file is binary.
        self.binary = true;
        Ok(false)
    }
}

/// Collects up to `limit` matching lines of one file.
struct Collect {
    limit: usize,
    lines: Vec<(u64, String)>,
    binary: bool,
}

impl Sink for Collect {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, std::io::Error> {
        let text = String::from_utf8_lossy(mat.bytes());
        let text = text.trim_end_matches('\n').trim_end_matches('\r');
        self.lines.push((
            mat.line_number().unwrap_or(0),
            truncate_line(text, MAX_LINE_BYTES).into_owned(),
        ));
        Ok(self.lines.len() < self.limit)
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> Result<bool, std::io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// A parallel walk of `root` that honours ignore files like rg, filtered by `glob`.
/// Entries a deny rule covers are skipped (a denied directory is not even entered).
pub(crate) fn walker(
    root: &Path,
    glob: Option<&str>,
    tool: &'static str,
    deny: &ReadDeny,
) -> Result<ignore::WalkParallel, ToolError> {
    let mut builder = WalkBuilder::new(root);
    let deny = deny.clone();
    builder.filter_entry(move |e| !deny.denies(tool, e.path()));
    // Ignore files apply even outside a git repository: the model expects .gitignore to count.
    builder.require_git(false);
    if let Some(glob) = glob.filter(|g| !g.trim().is_empty()) {
        let mut ov = ignore::overrides::OverrideBuilder::new(root);
        ov.add(glob)
            .map_err(|e| ToolError::RespondToModel(format!("invalid glob `{glob}`: {e}")))?;
        let ov = ov
            .build()
            .map_err(|e| ToolError::RespondToModel(format!("invalid glob `{glob}`: {e}")))?;
        builder.overrides(ov);
    }
    Ok(builder.build_parallel())
}

/// `path` relative to `base` (the canonical cwd) when inside it, else absolute.
pub(crate) fn relative(path: &Path, base: &Path) -> String {
    match path.strip_prefix(base) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => path.display().to_string(),
    }
}

/// The resolved `path` argument, defaulting to the cwd.
pub(crate) fn search_root(input: &Value, cwd: &Path) -> PathBuf {
    resolve(
        cwd,
        input.get("path").and_then(Value::as_str).unwrap_or("."),
    )
}

/// "<verb> `pattern` in <path>" with the searched path as the location.
pub(crate) fn search_description(
    verb: &str,
    pattern: &str,
    input: &Value,
    cwd: &Path,
) -> CallDescription {
    let root = search_root(input, cwd);
    let mut title = format!("{verb} `{}`", truncate_line(pattern, 80));
    if input.get("path").and_then(Value::as_str).is_some() {
        title.push_str(&format!(" in {}", display(&root, cwd)));
    }
    CallDescription {
        title,
        locations: vec![Location {
            path: root,
            line: None,
        }],
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::output::testing::TestEnv;

    fn tree(env: &TestEnv) {
        env.write(".gitignore", "target/\n*.log\n");
        env.write("src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n");
        env.write("src/lib.rs", "pub fn hello() {}\n// Hello again\n");
        env.write("target/out.rs", "hello from build output\n");
        env.write("debug.log", "hello log\n");
        env.write(".hidden/x.rs", "hello hidden\n");
        env.write("data.bin", b"hello\x00binary\n");
        env.write("docs/readme.md", "say hello\n");
    }

    #[tokio::test]
    async fn respects_ignores_skips_binary_and_sorts() {
        let env = TestEnv::new();
        tree(&env);
        let out = env.ok(&Grep, json!({"pattern": "hello"})).await;
        assert_eq!(
            out,
            "docs/readme.md:1:say hello\nsrc/lib.rs:1:pub fn hello() {}\nsrc/main.rs:2:    println!(\"hello\");\n"
        );
    }

    #[tokio::test]
    async fn ignore_case_glob_and_path() {
        let env = TestEnv::new();
        tree(&env);
        let out = env
            .ok(
                &Grep,
                json!({"pattern": "hello", "ignore_case": true, "glob": "*.rs"}),
            )
            .await;
        assert_eq!(
            out,
            "src/lib.rs:1:pub fn hello() {}\nsrc/lib.rs:2:// Hello again\nsrc/main.rs:2:    println!(\"hello\");\n"
        );
        let out = env
            .ok(&Grep, json!({"pattern": "fn", "path": "src/main.rs"}))
            .await;
        assert_eq!(out, "src/main.rs:1:fn main() {\n");
        let out = env
            .ok(&Grep, json!({"pattern": "hello", "path": "docs"}))
            .await;
        assert_eq!(out, "docs/readme.md:1:say hello\n");
    }

    #[tokio::test]
    async fn deny_rules_cover_every_file_the_search_opens() {
        let mut env = TestEnv::new();
        env.write(".env", "TOKEN=hunter2\n");
        env.write("secrets/prod.txt", "TOKEN=hunter3\n");
        env.write("src/a.rs", "TOKEN=fine\n");
        env.deny(&["read(**/.env)", "read(secrets/**)"]);
        // The glob opens hidden files, the root is the whole workspace: neither reaches them.
        for input in [
            json!({"pattern": "TOKEN"}),
            json!({"pattern": "TOKEN", "glob": "*env*"}),
            json!({"pattern": "TOKEN", "glob": "**"}),
            json!({"pattern": "TOKEN", "path": "secrets/.."}),
        ] {
            let out = env.ok(&Grep, input.clone()).await;
            assert!(!out.contains("hunter"), "{input}: {out}");
        }
        let out = env
            .ok(&crate::tools::Find, json!({"pattern": "**/*"}))
            .await;
        assert!(!out.contains("prod.txt") && out.contains("a.rs"), "{out}");
        let out = env.ok(&crate::tools::Ls, json!({})).await;
        assert!(!out.contains(".env"), "{out}");
    }

    #[tokio::test]
    async fn limit_reports_the_rest() {
        let env = TestEnv::new();
        for i in 0..5 {
            env.write(&format!("f{i}.txt"), "x\nx\n");
        }
        let out = env.ok(&Grep, json!({"pattern": "x", "limit": 3})).await;
        assert_eq!(
            out,
            "f0.txt:1:x\nf0.txt:2:x\nf1.txt:1:x\n\n[7 more matches not shown (10 matches in 5 files); narrow the pattern, path or glob, or raise limit.]\n"
        );
    }

    #[tokio::test]
    async fn stable_order_across_runs() {
        let env = TestEnv::new();
        for i in 0..200 {
            env.write(&format!("d{}/f{i:03}.txt", i % 7), "needle\n");
        }
        let first = env.ok(&Grep, json!({"pattern": "needle"})).await;
        for _ in 0..3 {
            assert_eq!(env.ok(&Grep, json!({"pattern": "needle"})).await, first);
        }
        let lines: Vec<&str> = first.lines().collect();
        let mut sorted = lines.clone();
        sorted.sort_by_key(|l| PathBuf::from(l.split(':').next().unwrap()));
        assert_eq!(lines, sorted);
        assert_eq!(lines.len(), 200);
    }

    #[tokio::test]
    async fn errors_and_no_matches() {
        let env = TestEnv::new();
        env.write("a.txt", "abc\n");
        let err = env.err(&Grep, json!({"pattern": "("})).await;
        assert!(err.contains("invalid regex"), "{err}");
        let err = env
            .err(&Grep, json!({"pattern": "a", "path": "nope"}))
            .await;
        assert!(err.contains("does not exist"), "{err}");
        let out = env.ok(&Grep, json!({"pattern": "zzz"})).await;
        assert_eq!(out, "No matches for `zzz` in the working directory.");
    }

    #[tokio::test]
    async fn long_lines_are_cut() {
        let env = TestEnv::new();
        env.write(
            "min.js",
            format!("{}needle{}\n", "a".repeat(600), "b".repeat(600)),
        );
        let out = env.ok(&Grep, json!({"pattern": "needle"})).await;
        assert!(out.contains("… [706 more bytes]"), "{out}");
        assert!(out.len() < 600, "{}", out.len());
    }

    #[test]
    fn describe_and_access() {
        let env = TestEnv::new();
        env.write("src/a.rs", "");
        let d = Grep.describe(&json!({"pattern": "fn \\w+", "path": "src"}), &env.root);
        assert_eq!(d.title, "Grep `fn \\w+` in src");
        assert_eq!(d.locations[0].path, env.root.join("src"));
        assert_eq!(
            Grep.access(&json!({"pattern": "x"}), &env.root),
            Access::Read {
                paths: vec![env.root.clone()]
            }
        );
        assert_eq!(Grep.kind(), ToolKind::Search);
    }
}
