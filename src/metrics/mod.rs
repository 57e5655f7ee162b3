//! Prometheus metrics under the names dashboards already use (feature `metrics`).
//!
//! Go controllers export client-go's and controller-runtime's metrics, and the dashboards
//! and alerts written for them (work queue depth, retries, request codes, reconcile errors,
//! leader status) key on those names and labels. [`Metrics`] exports the figures this
//! library already keeps under the same names, so those dashboards work for a Rust
//! controller unchanged:
//!
//! - **work queues** (client-go, label `name`; `workqueue.rs`): `workqueue_depth`,
//!   `workqueue_adds_total`, `workqueue_queue_duration_seconds`,
//!   `workqueue_work_duration_seconds`, `workqueue_unfinished_work_seconds`,
//!   `workqueue_longest_running_processor_seconds`, `workqueue_retries_total`;
//! - **the REST client** (client-go; `rest_client.rs`): `rest_client_requests_total{code,method,host}`,
//!   `rest_client_request_duration_seconds{verb,host}`,
//!   `rest_client_rate_limiter_duration_seconds{verb,host}`;
//! - **leader election** (client-go; `leader_election.rs`): `leader_election_master_status{name}`;
//! - **reconciles** (controller-runtime, label `controller`; `reconcile.rs`):
//!   `controller_runtime_reconcile_total{controller,result}`,
//!   `controller_runtime_reconcile_errors_total`, `controller_runtime_reconcile_panics_total`,
//!   `controller_runtime_reconcile_time_seconds`, `controller_runtime_active_workers`;
//! - **informers** (this library's names, `kube_informer_*`, label `informer`;
//!   `informer.rs`): objects cached, synced, watching, relists by cause, watch restarts,
//!   errors by kind, how long failing, last event age, each handler's backlog, deliveries,
//!   coalesced notifications and panics;
//! - **event recorders** (`kube_informer_events_*`, label `component`; `events.rs`).
//!
//! # Why `prometheus-client`
//!
//! The crate is the Prometheus project's own Rust client. Its
//! [`Collector`](prometheus_client::collector::Collector) reads values when scraped, which fits a
//! library that already counts everything in plain values (`QueueMetrics`, `InformerHealth`,
//! `ControllerStats`): the gauges and counters cost the hot paths nothing, and only the four
//! histograms are observed as things happen. The `metrics` facade would let the application pick an
//! exporter, but it pushes every value as it changes (a copy of counters the library keeps anyway)
//! and its Prometheus exporter brings a dozen crates more; the names above are Prometheus names,
//! served on the probe endpoint's `/metrics`. Add your own metrics to the same registry with
//! [`Metrics::with_registry`] (this module re-exports the crate, so the versions match).
//!
//! # Cost
//!
//! Registering installs observers: a short lock and a bucket search per work queue `get`
//! and `done`, per reconcile, and per API request. Everything else is read at scrape time.
//! A build without the feature compiles none of it (`cargo bench --bench informer` gives
//! both figures; see benches/README.md).
//!
//! ```
//! use kube_informer::cache::SharedInformerFactory;
//! use kube_informer::metrics::Metrics;
//! use kube_informer::Client;
//! # let server = kube_informer::testing::ApiServer::start();
//! let client = Client::new(server.client_config())?;
//! let metrics = Metrics::new();
//! metrics.register_client(&client);
//! let factory = std::sync::Arc::new(SharedInformerFactory::new(client));
//! metrics.register_factory(&factory);
//! # let pods = kube_informer::api::ApiResource::new("", "v1", "Pod", "pods", true);
//! let _pods = factory.dynamic_informer(&pods);
//! factory.start()?;
//! factory.wait_for_cache_sync(std::time::Duration::from_secs(30));
//! let text = metrics.encode(); // Prometheus text format
//! assert!(text.contains(r#"kube_informer_synced{informer="pods.v1 (DynamicObject)"} 1"#), "{text}");
//! assert!(text.contains(r#"rest_client_requests_total{code="200",method="GET""#), "{text}");
//! # Ok::<(), kube_informer::Error>(())
//! ```

mod encode;
mod events;
mod informer;
mod leader_election;
mod reconcile;
mod rest_client;
mod workqueue;

use std::sync::Arc;

use parking_lot::Mutex;
pub use prometheus_client;
use prometheus_client::registry::Registry;

pub use workqueue::{MeteredQueue, QueueHistograms};

use crate::api::Object;
use crate::cache::{SharedIndexInformer, SharedInformerFactory};
use crate::client::Client;
use crate::controller::{Controller, EventRecorder, LeaderElector};

/// The `Content-Type` of [`Metrics::encode`] (Prometheus text format 0.0.4).
pub const TEXT_CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// The `Content-Type` of [`Metrics::encode_openmetrics`].
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A registry of this library's metrics (and your own): register what to export, then
/// [`encode`](Self::encode) on each scrape. Cheap to clone; clones share everything. Holds
/// no registered object alive: what is dropped stops being exported.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Mutex<Registry>,
    queues: Arc<workqueue::Queues>,
    rest: rest_client::RestFamilies,
    reconciles: Arc<reconcile::Reconciles>,
    informers: Arc<informer::Informers>,
    electors: Arc<leader_election::Electors>,
    recorders: Arc<events::Recorders>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// An empty registry with this library's metric families (they show once something is
    /// registered).
    pub fn new() -> Self {
        let queues = Arc::new(workqueue::Queues::new());
        let rest = rest_client::RestFamilies::new();
        let reconciles = Arc::new(reconcile::Reconciles::new());
        let informers = Arc::new(informer::Informers::default());
        let electors = Arc::new(leader_election::Electors::default());
        let recorders = Arc::new(events::Recorders::default());
        let mut r = Registry::default();
        r.register_collector(Box::new(Arc::clone(&queues)));
        r.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            queues.queue_duration.clone(),
        );
        r.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            queues.work_duration.clone(),
        );
        r.register(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host",
            rest.requests.clone(),
        );
        r.register(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host",
            rest.latency.clone(),
        );
        r.register(
            "rest_client_rate_limiter_duration_seconds",
            "Client side rate limiter latency in seconds. Broken down by verb, and host",
            rest.rate_limiter.clone(),
        );
        r.register_collector(Box::new(Arc::clone(&reconciles)));
        r.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            reconciles.time.clone(),
        );
        r.register_collector(Box::new(Arc::clone(&electors)));
        r.register_collector(Box::new(Arc::clone(&informers)));
        r.register_collector(Box::new(Arc::clone(&recorders)));
        Metrics {
            inner: Arc::new(Inner {
                registry: Mutex::new(r),
                queues,
                rest,
                reconciles,
                informers,
                electors,
                recorders,
            }),
        }
    }

    /// Counts every request of `client` and its clones (`rest_client_*`). A client reports
    /// to the first registry it is registered with; false when it already had one.
    pub fn register_client(&self, client: &Client) -> bool {
        client.set_observer(Arc::new(rest_client::RestObserver {
            families: self.inner.rest.clone(),
            host: rest_client::RestObserver::host_of(client.server()),
        }))
    }

    /// Exports a work queue under `name` (`workqueue_*{name}`). A controller's queue is
    /// registered by [`register_controller`](Self::register_controller).
    pub fn register_queue<Q: MeteredQueue>(&self, name: &str, queue: &Arc<Q>) {
        let queue: Arc<dyn MeteredQueue> = Arc::clone(queue) as Arc<dyn MeteredQueue>;
        self.inner.queues.add(name, queue);
    }

    /// Exports a controller's reconciles (`controller_runtime_*{controller}`) and its work
    /// queue (`workqueue_*{name}`), both under the controller's name.
    pub fn register_controller<K: Object>(&self, controller: &Controller<K>) {
        let queue: Arc<dyn MeteredQueue> =
            Arc::clone(controller.shared_queue()) as Arc<dyn MeteredQueue>;
        self.inner.queues.add(controller.name(), queue);
        self.inner
            .reconciles
            .add(controller.name(), controller.counters());
    }

    /// Exports every informer of `factory`, those it makes later included
    /// (`kube_informer_*{informer}`, named as the factory names them).
    pub fn register_factory(&self, factory: &Arc<SharedInformerFactory>) {
        self.inner
            .informers
            .add(informer::Informers::factory(factory));
    }

    /// Exports one informer (`kube_informer_*{informer}`, under its name).
    pub fn register_informer<K: Object>(&self, informer: &SharedIndexInformer<K>) {
        let source = informer.health_source();
        self.inner
            .informers
            .add(Box::new(move || source().map(|h| vec![h])));
    }

    /// Exports whether this process leads the elector's Lease
    /// (`leader_election_master_status{name}`).
    pub fn register_elector(&self, elector: &LeaderElector) {
        self.inner.electors.add(elector.status());
    }

    /// Exports an event recorder's counts (`kube_informer_events_*{component}`).
    pub fn register_event_recorder(&self, recorder: &EventRecorder) {
        let (component, source) = recorder.stats_source();
        self.inner.recorders.add(component, source);
    }

    /// Runs `f` with the registry, to register metrics of your own beside the library's.
    ///
    /// ```
    /// use kube_informer::metrics::prometheus_client::metrics::counter::Counter;
    /// use kube_informer::metrics::Metrics;
    ///
    /// let metrics = Metrics::new();
    /// let labelled: Counter = Counter::default();
    /// metrics.with_registry(|r| r.register("myapp_labelled", "Nodes labelled", labelled.clone()));
    /// labelled.inc();
    /// assert!(metrics.encode().contains("myapp_labelled_total 1"));
    /// ```
    pub fn with_registry<R>(&self, f: impl FnOnce(&mut Registry) -> R) -> R {
        f(&mut self.inner.registry.lock())
    }

    /// Everything registered, in the Prometheus text format (version 0.0.4, what every
    /// Prometheus scrapes; [`TEXT_CONTENT_TYPE`]).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail; a collector's error would be a bug of ours.
        let _ = prometheus_client::encoding::prometheus_text::encode(
            &mut out,
            &self.inner.registry.lock(),
        );
        out
    }

    /// Everything registered, in the OpenMetrics text format
    /// ([`OPENMETRICS_CONTENT_TYPE`]).
    pub fn encode_openmetrics(&self) -> String {
        let mut out = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.inner.registry.lock());
        out
    }
}
