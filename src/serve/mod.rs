//! One bounded, timed-out HTTP/1.1 server for probes, metrics and webhooks (features `probes`
//! and `webhook`).
//!
//! A controller serves as well as it calls: the kubelet probes it, Prometheus scrapes it,
//! kube-apiserver calls its webhooks. Any client that reaches the port may be slow, broken
//! or hostile, so every resource a client can make the server hold is bounded, and every wait
//! on a client is timed out; one client can never stall another or grow the process.
//!
//! - [`Handler`], [`Request`], [`Response`] (`handler.rs`): what a handler sees and returns,
//!   whole values; a handler computes, the server does the socket work.
//! - [`Router`] (`router.rs`): exact paths and subtrees to handlers. Webhooks, probes and
//!   `/metrics` are handlers on paths.
//! - [`Server`] (`server.rs`): the listener, one accepting thread (`ki/<name>/acpt`), a
//!   thread per connection (`ki/<name>/conn`), the stop.
//! - [`Limits`] (`limits.rs`): every bound, with its default and what passing it answers.
//!   `connection.rs`, `read.rs` and `stream.rs` apply them.
#![cfg_attr(
    feature = "webhook",
    doc = "- With `webhook`: [`TlsFiles`] (`tls.rs`, certificates reloaded when their files change)"
)]
#![cfg_attr(
    not(feature = "webhook"),
    doc = "- With `webhook`: `TlsFiles` (`tls.rs`, certificates reloaded when their files change)"
)]
#![cfg_attr(feature = "webhook", doc = "  and [`RequireAccess`]")]
#![cfg_attr(not(feature = "webhook"), doc = "  and `RequireAccess`")]
//!   (`access.rs`, TokenReview and SubjectAccessReview in front of a handler); with `metrics`:
#![cfg_attr(feature = "metrics", doc = "  [`MetricsHandler`].")]
#![cfg_attr(not(feature = "metrics"), doc = "  `MetricsHandler`.")]
//!
//! Why our own server: the crate is synchronous, and the servers of that kind on crates.io
//! either set no timeouts (tiny_http, which this replaced: one thread answered everyone and
//! a client that never read stalled every probe) or bring a runtime. The request head is
//! parsed by `httparse` (hyper's parser: no dependencies, no allocation, incremental, fuzzed,
//! and already in the tree through ureq); the bounds are applied before it parses, while the
//! bytes arrive. Bodies need a `Content-Length` (`Transfer-Encoding: chunked` is answered
//! with 411: kube-apiserver, the kubelet and Prometheus send a length), digits only (RFC
//! 9110 §8.6: `+5` is 400). Head lines end with CRLF: a bare LF is 400, so that where a
//! head ends is one rule for the framing and the parser, and no byte a proxy in front
//! forwarded is skipped unseen. HTTP/1.1 only (no
//! HTTP/2; kube-apiserver's webhook client falls back to HTTP/1.1 through ALPN).
//!
//! Figures (`cargo bench --bench serve`, 2 shared cores, loopback): `/healthz` of a
//! manager's probe endpoint answers about 42,000 requests/s to 4 keep-alive clients and
//! 10,000/s with a new connection per request (`wrk -t2 -c16 -d10s`: 56,000/s); an idle
//! plain connection costs about 14 KiB of resident memory (its thread), an idle TLS one
//! about 37 KiB counting both ends.
//!
//! ```
//! use kube_informer::serve::{Limits, Request, Response, Router, Server};
//!
//! let router = Router::new()
//!     .route("/validate", |_: &Request| Response::json(200, &serde_json::json!({"ok": true})))
//!     .subtree("/debug/", |r: &Request| Response::text(200, format!("{}\n", r.path)));
//! let server = Server::builder("webhook")          // threads ki/webhook/acpt, ki/webhook/conn
//!     .limits(Limits::new().max_body_bytes(4 << 20))
//!     // with `webhook`: .tls(TlsFiles::new("/tmp/k8s-webhook-server/serving-certs"))
//!     .bind("127.0.0.1:0", router)?;
//! server.stop();                                   // every thread joined
//! # Ok::<(), kube_informer::Error>(())
//! ```

#[cfg(feature = "webhook")]
mod access;
mod connection;
mod handler;
mod limits;
#[cfg(feature = "metrics")]
mod metrics;
mod read;
mod router;
mod server;
mod stream;
#[cfg(feature = "webhook")]
mod tls;

#[cfg(feature = "webhook")]
#[cfg_attr(docsrs, doc(cfg(feature = "webhook")))]
pub use access::{RequireAccess, AUTHENTICATED_TTL, CACHE_ENTRIES, DENIED_TTL};
pub use handler::{Handler, Request, Response};
pub use limits::Limits;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub use metrics::MetricsHandler;
pub use router::Router;
pub use server::{Server, ServerBuilder};
#[cfg(feature = "webhook")]
#[cfg_attr(docsrs, doc(cfg(feature = "webhook")))]
pub use tls::{TlsFiles, TlsStatus};
