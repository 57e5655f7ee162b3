//! One connection's byte stream, plain or TLS, read and written against deadlines.
//!
//! Every read and write of the socket first sets its timeout to what is left before the
//! operation's deadline, so a wait on a client never outlives the bound it was given,
//! however the client paces its bytes. TLS (`tls.rs`) keeps the same rule for each socket
//! read and write under its records.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Instant;

/// A plain or TLS connection.
pub(crate) enum Stream {
    Plain(TcpStream),
    #[cfg(feature = "webhook")]
    Tls(Box<super::tls::TlsConn>),
}

pub(crate) fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "deadline passed")
}

pub(crate) fn remaining(deadline: Instant) -> io::Result<std::time::Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        Err(timed_out())
    } else {
        Ok(left)
    }
}

impl Stream {
    pub(crate) fn socket(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            #[cfg(feature = "webhook")]
            Stream::Tls(s) => &s.sock,
        }
    }

    pub(crate) fn is_tls(&self) -> bool {
        !matches!(self, Stream::Plain(_))
    }

    /// Reads some bytes before `deadline` (0: the client closed).
    pub(crate) fn read_by(&mut self, buf: &mut [u8], deadline: Instant) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => read_plain(s, buf, deadline),
            #[cfg(feature = "webhook")]
            Stream::Tls(s) => s.read_by(buf, deadline),
        }
    }

    /// Writes all of `bytes` before `deadline`, in pieces, the deadline checked before each.
    pub(crate) fn write_all_by(&mut self, bytes: &[u8], deadline: Instant) -> io::Result<()> {
        match self {
            Stream::Plain(s) => write_plain(s, bytes, deadline),
            #[cfg(feature = "webhook")]
            Stream::Tls(s) => s.write_all_by(bytes, deadline),
        }
    }

    /// Ends the connection: TLS's close_notify (best effort, bounded by `deadline`), then
    /// the socket closed both ways.
    #[cfg_attr(not(feature = "webhook"), allow(unused_mut))]
    pub(crate) fn close(mut self, deadline: Instant) {
        #[cfg(feature = "webhook")]
        if let Stream::Tls(s) = &mut self {
            s.close_notify(deadline);
        }
        let _ = deadline;
        let _ = self.socket().shutdown(std::net::Shutdown::Both);
    }
}

fn read_plain(s: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> io::Result<usize> {
    loop {
        s.set_read_timeout(Some(remaining(deadline)?))?;
        match s.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Err(timed_out()),
            r => return r,
        }
    }
}

fn write_plain(s: &mut TcpStream, mut bytes: &[u8], deadline: Instant) -> io::Result<()> {
    const PIECE: usize = 16 << 10;
    while !bytes.is_empty() {
        s.set_write_timeout(Some(remaining(deadline)?))?;
        let piece = &bytes[..bytes.len().min(PIECE)];
        match s.write(piece) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Err(timed_out()),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
