//! Exec and attach: run a command in a container, or attach to its main process, over
//! WebSocket (`kubectl exec`, `kubectl attach`).
//!
//! Both offer `v5.channel.k8s.io` then `v4.channel.k8s.io`: kube-apiserver 1.30 and later
//! choose v5, older servers (or a kubelet path that only knows v4) v4. What a caller loses on
//! v4: **stdin cannot be half-closed** — v4 has no close signal, so a command that reads its
//! stdin to the end (`cat`, `sh` reading a script, `tar x`) never sees EOF and never exits by
//! itself; the session then ends only when the command exits for another reason or the
//! caller cancels it. [`Process::protocol`] says which one was chosen.
//!
//! Failures arrive two ways, both handled: before the upgrade as an ordinary
//! [`Error::Api`] with the server's Status (pod not found: `404`; `403` with an empty body
//! when none of the offered subprotocols is known), or, where the Status names a choice to
//! make, as [`Error::Pod`] with a [`PodError`](super::PodError) (a pod with several
//! containers and none named, an unknown container, a pod with no node: `400`s), or after it as the final Status on channel
//! 3: a non-zero exit ([`ExitStatus::Code`], read from the `ExitCode` cause) or a failure to
//! run the command at all ([`ExitStatus::Failure`] with the Status's reason and message;
//! with v5 kube-apiserver even reports an unreachable kubelet this way).

use std::io::{Read, Write};
use std::time::Duration;

use super::channels::{ChannelProtocol, ExitStatus};
use super::process::{Process, Streams};
use crate::api::url_encoding::{path_segment, percent_encode};
use crate::client::Client;
use crate::error::{Error, Result};

/// What to run and which streams to open. stdout and stderr are on by default.
#[derive(Clone, Debug)]
pub struct ExecParams {
    command: Vec<String>,
    container: Option<String>,
    stdin: bool,
    stdout: bool,
    stderr: bool,
    tty: bool,
    idle_timeout: Option<Duration>,
    protocols: Vec<ChannelProtocol>,
}

impl ExecParams {
    /// Runs `command` (the argv, no shell: `["sh", "-c", "echo hi"]` for one).
    pub fn new<S: Into<String>>(command: impl IntoIterator<Item = S>) -> Self {
        ExecParams {
            command: command.into_iter().map(Into::into).collect(),
            container: None,
            stdin: false,
            stdout: true,
            stderr: true,
            tty: false,
            idle_timeout: None,
            protocols: vec![ChannelProtocol::V5, ChannelProtocol::V4],
        }
    }

    /// For [`Client::attach`]: no command; stdout and stderr on.
    pub fn attach() -> Self {
        Self::new(Vec::<String>::new())
    }

    /// The container (needed when the pod has several).
    pub fn container(mut self, name: impl Into<String>) -> Self {
        self.container = Some(name.into());
        self
    }

    /// Opens stdin.
    pub fn stdin(mut self, on: bool) -> Self {
        self.stdin = on;
        self
    }

    /// Opens stdout (default on).
    pub fn stdout(mut self, on: bool) -> Self {
        self.stdout = on;
        self
    }

    /// Opens stderr (default on; never with a TTY, which merges it into stdout).
    pub fn stderr(mut self, on: bool) -> Self {
        self.stderr = on;
        self
    }

    /// Gives the command a terminal (resize it with [`Process::resizer`]).
    pub fn tty(mut self, on: bool) -> Self {
        self.tty = on;
        self
    }

    /// Ends the session with an error when nothing moves either way for this long (no byte
    /// from the server, none of stdin taken by it; default:
    /// no bound, as an interactive shell may be silent for hours; [`Canceller`](super::Canceller)
    /// stops it any time).
    pub fn idle_timeout(mut self, d: Duration) -> Self {
        self.idle_timeout = Some(d);
        self
    }

    /// Offers only `v4.channel.k8s.io` (to test a caller against an old server).
    pub fn v4_only(mut self) -> Self {
        self.protocols = vec![ChannelProtocol::V4];
        self
    }

    fn query(&self) -> String {
        let mut q = String::new();
        let mut add = |k: &str, v: &str| {
            q.push(if q.is_empty() { '?' } else { '&' });
            q.push_str(k);
            q.push('=');
            percent_encode(v, &mut q);
        };
        for c in &self.command {
            add("command", c);
        }
        if let Some(c) = &self.container {
            add("container", c);
        }
        for (name, on) in [
            ("stdin", self.stdin),
            ("stdout", self.stdout),
            ("stderr", self.stderr && !self.tty),
            ("tty", self.tty),
        ] {
            if on {
                add(name, "true");
            }
        }
        q
    }
}

/// What [`Client::exec_output`] collected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecOutput {
    /// Everything the command wrote to stdout.
    pub stdout: Vec<u8>,
    /// Everything it wrote to stderr.
    pub stderr: Vec<u8>,
    /// How it ended.
    pub status: ExitStatus,
}

pub(crate) fn pod_path(namespace: &str, pod: &str, sub: &str) -> String {
    let mut p = String::from("/api/v1/namespaces/");
    path_segment(namespace, &mut p);
    p.push_str("/pods/");
    path_segment(pod, &mut p);
    p.push('/');
    p.push_str(sub);
    p
}

impl Client {
    /// Runs a command in a container of `pod` (`kubectl exec`).
    ///
    /// ```
    /// # use kube_informer::testing::{ApiServer, Runtime};
    /// # let server = ApiServer::start();
    /// # server.create_pod("lab", "web", &["app"]).unwrap();
    /// # server.runtime().command(&["echo", "hi"], Runtime::output(b"hi\n", b"", 0));
    /// use std::io::Read as _;
    /// use kube_informer::pod::ExecParams;
    ///
    /// let client = kube_informer::Client::new(server.client_config())?;
    /// let mut process = client.exec("lab", "web", &ExecParams::new(["echo", "hi"]))?;
    /// let mut out = String::new();
    /// process.stdout().unwrap().read_to_string(&mut out)?;
    /// assert_eq!(out, "hi\n");
    /// assert!(process.wait()?.success());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn exec(&self, namespace: &str, pod: &str, params: &ExecParams) -> Result<Process> {
        if params.command.is_empty() {
            return Err(Error::InvalidInput("exec needs a command".into()));
        }
        self.open_process(namespace, pod, "exec", params)
    }

    /// Attaches to the main process of a container of `pod` (`kubectl attach`); `params`
    /// from [`ExecParams::attach`] (a command, if any, is ignored).
    pub fn attach(&self, namespace: &str, pod: &str, params: &ExecParams) -> Result<Process> {
        let mut params = params.clone();
        params.command.clear();
        self.open_process(namespace, pod, "attach", &params)
    }

    fn open_process(
        &self,
        namespace: &str,
        pod: &str,
        sub: &str,
        params: &ExecParams,
    ) -> Result<Process> {
        let path = format!("{}{}", pod_path(namespace, pod, sub), params.query());
        let offered: Vec<&str> = params.protocols.iter().map(|p| p.name()).collect();
        // The choices a caller has to make (container, a pod with no node) come typed, as
        // for logs.
        let up = self
            .upgrade(&path, &offered)
            .map_err(|e| super::logs::typed(e, pod))?;
        Process::start(
            up,
            Streams {
                stdin: params.stdin,
                stdout: params.stdout,
                stderr: params.stderr,
                tty: params.tty,
                idle_timeout: params.idle_timeout,
                subject: pod.to_owned(),
            },
        )
    }

    /// Runs a command to its end, with `stdin` as its input (none when empty), and collects
    /// its stdout, stderr and exit status, as `kubectl exec` shows them. Output is collected
    /// in memory whole: for a command with a lot of output, read [`exec`](Self::exec)'s
    /// handles instead. On a v4-only server a non-empty `stdin` is sent but cannot be
    /// closed, so a command that reads to EOF does not end (see the module docs).
    pub fn exec_output(
        &self,
        namespace: &str,
        pod: &str,
        params: &ExecParams,
        stdin: &[u8],
    ) -> Result<ExecOutput> {
        let params = params.clone().stdin(!stdin.is_empty()).stdout(true);
        let mut process = self.exec(namespace, pod, &params)?;
        let mut input = process.stdin();
        let mut out = process.stdout();
        let mut err = process.stderr();
        let name = crate::thread_name::thread_name(pod, "err");
        let in_name = crate::thread_name::thread_name(pod, "in");
        std::thread::scope(|s| -> Result<ExecOutput> {
            let writer = match input.take() {
                Some(mut w) => Some(
                    std::thread::Builder::new()
                        .name(in_name)
                        .spawn_scoped(s, move || {
                            // A command that exits without reading all its input is not an
                            // error.
                            let _ = w.write_all(stdin);
                            let _ = w.close();
                        })
                        .map_err(|e| Error::Io {
                            request: "exec".into(),
                            source: e,
                        })?,
                ),
                None => None,
            };
            let errors = std::thread::Builder::new()
                .name(name)
                .spawn_scoped(s, move || {
                    let mut buf = Vec::new();
                    if let Some(e) = err.as_mut() {
                        let _ = e.read_to_end(&mut buf);
                    }
                    buf
                })
                .map_err(|e| Error::Io {
                    request: "exec".into(),
                    source: e,
                })?;
            let mut stdout = Vec::new();
            if let Some(o) = out.as_mut() {
                let _ = o.read_to_end(&mut stdout);
            }
            let stderr = errors.join().unwrap_or_default();
            if let Some(w) = writer {
                let _ = w.join();
            }
            drop(out);
            let status = process.wait()?;
            Ok(ExecOutput {
                stdout,
                stderr,
                status,
            })
        })
    }
}
