//! The test server's container runtime: what exec, attach and port-forward reach, set up by
//! the test ([`ApiServer::runtime`](crate::testing::ApiServer::runtime)).
//!
//! - commands, registered by argv (or by their first word) with their output and exit code,
//!   or as a closure over what they read on stdin (run when stdin ends), or as an
//!   interactive echo (`cat`: every stdin message straight back on stdout);
//! - an attachable process per pod: a `cat` (stdin back on stdout, as the captures' lab
//!   kubelet), plus whatever the test writes with [`Runtime::attach_output`];
//! - container ports mapped to local listeners the test provides (port-forward dials them);
//! - a kubelet that drops the stream ([`Runtime::drop_streams`]): the next sessions are cut
//!   right after the upgrade, without a status or a close frame; or part way through a
//!   command's output ([`Runtime::cut_streams`]).
//!
//! A command not registered fails as the captures show (`exec: "x": executable file not
//! found in $PATH`, after the upgrade).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use crossbeam_channel::Sender;
use parking_lot::Mutex;

/// What a command got: its argv, everything it read on stdin, whether it has a terminal and
/// the terminal sizes it was given (resize messages, in order).
#[derive(Clone, Debug, Default)]
pub struct ExecInput {
    /// The command and its arguments.
    pub argv: Vec<String>,
    /// stdin, whole (empty without stdin).
    pub stdin: Vec<u8>,
    /// Whether the session asked for a TTY.
    pub tty: bool,
    /// Every resize received, `(width, height)`.
    pub sizes: Vec<(u16, u16)>,
}

/// What a command wrote and how it exited.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandOutput {
    /// stdout.
    pub stdout: Vec<u8>,
    /// stderr (with a TTY, written after stdout on the same stream).
    pub stderr: Vec<u8>,
    /// The exit code.
    pub exit_code: i32,
}

type CommandFn = dyn Fn(&ExecInput) -> CommandOutput + Send + Sync;

#[derive(Clone)]
pub(crate) enum Behaviour {
    Run(Arc<CommandFn>),
    Echo,
}

#[derive(Default)]
struct State {
    commands: Vec<(Vec<String>, Behaviour)>,
    ports: HashMap<(String, String, u16), SocketAddr>,
    attached: HashMap<(String, String), Vec<Sender<Vec<u8>>>>,
    drops: usize,
    /// Sessions to cut after some stdout: `(how many more, after how many bytes)`.
    cuts: (usize, usize),
    sessions: usize,
    /// Every terminal size any session was sent, in order.
    sizes: Vec<(u16, u16)>,
}

/// See the [module docs](self).
#[derive(Default)]
pub struct Runtime {
    state: Mutex<State>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").finish_non_exhaustive()
    }
}

impl Runtime {
    /// A command that prints `stdout` and `stderr` and exits with `code`, whatever its input.
    pub fn output(
        stdout: &[u8],
        stderr: &[u8],
        code: i32,
    ) -> impl Fn(&ExecInput) -> CommandOutput + Send + Sync + 'static {
        let out = CommandOutput {
            stdout: stdout.to_vec(),
            stderr: stderr.to_vec(),
            exit_code: code,
        };
        move |_| out.clone()
    }

    /// Registers a command: `argv` exactly, or any argv starting with it when `argv` is one
    /// word. Later registrations win.
    pub fn command(
        &self,
        argv: &[&str],
        run: impl Fn(&ExecInput) -> CommandOutput + Send + Sync + 'static,
    ) {
        let argv = argv.iter().map(|s| s.to_string()).collect();
        self.state
            .lock()
            .commands
            .insert(0, (argv, Behaviour::Run(Arc::new(run))));
    }

    /// Registers `name` as an interactive echo (`cat`): each stdin message comes straight
    /// back on stdout; it exits 0 when stdin ends, or, with a TTY, at a Ctrl-D (EOT) typed
    /// in (what a shell at its prompt does).
    pub fn echo(&self, name: &str) {
        self.state
            .lock()
            .commands
            .insert(0, (vec![name.to_owned()], Behaviour::Echo));
    }

    /// Maps `port` of pod `namespace/pod` to `addr` (a listener of the test's).
    pub fn port(&self, namespace: &str, pod: &str, port: u16, addr: SocketAddr) {
        self.state
            .lock()
            .ports
            .insert((namespace.into(), pod.into(), port), addr);
    }

    /// Writes `bytes` to the stdout of every session attached to `namespace/pod` now; how
    /// many sessions got them.
    pub fn attach_output(&self, namespace: &str, pod: &str, bytes: &[u8]) -> usize {
        let mut s = self.state.lock();
        let Some(list) = s.attached.get_mut(&(namespace.into(), pod.into())) else {
            return 0;
        };
        list.retain(|tx| tx.send(bytes.to_vec()).is_ok());
        list.len()
    }

    /// How many sessions are attached to `namespace/pod` now.
    pub fn attached(&self, namespace: &str, pod: &str) -> usize {
        let mut s = self.state.lock();
        s.attached
            .get_mut(&(namespace.into(), pod.into()))
            .map_or(0, |l| {
                l.retain(|tx| tx.send(Vec::new()).is_ok());
                l.len()
            })
    }

    /// The next `n` exec, attach or port-forward sessions are dropped right after the
    /// upgrade (TCP closed, no status): a kubelet or node going away mid-stream.
    pub fn drop_streams(&self, n: usize) {
        self.state.lock().drops = n;
    }

    /// The next `n` exec sessions of registered commands are cut after `after_bytes` of
    /// their stdout: the WebSocket closes with no exit status (a connection lost mid-copy).
    pub fn cut_streams(&self, n: usize, after_bytes: usize) {
        self.state.lock().cuts = (n, after_bytes);
    }

    /// Every terminal size (resize message) any exec session was sent so far,
    /// `(width, height)`, in the order they came.
    pub fn sizes(&self) -> Vec<(u16, u16)> {
        self.state.lock().sizes.clone()
    }

    pub(crate) fn record_size(&self, size: (u16, u16)) {
        self.state.lock().sizes.push(size);
    }

    /// How many exec, attach and port-forward sessions were upgraded so far.
    pub fn sessions(&self) -> usize {
        self.state.lock().sessions
    }

    pub(crate) fn find(&self, argv: &[String]) -> Option<Behaviour> {
        let s = self.state.lock();
        s.commands
            .iter()
            .find(|(want, _)| {
                want.as_slice() == argv || (want.len() == 1 && argv.first() == want.first())
            })
            .map(|(_, b)| b.clone())
    }

    pub(crate) fn port_of(&self, namespace: &str, pod: &str, port: u16) -> Option<SocketAddr> {
        self.state
            .lock()
            .ports
            .get(&(namespace.into(), pod.into(), port))
            .copied()
    }

    pub(crate) fn subscribe(&self, namespace: &str, pod: &str, tx: Sender<Vec<u8>>) {
        self.state
            .lock()
            .attached
            .entry((namespace.into(), pod.into()))
            .or_default()
            .push(tx);
    }

    /// Where to cut this command's stdout, if it is to be cut.
    pub(crate) fn take_cut(&self) -> Option<usize> {
        let mut s = self.state.lock();
        if s.cuts.0 == 0 {
            return None;
        }
        s.cuts.0 -= 1;
        Some(s.cuts.1)
    }

    /// Counts a session; true when it is to be dropped.
    pub(crate) fn session_starts(&self) -> bool {
        let mut s = self.state.lock();
        s.sessions += 1;
        if s.drops > 0 {
            s.drops -= 1;
            return true;
        }
        false
    }
}
