//! `Controller`: the pattern every Kubernetes controller follows, ready-made.
//!
//! Informer handlers turn each change into the object's key (`namespace/name`); keys go to a
//! rate-limited work queue (so a key changed ten times while waiting is reconciled once);
//! N worker threads take keys and call your `reconcile(key)`, which reads the current state
//! from the informer's cache (a [`Lister`](crate::cache::Lister)) and acts. The result decides
//! what happens to the key:
//! - `Ok(Action::Done)`: forget its retry history;
//! - `Ok(Action::RequeueAfter(d))`: look again after `d`;
//! - `Err(e)` (or a panic): retry with the queue's rate limiter (per-item exponential
//!   back-off and an overall bucket, like client-go's default).
//!
//! Besides the primary informer, [`ControllerBuilder::owns`] and [`ControllerBuilder::watches`]
//! add other informers whose changes become primary keys (`triggers.rs`); an
//! [`EventFilter`] on each decides which updates are worth a reconcile (`filter.rs`); every
//! reconcile's outcome is counted, and the last error of each failing key kept
//! (`stats.rs`, [`Controller::stats`], [`Controller::health`]).
//!
//! Workers start only after the cache has synced, so reconcile never sees a half-filled
//! cache. `stop` lets each worker finish the key in hand, then joins every thread.
//!
//! Under leader election ([`ControllerBuilder::leader_election`]) every replica keeps its
//! informer synced and its queue filled (so a new leader starts from a warm cache and knows
//! every key changed meanwhile), but workers run only during this replica's terms: they
//! start when a term starts and are stopped (each finishing the key in hand) and joined when
//! the term ends; the next term starts a new set. Keys stay queued between terms (at most one
//! entry per object: the queue deduplicates), and so do pending retries and their back-off.
//! A reconcile in hand when the term ends is finished, not interrupted: keep reconciles short,
//! or the stop of the term waits for them.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::enqueue::{Primary, Sink};
use super::filter::EventFilter;
use super::leader_election::{LeaderCallbacks, LeaderElectionConfig, LeaderElector, Term};
use super::stats::{ControllerHealth, ControllerStats, Counters, Outcome};
use super::triggers::{Attached, Source, Trigger};
use crate::api::Object;
use crate::cache::{HandlerRegistration, SharedIndexInformer};
use crate::client::Client;
use crate::error::{Error, Result};
use crate::workqueue::{RateLimiter, RateLimitingQueue};

/// What to do with a key after reconciling it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Nothing more until the object changes.
    Done,
    /// Reconcile again after this long (even if nothing changes).
    RequeueAfter(Duration),
}

pub(super) type Reconcile<E> = Arc<dyn Fn(&str) -> std::result::Result<Action, E> + Send + Sync>;

/// Options for a [`Controller`].
pub struct ControllerBuilder<K: Object, E> {
    name: String,
    informer: SharedIndexInformer<K>,
    workers: usize,
    sync_timeout: Duration,
    rate_limiter: Option<Box<dyn RateLimiter<String>>>,
    election: Option<(Client, LeaderElectionConfig)>,
    on_leadership: Option<OnLeadership>,
    triggers: Vec<Box<dyn Trigger>>,
    filter: Option<EventFilter<K>>,
    sharding: Option<(Client, super::sharding::ShardConfig)>,
    /// Workers started by a [`Manager`](crate::manager::Manager) in its terms, not by `run`.
    managed: bool,
    _error: std::marker::PhantomData<fn() -> E>,
}

pub(super) type OnLeadership = Arc<dyn Fn(bool) + Send + Sync>;

/// Starts a set of workers that end once their stop flag is set and the queue woken.
pub(crate) type Spawner =
    Arc<dyn Fn(&Arc<AtomicBool>) -> Result<Vec<JoinHandle<()>>> + Send + Sync>;

/// A running controller; dropping it stops it.
pub struct Controller<K: Object> {
    name: String,
    queue: Arc<RateLimitingQueue<String>>,
    stop: Arc<AtomicBool>,
    workers: Vec<JoinHandle<()>>,
    registration: Option<HandlerRegistration<K>>,
    informer: SharedIndexInformer<K>,
    triggers: Vec<Box<dyn Attached>>,
    counters: Arc<Counters>,
    elector: Option<LeaderElector>,
    /// Under a manager: what starts this controller's workers in each of its terms.
    spawner: Option<Spawner>,
}

impl<K: Object> std::fmt::Debug for Controller<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.name)
            .field("workers", &self.workers.len())
            .finish()
    }
}

impl<K: Object> Controller<K> {
    /// A controller named `name` reconciling the objects of `informer`.
    pub fn builder<E>(name: &str, informer: SharedIndexInformer<K>) -> ControllerBuilder<K, E> {
        ControllerBuilder {
            name: name.to_owned(),
            informer,
            workers: 2,
            sync_timeout: Duration::from_secs(300),
            rate_limiter: None,
            election: None,
            on_leadership: None,
            triggers: Vec::new(),
            filter: None,
            sharding: None,
            managed: false,
            _error: std::marker::PhantomData,
        }
    }

    /// The controller's name (its queue's, its workers' threads', its metrics' label).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The work queue (for its metrics, or to enqueue keys yourself).
    pub fn queue(&self) -> &RateLimitingQueue<String> {
        &self.queue
    }

    /// How many reconciles ended, and how (errors, panics, requeues); how many keys the
    /// handlers queued and how many updates a filter dropped.
    pub fn stats(&self) -> ControllerStats {
        self.counters.snapshot()
    }

    /// The counters, how long every reconcile has failed (if it has), and the last error of
    /// every key whose last reconcile failed: what a program without a logger can show.
    ///
    /// ```
    /// use std::time::Duration;
    /// use kube_informer::api::ApiResource;
    /// use kube_informer::cache::SharedInformerFactory;
    /// use kube_informer::controller::{Action, Controller};
    /// use kube_informer::Client;
    /// # let server = kube_informer::testing::ApiServer::start();
    /// let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    /// server.create(&cms, serde_json::json!({"metadata": {"name": "settings", "namespace": "lab"}})).unwrap();
    /// let factory = SharedInformerFactory::new(Client::new(server.client_config())?);
    /// let controller = Controller::builder("cms", factory.dynamic_informer(&cms))
    ///     .run(|_key: &str| -> Result<Action, String> { Err("forbidden: cannot patch".into()) })?;
    /// # let deadline = std::time::Instant::now() + Duration::from_secs(30);
    /// while controller.health().failing_keys.is_empty() {
    /// #   assert!(std::time::Instant::now() < deadline);
    ///     std::thread::sleep(Duration::from_millis(10));
    /// }
    /// let health = controller.health();
    /// assert_eq!(health.failing_keys[0].key, "lab/settings");
    /// assert_eq!(health.failing_keys[0].message, "forbidden: cannot patch");
    /// assert!(health.failing_for.is_some()); // no reconcile has succeeded yet
    /// controller.stop();
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn health(&self) -> ControllerHealth {
        self.counters.health(&self.name)
    }

    /// True when the workers may run: always without leader election, during a term with it.
    pub fn is_leader(&self) -> bool {
        self.elector.as_ref().is_none_or(LeaderElector::is_leader)
    }

    /// The work queue, shared (for the metrics' collectors).
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn shared_queue(&self) -> &Arc<RateLimitingQueue<String>> {
        &self.queue
    }

    /// The reconcile counters, shared (for the metrics' collectors).
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn counters(&self) -> &Arc<Counters> {
        &self.counters
    }

    /// Under a manager: starts a set of workers that end once `stop` is set and
    /// [`wake_workers`](Self::wake_workers) called. None otherwise.
    pub(crate) fn spawner(&self) -> Option<&Spawner> {
        self.spawner.as_ref()
    }

    /// Wakes this controller's idle workers to read their stop flags.
    pub(crate) fn wake_workers(&self) {
        self.queue.wake_all();
    }

    /// The leader election's elector, when the controller runs under one.
    pub fn elector(&self) -> Option<&LeaderElector> {
        self.elector.as_ref()
    }

    /// Stops the workers after the keys in hand and joins them (under leader election: ends
    /// the term and releases the lease); unregisters the handler.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(elector) = self.elector.take() {
            elector.stop();
        }
        self.stop.store(true, Ordering::SeqCst);
        self.queue.wake_all();
        if let Some(r) = self.registration.take() {
            self.informer.remove_event_handler(r);
        }
        for t in self.triggers.drain(..) {
            t.detach();
        }
        self.queue.shutdown();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

impl<K: Object> Drop for Controller<K> {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl<K: Object, E: std::fmt::Display + 'static> ControllerBuilder<K, E> {
    /// How many worker threads call reconcile (default 2).
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = n.max(1);
        self
    }

    /// How long to wait for the cache to sync before giving up (default 5 minutes).
    pub fn sync_timeout(mut self, timeout: Duration) -> Self {
        self.sync_timeout = timeout;
        self
    }

    /// The retry policy (default: client-go's default controller rate limiter).
    pub fn rate_limiter(mut self, limiter: Box<dyn RateLimiter<String>>) -> Self {
        self.rate_limiter = Some(limiter);
        self
    }

    /// Runs the workers only while this replica leads: an elector with `config` contends for
    /// the Lease through `client` once the cache has synced (see the module docs).
    pub fn leader_election(mut self, client: Client, config: LeaderElectionConfig) -> Self {
        self.election = Some((client, config));
        self
    }

    /// Leaves the workers to a [`Manager`](crate::manager::Manager), which starts them in its terms.
    pub(crate) fn managed(mut self) -> Self {
        self.managed = true;
        self
    }

    /// Under leader election, called with `true` when a term starts (before its workers
    /// start) and with `false` when it ends (after its workers stopped and were joined).
    pub fn on_leadership(mut self, f: impl Fn(bool) + Send + Sync + 'static) -> Self {
        self.on_leadership = Some(Arc::new(f));
        self
    }

    /// Runs the controller as one shard of a ring (see [`sharding`](super::sharding)): its
    /// workers run only while this replica holds its shard Lease (taken through `client`),
    /// and each key is reconciled only when the object is labelled with this shard (drained
    /// objects are handed back, not reconciled). Build the informers with
    /// [`ShardConfig::factory_options`](super::sharding::ShardConfig::factory_options) so
    /// that they cache only this shard's objects. Not combinable with
    /// [`leader_election`](Self::leader_election).
    ///
    /// What a sharded reconcile must know:
    /// - **It must return within `lease_duration - renew_deadline` of its term's end** (5 s
    ///   with the defaults, see
    ///   [`ShardConfig::renew_deadline`](super::sharding::ShardConfig::renew_deadline)):
    ///   reconciles in hand are finished, not interrupted, and past that margin another
    ///   shard may be given the object. A reconcile that outlives its term is logged.
    /// - **It is not called for deleted objects** (a key whose object is not in the shard's
    ///   cache is skipped): clean up with a [finalizer](crate::controller::finalizer()).
    /// - **Objects it creates may already exist** during a hand-over (the previous shard
    ///   created them): treat `AlreadyExists` as success and adopt them.
    /// - **Only the sharder changes the shard and drain labels**; other writers must leave
    ///   them alone.
    /// - Two processes with the same shard id at once are not supported.
    pub fn sharded(mut self, client: Client, shard: super::sharding::ShardConfig) -> Self {
        self.sharding = Some((client, shard));
        self
    }

    /// Judges the primary informer's updates with `filter`: an update it rejects is not
    /// queued (and is counted in [`ControllerStats::filtered`]). Adds, deletes (tombstones
    /// included) and resyncs always pass; a second call requires both filters. See
    /// [`EventFilter`] for the stock filters.
    ///
    /// ```
    /// use std::time::Duration;
    /// use kube_informer::api::ApiResource;
    /// use kube_informer::cache::SharedInformerFactory;
    /// use kube_informer::controller::{Action, Controller, EventFilter};
    /// use kube_informer::Client;
    /// # let server = kube_informer::testing::ApiServer::start();
    /// let deployments = ApiResource::new("apps", "v1", "Deployment", "deployments", true);
    /// server.create(&deployments, serde_json::json!({"metadata": {"name": "web", "namespace": "lab"},
    ///     "spec": {"replicas": 1}})).unwrap();
    /// let factory = SharedInformerFactory::new(Client::new(server.client_config())?);
    /// let (tx, rx) = crossbeam_channel::unbounded();
    /// let controller = Controller::builder("deployments", factory.dynamic_informer(&deployments))
    ///     // Our own status writes (no new generation) do not call us again.
    ///     .filter(EventFilter::generation_changed())
    ///     .run(move |key: &str| -> Result<Action, kube_informer::Error> {
    ///         tx.send(key.to_owned()).ok();
    ///         Ok(Action::Done)
    ///     })?;
    /// assert_eq!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), "lab/web"); // the add
    /// server.patch(&deployments, Some("lab"), "web", &serde_json::json!({"status": {"replicas": 1}})).unwrap();
    /// server.patch(&deployments, Some("lab"), "web", &serde_json::json!({"spec": {"replicas": 2}})).unwrap();
    /// assert_eq!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), "lab/web"); // the spec change
    /// # let deadline = std::time::Instant::now() + Duration::from_secs(30);
    /// # while controller.stats().filtered < 1 { assert!(std::time::Instant::now() < deadline); std::thread::sleep(Duration::from_millis(10)); }
    /// assert_eq!(controller.stats().filtered, 1); // the status write
    /// controller.stop();
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn filter(mut self, filter: EventFilter<K>) -> Self {
        self.filter = Some(match self.filter.take() {
            Some(first) => first.and(filter),
            None => filter,
        });
        self
    }

    /// Also reconciles the owner of every object of `informer` whose controller (the
    /// `ownerReferences` entry with `controller: true`) is of the primary resource's kind and
    /// API group: its key is `namespace/name` (the owned object's namespace) or `name` for a
    /// cluster-scoped primary. Adds, updates (old and new owner) and deletions, tombstones
    /// included, trigger it; see [owned objects and other triggers](crate::controller#owned-objects-and-other-triggers).
    ///
    /// Pass a shared informer (from the factory the rest of the program uses, so nothing is
    /// listed twice): the controller registers a handler on it, starts it if needed, waits
    /// for it to sync before the workers start, and removes the handler on stop.
    ///
    /// The informer caches what it is scoped to, owned or not: from a factory with default
    /// options that is **every object of that resource in the cluster** (`owns` of
    /// ConfigMaps caches every ConfigMap). Scope it before asking for it, e.g. to a label
    /// your reconcile sets on what it creates:
    /// `factory.set_scope(&configmaps, InformerScope::new().label_selector("app.kubernetes.io/managed-by=my-controller"))?`
    /// (see [`SharedInformerFactory::set_scope`](crate::cache::SharedInformerFactory::set_scope)),
    /// or the whole factory to a namespace ([`FactoryOptions`](crate::cache::FactoryOptions)).
    ///
    /// ```
    /// use std::time::Duration;
    /// use kube_informer::api::{ApiResource, DynamicObject};
    /// use kube_informer::cache::SharedInformerFactory;
    /// use kube_informer::controller::{Action, Controller};
    /// use kube_informer::Client;
    /// # let server = kube_informer::testing::ApiServer::start();
    /// let deployments = ApiResource::new("apps", "v1", "Deployment", "deployments", true);
    /// let replicasets = ApiResource::new("apps", "v1", "ReplicaSet", "replicasets", true);
    /// # server.create(&deployments, serde_json::json!({"metadata": {"name": "web", "namespace": "lab"}})).unwrap();
    /// let factory = SharedInformerFactory::new(Client::new(server.client_config())?);
    /// let (tx, rx) = crossbeam_channel::unbounded();
    /// let controller = Controller::builder("deployments", factory.dynamic_informer(&deployments))
    ///     .owns(factory.dynamic_informer(&replicasets))
    ///     .run(move |key: &str| -> Result<Action, kube_informer::Error> {
    ///         tx.send(key.to_owned()).ok();
    ///         Ok(Action::Done)
    ///     })?;
    /// assert_eq!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), "lab/web"); // the initial list
    /// // A ReplicaSet whose controller is the Deployment: its creation reconciles `lab/web`
    /// // (matched by kind, group and name; the uid is not compared).
    /// server.create(&replicasets, serde_json::json!({"metadata": {"name": "web-1", "namespace": "lab",
    ///     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
    ///                          "uid": "d-1", "controller": true}]}})).unwrap();
    /// assert_eq!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), "lab/web");
    /// controller.stop();
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn owns<C: Object>(mut self, informer: SharedIndexInformer<C>) -> Self {
        let primary = self.informer.resource().clone();
        self.triggers
            .push(Box::new(Source::owned(informer, &primary, None)));
        self
    }

    /// [`owns`](Self::owns), with the owned objects' updates judged by `filter` first (adds,
    /// deletes and resyncs always pass; see [`EventFilter`]). For example
    /// `EventFilter::generation_changed()` on owned Deployments skips their status updates;
    /// an update the filter drops does not reconcile the owner, even when it changed the
    /// owner reference.
    pub fn owns_filtered<C: Object>(
        mut self,
        informer: SharedIndexInformer<C>,
        filter: EventFilter<C>,
    ) -> Self {
        let primary = self.informer.resource().clone();
        self.triggers
            .push(Box::new(Source::owned(informer, &primary, Some(filter))));
        self
    }

    /// Also reconciles the primary keys `mapper` returns for every object of `informer` that
    /// is added, updated (the keys of the old and of the new object) or deleted (tombstones
    /// included). Keys are `namespace/name`, or `name` for a cluster-scoped primary. The
    /// mapper runs on the informer's handler thread: keep it quick (read a
    /// [`Lister`](crate::cache::Lister), not the API server); a panic in it is caught and
    /// counted on that handler like any handler panic.
    ///
    /// The informer is shared, started, waited for and its handler removed as with
    /// [`owns`](Self::owns).
    ///
    /// ```
    /// use std::time::Duration;
    /// use kube_informer::api::{ApiResource, DynamicObject};
    /// use kube_informer::cache::SharedInformerFactory;
    /// use kube_informer::controller::{Action, Controller};
    /// use kube_informer::Client;
    /// # let server = kube_informer::testing::ApiServer::start();
    /// let apps = ApiResource::new("example.com", "v1", "App", "apps", true);
    /// let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    /// # server.create(&apps, serde_json::json!({"metadata": {"name": "shop", "namespace": "lab"}})).unwrap();
    /// let factory = SharedInformerFactory::new(Client::new(server.client_config())?);
    /// let (tx, rx) = crossbeam_channel::unbounded();
    /// let controller = Controller::builder("apps", factory.dynamic_informer(&apps))
    ///     // A ConfigMap labelled `app=NAME` configures the App NAME of its namespace.
    ///     .watches(factory.dynamic_informer(&cms), |cm: &DynamicObject| {
    ///         cm.metadata.label("app").map(|app| format!("{}/{app}", cm.metadata.namespace()))
    ///     })
    ///     .run(move |key: &str| -> Result<Action, kube_informer::Error> {
    ///         tx.send(key.to_owned()).ok();
    ///         Ok(Action::Done)
    ///     })?;
    /// assert_eq!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), "lab/shop");
    /// server.create(&cms, serde_json::json!({"metadata": {"name": "shop-settings", "namespace": "lab",
    ///     "labels": {"app": "shop"}}})).unwrap();
    /// assert_eq!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), "lab/shop");
    /// controller.stop();
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn watches<C: Object, I>(
        mut self,
        informer: SharedIndexInformer<C>,
        mapper: impl Fn(&C) -> I + Send + 'static,
    ) -> Self
    where
        I: IntoIterator<Item = String>,
    {
        let mapper = move |o: &C| mapper(o).into_iter().collect();
        self.triggers
            .push(Box::new(Source::new(informer, Box::new(mapper), None)));
        self
    }

    /// [`watches`](Self::watches), with the objects' updates judged by `filter` before
    /// `mapper` runs (adds, deletes and resyncs always pass; see [`EventFilter`]).
    pub fn watches_filtered<C: Object, I>(
        mut self,
        informer: SharedIndexInformer<C>,
        filter: EventFilter<C>,
        mapper: impl Fn(&C) -> I + Send + 'static,
    ) -> Self
    where
        I: IntoIterator<Item = String>,
    {
        let mapper = move |o: &C| mapper(o).into_iter().collect();
        self.triggers.push(Box::new(Source::new(
            informer,
            Box::new(mapper),
            Some(filter),
        )));
        self
    }

    /// Starts the informer (if not yet) and those of [`owns`](Self::owns) and
    /// [`watches`](Self::watches), waits for their caches to sync, then starts the workers
    /// calling `reconcile` with each key (under leader election: starts the elector, which
    /// starts them in each term).
    pub fn run(
        self,
        reconcile: impl Fn(&str) -> std::result::Result<Action, E> + Send + Sync + 'static,
    ) -> Result<Controller<K>> {
        let queue = match self.rate_limiter {
            Some(l) => RateLimitingQueue::with_rate_limiter(&self.name, l),
            None => RateLimitingQueue::new(&self.name),
        };
        let queue = Arc::new(queue.map_err(|e| {
            Error::Config(format!("controller {}: starting its queue: {e}", self.name))
        })?);
        let counters = Arc::new(Counters::default());
        let sink = Sink {
            queue: Arc::clone(&queue),
            counters: Arc::clone(&counters),
        };
        let registration = self.informer.add_event_handler(Primary {
            sink: sink.clone(),
            filter: self.filter,
        })?;
        self.informer.start()?;
        let mut controller = Controller {
            name: self.name.clone(),
            queue: Arc::clone(&queue),
            stop: Arc::new(AtomicBool::new(false)),
            workers: Vec::new(),
            registration: Some(registration),
            informer: self.informer.clone(),
            triggers: Vec::new(),
            counters,
            elector: None,
            spawner: None,
        };
        for trigger in self.triggers {
            // On an error, dropping `controller` removes the handlers registered so far.
            controller.triggers.push(trigger.attach(sink.clone())?);
        }
        let deadline = crate::deadline::after(self.sync_timeout);
        let left = || deadline.saturating_duration_since(std::time::Instant::now());
        let primary_synced = controller
            .registration
            .as_ref()
            .is_some_and(|r| r.wait_for_sync(left()));
        let unsynced = if primary_synced {
            controller
                .triggers
                .iter()
                .find(|t| !t.wait_for_sync(left()))
                .map(|t| t.name().to_owned())
        } else {
            Some(self.informer.name().to_owned())
        };
        if let Some(name) = unsynced {
            return Err(Error::Config(format!(
                "controller {}: the cache of {name} did not sync within {:?}",
                self.name, self.sync_timeout
            )));
        }
        let mut reconcile: Reconcile<E> = Arc::new(reconcile);
        let (mut election, on_leadership) = (self.election, self.on_leadership);
        let mut on_term = None;
        if self.managed && self.sharding.is_some() {
            // A shard's workers run in the terms of its own shard Lease; a Manager's terms
            // (or none) would run them regardless.
            return Err(Error::InvalidInput(format!(
                "controller {}: a sharded controller runs on its own shard Lease, not under a Manager",
                self.name
            )));
        }
        if let Some((client, shard)) = self.sharding {
            if election.is_some() {
                return Err(Error::InvalidInput(format!(
                    "controller {}: sharded and leader_election cannot be combined",
                    self.name
                )));
            }
            let (gated, hook, config) =
                super::sharding::bind(client.clone(), &shard, &self.informer, reconcile)?;
            (reconcile, on_term) = (gated, Some(hook));
            election = Some((client, config));
        }
        let workers = Workers {
            name: self.name.clone(),
            count: self.workers,
            queue: Arc::clone(&queue),
            reconcile,
            counters: Arc::clone(&controller.counters),
        };
        // Under a manager, the manager's election (if any) governs the workers.
        let election = if self.managed { None } else { election };
        match election {
            None if self.managed => {
                controller.spawner =
                    Some(Arc::new(move |stop: &Arc<AtomicBool>| workers.spawn(stop)));
            }
            None => {
                controller.workers = workers.spawn(&controller.stop)?;
            }
            Some((client, config)) => {
                let callbacks = LeaderCallbacks::new(move |term: &Term| {
                    if let Some(f) = &on_term {
                        f(term);
                    }
                    workers.run_term(term, on_leadership.as_ref());
                });
                controller.elector = Some(LeaderElector::start(client, config, callbacks)?);
            }
        }
        Ok(controller)
    }
}

/// What starts a set of workers.
struct Workers<E> {
    name: String,
    count: usize,
    queue: Arc<RateLimitingQueue<String>>,
    reconcile: Reconcile<E>,
    counters: Arc<Counters>,
}

impl<E: std::fmt::Display + 'static> Workers<E> {
    /// Starts the workers; they end once `stop` is set and the queue woken.
    fn spawn(&self, stop: &Arc<AtomicBool>) -> Result<Vec<JoinHandle<()>>> {
        let mut handles = Vec::with_capacity(self.count);
        for i in 0..self.count {
            let (queue, flag, reconcile, name, counters) = (
                Arc::clone(&self.queue),
                Arc::clone(stop),
                Arc::clone(&self.reconcile),
                self.name.clone(),
                Arc::clone(&self.counters),
            );
            let spawned = std::thread::Builder::new()
                .name(crate::thread_name::thread_name(
                    &self.name,
                    &format!("wrk{i}"),
                ))
                .spawn(move || work(&name, &queue, &flag, &reconcile, &counters));
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    stop.store(true, Ordering::SeqCst);
                    self.queue.wake_all();
                    for h in handles {
                        let _ = h.join();
                    }
                    return Err(Error::Config(format!("spawning a worker: {e}")));
                }
            }
        }
        Ok(handles)
    }

    /// One term: workers from its start until its stop signal, then joined.
    fn run_term(&self, term: &Term, on_leadership: Option<&OnLeadership>) {
        let stop = Arc::new(AtomicBool::new(false));
        if let Some(f) = on_leadership {
            f(true);
        }
        let handles = match self.spawn(&stop) {
            Ok(h) => h,
            Err(e) => {
                log::error!("controller {}: term {}: {e}", self.name, term.number());
                Vec::new()
            }
        };
        term.wait();
        stop.store(true, Ordering::SeqCst);
        self.queue.wake_all();
        for h in handles {
            let _ = h.join();
        }
        if let Some(f) = on_leadership {
            f(false);
        }
    }
}

fn work<E: std::fmt::Display>(
    name: &str,
    queue: &RateLimitingQueue<String>,
    stop: &AtomicBool,
    reconcile: &Reconcile<E>,
    counters: &Counters,
) {
    while !stop.load(Ordering::SeqCst) {
        let Some(key) = queue.get_unless(stop) else {
            return;
        };
        // The error is turned into text inside the guard too: a panicking `Display` is
        // caught like a panicking reconcile. Whatever happens, `done` follows, so no key
        // stays in `processing` (and one re-added meanwhile is queued again by `done`).
        let reconciling = counters.begin();
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            reconcile(&key).map_err(|e| e.to_string())
        }));
        let counted = match outcome {
            Ok(Ok(Action::Done)) => {
                queue.forget(&key);
                Outcome::Done
            }
            Ok(Ok(Action::RequeueAfter(d))) => {
                queue.forget(&key);
                queue.add_after(key.clone(), d);
                Outcome::Requeue
            }
            Ok(Err(e)) => {
                log::warn!(
                    "controller {name}: reconciling {key} failed (retry {}): {e}",
                    queue.num_requeues(&key) + 1
                );
                queue.add_rate_limited(key.clone());
                Outcome::Error(e)
            }
            Err(payload) => {
                let message = panic_message(payload.as_ref());
                log::error!(
                    "controller {name}: reconciling {key} panicked (retry {}): {message}",
                    queue.num_requeues(&key) + 1
                );
                queue.add_rate_limited(key.clone());
                Outcome::Panic(message)
            }
        };
        reconciling.end(&key, counted);
        queue.done(&key);
    }
}

/// A panic's message, when it is text (`panic!("...")` with or without arguments).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        format!("panicked: {s}")
    } else if let Some(s) = payload.downcast_ref::<String>() {
        format!("panicked: {s}")
    } else {
        "panicked (no message)".to_owned()
    }
}
