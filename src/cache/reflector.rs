//! `Reflector`: keeps a DeltaFIFO in step with the API server, on one named OS thread.
//!
//! It lists (page by page, 500 at a time), hands the list to the FIFO as one `replace` — page
//! by page, so the informer applies the first pages while later ones are read; tombstones and
//! sync wait for the last page (client-go hands over the whole list at the end: here a list
//! that fails part way may already have delivered some of its objects, which existed at its
//! version, and the next list reconciles them) — then watches from the list's resourceVersion with bookmarks and a random server timeout of 5–10
//! minutes, feeding every event to the FIFO. On failure it does what client-go does:
//! - the watch ended normally (server timeout): watch again from the last version, no relist;
//! - 410 Gone / Expired (HTTP 410 or an ERROR event): relist "at least as fresh as" the last
//!   version — paged like every list, with `resourceVersionMatch=NotOlderThan`. Without the
//!   match a paged list at a version is an *Exact* read: after a kube-apiserver restart
//!   (etcd kept) it answers the OLD state at the OLD version, whose watch the new watch
//!   cache refuses with 410 again, for ever (captured: `relist-paged-old-rv-after-restart`).
//!   client-go gets freshness by not paging such a relist; we keep pages (the informer
//!   applies them while later ones are read, and neither side holds a whole large list)
//!   and ask for freshness by name, which every server since 1.19 honours in every phase of
//!   the captured table (`rv-matrix.json`) — from the watch cache on recent servers, from
//!   etcd on 1.32 and older (there, like the old Exact relist, a control-plane upgrade
//!   sends every informer's relist to etcd at once, where client-go's unpaged relist is
//!   served by the watch cache).
//!   If that list answers a version no newer than the one whose watch got 410 (a watch from
//!   there would fail again: seen on its first page, before anything of it reaches the
//!   FIFO), or answers 410, "too large", or refuses the parameters (400, 422: a proxy or
//!   an old aggregated server), a consistent list follows at once (resourceVersion unset).
//!   A watch the server cannot serve yet ("too large resource version") relists
//!   consistently too (after the client's own `Retry-After` retries of the 504). Only that
//!   switch, from a list or watch at a version to a consistent list, may come at once: a
//!   consistent list (paged or streaming) answered "too large" — kube-apiserver's watch
//!   cache says so when it cannot catch up within 3 s — is a failed list like any 5xx, and
//!   the next one waits its back-off. A relist
//!   after a 410 that comes less than two minutes after the previous list first waits on its
//!   own back-off (0.8 s doubling to 30 s): no sequence of answers makes list → watch → 410
//!   a loop;
//! - connection refused or dropped, 429, 5xx: back off (0.8 s doubling to 30 s, with jitter,
//!   reset after 2 minutes of health) and watch again from the last version;
//! - anything else (a garbage line, a forbidden watch): back off and relist, since an event
//!   may have been lost;
//! - 404 on a list or a watch: the resource is not served (its CRD deleted, its API group
//!   switched off). The health view says *gone* ([`InformerHealth::gone_for`]), not failing;
//!   lists are retried on a slow back-off (`backoff_max` doubling to
//!   [`ReflectorConfig::gone_backoff_max`], 5 minutes) and the first that works (the CRD
//!   created again) replaces the cache as any relist does.
//!
//! [`InformerHealth::gone_for`]: super::InformerHealth::gone_for
//!
//! **A relist never travels back.** Pages reach the informer as they arrive, so a list that
//! fails part way (a 500 on a continue page, a dropped connection) has already handed over
//! objects at its version L. Behind a load balancer, the retry may meet another server whose
//! cache lags (every HA control plane): "at least as fresh as 100" is as well answered at
//! 105 as at 120, and an answer at 105 would announce the deletion of an object created at
//! 110 that the first pages delivered — a deletion that never happened, undone by the next
//! watch. So once pages at L were handed over, the retry asks for at least L
//! (`resourceVersionMatch=NotOlderThan`, L), and every page of a list at a version (its
//! first, and the full page of a list restarted after an expired continue token) is checked
//! before any of it reaches the FIFO: older than L, or after a 410 not newer than the
//! failed version, it is refused and a consistent list follows. A consistent list is never
//! refused: it is the server's present (see the next rule for a present that is older).
//!
//! **A server behind us is found.** When etcd is restored from a backup, or a cluster is
//! rebuilt behind the same address, the server's versions restart below the informer's.
//! kube-apiserver answers a watch from a version it has not reached with 200 and then
//! nothing, not even bookmarks, until its timeout (and delivers nothing written meanwhile:
//! captured on 1.36, `watch-future-resourceversion*.jsonl`), and a list at such a version
//! with 504 `ResourceVersionTooLarge` after about three seconds. client-go then waits for
//! ever, reporting healthy. Here a watch that opened and delivered neither event nor
//! bookmark (it ended by the server's timeout, [`ReflectorConfig::watch_idle_timeout`] or a
//! dropped connection after at least a second), and every "too large" answer, lead to a
//! probe: a consistent list of one object, whose version is the server's present. If that
//! is older than what the informer holds, the reflector says so (the health view's last
//! error, a relist counted as [`RelistCause::ServerBehind`]) and lists from scratch: the
//! consistent list replaces the cache, so handlers hear of every object that changed,
//! appeared or went away. What no client can see: writes after the restore that carry the
//! server past the informer's version before the probe runs (within the idle bound) leave
//! the versions in between unseen; the probe narrows that window to the idle bound.
//!
//! No list is cut by the client's request timeout (sized for small requests): a list is
//! bounded per read ([`ClientConfig::list_read_timeout`](crate::ClientConfig), 90 s by
//! default), so a large relist that keeps arriving completes, and a dead one is noticed.
//!
//! A watch that ends at once with no event counts as a failure, so a server that closes
//! watches immediately gets back-off, not a tight loop. The reflector asks for bookmarks,
//! which kube-apiserver sends about once a minute even when nothing changes, so a watch
//! connection silent for [`ReflectorConfig::watch_idle_timeout`] (default 2 minutes) is dead
//! (a half-open connection, a peer that vanished) and is treated like a dropped connection:
//! **a dead watch is noticed within that bound** (and in any case within the server-side
//! timeout plus the client's margin). Bookmarks move the resourceVersion forward without
//! touching the FIFO; an event or bookmark without a resourceVersion never moves it back.
//!
//! Optionally the initial list is a streaming list (`sendInitialEvents`): the server sends
//! the current state as events closed by a bookmark. If the server says it does not support
//! it (the request is refused as invalid, the storage lacks the feature — an ERROR event
//! naming `RequestWatchProgress`, as kube-apiserver on etcd 3.4 sends —, an event a
//! streaming list cannot contain, or the closing bookmark does not come within a deadline),
//! the reflector falls back to a paged list and remembers not to try again. Any other
//! failure (410, 5xx, a dropped connection, an ERROR event with another Status in the
//! middle of the initial events, a 504 "too large resource version" from a lagging watch
//! cache) says nothing about support: the reflector backs off as after any failed list and
//! streams again.
//!
//! **Stopping returns within a second**, whatever the reflector is doing: every request it
//! makes carries a [`Cancel`] token, which ends the client-side rate-limit wait, a
//! `Retry-After` wait, an exec credential plugin, a list page being read and a watch being
//! connected or read (its connection is registered with the token before it connects).
//! The one wait it cannot cut is a TCP connect already under way to an address that does
//! not answer, bounded by [`ClientConfig::connect_timeout`](crate::ClientConfig) (10 s);
//! a TLS handshake or anything later is cut.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::backoff::{random_between, Backoff};
use super::catch::{guard_transform, PanicHandler, Transform};
use super::delta_fifo::{Closed, DeltaFifo, WatchChange};
use super::health::{error_kind, HealthRecord, LastError, ReflectorStats, RelistCause};
use super::stop::StopSignal;
use crate::api::{Meta, Object, WatchEvent};
use crate::client::{Api, Cancel, ListParams, WatchParams, WatchStream};
use crate::error::Error;

/// At most this many watch events are handed to the FIFO as one run.
const MAX_RUN: usize = 512;

/// Called with every list or watch error (for logging or metrics).
pub type WatchErrorHandler = Arc<dyn Fn(&Error) + Send + Sync>;

/// A ready [`Transform`]: drops `metadata.managedFields`, often the largest part of an object,
/// and [compacts](Object::compact) the object so their memory is released. Cheaper still:
/// [`ReflectorConfig::strip_managed_fields`], which never decodes them.
pub fn strip_managed_fields<K: Object>() -> Transform<K> {
    Arc::new(|o: &mut K| {
        o.metadata_mut().strip_managed_fields();
        o.compact();
    })
}

/// How a reflector lists and watches: a builder, every setting with its default.
///
/// ```
/// use kube_informer::cache::ReflectorConfig;
/// use std::time::Duration;
/// let config = ReflectorConfig::new()
///     .labels("app=web")
///     .page_size(100)
///     .streaming_list(true)
///     .backoff(Duration::from_millis(100), Duration::from_secs(5))
///     .strip_managed_fields(true);
/// # let _ = config;
/// ```
#[derive(Clone)]
pub struct ReflectorConfig {
    /// Page size of lists. Default 500.
    pub(crate) page_size: u32,
    /// Label selector for list and watch.
    pub(crate) label_selector: Option<String>,
    /// Field selector for list and watch.
    pub(crate) field_selector: Option<String>,
    /// Queue a `Sync` for every idle cached object this often (zero: never). Default zero.
    /// In a [`SharedIndexInformer`](super::SharedIndexInformer) it is the default resync
    /// period of handlers registered without one (the informer runs resyncs per handler).
    pub(crate) resync_period: Duration,
    /// Start with a streaming list instead of a paged list. Default false.
    pub(crate) streaming_list: bool,
    /// How long a streaming list may take to deliver its closing bookmark. Default 60 s.
    pub(crate) streaming_list_deadline: Duration,
    /// Range of the random server-side watch timeout. Default 5 to 10 minutes.
    pub(crate) watch_timeout: (Duration, Duration),
    /// A watch connection that delivers nothing (no event, no bookmark) for this long is
    /// dead and is replaced. The reflector asks for bookmarks, which kube-apiserver sends
    /// about once a minute, so the default of 2 minutes notices a half-open connection
    /// within 2 minutes without false alarms. Zero: rely on the server-side timeout plus
    /// the client's `watch_read_margin` alone (a server that sends no bookmarks costs a
    /// reconnect, not a relist, per quiet `watch_idle_timeout`).
    pub(crate) watch_idle_timeout: Duration,
    /// First back-off delay. Default 0.8 s.
    pub(crate) backoff_initial: Duration,
    /// Longest back-off delay. Default 30 s.
    pub(crate) backoff_max: Duration,
    /// Longest delay between lists of a resource that is *gone* (its lists answer 404: a
    /// custom resource whose CRD was deleted). Such a resource is asked for again on a slow
    /// back-off — from `backoff_max` doubling to this, with jitter — and listed as soon as it
    /// is served again. Default 5 minutes (at least `backoff_max` is used).
    pub(crate) gone_backoff_max: Duration,
    /// Skip `metadata.managedFields` while decoding every listed and watched object (the
    /// bytes are checked and jumped over, never decoded), for caches that never read them:
    /// they are often the largest part of an object, so this saves memory and decoding CPU
    /// alike, for every object type (`DynamicObject`, slim types, k8s-openapi's). Objects
    /// then have no managed fields (`None`). Default false: client-go and kube-rs keep them,
    /// and a default that drops data a reader may use would surprise. Prefer this to the
    /// [`strip_managed_fields`] transform, which drops them after decoding.
    pub(crate) strip_managed_fields: bool,
    /// Called on every list or watch error.
    pub(crate) on_watch_error: Option<WatchErrorHandler>,
    /// Name used in thread names and logs (`ki/<name>/refl`, see the crate's thread names). Defaults to the
    /// resource's plural.
    pub(crate) name: Option<String>,
}

impl Default for ReflectorConfig {
    fn default() -> Self {
        ReflectorConfig {
            page_size: 500,
            label_selector: None,
            field_selector: None,
            resync_period: Duration::ZERO,
            streaming_list: false,
            streaming_list_deadline: Duration::from_secs(60),
            watch_timeout: (Duration::from_secs(300), Duration::from_secs(600)),
            watch_idle_timeout: Duration::from_secs(120),
            backoff_initial: Duration::from_millis(800),
            backoff_max: Duration::from_secs(30),
            gone_backoff_max: Duration::from_secs(300),
            strip_managed_fields: false,
            on_watch_error: None,
            name: None,
        }
    }
}

impl ReflectorConfig {
    /// The defaults (the same as `ReflectorConfig::default()`).
    pub fn new() -> Self {
        Self::default()
    }

    /// Page size of lists. Default 500.
    pub fn page_size(mut self, page_size: u32) -> Self {
        self.page_size = page_size;
        self
    }

    /// Label selector for list and watch (`app=web,tier!=db`).
    pub fn labels(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.to_string());
        self
    }

    /// Field selector for list and watch (`spec.nodeName=n1`).
    pub fn fields(mut self, selector: &str) -> Self {
        self.field_selector = Some(selector.to_string());
        self
    }

    /// Queue a `Sync` for every idle cached object this often (zero: never). Default zero.
    /// In a [`SharedIndexInformer`](super::SharedIndexInformer) it is the default resync
    /// period of handlers registered without one (the informer runs resyncs per handler).
    pub fn resync_period(mut self, period: Duration) -> Self {
        self.resync_period = period;
        self
    }

    /// Start with a streaming list instead of a paged list. Default false.
    pub fn streaming_list(mut self, on: bool) -> Self {
        self.streaming_list = on;
        self
    }

    /// How long a streaming list may take to deliver its closing bookmark. Default 60 s.
    pub fn streaming_list_deadline(mut self, deadline: Duration) -> Self {
        self.streaming_list_deadline = deadline;
        self
    }

    /// Range of the random server-side watch timeout. Default 5 to 10 minutes.
    pub fn watch_timeout(mut self, min: Duration, max: Duration) -> Self {
        self.watch_timeout = (min, max);
        self
    }

    /// A watch connection that delivers nothing (no event, no bookmark) for this long is
    /// dead and is replaced. The reflector asks for bookmarks, which kube-apiserver sends
    /// about once a minute, so the default of 2 minutes notices a half-open connection
    /// within 2 minutes without false alarms. Zero: rely on the server-side timeout plus
    /// the client's `watch_read_margin` alone (a server that sends no bookmarks costs a
    /// reconnect, not a relist, per quiet `watch_idle_timeout`).
    pub fn watch_idle_timeout(mut self, timeout: Duration) -> Self {
        self.watch_idle_timeout = timeout;
        self
    }

    /// First and longest back-off delay. Default 0.8 s and 30 s.
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.backoff_initial = initial;
        self.backoff_max = max;
        self
    }

    /// Longest delay between lists of a resource that is *gone* (its lists answer 404: a
    /// custom resource whose CRD was deleted). Such a resource is asked for again on a slow
    /// back-off — from the longest [`backoff`](Self::backoff) doubling to this, with jitter —
    /// and listed as soon as it is served again. Default 5 minutes (at least the longest
    /// back-off is used).
    pub fn gone_backoff_max(mut self, max: Duration) -> Self {
        self.gone_backoff_max = max;
        self
    }

    /// Skip `metadata.managedFields` while decoding every listed and watched object (the
    /// bytes are checked and jumped over, never decoded), for caches that never read them:
    /// they are often the largest part of an object, so this saves memory and decoding CPU
    /// alike, for every object type (`DynamicObject`, slim types, k8s-openapi's). Objects
    /// then have no managed fields (`None`). Default false: client-go and kube-rs keep them,
    /// and a default that drops data a reader may use would surprise. Prefer this to the
    /// [`strip_managed_fields`] transform, which drops them after decoding.
    pub fn strip_managed_fields(mut self, on: bool) -> Self {
        self.strip_managed_fields = on;
        self
    }

    /// Called on every list or watch error (for logging or metrics).
    pub fn on_watch_error(mut self, f: impl Fn(&Error) + Send + Sync + 'static) -> Self {
        let f: WatchErrorHandler = Arc::new(f);
        self.on_watch_error = Some(f);
        self
    }

    /// Name used in thread names and logs (`ki/<name>/refl`, see the crate's thread names).
    /// Defaults to the resource's plural.
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.to_string());
        self
    }
}

impl std::fmt::Debug for ReflectorConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReflectorConfig")
            .field("page_size", &self.page_size)
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .field("resync_period", &self.resync_period)
            .field("streaming_list", &self.streaming_list)
            .field("watch_timeout", &self.watch_timeout)
            .field("watch_idle_timeout", &self.watch_idle_timeout)
            .field("strip_managed_fields", &self.strip_managed_fields)
            .finish_non_exhaustive()
    }
}

/// State the reflector thread shares with its handle.
#[derive(Default)]
struct Shared {
    stop: StopSignal,
    /// Carried by every request of the reflector, its watches included (attached before
    /// they connect); fired by `stop`, it cuts whatever connection is open.
    cancel: Cancel,
    watching: AtomicBool,
    streaming_supported: AtomicBool,
    health: Mutex<HealthRecord>,
}

/// A running reflector. Dropping it stops and joins its threads.
pub struct Reflector {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    close_fifo: Box<dyn Fn() + Send + Sync>,
}

impl std::fmt::Debug for Reflector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reflector")
            .field(
                "last_sync_resource_version",
                &self.last_sync_resource_version(),
            )
            .field("watching", &self.is_watching())
            .finish()
    }
}

impl Reflector {
    /// Starts listing and watching `api` into `fifo`.
    pub fn start<K: Object>(
        api: Api<K>,
        fifo: Arc<DeltaFifo<K>>,
        config: ReflectorConfig,
    ) -> std::io::Result<Reflector> {
        Self::start_with_transform(api, fifo, config, None)
    }

    /// Like [`start`](Self::start), applying `transform` to every object before queueing it.
    /// A panicking transform is logged and leaves the object as it left it.
    pub fn start_with_transform<K: Object>(
        api: Api<K>,
        fifo: Arc<DeltaFifo<K>>,
        config: ReflectorConfig,
        transform: Option<Transform<K>>,
    ) -> std::io::Result<Reflector> {
        Self::start_reporting(api, fifo, config, transform, None)
    }

    /// [`start_with_transform`](Self::start_with_transform), also passing each transform
    /// panic to `on_panic` (an informer's panic callback).
    pub(crate) fn start_reporting<K: Object>(
        api: Api<K>,
        fifo: Arc<DeltaFifo<K>>,
        config: ReflectorConfig,
        transform: Option<Transform<K>>,
        on_panic: Option<PanicHandler>,
    ) -> std::io::Result<Reflector> {
        let shared = Arc::new(Shared::default());
        shared
            .streaming_supported
            .store(config.streaming_list, Ordering::SeqCst);
        let name = config
            .name
            .clone()
            .unwrap_or_else(|| api.resource().plural.clone());
        let transform = transform.map(|t| guard_transform(t, name.clone(), on_panic));
        let mut threads = Vec::new();
        if !config.resync_period.is_zero() {
            let (shared, fifo, period) =
                (Arc::clone(&shared), Arc::clone(&fifo), config.resync_period);
            threads.push(
                std::thread::Builder::new()
                    .name(crate::thread_name::thread_name(&name, "rsyn"))
                    .spawn(move || {
                        while !shared.stop.sleep(period) {
                            if fifo.resync().is_err() {
                                return;
                            }
                        }
                    })?,
            );
        }
        let run = Run {
            api: api.with_cancel(shared.cancel.clone()),
            fifo: Arc::clone(&fifo),
            transform,
            config,
            shared: Arc::clone(&shared),
            name: name.clone(),
            last_list: Cell::new(None),
            pages_handed_over: RefCell::new(String::new()),
            watch_opened: Cell::new(false),
            delivered: Cell::new(0),
            gone_announced: Cell::new(false),
        };
        threads.push(
            std::thread::Builder::new()
                .name(crate::thread_name::thread_name(&name, "refl"))
                .spawn(move || run.run())?,
        );
        Ok(Reflector {
            shared,
            threads,
            close_fifo: Box::new(move || fifo.close()),
        })
    }

    /// The resourceVersion of the last list, event or bookmark seen ("" before the first).
    pub fn last_sync_resource_version(&self) -> String {
        self.shared
            .health
            .lock()
            .stats
            .last_resource_version
            .clone()
    }

    /// True while a watch connection is open.
    pub fn is_watching(&self) -> bool {
        self.shared.watching.load(Ordering::SeqCst)
    }

    /// Time since the last list, event or bookmark.
    pub fn since_last_activity(&self) -> Option<Duration> {
        self.shared.health.lock().last_activity.map(|t| t.elapsed())
    }

    /// The reflector's counters since it started.
    pub fn stats(&self) -> ReflectorStats {
        self.shared.health.lock().stats.clone()
    }

    /// The most recent list or watch error, even if things recovered since.
    pub fn last_error(&self) -> Option<LastError> {
        self.shared.health.lock().last_error()
    }

    /// List and watch failures since the last list or watch that succeeded.
    pub fn consecutive_failures(&self) -> u32 {
        self.shared.health.lock().consecutive_failures
    }

    /// How long lists and watches have kept failing (`None` while the last one succeeded,
    /// and while the resource is gone: see [`gone_for`](Self::gone_for)).
    pub fn failing_for(&self) -> Option<Duration> {
        self.shared.health.lock().failing_for()
    }

    /// How long the resource has not been served: every list and watch answered 404 since
    /// (`None` while it is served).
    pub fn gone_for(&self) -> Option<Duration> {
        self.shared.health.lock().gone_for()
    }

    /// Stops the reflector and joins its threads. Its FIFO is closed, so a consumer blocked
    /// in `pop` returns too.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.shared.stop.stop();
        self.shared.cancel.cancel();
        (self.close_fifo)();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Reflector {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Where the next list reads from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ListFrom {
    /// A consistent, paged list (resourceVersion unset): the first list, and the fallback
    /// when a list at the last version cannot get back to the present.
    Fresh,
    /// A paged list "at least as fresh as" the last version seen
    /// (`resourceVersionMatch=NotOlderThan`): after a watch that failed. After a 410
    /// (`after_gone`), a list whose version is not newer than that one would lead to the same
    /// 410: its first page is checked before anything of it reaches the FIFO.
    NotOlderThanLast { after_gone: bool },
}

/// A relist after a watch 410 that comes less than this long after the previous list first
/// waits on the relist back-off, so that no sequence of answers (a watch that fails at once
/// after every list, say) makes the reflector loop; after a longer healthy watch it comes at
/// once.
const RELIST_CALM: Duration = Duration::from_secs(120);

/// Whether version `a` is newer than `b`. Versions are opaque to clients, but every
/// kube-apiserver writes them as decimal numbers; two that are not are compared for
/// equality only (a different one counts as newer).
fn newer(a: &str, b: &str) -> bool {
    match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(a), Ok(b)) => a > b,
        _ => a != b,
    }
}

/// Whether version `a` is older than `b`. Only numbers can be ordered: two versions that are
/// not both numbers are never called older (nothing is refused on a guess).
fn older(a: &str, b: &str) -> bool {
    matches!((a.parse::<u64>(), b.parse::<u64>()), (Ok(a), Ok(b)) if a < b)
}

/// The newest version of a run: an event or bookmark without one (a broken server or proxy)
/// leaves the run's last good version in place.
fn keep_version(newest: &mut String, rv: &str) {
    if !rv.is_empty() {
        rv.clone_into(newest);
    }
}

/// A version the server cannot serve: too old (410) or too new: list consistently.
fn version_unavailable(e: &Error) -> bool {
    e.is_gone() || e.is_resource_version_too_large()
}

/// A request the server refuses as such (400, 422): asking again the same way is pointless.
fn refused(e: &Error) -> bool {
    e.status().is_some_and(|st| matches!(st.code, 400 | 422))
}

/// True when a streaming list failed because the server does not support one (so asking
/// again is pointless): refused as a bad or invalid request, or by a storage without the
/// feature (kube-apiserver on etcd 3.4 answers InternalError naming `RequestWatchProgress`).
/// 410, 429, other 5xx and connection failures say nothing about support.
fn streaming_unsupported(e: &Error) -> bool {
    match e.status() {
        Some(st) => {
            matches!(st.code, 400 | 415 | 422)
                || matches!(
                    st.reason.as_str(),
                    "BadRequest" | "Invalid" | "UnsupportedMediaType"
                )
                || st.message.contains("RequestWatchProgress")
                || st.message.contains("sendInitialEvents")
        }
        None => false,
    }
}

enum Next {
    List(ListFrom),
    Watch,
}

/// Why a watch ended.
enum WatchEnd {
    /// The stream ended (server timeout or our cancel) after this many events.
    Ended(usize),
    /// The FIFO closed: shutting down.
    Closed,
}

struct Run<K> {
    api: Api<K>,
    fifo: Arc<DeltaFifo<K>>,
    transform: Option<Transform<K>>,
    config: ReflectorConfig,
    shared: Arc<Shared>,
    name: String,
    /// When the last list completed (a streaming list: its initial events), for `RELIST_CALM`.
    last_list: Cell<Option<Instant>>,
    /// The version of the pages an unfinished list handed to the FIFO ("" when none, or once
    /// a list completes): no later list older than it may replace them.
    pages_handed_over: RefCell<String>,
    /// Whether the current watch got its response (it may still deliver nothing).
    watch_opened: Cell<bool>,
    /// Events and bookmarks the current watch delivered.
    delivered: Cell<u64>,
    /// Whether "gone" (lists answered 404) was logged since the last list that worked.
    gone_announced: Cell<bool>,
}

impl<K: Object> Run<K> {
    /// Applies the transform (guarded: see `start_reporting`) and shares the object.
    fn share(&self, mut obj: K) -> Arc<K> {
        if let Some(t) = &self.transform {
            t(&mut obj);
        }
        Arc::new(obj)
    }

    fn stopped(&self) -> bool {
        self.shared.stop.is_stopped() || self.fifo.is_closed()
    }

    /// Records an error and tells about it once: to the callback when there is one (it is
    /// the program's way of hearing about errors; the log then says it at debug level
    /// only), else to the log at warn level.
    fn report(&self, e: &Error) {
        self.shared.health.lock().failed(e);
        match &self.config.on_watch_error {
            Some(cb) => {
                log::debug!("kube-informer/{}: {e}", self.name);
                cb(e);
            }
            None => log::warn!("kube-informer/{}: {e}", self.name),
        }
    }

    fn record(&self, f: impl FnOnce(&mut HealthRecord)) {
        f(&mut self.shared.health.lock());
    }

    /// Logs and counts a relist.
    fn relist(&self, cause: RelistCause, why: &Error, from: ListFrom) -> Next {
        log::info!(
            "kube-informer/{}: relisting ({cause}: {})",
            self.name,
            why.code()
                .map_or_else(|| error_kind(why), |c| format!("HTTP {c}"))
        );
        self.record(|h| *h.stats.relists.entry(cause).or_default() += 1);
        Next::List(from)
    }

    /// Asks the server for its present version (a consistent list of one object) and
    /// compares it with the newest version the FIFO holds. `Some(error)` saying so when the
    /// server is behind us; `None` when it is not, when it cannot be told (versions that are
    /// not numbers) or when the probe fails (the next attempt will tell).
    fn server_behind(&self) -> Option<Error> {
        let ours = self.newest_handed_over();
        let mut params = self.list_params();
        params.limit = Some(1);
        let theirs = match self.api.list(&params) {
            Ok(list) => list.metadata.resource_version.unwrap_or_default(),
            Err(e) => {
                log::debug!(
                    "kube-informer/{}: probing the server's version: {e}",
                    self.name
                );
                return None;
            }
        };
        if !older(&theirs, &ours) {
            return None;
        }
        Some(Error::Decode {
            request: format!("GET {}", self.api.list_path(&params)),
            message: format!(
                "the server's resourceVersion {theirs} is older than {ours}, which this informer \
                 already reached: the server was restored from a backup or rebuilt; listing \
                 its state from scratch"
            ),
        })
    }

    /// Relists from scratch because the server is behind us (see `server_behind`): reported
    /// (the health view's last error says why), counted, and a consistent list replaces the
    /// cache, so handlers hear of every difference.
    fn relist_behind(&self, why: &Error) -> Next {
        self.report(why);
        self.pages_handed_over.borrow_mut().clear();
        self.relist(RelistCause::ServerBehind, why, ListFrom::Fresh)
    }

    fn set_rv(&self, rv: &str) {
        self.record(|h| h.reached(rv));
    }

    fn rv(&self) -> String {
        self.shared
            .health
            .lock()
            .stats
            .last_resource_version
            .clone()
    }

    fn run(self) {
        // Every object this reflector caches is decoded on this thread.
        let _strip = crate::json::decode_options::strip_managed_fields_on_this_thread(
            self.config.strip_managed_fields,
        );
        let new_backoff = || {
            Backoff::new(
                self.config.backoff_initial,
                self.config.backoff_max,
                RELIST_CALM,
            )
        };
        let mut backoff = new_backoff();
        // Spaces the lists of a resource that is not served (404): it may never come back.
        let mut gone_backoff = Backoff::new(
            self.config.backoff_max,
            self.config.gone_backoff_max.max(self.config.backoff_max),
            RELIST_CALM,
        );
        // Spaces relists that follow a recent list (see `RELIST_CALM`).
        let mut relist_backoff = new_backoff();
        let mut next = Next::List(ListFrom::Fresh);
        while !self.stopped() {
            next = match next {
                Next::List(from) => match self.list(from) {
                    Ok(()) => {
                        if self.gone_announced.replace(false) {
                            log::info!("kube-informer/{}: served again, listed", self.name);
                        }
                        gone_backoff.reset();
                        Next::Watch
                    }
                    Err(ListError::Closed) => return,
                    Err(ListError::Stale { failed_at, listed }) => {
                        // A watch from there would fail again: list consistently, at once.
                        log::info!(
                            "kube-informer/{}: relisting ({}: the list at least as fresh as {failed_at} answered {listed})",
                            self.name,
                            RelistCause::StaleList
                        );
                        self.record(|h| {
                            *h.stats.relists.entry(RelistCause::StaleList).or_default() += 1
                        });
                        Next::List(ListFrom::Fresh)
                    }
                    Err(ListError::Api(_) | ListError::Unsupported(_)) if self.stopped() => return,
                    Err(ListError::Api(e) | ListError::Unsupported(e)) => {
                        self.report(&e);
                        self.record(|h| h.stats.list_failures += 1);
                        // A version the server cannot serve, or a `resourceVersionMatch` it
                        // refuses (a proxy, an old aggregated server): at once, a consistent
                        // list, which every server answers.
                        let at_version = matches!(from, ListFrom::NotOlderThanLast { .. });
                        if e.is_resource_version_too_large() {
                            // Ahead of the server: a lagging cache, or a server restored
                            // behind us. Either way only a consistent list gets back; the
                            // probe tells which, for the health view and the counters.
                            let next = match self.server_behind() {
                                Some(why) => self.relist_behind(&why),
                                None => Next::List(ListFrom::Fresh),
                            };
                            // Only the switch from a list at a version to a fresh one is
                            // immediate. A fresh list answered "too large" (a watch cache
                            // that cannot catch up within its 3 s) would be answered the
                            // same at once: it waits its back-off like any failed list.
                            if !at_version && self.shared.stop.sleep(backoff.next_delay()) {
                                return;
                            }
                            next
                        } else if at_version && (version_unavailable(&e) || refused(&e)) {
                            Next::List(ListFrom::Fresh)
                        } else {
                            let delay = if e.is_not_found() {
                                if !self.gone_announced.replace(true) {
                                    log::info!(
                                        "kube-informer/{}: the server does not serve this resource (404): gone until it is served again; asking again on a slow back-off",
                                        self.name
                                    );
                                }
                                gone_backoff.next_delay()
                            } else {
                                gone_backoff.reset();
                                backoff.next_delay()
                            };
                            if self.shared.stop.sleep(delay) {
                                return;
                            }
                            Next::List(from)
                        }
                    }
                },
                Next::Watch => {
                    let started = Instant::now();
                    let result = self.watch();
                    if self.stopped() {
                        return;
                    }
                    // A watch that opened and stayed silent (no event, not even a bookmark,
                    // which kube-apiserver sends about once a minute) may be waiting for a
                    // version the server will not reach soon: it was restored from a backup
                    // or rebuilt, and its versions are behind ours. So may one refused as
                    // "too large". A cheap consistent probe tells.
                    let silent = self.watch_opened.get()
                        && self.delivered.get() == 0
                        && started.elapsed() >= Duration::from_secs(1)
                        && !matches!(&result, Err(e) if e.is_gone());
                    let too_large = matches!(&result, Err(e) if e.is_resource_version_too_large());
                    if silent || too_large {
                        if let Some(why) = self.server_behind() {
                            if let Err(e) = &result {
                                self.report(e);
                            }
                            if self
                                .last_list
                                .get()
                                .is_some_and(|t| t.elapsed() < RELIST_CALM)
                                && self.shared.stop.sleep(relist_backoff.next_delay())
                            {
                                return;
                            }
                            next = self.relist_behind(&why);
                            continue;
                        }
                    }
                    match result {
                        Ok(WatchEnd::Closed) => return,
                        Ok(WatchEnd::Ended(events)) => {
                            if events == 0
                                && started.elapsed() < Duration::from_secs(1)
                                && !self.stopped()
                            {
                                log::debug!("kube-informer/{}: very short watch", self.name);
                                if self.shared.stop.sleep(backoff.next_delay()) {
                                    return;
                                }
                            }
                            Next::Watch
                        }
                        Err(_) if self.stopped() => return,
                        Err(e) => {
                            self.report(&e);
                            if version_unavailable(&e) {
                                // A list shortly after the last one waits its turn: a server
                                // that refuses every watch after a list does not get a loop.
                                if self
                                    .last_list
                                    .get()
                                    .is_some_and(|t| t.elapsed() < RELIST_CALM)
                                {
                                    log::debug!(
                                        "kube-informer/{}: backing off before relisting",
                                        self.name
                                    );
                                    if self.shared.stop.sleep(relist_backoff.next_delay()) {
                                        return;
                                    }
                                }
                                // Too old: a list at least as fresh as the last version gets
                                // back to the present. Too new: only a consistent list can.
                                let from = if e.is_gone() {
                                    ListFrom::NotOlderThanLast { after_gone: true }
                                } else {
                                    ListFrom::Fresh
                                };
                                self.relist(RelistCause::Expired, &e, from)
                            } else {
                                log::debug!(
                                    "kube-informer/{}: backing off before watching again",
                                    self.name
                                );
                                if self.shared.stop.sleep(backoff.next_delay()) {
                                    return;
                                }
                                if e.is_transient() {
                                    Next::Watch
                                } else {
                                    self.relist(
                                        RelistCause::WatchError,
                                        &e,
                                        ListFrom::NotOlderThanLast { after_gone: false },
                                    )
                                }
                            }
                        }
                    }
                }
            };
        }
    }

    fn list_params(&self) -> ListParams {
        ListParams {
            label_selector: self.config.label_selector.clone(),
            field_selector: self.config.field_selector.clone(),
            ..Default::default()
        }
    }

    fn watch_params(&self, rv: &str) -> WatchParams {
        let (lo, hi) = self.config.watch_timeout;
        let timeout = random_between(lo, hi).as_secs().max(1);
        let mut p = WatchParams::from_version(rv).timeout(timeout.min(u32::MAX as u64) as u32);
        p.label_selector = self.config.label_selector.clone();
        p.field_selector = self.config.field_selector.clone();
        p
    }

    fn list(&self, from: ListFrom) -> Result<(), ListError> {
        if from == ListFrom::Fresh && self.shared.streaming_supported.load(Ordering::SeqCst) {
            let e = match self.streaming_list() {
                Ok(()) => return Ok(()),
                // A streaming list is never checked for staleness (it is not at a version).
                Err(e @ (ListError::Closed | ListError::Stale { .. })) => return Err(e),
                Err(_) if self.stopped() => return Err(ListError::Closed),
                Err(ListError::Unsupported(e)) => e,
                Err(ListError::Api(e)) if streaming_unsupported(&e) => e,
                // Any other failure (410, 5xx, a dropped connection) says nothing about
                // support: the run loop reports it, backs off and streams again.
                Err(e @ ListError::Api(_)) => return Err(e),
            };
            self.report(&e);
            log::info!(
                "kube-informer/{}: streaming lists are not supported, using paged lists from now on",
                self.name
            );
            self.shared
                .streaming_supported
                .store(false, Ordering::SeqCst);
        }
        let mut params = self.list_params();
        params.limit = Some(self.config.page_size);
        let mut check = ListChecks::default();
        if let ListFrom::NotOlderThanLast { after_gone } = from {
            let rv = self.rv();
            // What the FIFO already holds: the last version, or newer pages a failed list
            // handed over. The server is asked for at least that, and held to it.
            let floor = self.newest_handed_over();
            if !floor.is_empty() {
                params.resource_version = Some(floor.clone());
                params.resource_version_match = Some("NotOlderThan".into());
                check = ListChecks {
                    newer_than: after_gone.then_some(rv).filter(|rv| !rv.is_empty()),
                    not_older_than: Some(floor),
                };
            }
        }
        self.paged_list(&params, check)
    }

    /// The newest version whose state reached the FIFO: the last version seen (a list that
    /// completed, an event, a bookmark) or the version of pages an unfinished list handed
    /// over, whichever is newer.
    fn newest_handed_over(&self) -> String {
        let rv = self.rv();
        let pages = self.pages_handed_over.borrow();
        if !pages.is_empty() && (rv.is_empty() || older(&rv, &pages)) {
            pages.clone()
        } else {
            rv
        }
    }

    /// Starts a watch whose connection counts as dead after `watch_idle_timeout` of silence.
    fn start_watch(&self, params: &WatchParams) -> Result<WatchStream<K>, Error> {
        let idle = Some(self.config.watch_idle_timeout).filter(|d| !d.is_zero());
        self.api.watch_with_idle_timeout(params, idle)
    }

    fn watch(&self) -> Result<WatchEnd, Error> {
        self.record(|h| {
            if h.watches > 0 {
                h.stats.watch_restarts += 1;
            }
            h.watches += 1;
        });
        self.watch_opened.set(false);
        self.delivered.set(0);
        let stream = self.start_watch(&self.watch_params(&self.rv()))?;
        self.watch_opened.set(true);
        self.shared.watching.store(true, Ordering::SeqCst);
        let result = self.consume(stream);
        self.shared.watching.store(false, Ordering::SeqCst);
        result
    }

    /// Feeds a watch's events to the FIFO until it ends. The events whose lines arrived
    /// together (already buffered when one is read) go to the FIFO as one run, under one
    /// lock and one wake-up of the informer; a run is handed over before the next read that
    /// would wait for the network, so nothing that arrived is held back.
    fn consume(&self, mut stream: WatchStream<K>) -> Result<WatchEnd, Error> {
        let mut events = 0;
        let mut run: Vec<WatchChange<K>> = Vec::new();
        while let Some(first) = stream.next() {
            let mut item = Some(first);
            let mut rv = String::new();
            let mut failure = None;
            let mut bookmarks = 0;
            while let Some(next) = item.take() {
                match next {
                    Ok(WatchEvent::Added(o)) => {
                        keep_version(&mut rv, o.metadata().resource_version());
                        run.push(WatchChange::Added(self.share(o)));
                    }
                    Ok(WatchEvent::Modified(o)) => {
                        keep_version(&mut rv, o.metadata().resource_version());
                        run.push(WatchChange::Updated(self.share(o)));
                    }
                    Ok(WatchEvent::Deleted(o)) => {
                        keep_version(&mut rv, o.metadata().resource_version());
                        run.push(WatchChange::Deleted(self.share(o)));
                    }
                    Ok(WatchEvent::Bookmark(b)) => {
                        bookmarks += 1;
                        keep_version(&mut rv, &b.resource_version);
                    }
                    Ok(WatchEvent::Error(status)) => {
                        failure = Some(Error::Api {
                            request: "watch".into(),
                            status,
                        });
                        break;
                    }
                    Err(e) => {
                        failure = Some(e);
                        break;
                    }
                }
                events += 1;
                if run.len() < MAX_RUN {
                    item = stream.next_buffered();
                }
            }
            // What came before a failure is handed over first, in order.
            let handed = run.len() as u64;
            if self.fifo.push_watch(run.drain(..)).is_err() {
                return Ok(WatchEnd::Closed);
            }
            // The objects this run's predecessors replaced, freed on the thread that made them.
            self.fifo.graveyard().clear();
            self.delivered
                .set(self.delivered.get() + handed + bookmarks);
            if handed + bookmarks > 0 {
                // One lock for the run's counters and version.
                self.record(|h| {
                    h.stats.events += handed;
                    h.stats.bookmarks += bookmarks;
                    h.succeeded();
                    if !rv.is_empty() {
                        h.reached(&rv);
                    }
                });
            }
            if let Some(e) = failure {
                return Err(e);
            }
        }
        Ok(WatchEnd::Ended(events))
    }

    /// A paged list handed to the FIFO page by page, so the informer applies the first pages
    /// while later ones are read and decoded; deletions and sync wait for the last page.
    /// Every page is held to `check` before any of it reaches the FIFO (else
    /// `ListError::Stale`): newer than the version whose watch got 410, and not older than
    /// what the FIFO already holds (a restarted list's full page too: its continue token
    /// expired and the server answered again, possibly from a lagging cache).
    fn paged_list(&self, params: &ListParams, check: ListChecks) -> Result<(), ListError> {
        self.fifo.begin_replace()?;
        let mut rv = String::new();
        let outcome = (|| -> Result<(), ListError> {
            for page in self.api.pages(params) {
                let page = page?;
                if self.stopped() {
                    return Err(ListError::Closed);
                }
                rv = page.list.metadata.resource_version.unwrap_or_default();
                check.page(&rv, &self.pages_handed_over.borrow())?;
                if page.restarted {
                    self.fifo.restart_replace();
                }
                let items: Vec<Arc<K>> =
                    page.list.items.into_iter().map(|o| self.share(o)).collect();
                self.fifo.replace_page(items)?;
                // From here on, no answer older than this page may replace it.
                let mut handed = self.pages_handed_over.borrow_mut();
                if handed.is_empty() || older(&handed, &rv) {
                    rv.clone_into(&mut handed);
                }
                drop(handed);
                // What a relist's earlier pages replaced, freed here (see `consume`).
                self.fifo.graveyard().clear();
            }
            Ok(())
        })();
        if let Err(e) = outcome {
            self.fifo.abandon_replace();
            return Err(e);
        }
        // The version first: whoever sees the FIFO synced must see this version too.
        self.set_rv(&rv);
        self.pages_handed_over.borrow_mut().clear();
        self.fifo.finish_replace()?;
        self.listed();
        // The list's connection would sit idle beside the watch's until the next relist.
        self.api.client().release_idle_connections();
        Ok(())
    }

    /// Counts a list that completed.
    fn listed(&self) {
        self.last_list.set(Some(Instant::now()));
        self.record(|h| {
            h.stats.lists += 1;
            h.succeeded();
        });
    }

    /// A streaming list: the initial events up to the closing bookmark become one `replace`;
    /// the same connection then goes on as the watch.
    fn streaming_list(&self) -> Result<(), ListError> {
        let mut params = self.watch_params("");
        params.send_initial_events = true;
        params.resource_version_match = Some("NotOlderThan".into());
        let stream = self.start_watch(&params)?;
        let canceller = stream.canceller();
        let deadline = self.config.streaming_list_deadline;
        let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(1);
        let watchdog = std::thread::Builder::new()
            .name(crate::thread_name::thread_name(&self.name, "sldl"))
            .spawn(move || {
                if let Err(crossbeam_channel::RecvTimeoutError::Timeout) =
                    done_rx.recv_timeout(deadline)
                {
                    canceller.cancel();
                }
            })
            .map_err(|e| Error::Config(format!("spawning a thread: {e}")))?;
        let mut stream = stream;
        let mut items = Vec::new();
        let outcome = loop {
            match stream.next() {
                Some(Ok(WatchEvent::Added(o))) => items.push(self.share(o)),
                Some(Ok(WatchEvent::Bookmark(b))) if b.is_initial_events_end() => break Ok(b.resource_version),
                Some(Ok(WatchEvent::Bookmark(_))) => {}
                // An ERROR event is the server's verdict on this request, not on streaming:
                // `streaming_unsupported` reads its Status like any other failure's.
                Some(Ok(WatchEvent::Error(status))) => {
                    break Err(ListError::Api(Error::Api {
                        request: stream.request().to_owned(),
                        status,
                    }))
                }
                Some(Ok(other)) => {
                    break Err(ListError::Unsupported(Error::Decode {
                        request: stream.request().to_owned(),
                        message: format!("unexpected {} event during the initial events", other.type_name()),
                    }))
                }
                Some(Err(e)) => break Err(ListError::Api(e)),
                None => {
                    break Err(ListError::Unsupported(Error::Decode {
                        request: stream.request().to_owned(),
                        message: "the streaming list ended (or hit its deadline) without the initial-events-end bookmark".into(),
                    }))
                }
            }
        };
        let _ = done_tx.send(());
        let _ = watchdog.join();
        if self.stopped() {
            return Err(ListError::Closed);
        }
        let rv = outcome?;
        self.set_rv(&rv);
        self.pages_handed_over.borrow_mut().clear();
        self.fifo.replace(items)?;
        self.listed();
        // The same connection goes on as the watch.
        self.shared.watching.store(true, Ordering::SeqCst);
        let result = self.consume(stream);
        self.shared.watching.store(false, Ordering::SeqCst);
        match result {
            Ok(WatchEnd::Closed) => Err(ListError::Closed),
            Ok(WatchEnd::Ended(_)) => Ok(()),
            Err(e) => {
                // The list itself succeeded; the watch part failed like any watch (the next
                // watch from the last version tells what to do about it).
                self.report(&e);
                Ok(())
            }
        }
    }
}

/// What every page of a list at a version must satisfy before it reaches the FIFO.
#[derive(Default)]
struct ListChecks {
    /// After a 410: the version whose watch failed; the list must be newer (a watch from an
    /// equal or older version would fail again).
    newer_than: Option<String>,
    /// What the FIFO already holds: no page may be older (it would take back objects the
    /// informer already announced: a deletion that never happened).
    not_older_than: Option<String>,
}

impl ListChecks {
    /// Checks one page at `rv`; `handed` is the version of pages this list (or an earlier,
    /// unfinished one) already handed over.
    fn page(&self, rv: &str, handed: &str) -> Result<(), ListError> {
        let stale = |failed_at: &str| ListError::Stale {
            failed_at: failed_at.to_owned(),
            listed: rv.to_owned(),
        };
        if let Some(failed_at) = self.newer_than.as_deref() {
            if !newer(rv, failed_at) {
                return Err(stale(failed_at));
            }
        }
        if let Some(floor) = self.not_older_than.as_deref() {
            if older(rv, floor) {
                return Err(stale(floor));
            }
            if !handed.is_empty() && older(rv, handed) {
                return Err(stale(handed));
            }
        }
        Ok(())
    }
}

enum ListError {
    Api(Error),
    /// A list "at least as fresh as" the version whose watch got 410 answered a version no
    /// newer than it; nothing of it was handed over.
    Stale {
        failed_at: String,
        listed: String,
    },
    /// A streaming list the server does not support (it ended without its closing bookmark,
    /// or sent something a streaming list cannot contain).
    Unsupported(Error),
    Closed,
}

impl From<Error> for ListError {
    fn from(e: Error) -> Self {
        ListError::Api(e)
    }
}

impl From<Closed> for ListError {
    fn from(_: Closed) -> Self {
        ListError::Closed
    }
}
