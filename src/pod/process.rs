//! A running exec or attach session: stdin, stdout and stderr as `std::io` handles usable
//! from different threads, terminal resize, cancel, and the exit status.
//!
//! One reader thread (`ki/<pod>/rd`) reads the server's messages and sorts them into a
//! bounded buffer per output ([`PIPE_CAPACITY`]): when the caller does not read stdout, the
//! reader waits, the server's frames stay in the TCP buffers, and the kubelet stops reading
//! the process's output (back-pressure, bounded memory). Read both outputs (or drop the
//! handle you do not want: its bytes are then discarded) while waiting for the status, as
//! with `std::process::Child`.
//!
//! Every wait is bounded or stoppable: [`Canceller::cancel`] (from any thread) shuts the
//! connection down and ends the session with [`Error::Cancelled`]; an idle timeout
//! ([`ExecParams::idle_timeout`](super::ExecParams::idle_timeout)) ends it when *neither
//! direction* moves for that long: no byte from the server and no byte of stdin taken by
//! it. A long upload to a command that prints nothing (`tar -x` during `kubectl cp`) is
//! therefore not idle, and a server that neither sends nor reads is (a stdin write blocked
//! on it then fails). The client's request timeout bounds the upgrade only, as kubectl's:
//! kubectl has no limit at all on an established session.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::channels::{self, ChannelProtocol, ExitStatus, ServerFrame};
use super::websocket::{Received, WsReader, WsWriter};
use crate::client::duplex::Duplex;
use crate::client::upgrade::Upgraded;
use crate::error::{Error, Result};

/// Bytes buffered per output before the reader waits for the caller.
pub const PIPE_CAPACITY: usize = 256 * 1024;

/// Largest stdin message.
const MAX_STDIN_MESSAGE: usize = 32 * 1024;

#[derive(Default)]
struct PipeState {
    buf: VecDeque<u8>,
    /// No more bytes will come; `Some` error when the session failed.
    ended: bool,
    error: Option<(io::ErrorKind, String)>,
    /// The caller dropped its handle: bytes are discarded.
    unread: bool,
}

/// A bounded byte buffer between the reader thread and a caller.
#[derive(Default)]
struct Pipe {
    state: Mutex<PipeState>,
    changed: Condvar,
}

impl Pipe {
    /// Appends, waiting for room; false when the session is stopping.
    fn push(&self, mut data: &[u8], stop: &AtomicBool) -> bool {
        let mut s = self.state.lock();
        while !data.is_empty() {
            if s.unread {
                return true;
            }
            if stop.load(Ordering::SeqCst) {
                return false;
            }
            let room = PIPE_CAPACITY.saturating_sub(s.buf.len());
            if room == 0 {
                self.changed.wait_for(&mut s, Duration::from_millis(100));
                continue;
            }
            let n = room.min(data.len());
            s.buf.extend(&data[..n]);
            data = &data[n..];
            self.changed.notify_all();
        }
        true
    }

    fn end(&self, error: Option<(io::ErrorKind, String)>) {
        let mut s = self.state.lock();
        s.ended = true;
        if s.error.is_none() {
            s.error = error;
        }
        self.changed.notify_all();
    }

    fn read(&self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        let mut s = self.state.lock();
        loop {
            if !s.buf.is_empty() {
                let n = out.len().min(s.buf.len());
                for (o, b) in out.iter_mut().zip(s.buf.drain(..n)) {
                    *o = b;
                }
                self.changed.notify_all();
                return Ok(n);
            }
            if s.ended {
                return match &s.error {
                    Some((kind, m)) => Err(io::Error::new(*kind, m.clone())),
                    None => Ok(0),
                };
            }
            self.changed.wait(&mut s);
        }
    }

    fn abandon(&self) {
        let mut s = self.state.lock();
        s.unread = true;
        s.buf.clear();
        self.changed.notify_all();
    }
}

/// What the session's threads share.
struct Control {
    duplex: Duplex,
    writer: WsWriter,
    protocol: ChannelProtocol,
    stdout: Pipe,
    stderr: Pipe,
    cancelled: AtomicBool,
    /// Set when the reader ends (the pipes' waits end with it).
    stop: AtomicBool,
    stdin_closed: AtomicBool,
    request: String,
}

impl Control {
    /// Cancelled by [`Canceller::cancel`] or by the client's token (which ends the
    /// connection: see [`Client::with_cancel`](crate::Client::with_cancel)).
    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst) || self.duplex.cancelled()
    }
}

/// The stdin of a session: each `write` is sent as one or more messages on channel 0.
/// [`close`](Stdin::close) (or drop) ends stdin: with `v5.channel.k8s.io` the command sees
/// EOF; with `v4.channel.k8s.io` there is no way to say so and nothing is sent.
pub struct Stdin(Arc<Control>);

impl Stdin {
    /// Ends stdin (v5: the close signal for channel 0; v4: nothing can be sent). Once.
    pub fn close(&mut self) -> io::Result<()> {
        if self.0.stdin_closed.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        match self.0.protocol {
            ChannelProtocol::V5 => self
                .0
                .writer
                .send(channels::encode(channels::CLOSE, &[channels::STDIN])),
            ChannelProtocol::V4 => Ok(()),
        }
    }
}

impl Write for Stdin {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.0.stdin_closed.load(Ordering::SeqCst) {
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "stdin is closed"));
        }
        let data = &data[..data.len().min(MAX_STDIN_MESSAGE)];
        self.0
            .writer
            .send(channels::encode(channels::STDIN, data))?;
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Stdin {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

impl std::fmt::Debug for Stdin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Stdin")
    }
}

/// One output of a session (stdout or stderr), read until the session ends. Dropping it
/// discards what the command writes there.
pub struct Output {
    control: Arc<Control>,
    stderr: bool,
}

impl Output {
    fn pipe(&self) -> &Pipe {
        if self.stderr {
            &self.control.stderr
        } else {
            &self.control.stdout
        }
    }
}

impl Read for Output {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        self.pipe().read(out)
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        self.pipe().abandon();
    }
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.stderr { "Stderr" } else { "Stdout" })
    }
}

/// Resizes the session's terminal (a TTY session); cheap to clone, usable from any thread.
#[derive(Clone)]
pub struct Resizer(Arc<Control>);

impl Resizer {
    /// Tells the terminal it is now `width` columns by `height` rows.
    pub fn resize(&self, width: u16, height: u16) -> io::Result<()> {
        self.0.writer.send(channels::resize_message(width, height))
    }
}

impl std::fmt::Debug for Resizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Resizer")
    }
}

/// Ends a session from any thread; cheap to clone.
#[derive(Clone)]
pub struct Canceller(Arc<Control>);

impl Canceller {
    /// Shuts the connection down: blocked reads and writes return, and
    /// [`Process::wait`] gives [`Error::Cancelled`].
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::SeqCst);
        self.0.stop.store(true, Ordering::SeqCst);
        self.0.duplex.shutdown();
        self.0.stdout.changed.notify_all();
        self.0.stderr.changed.notify_all();
    }
}

impl std::fmt::Debug for Canceller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Canceller")
    }
}

/// A running exec or attach session. See the [module docs](self).
pub struct Process {
    control: Arc<Control>,
    stdin: Option<Stdin>,
    stdout: Option<Output>,
    stderr: Option<Output>,
    tty: bool,
    reader: Option<JoinHandle<Result<ExitStatus>>>,
}

impl std::fmt::Debug for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Process")
            .field("request", &self.control.request)
            .field("protocol", &self.control.protocol)
            .finish_non_exhaustive()
    }
}

/// Which streams a session asked for.
pub(crate) struct Streams {
    pub stdin: bool,
    pub stdout: bool,
    pub stderr: bool,
    pub tty: bool,
    pub idle_timeout: Option<Duration>,
    pub subject: String,
}

impl Process {
    pub(crate) fn start(up: Upgraded, streams: Streams) -> Result<Process> {
        let protocol = ChannelProtocol::from_name(&up.protocol).ok_or_else(|| Error::Decode {
            request: up.request.clone(),
            message: format!("unexpected subprotocol {:?}", up.protocol),
        })?;
        if let Some(d) = streams.idle_timeout {
            let _ = up.duplex.set_read_timeout(Some(d));
        }
        let control = Arc::new(Control {
            duplex: up.duplex,
            writer: up.writer,
            protocol,
            stdout: Pipe::default(),
            stderr: Pipe::default(),
            cancelled: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            stdin_closed: AtomicBool::new(!streams.stdin),
            request: up.request,
        });
        let c = Arc::clone(&control);
        let idle = streams.idle_timeout;
        let mut reader = up.reader;
        let handle = std::thread::Builder::new()
            .name(crate::thread_name::thread_name(&streams.subject, "rd"))
            .spawn(move || {
                let result = read_session(&mut reader, &c, idle);
                c.stop.store(true, Ordering::SeqCst);
                let error = match &result {
                    Err(e) if !c.is_cancelled() => Some((io::ErrorKind::Other, e.to_string())),
                    // Not `Interrupted`: `read_to_end` and friends retry that forever.
                    Err(_) => Some((io::ErrorKind::ConnectionAborted, "cancelled".to_owned())),
                    Ok(_) => None,
                };
                c.stdout.end(error.clone());
                c.stderr.end(error);
                c.duplex.shutdown();
                result
            })
            .map_err(|e| Error::Io {
                request: control.request.clone(),
                source: e,
            })?;
        Ok(Process {
            stdin: streams.stdin.then(|| Stdin(Arc::clone(&control))),
            stdout: streams.stdout.then(|| Output {
                control: Arc::clone(&control),
                stderr: false,
            }),
            stderr: (streams.stderr && !streams.tty).then(|| Output {
                control: Arc::clone(&control),
                stderr: true,
            }),
            tty: streams.tty,
            control,
            reader: Some(handle),
        })
    }

    /// Takes stdin (once; `None` when the session was opened without stdin).
    pub fn stdin(&mut self) -> Option<Stdin> {
        self.stdin.take()
    }

    /// Takes stdout (once; `None` when not asked for). With a TTY it carries stderr too.
    pub fn stdout(&mut self) -> Option<Output> {
        self.stdout.take()
    }

    /// Takes stderr (once; `None` when not asked for, and always with a TTY).
    pub fn stderr(&mut self) -> Option<Output> {
        self.stderr.take()
    }

    /// Resizes the terminal (`None` without a TTY).
    pub fn resizer(&self) -> Option<Resizer> {
        self.tty.then(|| Resizer(Arc::clone(&self.control)))
    }

    /// Ends the session from another thread.
    pub fn canceller(&self) -> Canceller {
        Canceller(Arc::clone(&self.control))
    }

    /// The subprotocol in use: `v5.channel.k8s.io`, or `v4.channel.k8s.io` from a server
    /// that has no v5 (then closing stdin cannot be told to the command).
    pub fn protocol(&self) -> ChannelProtocol {
        self.control.protocol
    }

    /// Waits for the session to end and gives how the command ended. Handles not taken are
    /// dropped first (their output discarded, stdin closed).
    ///
    /// Errors: [`Error::Cancelled`] after [`Canceller::cancel`]; [`Error::Io`] when the
    /// connection failed or the server went silent past the idle timeout, or the session
    /// ended without a status (a dropped stream); [`Error::Decode`] for a protocol
    /// violation (a message on an unknown channel, a status that is not JSON, ...).
    pub fn wait(mut self) -> Result<ExitStatus> {
        self.stdin.take();
        self.stdout.take();
        self.stderr.take();
        let handle = self.reader.take().expect("the reader is joined once");
        let result = handle.join().unwrap_or_else(|_| {
            Err(Error::Decode {
                request: self.control.request.clone(),
                message: "the session's reader thread panicked".into(),
            })
        });
        if self.control.is_cancelled() {
            return Err(Error::Cancelled {
                request: self.control.request.clone(),
            });
        }
        result
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Some(h) = self.reader.take() {
            Canceller(Arc::clone(&self.control)).cancel();
            let _ = h.join();
        }
    }
}

/// `1.5 s`, `120 s`, `250 ms`: an idle timeout as a person reads it.
fn seconds(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{} s", d.as_secs_f64())
    }
}

/// The reader thread: messages into the pipes until the status and the close. `idle`: the
/// session's idle timeout (the socket's read timeout was set to it).
fn read_session(reader: &mut WsReader, c: &Control, idle: Option<Duration>) -> Result<ExitStatus> {
    let io_err = |e: io::Error| Error::Io {
        request: c.request.clone(),
        source: e,
    };
    let bad = |message: String| Error::Decode {
        request: c.request.clone(),
        message,
    };
    let mut status = None;
    loop {
        let message = match reader.read() {
            Ok(Received::Binary(m)) => m,
            Ok(Received::Text) => {
                return Err(bad("a text message on a binary channel protocol".into()))
            }
            Ok(Received::Closed(code)) => {
                return match status {
                    Some(s) => Ok(s),
                    None => Err(io_err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("the session ended (close code {code}) without an exit status"),
                    ))),
                };
            }
            Err(e) if status.is_some() => {
                // The status is all that matters once it came: a peer that drops TCP
                // instead of finishing the close handshake does not undo it.
                log::debug!("{}: after the status: {e}", c.request);
                return Ok(status.unwrap_or(ExitStatus::Success));
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                let Some(idle) = idle else {
                    return Err(io_err(e));
                };
                // The read's own bound ran out; the session is idle only if nothing went
                // the other way either (stdin still draining into the server).
                let quiet = c.duplex.quiet_for();
                if quiet < idle {
                    let rest = (idle - quiet).max(Duration::from_millis(1));
                    let _ = c.duplex.set_read_timeout(Some(rest));
                    continue;
                }
                return Err(io_err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "nothing moved either way for {} (the idle timeout)",
                        seconds(idle)
                    ),
                )));
            }
            Err(e) => return Err(io_err(e)),
        };
        match channels::decode_server_frame(c.protocol, &message).map_err(|e| bad(e.0))? {
            ServerFrame::Stdout(b) => {
                if !c.stdout.push(b, &c.stop) {
                    return Err(Error::Cancelled {
                        request: c.request.clone(),
                    });
                }
            }
            ServerFrame::Stderr(b) => {
                if !c.stderr.push(b, &c.stop) {
                    return Err(Error::Cancelled {
                        request: c.request.clone(),
                    });
                }
            }
            ServerFrame::Status([]) => {}
            ServerFrame::Status(b) => {
                if status.is_some() {
                    return Err(bad("a second status message".into()));
                }
                status = Some(ExitStatus::from_status_json(b).map_err(|e| bad(e.0))?);
                c.stdout.end(None);
                c.stderr.end(None);
            }
            ServerFrame::Close(channels::STDOUT) => c.stdout.end(None),
            ServerFrame::Close(channels::STDERR) => c.stderr.end(None),
            ServerFrame::Close(_) => {}
        }
    }
}
