//! Where a command's output goes: to the caller as it arrives, whole to the spill file (up to a
//! cap), and into an excerpt bounded by `max_bytes`/`max_lines` — so a command printing a gigabyte
//! costs the agent a read buffer, not a gigabyte.
//!
//! The spill file is the agent's own: created new (`O_EXCL`, so never an existing file and never
//! through a symlink planted under its name) under a name the agent makes up, not one derived
//! from a model's or a provider's call id (`ferrite_core::exec::create_spill_file`). The command writes
//! only to its pipes; the sandbox never gets write access to the spill directory.

use std::path::{Path, PathBuf};

use ferrite_core::spill_budget::{Hold, SpillBudget};
use tokio::fs::File;
use tokio::io::AsyncWriteExt;

/// Which pipe a chunk came from: each has its own partial UTF-8 character in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    Stdout,
    Stderr,
}

/// Whether the caller should keep the command running after a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pushed {
    Continue,
    /// The spill file reached its cap: the command must be killed.
    SpillLimitReached,
}

/// How much of the output's first bytes is kept raw, to recognise the sandbox helper's own
/// failure message whatever `max_bytes` is.
const HEAD_BYTES: usize = 512;

pub(crate) struct OutputSink<'a> {
    path: PathBuf,
    on_output: &'a (dyn Fn(&str) + Send + Sync),
    spill: Option<File>,
    spill_limit: u64,
    spilled: u64,
    /// The session's budget for all spilled output, and our claim on the spill file.
    budget: Option<(SpillBudget, Hold)>,
    /// The budget refused room: the command is stopped for that, not for its own cap.
    budget_spent: bool,
    /// Bytes of an unfinished UTF-8 character at the end of the last chunk of each stream, held
    /// back so that chunks handed to `on_output` split on character boundaries.
    pending: [Vec<u8>; 2],
    excerpt: String,
    excerpt_lines: usize,
    /// Standard error kept apart from the excerpt (bounded by `max_bytes`), when asked for.
    stderr: Option<String>,
    max_bytes: usize,
    max_lines: usize,
    truncated: bool,
    head: Vec<u8>,
    total_bytes: u64,
    newlines: u64,
    ends_with_newline: bool,
    notes: Vec<String>,
}

/// Everything the sink learned, once the command is over.
pub(crate) struct SinkSummary {
    /// The spill file.
    pub(crate) path: PathBuf,
    pub(crate) excerpt: String,
    pub(crate) truncated: bool,
    pub(crate) total_bytes: u64,
    pub(crate) total_lines: u64,
    pub(crate) head: Vec<u8>,
    pub(crate) stderr: String,
}

impl<'a> OutputSink<'a> {
    /// Creates a new spill file in `spill_dir` (creating the directory, private to the user).
    pub(crate) async fn create(
        spill_dir: &Path,
        spill_limit: u64,
        max_bytes: usize,
        max_lines: usize,
        on_output: &'a (dyn Fn(&str) + Send + Sync),
    ) -> std::io::Result<Self> {
        let dir = spill_dir.to_owned();
        let (path, file) =
            tokio::task::spawn_blocking(move || ferrite_core::exec::create_spill_file(&dir, "out"))
                .await
                .map_err(std::io::Error::other)??;
        let spill = File::from_std(file);
        Ok(OutputSink {
            path,
            on_output,
            spill: Some(spill),
            spill_limit,
            spilled: 0,
            budget: None,
            budget_spent: false,
            pending: [Vec::new(), Vec::new()],
            excerpt: String::new(),
            excerpt_lines: 0,
            stderr: None,
            max_bytes,
            max_lines,
            truncated: false,
            head: Vec::new(),
            total_bytes: 0,
            newlines: 0,
            ends_with_newline: false,
            notes: Vec::new(),
        })
    }

    /// Counts what is spilled against the session's `budget`; the spill file is never removed
    /// to make room while this sink writes it.
    pub(crate) fn with_budget(mut self, budget: Option<SpillBudget>) -> Self {
        self.budget = budget.map(|b| {
            let hold = b.hold(&self.path);
            (b, hold)
        });
        self
    }

    /// The session's budget stopped the output (rather than the command's own cap): its size.
    pub(crate) fn budget_spent(&self) -> Option<u64> {
        self.budget
            .as_ref()
            .filter(|_| self.budget_spent)
            .map(|(b, _)| b.max())
    }

    /// Keeps standard error apart from the excerpt (both still stream and spill together).
    pub(crate) fn with_separate_stderr(mut self, separate: bool) -> Self {
        self.stderr = separate.then(String::new);
        self
    }

    pub(crate) async fn push(&mut self, stream: Stream, bytes: &[u8]) -> Pushed {
        if bytes.is_empty() {
            return Pushed::Continue;
        }
        self.total_bytes += bytes.len() as u64;
        self.newlines += bytes.iter().filter(|&&b| b == b'\n').count() as u64;
        self.ends_with_newline = bytes.last() == Some(&b'\n');
        if self.head.len() < HEAD_BYTES {
            let take = (HEAD_BYTES - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
        }

        let pushed = self.spill(bytes).await;

        let pending = &mut self.pending[stream as usize];
        pending.extend_from_slice(bytes);
        let complete = complete_utf8_prefix(pending);
        let rest = pending.split_off(complete);
        let whole = std::mem::replace(pending, rest);
        let text = String::from_utf8_lossy(&whole);
        self.emit(stream, &text);
        pushed
    }

    /// Flushes held-back partial characters (lossily) and the spill file, and says what was seen.
    pub(crate) async fn finish(mut self) -> SinkSummary {
        for stream in [Stream::Stdout, Stream::Stderr] {
            let rest = std::mem::take(&mut self.pending[stream as usize]);
            if !rest.is_empty() {
                self.emit(stream, &String::from_utf8_lossy(&rest));
            }
        }
        if let Some(mut file) = self.spill.take()
            && let Err(err) = file.flush().await
        {
            self.notes
                .push(format!("[ferrite: could not write the spill file: {err}]"));
        }
        let mut excerpt = self.excerpt;
        for note in &self.notes {
            // Notes go after the excerpt whatever its caps: they are short and explain why the
            // output stops where it does.
            if !excerpt.is_empty() && !excerpt.ends_with('\n') {
                excerpt.push('\n');
            }
            excerpt.push_str(note);
            excerpt.push('\n');
        }
        let total_lines =
            self.newlines + u64::from(self.total_bytes > 0 && !self.ends_with_newline);
        SinkSummary {
            path: self.path,
            excerpt,
            truncated: self.truncated,
            total_bytes: self.total_bytes,
            total_lines,
            head: self.head,
            stderr: self.stderr.unwrap_or_default(),
        }
    }

    /// Adds a line of ferrite's own (e.g. why the command was killed) to the streamed output and
    /// the end of the excerpt.
    pub(crate) fn note(&mut self, note: String) {
        (self.on_output)(&format!("\n{note}\n"));
        self.notes.push(note);
    }

    async fn spill(&mut self, bytes: &[u8]) -> Pushed {
        let Some(file) = self.spill.as_mut() else {
            return Pushed::Continue;
        };
        let room = self.spill_limit.saturating_sub(self.spilled);
        let mut take = usize::try_from(room).unwrap_or(usize::MAX).min(bytes.len());
        if let Some((budget, _)) = &self.budget
            && !budget.reserve(take as u64)
        {
            self.budget_spent = true;
            take = 0;
        }
        if let Err(err) = file.write_all(&bytes[..take]).await {
            // A full disk should not end the command: the model still gets the excerpt.
            self.notes
                .push(format!("[ferrite: could not write the spill file: {err}]"));
            self.spill = None;
            return Pushed::Continue;
        }
        self.spilled += take as u64;
        if take < bytes.len() {
            if let Err(err) = file.flush().await {
                self.notes
                    .push(format!("[ferrite: could not write the spill file: {err}]"));
            }
            self.spill = None;
            return Pushed::SpillLimitReached;
        }
        Pushed::Continue
    }

    fn emit(&mut self, stream: Stream, text: &str) {
        if text.is_empty() {
            return;
        }
        (self.on_output)(text);
        if let (Stream::Stderr, Some(kept)) = (stream, self.stderr.as_mut()) {
            let mut cut = text.len().min(self.max_bytes.saturating_sub(kept.len()));
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            kept.push_str(&text[..cut]);
            return;
        }
        if self.truncated {
            return;
        }
        let keep = self.excerpt_cut(text);
        self.excerpt.push_str(&text[..keep]);
        if keep < text.len() {
            self.truncated = true;
        }
    }

    /// How much of `text` still fits in the excerpt: up to the line cap, then the byte cap, on a
    /// character boundary. Counts the newlines it keeps.
    fn excerpt_cut(&mut self, text: &str) -> usize {
        let byte_room = self.max_bytes.saturating_sub(self.excerpt.len());
        let mut cut = text.len().min(byte_room);
        if self.excerpt_lines >= self.max_lines {
            cut = 0;
        } else {
            let lines_left = self.max_lines - self.excerpt_lines;
            if let Some((pos, _)) = text.match_indices('\n').nth(lines_left - 1) {
                cut = cut.min(pos + 1);
            }
        }
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        self.excerpt_lines += text[..cut].matches('\n').count();
        cut
    }
}

/// The length of the longest prefix of `bytes` that does not end inside a UTF-8 character that
/// the next chunk may complete. Invalid bytes count as complete (they decode to U+FFFD).
fn complete_utf8_prefix(bytes: &[u8]) -> usize {
    let len = bytes.len();
    // A character is at most 4 bytes: only the last 3 can be the start of an unfinished one.
    for back in 1..=3.min(len) {
        let b = bytes[len - back];
        if b & 0b1100_0000 == 0b1000_0000 {
            continue; // a continuation byte: look further back for the lead byte
        }
        let needed = match b {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if needed > back { len - back } else { len };
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_prefix_holds_back_only_unfinished_characters() {
        let euro = "€".as_bytes(); // 3 bytes
        assert_eq!(complete_utf8_prefix(b"abc"), 3);
        assert_eq!(complete_utf8_prefix(&euro[..1]), 0);
        assert_eq!(complete_utf8_prefix(&euro[..2]), 0);
        assert_eq!(complete_utf8_prefix(euro), 3);
        let mut s = b"ab".to_vec();
        s.extend_from_slice(&euro[..2]);
        assert_eq!(complete_utf8_prefix(&s), 2);
        // Stray continuation bytes are not held back forever.
        assert_eq!(complete_utf8_prefix(&[0x80, 0x80, 0x80, 0x80]), 4);
        assert_eq!(complete_utf8_prefix(&[]), 0);
    }

    async fn sink_run(
        max_bytes: usize,
        max_lines: usize,
        chunks: &[&[u8]],
    ) -> (SinkSummary, Vec<String>, Vec<u8>) {
        let dir = tempfile::tempdir().unwrap();
        let seen = std::sync::Mutex::new(Vec::new());
        let on_output = |s: &str| seen.lock().unwrap().push(s.to_owned());
        let mut sink = OutputSink::create(
            &dir.path().join("sub"),
            u64::MAX,
            max_bytes,
            max_lines,
            &on_output,
        )
        .await
        .unwrap();
        for chunk in chunks {
            assert_eq!(sink.push(Stream::Stdout, chunk).await, Pushed::Continue);
        }
        let summary = sink.finish().await;
        let spilled = std::fs::read(&summary.path).unwrap();
        (summary, seen.into_inner().unwrap(), spilled)
    }

    #[tokio::test]
    async fn every_run_gets_a_new_spill_file() {
        let dir = tempfile::tempdir().unwrap();
        let on_output = |_: &str| {};
        let mut paths = std::collections::HashSet::new();
        for _ in 0..3 {
            let mut sink = OutputSink::create(dir.path(), u64::MAX, 10, 10, &on_output)
                .await
                .unwrap();
            sink.push(Stream::Stdout, b"text").await;
            let summary = sink.finish().await;
            assert!(summary.path.starts_with(dir.path()));
            assert_eq!(std::fs::read(&summary.path).unwrap(), b"text");
            assert!(paths.insert(summary.path), "names are unique");
        }
    }

    #[tokio::test]
    async fn split_characters_are_streamed_whole() {
        let text = "a€b";
        let bytes = text.as_bytes();
        let (summary, seen, spilled) =
            sink_run(100, 100, &[&bytes[..2], &bytes[2..4], &bytes[4..]]).await;
        assert_eq!(seen, vec!["a", "€", "b"]);
        assert_eq!(summary.excerpt, text);
        assert_eq!(spilled, bytes);
        assert!(!summary.truncated);
        assert_eq!(summary.total_lines, 1);
    }

    #[tokio::test]
    async fn excerpt_stops_at_the_line_cap_exactly() {
        let (summary, _, _) = sink_run(100, 2, &[b"one\ntwo\n"]).await;
        assert_eq!(summary.excerpt, "one\ntwo\n");
        assert!(!summary.truncated);
        let (summary, _, spilled) = sink_run(100, 2, &[b"one\ntwo\n", b"three\n"]).await;
        assert_eq!(summary.excerpt, "one\ntwo\n");
        assert!(summary.truncated);
        assert_eq!(summary.total_lines, 3);
        assert_eq!(spilled, b"one\ntwo\nthree\n");
    }

    #[tokio::test]
    async fn excerpt_byte_cap_cuts_on_a_character_boundary() {
        let (summary, _, _) = sink_run(4, 100, &["ab€".as_bytes()]).await;
        assert_eq!(summary.excerpt, "ab");
        assert!(summary.truncated);
        assert_eq!(summary.total_bytes, 5);
    }
}
