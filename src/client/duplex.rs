//! A TCP connection, with or without TLS, that one thread reads while others write.
//!
//! A WebSocket session (exec, attach, port-forward) reads the server's frames on one thread
//! while the caller's threads write stdin, resizes or forwarded bytes. rustls keeps one state
//! for both directions, so a plain `StreamOwned` would make a writer wait for a blocked read
//! (and a busy reader would starve writers). Here the read half blocks on the socket without
//! any lock and takes the TLS lock only to decrypt what arrived; a write encrypts under the
//! TLS lock, then sends under a separate write lock, so writes keep their order and a writer
//! blocked by a full send buffer never stops the reader from draining the other direction.
//! [`Duplex::shutdown`] ends both from any thread (cancel, stop).

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

/// The shared part of both halves.
struct Shared {
    /// Kept to shut the socket down from any thread.
    sock: TcpStream,
    tls: Option<Mutex<rustls::Connection>>,
    /// The socket the writes go to; its lock orders them.
    write: Mutex<TcpStream>,
}

/// Ends a connection from any thread: blocked reads and writes return at once.
#[derive(Clone)]
pub(crate) struct Duplex(Arc<Shared>);

impl std::fmt::Debug for Duplex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Duplex")
            .field("tls", &self.0.tls.is_some())
            .finish()
    }
}

impl Duplex {
    /// Splits `sock` (with its TLS state, once the handshake is done) into a read half and a
    /// write half. `already_read`: bytes read past the HTTP head, served first.
    pub fn split(
        sock: TcpStream,
        tls: Option<rustls::Connection>,
        already_read: Vec<u8>,
    ) -> io::Result<(Duplex, ReadHalf, WriteHalf)> {
        let shared = Arc::new(Shared {
            write: Mutex::new(sock.try_clone()?),
            tls: tls.map(|mut c| {
                c.set_buffer_limit(None);
                Mutex::new(c)
            }),
            sock: sock.try_clone()?,
        });
        let read = ReadHalf {
            shared: Arc::clone(&shared),
            sock,
            plain: already_read,
            at: 0,
            raw: vec![0; 32 * 1024],
        };
        // Plain text read past the head may also sit in the TLS state already.
        let write = WriteHalf(Arc::clone(&shared));
        Ok((Duplex(shared), read, write))
    }

    /// Shuts the socket down both ways.
    pub fn shutdown(&self) {
        let _ = self.0.sock.shutdown(Shutdown::Both);
    }

    /// Bounds each read of the socket (`None`: no bound).
    pub fn set_read_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        self.0.sock.set_read_timeout(d)
    }
}

/// The read half: one reader at a time.
pub(crate) struct ReadHalf {
    shared: Arc<Shared>,
    sock: TcpStream,
    /// Decrypted bytes not yet handed out, from `at`.
    plain: Vec<u8>,
    at: usize,
    raw: Vec<u8>,
}

impl Read for ReadHalf {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.at < self.plain.len() {
                let n = buf.len().min(self.plain.len() - self.at);
                buf[..n].copy_from_slice(&self.plain[self.at..self.at + n]);
                self.at += n;
                if self.at == self.plain.len() {
                    self.plain.clear();
                    self.at = 0;
                }
                return Ok(n);
            }
            let Some(tls) = &self.shared.tls else {
                return self.sock.read(buf);
            };
            // Whatever rustls decrypted already (the handshake's leftovers) first.
            if drain_plain(&mut tls.lock(), &mut self.plain)? {
                continue;
            }
            let n = self.sock.read(&mut self.raw)?;
            if n == 0 {
                return Ok(0);
            }
            let mut wants_write = false;
            {
                let mut c = tls.lock();
                let mut slice = &self.raw[..n];
                while !slice.is_empty() {
                    c.read_tls(&mut slice)?;
                    c.process_new_packets()
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                    drain_plain(&mut c, &mut self.plain)?;
                }
                wants_write |= c.wants_write();
            }
            if wants_write {
                // A TLS message of its own to answer (a key update): sent unless a writer holds
                // the socket, in which case its next write carries it.
                if let Some(mut w) = self.shared.write.try_lock() {
                    let mut out = Vec::new();
                    {
                        let mut c = tls.lock();
                        while c.wants_write() {
                            c.write_tls(&mut out)?;
                        }
                    }
                    w.write_all(&out)?;
                }
            }
        }
    }
}

/// Moves rustls's decrypted bytes into `plain`; true when there were some.
fn drain_plain(c: &mut rustls::Connection, plain: &mut Vec<u8>) -> io::Result<bool> {
    let start = plain.len();
    let mut chunk = [0u8; 8192];
    loop {
        match c.reader().read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => plain.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e),
        }
    }
    Ok(plain.len() > start)
}

/// The write half: cheap to clone; each `write` goes out whole, in order.
#[derive(Clone)]
pub(crate) struct WriteHalf(Arc<Shared>);

impl Write for WriteHalf {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let mut sock = self.0.write.lock();
        match &self.0.tls {
            None => sock.write_all(data)?,
            Some(tls) => {
                let mut out = Vec::with_capacity(data.len() + 64);
                {
                    let mut c = tls.lock();
                    c.writer().write_all(data)?;
                    while c.wants_write() {
                        c.write_tls(&mut out)?;
                    }
                }
                sock.write_all(&out)?;
            }
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
