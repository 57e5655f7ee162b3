//! The framing of a protobuf watch: a 4-byte big-endian length, then that many bytes (one
//! bare `WatchEvent`), over and over (`Content-Type: ...protobuf;stream=watch`).
//!
//! Why here: a protobuf watch is read by the same [`LineReader`] as a JSON one, in its
//! framed mode, so [`WatchStream`](super::WatchStream) keeps one reading loop for both
//! (buffered events, a lost connection, cancellation) and only the unit changes from "up to
//! the newline" to "the length says". HTTP chunks are not frames: kube-apiserver's streaming
//! list cuts frames across chunks, and `BufReader` reassembles them by length. A frame
//! longer than [`MAX_WATCH_LINE`] is skipped whole (its length is known, so the stream
//! stays in step) and reported; a stream cut inside a frame or inside a length is one last
//! error.

use std::io::{BufRead, Read};

use super::lines::{Line, LineReader, MAX_WATCH_LINE};

/// The length of the frame at the start of `bytes`, if its 4 bytes are there.
#[inline]
fn frame_len(bytes: &[u8]) -> Option<usize> {
    let head: [u8; 4] = bytes.get(..4)?.try_into().ok()?;
    Some(u32::from_be_bytes(head) as usize)
}

impl LineReader {
    /// A reader of length-prefixed frames instead of lines.
    pub(crate) fn framed(mut self) -> Self {
        self.framed = true;
        self
    }

    /// See [`LineReader::take_buffered_line`].
    pub(super) fn take_buffered_frame(&mut self) -> bool {
        let buffered = self.reader.buffer();
        let Some(end) = frame_len(buffered).and_then(|n| n.checked_add(4)) else {
            return false;
        };
        let Some(frame) = buffered.get(4..end) else {
            return false;
        };
        self.buf.clear();
        self.buf.extend_from_slice(frame);
        self.reader.consume(end);
        true
    }

    /// See [`LineReader::with_buffered_line`].
    pub(super) fn with_buffered_frame<R>(&mut self, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let buffered = self.reader.buffer();
        let end = frame_len(buffered)?.checked_add(4)?;
        let frame = buffered.get(4..end)?;
        let result = f(frame);
        self.reader.consume(end);
        Some(result)
    }

    /// See [`LineReader::read_line`]: one whole frame into `buf`.
    pub(super) fn read_frame(&mut self) -> std::io::Result<Line> {
        if self.take_buffered_frame() {
            return Ok(Line::Complete);
        }
        self.buf.clear();
        // The length: none of it is the end of the stream, part of it a cut.
        (&mut self.reader).take(4).read_to_end(&mut self.buf)?;
        match self.buf.len() {
            0 => return Ok(Line::End),
            4 => {}
            _ => return Ok(Line::Truncated),
        }
        let n = frame_len(&self.buf).unwrap_or(0);
        self.buf.clear();
        if n > MAX_WATCH_LINE {
            let skipped =
                std::io::copy(&mut (&mut self.reader).take(n as u64), &mut std::io::sink())?;
            if (skipped as usize) < n {
                return Ok(Line::Truncated);
            }
            return Ok(Line::TooLong(n));
        }
        // Grown as bytes come, never sized from the length alone.
        (&mut self.reader)
            .take(n as u64)
            .read_to_end(&mut self.buf)?;
        if self.buf.len() < n {
            return Ok(Line::Truncated);
        }
        Ok(Line::Complete)
    }
}
