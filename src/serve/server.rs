//! The server: a listener, one accepting thread, one thread per connection (at most
//! [`Limits::max_connections`]), and a stop that closes everything within its grace.
//!
//! Why a thread per connection rather than a pool answering everyone: a connection's thread
//! only ever waits on its own client, with a deadline, so a client that never reads or sends
//! a byte a minute holds one thread for one bound and no one else's answer. The count of
//! threads is bounded by the count of connections, which is bounded.
//!
//! When every slot is taken, a new connection makes room rather than being turned away: the
//! connection that has been quiet longest (waiting for a request, no byte of it received; a
//! TLS handshake counts as quiet) is closed and the new one takes its place. So a client
//! that opens every slot and sends nothing cannot lock out the kubelet's probes or the
//! scraper: its oldest sockets are closed as new clients come. Only when every connection
//! is busy (a request arriving, being answered) is the new one refused at once (503 on plain
//! HTTP, closed on TLS), never queued; a busy connection's time is bounded by the
//! [`Limits`] timeouts.
//!
//! One peer (an IPv4 address, an IPv6 /64) holds at most
//! [`Limits::max_connections_per_peer`] of the slots: a client that keeps every one of its
//! connections busy (a request head a byte at a time, a body that trickles, until each
//! timeout, then again) would otherwise hold every slot, so that a probe from the kubelet
//! or a call from kube-apiserver is refused. Past its bound a peer's new connection makes
//! room among that peer's own idle connections, or is refused; the others' slots stay.
//!
//! Stopping: no new connection is taken; idle keep-alive connections are closed at once; a
//! request being answered gets the rest of the grace period to finish (its answer then says
//! `Connection: close`); past the grace every socket is shut, which ends every wait on a
//! client, and every thread is joined. Only a handler that never returns can keep its thread
//! past that; it is then left behind with an error in the log rather than waited on forever.

use std::collections::HashMap;
use std::io::Write;
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::handler::Handler;
use super::limits::Limits;
use crate::error::{Error, Result};

/// How long a stop waits, past the grace, for threads whose sockets it shut.
pub(crate) const CLOSE_BOUND: Duration = Duration::from_secs(1);

/// A running server; [`stop`](Self::stop) (or dropping it) ends it and joins its threads.
///
/// ```
/// use kube_informer::serve::{Request, Response, Router, Server};
/// use std::io::{Read, Write};
///
/// let router = Router::new().route("/hello", |_: &Request| Response::text(200, "hi\n"));
/// let server = Server::builder("doc").bind("127.0.0.1:0", router)?;
///
/// let mut client = std::net::TcpStream::connect(server.addr()).unwrap();
/// client.write_all(b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
/// let mut answer = String::new();
/// client.read_to_string(&mut answer).unwrap();
/// assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"));
/// assert!(answer.ends_with("\r\n\r\nhi\n"));
/// server.stop();
/// # Ok::<(), kube_informer::Error>(())
/// ```
pub struct Server {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
    grace: Duration,
}

/// Options for a [`Server`]: its name, bounds, grace period and (feature `webhook`) TLS.
#[must_use]
pub struct ServerBuilder {
    name: String,
    limits: Limits,
    grace: Duration,
    #[cfg(feature = "webhook")]
    tls: Option<super::tls::TlsFiles>,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("name", &self.name)
            .field("limits", &self.limits)
            .field("grace", &self.grace)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A builder for a server called `name` (in its threads' names, `ki/<name>/acpt` and
    /// `ki/<name>/conn`, and its log lines), with [`Limits::default`] and a 5 s grace.
    pub fn builder(name: &str) -> ServerBuilder {
        ServerBuilder {
            name: name.to_string(),
            limits: Limits::default(),
            grace: Duration::from_secs(5),
            #[cfg(feature = "webhook")]
            tls: None,
        }
    }

    /// Where it listens (with the port the system chose for `:0`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The state of the certificate files (`None` on plain HTTP).
    #[cfg(feature = "webhook")]
    #[cfg_attr(docsrs, doc(cfg(feature = "webhook")))]
    pub fn tls_status(&self) -> Option<super::tls::TlsStatus> {
        self.shared.tls.as_ref().map(|t| t.status())
    }

    /// Connections open now.
    pub fn connections(&self) -> usize {
        self.shared.table.lock().live.len()
    }

    /// Stops: no new connections, idle ones closed, requests in flight given the grace
    /// period, then every socket shut and every thread joined.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let Some(accept) = self.accept.take() else {
            return;
        };
        let shared = &self.shared;
        shared.stopping.store(true, Ordering::SeqCst);
        // Wake the accepting thread with a connection of our own.
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        match TcpStream::connect_timeout(&wake, CLOSE_BOUND) {
            Ok(_) => {
                let _ = accept.join();
            }
            Err(e) => log::error!(
                "{} server: cannot wake its accepting thread ({e}); leaving it behind",
                shared.name
            ),
        }
        // Idle connections now; busy ones after the grace.
        shared.shut(|slot| slot.idle);
        let grace_end = Instant::now() + self.grace;
        while !shared.table.lock().live.is_empty() && Instant::now() < grace_end {
            std::thread::sleep(Duration::from_millis(5));
        }
        shared.shut(|_| true);
        let close_end = Instant::now() + CLOSE_BOUND;
        let threads = loop {
            let mut table = shared.table.lock();
            if table.threads.iter().all(|t| t.is_finished()) || Instant::now() >= close_end {
                break std::mem::take(&mut table.threads);
            }
            drop(table);
            std::thread::sleep(Duration::from_millis(5));
        };
        let mut stuck = 0;
        for t in threads {
            if t.is_finished() {
                let _ = t.join();
            } else {
                stuck += 1;
            }
        }
        if stuck > 0 {
            log::error!(
                "{} server: {stuck} connection thread(s) still in their handler after the grace period; left behind",
                shared.name
            );
        }
        log::info!("{} server on {} stopped", shared.name, self.addr);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.shared.name)
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl ServerBuilder {
    /// The bounds (default [`Limits::default`]).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// How long a stop lets requests in flight finish (default 5 s).
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Serves TLS with the certificate and key of `files`, reloaded when they change.
    #[cfg(feature = "webhook")]
    #[cfg_attr(docsrs, doc(cfg(feature = "webhook")))]
    pub fn tls(mut self, files: super::tls::TlsFiles) -> Self {
        self.tls = Some(files);
        self
    }

    /// Listens on `addr` (`host:port`; port 0 lets the system choose) and serves `handler`
    /// (usually a [`Router`](super::Router)). With TLS, the certificate files must load now.
    pub fn bind(self, addr: &str, handler: impl Handler) -> Result<Server> {
        let name = self.name;
        #[cfg(feature = "webhook")]
        let tls = match self.tls {
            Some(files) => Some(super::tls::Tls::new(files, &name)?),
            None => None,
        };
        let listener = TcpListener::bind(addr)
            .map_err(|e| Error::Config(format!("{name} server: cannot listen on {addr}: {e}")))?;
        let local = listener
            .local_addr()
            .map_err(|e| Error::Config(format!("{name} server: {addr}: {e}")))?;
        let shared = Arc::new(Shared {
            name: name.clone(),
            limits: self.limits,
            handler: Box::new(handler),
            #[cfg(feature = "webhook")]
            tls,
            stopping: AtomicBool::new(false),
            table: Mutex::new(Table::default()),
        });
        let s = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name(crate::thread_name::thread_name(&name, "acpt"))
            .spawn(move || accept_loop(&s, listener))
            .map_err(|e| Error::Config(format!("{name} server: spawning its thread: {e}")))?;
        let scheme = if cfg!(feature = "webhook") && shared.has_tls() {
            "https"
        } else {
            "http"
        };
        log::info!("{name} server listening on {scheme}://{local}");
        Ok(Server {
            addr: local,
            shared,
            accept: Some(accept),
            grace: self.grace,
        })
    }
}

/// What the accepting thread and the connection threads share.
pub(crate) struct Shared {
    pub(crate) name: String,
    pub(crate) limits: Limits,
    pub(crate) handler: Box<dyn Handler>,
    #[cfg(feature = "webhook")]
    pub(crate) tls: Option<super::tls::Tls>,
    pub(crate) stopping: AtomicBool,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    next: u64,
    live: HashMap<u64, Slot>,
    threads: Vec<JoinHandle<()>>,
}

struct Slot {
    socket: TcpStream,
    /// Whose it is (see [`Peer`]).
    peer: Peer,
    /// Waiting for a request (or in the TLS handshake), no byte of it received.
    idle: bool,
    /// Since when it has been idle (the order in which idle connections make room).
    quiet_since: Instant,
}

impl Shared {
    fn has_tls(&self) -> bool {
        #[cfg(feature = "webhook")]
        return self.tls.is_some();
        #[cfg(not(feature = "webhook"))]
        false
    }

    /// Marks connection `id` idle (waiting for a request) or busy. False when it should
    /// close instead: the server is stopping and it is between requests, or it was closed
    /// to make room for a new connection.
    pub(crate) fn set_idle(&self, id: u64, idle: bool) -> bool {
        let mut table = self.table.lock();
        if idle && self.stopping.load(Ordering::SeqCst) {
            return false;
        }
        let Some(slot) = table.live.get_mut(&id) else {
            return false;
        };
        if idle && !slot.idle {
            slot.quiet_since = Instant::now();
        }
        slot.idle = idle;
        true
    }

    /// Connection `id` has ended.
    pub(crate) fn leave(&self, id: u64) {
        self.table.lock().live.remove(&id);
    }

    fn shut(&self, which: impl Fn(&Slot) -> bool) {
        for slot in self.table.lock().live.values().filter(|s| which(s)) {
            let _ = slot.socket.shutdown(Shutdown::Both);
        }
    }
}

fn accept_loop(shared: &Arc<Shared>, listener: TcpListener) {
    let mut backoff = Duration::ZERO;
    loop {
        let (socket, peer) = match listener.accept() {
            Ok(a) => a,
            Err(_) if shared.stopping.load(Ordering::SeqCst) => return,
            Err(e) => {
                // Out of file descriptors, mostly: wait a little, log once per streak.
                if backoff.is_zero() {
                    log::warn!("{} server: accepting a connection: {e}", shared.name);
                }
                backoff = (backoff * 2).clamp(Duration::from_millis(10), Duration::from_secs(1));
                std::thread::sleep(backoff);
                continue;
            }
        };
        backoff = Duration::ZERO;
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let mut table = shared.table.lock();
        // Reap the threads of connections that ended.
        let (done, running): (Vec<_>, Vec<_>) = std::mem::take(&mut table.threads)
            .into_iter()
            .partition(|t| t.is_finished());
        table.threads = running;
        for t in done {
            let _ = t.join();
        }
        // Threads of connections closed to make room end at once (their sockets are shut);
        // the bound on threads only bites if they somehow do not. Checked first, so that no
        // connection is closed for a newcomer that is then refused.
        let threads_full = table.threads.len() >= shared.limits.max_connections.saturating_mul(2);
        let who = Peer::of(&peer);
        let theirs = table.live.values().filter(|s| s.peer == who).count();
        // The peer's own bound first: past it, only its own idle connection makes room.
        let peer_full = theirs >= shared.limits.per_peer();
        let full = table.live.len() >= shared.limits.max_connections;
        let refused = threads_full
            || (peer_full && !make_room(shared, &mut table, Some(who)))
            || (!peer_full && full && !make_room(shared, &mut table, None));
        if refused {
            drop(table);
            refuse(shared, socket);
            continue;
        }
        let Ok(copy) = socket.try_clone() else {
            drop(table);
            refuse(shared, socket);
            continue;
        };
        let id = table.next;
        table.next += 1;
        table.live.insert(
            id,
            Slot {
                socket: copy,
                peer: who,
                idle: true,
                quiet_since: Instant::now(),
            },
        );
        let s = Arc::clone(shared);
        let spawned = std::thread::Builder::new()
            .name(crate::thread_name::thread_name(&shared.name, "conn"))
            .stack_size(shared.limits.stack_size)
            .spawn(move || super::connection::run(&s, id, socket, peer));
        match spawned {
            Ok(t) => table.threads.push(t),
            Err(e) => {
                table.live.remove(&id);
                log::warn!(
                    "{} server: cannot start a connection thread: {e}",
                    shared.name
                );
            }
        }
    }
}

/// The unit one peer's connections are counted in: an IPv4 address (an IPv4-mapped IPv6
/// one as its IPv4 address), or the first 64 bits of an IPv6 address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Peer {
    V4([u8; 4]),
    V6([u8; 8]),
}

impl Peer {
    fn of(addr: &SocketAddr) -> Peer {
        match addr.ip().to_canonical() {
            IpAddr::V4(ip) => Peer::V4(ip.octets()),
            IpAddr::V6(ip) => {
                let mut prefix = [0u8; 8];
                prefix.copy_from_slice(&ip.octets()[..8]);
                Peer::V6(prefix)
            }
        }
    }
}

/// Closes the connection that has been idle longest, if one is, and takes it out of the
/// table (its thread sees its socket shut, or `set_idle` say so, and ends); only among
/// `peer`'s connections when given. False when every such connection is busy.
fn make_room(shared: &Shared, table: &mut Table, peer: Option<Peer>) -> bool {
    let oldest = table
        .live
        .iter()
        .filter(|(_, slot)| slot.idle && peer.is_none_or(|p| slot.peer == p))
        .min_by_key(|(id, slot)| (slot.quiet_since, **id))
        .map(|(id, _)| *id);
    let Some(slot) = oldest.and_then(|id| table.live.remove(&id)) else {
        return false;
    };
    let _ = slot.socket.shutdown(Shutdown::Both);
    log::debug!(
        "{} server: {} connections open, the bound: closed the one idle longest ({:?}) to make room",
        shared.name,
        shared.limits.max_connections,
        slot.quiet_since.elapsed()
    );
    true
}

/// Turns a connection away without waiting on it: a 503 if the socket takes it at once
/// (plain HTTP; a TLS client could not read it), then closed.
fn refuse(shared: &Shared, mut socket: TcpStream) {
    log::debug!(
        "{} server: refused a connection: {} open and busy, the bound",
        shared.name,
        shared.limits.max_connections
    );
    if !shared.has_tls() && socket.set_nonblocking(true).is_ok() {
        let _ = socket.write(
            b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n\
              Retry-After: 1\r\nConnection: close\r\nContent-Length: 22\r\n\r\ntoo many connections\r\n",
        );
    }
    let _ = socket.shutdown(Shutdown::Both);
}

#[cfg(test)]
mod peer_tests {
    use super::Peer;

    #[test]
    fn a_peer_is_an_ipv4_address_or_an_ipv6_64() {
        let of = |s: &str| Peer::of(&s.parse().unwrap());
        assert_eq!(of("10.0.0.1:1"), of("10.0.0.1:2"));
        assert_ne!(of("10.0.0.1:1"), of("10.0.0.2:1"));
        // An IPv4-mapped address (a dual-stack listener) is its IPv4 address.
        assert_eq!(of("[::ffff:10.0.0.1]:1"), of("10.0.0.1:1"));
        // One host's /64: one peer, whichever address it picks.
        assert_eq!(of("[2001:db8:1:2::1]:1"), of("[2001:db8:1:2:ffff::9]:7"));
        assert_ne!(of("[2001:db8:1:2::1]:1"), of("[2001:db8:1:3::1]:1"));
    }
}
