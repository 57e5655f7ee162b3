//! Reading a long response line by line: the framing of every watch.
//!
//! kube-apiserver streams a watch (of anything: typed resources, metadata-only watches,
//! aggregated APIs' own streams) as one chunked response with one JSON document per line.
//! [`LineReader`] is that framing, shared by the typed [`WatchStream`](super::WatchStream)
//! and by [`Lines`], what the request builder's [`lines`](super::Request::lines) returns
//! for a stream the typed API does not cover.
//!
//! A line is bounded by [`MAX_WATCH_LINE`]: a longer one is skipped (reported as an error,
//! the stream goes on at the next newline) so a broken or hostile server cannot make the
//! client buffer without end. A last line cut off by a dropped connection is reported once
//! and ends the stream. Errors give a line's number and length, never its text.

use std::io::{BufRead, BufReader, Read};

use ureq::BodyReader;

use super::watch::WatchCanceller;
use crate::error::Error;

/// Lines longer than this are skipped with an error (no object comes close).
pub const MAX_WATCH_LINE: usize = 64 << 20;

/// How reading one line ended.
pub(crate) enum Line {
    /// The response ended before any byte of a new line.
    End,
    /// A whole line is in `buf`, without its newline (and `\r`).
    Complete,
    /// The response ended in the middle of a line (what came is in `buf`).
    Truncated,
    /// A line longer than [`MAX_WATCH_LINE`] was skipped; its length.
    TooLong(usize),
}

/// The lines of a response body, one at a time into one reused buffer.
pub(crate) struct LineReader {
    pub(super) reader: BufReader<BodyReader<'static>>,
    /// The last line read.
    pub(crate) buf: Vec<u8>,
    /// Length-prefixed frames instead of lines (a protobuf watch, see `frames.rs`).
    pub(super) framed: bool,
}

impl LineReader {
    pub(crate) fn new(reader: BodyReader<'static>) -> Self {
        LineReader {
            reader: BufReader::with_capacity(64 * 1024, reader),
            buf: Vec::with_capacity(8 * 1024),
            framed: false,
        }
    }

    /// Takes a whole line that is already buffered into `buf` (without the newline); `false`
    /// when the buffer holds no newline, so reading the line would mean waiting.
    #[inline]
    pub(crate) fn take_buffered_line(&mut self) -> bool {
        if self.framed {
            return self.take_buffered_frame();
        }
        let buffered = self.reader.buffer();
        let Some(i) = find_newline(buffered) else {
            return false;
        };
        self.buf.clear();
        self.buf.extend_from_slice(&buffered[..i]);
        self.reader.consume(i + 1);
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        true
    }

    /// Runs `f` on a whole line that is already buffered (without the newline and `\r`),
    /// read where it lies: no copy into `buf`. `None` when the buffer holds no newline.
    #[inline]
    pub(crate) fn with_buffered_line<R>(&mut self, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        if self.framed {
            return self.with_buffered_frame(f);
        }
        let buffered = self.reader.buffer();
        let i = find_newline(buffered)?;
        let line = &buffered[..i];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let result = f(line);
        self.reader.consume(i + 1);
        Some(result)
    }

    /// Reads one line into `buf` (without the newline), holding at most `MAX_WATCH_LINE`.
    /// `read_until` finds the newline with the standard library's fast byte search.
    pub(crate) fn read_line(&mut self) -> std::io::Result<Line> {
        if self.framed {
            return self.read_frame();
        }
        if self.take_buffered_line() {
            return Ok(Line::Complete);
        }
        self.buf.clear();
        let limit = MAX_WATCH_LINE as u64 + 1;
        let n = (&mut self.reader)
            .take(limit)
            .read_until(b'\n', &mut self.buf)?;
        if n == 0 {
            return Ok(Line::End);
        }
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
            return Ok(Line::Complete);
        }
        if self.buf.len() <= MAX_WATCH_LINE {
            // The body ended without a newline: a cut-off last line.
            return Ok(Line::Truncated);
        }
        // Too long: skip the rest of this line.
        let mut skipped = self.buf.len();
        self.buf.clear();
        loop {
            let chunk = self.reader.fill_buf()?;
            if chunk.is_empty() {
                return Ok(Line::TooLong(skipped));
            }
            match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    self.reader.consume(i + 1);
                    return Ok(Line::TooLong(skipped + i));
                }
                None => {
                    let len = chunk.len();
                    skipped += len;
                    self.reader.consume(len);
                }
            }
        }
    }
}

/// The index of the first newline in `bytes`, eight bytes at a time (a word's lowest byte
/// flagged by the zero-byte test is always exact).
#[inline]
fn find_newline(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut words = bytes.chunks_exact(8);
    let mut offset = 0;
    for word in &mut words {
        let Ok(word) = <[u8; 8]>::try_from(word) else {
            break;
        };
        let w = u64::from_le_bytes(word) ^ (ONES * u64::from(b'\n'));
        let found = w.wrapping_sub(ONES) & !w & HIGH;
        if found != 0 {
            return Some(offset + (found.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    let rest = words.remainder();
    rest.iter().position(|&b| b == b'\n').map(|i| offset + i)
}

/// The lines of a long response, from [`Request::lines`](super::Request::lines): an
/// iterator of each non-blank line's bytes (without the newline), in order.
///
/// It ends (`None`) when the response ends, or when it is cancelled (by
/// [`canceller`](Self::canceller) or the client's [`Cancel`](super::Cancel)). A line
/// longer than [`MAX_WATCH_LINE`] is an [`Error::WatchLine`] item and reading goes on; a
/// connection lost part way is one last error item.
pub struct Lines {
    lines: LineReader,
    request: String,
    line_no: u64,
    done: bool,
    canceller: WatchCanceller,
}

impl std::fmt::Debug for Lines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lines")
            .field("request", &self.request)
            .field("lines", &self.line_no)
            .field("done", &self.done)
            .finish()
    }
}

impl Lines {
    pub(crate) fn new(
        reader: BodyReader<'static>,
        request: String,
        canceller: WatchCanceller,
    ) -> Self {
        Lines {
            lines: LineReader::new(reader),
            request,
            line_no: 0,
            done: false,
            canceller,
        }
    }

    /// A handle that ends this stream from another thread.
    pub fn canceller(&self) -> WatchCanceller {
        self.canceller.clone()
    }

    /// The request this stream answers, e.g. `GET /api/v1/pods?watch=1`.
    pub fn request(&self) -> &str {
        &self.request
    }

    fn line_error(&self, message: String) -> Error {
        Error::WatchLine {
            request: self.request.clone(),
            line: self.line_no,
            message,
        }
    }
}

impl Iterator for Lines {
    type Item = Result<Vec<u8>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            let line = match self.lines.read_line() {
                Ok(line) => line,
                Err(source) => {
                    self.done = true;
                    if self.canceller.is_cancelled() {
                        return None;
                    }
                    return Some(Err(Error::Io {
                        request: self.request.clone(),
                        source,
                    }));
                }
            };
            self.line_no += 1;
            match line {
                Line::End => {
                    self.done = true;
                    return None;
                }
                Line::Truncated => {
                    self.done = true;
                    if self.canceller.is_cancelled() {
                        return None;
                    }
                    let msg = format!(
                        "connection closed in the middle of a line ({} bytes received)",
                        self.lines.buf.len()
                    );
                    return Some(Err(self.line_error(msg)));
                }
                Line::TooLong(n) => {
                    let msg = format!("line of {n} bytes is longer than {MAX_WATCH_LINE}; skipped");
                    return Some(Err(self.line_error(msg)));
                }
                Line::Complete => {
                    if self.lines.buf.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    return Some(Ok(self.lines.buf.clone()));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::find_newline;

    #[test]
    fn finds_the_first_newline_at_every_position() {
        for len in 0..40 {
            for at in 0..=len {
                let mut bytes = vec![b'x'; len];
                if at < len {
                    bytes[at] = b'\n';
                    if at + 3 < len {
                        bytes[at + 3] = b'\n';
                    }
                }
                let expected = (at < len).then_some(at);
                assert_eq!(find_newline(&bytes), expected, "len {len}, at {at}");
            }
        }
        // Bytes just around the newline's value are not newlines.
        assert_eq!(find_newline(&[0x09, 0x0b, 0x8a, 0xff, 0x00, 0x0a]), Some(5));
    }
}
