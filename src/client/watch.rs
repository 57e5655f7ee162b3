//! Reading a watch: one chunked HTTP response, one JSON event per line.
//!
//! The stream is an iterator that never panics and never spins. A line that is not a usable
//! event (not JSON, an unknown type, a missing object) is reported as an [`Error::WatchLine`]
//! item and reading goes on with the next line, since newline framing is intact. A last line
//! cut off by a dropped connection is reported once and ends the stream. A watch `ERROR` event
//! comes out as [`Error::Api`] with its `Status`, so `err.is_gone()` reads the same for an
//! HTTP 410 and for an `ERROR` event carrying 410.
//!
//! Errors about a bad line give its number, its length and where the JSON went wrong, never
//! its text: the line may be a Secret, and errors end up in logs.
//!
//! A watch runs on its own connection; [`WatchCanceller::cancel`] shuts that connection down
//! from any thread, which ends a blocked read at once (the stream then ends with `None`).

use std::io::{BufRead, BufReader, Read};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use ureq::{Agent, BodyReader};

use super::cancel::{Attached, Cancel};
use crate::api::{Object, WatchEvent};
use crate::error::Error;

/// Lines longer than this are skipped with an error (no object comes close).
pub const MAX_WATCH_LINE: usize = 64 << 20;

/// Shuts a watch's connection down from another thread.
#[derive(Clone, Debug)]
pub struct WatchCanceller {
    shared: Arc<CancelState>,
}

#[derive(Debug)]
struct CancelState {
    agent: Agent,
    cancelled: AtomicBool,
    /// The client's cancellation token, which also ends this watch.
    scope: Option<Cancel>,
    /// Keeps the agent registered with that token while the watch lives.
    _attached: Option<Attached>,
}

impl WatchCanceller {
    /// Ends the watch: a read blocked on it returns and the stream yields `None`.
    pub fn cancel(&self) {
        self.shared.cancelled.store(true, Ordering::SeqCst);
        self.shared.agent.clone().shutdown();
    }

    /// True once [`cancel`](Self::cancel) was called (or the client's token fired).
    pub fn is_cancelled(&self) -> bool {
        self.shared.cancelled.load(Ordering::SeqCst)
            || self.shared.scope.as_ref().is_some_and(Cancel::is_cancelled)
    }
}

/// The events of one watch call, in order.
pub struct WatchStream<K> {
    reader: BufReader<BodyReader<'static>>,
    request: String,
    line_no: u64,
    buf: Vec<u8>,
    done: bool,
    canceller: WatchCanceller,
    _kind: PhantomData<fn() -> K>,
}

impl<K> std::fmt::Debug for WatchStream<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchStream")
            .field("request", &self.request)
            .field("lines", &self.line_no)
            .field("done", &self.done)
            .finish()
    }
}

enum Line {
    End,
    Complete,
    Truncated,
    TooLong(usize),
}

impl<K: Object> WatchStream<K> {
    pub(crate) fn new(
        reader: BodyReader<'static>,
        request: String,
        agent: Agent,
        attached: Option<Attached>,
        scope: Option<Cancel>,
    ) -> Self {
        WatchStream {
            reader: BufReader::with_capacity(64 * 1024, reader),
            request,
            line_no: 0,
            buf: Vec::with_capacity(8 * 1024),
            done: false,
            canceller: WatchCanceller {
                shared: Arc::new(CancelState {
                    agent,
                    cancelled: AtomicBool::new(false),
                    scope,
                    _attached: attached,
                }),
            },
            _kind: PhantomData,
        }
    }

    /// A handle that ends this watch from another thread.
    pub fn canceller(&self) -> WatchCanceller {
        self.canceller.clone()
    }

    /// The request this stream answers, e.g. `GET /api/v1/pods?watch=1&...`.
    pub fn request(&self) -> &str {
        &self.request
    }

    /// Takes a whole line that is already buffered into `buf` (without the newline); `false`
    /// when the buffer holds no newline, so reading the line would mean waiting.
    fn take_buffered_line(&mut self) -> bool {
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

    /// Reads one line into `buf` (without the newline), holding at most `MAX_WATCH_LINE`.
    /// `read_until` finds the newline with the standard library's fast byte search.
    fn read_line(&mut self) -> std::io::Result<Line> {
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

    fn line_error(&self, message: String) -> Error {
        Error::WatchLine {
            request: self.request.clone(),
            line: self.line_no,
            message,
        }
    }
}

/// The index of the first newline in `bytes`, eight bytes at a time (a word's lowest byte
/// flagged by the zero-byte test is always exact).
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

/// What one line of the stream gave.
enum Step<K> {
    Item(Result<WatchEvent<K>, Error>),
    Blank,
    End,
}

impl<K: Object> WatchStream<K> {
    /// The next event if a whole line of it has already arrived, without waiting for the
    /// network; `None` when reading on would have to wait (or the stream ended). The
    /// reflector hands events that arrived together to the FIFO as one run.
    pub fn next_buffered(&mut self) -> Option<Result<WatchEvent<K>, Error>> {
        while !self.done && self.take_buffered_line() {
            match self.step(Line::Complete) {
                Step::Item(item) => return Some(item),
                Step::Blank => {}
                Step::End => return None,
            }
        }
        None
    }

    /// Reads one line (waiting for it if need be) and turns it into an item.
    fn read_step(&mut self) -> Step<K> {
        if self.done {
            return Step::End;
        }
        match self.read_line() {
            Ok(line) => self.step(line),
            Err(source) => {
                self.done = true;
                if self.canceller.is_cancelled() {
                    return Step::End;
                }
                if !self.buf.is_empty() {
                    self.line_no += 1;
                    let msg = format!(
                        "connection lost in the middle of an event ({} bytes received): {source}",
                        self.buf.len(),
                    );
                    return Step::Item(Err(self.line_error(msg)));
                }
                Step::Item(Err(Error::Io {
                    request: self.request.clone(),
                    source,
                }))
            }
        }
    }

    /// Turns the line just read (in `buf`) into an item.
    fn step(&mut self, line: Line) -> Step<K> {
        self.line_no += 1;
        match line {
            Line::End => {
                self.done = true;
                return Step::End;
            }
            Line::Truncated => {
                self.done = true;
                if self.canceller.is_cancelled() {
                    return Step::End;
                }
                let msg = format!(
                    "connection closed in the middle of an event ({} bytes received)",
                    self.buf.len(),
                );
                return Step::Item(Err(self.line_error(msg)));
            }
            Line::TooLong(n) => {
                let msg = format!("line of {n} bytes is longer than {MAX_WATCH_LINE}; skipped");
                return Step::Item(Err(self.line_error(msg)));
            }
            Line::Complete => {}
        }
        if self.buf.iter().all(u8::is_ascii_whitespace) {
            return Step::Blank;
        }
        Step::Item(match WatchEvent::<K>::from_json(&self.buf) {
            Ok(WatchEvent::Error(status)) => Err(Error::Api {
                request: self.request.clone(),
                status,
            }),
            Ok(event) => Ok(event),
            Err(e) => {
                // Position and length only: the line may be a Secret.
                let msg = format!(
                    "{} in a line of {} bytes",
                    crate::error::json_error_summary(&e),
                    self.buf.len()
                );
                Err(self.line_error(msg))
            }
        })
    }
}

impl<K: Object> Iterator for WatchStream<K> {
    type Item = Result<WatchEvent<K>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.read_step() {
                Step::Item(item) => return Some(item),
                Step::Blank => {}
                Step::End => return None,
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
