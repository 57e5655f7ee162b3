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
//!
//! Every socket read or write that moves a byte, either way, is noted
//! ([`Duplex::quiet_for`]): an exec session's idle timeout counts only the time when neither
//! direction moves, so a long upload to a command that prints nothing (`tar -x`) is not
//! idle, and a session whose peer neither sends nor drains is.
//!
//! The bytes usually travel on the TCP connection itself; through an `https://` proxy they
//! travel in the tunnel inside the TLS session with the proxy, itself a `Duplex` (a
//! [`Carrier::Tunnel`]): the server's TLS then runs inside the proxy's, and shutting the TCP
//! connection down ends both.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::cancel::{Attached, Cancel};

/// What a [`Duplex`] carries its bytes on.
pub(crate) enum Carrier {
    /// The TCP connection.
    Tcp(TcpStream),
    /// The tunnel in another duplex (the TLS session with an `https://` proxy); `sock` is
    /// its TCP connection.
    Tunnel {
        sock: TcpStream,
        read: ReadHalf,
        write: WriteHalf,
    },
}

impl Carrier {
    /// The TCP connection underneath.
    pub fn tcp(&self) -> &TcpStream {
        match self {
            Carrier::Tcp(s) | Carrier::Tunnel { sock: s, .. } => s,
        }
    }

    /// A read end, a write end and the TCP connection (for shutdown and timeouts).
    #[allow(clippy::type_complexity)]
    fn into_parts(self) -> io::Result<(Box<dyn Read + Send>, Box<dyn Write + Send>, TcpStream)> {
        Ok(match self {
            Carrier::Tcp(s) => (Box::new(s.try_clone()?), Box::new(s.try_clone()?), s),
            Carrier::Tunnel { sock, read, write } => (Box::new(read), Box::new(write), sock),
        })
    }
}

impl Read for Carrier {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Carrier::Tcp(s) => s.read(buf),
            Carrier::Tunnel { read, .. } => read.read(buf),
        }
    }
}

impl Write for Carrier {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match self {
            Carrier::Tcp(s) => s.write(data),
            Carrier::Tunnel { write, .. } => write.write(data),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The shared part of both halves.
struct Shared {
    /// Registered with the client's cancellation token (see [`Duplex::end_on_cancel`]);
    /// dropped with the last handle, which unregisters it.
    cancel: Mutex<Option<Attached>>,
    /// Set when the token ended the connection.
    cancelled: AtomicBool,
    /// Kept to shut the socket down from any thread.
    sock: TcpStream,
    tls: Option<Mutex<rustls::Connection>>,
    /// Where the writes go, and the buffer TLS records are written into before it; its lock
    /// orders the writes.
    write: Mutex<(Box<dyn Write + Send>, Vec<u8>)>,
    /// When the duplex was made, and the last time a byte moved either way (nanoseconds
    /// after `born`).
    born: Instant,
    moved: AtomicU64,
}

impl Shared {
    /// Notes that bytes moved now.
    fn mark(&self) {
        let at = u64::try_from(self.born.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.moved.fetch_max(at, Ordering::Relaxed);
    }

    /// Writes all of `data` to `sock`, noting each write that moves bytes (a slow reader on
    /// the other side still counts as moving, write by write).
    fn write_all(&self, sock: &mut (dyn Write + Send), mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            match sock.write(data) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "the connection took no more bytes",
                    ))
                }
                Ok(n) => {
                    self.mark();
                    data = &data[n..];
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
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
        Duplex::split_carrier(Carrier::Tcp(sock), tls, already_read)
    }

    /// [`split`](Self::split) over any [`Carrier`].
    pub fn split_carrier(
        carrier: Carrier,
        tls: Option<rustls::Connection>,
        already_read: Vec<u8>,
    ) -> io::Result<(Duplex, ReadHalf, WriteHalf)> {
        let (read, write, sock) = carrier.into_parts()?;
        let shared = Arc::new(Shared {
            cancel: Mutex::new(None),
            cancelled: AtomicBool::new(false),
            write: Mutex::new((write, Vec::new())),
            tls: tls.map(|mut c| {
                c.set_buffer_limit(None);
                Mutex::new(c)
            }),
            sock,
            born: Instant::now(),
            moved: AtomicU64::new(0),
        });
        let read = ReadHalf {
            shared: Arc::clone(&shared),
            sock: read,
            plain: already_read,
            at: 0,
            raw: vec![0; 64 * 1024],
            raw_at: 0,
            raw_len: 0,
        };
        // Plain text read past the head may also sit in the TLS state already.
        let write = WriteHalf(Arc::clone(&shared));
        Ok((Duplex(shared), read, write))
    }

    /// Shuts the socket down both ways.
    pub fn shutdown(&self) {
        let _ = self.0.sock.shutdown(Shutdown::Both);
    }

    /// Shuts the connection down when `token` is cancelled (at once if it already is), for
    /// as long as a handle of it lives: a session on a client made with
    /// [`Client::with_cancel`](super::Client::with_cancel) ends with the client's other
    /// requests. The hook holds the connection weakly, so it keeps nothing alive.
    pub fn end_on_cancel(&self, token: &Cancel) {
        let weak = Arc::downgrade(&self.0);
        let attached = token.on_cancel(move || {
            if let Some(shared) = weak.upgrade() {
                shared.cancelled.store(true, Ordering::SeqCst);
                let _ = shared.sock.shutdown(Shutdown::Both);
            }
        });
        *self.0.cancel.lock() = attached;
    }

    /// True once the token given to [`end_on_cancel`](Self::end_on_cancel) ended the
    /// connection.
    pub fn cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }

    /// Bounds each read of the socket (`None`: no bound).
    pub fn set_read_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        self.0.sock.set_read_timeout(d)
    }

    /// How long since a byte last moved either way (read from the socket, or written to
    /// it); since the split when none has.
    pub fn quiet_for(&self) -> Duration {
        let moved = Duration::from_nanos(self.0.moved.load(Ordering::Relaxed));
        self.0.born.elapsed().saturating_sub(moved)
    }
}

/// The read half: one reader at a time.
pub(crate) struct ReadHalf {
    shared: Arc<Shared>,
    /// The carrier's read end.
    sock: Box<dyn Read + Send>,
    /// Decrypted bytes not yet handed out, from `at`.
    plain: Vec<u8>,
    at: usize,
    /// Bytes read from the socket; those from `raw_at` to `raw_len` not yet given to rustls.
    raw: Vec<u8>,
    raw_at: usize,
    raw_len: usize,
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
                let n = self.sock.read(buf)?;
                if n > 0 {
                    self.shared.mark();
                }
                return Ok(n);
            };
            // Whatever rustls decrypted already (the handshake's leftovers, or the rest of
            // the last read) goes straight into the caller's buffer; then what is left of
            // the last socket read is fed to rustls, no more at a time than its bounded
            // plaintext buffer takes.
            let wants_write = {
                let mut c = tls.lock();
                loop {
                    match c.reader().read(buf) {
                        Ok(n) => return Ok(n), // 0: the peer's close_notify
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {}
                        Err(e) => return Err(e),
                    }
                    if self.raw_at == self.raw_len {
                        break;
                    }
                    let mut slice = &self.raw[self.raw_at..self.raw_len];
                    self.raw_at += c.read_tls(&mut slice)?;
                    c.process_new_packets()
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                }
                c.wants_write()
            };
            if wants_write {
                // A TLS message of its own to answer (a key update): sent unless a writer holds
                // the socket, in which case its next write carries it.
                if let Some(mut w) = self.shared.write.try_lock() {
                    let (sock, out) = &mut *w;
                    out.clear();
                    {
                        let mut c = tls.lock();
                        while c.wants_write() {
                            c.write_tls(out)?;
                        }
                    }
                    self.shared.write_all(sock.as_mut(), out)?;
                }
            }
            let n = self.sock.read(&mut self.raw)?;
            if n == 0 {
                return Ok(0);
            }
            self.shared.mark();
            (self.raw_at, self.raw_len) = (0, n);
        }
    }
}

/// The write half: cheap to clone; each `write` goes out whole, in order.
#[derive(Clone)]
pub(crate) struct WriteHalf(Arc<Shared>);

impl Write for WriteHalf {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let mut w = self.0.write.lock();
        let (sock, out) = &mut *w;
        match &self.0.tls {
            None => self.0.write_all(sock.as_mut(), data)?,
            Some(tls) => {
                out.clear();
                {
                    let mut c = tls.lock();
                    c.writer().write_all(data)?;
                    while c.wants_write() {
                        c.write_tls(out)?;
                    }
                }
                self.0.write_all(sock.as_mut(), out)?;
                // A large message's records are not kept between writes.
                if out.capacity() > 1 << 20 {
                    *out = Vec::new();
                }
            }
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
