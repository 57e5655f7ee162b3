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
//!
//! # A whole `main`
//!
//! A controller in production is probed by the kubelet and watched by dashboards. The
//! [`Manager`] runs several controllers over one client and one informer factory, with
//! optional leader election (all its controllers lead together), liveness and readiness
//! checks, the probe endpoint and metrics, and a clean stop within a grace period:
//!
//! ```rust,ignore
//! // `ignore`: the full program is examples/node_labeler.rs.
//! let builder = Manager::builder(Config::infer()?.client()?)
//!     .leader_election(LeaderElectionConfig::new("kube-system", "node-labeler", &pod_name))
//!     .probe_addr("0.0.0.0:8081")                 // feature `probes`
//!     .grace_period(Duration::from_secs(30));
//! let nodes = builder.factory().informer::<Node>();
//! let manager = builder
//!     .controller(Controller::builder("node-labeler", nodes).workers(2), reconcile)
//!     .start()?;
//! let stop = manager.shutdown_handle();
//! ctrlc::set_handler(move || stop.shutdown())?;   // ctrlc with `termination`: SIGTERM too
//! manager.run()?;                                 // returns once stopped, within the grace period
//! ```
//!
//! `cargo run --example node_labeler --features metrics -- --demo --probe-addr 127.0.0.1:8081`
//! serves the endpoint in demo mode (so does `deployment_controller`).
//!
//! # Probes
//!
//! `/healthz` (and `/livez`), `/readyz`, and one check at `/readyz/<check>`; `?verbose` lists
//! every check.
//!
//! - **Ready** when every informer of the manager's factory has synced, no informer's lists
//!   and watches have kept failing for more than 30 s ([`ManagerBuilder::unready_after`]),
//!   every controller has started, the process leads or stands by cleanly (its elector runs
//!   and its last read or write of the Lease succeeded), and it is not stopping.
//! - **Alive** while it answers and no informer has kept failing for more than 5 minutes
//!   ([`ManagerBuilder::unhealthy_after`]; a restart gives fresh connections and
//!   credentials).
//!
//! A failing probe answers 500 and says why, as kube-apiserver's `?verbose` does (with the
//! reason shown, not withheld):
//!
//! ```text
//! $ curl -s localhost:8081/readyz
//! [+]informer-sync ok
//! [-]watches failed: nodes.v1 (Node) has failed to list or watch for 34s (6 failures in a row, more than 30s allowed; last error: GET /api/v1/nodes?...: 503 ServiceUnavailable: ...)
//! [+]controllers ok
//! [+]leader-election ok
//! [+]shutdown ok
//! readyz check failed
//! ```
//!
//! An unknown path gets 404 with the list of paths, another method than GET or HEAD 405,
//! request headers over the bound 431, a malformed request 400. The endpoint is served by
//! the crate's own bounded HTTP/1.1 server (module `serve`, feature `probes`): a read and a
//! write deadline on every connection; bounds on the request line, the headers and the body,
//! checked before anything is buffered; a bound on connections (more are refused at once);
//! keep-alive with a cap. A client that sends a byte a minute, pipelines without reading or
//! holds thousands of idle connections stalls only itself (each case is tested over real
//! sockets; the bounds are in the `serve` module docs).
//!
//! # Metrics
//!
//! With the `metrics` feature, `/metrics` is served on the probe endpoint (when `probes` is
//! on too), or `manager.metrics().encode()` gives the text to serve yourself. The names and
//! labels are the ones existing dashboards and alerts use: client-go's work queue, REST
//! client and leader election metrics, controller-runtime's reconcile metrics, and the
//! informers' own (`kube_informer_*`); the `metrics` module lists them all and says why it
//! uses prometheus-client. Without a manager, `metrics::Metrics` registers a client, a
//! factory or an informer, a controller, a queue, an elector or an event recorder one by
//! one, and takes your own metrics (`with_registry`). Scraped from the node_labeler demo
//! (histogram buckets left out):
//!
//! ```text
//! workqueue_depth{name="node-labeler"} 0.0
//! workqueue_adds_total{name="node-labeler"} 15
//! workqueue_retries_total{name="node-labeler"} 2
//! workqueue_queue_duration_seconds_count{name="node-labeler"} 15
//! rest_client_requests_total{code="200",method="PATCH",host="127.0.0.1:45029"} 5
//! rest_client_requests_total{code="503",method="PATCH",host="127.0.0.1:45029"} 2
//! rest_client_requests_total{code="201",method="POST",host="127.0.0.1:45029"} 5
//! controller_runtime_reconcile_total{controller="node-labeler",result="success"} 13
//! controller_runtime_reconcile_total{controller="node-labeler",result="error"} 2
//! controller_runtime_active_workers{controller="node-labeler"} 0.0
//! kube_informer_synced{informer="nodes.v1 (Node)"} 1.0
//! kube_informer_objects{informer="nodes.v1 (Node)"} 8.0
//! kube_informer_relists_total{informer="nodes.v1 (Node)",cause="expired"} 0
//! kube_informer_last_event_age_seconds{informer="nodes.v1 (Node)"} 0.010533218
//! kube_informer_handler_backlog{informer="nodes.v1 (Node)",handler="0"} 0.0
//! ```
//!
//! **Two features, not one.** Probes without metrics are common (the kubelet always probes;
//! a Prometheus may not be there). So `probes` (the crate's own server: no new crate) and
//! `metrics` (prometheus-client: 3 small crates and a derive macro on the `syn` the build
//! already has) are separate; with both, the endpoint serves `/metrics` too. Both are off by
//! default, and a build without them compiles none of it (`tests/features.rs` asks `cargo
//! tree`). The `Manager` itself and its checks ([`Manager::readiness`],
//! [`Manager::liveness`]) need neither.
//!
//! # Stopping, and signals
//!
//! Signals stay in the application. A process has one disposition per signal, and the
//! application may already own it (its own handler, a second Ctrl-C that exits at once, a
//! runtime); `ctrlc` allows one handler per process. So the manager takes its stop from a
//! [`ShutdownHandle`], and the examples connect it to SIGINT and SIGTERM with `ctrlc`
//! (feature `termination`) in two lines.
//!
//! On the stop:
//!
//! 1. readiness turns false at once;
//! 2. the workers finish the keys in hand;
//! 3. the Lease is released (another replica takes over at once);
//! 4. handlers and informers stop;
//! 5. the probe endpoint goes last.
//!
//! Past the grace period [`Manager::run`] returns an error naming the step that hung, and the
//! process can exit. With the endpoint up and idle watches, the stop takes about a
//! millisecond on the test server (`tests/operations.rs` prints it; the target is under a
//! second). The library's threads and their names are listed in the [`cache`](crate::cache)
//! docs.

mod checks;
#[allow(clippy::module_inception)]
mod manager;
#[cfg(feature = "probes")]
mod probes;

pub use checks::{Check, Probe, Report};
pub use manager::{Manager, ManagerBuilder, ShutdownHandle};
