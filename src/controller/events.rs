//! An event recorder: tells humans what a controller did, through Kubernetes Events.
//!
//! Controllers report on the objects they act on (`kubectl describe` shows it), but a
//! reconcile must never wait on that report, and a controller that loops on one object must not
//! flood the API server. So [`EventRecorder::record`] only puts the event in a bounded queue
//! (full: the event is dropped and counted) and one background thread,
//! `ki/<component>/ev` (its last `/` segment, shortened), writes them, following client-go's `tools/events`:
//!
//! - **API**: `events.k8s.io/v1` Events (`regarding`, `reason`, `action`, `note`,
//!   `reportingController`, `reportingInstance`, `eventTime`). When the server does not serve
//!   that API (a 404 to a create before any succeeded, and not one naming a missing
//!   namespace), the recorder switches for good to `core/v1` Events (`involvedObject`,
//!   `message`, `source.component`, `reportingComponent`, `reportingInstance`,
//!   `firstTimestamp`/`lastTimestamp`, `count`). It does not ask discovery (client-go's
//!   adapter does). An Event lives in its object's namespace (`default` for a cluster-scoped
//!   object) and is named `<object name>.<nanoseconds, hex>`, as client-go names them.
//! - **Series**: events with the same regarding object, reason, action, type and reporting
//!   controller/instance are isomorphic (the note is not compared, as in client-go). The first
//!   one creates an Event; the first repeat patches it at once with `series: {count: 2,
//!   lastObservedTime}`; later repeats only count, and the count is patched on the next
//!   refresh tick ([`EventRecorderConfig::series_refresh`], client-go's 30 minutes) or when
//!   the series finishes (no repeat for [`EventRecorderConfig::series_finish`], client-go's
//!   6 minutes), after which the next repeat starts a new Event. These are client-go's
//!   intervals.
//! - **Rate limit**: client-go's spam filter: a token bucket per reporting component and
//!   regarding object (kind, namespace, name, uid, apiVersion), burst 25, one token back every
//!   5 minutes by default. An event without a token is dropped and counted; repeats of a
//!   series take tokens too (the filter runs before aggregation, as in client-go's
//!   correlator). Buckets are kept for at most 4096 objects (client-go: an LRU of 4096);
//!   past that, full buckets are forgotten first, then all.
//! - **Visibility**: [`EventRecorder::stats`] counts what was queued, dropped (queue full,
//!   rate limited, after stop), created, patched and failed. A failing write is logged once
//!   per kind of failure (the HTTP reason or "transport"), with the request line only (never a
//!   header or a token).
//! - **Stop**: [`EventRecorder::stop`] (or dropping the last handle) cuts any request in
//!   flight and joins the thread: well under a second.
//!
//! Limits (simplifications, on purpose):
//! - A failed write is not retried (client-go retries up to 12 times, 10 s apart); it is
//!   counted in `failed` and logged. A series patch answered 404 (the Event expired or was
//!   deleted) creates the Event again with its count.
//! - Counts not yet patched when the recorder stops are not written.
//! - `related` objects and `deprecatedSource` are not set. A note longer than the server's
//!   1024-byte limit is cut to it (at a character boundary) rather than refused.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime};

use crossbeam_channel::{Receiver, Sender, TrySendError};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::lease::MicroTime;
use crate::api::{ApiResource, DynamicObject, Meta, Object};
use crate::client::{Cancel, Patch, PatchParams, PostParams};
use crate::{Api, Client, Error, Result};

/// `Normal` or `Warning`, the two types of Event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Something expected happened (e.g. a label was set).
    Normal,
    /// Something may need attention (e.g. a reconcile failed).
    Warning,
}

impl EventType {
    /// `"Normal"` or `"Warning"`, as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// The object an Event is about (`regarding` in `events.k8s.io/v1`, `involvedObject` in
/// `core/v1`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// e.g. `v1`, `apps/v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// e.g. `Node`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Empty for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The object's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The object's uid.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The object's resourceVersion when the event was recorded.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
}

impl ObjectReference {
    /// A reference to `obj`, an object of the resource `ar` (apiVersion and kind come from
    /// `ar`, the rest from the object's metadata).
    pub fn from_object<K: Object>(ar: &ApiResource, obj: &K) -> Self {
        let m = obj.metadata();
        ObjectReference {
            api_version: ar.api_version(),
            kind: ar.kind.clone(),
            namespace: m.namespace().to_owned(),
            name: m.name().to_owned(),
            uid: m.uid().unwrap_or_default().to_owned(),
            resource_version: m.resource_version().to_owned(),
        }
    }

    /// A reference to a dynamic object, using its own `apiVersion` and `kind` (empty when the
    /// server left them out, as in list items).
    pub fn from_dynamic(obj: &DynamicObject) -> Self {
        let m = &obj.metadata;
        ObjectReference {
            api_version: obj.api_version.as_deref().unwrap_or_default().to_owned(),
            kind: obj.kind.as_deref().unwrap_or_default().to_owned(),
            namespace: m.namespace().to_owned(),
            name: m.name().to_owned(),
            uid: m.uid.clone().unwrap_or_default(),
            resource_version: m.resource_version().to_owned(),
        }
    }
}

/// How an [`EventRecorder`] reports and paces itself: a builder whose
/// [`new`](Self::new) takes the two names every recorder needs and client-go's defaults for
/// the rest.
///
/// ```
/// use kube_informer::controller::EventRecorderConfig;
/// use std::time::Duration;
/// let config = EventRecorderConfig::new("example.com/labeler", "labeler-0")
///     .burst(10)
///     .series_refresh(Duration::from_secs(600));
/// # let _ = config;
/// ```
#[derive(Clone, Debug)]
pub struct EventRecorderConfig {
    /// `reportingController`, e.g. `example.com/node-labeler` (also `source.component` in
    /// `core/v1`, and the thread's name).
    reporting_controller: String,
    /// `reportingInstance`, e.g. the pod name of this replica.
    reporting_instance: String,
    /// Events queued and not yet written; more are dropped (default 1000, client-go's).
    queue_capacity: usize,
    /// Events allowed at once per object (default 25, client-go's spam filter).
    burst: u32,
    /// One token back per object this often (default 5 minutes, client-go's 1/300 qps).
    refill_every: Duration,
    /// Counts of running series are patched this often (default 30 minutes, client-go's).
    series_refresh: Duration,
    /// A series with no repeat for this long is finished (default 6 minutes, client-go's).
    series_finish: Duration,
}

impl EventRecorderConfig {
    /// client-go's defaults for a controller and one of its instances.
    pub fn new(reporting_controller: &str, reporting_instance: &str) -> Self {
        EventRecorderConfig {
            reporting_controller: reporting_controller.to_owned(),
            reporting_instance: reporting_instance.to_owned(),
            queue_capacity: 1000,
            burst: 25,
            refill_every: Duration::from_secs(300),
            series_refresh: Duration::from_secs(30 * 60),
            series_finish: Duration::from_secs(6 * 60),
        }
    }

    /// Events queued and not yet written; more are dropped (default 1000, client-go's).
    pub fn queue_capacity(mut self, capacity: usize) -> Self {
        self.queue_capacity = capacity;
        self
    }

    /// Events allowed at once per object (default 25, client-go's spam filter).
    pub fn burst(mut self, burst: u32) -> Self {
        self.burst = burst;
        self
    }

    /// One token back per object this often (default 5 minutes, client-go's 1/300 qps).
    pub fn refill_every(mut self, every: Duration) -> Self {
        self.refill_every = every;
        self
    }

    /// Counts of running series are patched this often (default 30 minutes, client-go's).
    pub fn series_refresh(mut self, every: Duration) -> Self {
        self.series_refresh = every;
        self
    }

    /// A series with no repeat for this long is finished (default 6 minutes, client-go's).
    pub fn series_finish(mut self, after: Duration) -> Self {
        self.series_finish = after;
        self
    }

    fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::InvalidInput(format!("event recorder: {m}")));
        if self.reporting_controller.is_empty() {
            return bad("reporting_controller is empty");
        }
        if self.reporting_instance.is_empty() {
            return bad("reporting_instance is empty");
        }
        if self.queue_capacity == 0 || self.burst == 0 {
            return bad("queue_capacity and burst must be at least 1");
        }
        if self.refill_every.is_zero()
            || self.series_refresh.is_zero()
            || self.series_finish.is_zero()
        {
            return bad("refill_every, series_refresh and series_finish must be positive");
        }
        Ok(())
    }
}

/// What an [`EventRecorder`] did so far (see [`EventRecorder::stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventRecorderStats {
    /// Events accepted into the queue.
    pub queued: u64,
    /// Events dropped because the queue was full.
    pub dropped_queue_full: u64,
    /// Events recorded after [`EventRecorder::stop`] (dropped).
    pub dropped_stopped: u64,
    /// Events dropped by the per-object rate limit.
    pub rate_limited: u64,
    /// Events taken from the queue and handled (written, aggregated, limited or failed).
    pub processed: u64,
    /// Events created on the server.
    pub created: u64,
    /// Series counts patched on the server.
    pub patched: u64,
    /// Writes that failed (not retried).
    pub failed: u64,
    /// True once the recorder fell back to `core/v1` Events.
    pub core_v1_fallback: bool,
}

#[derive(Default)]
struct Counters {
    queued: AtomicU64,
    dropped_queue_full: AtomicU64,
    dropped_stopped: AtomicU64,
    rate_limited: AtomicU64,
    processed: AtomicU64,
    created: AtomicU64,
    patched: AtomicU64,
    failed: AtomicU64,
    fallback: AtomicU64,
}

/// One event as the caller recorded it.
struct Pending {
    regarding: ObjectReference,
    ty: EventType,
    reason: String,
    action: String,
    note: String,
    at: SystemTime,
}

/// Records Events without ever blocking its caller (see the module docs). Cheap to clone;
/// the clones share one queue and thread, which stop with [`stop`](Self::stop) or when the last
/// clone is dropped.
///
/// ```
/// use kube_informer::api::{ApiResource, DynamicObject};
/// use kube_informer::controller::{EventRecorder, EventRecorderConfig, EventType, ObjectReference};
/// use kube_informer::testing::ApiServer;
/// use kube_informer::{Api, Client};
///
/// let server = ApiServer::start();
/// let nodes = ApiResource::new("", "v1", "Node", "nodes", false);
/// server.create(&nodes, serde_json::json!({"metadata": {"name": "node-a"}})).unwrap();
/// let client = Client::new(server.client_config())?;
/// let node = Api::<DynamicObject>::all_with(client.clone(), &nodes).get("node-a")?;
///
/// let recorder = EventRecorder::start(client, EventRecorderConfig::new("example.com/labeler", "labeler-0"))?;
/// let about = ObjectReference::from_object(&nodes, &node);
/// recorder.record(&about, EventType::Normal, "Labelled", "Label", "set zone=a");
/// // Returns at once; the thread writes it.
/// let events = ApiResource::new("events.k8s.io", "v1", "Event", "events", true);
/// let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
/// while server.list(&events, Some("default")).is_empty() && std::time::Instant::now() < deadline {
///     std::thread::sleep(std::time::Duration::from_millis(10));
/// }
/// let ev = &server.list(&events, Some("default"))[0];
/// assert_eq!((ev["reason"].as_str(), ev["regarding"]["name"].as_str()), (Some("Labelled"), Some("node-a")));
/// recorder.stop();
/// # Ok::<(), kube_informer::Error>(())
/// ```
#[derive(Clone)]
pub struct EventRecorder {
    inner: Arc<Inner>,
}

struct Inner {
    /// The reporting controller (the metrics' `component` label).
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    component: String,
    tx: Mutex<Option<Sender<Pending>>>,
    counters: Arc<Counters>,
    cancel: Cancel,
    stop_tx: Mutex<Option<Sender<()>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl Inner {
    fn shutdown(&self) {
        self.tx.lock().take();
        self.stop_tx.lock().take();
        self.cancel.cancel();
        if let Some(t) = self.thread.lock().take() {
            let _ = t.join();
        }
    }
}

impl EventRecorder {
    /// Starts the recorder's thread. Fails on an invalid config or when the thread cannot
    /// be spawned.
    pub fn start(client: Client, config: EventRecorderConfig) -> Result<EventRecorder> {
        config.validate()?;
        let cancel = Cancel::new();
        let client = client.with_cancel(cancel.clone());
        let (tx, rx) = crossbeam_channel::bounded(config.queue_capacity);
        let (stop_tx, stop_rx) = crossbeam_channel::bounded::<()>(0);
        let counters = Arc::new(Counters::default());
        let name = crate::thread_name::thread_name(&config.reporting_controller, "ev");
        let component = config.reporting_controller.clone();
        let mut worker = Worker {
            client,
            config,
            counters: Arc::clone(&counters),
            core_v1: false,
            v1_served: false,
            buckets: HashMap::new(),
            series: HashMap::new(),
            logged: HashSet::new(),
            next_refresh: Instant::now(),
        };
        worker.next_refresh = Instant::now() + worker.config.series_refresh;
        let thread = thread::Builder::new()
            .name(name)
            .spawn(move || worker.run(&rx, &stop_rx))
            .map_err(|e| Error::Config(format!("spawning the event recorder thread: {e}")))?;
        Ok(EventRecorder {
            inner: Arc::new(Inner {
                component,
                tx: Mutex::new(Some(tx)),
                counters,
                cancel,
                stop_tx: Mutex::new(Some(stop_tx)),
                thread: Mutex::new(Some(thread)),
            }),
        })
    }

    /// Queues an event about `regarding`; never blocks. Returns false when it was dropped
    /// (queue full, or the recorder stopped); either way it is counted in [`stats`](Self::stats).
    pub fn record(
        &self,
        regarding: &ObjectReference,
        ty: EventType,
        reason: &str,
        action: &str,
        note: &str,
    ) -> bool {
        let c = &self.inner.counters;
        let tx = self.inner.tx.lock().clone();
        let Some(tx) = tx else {
            c.dropped_stopped.fetch_add(1, Ordering::SeqCst);
            return false;
        };
        let p = Pending {
            regarding: regarding.clone(),
            ty,
            reason: reason.to_owned(),
            action: action.to_owned(),
            note: truncate(note, NOTE_LIMIT).to_owned(),
            at: SystemTime::now(),
        };
        match tx.try_send(p) {
            Ok(()) => {
                c.queued.fetch_add(1, Ordering::SeqCst);
                true
            }
            Err(TrySendError::Full(_)) => {
                c.dropped_queue_full.fetch_add(1, Ordering::SeqCst);
                false
            }
            Err(TrySendError::Disconnected(_)) => {
                c.dropped_stopped.fetch_add(1, Ordering::SeqCst);
                false
            }
        }
    }

    /// What the recorder did so far.
    pub fn stats(&self) -> EventRecorderStats {
        stats_of(&self.inner.counters)
    }

    /// The reporting controller, and the recorder's stats while it lives (read without
    /// keeping it alive: for metrics).
    #[cfg(feature = "metrics")]
    pub(crate) fn stats_source(
        &self,
    ) -> (
        String,
        Box<dyn Fn() -> Option<EventRecorderStats> + Send + Sync>,
    ) {
        let weak = Arc::downgrade(&self.inner);
        let source = move || weak.upgrade().map(|inner| stats_of(&inner.counters));
        (self.inner.component.clone(), Box::new(source))
    }

    /// Stops the thread (a request in flight is cut) and joins it. Events still queued are
    /// dropped; later [`record`](Self::record)s are dropped and counted. Idempotent.
    pub fn stop(&self) {
        self.inner.shutdown();
    }
}

impl std::fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventRecorder")
            .field("stats", &self.stats())
            .finish()
    }
}

/// What makes two events isomorphic.
#[derive(Clone, PartialEq, Eq, Hash)]
struct SeriesKey {
    regarding: ObjectReference,
    ty: EventType,
    reason: String,
    action: String,
}

struct Series {
    namespace: String,
    name: String,
    core_v1: bool,
    count: u64,
    last: SystemTime,
    last_seen: Instant,
    /// The count changed since it was last written.
    dirty: bool,
    /// The Event as created, to create it again when a patch finds it gone.
    created: Value,
}

/// Rate-limit buckets kept at most (client-go's spam filter keeps an LRU of 4096).
const MAX_BUCKETS: usize = 4096;

/// A token bucket: `burst` tokens, one back every `every`.
struct Bucket {
    tokens: u32,
    last_refill: Instant,
}

impl Bucket {
    fn full(burst: u32, now: Instant) -> Bucket {
        Bucket {
            tokens: burst,
            last_refill: now,
        }
    }

    fn refill(&mut self, now: Instant, burst: u32, every: Duration) {
        let elapsed = now.saturating_duration_since(self.last_refill);
        let back = elapsed.as_nanos() / every.as_nanos().max(1);
        if back == 0 {
            return;
        }
        let tokens = (u128::from(self.tokens) + back).min(u128::from(burst));
        self.tokens = u32::try_from(tokens).unwrap_or(burst);
        if self.tokens == burst {
            self.last_refill = now;
        } else {
            // Fewer than `burst` tokens came back, so `back` fits a u32.
            let n = u32::try_from(back).unwrap_or(burst);
            self.last_refill += every.checked_mul(n).unwrap_or(elapsed);
        }
    }

    /// Takes a token when there is one.
    fn take(&mut self, now: Instant, burst: u32, every: Duration) -> bool {
        self.refill(now, burst, every);
        if self.tokens == 0 {
            return false;
        }
        self.tokens -= 1;
        true
    }
}

struct Worker {
    client: Client,
    config: EventRecorderConfig,
    counters: Arc<Counters>,
    core_v1: bool,
    /// An `events.k8s.io/v1` create succeeded: that API is served, never fall back.
    v1_served: bool,
    buckets: HashMap<ObjectReference, Bucket>,
    series: HashMap<SeriesKey, Series>,
    logged: HashSet<String>,
    next_refresh: Instant,
}

fn events_v1() -> ApiResource {
    ApiResource::new("events.k8s.io", "v1", "Event", "events", true)
}

fn events_core() -> ApiResource {
    ApiResource::new("", "v1", "Event", "events", true)
}

/// `core/v1` times: RFC 3339 to the second.
fn seconds(t: SystemTime) -> String {
    let s = MicroTime::from_system_time(t).to_string();
    match s.split_once('.') {
        Some((whole, _)) => format!("{whole}Z"),
        None => s,
    }
}

impl Worker {
    fn run(&mut self, rx: &Receiver<Pending>, stop: &Receiver<()>) {
        loop {
            let next_tick = self.next_tick();
            crossbeam_channel::select! {
                recv(stop) -> _ => return,
                recv(rx) -> msg => match msg {
                    Ok(p) => {
                        self.handle(p);
                        self.counters.processed.fetch_add(1, Ordering::SeqCst);
                    }
                    Err(_) => return,
                },
                recv(crossbeam_channel::at(next_tick)) -> _ => self.tick(),
            }
        }
    }

    /// The earlier of the refresh tick and the end of the oldest running series.
    fn next_tick(&self) -> Instant {
        let finish = self
            .series
            .values()
            .map(|s| s.last_seen + self.config.series_finish)
            .min();
        match finish {
            Some(f) if f < self.next_refresh => f,
            _ => self.next_refresh,
        }
    }

    fn tick(&mut self) {
        let now = Instant::now();
        let refresh = now >= self.next_refresh;
        if refresh {
            self.next_refresh = now + self.config.series_refresh;
        }
        let finish = self.config.series_finish;
        let keys: Vec<SeriesKey> = self
            .series
            .iter()
            .filter(|(_, s)| (refresh || now >= s.last_seen + finish) && s.dirty)
            .map(|(k, _)| k.clone())
            .collect();
        for k in keys {
            self.write_series(&k);
        }
        // Finished series are forgotten (one whose last write failed too: not kept for ever).
        self.series.retain(|_, s| now < s.last_seen + finish);
    }

    /// Takes a token for `p`'s object; false when it has none.
    fn allow(&mut self, regarding: &ObjectReference) -> bool {
        let mut key = regarding.clone();
        key.resource_version.clear();
        let now = Instant::now();
        let (burst, every) = (self.config.burst, self.config.refill_every);
        if self.buckets.len() >= MAX_BUCKETS && !self.buckets.contains_key(&key) {
            // Bounded like client-go's LRU: forget the objects whose bucket is full again
            // (forgetting them changes nothing), and if that is not enough, all of them.
            self.buckets.retain(|_, b| {
                b.refill(now, burst, every);
                b.tokens < burst
            });
            if self.buckets.len() >= MAX_BUCKETS {
                self.buckets.clear();
            }
        }
        self.buckets
            .entry(key)
            .or_insert_with(|| Bucket::full(burst, now))
            .take(now, burst, every)
    }
    fn handle(&mut self, p: Pending) {
        if !self.allow(&p.regarding) {
            self.counters.rate_limited.fetch_add(1, Ordering::SeqCst);
            return;
        }
        let mut regarding = p.regarding.clone();
        regarding.resource_version.clear();
        let key = SeriesKey {
            regarding,
            ty: p.ty,
            reason: p.reason.clone(),
            action: p.action.clone(),
        };
        if let Some(s) = self.series.get_mut(&key) {
            s.count += 1;
            s.last = p.at;
            s.last_seen = Instant::now();
            s.dirty = true;
            // The first repeat is written at once; later ones wait for a tick.
            if s.count == 2 {
                self.write_series(&key);
            }
            return;
        }
        if let Some(s) = self.create(&p) {
            self.series.insert(key, s);
        }
    }

    fn body(&self, p: &Pending, core_v1: bool) -> (String, String, Value) {
        let namespace = if p.regarding.namespace.is_empty() {
            "default".to_owned()
        } else {
            p.regarding.namespace.clone()
        };
        let nanos =
            p.at.duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0);
        let name = format!("{}.{nanos:x}", p.regarding.name);
        let meta = json!({"name": name, "namespace": namespace});
        let body = if core_v1 {
            let t = seconds(p.at);
            json!({
                "apiVersion": "v1", "kind": "Event", "metadata": meta,
                "involvedObject": p.regarding, "reason": p.reason, "message": p.note,
                "type": p.ty.as_str(), "action": p.action,
                "source": {"component": self.config.reporting_controller},
                "reportingComponent": self.config.reporting_controller,
                "reportingInstance": self.config.reporting_instance,
                "firstTimestamp": t, "lastTimestamp": t, "count": 1,
            })
        } else {
            json!({
                "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": meta,
                "eventTime": MicroTime::from_system_time(p.at),
                "reportingController": self.config.reporting_controller,
                "reportingInstance": self.config.reporting_instance,
                "action": p.action, "reason": p.reason, "type": p.ty.as_str(),
                "note": p.note, "regarding": p.regarding,
            })
        };
        (namespace, name, body)
    }

    fn api(&self, namespace: &str, core_v1: bool) -> Api<DynamicObject> {
        let ar = if core_v1 { events_core() } else { events_v1() };
        Api::namespaced_with(self.client.clone(), namespace, &ar)
    }

    /// Creates the Event of `p` (falling back to `core/v1` on a 404 from `events.k8s.io`).
    fn create(&mut self, p: &Pending) -> Option<Series> {
        let (namespace, name, body) = self.body(p, self.core_v1);
        let mut r = self
            .api(&namespace, self.core_v1)
            .create(&PostParams::default(), &body);
        let mut body = body;
        if !self.core_v1 && !self.v1_served && matches!(&r, Err(e) if api_not_served(e)) {
            log::info!("events: events.k8s.io/v1 is not served; recording core/v1 Events");
            self.core_v1 = true;
            self.counters.fallback.store(1, Ordering::SeqCst);
            body = self.body(p, true).2;
            r = self
                .api(&namespace, true)
                .create(&PostParams::default(), &body);
        }
        match r {
            Ok(_) => {
                self.v1_served |= !self.core_v1;
                self.counters.created.fetch_add(1, Ordering::SeqCst);
                Some(Series {
                    namespace,
                    name,
                    core_v1: self.core_v1,
                    count: 1,
                    last: p.at,
                    last_seen: Instant::now(),
                    dirty: false,
                    created: body,
                })
            }
            Err(e) => {
                self.failed("create", &e);
                None
            }
        }
    }

    /// Writes the count of a running series (or creates its Event again when it is gone).
    fn write_series(&mut self, key: &SeriesKey) {
        let Some(s) = self.series.get(key) else {
            return;
        };
        let patch = if s.core_v1 {
            json!({"count": s.count, "lastTimestamp": seconds(s.last)})
        } else {
            json!({"series": {"count": s.count,
                "lastObservedTime": MicroTime::from_system_time(s.last)}})
        };
        let api = self.api(&s.namespace, s.core_v1);
        let r = match api.patch(&s.name, &PatchParams::default(), &Patch::Merge(&patch)) {
            Err(e) if e.is_not_found() => {
                let mut body = s.created.clone();
                merge(&mut body, &patch);
                api.create(&PostParams::default(), &body).map(|_| ())
            }
            other => other.map(|_| ()),
        };
        match r {
            Ok(()) => {
                self.counters.patched.fetch_add(1, Ordering::SeqCst);
                if let Some(s) = self.series.get_mut(key) {
                    s.dirty = false;
                }
            }
            Err(e) => self.failed("series patch", &e),
        }
    }

    /// Counts a failed write and logs it once per kind of failure.
    fn failed(&mut self, what: &str, e: &Error) {
        self.counters.failed.fetch_add(1, Ordering::SeqCst);
        if e.is_cancelled() {
            return;
        }
        let kind = match e.status() {
            Some(st) => format!("{what}: {} {}", st.code, st.reason),
            None => format!("{what}: transport"),
        };
        if self.logged.insert(kind.clone()) {
            // The error names the request line only; headers (and tokens) never appear.
            log::warn!("events: {kind}: {e} (logged once; later ones are only counted)");
        }
    }
}

/// The longest `note` the API server accepts, in bytes.
const NOTE_LIMIT: usize = 1024;

/// `s` cut to at most `max` bytes, at a character boundary.
fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// A 404 that says the resource is not served (not a missing namespace, whose 404 names
/// `namespaces`).
fn api_not_served(e: &Error) -> bool {
    e.is_not_found()
        && e.status()
            .and_then(|s| s.details.as_ref())
            .and_then(|d| d.kind.as_deref())
            != Some("namespaces")
}

/// Shallow merge of the patch's top-level fields into a body.
fn merge(body: &mut Value, patch: &Value) {
    if let (Some(b), Some(p)) = (body.as_object_mut(), patch.as_object()) {
        for (k, v) in p {
            b.insert(k.clone(), v.clone());
        }
    }
}

/// A recorder's stats from its counters.
fn stats_of(c: &Counters) -> EventRecorderStats {
    let l = |a: &AtomicU64| a.load(Ordering::SeqCst);
    EventRecorderStats {
        queued: l(&c.queued),
        dropped_queue_full: l(&c.dropped_queue_full),
        dropped_stopped: l(&c.dropped_stopped),
        rate_limited: l(&c.rate_limited),
        processed: l(&c.processed),
        created: l(&c.created),
        patched: l(&c.patched),
        failed: l(&c.failed),
        core_v1_fallback: l(&c.fallback) > 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_gives_its_burst_then_one_token_per_period() {
        let t0 = Instant::now();
        let every = Duration::from_secs(300);
        let mut b = Bucket::full(3, t0);
        assert!((0..3).all(|_| b.take(t0, 3, every)));
        assert!(!b.take(t0, 3, every), "burst spent");
        assert!(
            !b.take(t0 + every / 2, 3, every),
            "half a period: nothing back"
        );
        assert!(b.take(t0 + every, 3, every), "one period: one token");
        assert!(!b.take(t0 + every, 3, every));
        // A long quiet time refills to the burst, no more.
        let later = t0 + every * 100;
        assert!((0..3).all(|_| b.take(later, 3, every)));
        assert!(!b.take(later, 3, every));
        // The remainder of a period is kept: 1.5 periods, then half a period more.
        let mut b = Bucket::full(2, t0);
        assert!(b.take(t0, 2, every) && b.take(t0, 2, every));
        assert!(b.take(t0 + every * 3 / 2, 2, every));
        assert!(!b.take(t0 + every * 3 / 2, 2, every));
        assert!(b.take(t0 + every * 2, 2, every));
    }

    #[test]
    fn notes_are_cut_to_the_servers_limit_at_a_character_boundary() {
        assert_eq!(truncate("short", NOTE_LIMIT), "short");
        let long = "é".repeat(600); // 1200 bytes
        let cut = truncate(&long, NOTE_LIMIT);
        assert_eq!(cut.len(), 1024);
        assert!(cut.chars().all(|c| c == 'é'));
        assert_eq!(truncate("aé", 2), "a");
    }

    #[test]
    fn core_v1_times_are_whole_seconds() {
        let t = MicroTime::parse("2026-11-23T04:41:05.123456Z").unwrap();
        assert_eq!(seconds(t.to_system_time()), "2026-11-23T04:41:05Z");
    }
}
