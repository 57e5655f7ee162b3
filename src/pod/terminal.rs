//! The local terminal of an interactive session (`kubectl exec -it`): raw mode that is always
//! given back, and the window's size and its changes. Unix only.
//!
//! What kubectl does, and so what this does: the input terminal goes into raw mode (bytes
//! one at a time, no local echo, no signals from Ctrl-C or Ctrl-Z: they reach the remote
//! terminal, whose own line discipline acts on them) and comes back to exactly the settings
//! it had when the session ends; the size of the *output* terminal is sent first, then again
//! on every `SIGWINCH` whose size differs from the last one sent (kubectl's `MonitorSize`).
//!
//! Why these dependencies: [rustix](https://docs.rs/rustix) gives `tcgetattr`/`tcsetattr`,
//! `cfmakeraw`, `TIOCGWINSZ` and `poll` as safe calls (the crate has no `unsafe` of its own;
//! on Linux rustix makes the system calls itself, without libc), and it was already in the
//! tree of our tests. A signal handler cannot be installed without `unsafe`, so
//! [signal-hook](https://docs.rs/signal-hook) does it: its handler writes a byte into a
//! socket pair the session polls beside its input (the self-pipe pattern), and it chains to
//! any handler the program had. Polling the size on a timer would be lighter still, but it
//! is not what kubectl does: a resize would arrive late, and an idle session would wake
//! for nothing. crossterm would do all this too, with an event loop and a dozen crates more.
//!
//! The settings are given back by [`RawMode`]'s `Drop`: on return, on error and on a panic
//! that unwinds through it. A program built with `panic = "abort"` runs no `Drop`; the shell
//! then finds the terminal raw (`stty sane` or `reset` mends it), as after `kill -9`.
//!
//! Windows has no `termios`: [`Terminal`] and
//! [`Process::run_tty`](super::Process::run_tty) are not built there;
//! [`Process::run_with_stdio`](super::Process::run_with_stdio) is (`kubectl exec -i`).

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::termios::{self, OptionalActions, Termios};

/// A terminal to run a TTY session on: the input read (and put in raw mode) and the output
/// written to (whose size the remote terminal is given). Usually the program's own
/// ([`Terminal::stdio`]); any pair of descriptors for tests (a pseudo-terminal).
#[derive(Debug)]
pub struct Terminal {
    input: OwnedFd,
    output: OwnedFd,
}

impl Terminal {
    /// The program's stdin and stdout (duplicated descriptors: nothing is closed at drop).
    /// Fails when stdin is not a terminal, where kubectl says "Unable to use a TTY - input
    /// is not a terminal or the right kind of file" and goes on without one.
    pub fn stdio() -> io::Result<Terminal> {
        Terminal::new(
            io::stdin().as_fd().try_clone_to_owned()?,
            io::stdout().as_fd().try_clone_to_owned()?,
        )
    }

    /// A terminal read from `input` (which must be a terminal) and written to `output` (a
    /// terminal or not: when not, no size is sent, as kubectl does).
    pub fn new(input: OwnedFd, output: OwnedFd) -> io::Result<Terminal> {
        if !termios::isatty(&input) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "input is not a terminal",
            ));
        }
        Ok(Terminal { input, output })
    }

    /// The output terminal's size, `(width, height)` in columns and rows; `None` when the
    /// output is not a terminal or does not know its size (0 by 0).
    pub fn size(&self) -> Option<(u16, u16)> {
        let w = termios::tcgetwinsize(&self.output).ok()?;
        (w.ws_col != 0 || w.ws_row != 0).then_some((w.ws_col, w.ws_row))
    }

    /// Puts the input in raw mode until the guard is dropped, which restores the settings
    /// found here (also when a panic unwinds through it).
    ///
    /// ```no_run
    /// # fn main() -> std::io::Result<()> {
    /// let terminal = kube_informer::pod::Terminal::stdio()?;
    /// {
    ///     let _raw = terminal.raw_mode()?;
    ///     // read keys one by one
    /// } // the terminal is as it was
    /// # Ok(()) }
    /// ```
    pub fn raw_mode(&self) -> io::Result<RawMode<'_>> {
        let saved = termios::tcgetattr(&self.input)?;
        let mut raw = saved.clone();
        raw.make_raw();
        termios::tcsetattr(&self.input, OptionalActions::Now, &raw)?;
        Ok(RawMode {
            fd: self.input.as_fd(),
            saved,
        })
    }

    pub(crate) fn input(&self) -> BorrowedFd<'_> {
        self.input.as_fd()
    }

    pub(crate) fn output(&self) -> BorrowedFd<'_> {
        self.output.as_fd()
    }
}

/// Raw mode on a [`Terminal`]'s input; dropping it restores the settings it found.
#[derive(Debug)]
pub struct RawMode<'a> {
    fd: BorrowedFd<'a>,
    saved: Termios,
}

impl Drop for RawMode<'_> {
    fn drop(&mut self) {
        // Nothing better to do with a failure here (a terminal already hung up).
        let _ = termios::tcsetattr(self.fd, OptionalActions::Now, &self.saved);
    }
}
