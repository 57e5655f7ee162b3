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
//!
//! Wiring (the server itself lands next; this is the interface it serves):
//!
//! ```text
//! let router = Router::new()
//!     .route("/validate", my_validating_hook)   // any Handler
//!     .route("/mutate", my_mutating_hook);
//! let server = Server::builder("webhook")          // names its threads ki/webhook/...
//!     .tls(TlsFiles::new("/tmp/k8s-webhook-server/serving-certs"))  // tls.crt, tls.key
//!     .bind("0.0.0.0:9443", router)?;
//! ...
//! server.stop();                                   // joins every thread within the grace
//! ```

mod connection;
mod handler;
mod limits;
mod read;
mod router;
mod server;
mod stream;
#[cfg(feature = "webhook")]
mod tls;

pub use handler::{Handler, Request, Response};
pub use limits::Limits;
pub use router::Router;
pub use server::{Server, ServerBuilder};
#[cfg(feature = "webhook")]
#[cfg_attr(docsrs, doc(cfg(feature = "webhook")))]
pub use tls::{TlsFiles, TlsStatus};
