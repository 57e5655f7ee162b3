//! One call for what `kubectl exec -i` and `kubectl exec -it` do with a session: wire it to
//! the program's standard streams (or a terminal) and give back how the command ended.
//!
//! Without it a caller writes three threads of plumbing: stdin in (closing the session's
//! stdin at EOF, so that `cat` or `sh` sees the end), stdout and stderr out, then the wait;
//! and for a terminal also raw mode, the size and its changes, and the restore. Here:
//!
//! - [`Process::run_with_stdio`]: the program's stdin, stdout and stderr (`kubectl exec -i`);
//! - [`Process::run_with`]: any reader and writers (a file in, a buffer out);
//! - [`Process::run_tty`] (Unix): a [`Terminal`](super::Terminal) in raw mode, its size
//!   sent first and on every change, restored however the session ends (`kubectl exec -it`).
//!
//! The session's stdout is copied on the calling thread, stderr on a scoped thread. Input is
//! read by one thread that the call joins before it returns: on Unix it polls the input
//! beside a wake-up socket (and, for a TTY, `SIGWINCH`), so an input that never ends (a
//! terminal nobody types on) does not keep it. [`Process::run_with`]'s reader cannot be
//! woken that way: when it is still blocked after the session ended, its thread is left to
//! end at its next read (whose bytes go nowhere), as kubectl's own copy does.
//!
//! The exit status is the session's ([`Process::wait`]): kubectl exits with
//! [`ExitStatus::code`], or 1 for a failure to run the command at all.

use std::io::{self, Read, Write};

use super::channels::ExitStatus;
use super::process::{Output, Process, Stdin};
use crate::error::{Error, Result};

/// Size of one stdin message and of the output copy's buffer.
const CHUNK: usize = 32 * 1024;

fn io_error(e: io::Error) -> Error {
    Error::Io {
        request: "exec".into(),
        source: e,
    }
}

impl Process {
    /// Wires the session to this program's stdin, stdout and stderr until it ends, and gives
    /// how the command ended (`kubectl exec -i POD -- CMD`; without `-i`, open the session
    /// without stdin and nothing is read). The session's stdin is closed when the program's
    /// ends, so a command reading to the end (`cat`, `sh -s`, `tar x`) finishes. The
    /// program's stdout is locked for the session (other threads' prints wait for its end).
    ///
    /// ```
    /// # use kube_informer::testing::{ApiServer, CommandOutput};
    /// # let server = ApiServer::start();
    /// # server.create_pod("lab", "web", &["app"]).unwrap();
    /// # server.runtime().command(&["sh"], |_| CommandOutput { exit_code: 7, ..Default::default() });
    /// use kube_informer::pod::ExecParams;
    ///
    /// let client = kube_informer::Client::new(server.client_config())?;
    /// let process = client.exec("lab", "web", &ExecParams::new(["sh", "-c", "exit 7"]))?;
    /// let status = process.run_with_stdio()?;
    /// assert_eq!(status.code(), Some(7)); // kubectl would exit 7
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn run_with_stdio(self) -> Result<ExitStatus> {
        #[cfg(unix)]
        {
            use std::os::fd::AsFd;
            // No stdin at all (closed by the caller's caller): the session's stdin ends at once.
            let input = io::stdin().as_fd().try_clone_to_owned().ok();
            let mut out = io::stdout().lock();
            self.drive_fd(
                input.as_ref().map(|i| i.as_fd()),
                &mut out,
                &mut io::stderr(),
                None,
            )
        }
        #[cfg(not(unix))]
        {
            self.run_with(io::stdin(), io::stdout().lock(), io::stderr())
        }
    }

    /// Copies `stdin` into the session (then closes the session's stdin), the session's
    /// stdout into `stdout` and its stderr into `stderr` until it ends, and gives how the
    /// command ended. Streams the session was opened without are left alone. A write to
    /// `stdout` or `stderr` that fails stops that copy (the rest is discarded), not the
    /// session.
    ///
    /// When `stdin` is still blocked in a read after the session ended (a terminal or a pipe
    /// that stays open), its thread is not waited for: it ends after that read. Prefer
    /// [`run_with_stdio`](Self::run_with_stdio) for the program's own stdin, which is
    /// never left behind.
    ///
    /// ```
    /// # use kube_informer::testing::ApiServer;
    /// # let server = ApiServer::start();
    /// # server.create_pod("lab", "web", &["app"]).unwrap();
    /// # server.runtime().echo("cat");
    /// use kube_informer::pod::{ExecParams, ExitStatus};
    ///
    /// let client = kube_informer::Client::new(server.client_config())?;
    /// let process = client.exec("lab", "web", &ExecParams::new(["cat"]).stdin(true))?;
    /// let (mut out, mut err) = (Vec::new(), Vec::new());
    /// let status = process.run_with(&b"through stdin\n"[..], &mut out, &mut err)?;
    /// assert_eq!((status, out.as_slice()), (ExitStatus::Success, &b"through stdin\n"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn run_with<R, W, E>(mut self, stdin: R, mut stdout: W, mut stderr: E) -> Result<ExitStatus>
    where
        R: Read + Send + 'static,
        W: Write,
        E: Write + Send,
    {
        let pump = match self.stdin() {
            Some(session_in) => Some(
                std::thread::Builder::new()
                    .name(crate::thread_name::thread_name("exec", "in"))
                    .spawn(move || copy_in(stdin, session_in))
                    .map_err(io_error)?,
            ),
            None => None,
        };
        let result = self.copy_out(&mut stdout, &mut stderr);
        if let Some(p) = pump.filter(|p| p.is_finished()) {
            let _ = p.join();
        }
        result
    }

    /// Runs the session on `terminal` as `kubectl exec -it` does: the input in raw mode
    /// (keys, Ctrl-C included, go to the remote terminal), the output terminal's size sent
    /// first and again on every `SIGWINCH` that changes it, the output written as it
    /// comes, and the terminal's settings restored when the call returns, fails or unwinds
    /// from a panic. Unix only (see [`Terminal`](super::Terminal) for why and for Windows).
    ///
    /// The session must have been opened with [`ExecParams::tty`](super::ExecParams::tty)
    /// (stdin too, for a shell one types into); without a TTY this is
    /// [`Error::InvalidInput`].
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let client: kube_informer::Client = unimplemented!();
    /// use kube_informer::pod::{ExecParams, Terminal};
    ///
    /// let params = ExecParams::new(["sh"]).stdin(true).tty(true);
    /// let process = client.exec("default", "web", &params)?;
    /// let status = process.run_tty(&Terminal::stdio()?)?;
    /// std::process::exit(status.code().unwrap_or(1));
    /// # }
    /// ```
    #[cfg(unix)]
    pub fn run_tty(self, terminal: &super::Terminal) -> Result<ExitStatus> {
        use std::os::unix::net::UnixStream;

        let Some(resizer) = self.resizer() else {
            return Err(Error::InvalidInput(
                "run_tty needs a session opened with a TTY (ExecParams::tty)".into(),
            ));
        };
        let mut out =
            std::fs::File::from(terminal.output().try_clone_to_owned().map_err(io_error)?);
        let raw = terminal.raw_mode().map_err(io_error)?;
        // Listening before the first size is read: a change between the two is not lost.
        let (winch, notify) = UnixStream::pair().map_err(io_error)?;
        winch.set_nonblocking(true).map_err(io_error)?;
        notify.set_nonblocking(true).map_err(io_error)?;
        let id = signal_hook::low_level::pipe::register(signal_hook::consts::SIGWINCH, notify)
            .map_err(io_error)?;
        let mut sizes = Sizes {
            winch,
            resizer,
            output: terminal.output(),
            last: None,
        };
        // kubectl sends the size before anything else; a failed send shows in the wait.
        sizes.send_if_changed();
        let result = self.drive_fd(
            Some(terminal.input()),
            &mut out,
            &mut io::sink(),
            Some(&mut sizes),
        );
        signal_hook::low_level::unregister(id);
        drop(raw);
        let _ = out.flush();
        result
    }

    /// The Unix body of `run_with_stdio` and `run_tty`: a joined input thread that polls
    /// `input`, `sizes`' signal socket and a wake-up socket.
    #[cfg(unix)]
    fn drive_fd(
        mut self,
        input: Option<std::os::fd::BorrowedFd<'_>>,
        stdout: &mut dyn Write,
        stderr: &mut (dyn Write + Send),
        sizes: Option<&mut Sizes<'_>>,
    ) -> Result<ExitStatus> {
        use std::os::unix::net::UnixStream;

        let mut session_in = self.stdin();
        let Some(input) = input else {
            if let Some(mut s) = session_in.take() {
                let _ = s.close();
            }
            return self.copy_out(stdout, stderr);
        };
        let (wake_rx, wake_tx) = UnixStream::pair().map_err(io_error)?;
        std::thread::scope(|s| {
            let pump = std::thread::Builder::new()
                .name(crate::thread_name::thread_name("exec", "in"))
                .spawn_scoped(s, move || poll_in(input, session_in, &wake_rx, sizes))
                .map_err(io_error)?;
            let result = self.copy_out(stdout, stderr);
            let _ = wake_tx.shutdown(std::net::Shutdown::Both);
            let _ = pump.join();
            result
        })
    }

    /// Copies stdout here and stderr on a scoped thread until the session ends, then waits.
    fn copy_out(
        mut self,
        stdout: &mut dyn Write,
        stderr: &mut (dyn Write + Send),
    ) -> Result<ExitStatus> {
        let out = self.stdout();
        let err = self.stderr();
        std::thread::scope(|s| {
            let errors = match err {
                Some(e) => Some(
                    std::thread::Builder::new()
                        .name(crate::thread_name::thread_name("exec", "err"))
                        .spawn_scoped(s, move || copy_output(e, stderr))
                        .map_err(io_error)?,
                ),
                None => None,
            };
            if let Some(o) = out {
                copy_output(o, stdout);
            }
            if let Some(e) = errors {
                let _ = e.join();
            }
            Ok::<(), Error>(())
        })?;
        self.wait()
    }
}

/// One output to its writer, flushed as it comes (a prompt without a newline shows), until
/// the session ends or the writer fails (then the handle is dropped: the rest is discarded).
fn copy_output(mut from: Output, to: &mut dyn Write) {
    let mut buf = vec![0u8; CHUNK];
    loop {
        match from.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                if to.write_all(&buf[..n]).and_then(|_| to.flush()).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// A reader into the session's stdin, then the close (the command sees EOF).
fn copy_in(mut from: impl Read, mut to: Stdin) {
    let mut buf = vec![0u8; CHUNK];
    loop {
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let _ = to.close();
}

/// What a TTY session knows to follow the terminal's size.
#[cfg(unix)]
struct Sizes<'a> {
    /// Readable after a `SIGWINCH` (signal-hook writes a byte).
    winch: std::os::unix::net::UnixStream,
    resizer: super::process::Resizer,
    output: std::os::fd::BorrowedFd<'a>,
    last: Option<(u16, u16)>,
}

#[cfg(unix)]
impl Sizes<'_> {
    /// Empties the signal socket first, then reads the size: a signal that comes in between
    /// wakes the poll again rather than being lost.
    fn on_signal(&mut self) {
        let mut drain = [0u8; 64];
        while matches!((&self.winch).read(&mut drain), Ok(n) if n > 0) {}
        self.send_if_changed();
    }

    /// Sends the output terminal's size when it differs from the last one sent (kubectl
    /// sends nothing for a signal that changed nothing, nor for an unknown size).
    fn send_if_changed(&mut self) {
        let Ok(w) = rustix::termios::tcgetwinsize(self.output) else {
            return;
        };
        let size = (w.ws_col, w.ws_row);
        if size == (0, 0) || self.last == Some(size) {
            return;
        }
        if self.resizer.resize(size.0, size.1).is_ok() {
            self.last = Some(size);
        }
    }
}

/// The input thread on Unix: `input` into the session's stdin (closed at the input's end),
/// terminal size changes to the session, until `wake` says the session is over.
#[cfg(unix)]
fn poll_in(
    input: std::os::fd::BorrowedFd<'_>,
    mut session_in: Option<Stdin>,
    wake: &std::os::unix::net::UnixStream,
    mut sizes: Option<&mut Sizes<'_>>,
) {
    use rustix::event::{poll, PollFd, PollFlags};
    use rustix::io::Errno;

    let mut buf = vec![0u8; CHUNK];
    loop {
        let reading = session_in.is_some();
        let (woken, signalled, readable) = {
            let mut fds = Vec::with_capacity(3);
            fds.push(PollFd::new(wake, PollFlags::IN));
            if let Some(s) = &sizes {
                fds.push(PollFd::new(&s.winch, PollFlags::IN));
            }
            if reading {
                fds.push(PollFd::from_borrowed_fd(input, PollFlags::IN));
            }
            match poll(&mut fds, None) {
                Ok(_) => {}
                // A signal (SIGWINCH itself, often) interrupted the wait.
                Err(Errno::INTR) | Err(Errno::AGAIN) => continue,
                // Nothing can be waited for any more: stdin ends (closed by the drop).
                Err(_) => return,
            }
            let ready = |f: &PollFd<'_>| !f.revents().is_empty();
            (
                ready(&fds[0]),
                sizes.is_some() && ready(&fds[1]),
                reading && ready(&fds[fds.len() - 1]),
            )
        };
        if woken {
            return;
        }
        if signalled {
            if let Some(s) = sizes.as_mut() {
                s.on_signal();
            }
        }
        if readable {
            match rustix::io::read(input, &mut buf) {
                Ok(n) if n > 0 => {
                    let sent = session_in
                        .as_mut()
                        .is_some_and(|s| s.write_all(&buf[..n]).is_ok());
                    if !sent {
                        // The session is gone; its stdin is of no use any more.
                        session_in = None;
                    }
                }
                Err(Errno::INTR) | Err(Errno::AGAIN) => {}
                // The end of the input (0), or a terminal hung up (EIO): the command sees EOF.
                _ => {
                    if let Some(mut s) = session_in.take() {
                        let _ = s.close();
                    }
                }
            }
        }
    }
}
