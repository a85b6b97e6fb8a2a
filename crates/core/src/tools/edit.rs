//! `edit`: replace an exact piece of a file (Claude Code's `Edit` / `str_replace`). Exactness is
//! the point: a unique, literal match can't silently change the wrong place, and when it fails the
//! model is told precisely why so it can retry with the right text.

use std::path::Path;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::content::{ToolContent, ToolKind, file_diff};
use crate::model::ToolSpec;
use crate::paths::{display, resolve};
use crate::tools::output::{blocking, parse_input, plural, truncate_line};
use crate::tools::write::{input_path, path_description};
use crate::tools::{
    Access, CallDescription, Tool, ToolContext, ToolError, ToolOutput, input_schema,
};

pub struct Edit;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    // No descriptions: the names and the tool's description say it.
    path: String,
    old_string: String,
    new_string: String,
    /// Replace every occurrence.
    #[serde(default)]
    replace_all: bool,
}

/// `describe` reads the file to point the editor at the changed line; past this size it doesn't.
const DESCRIBE_READ_LIMIT: u64 = 4 * 1024 * 1024;

impl Tool for Edit {
    fn name(&self) -> &str {
        "edit"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "edit".into(),
            description: "Replace text in a file. `old_string` must match exactly, whitespace \
                included (without `read`'s line numbers), and occur once unless `replace_all`: \
                include enough surrounding lines to make it unique."
                .into(),
            input_schema: input_schema::<Input>(),
        }
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn describe(&self, input: &Value, cwd: &Path) -> CallDescription {
        let mut desc = path_description("Edit", input, cwd);
        if let (Some(loc), Some(old)) = (
            desc.locations.first_mut(),
            input.get("old_string").and_then(Value::as_str),
        ) {
            loc.line = first_match_line(&loc.path, old);
        }
        desc
    }

    fn access(&self, input: &Value, cwd: &Path) -> Access {
        Access::Write {
            paths: input_path(input, cwd).into_iter().collect(),
        }
    }

    fn pointless(&self, input: &Value) -> Option<String> {
        let input: Input = serde_json::from_value(input.clone()).ok()?;
        no_change(&input)
    }

    fn preview(&self, input: &Value, cwd: &Path) -> Vec<ToolContent> {
        let Ok(parsed) = serde_json::from_value::<Input>(input.clone()) else {
            return vec![];
        };
        let path = resolve(cwd, &parsed.path);
        let Some(old) = std::fs::read(&path)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
        else {
            return vec![];
        };
        match apply(
            &old,
            &parsed.old_string,
            &parsed.new_string,
            parsed.replace_all,
        ) {
            Ok(applied) => vec![file_diff(path, Some(old), applied.new_text)],
            Err(e) => vec![ToolContent::Text {
                text: format!(
                    "This edit will fail: {}",
                    e.message(&display(&path, cwd), &old, &parsed.old_string)
                )
                .into(),
            }],
        }
    }

    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let input: Input = parse_input("edit", input)?;
            let path = resolve(&ctx.cwd, &input.path);
            let shown = display(&path, &ctx.cwd);
            let written = path.clone();
            let editor = crate::tools::delegated_writer(ctx, &path);
            let commit = if editor.is_some() {
                Commit::Editor
            } else {
                Commit::Disk
            };
            let (p, s) = (path.clone(), shown.clone());
            let (mut out, new_text) = blocking(move || edit_file(&p, &s, &input, commit)).await?;
            if let Some(client) = &editor {
                crate::tools::write_through(
                    ctx,
                    client.as_ref(),
                    &path,
                    &shown,
                    &new_text,
                    crate::fsops::Parents::MustExist,
                )
                .await?;
            }
            ctx.recorder.wrote(&written);
            let changed = (path.as_path(), shown.as_str());
            crate::tools::diagnostics::after_edit(ctx.lsp.as_ref(), changed, &new_text, &mut out)
                .await;
            Ok(out)
        })
    }
}

/// Why an edit changes nothing whatever the file holds.
fn no_change(input: &Input) -> Option<String> {
    if input.old_string.is_empty() {
        return Some(
            "old_string is empty. To create a file or replace all of its content use `write`."
                .into(),
        );
    }
    (input.old_string == input.new_string)
        .then(|| "old_string and new_string are the same, so there is nothing to change.".into())
}

/// Who writes an edit's result: this process, or the editor (`fs_delegation = "review"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Commit {
    Disk,
    Editor,
}

/// Applies the edit to the file's text, writes it when `commit` is [`Commit::Disk`], and
/// returns what the model and the editor are shown, and the new text.
fn edit_file(
    path: &Path,
    shown: &str,
    input: &Input,
    commit: Commit,
) -> Result<(ToolOutput, String), ToolError> {
    let respond = ToolError::RespondToModel;
    if let Some(why) = no_change(input) {
        return Err(respond(why));
    }
    let bytes = crate::tools::write::read_existing(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => respond(format!(
            "{shown} does not exist. Use `write` to create it, or `find` to locate the file."
        )),
        std::io::ErrorKind::IsADirectory => respond(format!("{shown} is a directory.")),
        _ => respond(format!("cannot read {shown}: {e}")),
    })?;
    let old_text = String::from_utf8(bytes).map_err(|_| {
        respond(format!(
            "{shown} is not valid UTF-8 text; `edit` only changes text files."
        ))
    })?;
    let applied = apply(
        &old_text,
        &input.old_string,
        &input.new_string,
        input.replace_all,
    )
    .map_err(|e| respond(e.message(shown, &old_text, &input.old_string)))?;
    if commit == Commit::Disk {
        crate::fsops::open_write(path, crate::fsops::Parents::MustExist)
            .and_then(|mut f| std::io::Write::write_all(&mut f, applied.new_text.as_bytes()))
            .map_err(|e| respond(format!("cannot write {shown}: {e}")))?;
    }

    let text = format!(
        "Edited {shown}: replaced {} ({}).\n{}",
        plural(applied.lines.len(), "occurrence"),
        line_list(&applied.lines),
        snippet(&applied.new_text, applied.lines[0], &input.new_string),
    );
    let output = ToolOutput {
        text,
        content: vec![file_diff(
            path.to_owned(),
            Some(old_text),
            applied.new_text.clone(),
        )],
    };
    Ok((output, applied.new_text))
}

/// A successful replacement.
#[derive(Debug, PartialEq)]
struct Applied {
    new_text: String,
    /// 1-based lines where each replaced occurrence started (non-empty, ascending).
    lines: Vec<usize>,
}

#[derive(Debug, PartialEq)]
enum Mismatch {
    NotFound,
    Ambiguous { lines: Vec<usize> },
}

impl Mismatch {
    fn message(&self, shown: &str, content: &str, old: &str) -> String {
        match self {
            Mismatch::NotFound => {
                let mut msg = format!(
                    "old_string was not found in {shown}. The file's content differs from \
                     old_string: check whitespace, indentation and line endings, and that you \
                     left out the line-number prefix `read` shows. `read` the file again if it \
                     may have changed."
                );
                if let Some(hint) = closest(content, old) {
                    msg.push_str("\n\n");
                    msg.push_str(&hint);
                }
                msg
            }
            Mismatch::Ambiguous { lines } => format!(
                "old_string occurs {} times in {shown} ({}). Include more surrounding lines \
                 in old_string to make it unique, or set replace_all to true to replace every \
                 occurrence.",
                lines.len(),
                line_list(lines)
            ),
        }
    }
}

/// Replaces `old` by `new` in `content`. A CRLF file keeps its line endings: models send `\n`, so
/// their strings are tried with `\r\n` first (and as sent, for files with mixed endings).
fn apply(content: &str, old: &str, new: &str, replace_all: bool) -> Result<Applied, Mismatch> {
    let mut candidates: Vec<(String, String)> = Vec::with_capacity(2);
    if uses_crlf(content) {
        candidates.push((to_crlf(old), to_crlf(new)));
    } else if old.contains("\r\n") {
        candidates.push((old.replace("\r\n", "\n"), new.replace("\r\n", "\n")));
    }
    candidates.push((old.to_owned(), new.to_owned()));

    for (old, new) in &candidates {
        let starts: Vec<usize> = content
            .match_indices(old.as_str())
            .map(|(i, _)| i)
            .collect();
        if starts.is_empty() {
            continue;
        }
        let lines = line_numbers(content, &starts);
        if starts.len() > 1 && !replace_all {
            return Err(Mismatch::Ambiguous { lines });
        }
        let new_text = content.replace(old.as_str(), new);
        return Ok(Applied { new_text, lines });
    }
    Err(Mismatch::NotFound)
}

fn uses_crlf(content: &str) -> bool {
    let crlf = content.matches("\r\n").count();
    crlf > 0 && crlf * 2 >= content.matches('\n').count()
}

fn to_crlf(s: &str) -> String {
    s.replace("\r\n", "\n").replace('\n', "\r\n")
}

/// 1-based line numbers of ascending byte offsets, in one pass.
fn line_numbers(content: &str, starts: &[usize]) -> Vec<usize> {
    let mut out = Vec::with_capacity(starts.len());
    let mut line = 1;
    let mut pos = 0;
    for &s in starts {
        line += content.as_bytes()[pos..s]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        pos = s;
        out.push(line);
    }
    out
}

fn line_list(lines: &[usize]) -> String {
    const SHOWN: usize = 20;
    let mut s = lines
        .iter()
        .take(SHOWN)
        .map(|l| l.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if lines.len() > SHOWN {
        s.push_str(&format!(", … {} more", lines.len() - SHOWN));
    }
    if lines.len() == 1 {
        format!("line {s}")
    } else {
        format!("lines {s}")
    }
}

/// The edited region with a little context, numbered like `read`, so the model can check the
/// result without reading the file again.
fn snippet(new_text: &str, first_line: usize, new: &str) -> String {
    const CONTEXT: usize = 3;
    const MAX_LINES: usize = 30;
    let changed = new.matches('\n').count() + 1;
    let from = first_line.saturating_sub(CONTEXT).max(1);
    let to = (first_line + changed + CONTEXT - 1).min(from + MAX_LINES - 1);
    new_text
        .lines()
        .enumerate()
        .skip(from - 1)
        .take(to + 1 - from)
        .map(|(i, l)| format!("{:>6}\t{}\n", i + 1, truncate_line(l, 500)))
        .collect()
}

/// A hint for a failed match: the same lines with other whitespace, or the most similar line.
/// Both are linear in the file, so they stay cheap.
fn closest(content: &str, old: &str) -> Option<String> {
    const SCAN_LINES: usize = 50_000;
    let file: Vec<&str> = content.lines().take(SCAN_LINES).collect();
    let wanted: Vec<&str> = old.lines().map(str::trim).collect();
    let wanted = trim_blank_ends(&wanted);
    if wanted.is_empty() {
        return None;
    }
    let n = wanted.len();
    if n <= file.len() {
        for start in 0..=file.len() - n {
            if (0..n).all(|k| file[start + k].trim() == wanted[k]) {
                let shown: String = (start..start + n)
                    .take(10)
                    .map(|i| format!("{:>6}\t{}\n", i + 1, truncate_line(file[i], 300)))
                    .collect();
                let range = if n > 1 {
                    format!("lines {}-{}", start + 1, start + n)
                } else {
                    format!("line {}", start + 1)
                };
                return Some(format!(
                    "The same text, with different whitespace or indentation, is at {range}. \
                     Copy it exactly as it is in the file:\n{shown}"
                ));
            }
        }
    }
    let first = wanted[0];
    let (best, score) = file
        .iter()
        .enumerate()
        .map(|(i, l)| (i, similarity(first, l.trim())))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    (score >= 0.5).then(|| {
        format!(
            "The line most similar to the first line of old_string is line {}:\n{:>6}\t{}\n",
            best + 1,
            best + 1,
            truncate_line(file[best], 300)
        )
    })
}

fn trim_blank_ends<'s>(lines: &'s [&'s str]) -> &'s [&'s str] {
    let start = lines
        .iter()
        .position(|l| !l.is_empty())
        .unwrap_or(lines.len());
    let end = lines
        .iter()
        .rposition(|l| !l.is_empty())
        .map_or(start, |i| i + 1);
    &lines[start..end]
}

/// Dice coefficient of character bigrams: 1.0 for equal strings, near 0 for unrelated ones.
fn similarity(a: &str, b: &str) -> f64 {
    fn bigrams(s: &str) -> Vec<(char, char)> {
        let chars: Vec<char> = s.chars().collect();
        let mut v: Vec<(char, char)> = chars.windows(2).map(|w| (w[0], w[1])).collect();
        v.sort_unstable();
        v
    }
    if a == b {
        return 1.0;
    }
    let (x, y) = (bigrams(a), bigrams(b));
    if x.is_empty() || y.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < x.len() && j < y.len() {
        match x[i].cmp(&y[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    (2 * common) as f64 / (x.len() + y.len()) as f64
}

/// The line of the first occurrence of `old` in the file at `path`, for the editor's location.
fn first_match_line(path: &Path, old: &str) -> Option<u32> {
    if old.is_empty() || std::fs::metadata(path).ok()?.len() > DESCRIBE_READ_LIMIT {
        return None;
    }
    let content = std::fs::read_to_string(path).ok()?;
    let applied = apply(&content, old, "", true).ok()?;
    applied.lines.first().and_then(|&l| u32::try_from(l).ok())
}

#[cfg(test)]
mod tests;
