//! The cache machinery: indexed store, DeltaFIFO, reflector, shared informers, listers.
//!
//! The flow is client-go's: a [`Reflector`] lists and watches a resource on its own thread and
//! feeds a [`DeltaFifo`]; a consumer pops each key's deltas and applies them to the
//! [`Store`] (the cache readers query), then notifies handlers.
//!
//! # When something is wrong: health, logs, counters
//!
//! An informer that cannot sync says why. [`SharedIndexInformer::health`] is a plain value
//! ([`InformerHealth`]): synced or not, watching or not, the last error with its `Status`,
//! the failures in a row, the time since the last event or bookmark, and counters. It
//! prints on one line:
//!
//! ```text
//! pods: not synced, 0 cached, not watching, lists 0 (relists 0), events 0, 3 failures in a row; last error 0.4s ago: GET /api/v1/pods?limit=500: 403 Forbidden: pods is forbidden: ...
//! ```
//!
//! [`SharedInformerFactory::wait_for_cache_sync`] returns a [`SyncReport`]: `all_synced()`,
//! `not_synced()`, and a `Display` that lists each informer that did not sync, with its last
//! error.
//!
//! **Counters**, to export to any metrics system (no runtime dependency):
//!
//! - per reflector (`health().reflector`, [`ReflectorStats`]): lists, list failures, relists
//!   by cause, watch restarts, events, bookmarks, errors by kind (`transport`, `decode`,
//!   `api_403`, ...) and the last resourceVersion;
//! - per handler ([`HandlerRegistration::stats`], [`HandlerStats`]): delivered, coalesced,
//!   backlog, panics;
//! - per work queue ([`Queue::metrics`](crate::workqueue::Queue::metrics)): client-go's
//!   depth, adds, retries, queue latency, work duration, unfinished work, longest running.
//!
//! `pod_logger --stats` prints them. The `metrics` feature exports them to Prometheus under
//! client-go's names (see the [`manager`](crate::manager) docs).
//!
//! **Logs** go through the `log` facade, under the crate's module paths
//! (`kube_informer::cache::reflector`, `kube_informer::cache::informer`,
//! `kube_informer::cache::listener`, `kube_informer::client`, `kube_informer::controller`,
//! `kube_informer::config`). Each line starts with `kube-informer/<resource>:`. Levels:
//!
//! - **info**: a cache synced ("synced N objects in T"), a relist and its cause, the fall-back
//!   from streaming lists;
//! - **warn**: every list or watch error, once (with an `on_watch_error` callback the error
//!   goes to the callback, and the log says it at debug only);
//! - **error**: a handler or a transform panicked;
//! - **debug**: retries and back-off.
//!
//! The library only writes to the `log` facade: nothing is printed until the program installs
//! a logger. The examples install `env_logger` (`env_logger::init()` first thing in `main`),
//! so `RUST_LOG=info cargo run --example deployment_controller` prints syncs and relists, and
//! `RUST_LOG=debug` retries too. Do the same in your program (any `log` implementation
//! works). Without a logger a failing controller is still visible:
//! [`Controller::health`](crate::controller::Controller::health) (and
//! [`Manager::controllers_health`](crate::manager::Manager::controllers_health)) names the
//! last error of every failing key and how long every reconcile has failed, and
//! [`ManagerBuilder::unready_when_failing`](crate::manager::ManagerBuilder::unready_when_failing)
//! makes `/readyz` say so.
//!
//! **Secrets.** No message, `Debug` output or log line of this crate carries a credential or
//! object data (bad watch lines and error bodies are described by length and position, not
//! quoted). One dependency's does: at **trace**, the `ureq_proto` target hex-dumps every byte
//! on the wire, tokens and Secret data included. Filter it out (`RUST_LOG=trace,ureq_proto=off`,
//! or [`is_sensitive_log_target`](crate::config::is_sensitive_log_target) in your logger's
//! filter).
//!
//! **Threads a person can tell apart.** Linux shows a thread's name cut to 15 bytes (`ps -L`,
//! `top -H`, debuggers), so every thread of the library is named `ki/<subject>/<role>`, with
//! the subject shortened to fit:
//!
//! | thread | what it is |
//! |---|---|
//! | `ki/pods/refl` | the reflector of `pods` |
//! | `ki/pods/inf` | its informer |
//! | `ki/pods/rsyn` | its resync timer |
//! | `ki/pods/lis3` | the listener of handler 3 |
//! | `ki/pods/page` | a list page fetched ahead |
//! | `ki/deploym/wrk1` | worker 1 of controller `deployments` |
//! | `ki/node-la/elec`, `/lead`, `/wdog` | leader election's elector, term and watchdog of the Lease `node-labeler` |
//! | `ki/node-la/dlay` | a work queue's delay timer |
//! | `ki/node-labe/ev` | an event recorder |
//! | `ki/probes/http`, `ki/mgr/start`, `ki/mgr/stop` | the probe endpoint, the manager |
//! | `kiapi/...` | the test API server |
//!
//! Log lines keep the full names (`kube-informer/pods: ...`).

mod backoff;
mod catch;
#[cfg(feature = "k8s-openapi")]
mod compact_managed_fields;
mod delta;
mod delta_fifo;
mod factory;
mod graveyard;
mod handler;
mod health;
mod informer;
#[cfg(all(test, shuttle))]
pub(crate) mod interleavings;
mod listener;
mod lister;
mod reflector;
mod stop;
mod store;

pub use backoff::Backoff;
pub use catch::{PanicHandler, Transform};
#[cfg(feature = "k8s-openapi")]
pub use compact_managed_fields::{
    compact_fields_v1, compact_managed_fields, expand_managed_fields, fields_v1_tree,
};
pub use delta::{key_of, DeletedFinalStateUnknown, DeletedObject, Delta, DeltaType};
pub use delta_fifo::{Closed, DeltaFifo, KnownObjects, WatchChange, DEFAULT_HIGH_WATER};
pub use factory::{FactoryOptions, InformerScope, Namespaces, SharedInformerFactory, SyncReport};
pub use handler::{EventHandler, FilteringHandler, HandlerFns};
pub use health::{HandlerStats, InformerHealth, LastError, ReflectorStats, RelistCause};
pub use informer::{HandlerRegistration, InformerConfig, NamespaceWatch, SharedIndexInformer};
pub use listener::DEFAULT_MAX_BACKLOG;
pub use lister::Lister;
pub use reflector::{strip_managed_fields, Reflector, ReflectorConfig, WatchErrorHandler};
pub use stop::StopSignal;
pub use store::{namespace_index, IndexFn, Store, NAMESPACE_INDEX};
