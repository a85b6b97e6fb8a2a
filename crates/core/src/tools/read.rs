//! `read`: a text file with line numbers (`cat -n` style), paged so a large file never floods the
//! context: the model asks for the next page with `offset`.

use std::io::{BufRead, BufReader, Read as _};
use std::path::Path;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::content::{Location, ToolKind};
use crate::model::ToolSpec;
use crate::paths::{display, resolve};
use crate::tools::output::{blocking, floor_char_boundary, parse_input};
use crate::tools::{
    Access, CallDescription, OutputLimits, Tool, ToolContext, ToolError, ToolOutput, input_schema,
};

/// Lines shown when the model gives no `limit`.
pub const DEFAULT_LIMIT: usize = 2_000;
/// Longer lines are cut: a minified bundle would otherwise fill the page with one line.
const MAX_LINE_BYTES: usize = 2_000;
/// How far past the page a file is read to count its lines.
const MAX_SCAN_BYTES: u64 = 256 * 1024 * 1024;
/// How much of the start of a file is checked for NUL bytes (git and ripgrep do the same).
const BINARY_PROBE: usize = 8 * 1024;

pub struct Read;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    // Named plainly: a description here would cost every request and say nothing more.
    path: String,
    /// First line (1-based).
    #[schemars(range(min = 1))]
    offset: Option<usize>,
    /// Lines to show.
    #[schemars(range(min = 1))]
    limit: Option<usize>,
}

impl Tool for Read {
    fn name(&self) -> &str {
        "read"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read".into(),
            description: format!(
                "Read a text file, lines numbered from 1 (`cat -n` style: the number and tab are \
                 not in the file). At most {DEFAULT_LIMIT} lines per call; page with `offset` and \
                 `limit`. Refuses binary files and directories."
            ),
            input_schema: input_schema::<Input>(),
        }
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn describe(&self, input: &Value, cwd: &Path) -> CallDescription {
        let Some(path) = input.get("path").and_then(Value::as_str) else {
            return CallDescription {
                title: "Read".into(),
                locations: vec![],
            };
        };
        let abs = resolve(cwd, path);
        let line = input
            .get("offset")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok());
        CallDescription {
            title: format!("Read {}", display(&abs, cwd)),
            locations: vec![Location { path: abs, line }],
        }
    }

    fn access(&self, input: &Value, cwd: &Path) -> Access {
        let paths = input
            .get("path")
            .and_then(Value::as_str)
            .map(|p| vec![resolve(cwd, p)])
            .unwrap_or_default();
        Access::Read { paths }
    }

    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let input: Input = parse_input("read", input)?;
            let path = resolve(&ctx.cwd, &input.path);
            let shown = display(&path, &ctx.cwd);
            let limits = ctx.limits;
            if let Some(mime) = images::image_type(&path) {
                // Waiting for another decode holds nothing: the file is opened once it is our turn.
                let turn = ctx.image_decodes.enter().await?;
                let out = blocking(move || {
                    let _turn = turn;
                    images::read_image(&path, &shown, mime)
                })
                .await?;
                if !ctx.model_images {
                    // Said plainly, rather than an image the model would be sent and refuse.
                    return Ok(ToolOutput {
                        text: format!(
                            "{} The model of this session does not take images, so it is not \
                             attached; ask the user to describe it, or switch to a model that \
                             takes images.",
                            out.text
                                .split(';')
                                .next()
                                .unwrap_or_default()
                                .trim_end()
                                .to_owned()
                                + "."
                        ),
                        content: vec![],
                    });
                }
                return Ok(out);
            }
            if let Some(client) = ctx.client_fs.as_ref()
                && ctx.recorder.read_from_client(
                    ctx.fs_delegation,
                    client.available(),
                    &path,
                    &ctx.roots,
                )
            {
                // The editor's buffer, unsaved changes included; the disk is the fallback.
                match client.read_text_file(ctx.recorder.session(), &path).await {
                    Ok(text) => {
                        let page =
                            blocking(move || page_of_text(text, &shown, &input, limits)).await?;
                        return Ok(ToolOutput {
                            text: page,
                            content: vec![],
                        });
                    }
                    Err(e) => {
                        tracing::warn!(path = %path.display(), error = %e, "the editor could not read a file; reading it from disk")
                    }
                }
            }
            let page = blocking(move || read_page(&path, &shown, &input, limits)).await?;
            // No `cap` here: the page is bounded by the limits already, and spilling a copy of a
            // file the model can page through itself would only waste disk.
            Ok(ToolOutput {
                text: page,
                content: vec![],
            })
        })
    }
}

fn read_page(
    path: &Path,
    shown: &str,
    input: &Input,
    limits: OutputLimits,
) -> Result<String, ToolError> {
    let respond = ToolError::RespondToModel;
    let file = crate::fsops::open_read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => respond(format!(
            "{shown} does not exist. Check the path, or use `find` to locate the file."
        )),
        std::io::ErrorKind::IsADirectory => respond(format!(
            "{shown} is a directory, not a file. Use `ls` to list its entries."
        )),
        _ => respond(format!("cannot read {shown}: {e}")),
    })?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut reader = BufReader::with_capacity(64 * 1024, file);

    let mut probe = Vec::with_capacity(BINARY_PROBE);
    (&mut reader)
        .take(BINARY_PROBE as u64)
        .read_to_end(&mut probe)
        .map_err(|e| respond(format!("cannot read {shown}: {e}")))?;
    if probe.contains(&0) {
        return Err(respond(format!(
            "{shown} is a binary file ({len} bytes); `read` only shows text."
        )));
    }
    let reader = BufReader::new(std::io::Cursor::new(probe).chain(reader));
    paginate(reader, shown, input, limits)
}

/// A page of a text the editor gave us (its buffer, possibly unsaved).
fn page_of_text(
    text: String,
    shown: &str,
    input: &Input,
    limits: OutputLimits,
) -> Result<String, ToolError> {
    paginate(
        std::io::Cursor::new(text.into_bytes()),
        shown,
        input,
        limits,
    )
}

/// Line `line_no` as shown, numbered: `buf` holds at most the start of a long line; `n` says
/// how long it really was.
fn numbered(line_no: usize, buf: &[u8], n: usize) -> String {
    let text = String::from_utf8_lossy(buf);
    let text = text.trim_end_matches('\n').trim_end_matches('\r');
    let ending = if buf.ends_with(b"\r\n") {
        2
    } else {
        usize::from(buf.ends_with(b"\n"))
    };
    let line_len = n - ending;
    let shown_line = if line_len > MAX_LINE_BYTES {
        let cut = floor_char_boundary(text, MAX_LINE_BYTES);
        format!("{}… [{} more bytes]", &text[..cut], line_len - cut)
    } else {
        text.to_owned()
    };
    format!("{line_no:>6}\t{shown_line}\n")
}

/// Numbered lines `offset..offset+limit` of `reader`, within the byte budget, with a footer
/// saying where to go on.
fn paginate<R: BufRead>(
    mut reader: R,
    shown: &str,
    input: &Input,
    limits: OutputLimits,
) -> Result<String, ToolError> {
    let respond = ToolError::RespondToModel;
    let first = input.offset.unwrap_or(1).max(1);
    let asked = input.limit.unwrap_or(DEFAULT_LIMIT).max(1);
    let limit = asked.min(limits.max_lines.max(1));
    let mut out = String::new();
    let mut line_no = 0usize;
    let mut last_shown = 0usize;
    // Set when the byte budget, not `limit`, ended the page: the footer says where to go on.
    let mut budget_hit = false;
    let mut buf = Vec::new();
    let mut scanned = 0u64;
    let mut total_known = true;
    loop {
        buf.clear();
        let n = read_line_capped(&mut reader, &mut buf, MAX_LINE_BYTES + 4)
            .map_err(|e| respond(format!("cannot read {shown}: {e}")))?;
        if n == 0 {
            break;
        }
        scanned += n as u64;
        if scanned > MAX_SCAN_BYTES && line_no >= first.saturating_add(limit) {
            // Counting the lines of a huge file would cost more than the page is worth.
            total_known = false;
            break;
        }
        line_no += 1;
        if line_no < first || line_no >= first.saturating_add(limit) || budget_hit {
            continue;
        }
        let line = numbered(line_no, &buf, n);
        // Leave room for the footer within the byte budget.
        if out.len() + line.len() + 200 > limits.max_bytes && last_shown >= first {
            budget_hit = true;
            continue;
        }
        out.push_str(&line);
        last_shown = line_no;
    }
    let total = line_no;
    if total == 0 {
        return Ok(format!("{shown} is empty."));
    }
    if first > total {
        return Err(respond(format!(
            "offset {first} is past the end of {shown}, which has {total} lines."
        )));
    }
    if first > 1 || last_shown < total || !total_known {
        let why = if budget_hit || (limit < asked && last_shown < total) {
            " (the output size limit was reached)"
        } else {
            ""
        };
        let of_total = if total_known {
            format!(" of {total}")
        } else {
            format!(" of more than {total}")
        };
        let more = if last_shown < total || !total_known {
            format!("; use offset={} to read more", last_shown + 1)
        } else {
            String::new()
        };
        out.push_str(&format!(
            "\n(showing lines {first}-{last_shown}{of_total}{why}{more})\n"
        ));
    }
    Ok(out)
}

/// Reads one line (through `\n`) from `reader`, keeping at most `cap` bytes of it in `buf` and
/// discarding the rest, so a file without newlines cannot fill memory. Returns the bytes consumed.
fn read_line_capped<R: BufRead>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<usize> {
    let mut consumed = 0usize;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(consumed);
        }
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = cap.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..take.min(room)]);
        reader.consume(take);
        consumed += take;
        if done {
            return Ok(consumed);
        }
    }
}

mod images;

pub use images::{DecodeGate, MAX_DECODE_BYTES, MAX_PIXELS};

#[cfg(test)]
mod tests;
