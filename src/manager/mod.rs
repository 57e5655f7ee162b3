//! Running controllers in production: one runner for many controllers, health checks,
//! probes and metrics.
//!
//! - [`Manager`] (`manager.rs`): several controllers over one client and one informer
//!   factory, optional leader election (all its controllers lead together), a clean stop
//!   within a grace period.
//! - [`Report`] (`checks.rs`): liveness and readiness as plain values, printed as
//!   kube-apiserver prints its `?verbose` probes.
//! - `probes.rs` (feature `probes`): the HTTP endpoint serving `/healthz`, `/livez`,
//!   `/readyz` and, with the `metrics` feature, `/metrics`.
//!
//! Why a room of its own: the manager uses controllers, the cache, the client and the
//! metrics; nothing uses it.

mod checks;
#[allow(clippy::module_inception)]
mod manager;
#[cfg(feature = "probes")]
mod probes;

pub use checks::{Check, Probe, Report};
pub use manager::{Manager, ManagerBuilder, ShutdownHandle};
