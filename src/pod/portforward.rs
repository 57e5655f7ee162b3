//! Port-forward: local listeners whose connections reach ports of a pod (`kubectl
//! port-forward pod/x 8080:80 :5432`).
//!
//! # Which protocol, and why
//!
//! kube-apiserver 1.36 accepts two (both captured): the plain WebSocket channel protocol
//! (`v4.channel.k8s.io` on `.../portforward?ports=P`: one WebSocket per forwarded
//! connection, channel 0 data both ways and channel 1 errors, each starting with the port as
//! two bytes) and the SPDY/3.1-over-WebSocket tunnel kubectl 1.36 uses (many streams on one
//! WebSocket). This crate uses the plain one: it needs no SPDY framing, no zlib header
//! compression with SPDY's dictionary (a dependency of its own) and no stream multiplexing;
//! a connection's failure is that connection's WebSocket alone, and many connections run in
//! parallel on their own sockets. What it costs: a WebSocket handshake (one more request,
//! paced by the rate limiter) per local connection, and no half-close: when the local client
//! ends its side, the forwarded connection stays open until the pod's side closes (or the
//! forwarder stops), as the protocol has no way to say "no more data" for one direction.
//!
//! # Threads
//!
//! One accept thread per port (`ki/pf<port>/acc`), two per live connection (`.../dn`, the
//! pod to the local client, and `.../up`). [`PortForwarder::stop`] closes the listeners and
//! every connection, ends the WebSocket handshakes still under way, and joins all of them.
//!
//! # What is reported, and what kubectl would say
//!
//! - A pod that is not `Running` is refused before anything listens, in kubectl's words
//!   (`unable to forward port because pod is not running. Current status=Pending`); a pod
//!   that does not exist is the server's `404`.
//! - A connection the pod refuses (nothing listens on the port) is closed, reported on
//!   [`PortForwarder::errors`] with the pod's words and logged at error level as kubectl
//!   prints it (`an error occurred forwarding 8080 -> 80: error forwarding port 80 to pod
//!   ...: connect: connection refused`); the forwarder goes on.
//! - A listener whose `accept` keeps failing (out of file descriptors) is retried a few
//!   times with a growing pause (never a busy loop), then closed, as kubectl closes it:
//!   `error accepting connection on port 8080: ...` on [`PortForwarder::errors`] and in the
//!   log. The other ports go on.
//!
//! # The data path
//!
//! Each direction is one thread copying between two sockets, in order, with no queue
//! between them. Towards the pod, the `up` thread reads the local socket straight into a
//! reusable WebSocket frame (up to 128 KiB: what one read gives is sent at once, so
//! interactive traffic is not delayed and bulk traffic goes in large frames), masks it in
//! place and writes it with one call (`websocket::DataFrame`): no allocation and no copy of
//! ours per chunk. From the pod, the `dn` thread writes each message's payload to the local
//! socket from the reader's buffer, not copied. Sockets have `TCP_NODELAY`: a frame is
//! written whole, so Nagle's algorithm would only add delay to the last segment of a burst.
//! What is left is the WebSocket itself (one masking pass towards the pod, tungstenite's
//! buffer from it) and, with TLS, the encryption; `benches/pod_io.rs` prints the
//! throughput against a direct connection and the CPU time per MB of each side.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

use super::channels;
use super::exec::pod_path;
use super::websocket::{DataFrame, Received};
use crate::client::duplex::Duplex;
use crate::client::{Cancel, Client};
use crate::error::{Error, Result};
use crate::thread_name::thread_name;

/// Largest message sent to the pod.
const MAX_CHUNK: usize = super::websocket::MAX_SEND;

/// How many connection errors wait in [`PortForwarder::errors`]; later ones are logged only.
const MAX_QUEUED_ERRORS: usize = 256;

/// A listener whose `accept` keeps failing (out of file descriptors) is retried after these
/// pauses, then closed.
const ACCEPT_RETRIES: [Duration; 5] = [
    Duration::from_millis(10),
    Duration::from_millis(20),
    Duration::from_millis(40),
    Duration::from_millis(80),
    Duration::from_millis(160),
];

/// `LOCAL:REMOTE`, `:REMOTE` (a free local port) or `PORT` (the same both sides).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortMapping {
    /// The local port; 0 for a free one (see [`PortForwarder::ports`]).
    pub local: u16,
    /// The pod's port.
    pub remote: u16,
}

impl FromStr for PortMapping {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let bad = || {
            Error::InvalidInput(format!(
                "port mapping {s:?}: want LOCAL:REMOTE, :REMOTE or PORT"
            ))
        };
        let port = |p: &str| p.parse::<u16>().map_err(|_| bad());
        let (local, remote) = match s.split_once(':') {
            Some(("", r)) => (0, port(r)?),
            Some((l, r)) => (port(l)?, port(r)?),
            None => (port(s)?, port(s)?),
        };
        if remote == 0 {
            return Err(bad());
        }
        Ok(PortMapping { local, remote })
    }
}

/// One forwarded port: where it listens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForwardedPort {
    /// The local address (its port chosen by the system when asked for 0).
    pub local: SocketAddr,
    /// The pod's port.
    pub remote: u16,
}

/// A forwarded connection that failed (the forwarder goes on), or a listener that stopped.
#[derive(Clone, Debug)]
pub struct ForwardError {
    /// The pod's port.
    pub remote: u16,
    /// The local client whose connection it was; the unspecified address `0.0.0.0:0` when
    /// the listener itself failed.
    pub peer: SocketAddr,
    /// What went wrong: the pod's words (`error forwarding port 80 to pod ...: ... connect:
    /// connection refused`) or ours; for a listener that stopped, `error accepting
    /// connection on port 8080: ...`.
    pub message: String,
}

struct Shared {
    /// The caller's client with [`stop_token`](Self::stop_token) as its token.
    client: Client,
    path: String,
    stop: AtomicBool,
    /// Cancelled by the stop (and by the caller's own token, when its client has one): ends
    /// upgrades still in their handshake, upgraded connections and back-off pauses.
    stop_token: Cancel,
    /// The hook on the caller's token that cancels `stop_token`; unregistered on drop.
    _linked: Option<Box<dyn std::any::Any + Send + Sync>>,
    /// Live connections: the local socket and, once upgraded, the WebSocket's connection.
    live: Mutex<HashMap<u64, (TcpStream, Option<Duplex>)>>,
    next: AtomicU64,
    threads: Mutex<Vec<JoinHandle<()>>>,
    errors: Sender<ForwardError>,
}

/// A running port-forward. See the [module docs](self).
pub struct PortForwarder {
    ports: Vec<ForwardedPort>,
    shared: Arc<Shared>,
    accept: Vec<JoinHandle<()>>,
    errors: Receiver<ForwardError>,
}

impl std::fmt::Debug for PortForwarder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PortForwarder")
            .field("ports", &self.ports)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Forwards local ports on 127.0.0.1 to ports of `pod`.
    ///
    /// ```
    /// # use kube_informer::testing::ApiServer;
    /// # let server = ApiServer::start();
    /// # server.create_pod("lab", "db", &["postgres"]).unwrap();
    /// # let db = std::net::TcpListener::bind("127.0.0.1:0")?;
    /// # server.runtime().port("lab", "db", 5432, db.local_addr()?);
    /// use kube_informer::pod::PortMapping;
    ///
    /// let client = kube_informer::Client::new(server.client_config())?;
    /// let forwarder = client.port_forward("lab", "db", &[":5432".parse()?])?;
    /// let local = forwarder.ports()[0].local;
    /// let _conn = std::net::TcpStream::connect(local)?; // reaches the pod's 5432
    /// forwarder.stop();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn port_forward(
        &self,
        namespace: &str,
        pod: &str,
        ports: &[PortMapping],
    ) -> Result<PortForwarder> {
        self.port_forward_on(IpAddr::V4(Ipv4Addr::LOCALHOST), namespace, pod, ports)
    }

    /// [`port_forward`](Self::port_forward) listening on `address` (`kubectl
    /// port-forward --address`).
    pub fn port_forward_on(
        &self,
        address: IpAddr,
        namespace: &str,
        pod: &str,
        ports: &[PortMapping],
    ) -> Result<PortForwarder> {
        if ports.is_empty() {
            return Err(Error::InvalidInput(
                "port-forward needs at least one port".into(),
            ));
        }
        let path = pod_path(namespace, pod, "portforward");
        ensure_running(self, &path)?;
        let (tx, rx) = crossbeam_channel::bounded(MAX_QUEUED_ERRORS);
        let stop_token = Cancel::new();
        let linked = self.cancel_token().and_then(|caller| {
            let ours = stop_token.clone();
            caller
                .on_cancel(move || ours.cancel())
                .map(|a| Box::new(a) as Box<dyn std::any::Any + Send + Sync>)
        });
        let shared = Arc::new(Shared {
            client: self.with_cancel(stop_token.clone()),
            path,
            stop: AtomicBool::new(false),
            stop_token,
            _linked: linked,
            live: Mutex::new(HashMap::new()),
            next: AtomicU64::new(0),
            threads: Mutex::new(Vec::new()),
            errors: tx,
        });
        let mut forwarder = PortForwarder {
            ports: Vec::new(),
            shared: Arc::clone(&shared),
            accept: Vec::new(),
            errors: rx,
        };
        for m in ports {
            let listener = TcpListener::bind((address, m.local)).map_err(|e| Error::Io {
                request: format!("listening on {address}:{}", m.local),
                source: e,
            })?;
            let local = listener.local_addr().map_err(|e| Error::Io {
                request: "listener address".into(),
                source: e,
            })?;
            let remote = m.remote;
            let s = Arc::clone(&shared);
            let handle = std::thread::Builder::new()
                .name(thread_name(&format!("pf{remote}"), "acc"))
                .spawn(move || accept_loop(&s, listener, local, remote))
                .map_err(|e| Error::Io {
                    request: "port-forward".into(),
                    source: e,
                })?;
            forwarder.accept.push(handle);
            forwarder.ports.push(ForwardedPort { local, remote });
        }
        Ok(forwarder)
    }
}

impl PortForwarder {
    /// The listening ports, in the order asked.
    pub fn ports(&self) -> &[ForwardedPort] {
        &self.ports
    }

    /// Connections that failed (bounded: the oldest 256 unread are kept, later ones only
    /// logged).
    pub fn errors(&self) -> &Receiver<ForwardError> {
        &self.errors
    }

    /// How many forwarded connections are open now.
    pub fn connections(&self) -> usize {
        self.shared.live.lock().len()
    }

    /// Closes the listeners and every forwarded connection, and joins all threads.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Ends handshakes under way (a connection not yet upgraded has no socket of ours
        // to shut), upgraded connections and the accept threads' back-off pauses.
        self.shared.stop_token.cancel();
        for p in &self.ports {
            // Wakes the accept thread, which then sees the stop.
            let wake = match p.local.ip() {
                IpAddr::V4(a) if a.is_unspecified() => {
                    SocketAddr::from((Ipv4Addr::LOCALHOST, p.local.port()))
                }
                _ => p.local,
            };
            let _ = TcpStream::connect(wake);
        }
        for h in self.accept.drain(..) {
            let _ = h.join();
        }
        for (sock, duplex) in self.shared.live.lock().values() {
            let _ = sock.shutdown(Shutdown::Both);
            if let Some(d) = duplex {
                d.shutdown();
            }
        }
        loop {
            let batch: Vec<_> = self.shared.threads.lock().drain(..).collect();
            if batch.is_empty() {
                break;
            }
            for h in batch {
                let _ = h.join();
            }
        }
    }
}

impl Drop for PortForwarder {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Whether a failed `accept` is about one connection only (the client went away before it
/// was taken, a signal), so that the next `accept` can go ahead at once, as Go's does.
fn passing(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionReset, Interrupted, WouldBlock};
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | Interrupted | WouldBlock
    )
}

/// Reports a failure on [`PortForwarder::errors`] while there is room (the caller logs it).
fn report(s: &Shared, remote: u16, peer: SocketAddr, message: String) {
    let _ = s.errors.try_send(ForwardError {
        remote,
        peer,
        message,
    });
}

fn accept_loop(s: &Arc<Shared>, listener: TcpListener, local: SocketAddr, remote: u16) {
    let mut failures = 0usize;
    loop {
        let accepted = listener.accept();
        if s.stop.load(Ordering::SeqCst) {
            return;
        }
        let local_conn = match accepted {
            Ok((conn, _)) => {
                failures = 0;
                conn
            }
            Err(e) if passing(&e) => continue,
            Err(e) => {
                // A failure of the listener itself (out of file descriptors, out of
                // memory): never a busy loop. A short back-off lets a passing shortage
                // clear; one that lasts closes this listener, as kubectl does, and says so.
                if let Some(&pause) = ACCEPT_RETRIES.get(failures) {
                    failures += 1;
                    if s.stop_token.sleep(pause) {
                        return;
                    }
                    continue;
                }
                let message = format!("error accepting connection on port {}: {e}", local.port());
                log::error!("port-forward: {message}; no longer listening on {local}");
                report(s, remote, SocketAddr::from(([0, 0, 0, 0], 0)), message);
                return;
            }
        };
        spawn_connection(s, local_conn, local, remote);
    }
}

/// Starts the thread that forwards one accepted connection.
fn spawn_connection(s: &Arc<Shared>, local: TcpStream, listening: SocketAddr, remote: u16) {
    let _ = local.set_nodelay(true);
    let id = s.next.fetch_add(1, Ordering::Relaxed);
    let Ok(clone) = local.try_clone() else {
        return;
    };
    s.live.lock().insert(id, (clone, None));
    let s2 = Arc::clone(s);
    let spawned = std::thread::Builder::new()
        .name(thread_name(&format!("pf{remote}"), "dn"))
        .spawn(move || {
            let peer = local
                .peer_addr()
                .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
            if let Err(message) = forward(&s2, id, local, remote) {
                if !s2.stop.load(Ordering::SeqCst) {
                    // kubectl's words: "an error occurred forwarding 8080 -> 80: ...".
                    log::error!(
                        "an error occurred forwarding {} -> {remote}: {message}",
                        listening.port()
                    );
                    report(&s2, remote, peer, message);
                }
            }
            s2.live.lock().remove(&id);
        });
    let mut threads = s.threads.lock();
    threads.retain(|h| !h.is_finished());
    match spawned {
        Ok(h) => threads.push(h),
        // Not a thread to be had: this connection is closed, the listener goes on.
        Err(_) => {
            if let Some((sock, _)) = s.live.lock().remove(&id) {
                let _ = sock.shutdown(Shutdown::Both);
            }
        }
    }
}

/// Forwards one local connection until either side ends it.
fn forward(
    s: &Arc<Shared>,
    id: u64,
    local: TcpStream,
    remote: u16,
) -> std::result::Result<(), String> {
    let path = format!("{}?ports={remote}", s.path);
    let up = s
        .client
        .upgrade(&path, &[channels::ChannelProtocol::V4.name()])
        .map_err(|e| e.to_string())?;
    let duplex = up.duplex.clone();
    match s.live.lock().get_mut(&id) {
        Some(entry) if !s.stop.load(Ordering::SeqCst) => entry.1 = Some(duplex.clone()),
        _ => {
            duplex.shutdown();
            return Ok(());
        }
    }
    let writer = Arc::new(up.writer);
    let mut reader = up.reader;
    let mut local_in = local.try_clone().map_err(|e| e.to_string())?;
    let w = Arc::clone(&writer);
    let uploader = std::thread::Builder::new()
        .name(thread_name(&format!("pf{remote}"), "up"))
        .spawn(move || {
            // Read straight into the frame: one read, one masking pass, one write a chunk.
            let mut frame = DataFrame::new(0, MAX_CHUNK);
            loop {
                match local_in.read(frame.payload_mut()) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        if w.send_frame(&mut frame, n).is_err() {
                            return;
                        }
                    }
                }
            }
        })
        .map_err(|e| e.to_string())?;
    let mut local_out = local;
    // Bytes of the port prefix still to skip on channels 0 and 1.
    let mut skip = [2usize, 2usize];
    let mut error_text = Vec::new();
    // Ok(true): the server ended it (its close, already answered by the reader).
    let result = loop {
        let message = match reader.read() {
            Ok(Received::Binary(m)) => m,
            Ok(Received::Closed(_)) => break Ok(true),
            Ok(Received::Text) => break Err("a text message from the server".to_owned()),
            Err(e) => break Err(format!("the connection to the pod failed: {e}")),
        };
        let Some((&channel, mut payload)) = message.split_first() else {
            break Err("an empty message from the server".to_owned());
        };
        if channel > 1 {
            break Err(format!("a message on channel {channel}, not 0 or 1"));
        }
        let k = usize::from(channel);
        let cut = skip[k].min(payload.len());
        skip[k] -= cut;
        payload = &payload[cut..];
        if channel == 0 {
            if local_out.write_all(payload).is_err() {
                break Ok(false);
            }
        } else if error_text.len() < 4096 {
            error_text.extend_from_slice(&payload[..payload.len().min(4096)]);
        }
    };
    let _ = local_out.shutdown(Shutdown::Both);
    if result == Ok(false) {
        // The local client went: our close for the server (an uploader still blocked on a
        // server that takes nothing holds the writer until the forwarder stops).
        writer.close();
    }
    // The server's close is answered already, and after a failure there is no one to
    // tell: the socket is shut at once, which also ends an uploader blocked on it.
    duplex.shutdown();
    let _ = uploader.join();
    if !error_text.is_empty() {
        // The pod's words, logged and handed on: no control character of theirs forges a
        // log line or moves a terminal's cursor.
        let text = String::from_utf8_lossy(&error_text)
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        return Err(text);
    }
    result.map(|_| ())
}

/// kubectl's check before it listens: the pod exists (its `404` as is) and is `Running`.
/// Without it every forwarded connection of a pod that is pending, or has completed, would
/// get an empty answer.
fn ensure_running(client: &Client, portforward_path: &str) -> Result<()> {
    #[derive(serde::Deserialize)]
    struct Pod {
        #[serde(default)]
        status: Option<PodStatus>,
    }
    #[derive(serde::Deserialize)]
    struct PodStatus {
        #[serde(default)]
        phase: Option<String>,
    }
    let path = portforward_path
        .strip_suffix("/portforward")
        .unwrap_or(portforward_path);
    let got: Pod = client.request_json(ureq::http::Method::GET, path, None)?;
    let phase = got.status.and_then(|s| s.phase).unwrap_or_default();
    if phase == "Running" {
        return Ok(());
    }
    Err(Error::InvalidInput(format!(
        "unable to forward port because pod is not running. Current status={phase}"
    )))
}

#[cfg(test)]
mod tests {
    use super::PortMapping;

    #[test]
    fn mappings() {
        let m = |s: &str| s.parse::<PortMapping>().ok();
        assert_eq!(
            m("8080:80"),
            Some(PortMapping {
                local: 8080,
                remote: 80
            })
        );
        assert_eq!(
            m(":5432"),
            Some(PortMapping {
                local: 0,
                remote: 5432
            })
        );
        assert_eq!(
            m("5432"),
            Some(PortMapping {
                local: 5432,
                remote: 5432
            })
        );
        assert_eq!(m("x"), None);
        assert_eq!(m("1:0"), None);
        assert_eq!(m("70000:1"), None);
    }
}
