//! Cutting a pod log's body into bounded pieces of lines, the time in front read apart.
//!
//! A log is lines of any length; the stream must never hold one whole, so a line longer
//! than the bound comes out in pieces. With timestamps (asked for by the caller, or by a
//! resuming follow for itself) each line starts with the kubelet's time and a space. That
//! time has to be read whole before the first piece is cut, for two reasons: the resume
//! cursor needs it even when the bound is shorter than the time, and a time the caller did
//! not ask for must neither count against their bound nor leak into their bytes. So the
//! reader keeps its own buffer, which it can look into before it consumes.
//!
//! A body that ends cleanly in the middle of a line hands that line out as
//! [`Piece::Unterminated`]: it is the log's last line, written without a newline
//! (`printf done`), and kubectl prints it.

use std::io::{self, Read};

use super::timestamp::{split_timestamp, LogTime};

/// The longest time prefix looked for: `2026-11-26T11:50:12.993384413+05:30 ` is 36 bytes.
const PREFIX_MAX: usize = 40;

const CAPACITY: usize = 64 * 1024;

/// How reading one piece ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Piece {
    /// A whole line (or the last piece of one) is in the buffer, its newline consumed.
    Line,
    /// The bound was reached: the line goes on in the next piece.
    Partial,
    /// The body ended cleanly with nothing pending.
    End,
    /// The body ended cleanly inside a line: what came of it is in the buffer.
    Unterminated,
}

/// The time found in front of a line: the time, and how many bytes (its space included)
/// it takes at the start of the piece.
pub(crate) type Stamp = Option<(LogTime, usize)>;

/// A buffered reader of a log's body that cuts it into pieces (see the [module docs](self)).
pub(crate) struct LineReader<R> {
    inner: R,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    eof: bool,
}

impl<R: Read> LineReader<R> {
    pub(crate) fn new(inner: R) -> Self {
        LineReader {
            inner,
            buf: vec![0; CAPACITY].into_boxed_slice(),
            start: 0,
            end: 0,
            eof: false,
        }
    }

    fn available(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Reads more into the buffer; false at the body's end.
    fn fill(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            return Ok(true); // full: nothing read, nothing lost
        }
        loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Reads the time in front of a line, without consuming it: enough bytes are buffered
    /// to see the whole prefix (up to its space), a newline, or the end.
    fn peek_stamp(&mut self) -> io::Result<Stamp> {
        loop {
            let avail = self.available();
            let window = &avail[..avail.len().min(PREFIX_MAX)];
            if window.iter().any(|&b| b == b' ' || b == b'\n') || avail.len() >= PREFIX_MAX {
                break;
            }
            if !self.fill()? {
                break;
            }
        }
        let avail = self.available();
        let window = &avail[..avail.len().min(PREFIX_MAX)];
        // The time ends at the first space, within this line.
        match window.iter().position(|&b| b == b' ' || b == b'\n') {
            Some(i) if window[i] == b' ' => {}
            _ => return Ok(None),
        }
        Ok(split_timestamp(window).map(|(t, rest)| (t, window.len() - rest.len())))
    }

    /// Reads the next piece into `out`: a line without its newline, or `max` bytes of a
    /// longer one. At a line's start (`line_start`) with `timed`, the time in front is read
    /// first and returned; with `free_prefix` its bytes do not count against `max` (the
    /// caller strips them).
    pub(crate) fn read_piece(
        &mut self,
        out: &mut Vec<u8>,
        max: usize,
        timed: bool,
        free_prefix: bool,
    ) -> io::Result<(Piece, Stamp)> {
        out.clear();
        let stamp = if timed { self.peek_stamp()? } else { None };
        let bound = match stamp {
            Some((_, len)) if free_prefix => max.saturating_add(len),
            _ => max,
        };
        loop {
            if self.start == self.end && !self.fill()? {
                let piece = if out.is_empty() {
                    Piece::End
                } else {
                    Piece::Unterminated
                };
                return Ok((piece, stamp));
            }
            let room = bound - out.len();
            let avail = self.available();
            let window = &avail[..avail.len().min(room)];
            if let Some(i) = window.iter().position(|&b| b == b'\n') {
                out.extend_from_slice(&window[..i]);
                self.start += i + 1;
                return Ok((Piece::Line, stamp));
            }
            let n = window.len();
            out.extend_from_slice(window);
            self.start += n;
            if out.len() >= bound {
                // A line of exactly the bound is whole if its newline comes next.
                if self.start == self.end && !self.fill()? {
                    return Ok((Piece::Unterminated, stamp));
                }
                if self.available().first() == Some(&b'\n') {
                    self.start += 1;
                    return Ok((Piece::Line, stamp));
                }
                return Ok((Piece::Partial, stamp));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body that comes a few bytes at a time, as the kubelet flushes.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.0.len().min(self.1).min(buf.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn pieces(body: &[u8], step: usize, max: usize, free: bool) -> Vec<(String, Piece, bool)> {
        let mut r = LineReader::new(Trickle(body, step));
        let mut out = Vec::new();
        let mut got = Vec::new();
        let mut line_start = true;
        loop {
            let (piece, stamp) = r.read_piece(&mut out, max, line_start, free).unwrap();
            if piece == Piece::End {
                return got;
            }
            line_start = piece != Piece::Partial;
            let skip = if free { stamp.map_or(0, |s| s.1) } else { 0 };
            got.push((
                String::from_utf8_lossy(&out[skip..]).into_owned(),
                piece,
                stamp.is_some(),
            ));
        }
    }

    #[test]
    fn the_time_is_read_whole_and_not_counted_when_stripped() {
        let body = b"2026-11-26T11:50:12.993384413Z 0123456789abc\n2026-11-26T11:50:13Z x\nno time here\n2026-11-26T11:50:14.1+02:00 done";
        for step in [1, 3, 7, 1000] {
            let got = pieces(body, step, 10, true);
            let want = [
                ("0123456789", Piece::Partial, true),
                ("abc", Piece::Line, false),
                ("x", Piece::Line, true),
                ("no time he", Piece::Partial, false),
                ("re", Piece::Line, false),
                ("done", Piece::Unterminated, true),
            ];
            let want: Vec<_> = want
                .into_iter()
                .map(|(s, p, t)| (s.to_owned(), p, t))
                .collect();
            assert_eq!(got, want, "step {step}");
        }
    }

    #[test]
    fn a_bound_shorter_than_the_time_still_finds_it() {
        let body = b"2026-11-26T11:50:12.993384413Z ab\n";
        let got = pieces(body, 2, 4, false);
        assert_eq!(got.len(), 9, "{got:?}");
        assert_eq!(got[0], ("2026".to_owned(), Piece::Partial, true));
        assert_eq!(got[7], ("3Z a".to_owned(), Piece::Partial, false));
        assert_eq!(got[8], ("b".to_owned(), Piece::Line, false));
        let got = pieces(body, 2, 1, true);
        assert_eq!(got[0], ("a".to_owned(), Piece::Partial, true));
        assert_eq!(got[1], ("b".to_owned(), Piece::Line, false));
    }

    #[test]
    fn exact_bound_blank_lines_and_ends() {
        let got = pieces(b"abcd\n\nabcde", 1, 4, false);
        let got: Vec<_> = got.into_iter().map(|(s, p, _)| (s, p)).collect();
        assert_eq!(
            got,
            [
                ("abcd".to_owned(), Piece::Line),
                (String::new(), Piece::Line),
                ("abcd".to_owned(), Piece::Partial),
                ("e".to_owned(), Piece::Unterminated),
            ]
        );
        assert_eq!(pieces(b"abcd", 1, 4, false)[0].1, Piece::Unterminated);
        assert!(pieces(b"", 1, 4, false).is_empty());
    }
}
