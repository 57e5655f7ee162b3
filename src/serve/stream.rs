//! One connection's byte stream, plain or TLS, read and written against deadlines.
//!
//! Every read and write first sets the socket's timeout to what is left before the
//! operation's deadline, so a wait on a client never outlives the bound it was given,
//! however the client paces its bytes.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Instant;

/// A plain or TLS connection.
pub(crate) enum Stream {
    Plain(TcpStream),
    #[cfg(feature = "webhook")]
    Tls(Box<rustls::StreamOwned<rustls::ServerConnection, TcpStream>>),
}

fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "deadline passed")
}

fn remaining(deadline: Instant) -> io::Result<std::time::Duration> {
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
        self.socket().set_read_timeout(Some(remaining(deadline)?))?;
        loop {
            let r = match self {
                Stream::Plain(s) => s.read(buf),
                #[cfg(feature = "webhook")]
                Stream::Tls(s) => s.read(buf),
            };
            match r {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock) => return Err(timed_out()),
                // A TLS peer that closes without close_notify: the same as a plain close.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                r => return r,
            }
        }
    }

    /// Writes all of `bytes` before `deadline`, in pieces, the deadline checked before each.
    pub(crate) fn write_all_by(&mut self, mut bytes: &[u8], deadline: Instant) -> io::Result<()> {
        const PIECE: usize = 16 << 10;
        while !bytes.is_empty() {
            self.socket()
                .set_write_timeout(Some(remaining(deadline)?))?;
            let piece = &bytes[..bytes.len().min(PIECE)];
            let n = match self {
                Stream::Plain(s) => s.write(piece),
                #[cfg(feature = "webhook")]
                Stream::Tls(s) => s.write(piece),
            };
            match n {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => bytes = &bytes[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Err(timed_out()),
                Err(e) => return Err(e),
            }
        }
        self.socket()
            .set_write_timeout(Some(remaining(deadline)?))?;
        match self {
            Stream::Plain(s) => s.flush(),
            #[cfg(feature = "webhook")]
            Stream::Tls(s) => s.flush(),
        }
    }

    /// Ends the connection: TLS's close_notify (best effort, bounded by `deadline`), then
    /// the socket closed both ways.
    #[cfg_attr(not(feature = "webhook"), allow(unused_mut))]
    pub(crate) fn close(mut self, deadline: Instant) {
        #[cfg(feature = "webhook")]
        if let Stream::Tls(s) = &mut self {
            s.conn.send_close_notify();
            if let Ok(left) = remaining(deadline) {
                let _ = s.sock.set_write_timeout(Some(left));
                let _ = s.conn.write_tls(&mut s.sock);
            }
        }
        let _ = deadline;
        let _ = self.socket().shutdown(std::net::Shutdown::Both);
    }
}
