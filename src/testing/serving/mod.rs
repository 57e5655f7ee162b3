//! The server room: how a request reaches the test server and its answer leaves it.
//!
//! [`ApiServer`](super::ApiServer) itself (`server.rs`: lifecycle, connections, authentication,
//! the Rust-side API), request routing and the read answers (`handlers.rs`), the helpers every
//! room answers with (`answers.rs`: `Status` bodies, continue tokens), the small part of
//! HTTP/1.1 it speaks (`http.rs`), TLS with the committed certificates in `certs/` (`tls.rs`),
//! injected faults (`faults.rs`), and discovery with the captured built-ins in
//! `discovery_builtins.json` (`discovery.rs`). They live together because they are the
//! server's surface: every other room is reached from `handlers.rs` or `server.rs`, and the
//! other rooms take from here only `answers.rs`, `http.rs` and `server.rs`'s shared state
//! (conversion also the router's watch, `handlers::watch_converted`).

pub(super) mod answers;
pub(super) mod builtins;
pub(super) mod discovery;
pub(super) mod faults;
pub(super) mod handlers;
pub(super) mod http;
pub(super) mod kubelet_api;
pub(super) mod peer;
#[cfg(feature = "protobuf")]
pub(super) mod protobuf_answers;
pub(super) mod server;
pub(super) mod tls;

// What the server takes from the other rooms (its files name them `super::<module>`).
use super::admission::{conversion, reviews, webhooks};
use super::kubelet::{eviction, pod_logs, pods};
#[cfg(feature = "ws")]
use super::kubelet::{pod_exec, runtime};
use super::schemas::{crd, crd_defaults, crd_lifecycle};
use super::storage::{db, metadata, read_versions, resources, store};
use super::writing::writes;
#[cfg(feature = "ws")]
use super::Runtime;
