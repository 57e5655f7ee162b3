//! Every bound the server keeps, in one value.
//!
//! What one client can make the server hold is bounded by these, and every wait on a client
//! ends by one of these times. Memory held for one connection is at most
//! `max_head_bytes + max_body_bytes` (the head is bounded while it is read, the body by its
//! `Content-Length` before a byte of it is read), plus the connection thread's stack (mostly
//! untouched); for the whole server, `max_connections` times that, and for one peer
//! `max_connections_per_peer` times that.

use std::time::Duration;

/// The server's bounds. [`Default`] suits a webhook server; [`Limits::probes`] a probe or
/// metrics endpoint (small bodies, few connections).
///
/// ```
/// use kube_informer::serve::Limits;
/// use std::time::Duration;
///
/// let limits = Limits::new()
///     .max_body_bytes(1 << 20)
///     .idle_timeout(Duration::from_secs(30));
/// assert_eq!(limits, Limits::default().max_body_bytes(1 << 20).idle_timeout(Duration::from_secs(30)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Longest request line (`GET /path?query HTTP/1.1`), in bytes; longer is answered with
    /// 414 and the connection closed, after reading at most this many bytes of it.
    /// Default 8 KiB.
    pub(crate) max_request_line: usize,
    /// Longest request head (request line and every header, with their line ends), in
    /// bytes; longer is answered with 431 after reading at most this many bytes. A header
    /// line that never ends costs at most this. Default 16 KiB.
    pub(crate) max_head_bytes: usize,
    /// Most header fields in one request; more is answered with 431. Default 64.
    pub(crate) max_headers: usize,
    /// Largest request body, in bytes, checked against `Content-Length` before any of the
    /// body is read: larger is answered with 413 and the connection closed. Default 8 MiB
    /// (an admission review carries an object and its old version, each up to
    /// kube-apiserver's 3 MiB).
    pub(crate) max_body_bytes: usize,
    /// Most connections open at once. One more makes room by closing the connection idle
    /// longest (waiting for a request, none of it received); when every one is busy it is
    /// refused at once (503 on plain HTTP, closed on TLS), never queued. Default 256.
    pub(crate) max_connections: usize,
    /// Most connections open at once from one peer (one IPv4 address, or one IPv6 /64,
    /// which a single host commonly holds whole). `None`: three quarters of
    /// `max_connections` (at least one).
    pub(crate) max_connections_per_peer: Option<usize>,
    /// Most requests answered on one keep-alive connection; the last answer says
    /// `Connection: close`. Default 1000.
    pub(crate) max_requests_per_connection: usize,
    /// The time a request's head may take, from its first byte to its blank line (a client
    /// sending a byte at a time is cut off here: 408, closed). Also the bound from a
    /// connection's start to its first request's first byte, TLS handshake included, and so
    /// the handshake's own bound, however its bytes are paced. Default 10 s.
    pub(crate) header_timeout: Duration,
    /// The time a request's body may take to arrive once its head has; past it, 408 and
    /// closed. Default 30 s.
    pub(crate) body_timeout: Duration,
    /// The time writing one answer may take (a client that does not read is cut off here,
    /// and its thread freed). Default 10 s.
    pub(crate) write_timeout: Duration,
    /// How long a keep-alive connection may wait for its next request before the server
    /// closes it (a new connection's first request must start within `header_timeout`).
    /// Default 60 s.
    pub(crate) idle_timeout: Duration,
    /// Each connection thread's stack, in bytes (virtual: an idle connection touches a few
    /// pages of it). Default 512 KiB.
    pub(crate) stack_size: usize,
}

impl Limits {
    /// The defaults (the same as `Limits::default()`).
    pub fn new() -> Self {
        Self::default()
    }

    /// Longest request line (`GET /path?query HTTP/1.1`), in bytes; longer is answered with
    /// 414 and the connection closed, after reading at most this many bytes of it.
    /// Default 8 KiB.
    pub fn max_request_line(mut self, value: usize) -> Self {
        self.max_request_line = value;
        self
    }

    /// Longest request head (request line and every header, with their line ends), in
    /// bytes; longer is answered with 431 after reading at most this many bytes. A header
    /// line that never ends costs at most this. Default 16 KiB.
    pub fn max_head_bytes(mut self, value: usize) -> Self {
        self.max_head_bytes = value;
        self
    }

    /// Most header fields in one request; more is answered with 431. Default 64.
    pub fn max_headers(mut self, value: usize) -> Self {
        self.max_headers = value;
        self
    }

    /// Largest request body, in bytes, checked against `Content-Length` before any of the
    /// body is read: larger is answered with 413 and the connection closed. Default 8 MiB
    /// (an admission review carries an object and its old version, each up to
    /// kube-apiserver's 3 MiB).
    pub fn max_body_bytes(mut self, value: usize) -> Self {
        self.max_body_bytes = value;
        self
    }

    /// Most connections open at once. One more makes room by closing the connection idle
    /// longest (waiting for a request, none of it received); when every one is busy it is
    /// refused at once (503 on plain HTTP, closed on TLS), never queued. Default 256.
    pub fn max_connections(mut self, value: usize) -> Self {
        self.max_connections = value;
        self
    }

    /// Most connections open at once from one peer: one IPv4 address (an IPv4-mapped IPv6
    /// address counts as its IPv4 one), or one IPv6 /64 (a single host commonly holds a
    /// whole /64, and could otherwise take a slot per address). One more from that peer
    /// makes room by closing that peer's own connection idle longest; when all of its
    /// connections are busy it is refused at once (503 on plain HTTP, closed on TLS). So
    /// one peer, however busy it keeps its connections, never takes the slots the others
    /// (the kubelet's probes, kube-apiserver's webhook calls, the scraper) need. Default
    /// three quarters of [`max_connections`](Self::max_connections), at least one:
    /// kube-apiserver, the one peer a webhook serves, keeps most of the room. Behind a
    /// proxy or a NAT every client is one peer: raise it to `max_connections` there.
    pub fn max_connections_per_peer(mut self, value: usize) -> Self {
        self.max_connections_per_peer = Some(value);
        self
    }

    /// The bound on one peer's connections in effect (see
    /// [`max_connections_per_peer`](Self::max_connections_per_peer)).
    pub(crate) fn per_peer(&self) -> usize {
        self.max_connections_per_peer
            .unwrap_or(self.max_connections.saturating_mul(3) / 4)
            .max(1)
    }

    /// Most requests answered on one keep-alive connection; the last answer says
    /// `Connection: close`. Default 1000.
    pub fn max_requests_per_connection(mut self, value: usize) -> Self {
        self.max_requests_per_connection = value;
        self
    }

    /// The time a request's head may take, from its first byte to its blank line (a client
    /// sending a byte at a time is cut off here: 408, closed). Also the bound from a
    /// connection's start to its first request's first byte, TLS handshake included, and so
    /// the handshake's own bound, however its bytes are paced. Default 10 s.
    pub fn header_timeout(mut self, value: Duration) -> Self {
        self.header_timeout = value;
        self
    }

    /// The time a request's body may take to arrive once its head has; past it, 408 and
    /// closed. Default 30 s.
    pub fn body_timeout(mut self, value: Duration) -> Self {
        self.body_timeout = value;
        self
    }

    /// The time writing one answer may take (a client that does not read is cut off here,
    /// and its thread freed). Default 10 s.
    pub fn write_timeout(mut self, value: Duration) -> Self {
        self.write_timeout = value;
        self
    }

    /// How long a keep-alive connection may wait for its next request before the server
    /// closes it (a new connection's first request must start within `header_timeout`).
    /// Default 60 s.
    pub fn idle_timeout(mut self, value: Duration) -> Self {
        self.idle_timeout = value;
        self
    }

    /// Each connection thread's stack, in bytes (virtual: an idle connection touches a few
    /// pages of it). Default 512 KiB.
    pub fn stack_size(mut self, value: usize) -> Self {
        self.stack_size = value;
        self
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_request_line: 8 << 10,
            max_head_bytes: 16 << 10,
            max_headers: 64,
            max_body_bytes: 8 << 20,
            max_connections: 256,
            max_connections_per_peer: None,
            max_requests_per_connection: 1000,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            stack_size: 512 << 10,
        }
    }
}

impl Limits {
    /// The bounds of a probe and metrics endpoint: an 8 KiB head (the probes' answer to a
    /// larger one has always been 431), a 64 KiB body (probes and scrapes send none), 64
    /// connections (kubelet, scraper and a few people), the default timeouts.
    pub fn probes() -> Self {
        Limits {
            max_head_bytes: 8 << 10,
            max_body_bytes: 64 << 10,
            max_connections: 64,
            ..Limits::default()
        }
    }
}
