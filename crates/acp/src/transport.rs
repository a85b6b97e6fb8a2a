//! Newline-delimited JSON over byte streams, hardened: a line longer than [`MAX_LINE_BYTES`] is
//! refused without being buffered whole, invalid UTF-8 is reported (not a crash), and the one
//! writer owns stdout so messages never interleave.
//!
//! Why not the SDK's `Stdio`/`Lines` transport: it reads lines of unbounded length into memory
//! and answers parse errors by echoing the whole offending line back, which for a hostile or
//! huge line is exactly what must not happen. The protocol types still come from the SDK.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// The longest line accepted: 64 MiB. Prompts embed images and files as base64, which can be
/// several megabytes; anything past this is refused and skipped.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// How much of an over-long line is kept to find its request `id`, so the client still gets an
/// answer for that request instead of waiting forever.
const ID_PROBE_BYTES: usize = 4096;

#[derive(Debug, PartialEq)]
pub enum Incoming {
    Line(String),
    /// The line was longer than the cap; `head` is its first few KB.
    TooLong {
        head: Vec<u8>,
    },
    /// The line was not UTF-8; `head` is its first few KB.
    InvalidUtf8 {
        head: Vec<u8>,
    },
}

/// Splits a byte stream into lines with a cap.
pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// Start of unconsumed data in `buf`.
    pos: usize,
    /// How much of the unconsumed data is known to hold no newline (so each byte is scanned
    /// once, not once per read).
    scanned: usize,
    /// Inside an over-long line: bytes are dropped until the next newline.
    discarding: Option<Vec<u8>>,
    eof: bool,
    max: usize,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub fn new(inner: R) -> Self {
        Self::with_max(inner, MAX_LINE_BYTES)
    }

    pub fn with_max(inner: R, max: usize) -> Self {
        Self {
            inner,
            buf: Vec::with_capacity(64 * 1024),
            pos: 0,
            scanned: 0,
            discarding: None,
            eof: false,
            max,
        }
    }

    /// The next non-empty line, or `None` at end of input. A final line without a newline is
    /// still delivered.
    pub async fn next(&mut self) -> std::io::Result<Option<Incoming>> {
        loop {
            if let Some(item) = self.take_line() {
                if let Incoming::Line(l) = &item
                    && l.trim().is_empty()
                {
                    continue;
                }
                return Ok(Some(item));
            }
            if self.eof {
                let rest = std::mem::take(&mut self.buf);
                let rest = &rest[self.pos.min(rest.len())..];
                self.pos = 0;
                if let Some(head) = self.discarding.take() {
                    return Ok(Some(Incoming::TooLong { head }));
                }
                if rest.iter().all(u8::is_ascii_whitespace) {
                    return Ok(None);
                }
                return Ok(Some(to_incoming(rest.to_vec())));
            }
            self.fill().await?;
        }
    }

    fn take_line(&mut self) -> Option<Incoming> {
        let data = &self.buf[self.pos..];
        if let Some(nl) = data[self.scanned.min(data.len())..]
            .iter()
            .position(|&b| b == b'\n')
        {
            let nl = self.scanned + nl;
            let line = data[..nl].to_vec();
            self.pos += nl + 1;
            self.scanned = 0;
            if let Some(head) = self.discarding.take() {
                return Some(Incoming::TooLong { head });
            }
            return Some(to_incoming(line));
        }
        // No newline yet. If this line already exceeds the cap, stop buffering it.
        if self.discarding.is_none() && data.len() > self.max {
            self.discarding = Some(data[..ID_PROBE_BYTES.min(data.len())].to_vec());
        }
        if self.discarding.is_some() {
            self.buf.clear();
            self.pos = 0;
            self.scanned = 0;
        } else {
            self.scanned = data.len();
        }
        None
    }

    async fn fill(&mut self) -> std::io::Result<()> {
        if self.pos > 0 && self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        } else if self.pos > self.buf.capacity() / 2 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        let mut chunk = [0u8; 64 * 1024];
        let n = self.inner.read(&mut chunk).await?;
        if n == 0 {
            self.eof = true;
        } else {
            self.buf.extend_from_slice(&chunk[..n]);
        }
        Ok(())
    }
}

fn to_incoming(mut line: Vec<u8>) -> Incoming {
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    match String::from_utf8(line) {
        Ok(s) => Incoming::Line(s),
        Err(e) => {
            let mut head = e.into_bytes();
            head.truncate(ID_PROBE_BYTES);
            Incoming::InvalidUtf8 { head }
        }
    }
}

/// Finds `"id": <number or string>` near the start of a damaged message, so an error can still
/// be addressed to the request. Returns the id as JSON.
pub fn probe_id(head: &[u8]) -> Option<serde_json::Value> {
    let text = String::from_utf8_lossy(head);
    let mut rest = text.as_ref();
    while let Some(i) = rest.find("\"id\"") {
        let after = rest[i + 4..].trim_start();
        if let Some(v) = after.strip_prefix(':') {
            let v = v.trim_start();
            if let Some(s) = v.strip_prefix('"') {
                if let Some(end) = s.find('"')
                    && end <= 128
                    && !s[..end].contains('\\')
                {
                    return Some(serde_json::Value::String(s[..end].to_owned()));
                }
            } else {
                let digits: String = v
                    .chars()
                    .take_while(|c| c.is_ascii_digit() || *c == '-')
                    .collect();
                if let Ok(n) = digits.parse::<i64>() {
                    return Some(serde_json::Value::from(n));
                }
            }
        }
        rest = &rest[i + 4..];
    }
    None
}

/// The single writer of the output stream. Lines are written in the order they are queued,
/// through a buffer that is flushed whenever the queue runs dry: a burst of updates becomes a
/// few large writes instead of two small ones per message (tokio's stdout hands every write
/// to a blocking thread).
pub async fn write_lines<W: AsyncWrite + Unpin>(
    out: W,
    mut rx: mpsc::Receiver<String>,
) -> std::io::Result<()> {
    let mut out = tokio::io::BufWriter::with_capacity(64 * 1024, out);
    while let Some(line) = rx.recv().await {
        out.write_all(line.as_bytes()).await?;
        out.write_all(b"\n").await?;
        while let Ok(line) = rx.try_recv() {
            out.write_all(line.as_bytes()).await?;
            out.write_all(b"\n").await?;
        }
        out.flush().await?;
    }
    out.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read_all(input: &[u8], max: usize) -> Vec<Incoming> {
        let mut r = LineReader::with_max(input, max);
        let mut out = vec![];
        while let Some(i) = r.next().await.unwrap() {
            out.push(i);
        }
        out
    }

    #[tokio::test]
    async fn lines_crlf_blank_and_unterminated() {
        let got = read_all(b"a\r\n\n  \nb\nc", 100).await;
        assert_eq!(
            got,
            vec![
                Incoming::Line("a".into()),
                Incoming::Line("b".into()),
                Incoming::Line("c".into())
            ]
        );
    }

    #[tokio::test]
    async fn too_long_line_is_skipped_and_reading_goes_on() {
        let mut input = b"{\"id\":7,\"x\":\"".to_vec();
        input.extend(std::iter::repeat_n(b'x', 300_000));
        input.extend(b"\"}\nok\n");
        let got = read_all(&input, 1000).await;
        assert_eq!(got.len(), 2);
        let Incoming::TooLong { head } = &got[0] else {
            panic!("{got:?}")
        };
        assert!(head.len() <= ID_PROBE_BYTES);
        assert_eq!(probe_id(head), Some(serde_json::json!(7)));
        assert_eq!(got[1], Incoming::Line("ok".into()));
    }

    #[tokio::test]
    async fn invalid_utf8_is_reported() {
        let got = read_all(b"{\"id\":\"a\xff\"}\nnext\n", 100).await;
        assert!(matches!(got[0], Incoming::InvalidUtf8 { .. }));
        assert_eq!(got[1], Incoming::Line("next".into()));
    }

    #[test]
    fn probe_id_forms() {
        assert_eq!(
            probe_id(br#"{"jsonrpc":"2.0","id":"r-1","method""#),
            Some(serde_json::json!("r-1"))
        );
        assert_eq!(
            probe_id(br#"{"method":"x", "id" : 42 ,"#),
            Some(serde_json::json!(42))
        );
        assert_eq!(probe_id(br#"{"method":"x","params":{"#), None);
    }
}
