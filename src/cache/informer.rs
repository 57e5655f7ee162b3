//! `SharedIndexInformer`: one reflector, one DeltaFIFO, one indexed cache, many handlers.
//!
//! An informer over several namespaces ([`SharedIndexInformer::for_namespaces`]) has one
//! reflector, one FIFO and one informer thread (`inf`, `inf1`, ...) per namespace, all
//! applying to the one cache and telling the same handlers. Each FIFO's view of the cache
//! (what a relist compares with, what a resync queues) is its namespace's part only, so a
//! relist of one namespace never announces the deletion of another's objects; keys of two
//! namespaces never meet, so each object's changes still pass through one FIFO, in order.
//! Or, by choice ([`NamespaceWatch::ClusterWide`]), one cluster-wide reflector whose
//! objects of other namespaces are dropped before the cache.
//!
//! The informer thread pops each key's deltas, applies them to the cache, then hands a
//! notification to every handler's listener (see [`listener`](super::listener)); handlers run
//! on their own threads. Applying and notifying happen under one lock that registering a
//! handler also takes, so a handler added while the informer runs gets the cache contents as
//! `on_add(.., true)` and then every later change: no gap, no duplicate.
//!
//! Resyncs are per handler: a timer finds the handlers whose period is due and queues one
//! resync for them; each `Sync` of it reaches exactly those handlers, however long the
//! informer takes to get through the round (see `ResyncRound`). A resync period set on the
//! reflector serves as the default for handlers registered without one.
//!
//! Threads, all named `ki/<resource>/<role>` (15 bytes at most, what Linux shows) and all
//! joined by [`stop`]: the reflector (`refl`), the informer (`inf`), one per handler
//! (`lis<n>`), and the resync timer (`rsyn`) only once a handler asks for resyncs: an
//! informer with one handler that does not resync runs three threads.
//!
//! [`stop`]: SharedIndexInformer::stop

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::catch::{PanicHandler, Transform};
use super::delta::{DeletedObject, Delta};
use super::delta_fifo::{Closed, DeltaFifo, KnownObjects};
use super::handler::{EventHandler, HandlerFns};
use super::health::ReflectorStats;
use super::health::{HandlerStats, InformerHealth};
use super::listener::{Listener, Notification, DEFAULT_MAX_BACKLOG};
use super::lister::Lister;
use super::reflector::{Reflector, ReflectorConfig, WatchErrorHandler};
use super::stop::StopSignal;
use super::store::{IndexFn, Store, NAMESPACE_INDEX};
use crate::api::{Meta, Object};
use crate::client::Api;
use crate::error::{Error, Result};
use crate::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use crate::sync::thread::{self, JoinHandle};
use crate::sync::Mutex;

/// Options of an informer: a builder, every setting with its default.
///
/// ```
/// use kube_informer::api::DynamicObject;
/// use kube_informer::cache::{strip_managed_fields, InformerConfig, ReflectorConfig};
/// use std::time::Duration;
/// let config = InformerConfig::<DynamicObject>::new()
///     .reflector(ReflectorConfig::new().labels("app=web").page_size(100))
///     .default_resync(Duration::from_secs(600))
///     .transform(strip_managed_fields())
///     .on_watch_error(|e| eprintln!("watch: {e}"));
/// # let _ = config;
/// ```
#[derive(Clone)]
pub struct InformerConfig<K> {
    /// How the reflector lists and watches (selectors, page size, streaming list, back-off).
    pub(crate) reflector: ReflectorConfig,
    /// Resync period for handlers registered without one (zero: no resync).
    pub(crate) default_resync: Duration,
    /// Applied to every object before it is cached (see
    /// [`strip_managed_fields`](super::strip_managed_fields)).
    pub(crate) transform: Option<Transform<K>>,
    /// Called with every panic of code the informer runs for you: handlers and the
    /// transform. (A panicking index function fails that object's indexing: the store's
    /// error is logged, the object is cached.)
    pub(crate) on_handler_panic: Option<PanicHandler>,
    /// Notifications a handler's channel holds before coalescing starts.
    pub(crate) max_backlog: usize,
}

impl<K> Default for InformerConfig<K> {
    fn default() -> Self {
        InformerConfig {
            reflector: ReflectorConfig::default(),
            default_resync: Duration::ZERO,
            transform: None,
            on_handler_panic: None,
            max_backlog: DEFAULT_MAX_BACKLOG,
        }
    }
}

impl<K> InformerConfig<K> {
    /// The defaults (the same as `InformerConfig::default()`).
    pub fn new() -> Self {
        Self::default()
    }

    /// How the reflector lists and watches (selectors, page size, streaming list, back-off).
    /// Replaces the whole reflector configuration, a watch-error callback set before
    /// included.
    pub fn reflector(mut self, reflector: ReflectorConfig) -> Self {
        self.reflector = reflector;
        self
    }

    /// Resync period for handlers registered without one (zero: no resync, the default).
    pub fn default_resync(mut self, period: Duration) -> Self {
        self.default_resync = period;
        self
    }

    /// Applied to every object before it is cached (see
    /// [`strip_managed_fields`](super::strip_managed_fields)).
    pub fn transform(mut self, transform: Transform<K>) -> Self {
        self.transform = Some(transform);
        self
    }

    /// Called with every panic of code the informer runs for you: handlers and the
    /// transform. (A panicking index function fails that object's indexing: the store's
    /// error is logged, the object is cached.)
    pub fn on_handler_panic(mut self, f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        let f: PanicHandler = Arc::new(f);
        self.on_handler_panic = Some(f);
        self
    }

    /// Notifications a handler's channel holds before coalescing starts.
    pub fn max_backlog(mut self, max: usize) -> Self {
        self.max_backlog = max;
        self
    }

    /// Sets the reflector's watch-error callback (see
    /// [`ReflectorConfig::on_watch_error`]).
    pub fn on_watch_error(mut self, f: impl Fn(&Error) + Send + Sync + 'static) -> Self {
        let f: WatchErrorHandler = Arc::new(f);
        self.reflector.on_watch_error = Some(f);
        self
    }
}

struct Inner<K> {
    /// The informer's scope as one `Api` (its namespace: the only one, or none for all
    /// namespaces and for several); each part lists and watches through its own.
    api: Api<K>,
    name: String,
    config: Mutex<InformerConfig<K>>,
    store: Arc<Store<K>>,
    /// One reflector and FIFO per namespace watched (one in all for a single namespace,
    /// all namespaces, or several namespaces over one cluster-wide watch).
    parts: Vec<Part<K>>,
    /// The namespaces of an informer over several (sorted; empty otherwise).
    namespaces: Vec<String>,
    /// With one cluster-wide watch over several namespaces: the namespaces kept (objects
    /// of the others are dropped before the cache).
    only: Option<HashSet<String>>,
    /// The handlers; held while applying a delta and notifying, and while registering.
    listeners: Mutex<Vec<Arc<Listener<K>>>>,
    next_id: AtomicU64,
    started: AtomicBool,
    /// The resync timer (`rsyn`) runs: started with the informer, or later by the first
    /// handler that asks for resyncs. An informer whose handlers never resync has none.
    resync_timer: AtomicBool,
    stop: StopSignal,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// One list-and-watch of an informer: its reflector and the FIFO it feeds. An informer over
/// several namespaces has one per namespace, all applying to the one cache and telling the
/// same handlers; each FIFO knows only its namespace's part of the cache, so a relist of one
/// namespace deletes nothing of another. Keys of different namespaces never meet, so every
/// object's changes still go through one FIFO, in order.
struct Part<K> {
    api: Api<K>,
    /// The namespace this part alone lists and watches (`None`: the informer's whole scope).
    namespace: Option<String>,
    fifo: Arc<DeltaFifo<K>>,
    reflector: Mutex<Option<Reflector>>,
    /// Resyncs whose `Sync` deltas are still queued in this part's FIFO, oldest first (see
    /// [`ResyncRound`]).
    resync_rounds: Mutex<VecDeque<ResyncRound>>,
}

/// The part of the cache one namespace's FIFO knows: its deletions on relist and its
/// resyncs concern that namespace only.
struct NamespaceView<K> {
    store: Arc<Store<K>>,
    namespace: String,
    prefix: String,
}

impl<K: Object> KnownObjects<K> for NamespaceView<K> {
    fn known_keys(&self) -> Vec<String> {
        self.store
            .index_keys(NAMESPACE_INDEX, &self.namespace)
            .unwrap_or_default()
    }
    fn known_object(&self, key: &str) -> Option<Arc<K>> {
        if key.starts_with(&self.prefix) {
            self.store.get(key)
        } else {
            None
        }
    }
}

/// How an informer over several namespaces lists and watches them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NamespaceWatch {
    /// One list and watch per namespace (the default, controller-runtime's choice): only
    /// those namespaces' objects travel, a namespace's failures and relists are its own,
    /// and the permission to list each namespace is enough. One connection per namespace.
    #[default]
    PerNamespace,
    /// One cluster-wide list and watch, whose objects of other namespaces are dropped
    /// before the cache: one connection, but every object of the resource in the cluster
    /// is read and decoded, and listing it cluster-wide must be allowed.
    ClusterWide,
}

/// One resync: the handlers it is for and how many of its `Sync` deltas are still queued.
///
/// The FIFO queues a resync's `Sync`s behind everything queued before, each as a key of its
/// own, so they are popped in the order of their resyncs: the oldest round with some left is
/// the one a popped `Sync` belongs to. Each `Sync` thus reaches exactly the handlers that
/// asked for that resync, however long the informer takes to get to it.
struct ResyncRound {
    /// Shared with every `Sync` of the round as it is popped (no copy per object).
    handlers: Arc<[u64]>,
    remaining: usize,
}

/// A shared informer: a cache of one resource kept in step with the server, and handlers
/// told about every change. Cheap to clone; clones share everything. When the last clone is
/// dropped the informer stops and joins its threads.
pub struct SharedIndexInformer<K: Object> {
    inner: Arc<Inner<K>>,
    _stop_on_drop: Arc<StopOnDrop<K>>,
}

/// Held only by user-facing handles (threads hold `Inner`), so dropping the last handle
/// stops the informer.
struct StopOnDrop<K: Object>(Arc<Inner<K>>);

impl<K: Object> Drop for StopOnDrop<K> {
    fn drop(&mut self) {
        self.0.shutdown();
    }
}

impl<K: Object> Clone for SharedIndexInformer<K> {
    fn clone(&self) -> Self {
        SharedIndexInformer {
            inner: Arc::clone(&self.inner),
            _stop_on_drop: Arc::clone(&self._stop_on_drop),
        }
    }
}

impl<K: Object> std::fmt::Debug for SharedIndexInformer<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedIndexInformer")
            .field("resource", &self.inner.name)
            .finish_non_exhaustive()
    }
}

/// A handle to one registered handler.
pub struct HandlerRegistration<K> {
    listener: Arc<Listener<K>>,
    informer: Arc<Inner<K>>,
}

impl<K> std::fmt::Debug for HandlerRegistration<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandlerRegistration")
            .field("id", &self.listener.id)
            .finish()
    }
}

impl<K: Object> HandlerRegistration<K> {
    /// True once this handler has handled the whole initial list.
    pub fn has_synced(&self) -> bool {
        self.informer.fix_sync_target(&self.listener);
        self.listener.reached_target()
    }

    /// Blocks until [`has_synced`](Self::has_synced) or the timeout; returns which.
    pub fn wait_for_sync(&self, timeout: Duration) -> bool {
        let deadline = crate::deadline::after(timeout);
        if !self.informer.wait_synced(timeout) {
            return false;
        }
        self.informer.fix_sync_target(&self.listener);
        let target = self.listener.sync_target.lock().unwrap_or(u64::MAX);
        self.listener.wait_processed(target, deadline)
    }

    /// Notifications waiting for this handler (its channel plus coalesced changes).
    pub fn backlog(&self) -> usize {
        self.listener.backlog()
    }

    /// How many times this handler panicked.
    pub fn panics(&self) -> u64 {
        self.listener.panics.load(Ordering::SeqCst)
    }

    /// This handler's counters: delivered, coalesced, backlog, panics.
    pub fn stats(&self) -> HandlerStats {
        self.listener.stats()
    }
}

impl<K: Object> SharedIndexInformer<K> {
    /// An informer for the objects `api` reaches. Nothing runs until [`start`](Self::start).
    pub fn new(api: Api<K>, config: InformerConfig<K>) -> Self {
        Self::build(api, Vec::new(), NamespaceWatch::PerNamespace, config)
    }

    /// One informer over several namespaces of `api`'s resource (`api`'s own namespace is
    /// not used): one cache, one set of handlers, listers and indexes across them, and
    /// nothing of any other namespace. `watch` says how: one list and watch per namespace
    /// (each relist of one namespace leaves the others' objects alone) or one cluster-wide
    /// watch filtered here. An empty list means all namespaces, one namespace is the
    /// informer of [`Api::namespaced_with`]; a cluster-scoped resource ignores namespaces.
    ///
    /// ```
    /// use kube_informer::api::{ApiResource, DynamicObject};
    /// use kube_informer::cache::{InformerConfig, NamespaceWatch, SharedIndexInformer};
    /// use kube_informer::{Api, Client};
    /// use std::time::Duration;
    /// let server = kube_informer::testing::ApiServer::start();
    /// let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    /// for ns in ["a", "b", "c"] {
    ///     server.create(&cms, serde_json::json!({"metadata": {"name": "x", "namespace": ns}})).unwrap();
    /// }
    /// let api: Api<DynamicObject> = Api::all_with(Client::new(server.client_config())?, &cms);
    /// let informer = SharedIndexInformer::for_namespaces(
    ///     api, ["a", "b"], NamespaceWatch::PerNamespace, InformerConfig::default());
    /// informer.start()?;
    /// assert!(informer.wait_for_cache_sync(Duration::from_secs(30)));
    /// let mut keys = informer.store().list_keys();
    /// keys.sort();
    /// assert_eq!(keys, ["a/x", "b/x"]);
    /// informer.stop();
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn for_namespaces<S: Into<String>>(
        api: Api<K>,
        namespaces: impl IntoIterator<Item = S>,
        watch: NamespaceWatch,
        config: InformerConfig<K>,
    ) -> Self {
        let mut namespaces: Vec<String> = namespaces
            .into_iter()
            .map(Into::into)
            .filter(|n| !n.is_empty())
            .collect();
        namespaces.sort_unstable();
        namespaces.dedup();
        let (client, resource) = (api.client().clone(), api.resource().clone());
        if !resource.namespaced || namespaces.is_empty() {
            return Self::new(Api::all_with(client, &resource), config);
        }
        if let [one] = namespaces.as_slice() {
            return Self::new(Api::namespaced_with(client, one, &resource), config);
        }
        Self::build(Api::all_with(client, &resource), namespaces, watch, config)
    }

    /// `namespaces`: empty, or at least two (with `api` over all namespaces).
    fn build(
        api: Api<K>,
        namespaces: Vec<String>,
        watch: NamespaceWatch,
        mut config: InformerConfig<K>,
    ) -> Self {
        // Resyncs are the handlers' business here: a reflector-level period is the default
        // for handlers (the informer's own resync timer serves it), never a second timer
        // whose `Sync`s no handler asked for.
        let reflector_resync = std::mem::take(&mut config.reflector.resync_period);
        if config.default_resync.is_zero() {
            config.default_resync = reflector_resync;
        }
        let store = Arc::new(Store::new());
        let name = config
            .reflector
            .name
            .clone()
            .unwrap_or_else(|| api.resource().plural.clone());
        let part = |api: Api<K>, namespace: Option<String>, known: Arc<dyn KnownObjects<K>>| Part {
            api,
            namespace,
            fifo: Arc::new(DeltaFifo::new(Some(known))),
            reflector: Mutex::new(None),
            resync_rounds: Mutex::new(VecDeque::new()),
        };
        let per_namespace = !namespaces.is_empty() && watch == NamespaceWatch::PerNamespace;
        let parts = if per_namespace {
            namespaces
                .iter()
                .map(|ns| {
                    let view = NamespaceView {
                        store: Arc::clone(&store),
                        namespace: ns.clone(),
                        prefix: format!("{ns}/"),
                    };
                    let api = Api::namespaced_with(api.client().clone(), ns, api.resource());
                    part(api, Some(ns.clone()), Arc::new(view))
                })
                .collect()
        } else {
            let known: Arc<dyn KnownObjects<K>> = store.clone();
            vec![part(api.clone(), None, known)]
        };
        let only = (!namespaces.is_empty() && !per_namespace)
            .then(|| namespaces.iter().cloned().collect());
        let inner = Arc::new(Inner {
            api,
            name,
            config: Mutex::new(config),
            store,
            parts,
            namespaces,
            only,
            listeners: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(0),
            started: AtomicBool::new(false),
            resync_timer: AtomicBool::new(false),
            stop: StopSignal::new(),
            threads: Mutex::new(Vec::new()),
        });
        SharedIndexInformer {
            _stop_on_drop: Arc::new(StopOnDrop(Arc::clone(&inner))),
            inner,
        }
    }

    /// The resource's name in thread names and logs.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The resource this informer lists and watches (group, version, kind, plural, scope).
    pub fn resource(&self) -> &crate::api::ApiResource {
        self.inner.api.resource()
    }

    /// The namespace this informer lists and watches (`None`: all namespaces, or several:
    /// see [`namespaces`](Self::namespaces)).
    pub fn namespace(&self) -> Option<&str> {
        self.inner.api.namespace()
    }

    /// The namespaces of an informer over several (sorted; empty for one or all).
    pub fn namespaces(&self) -> &[String] {
        &self.inner.namespaces
    }

    /// An empty [`HandlerFns`] of this informer's object type, so that its closures need no
    /// type annotations: the object type comes from the informer.
    ///
    /// ```
    /// use kube_informer::api::ApiResource;
    /// use kube_informer::cache::SharedInformerFactory;
    /// use kube_informer::Client;
    /// use std::time::Duration;
    /// let server = kube_informer::testing::ApiServer::start();
    /// let pods = ApiResource::new("", "v1", "Pod", "pods", true);
    /// server.create(&pods, serde_json::json!({"metadata": {"name": "web-0", "namespace": "lab"}})).unwrap();
    /// let factory = SharedInformerFactory::new(Client::new(server.client_config())?);
    /// let informer = factory.dynamic_informer(&pods);
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// informer.add_event_handler(
    ///     informer
    ///         .handler_fns()
    ///         .on_add(move |pod, _initial| tx.send(pod.metadata.key()).unwrap())
    ///         .on_delete(|gone| println!("DELETE {}", gone.object().metadata.key())),
    /// )?;
    /// factory.start()?;
    /// assert_eq!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), "lab/web-0");
    /// factory.shutdown();
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    ///
    /// The same closures on a bare `HandlerFns::new()` do not compile: `HandlerFns::new()`
    /// does not know its object type while its closures are checked (the type the informer
    /// asks for arrives only afterwards), so `pod` needs an annotation there
    /// (`|pod: Arc<DynamicObject>, _|`) or the type a turbofish
    /// (`HandlerFns::<DynamicObject>::new()`):
    ///
    /// ```compile_fail,E0282
    /// # use kube_informer::api::ApiResource;
    /// # use kube_informer::cache::{HandlerFns, SharedInformerFactory};
    /// # use kube_informer::Client;
    /// # let server = kube_informer::testing::ApiServer::start();
    /// # let pods = ApiResource::new("", "v1", "Pod", "pods", true);
    /// # let factory = SharedInformerFactory::new(Client::new(server.client_config())?);
    /// let informer = factory.dynamic_informer(&pods);
    /// informer.add_event_handler(
    ///     HandlerFns::new().on_add(|pod, _initial| println!("ADD {}", pod.metadata.key())),
    /// )?;
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn handler_fns(&self) -> HandlerFns<K> {
        HandlerFns::new()
    }

    /// Registers a handler with the informer's default resync period.
    pub fn add_event_handler(
        &self,
        handler: impl EventHandler<K>,
    ) -> Result<HandlerRegistration<K>> {
        let period = self.inner.config.lock().default_resync;
        self.add_event_handler_with_resync(handler, period)
    }

    /// Registers a handler that also gets every cached object again (as `on_update(o, o)`)
    /// every `resync` (zero: never). If the informer already runs, the handler first gets the
    /// current cache as `on_add(.., true)`.
    pub fn add_event_handler_with_resync(
        &self,
        handler: impl EventHandler<K>,
        resync: Duration,
    ) -> Result<HandlerRegistration<K>> {
        let inner = &self.inner;
        if inner.stop.is_stopped() {
            return Err(Error::InvalidInput(format!(
                "informer {} is stopped",
                inner.name
            )));
        }
        let (max_backlog, on_panic) = {
            let c = inner.config.lock();
            (c.max_backlog, c.on_handler_panic.clone())
        };
        let id = inner.next_id.fetch_add(1, Ordering::SeqCst);
        let listener = Listener::new(
            id,
            max_backlog,
            resync,
            Some(Arc::clone(inner.parts[0].fifo.graveyard())),
        );
        listener
            .spawn(
                crate::thread_name::thread_name(&inner.name, &format!("lis{id}")),
                format!("kube-informer/{}/handler-{id}", inner.name),
                Box::new(handler),
                on_panic,
            )
            .map_err(|e| Error::Config(format!("spawning a handler thread: {e}")))?;
        {
            let mut listeners = inner.listeners.lock();
            if inner.started.load(Ordering::SeqCst) {
                for obj in inner.store.list() {
                    let key = obj.metadata().key();
                    listener.send(&key, Notification::Add(obj, true));
                }
                if inner.synced() {
                    *listener.sync_target.lock() = Some(listener.sent.load(Ordering::SeqCst));
                }
            }
            listeners.push(Arc::clone(&listener));
        }
        if !resync.is_zero() {
            inner
                .start_resync_timer()
                .map_err(|e| Error::Config(format!("spawning an informer thread: {e}")))?;
        }
        Ok(HandlerRegistration {
            listener,
            informer: Arc::clone(inner),
        })
    }

    /// Unregisters a handler and joins its thread (after the notification it is handling).
    pub fn remove_event_handler(&self, registration: HandlerRegistration<K>) {
        self.inner
            .listeners
            .lock()
            .retain(|l| l.id != registration.listener.id);
        registration.listener.shutdown();
    }

    /// Adds index functions to the cache (existing objects are indexed at once).
    pub fn add_indexers(
        &self,
        indexers: impl IntoIterator<Item = (String, IndexFn<K>)>,
    ) -> Result<()> {
        self.inner.store.add_indexers(indexers)
    }

    /// The cache.
    pub fn store(&self) -> Arc<Store<K>> {
        Arc::clone(&self.inner.store)
    }

    /// Typed reads from the cache.
    pub fn lister(&self) -> Lister<K> {
        Lister::new(self.store())
    }

    /// Starts the reflector and informer threads. Idempotent and non-blocking.
    pub fn start(&self) -> Result<()> {
        let inner = &self.inner;
        if inner.stop.is_stopped() {
            return Err(Error::InvalidInput(format!(
                "informer {} is stopped",
                inner.name
            )));
        }
        if inner.started.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        let spawn_err =
            |e: std::io::Error| Error::Config(format!("spawning an informer thread: {e}"));
        let (reflector_config, transform, on_panic) = {
            let c = inner.config.lock();
            (
                c.reflector.clone(),
                c.transform.clone(),
                c.on_handler_panic.clone(),
            )
        };
        // Said when the initial list is in the cache, whichever thread completes it (with
        // several parts: the last one to sync).
        let said = Arc::new(AtomicBool::new(false));
        let fifos: Arc<[std::sync::Weak<DeltaFifo<K>>]> = inner
            .parts
            .iter()
            .map(|p| Arc::downgrade(&p.fifo))
            .collect();
        for part in &inner.parts {
            let (name, store, started) =
                (inner.name.clone(), Arc::clone(&inner.store), Instant::now());
            let (fifos, said) = (Arc::clone(&fifos), Arc::clone(&said));
            part.fifo.on_synced(Box::new(move || {
                // This FIFO's flag is set before the callback; the flags are read without
                // the FIFOs' locks (weak: a FIFO that never syncs keeps no other alive).
                let all = fifos
                    .iter()
                    .all(|f| f.upgrade().is_none_or(|f| f.has_synced()));
                if all && !said.swap(true, Ordering::SeqCst) {
                    log::info!(
                        "kube-informer/{name}: synced {} objects in {:.2?}",
                        store.len(),
                        started.elapsed()
                    );
                }
            }));
        }
        for (i, _) in inner.parts.iter().enumerate() {
            let me = Arc::clone(inner);
            let role = if i == 0 {
                "inf".to_owned()
            } else {
                format!("inf{i}")
            };
            let process = thread::Builder::new()
                .name(crate::thread_name::thread_name(&inner.name, &role))
                .spawn(move || me.process_loop(i))
                .map_err(spawn_err)?;
            inner.threads.lock().push(process);
        }
        inner.start_resync_timer().map_err(spawn_err)?;
        for part in &inner.parts {
            let mut config = reflector_config.clone();
            if let Some(ns) = &part.namespace {
                config.name = Some(format!("{} in {ns}", inner.name));
            } else if config.name.is_none() {
                config.name = Some(inner.name.clone());
            }
            let reflector = Reflector::start_reporting(
                part.api.clone(),
                Arc::clone(&part.fifo),
                config,
                transform.clone(),
                on_panic.clone(),
            )
            .map_err(spawn_err)?;
            *part.reflector.lock() = Some(reflector);
        }
        Ok(())
    }

    /// True once the initial list is in the cache and every handler was told about it.
    pub fn has_synced(&self) -> bool {
        self.inner.synced()
    }

    /// Blocks until [`has_synced`](Self::has_synced) or the timeout; returns which.
    pub fn wait_for_cache_sync(&self, timeout: Duration) -> bool {
        self.inner.wait_synced(timeout)
    }

    /// The resourceVersion of the last list, event or bookmark ("" before the first; with
    /// several namespaces watched, the newest of theirs).
    pub fn last_sync_resource_version(&self) -> String {
        let mut newest = String::new();
        for part in &self.inner.parts {
            if let Some(r) = part.reflector.lock().as_ref() {
                let rv = r.last_sync_resource_version();
                if newest.is_empty() || newer_version(&rv, &newest) {
                    newest = rv;
                }
            }
        }
        newest
    }

    /// True while the watch connection is open (with several namespaces watched: every
    /// namespace's).
    pub fn is_watching(&self) -> bool {
        self.inner.parts.iter().all(|p| {
            p.reflector
                .lock()
                .as_ref()
                .is_some_and(Reflector::is_watching)
        })
    }

    /// Time since the last list, event or bookmark (of any namespace watched).
    pub fn since_last_event(&self) -> Option<Duration> {
        self.inner
            .parts
            .iter()
            .filter_map(|p| {
                p.reflector
                    .lock()
                    .as_ref()
                    .and_then(Reflector::since_last_activity)
            })
            .min()
    }

    /// A snapshot of the informer's health: synced, watching, the last error with its
    /// Status, failures in a row, time since the last event, and the reflector's and every
    /// handler's counters. `Display` prints it on one line:
    ///
    /// ```no_run
    /// # fn demo(informer: kube_informer::cache::SharedIndexInformer<kube_informer::api::DynamicObject>) {
    /// if !informer.wait_for_cache_sync(std::time::Duration::from_secs(30)) {
    ///     // e.g. "pods: not synced, 0 cached, not watching, lists 0 (relists 0), events 0,
    ///     // 3 failures in a row; last error 0.4s ago: GET /api/v1/pods?limit=500: 403 Forbidden: ..."
    ///     eprintln!("{}", informer.health());
    /// }
    /// # }
    /// ```
    pub fn health(&self) -> InformerHealth {
        Self::health_of(&self.inner)
    }

    /// The informer's health while it lives, read without keeping it alive (for metrics).
    pub(crate) fn health_source(&self) -> impl Fn() -> Option<InformerHealth> + Send + Sync {
        let weak = Arc::downgrade(&self.inner);
        move || weak.upgrade().map(|inner| Self::health_of(&inner))
    }

    /// With several namespaces watched, one view over all: failing or gone when any is
    /// (the longest), counters summed, the last error the most recent of theirs.
    fn health_of(inner: &Inner<K>) -> InformerHealth {
        let reflectors: Vec<_> = inner.parts.iter().map(|p| p.reflector.lock()).collect();
        let handlers = inner.listeners.lock().iter().map(|l| l.stats()).collect();
        let running = !reflectors.is_empty() && reflectors.iter().all(|r| r.is_some());
        let mut h = InformerHealth {
            name: inner.name.clone(),
            running: running && !inner.stop.is_stopped(),
            synced: inner.synced(),
            cached: inner.store.len(),
            handlers,
            watching: running,
            ..Default::default()
        };
        for r in reflectors.iter().filter_map(|r| r.as_ref()) {
            h.watching &= r.is_watching();
            h.consecutive_failures = h.consecutive_failures.max(r.consecutive_failures());
            h.failing_for = h.failing_for.max(r.failing_for());
            h.gone_for = h.gone_for.max(r.gone_for());
            if let Some(e) = r.last_error() {
                if h.last_error.as_ref().is_none_or(|l| e.ago < l.ago) {
                    h.last_error = Some(e);
                }
            }
            h.since_last_event = match (h.since_last_event, r.since_last_activity()) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            add_stats(&mut h.reflector, r.stats());
        }
        h
    }

    /// Stops every thread of the informer and its handlers, and joins them.
    pub fn stop(&self) {
        self.inner.shutdown();
    }
}

impl<K: Object> Inner<K> {
    /// Starts the resync timer once the informer runs and some handler asks for resyncs
    /// (called by `start` and by each registration with a period, so whichever comes second
    /// starts it); never twice, never after `stop`.
    fn start_resync_timer(self: &Arc<Self>) -> std::io::Result<()> {
        if !self.started.load(Ordering::SeqCst)
            || !self
                .listeners
                .lock()
                .iter()
                .any(|l| !l.resync_period.is_zero())
        {
            return Ok(());
        }
        // Under the threads' lock, which `shutdown` takes to join them after stopping.
        let mut threads = self.threads.lock();
        if self.stop.is_stopped() || self.resync_timer.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        let me = Arc::clone(self);
        let timer = thread::Builder::new()
            .name(crate::thread_name::thread_name(&self.name, "rsyn"))
            .spawn(move || me.resync_loop());
        match timer {
            Ok(t) => {
                threads.push(t);
                Ok(())
            }
            Err(e) => {
                self.resync_timer.store(false, Ordering::SeqCst);
                Err(e)
            }
        }
    }

    fn shutdown(&self) {
        self.stop.stop();
        for part in &self.parts {
            let reflector = part.reflector.lock().take();
            if let Some(r) = reflector {
                r.stop();
            }
            part.fifo.close();
        }
        let threads = std::mem::take(&mut *self.threads.lock());
        for t in threads {
            if t.thread().id() != thread::current().id() {
                let _ = t.join();
            }
        }
        let listeners = std::mem::take(&mut *self.listeners.lock());
        for l in listeners {
            l.shutdown();
        }
    }

    /// Pins a handler's sync target once the initial list is complete.
    fn fix_sync_target(&self, listener: &Listener<K>) {
        if listener.sync_target.lock().is_some() || !self.synced() {
            return;
        }
        let _guard = self.listeners.lock();
        let mut target = listener.sync_target.lock();
        if target.is_none() {
            *target = Some(listener.sent.load(Ordering::SeqCst));
        }
    }

    /// True once every part's initial list is in the cache.
    fn synced(&self) -> bool {
        self.parts.iter().all(|p| p.fifo.has_synced())
    }

    /// Blocks until [`synced`](Self::synced) or the timeout; returns which.
    fn wait_synced(&self, timeout: Duration) -> bool {
        let deadline = crate::deadline::after(timeout);
        self.parts.iter().all(|p| {
            p.fifo
                .wait_for_sync(deadline.saturating_duration_since(Instant::now()))
        })
    }

    /// Pops part `i`'s FIFO and applies what it hands over, until it closes. Each part has
    /// its own thread; `apply` serialises them on the handlers' lock.
    fn process_loop(self: Arc<Self>, i: usize) {
        let part = &self.parts[i];
        let mut announced = false;
        loop {
            // While the initial list is being processed the FIFO is not yet synced.
            let popped = part
                .fifo
                .pop_shared(|key, deltas| self.apply(part, key, deltas, !part.fifo.has_synced()));
            if popped.is_err() {
                return;
            }
            // The last part to sync sees every part synced (each sets its flag before this).
            if !announced && self.synced() {
                announced = true;
                let listeners = self.listeners.lock();
                for l in listeners.iter() {
                    let mut t = l.sync_target.lock();
                    if t.is_none() {
                        *t = Some(l.sent.load(Ordering::SeqCst));
                    }
                }
            }
        }
    }

    /// Applies one key's deltas to the cache and notifies the handlers.
    fn apply(&self, part: &Part<K>, key: &Arc<str>, deltas: Vec<Delta<K>>, initial: bool) {
        if let Some(only) = &self.only {
            // One cluster-wide watch over several namespaces: the others' objects stop here
            // (never cached, so their deletions and relists concern nothing here either).
            let namespace = key.split_once('/').map_or("", |(ns, _)| ns);
            if !only.contains(namespace) {
                for delta in deltas {
                    let obj = match delta {
                        Delta::Added(o)
                        | Delta::Updated(o)
                        | Delta::Replaced(o)
                        | Delta::Sync(o) => o,
                        Delta::Deleted(DeletedObject::Object(o)) => o,
                        Delta::Deleted(DeletedObject::Tombstone(t)) => t.last_known,
                    };
                    part.fifo.graveyard().bury(obj);
                }
                return;
            }
        }
        let listeners = self.listeners.lock();
        for delta in deltas {
            match delta {
                Delta::Deleted(d) => {
                    // The cached state it replaces: freed on the reflector's thread, which made
                    // it (the listeners get the deletion's own object).
                    if let Some(cached) = self.store.delete(key) {
                        part.fifo.graveyard().bury(cached);
                    }
                    for l in listeners.iter() {
                        l.send(key, Notification::Delete(d.clone()));
                    }
                }
                other => {
                    let resync_for =
                        matches!(other, Delta::Sync(_)).then(|| Self::sync_popped(part));
                    let obj = Arc::clone(other.object());
                    let (old, indexed) = self.store.upsert_shared(key, Arc::clone(&obj));
                    if let Err(e) = indexed {
                        log::warn!("kube-informer/{}: {e}", self.name);
                    }
                    for l in listeners.iter() {
                        if resync_for.as_ref().is_some_and(|ids| !ids.contains(&l.id)) {
                            continue;
                        }
                        let n = match &old {
                            Some(old) => Notification::Update(Arc::clone(old), Arc::clone(&obj)),
                            None => Notification::Add(Arc::clone(&obj), initial),
                        };
                        l.send(key, n);
                    }
                    // When the listeners are done with the replaced state already, or there
                    // are none, this is its last reference: freed by its maker too.
                    if let Some(old) = old {
                        part.fifo.graveyard().bury(old);
                    }
                }
            }
        }
    }

    /// The handlers a popped `Sync` is for: those of the oldest resync with `Sync`s left.
    /// A `Sync` no resync of ours queued (none can be, but the FIFO is public) goes to none.
    fn sync_popped(part: &Part<K>) -> Arc<[u64]> {
        let mut rounds = part.resync_rounds.lock();
        let Some(round) = rounds.front_mut() else {
            return Arc::new([]);
        };
        round.remaining -= 1;
        let handlers = Arc::clone(&round.handlers);
        if round.remaining == 0 {
            rounds.pop_front();
        }
        handlers
    }

    /// Queues one resync for the handlers `due`; returns how many `Sync`s it queued. The
    /// round is registered under the lock the consumer takes to attribute a popped `Sync`,
    /// so none of this round's can be popped before the round is known.
    /// With several parts, each FIFO gets the resync and keeps its own rounds.
    fn resync_for(&self, due: Vec<u64>) -> Result<usize, Closed> {
        let handlers: Arc<[u64]> = due.into();
        let mut total = 0;
        for part in &self.parts {
            let mut rounds = part.resync_rounds.lock();
            let queued = part.fifo.resync()?;
            if queued > 0 {
                rounds.push_back(ResyncRound {
                    handlers: Arc::clone(&handlers),
                    remaining: queued,
                });
            }
            total += queued;
        }
        Ok(total)
    }

    /// Finds the handlers whose resync is due and queues a resync for them; checks at least
    /// once a second so handlers added later are honoured.
    fn resync_loop(self: Arc<Self>) {
        loop {
            let now = Instant::now();
            let mut wait = Duration::from_secs(1);
            let mut due = Vec::new();
            for l in self.listeners.lock().iter() {
                if l.resync_period.is_zero() {
                    continue;
                }
                let mut next = l.next_resync.lock();
                if now >= *next {
                    due.push(l.id);
                    *next = crate::deadline::at(now, l.resync_period);
                }
                wait = wait.min(next.saturating_duration_since(now));
            }
            if !due.is_empty() && self.resync_for(due).is_err() {
                return;
            }
            if self.stop.sleep(wait.max(Duration::from_millis(10))) {
                return;
            }
        }
    }
}

#[cfg(all(test, shuttle))]
#[path = "interleavings/apply.rs"]
mod interleavings;

/// Adds one reflector's counters to the sum over an informer's parts (the version: the
/// newest).
fn add_stats(sum: &mut ReflectorStats, one: ReflectorStats) {
    sum.lists += one.lists;
    sum.list_failures += one.list_failures;
    for (cause, n) in one.relists {
        *sum.relists.entry(cause).or_default() += n;
    }
    sum.watch_restarts += one.watch_restarts;
    sum.events += one.events;
    sum.bookmarks += one.bookmarks;
    for (kind, n) in one.errors {
        *sum.errors.entry(kind).or_default() += n;
    }
    if sum.last_resource_version.is_empty()
        || newer_version(&one.last_resource_version, &sum.last_resource_version)
    {
        sum.last_resource_version = one.last_resource_version;
    }
}

/// Whether version `a` is newer than `b` (decimal numbers, as every kube-apiserver writes
/// them; otherwise neither is).
fn newer_version(a: &str, b: &str) -> bool {
    matches!((a.parse::<u64>(), b.parse::<u64>()), (Ok(a), Ok(b)) if a > b)
}
