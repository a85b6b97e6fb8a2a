//! How tool results are shown to the user (`docs/tools.md`). Editors render tool content as Markdown,
//! so output goes in fenced code blocks that nothing inside can close, and prose stays outside.
//! What the model receives is built elsewhere and does not change.

use std::path::Path;

use serde_json::Value;

use crate::content::{ToolContent, language_for};
use crate::display::{fenced, inline_code};
use crate::exec::CommandOutput;
use crate::paths::resolve;

/// Lines of a long command's output shown from its start, and from its end.
pub const HEAD_LINES: usize = 40;
pub const TAIL_LINES: usize = 40;

/// Whether [`file_tool_result`] renders `tool`'s results.
pub(crate) fn renders(tool: &str) -> bool {
    matches!(tool, "read" | "grep" | "find" | "ls")
}

/// The editor's view of a finished built-in file tool, from the text the model got; `None`
/// for tools whose text is shown as it is.
pub(crate) fn file_tool_result(
    tool: &str,
    input: &Value,
    cwd: &Path,
    text: &str,
) -> Option<Vec<ToolContent>> {
    let shown = match tool {
        "read" => read_result(input, cwd, text),
        "grep" | "find" | "ls" => fenced(text, ""),
        _ => return None,
    };
    Some(vec![ToolContent::Text { text: shown.into() }])
}

/// A `read` page: the file's lines (without the numbers the model gets) in a block of the
/// file's language, and the paging note after it.
fn read_result(input: &Value, cwd: &Path, text: &str) -> String {
    let mut code = String::with_capacity(text.len());
    let mut notes = Vec::new();
    for line in text.lines() {
        match numbered(line) {
            Some(content) => {
                code.push_str(content);
                code.push('\n');
            }
            None if !line.trim().is_empty() => notes.push(line.trim()),
            None => {}
        }
    }
    if code.is_empty() {
        // Nothing but prose ("x is empty."): shown as it is.
        return text.to_owned();
    }
    let language = input
        .get("path")
        .and_then(Value::as_str)
        .map_or("", |p| language_for(&resolve(cwd, p)));
    let mut out = fenced(&code, language);
    for note in notes {
        out.push_str("\n\n");
        out.push_str(note);
    }
    out
}

/// The content of a `read` line `"{number:>6}\t{content}"`.
fn numbered(line: &str) -> Option<&str> {
    let (number, content) = line.split_once('\t')?;
    let number = number.trim_start();
    (!number.is_empty() && number.bytes().all(|b| b.is_ascii_digit())).then_some(content)
}

/// A finished command: its output in a block (head and tail, with a note naming the spill file,
/// when it was cut), then how it ended on a line of its own. `tail` is the most recent output
/// the tool kept while streaming.
pub(crate) fn command_result(out: &CommandOutput, ending: &str, tail: &str) -> String {
    let mut text = String::new();
    if out.excerpt.is_empty() && out.total_bytes == 0 {
        text.push_str("(no output)");
    } else if out.truncated {
        let head = first_lines(&out.excerpt, HEAD_LINES);
        let tail = last_lines(tail, TAIL_LINES);
        let shown = (head.lines().count() + tail.lines().count()) as u64;
        text.push_str(&fenced(head, ""));
        text.push_str(&format!(
            "\n\n… {} more lines; the full output ({} lines, {} bytes) is in {}\n\n",
            out.total_lines.saturating_sub(shown),
            out.total_lines,
            out.total_bytes,
            inline_code(&out.spill_path.display().to_string()),
        ));
        text.push_str(&fenced(tail, ""));
    } else {
        text.push_str(&fenced(&out.excerpt, ""));
    }
    text.push_str("\n\n");
    text.push_str(ending);
    text
}

/// Output streaming in while a command runs.
pub(crate) fn command_progress(recent: &str, earlier_omitted: bool) -> String {
    let block = fenced(recent, "");
    if earlier_omitted {
        format!("… earlier output omitted\n\n{block}")
    } else {
        block
    }
}

fn first_lines(text: &str, n: usize) -> &str {
    let end = text
        .match_indices('\n')
        .nth(n.saturating_sub(1))
        .map_or(text.len(), |(i, _)| i + 1);
    &text[..end]
}

fn last_lines(text: &str, n: usize) -> &str {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let start = body
        .rmatch_indices('\n')
        .nth(n.saturating_sub(1))
        .map_or(0, |(i, _)| i + 1);
    &text[start..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::Exit;
    use serde_json::json;
    use std::time::Duration;

    fn output(excerpt: &str, truncated: bool, total_lines: u64) -> CommandOutput {
        CommandOutput {
            exit: Exit::Code(1),
            excerpt: excerpt.into(),
            truncated,
            total_bytes: excerpt.len() as u64,
            total_lines,
            spill_path: "/spill/call_1.out".into(),
            duration: Duration::from_millis(5),
            stderr: String::new(),
        }
    }

    #[test]
    fn command_output_is_fenced_and_the_exit_code_stands_alone() {
        let out = output("# not a heading\n```\n", false, 2);
        assert_eq!(
            command_result(&out, "Exit code 1", ""),
            "````\n# not a heading\n```\n````\n\nExit code 1"
        );
        assert_eq!(
            command_result(&output("", false, 0), "Exit code 0", ""),
            "(no output)\n\nExit code 0"
        );
    }

    #[test]
    fn long_output_shows_head_and_tail_and_names_the_spill_file() {
        let all: String = (1..=1000).map(|i| format!("{i}\n")).collect();
        let excerpt = first_lines(&all, 200);
        let mut out = output(excerpt, true, 1000);
        out.total_bytes = all.len() as u64;
        let shown = command_result(&out, "Exit code 1", &all[all.len() - 500..]);
        let head: String = (1..=40).map(|i| format!("{i}\n")).collect();
        let tail: String = (961..=1000).map(|i| format!("{i}\n")).collect();
        assert_eq!(
            shown,
            format!(
                "```\n{head}```\n\n… 920 more lines; the full output (1000 lines, 3893 bytes) is in `/spill/call_1.out`\n\n```\n{tail}```\n\nExit code 1"
            )
        );
    }

    #[test]
    fn reads_drop_line_numbers_and_take_the_files_language() {
        let model = "     1\tfn main() {}\n     2\t# x\n\n(showing lines 1-2 of 9; use offset=3 to read more)\n";
        let shown = file_tool_result("read", &json!({"path": "src/a.rs"}), Path::new("/w"), model);
        assert_eq!(
            shown,
            Some(vec![ToolContent::Text {
                text: "```rust\nfn main() {}\n# x\n```\n\n(showing lines 1-2 of 9; use offset=3 to read more)".into()
            }])
        );
        let empty = file_tool_result(
            "read",
            &json!({"path": "e"}),
            Path::new("/w"),
            "e is empty.",
        );
        assert_eq!(
            empty,
            Some(vec![ToolContent::Text {
                text: "e is empty.".into()
            }])
        );
        assert_eq!(
            file_tool_result("mcp__x", &json!({}), Path::new("/w"), "t"),
            None
        );
    }

    #[test]
    fn line_helpers() {
        assert_eq!(first_lines("a\nb\nc", 2), "a\nb\n");
        assert_eq!(first_lines("a", 2), "a");
        assert_eq!(last_lines("a\nb\nc\n", 2), "b\nc\n");
        assert_eq!(last_lines("a\nb", 5), "a\nb");
    }
}
