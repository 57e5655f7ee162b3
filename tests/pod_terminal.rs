//! Issue 41: an interactive exec in one call. `Process::run_tty` on a pseudo-terminal against
//! the test server (raw mode, the size first and on every SIGWINCH that changes it, typing
//! through, Ctrl-D, the terminal restored however the session ends), and
//! `Process::run_with` (stdin in and closed, stdout and stderr apart, the exit code).
#![cfg(unix)]

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use kube_informer::pod::{ExecParams, ExitStatus, Terminal};
use kube_informer::testing::{ApiServer, CommandOutput};
use kube_informer::{Client, Error};
use rustix::fs::{Mode, OFlags};
use rustix::pty::OpenptFlags;
use rustix::termios::{self, LocalModes, Termios, Winsize};

/// A pseudo-terminal: (master, slave), the slave `cols` by `rows`.
fn pty(cols: u16, rows: u16) -> (OwnedFd, OwnedFd) {
    let master = rustix::pty::openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).unwrap();
    rustix::pty::grantpt(&master).unwrap();
    rustix::pty::unlockpt(&master).unwrap();
    let name = rustix::pty::ptsname(&master, Vec::new()).unwrap();
    let slave = rustix::fs::open(
        name.as_c_str(),
        OFlags::RDWR | OFlags::NOCTTY,
        Mode::empty(),
    )
    .unwrap();
    resize(&master, cols, rows);
    (master, slave)
}

fn resize(master: &OwnedFd, cols: u16, rows: u16) {
    let size = Winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    termios::tcsetwinsize(master, size).unwrap();
}

/// The settings a restore must bring back exactly.
fn modes(t: &Termios) -> String {
    format!(
        "{:?} {:?} {:?} {:?} {:?}",
        t.input_modes, t.output_modes, t.control_modes, t.local_modes, t.special_codes
    )
}

fn terminal(slave: &OwnedFd) -> Terminal {
    Terminal::new(slave.try_clone().unwrap(), slave.try_clone().unwrap()).unwrap()
}

fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(30);
    while !ok() {
        assert!(Instant::now() < until, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Everything the terminal shows, read from the master on a thread of its own.
fn screen(master: &OwnedFd) -> crossbeam_channel::Receiver<Vec<u8>> {
    let mut from = std::fs::File::from(master.try_clone().unwrap());
    let (tx, rx) = crossbeam_channel::unbounded();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                return;
            }
        }
    });
    rx
}

fn read_until(rx: &crossbeam_channel::Receiver<Vec<u8>>, seen: &mut Vec<u8>, want: &[u8]) {
    while !seen.windows(want.len()).any(|w| w == want) {
        let more = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| {
                panic!(
                    "{:?} never shown; saw {seen:?}",
                    String::from_utf8_lossy(want)
                )
            });
        seen.extend(more);
    }
}

fn shell_server() -> (ApiServer, Client) {
    let server = ApiServer::start();
    server.create_pod("lab", "web", &["app"]).unwrap();
    server.runtime().echo("sh");
    let client = Client::new(server.client_config()).unwrap();
    (server, client)
}

fn shell() -> ExecParams {
    ExecParams::new(["sh"]).stdin(true).tty(true)
}

#[test]
fn tty_session_sends_the_size_then_each_change_and_restores_the_terminal() {
    let (server, client) = shell_server();
    let rt = server.runtime();
    let (master, slave) = pty(80, 24);
    let before = termios::tcgetattr(&slave).unwrap();
    assert!(before
        .local_modes
        .contains(LocalModes::ICANON | LocalModes::ECHO));
    let term = terminal(&slave);
    let process = client.exec("lab", "web", &shell()).unwrap();
    let session = std::thread::spawn(move || process.run_tty(&term));
    let shown = screen(&master);
    let mut seen = Vec::new();

    // The size first, in raw mode already (kubectl sets raw mode, then sends the size).
    wait_for("the first size", || rt.sizes() == [(80, 24)]);
    let raw = termios::tcgetattr(&slave).unwrap();
    assert!(!raw
        .local_modes
        .intersects(LocalModes::ICANON | LocalModes::ECHO | LocalModes::ISIG));

    // A window change: the new size, sent on the signal.
    resize(&master, 120, 40);
    signal_hook::low_level::raise(signal_hook::consts::SIGWINCH).unwrap();
    wait_for("the new size", || rt.sizes() == [(80, 24), (120, 40)]);

    // A signal that changed nothing sends nothing. The signal is handled before the keys
    // typed after it, so once those are echoed it has been seen.
    signal_hook::low_level::raise(signal_hook::consts::SIGWINCH).unwrap();
    std::fs::File::from(master.try_clone().unwrap())
        .write_all(b"ls\r")
        .unwrap();
    read_until(&shown, &mut seen, b"ls\r");
    resize(&master, 100, 30);
    signal_hook::low_level::raise(signal_hook::consts::SIGWINCH).unwrap();
    wait_for("the third size", || rt.sizes().len() >= 3);
    assert_eq!(rt.sizes(), [(80, 24), (120, 40), (100, 30)]);

    // Ctrl-D reaches the remote shell (raw mode: not the local line discipline), which
    // exits; the call returns although the terminal stays open, and gives the terminal back.
    std::fs::File::from(master.try_clone().unwrap())
        .write_all(&[4])
        .unwrap();
    let status = session.join().unwrap().unwrap();
    assert_eq!(status, ExitStatus::Success);
    assert_eq!(modes(&termios::tcgetattr(&slave).unwrap()), modes(&before));
}

#[test]
fn tty_session_closes_stdin_when_the_terminal_hangs_up() {
    let (_server, client) = shell_server();
    let (master, slave) = pty(80, 24);
    let term = terminal(&slave);
    let process = client.exec("lab", "web", &shell()).unwrap();
    let session = std::thread::spawn(move || process.run_tty(&term));
    wait_for("the first size", || _server.runtime().sizes().len() == 1);
    drop(master);
    // The input's end (a hung-up terminal reads EIO) is the session's stdin's end: the
    // remote shell exits. (A hung-up terminal has no settings left to read back.)
    assert_eq!(session.join().unwrap().unwrap(), ExitStatus::Success);
}

#[test]
fn tty_session_that_fails_restores_the_terminal() {
    let (server, client) = shell_server();
    let (_master, slave) = pty(80, 24);
    let before = termios::tcgetattr(&slave).unwrap();
    server.runtime().drop_streams(1);
    let process = client.exec("lab", "web", &shell()).unwrap();
    let err = process.run_tty(&terminal(&slave)).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err:?}");
    assert_eq!(modes(&termios::tcgetattr(&slave).unwrap()), modes(&before));
}

#[test]
fn raw_mode_is_given_back_when_a_panic_unwinds() {
    let (_master, slave) = pty(80, 24);
    let before = termios::tcgetattr(&slave).unwrap();
    let term = terminal(&slave);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _raw = term.raw_mode().unwrap();
        let raw = termios::tcgetattr(&slave).unwrap();
        assert!(!raw.local_modes.contains(LocalModes::ICANON));
        panic!("in the middle of a session");
    }));
    assert!(caught.is_err());
    assert_eq!(modes(&termios::tcgetattr(&slave).unwrap()), modes(&before));
}

#[test]
fn run_tty_without_a_tty_session_is_refused_and_leaves_the_terminal_alone() {
    let (server, client) = shell_server();
    server.runtime().echo("cat");
    let (_master, slave) = pty(80, 24);
    let before = termios::tcgetattr(&slave).unwrap();
    let process = client
        .exec("lab", "web", &ExecParams::new(["cat"]).stdin(true))
        .unwrap();
    let err = process.run_tty(&terminal(&slave)).unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err:?}");
    assert_eq!(modes(&termios::tcgetattr(&slave).unwrap()), modes(&before));
    assert!(server.runtime().sizes().is_empty());
}

#[test]
fn a_terminal_needs_a_terminal_for_input() {
    let (r, w) = std::os::unix::net::UnixStream::pair().unwrap();
    let err = Terminal::new(OwnedFd::from(r), OwnedFd::from(w)).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
}

#[test]
fn run_with_copies_stdin_in_and_both_outputs_out_and_gives_the_exit_code() {
    let server = ApiServer::start();
    server.create_pod("lab", "web", &["app"]).unwrap();
    server.runtime().command(&["sh"], |i| CommandOutput {
        stdout: [b"got ".as_slice(), &i.stdin].concat(),
        stderr: b"warning\n".to_vec(),
        exit_code: 7,
    });
    let client = Client::new(server.client_config()).unwrap();
    // More than one stdin message, and closed at its end (the command runs only then).
    let input: Vec<u8> = (0..100_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let params = ExecParams::new(["sh", "-c", "cat; exit 7"]).stdin(true);
    let process = client.exec("lab", "web", &params).unwrap();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let status = process
        .run_with(std::io::Cursor::new(input.clone()), &mut out, &mut err)
        .unwrap();
    assert_eq!(status, ExitStatus::Code(7));
    assert_eq!(out, [b"got ".as_slice(), &input].concat());
    assert_eq!(err, b"warning\n");
}
