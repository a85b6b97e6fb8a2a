//! Server-sent events framing (the WHATWG `text/event-stream` rules), fed one network chunk at
//! a time.
//!
//! Hand-rolled rather than `eventsource-stream`: that crate re-copies the whole remaining buffer
//! for every line it parses (`String::split_off`), which turns a read that carries many events
//! (a fast server, a slow consumer) quadratic, and allocates a `String` per line and per event.
//! Here a chunk is scanned once, the consumed prefix is dropped once per chunk, and the event name
//! and data buffers are reused, so a text delta costs no allocation in the framing layer.

/// Incremental SSE parser. Call [`SseParser::feed`] with each chunk; complete events are handed
/// to the callback as `(event name, data)`. An event still incomplete when the input ends is
/// dropped (as the spec says): truncation is detected by each API's terminal event instead.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes not yet forming a complete line.
    buf: Vec<u8>,
    /// The previous line ended in `\r`: a `\n` at the start of the next chunk belongs to it.
    skip_lf: bool,
    /// The byte-order mark may only appear before the first byte of the stream.
    started: bool,
    event: String,
    data: String,
    has_data: bool,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses `chunk`, calling `on_event(name, data)` for every event it completes. Stops at and
    /// returns the first error of the callback.
    pub fn feed<E>(
        &mut self,
        chunk: &[u8],
        on_event: &mut impl FnMut(&str, &str) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut chunk = chunk;
        if !self.started && !chunk.is_empty() {
            self.started = true;
            chunk = chunk.strip_prefix("\u{feff}".as_bytes()).unwrap_or(chunk);
        }
        if self.skip_lf {
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
                self.skip_lf = false;
            } else if !chunk.is_empty() {
                self.skip_lf = false;
            }
        }
        // Fast path: no partial line is pending, so lines can be read straight from the chunk.
        if self.buf.is_empty() {
            let consumed = self.lines(chunk, on_event)?;
            self.buf.extend_from_slice(&chunk[consumed..]);
            return Ok(());
        }
        self.buf.extend_from_slice(chunk);
        let buf = std::mem::take(&mut self.buf);
        let result = self.lines(&buf, on_event);
        let mut buf = buf;
        match result {
            Ok(consumed) => {
                buf.drain(..consumed);
                self.buf = buf;
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Processes every complete line of `input`; returns how many bytes were consumed.
    fn lines<E>(
        &mut self,
        input: &[u8],
        on_event: &mut impl FnMut(&str, &str) -> Result<(), E>,
    ) -> Result<usize, E> {
        let mut start = 0;
        while let Some(offset) = input[start..]
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
        {
            let end = start + offset;
            let mut next = end + 1;
            if input[end] == b'\r' {
                match input.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    // The `\n` of a CRLF may be in the next chunk.
                    None => self.skip_lf = true,
                }
            }
            let line = &input[start..end];
            start = next;
            self.line(line, on_event)?;
        }
        Ok(start)
    }

    fn line<E>(
        &mut self,
        line: &[u8],
        on_event: &mut impl FnMut(&str, &str) -> Result<(), E>,
    ) -> Result<(), E> {
        if line.is_empty() {
            return self.dispatch(on_event);
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.has_data = true;
                self.data.push_str(&String::from_utf8_lossy(value));
            }
            b"event" => {
                self.event.clear();
                self.event.push_str(&String::from_utf8_lossy(value));
            }
            // `id` and `retry` are for browser reconnection, which a POST stream never does.
            _ => {}
        }
        Ok(())
    }

    fn dispatch<E>(
        &mut self,
        on_event: &mut impl FnMut(&str, &str) -> Result<(), E>,
    ) -> Result<(), E> {
        let result = if self.has_data {
            let name = if self.event.is_empty() {
                "message"
            } else {
                self.event.as_str()
            };
            on_event(name, &self.data)
        } else {
            Ok(())
        };
        self.event.clear();
        self.data.clear();
        self.has_data = false;
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(chunks: &[&[u8]]) -> Vec<(String, String)> {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        for chunk in chunks {
            parser
                .feed::<()>(chunk, &mut |name, data| {
                    out.push((name.to_owned(), data.to_owned()));
                    Ok(())
                })
                .unwrap();
        }
        out
    }

    #[test]
    fn frames_events_like_the_spec() {
        let input = b"\xef\xbb\xbf: comment\r\nevent: a\r\ndata: 1\r\ndata:2\r\n\r\ndata: x\n\n\rdata: y\r\rid: 3\nretry: 5\n\nevent: empty\n\ndata: cut";
        let whole = parse(&[input]);
        assert_eq!(
            whole,
            vec![
                ("a".into(), "1\n2".into()),
                ("message".into(), "x".into()),
                ("message".into(), "y".into()),
            ]
        );
        for split in 0..input.len() {
            let (a, b) = input.split_at(split);
            assert_eq!(parse(&[a, b]), whole, "split at {split}");
        }
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(parse(&bytes), whole);
    }
}
