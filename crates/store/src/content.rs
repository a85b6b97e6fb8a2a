//! What users send and what the editor is shown, in ferrite's own terms. The ACP crate maps these
//! to and from protocol types; the session log stores them.

use std::path::PathBuf;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One block of a user prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum UserContent {
    /// Text and image data are shared with the model messages built from the history (see
    /// `UserPart`).
    Text { text: Arc<str> },
    Image {
        mime_type: String,
        /// Base64.
        data: Arc<str>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        uri: Option<String>,
    },
    ResourceLink {
        uri: String,
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The file's text, read when the prompt arrived (local files inside the workspace), so
        /// the model sees what the user pointed at, and sees the same thing on every request.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    /// Embedded context: a resource's text (or base64 blob) sent with the prompt.
    Resource {
        uri: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        blob: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
}

impl UserContent {
    /// The text a title or a transcript shows for this block.
    pub fn display_text(&self) -> Option<&str> {
        match self {
            UserContent::Text { text } => Some(text),
            UserContent::ResourceLink { name, .. } => Some(name),
            UserContent::Image { .. } | UserContent::Resource { .. } => None,
        }
    }
}

/// ACP tool kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    Read,
    Edit,
    Delete,
    Move,
    Search,
    Execute,
    Think,
    Fetch,
    SwitchMode,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Pending,
    InProgress,
    Completed,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Location {
    pub path: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolContent {
    Text {
        /// Shared with the result's output when the card shows what the model got (most
        /// tools): a long session holds that text once, not twice.
        text: std::sync::Arc<str>,
    },
    Diff {
        path: PathBuf,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        old_text: Option<String>,
        new_text: String,
    },
    /// An image a tool returned (base64), e.g. from an MCP server. Shared with the model
    /// messages built from the history, like a prompt's images (see `UserPart`).
    Image { mime_type: String, data: Arc<str> },
    /// Another session the call is about: a `task` call's subagent session. Shown only by
    /// clients that show child sessions.
    Session { session: crate::ids::SessionId },
}

/// A tool call as the editor sees it when it starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallView {
    pub id: String,
    pub title: String,
    pub kind: ToolKind,
    pub status: ToolStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub locations: Vec<Location>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<ToolContent>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<Value>,
}

/// A change to a running or finished tool call. `None` fields are unchanged; `content` and
/// `locations`, when present, replace the earlier ones (ACP semantics).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolCallUpdateView {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ToolStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ToolContent>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locations: Option<Vec<Location>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<Value>,
    /// A running command's output since the last update, as written (escapes kept), for
    /// clients that draw commands as terminals. Live only: never logged.
    #[serde(skip)]
    pub terminal_output: Option<Arc<str>>,
    /// How a command ended, for the same clients. Live only.
    #[serde(skip)]
    pub terminal_exit: Option<TerminalExit>,
}

/// How a command ended, as a terminal view shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalExit {
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    Pending,
    InProgress,
    Completed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlanPriority {
    High,
    Medium,
    Low,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PlanEntry {
    pub content: String,
    pub status: PlanStatus,
    #[serde(default = "default_priority")]
    pub priority: PlanPriority,
}

fn default_priority() -> PlanPriority {
    PlanPriority::Medium
}

/// Past this size (old and new text together) a diff shows the changed region with some context
/// instead of both whole files: editors render diffs of megabytes slowly, and the user judges the
/// change, not the file.
pub const WHOLE_FILE_DIFF_BYTES: usize = 256 * 1024;
/// Unchanged lines kept around the changed region of a big file's diff.
const DIFF_CONTEXT_LINES: usize = 3;

/// The diff the editor shows for a change of `path` from `old` (`None`: a new file) to `new`:
/// both whole texts, or for big files the affected lines with [`DIFF_CONTEXT_LINES`] of context.
/// Used for the permission request and for the call's final update, so both show the same.
/// Plain lines as Markdown shows them apart: a renderer joins lines into one paragraph, so
/// each line break outside a fenced block becomes a paragraph break, except between list items
/// (`- `, `* `, `1. `), which stay one list.
pub fn markdown_paragraphs(text: &str) -> String {
    let is_item = |l: &str| {
        let l = l.trim_start();
        l.starts_with("- ")
            || l.starts_with("* ")
            || l.split_once(". ")
                .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    let mut out = String::with_capacity(text.len() + 16);
    let mut fenced = false;
    let mut prev: Option<&str> = None;
    for line in text.lines() {
        if let Some(p) = prev {
            let tight = fenced
                || p.trim().is_empty()
                || line.trim().is_empty()
                || (is_item(p) && is_item(line));
            out.push_str(if tight { "\n" } else { "\n\n" });
        }
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        out.push_str(line);
        prev = Some(line);
    }
    out
}

/// A finished call's `rawOutput`: a summary of the result the model got — its size in lines
/// and bytes, and a command's exit code — not the result again: the card's `content` shows it,
/// and clients that print both showed it twice (issue 35). Editors use its presence to tell a
/// call that ran from one that did not (Zed drops a refused turn's cards that have none).
pub fn raw_output(output: &str) -> Value {
    let mut summary = serde_json::Map::new();
    if let Some(code) = exit_code(output) {
        summary.insert("exitCode".into(), code.into());
    }
    summary.insert("lines".into(), output.lines().count().into());
    summary.insert("bytes".into(), output.len().into());
    Value::Object(summary)
}

/// The exit code `bash` puts on its result's first line (`Exit code 2`).
fn exit_code(output: &str) -> Option<i64> {
    output
        .lines()
        .next()?
        .strip_prefix("Exit code ")?
        .trim()
        .parse()
        .ok()
}

pub fn file_diff(path: PathBuf, old: Option<String>, new: String) -> ToolContent {
    let size = old.as_ref().map_or(0, String::len) + new.len();
    let (old, new) = match old {
        Some(old) if size > WHOLE_FILE_DIFF_BYTES => {
            let (o, n) = changed_region(&old, &new);
            (Some(o.to_owned()), n.to_owned())
        }
        old => (old, new),
    };
    ToolContent::Diff {
        path,
        old_text: old,
        new_text: new,
    }
}

/// The lines of `old` and `new` that differ, with context: everything between the common line
/// prefix and the common line suffix.
fn changed_region<'a>(old: &'a str, new: &'a str) -> (&'a str, &'a str) {
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let prefix = old_lines
        .iter()
        .zip(&new_lines)
        .take_while(|(a, b)| a == b)
        .count();
    let max_suffix = old_lines.len().min(new_lines.len()) - prefix;
    let suffix = old_lines
        .iter()
        .rev()
        .zip(new_lines.iter().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    let start = prefix.saturating_sub(DIFF_CONTEXT_LINES);
    let slice = |text: &'a str, lines: &[&str]| {
        let end = lines.len() - suffix.saturating_sub(DIFF_CONTEXT_LINES);
        let from: usize = lines[..start].iter().map(|l| l.len()).sum();
        let to: usize = lines[..end].iter().map(|l| l.len()).sum();
        &text[from..to]
    };
    (slice(old, &old_lines), slice(new, &new_lines))
}

// Markdown quoting (`fenced`, `inline_code`) is `ferrite_extensions::display`'s: it lives with the
// rest of how untrusted text is shown (hooks use it too).

/// The Markdown code-block language for a file, from its extension (empty when unknown).
pub fn language_for(path: &std::path::Path) -> &'static str {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    match ext.as_str() {
        "rs" => "rust",
        "py" | "pyi" => "python",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "jsx",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "tsx",
        "go" => "go",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" => "cpp",
        "java" => "java",
        "kt" | "kts" => "kotlin",
        "rb" => "ruby",
        "php" => "php",
        "cs" => "csharp",
        "swift" => "swift",
        "sh" | "bash" | "zsh" => "sh",
        "json" => "json",
        "toml" => "toml",
        "yaml" | "yml" => "yaml",
        "md" | "markdown" => "markdown",
        "html" | "htm" => "html",
        "css" => "css",
        "sql" => "sql",
        "xml" => "xml",
        "lua" => "lua",
        "ex" | "exs" => "elixir",
        "hs" => "haskell",
        "scala" => "scala",
        "zig" => "zig",
        "dockerfile" => "dockerfile",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_output_summarises_instead_of_repeating() {
        assert_eq!(
            raw_output("Exit code 2\noops\n"),
            serde_json::json!({"exitCode": 2, "lines": 2, "bytes": 17})
        );
        assert_eq!(
            raw_output("     1\talpha\n"),
            serde_json::json!({"lines": 1, "bytes": 13})
        );
        assert_eq!(raw_output(""), serde_json::json!({"lines": 0, "bytes": 0}));
    }

    #[test]
    fn small_diffs_are_whole_files_and_big_ones_the_changed_lines() {
        let p = PathBuf::from("/w/a.txt");
        assert_eq!(
            file_diff(p.clone(), None, "new\n".into()),
            ToolContent::Diff {
                path: p.clone(),
                old_text: None,
                new_text: "new\n".into()
            }
        );
        let old: String = (0..40_000).map(|i| format!("line {i}\n")).collect();
        let new = old.replace("line 20000\n", "changed\nlines\n");
        let ToolContent::Diff {
            old_text, new_text, ..
        } = file_diff(p, Some(old), new)
        else {
            panic!()
        };
        assert_eq!(
            old_text.as_deref(),
            Some(
                "line 19997\nline 19998\nline 19999\nline 20000\nline 20001\nline 20002\nline 20003\n"
            )
        );
        assert_eq!(
            new_text,
            "line 19997\nline 19998\nline 19999\nchanged\nlines\nline 20001\nline 20002\nline 20003\n"
        );
    }

    #[test]
    fn changed_region_at_the_edges() {
        assert_eq!(
            changed_region("a\nb\n", "a\nb\nc\n"),
            ("a\nb\n", "a\nb\nc\n")
        );
        assert_eq!(changed_region("x\n", "y\n"), ("x\n", "y\n"));
        assert_eq!(changed_region("same\n", "same\n"), ("same\n", "same\n"));
    }
}

#[cfg(test)]
mod markdown_tests {
    use super::markdown_paragraphs;

    #[test]
    fn lines_become_paragraphs_lists_and_fences_stay() {
        assert_eq!(
            markdown_paragraphs(
                "MCP server `s` failed to start:\nno config\n- a\n- b\n```\nx\ny\n```\nend"
            ),
            "MCP server `s` failed to start:\n\nno config\n\n- a\n- b\n\n```\nx\ny\n```\n\nend"
        );
        assert_eq!(markdown_paragraphs("one line"), "one line");
        assert_eq!(markdown_paragraphs("a\n\nb"), "a\n\nb");
        assert_eq!(markdown_paragraphs("1. x\n2. y"), "1. x\n2. y");
    }
}
