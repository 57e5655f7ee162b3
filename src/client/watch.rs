//! Reading a watch: one chunked HTTP response, one JSON event per line (or, for a protobuf
//! watch, one length-prefixed frame per event: see `frames.rs`).
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

use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use ureq::{Agent, BodyReader};

use super::cancel::{Attached, Cancel};
use super::lines::{Line, LineReader};
use crate::api::{Object, WatchEvent};
use crate::error::Error;

pub use super::lines::MAX_WATCH_LINE;

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
    /// A canceller for the connection of `agent` (registered with the client's token as
    /// `attached`, if the client has one).
    pub(crate) fn new(agent: Agent, attached: Option<Attached>, scope: Option<Cancel>) -> Self {
        WatchCanceller {
            shared: Arc::new(CancelState {
                agent,
                cancelled: AtomicBool::new(false),
                scope,
                _attached: attached,
            }),
        }
    }

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
    lines: LineReader,
    request: String,
    line_no: u64,
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

impl<K: Object> WatchStream<K> {
    pub(crate) fn new(
        reader: BodyReader<'static>,
        request: String,
        agent: Agent,
        attached: Option<Attached>,
        scope: Option<Cancel>,
        framed: bool,
    ) -> Self {
        let lines = LineReader::new(reader);
        WatchStream {
            lines: if framed { lines.framed() } else { lines },
            request,
            line_no: 0,
            done: false,
            canceller: WatchCanceller::new(agent, attached, scope),
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

    fn line_error(&self, message: String) -> Error {
        Error::WatchLine {
            request: self.request.clone(),
            line: self.line_no,
            message,
        }
    }
}

/// What one line of the stream gave.
enum Step<K> {
    Item(Result<WatchEvent<K>, Error>),
    Blank,
    End,
}

/// What one whole line decodes to, before it is numbered and turned into an item.
enum Parsed<K> {
    Blank,
    Event(WatchEvent<K>),
    /// Not an event: the error's summary (position and kind, never the text) and the line's
    /// length.
    Bad(String, usize),
}

impl<K: Object> Parsed<K> {
    /// One frame of a protobuf watch (feature `protobuf`; without it no stream is framed).
    fn of_frame(frame: &[u8]) -> Parsed<K> {
        #[cfg(feature = "protobuf")]
        return match crate::api::protobuf_answers::watch_event::<K>(frame) {
            Ok(event) => Parsed::Event(event),
            Err(summary) => Parsed::Bad(summary, frame.len()),
        };
        #[cfg(not(feature = "protobuf"))]
        Parsed::Bad(
            "a protobuf frame (feature `protobuf` is off)".into(),
            frame.len(),
        )
    }

    fn of(line: &[u8]) -> Parsed<K> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Parsed::Blank;
        }
        match WatchEvent::<K>::from_json(line) {
            Ok(event) => Parsed::Event(event),
            // Position and length only: the line may be a Secret.
            Err(e) => Parsed::Bad(crate::error::json_error_summary(&e), line.len()),
        }
    }
}

impl<K: Object> WatchStream<K> {
    /// The next event if a whole line of it has already arrived, without waiting for the
    /// network; `None` when reading on would have to wait (or the stream ended). The
    /// reflector hands events that arrived together to the FIFO as one run. The line is
    /// decoded where it lies in the read buffer, without a copy.
    pub fn next_buffered(&mut self) -> Option<Result<WatchEvent<K>, Error>> {
        while !self.done {
            let parsed = self.parse_buffered()?;
            match self.step(parsed) {
                Step::Item(item) => return Some(item),
                Step::Blank => {}
                Step::End => return None,
            }
        }
        None
    }

    /// Decodes a whole line (or frame) that is already buffered, where it lies.
    #[inline]
    fn parse_buffered(&mut self) -> Option<Parsed<K>> {
        if self.lines.framed {
            self.lines.with_buffered_line(Parsed::of_frame)
        } else {
            self.lines.with_buffered_line(Parsed::of)
        }
    }

    /// Reads one line (waiting for it if need be) and turns it into an item.
    fn read_step(&mut self) -> Step<K> {
        if self.done {
            return Step::End;
        }
        if let Some(parsed) = self.parse_buffered() {
            return self.step(parsed);
        }
        match self.lines.read_line() {
            Ok(line) => self.after_read(line),
            Err(source) => {
                self.done = true;
                if self.canceller.is_cancelled() {
                    return Step::End;
                }
                if !self.lines.buf.is_empty() {
                    self.line_no += 1;
                    let msg = format!(
                        "connection lost in the middle of an event ({} bytes received): {source}",
                        self.lines.buf.len(),
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

    /// Turns what a read into `buf` gave into an item.
    fn after_read(&mut self, line: Line) -> Step<K> {
        let too_long = match line {
            Line::Complete => {
                let parsed = if self.lines.framed {
                    Parsed::of_frame(&self.lines.buf)
                } else {
                    Parsed::of(&self.lines.buf)
                };
                return self.step(parsed);
            }
            Line::End => {
                self.line_no += 1;
                self.done = true;
                return Step::End;
            }
            Line::Truncated => None,
            Line::TooLong(n) => Some(n),
        };
        self.line_no += 1;
        let msg = match too_long {
            Some(n) => format!("line of {n} bytes is longer than {MAX_WATCH_LINE}; skipped"),
            None => {
                self.done = true;
                if self.canceller.is_cancelled() {
                    return Step::End;
                }
                format!(
                    "connection closed in the middle of an event ({} bytes received)",
                    self.lines.buf.len(),
                )
            }
        };
        Step::Item(Err(self.line_error(msg)))
    }

    /// Turns a whole line, decoded, into an item.
    fn step(&mut self, parsed: Parsed<K>) -> Step<K> {
        self.line_no += 1;
        Step::Item(match parsed {
            Parsed::Blank => return Step::Blank,
            Parsed::Event(WatchEvent::Error(status)) => Err(Error::Api {
                request: self.request.clone(),
                status,
            }),
            Parsed::Event(event) => Ok(event),
            Parsed::Bad(summary, len) => {
                let msg = format!("{summary} in a line of {len} bytes");
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
