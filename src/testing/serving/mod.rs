//! The server room: how a request reaches the test server and its answer leaves it.
//!
//! [`ApiServer`](super::ApiServer) itself (`server.rs`: lifecycle, connections, authentication,
//! the Rust-side API; `kubelet_api.rs`: its pods, nodes and logs), request routing and the
//! read answers (`handlers.rs`), the helpers every room answers with (`answers.rs`: `Status`
//! bodies, continue tokens), the small part of HTTP/1.1 it speaks (`http.rs`) and what a
//! connection knows of its peer (`peer.rs`), TLS with the committed certificates in `certs/`
//! (`tls.rs`), injected faults (`faults.rs`), and discovery (`discovery.rs`) with the
//! captured built-ins in `discovery_builtins.json` (`builtins.rs`). They live together because
//! they are the server's surface: every other room is reached from `handlers.rs` or
//! `server.rs`.
//!
//! The direction: the server depends on the rooms, never the other way round. A room takes
//! from here only the leaves (`answers.rs`, `http.rs`, `peer.rs`, `builtins.rs`), the store as
//! `storage::db::Db`, and what else it needs through a trait of its own that `server.rs`
//! implements for its state (`AdmissionHost`, `ConversionHost` with the router's watch,
//! `DiscoveryHost`, `LogsHost`). `.ci/import_circles.py src testing` lists the import circles.

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
