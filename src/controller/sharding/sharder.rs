//! `Sharder`: decides which shard each object belongs to and writes it into the object's
//! shard label, one replica at a time.
//!
//! Why a separate role: shards must never decide about each other's objects (two deciders
//! would need a consensus of their own). One decider, elected with the crate's leader
//! election on the Lease `<ring>-sharder`, watches the shard Leases (to know who is live)
//! and the metadata of the sharded objects and of the objects they own (to know where each
//! one is), and acts by the rules of [`handover`](super::handover). Every replica of a
//! sharded controller runs a `Sharder`; only the leader's acts, so the sharder fails over
//! with the leader election.
//!
//! # What it watches, and what that costs
//!
//! Its informers exist only during its leader's terms (started when a term starts, stopped
//! when it ends), so only one replica pays for them: a metadata-only informer
//! ([`PartialObjectMetadata`]) of the sharded resource and of each owned resource, and an
//! informer of the ring's shard Leases. (timebertt's design replaced the sharder's watches
//! of the objects by a mutating webhook in its second iteration, to make its cost
//! independent of the number of objects; a library without a webhook server of its own
//! keeps the metadata-only watch, as that design's first iteration did.)
//!
//! # When it acts
//!
//! - On every change of a sharded or owned object (new objects are assigned within the
//!   time it takes its watch to deliver the event and one PATCH to land).
//! - When the set of live shards changes (a Lease acquired, released, or expired by its own
//!   clock): every object is looked at again.
//! - Every [`SharderConfig::resync`] (default 10 s), every object again, so that writes that
//!   failed (a stale cache, a network error) are retried.
//!
//! Writes that fail are retried after a second. Objects owned by a sharded object (the
//! `ownerReferences` entry with `controller: true` naming the sharded resource's kind) get
//! their owner's shard label: before their owner when it is assigned or moved, so that its
//! new shard usually has them cached when it first reconciles the owner. Owned objects are
//! not handed over (shards do not reconcile them, they only cache them).
//!
//! # Objects deleted and created again
//!
//! A shard may still cache an object after it was deleted (its watch lags), and reconcile
//! its name. If an object of the same name is then created and assigned to another shard,
//! the two would reconcile one name at once. So the sharder keeps a *tombstone* for every
//! object that goes away while labelled with a shard (a delete event, a relist that shows
//! another UID under the name, or the sharder's own assignment the watch has not shown
//! yet): name -> shard. A recreated name goes back to that shard first (then it is drained
//! normally), or, if that shard is not live, the shard is fenced (and proven stopped)
//! before the name is assigned elsewhere. Tombstones go when the name is assigned again and
//! when their shard is proven stopped (its next term confirms every object by UID); beyond
//! 100 000 the oldest are forgotten, with a warning.
//!
//! # Shard labels removed by hand
//!
//! An object whose shard label someone removes (`kubectl label`, a script "cleaning up"),
//! with or without its drain label, mid-drain or not, has not been let go by its shard: that
//! shard may be inside a reconcile of it, or still cache it as its own. So the sharder
//! treats the removal as a move from that shard, never as a new object: its watch shows the
//! change (the informer's old object carries the label, or the sharder's own write the watch
//! has not shown yet does), and the same tombstone as for a delete is left
//! ([`handover::held_by`]): the object goes back to that shard and is drained from there, or
//! the shard is fenced and proven stopped before it is assigned elsewhere. A shard's own
//! acknowledgement is told apart by its drain label, which it leaves saying `acknowledged`.
//! A new sharder leader that did not see the removal (it happened before its list) relies
//! on its hold, as for deletions (below).
//!
//! A new sharder leader has no tombstones: what was deleted (or unlabelled by hand) before
//! its watch started is unknown to it. It therefore assigns nothing during its first
//! [`fence_duration`](SharderConfig::fence_duration), and relies on every live shard's watch
//! having delivered, within that time, the deletions and label removals made before the new
//! leader started, and on the reconciles those shards had in hand of such objects having
//! returned (the same kind of assumption as the leader election's: requests and events land
//! within the margin, reconciles return within it). Drains and moves off dead shards are
//! not held.
//!
//! # Limits
//!
//! - Only the sharder writes the shard label and the drain label's `"true"` (shards only
//!   acknowledge: they remove the shard label and mark the drain label `acknowledged`). A
//!   shard label removed by a third party is handled (above); a third party writing a shard
//!   label, or `acknowledged`, can break the hand-over.
//! - An object that stops matching [`SharderConfig::selector`] while assigned is forgotten
//!   by the sharder (it keeps its labels and its shard; nothing moves it any more). Remove
//!   the shard label yourself if it should leave the ring.
//! - A shard whose Lease someone deletes or overwrites loses its objects (one lease duration
//!   after the sharder fenced the Lease) and gets its share back through drains once it
//!   holds its Lease again. A Lease whose holder someone blanks by hand counts as released,
//!   and a fence the sharder holds is trusted like a leader's Lease: deleting or
//!   overwriting it while the sharder moves objects under it can let the shard back early.
//! - The sharder must not be paused (a stopped process, a GC pause) longer than its own
//!   leader election's margin while it acts: like any leader, a paused old sharder can
//!   write after a new one took over (its writes are still compare-and-swaps on what it
//!   read).
//! - A drained object whose shard never acknowledges waits (the shard is live, so its
//!   objects stay); after twice the fence duration this is logged once.
//! - The sharder makes one PATCH per assignment and two per hand-over (plus the shard's
//!   acknowledgement), one at a time: give its client a rate limit that suits the size of
//!   the ring (`ClientConfig::qps`).
//! - An object created without the shard label is not reconciled until the sharder labels
//!   it (a shard cannot see it). Objects a shard creates (owned objects) should carry the
//!   shard's label ([`ShardConfig::label`](super::ShardConfig::label)) so that they are in
//!   its cache at once.
//! - A deleted shard Lease whose shard is gone leaves that shard's objects to be fenced
//!   through a Lease the sharder creates (and moved one fence duration later).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::assignment::{shard_for, HashKey};
use super::handover::{self, Step};
use super::membership::{shard_of, Observations, ShardState};
use super::ring::Ring;
use crate::api::{ApiResource, PartialObjectMetadata};
use crate::cache::{
    DeletedObject, EventHandler, IndexFn, InformerConfig, ReflectorConfig, SharedIndexInformer,
};
use crate::client::{Api, Client, Patch, PatchOperation, PatchParams, PostParams};
use crate::controller::triggers::OwnerKind;
use crate::controller::{
    LeaderCallbacks, LeaderElectionConfig, LeaderElector, Lease, LeaseSpec, MicroTime, Term,
};
use crate::error::{Error, Result};

/// Something the sharder did, for logs and demos ([`SharderConfig::on_event`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShardingEvent {
    /// The live shards changed (sorted).
    Membership {
        /// The live shards now.
        live: Vec<String>,
    },
    /// An unassigned object was assigned.
    Assigned {
        /// `namespace/name`.
        key: String,
        /// Its shard.
        shard: String,
    },
    /// An object on a live shard was asked to move: its shard must acknowledge first.
    Draining {
        /// `namespace/name`.
        key: String,
        /// The shard it is on.
        from: String,
        /// Where it will go once acknowledged (if that is still its target then).
        to: String,
    },
    /// An object was moved off a shard that is not live (fenced).
    Moved {
        /// `namespace/name`.
        key: String,
        /// The dead or departed shard.
        from: String,
        /// Its new shard (`None`: no shard is live; it is unassigned).
        to: Option<String>,
    },
    /// A shard's Lease was fenced: it cannot come back until released.
    Fenced {
        /// The shard.
        shard: String,
    },
    /// A fence was released: the shard has no objects left.
    Unfenced {
        /// The shard.
        shard: String,
    },
}

type OnEvent = Arc<dyn Fn(&ShardingEvent) + Send + Sync>;

/// What a [`Sharder`] shards, and how.
#[derive(Clone)]
pub struct SharderConfig {
    ring: Ring,
    resource: ApiResource,
    owned: Vec<ApiResource>,
    hash_key: HashKey,
    namespace: Option<String>,
    selector: Option<String>,
    election: LeaderElectionConfig,
    fence_duration: Duration,
    resync: Duration,
    on_event: Option<OnEvent>,
}

impl std::fmt::Debug for SharderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharderConfig")
            .field("ring", &self.ring)
            .field("resource", &self.resource.plural)
            .field("owned", &self.owned.len())
            .field("hash_key", &self.hash_key)
            .field("election", &self.election)
            .finish_non_exhaustive()
    }
}

impl SharderConfig {
    /// Shards `resource` over the live shards of `ring`; this replica contends for the
    /// sharder's leadership (the Lease `<ring>-sharder` in the ring's namespace) as
    /// `identity` (unique among the replicas, e.g. the pod name), with client-go's
    /// timings.
    pub fn new(ring: Ring, resource: &ApiResource, identity: &str) -> Self {
        let election = LeaderElectionConfig::new(ring.namespace(), &ring.sharder_lease(), identity);
        SharderConfig {
            ring,
            resource: resource.clone(),
            owned: Vec::new(),
            hash_key: HashKey::Object,
            namespace: None,
            selector: None,
            election,
            fence_duration: Duration::from_secs(15),
            resync: Duration::from_secs(10),
            on_event: None,
        }
    }

    /// Also labels the objects of `resource` whose controller is a sharded object, with
    /// their owner's shard (what [`ControllerBuilder::owns`](crate::controller::ControllerBuilder::owns)
    /// watches).
    pub fn owns(mut self, resource: &ApiResource) -> Self {
        self.owned.push(resource.clone());
        self
    }

    /// What objects are hashed by (default [`HashKey::Object`]).
    pub fn hash_key(mut self, key: HashKey) -> Self {
        self.hash_key = key;
        self
    }

    /// Shards only the objects of one namespace (default: all namespaces).
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = Some(namespace.to_owned());
        self
    }

    /// Shards only the objects matching a label selector (default: all); owned objects are
    /// labelled whatever their labels.
    pub fn selector(mut self, label_selector: &str) -> Self {
        self.selector = Some(label_selector.to_owned());
        self
    }

    /// Replaces the sharder's leader election settings (Lease, identity, timings).
    pub fn leader_election(mut self, config: LeaderElectionConfig) -> Self {
        self.election = config;
        self
    }

    /// How long a fence keeps a shard out (default 15 s); the sharder moves objects during
    /// its first half and renews it if it needs longer.
    ///
    /// Give it at least the shards' [lease duration](super::ShardConfig::lease_duration):
    /// it is also the least the sharder waits, after fencing a Lease that proves nothing
    /// (deleted, nonsense, held by someone else), before moving that shard's objects, and how
    /// long a new sharder leader holds assignments (see the module docs).
    pub fn fence_duration(mut self, d: Duration) -> Self {
        self.fence_duration = d;
        self
    }

    /// How often every object is looked at again (default 10 s).
    pub fn resync(mut self, d: Duration) -> Self {
        self.resync = d;
        self
    }

    /// Called (on the sharder's thread: keep it quick) with everything the sharder does.
    pub fn on_event(mut self, f: impl Fn(&ShardingEvent) + Send + Sync + 'static) -> Self {
        self.on_event = Some(Arc::new(f));
        self
    }

    fn validate(&self) -> Result<()> {
        if self.fence_duration < Duration::from_secs(1) || self.resync.is_zero() {
            return Err(Error::InvalidInput(
                "sharder: the fence duration must be at least 1 s and the resync positive".into(),
            ));
        }
        self.election.validate()
    }
}

/// A running sharder (see the module docs); [`stop`](Self::stop) or dropping it ends it.
pub struct Sharder {
    elector: LeaderElector,
}

impl std::fmt::Debug for Sharder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sharder")
            .field("elector", &self.elector)
            .finish()
    }
}

impl Sharder {
    /// Starts contending for the sharder's leadership; while this replica leads, it shards.
    ///
    /// ```
    /// use std::time::Duration;
    /// use kube_informer::api::ApiResource;
    /// use kube_informer::controller::sharding::{Ring, Sharder, SharderConfig};
    /// use kube_informer::Client;
    /// let server = kube_informer::testing::ApiServer::start();
    /// let client = Client::new(server.client_config())?;
    /// let widgets = ApiResource::new("example.com", "v1", "Widget", "widgets", true);
    /// let ring = Ring::new("widgets", "default")?;
    /// let sharder = Sharder::start(client, SharderConfig::new(ring, &widgets, "replica-a"))?;
    /// while !sharder.is_leader() {
    ///     std::thread::sleep(Duration::from_millis(20));
    /// }
    /// sharder.stop();
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn start(client: Client, config: SharderConfig) -> Result<Sharder> {
        config.validate()?;
        let election = config.election.clone();
        let config = Arc::new(config);
        let term_client = client.clone();
        let callbacks = LeaderCallbacks::new(move |term: &Term| {
            let client = term_client.with_cancel(term.cancel_token().clone());
            Leader::new(client, Arc::clone(&config), term).run();
        });
        let elector = LeaderElector::start(client, election, callbacks)?;
        Ok(Sharder { elector })
    }

    /// True while this replica's sharder leads (and so acts).
    pub fn is_leader(&self) -> bool {
        self.elector.is_leader()
    }

    /// The sharder's leader election.
    pub fn elector(&self) -> &LeaderElector {
        &self.elector
    }

    /// Ends the term (the sharder's informers stop), releases its Lease and joins its
    /// threads.
    pub fn stop(self) {
        self.elector.stop();
    }
}

/// Name of the owned informers' index: the key of an object's owner.
const OWNER_INDEX: &str = "sharding-owner";

/// What the informers' handlers tell the sharder's loop.
#[derive(Default)]
struct Dirty {
    objects: HashSet<String>,
    /// (owned resource index, key)
    owned: HashSet<(usize, String)>,
    leases: bool,
}

struct Wake {
    dirty: Mutex<Dirty>,
    tx: crossbeam_channel::Sender<()>,
}

impl Wake {
    fn mark(&self, f: impl FnOnce(&mut Dirty)) {
        f(&mut self.dirty.lock());
        let _ = self.tx.try_send(());
    }
}

struct ObjectHandler {
    wake: Arc<Wake>,
    owned: Option<usize>,
    /// For the sharded objects: what is remembered of deleted ones (and the shard and drain
    /// label keys).
    incarnations: Option<(Arc<Mutex<Incarnations>>, Labels)>,
}

/// The ring's shard and drain label keys.
#[derive(Clone)]
struct Labels {
    shard: String,
    drain: String,
}

/// The most tombstones kept (beyond it the oldest are forgotten, with a warning).
const MAX_TOMBSTONES: usize = 100_000;

/// What the sharder remembers of objects deleted (see "Objects deleted and created again").
#[derive(Default)]
struct Incarnations {
    /// key -> the shard an earlier object of that name was on when it went away, and when.
    tombs: HashMap<String, (String, Instant)>,
    /// key -> (uid, shard) of the sharder's own last write, until its watch shows a label.
    written: HashMap<String, (String, String)>,
    warned: bool,
}

fn uid_of(o: &PartialObjectMetadata) -> &str {
    o.metadata.uid.as_deref().unwrap_or("")
}

impl Incarnations {
    /// The shard `old` was on as far as the sharder knows: its own write when the watch has
    /// not shown it yet (at least as new as what the watch showed), else `old`'s label.
    fn last_shard(&mut self, old: &PartialObjectMetadata, shard_label: &str) -> Option<String> {
        let written = self
            .written
            .remove(&old.metadata.key())
            .filter(|(uid, _)| uid == uid_of(old))
            .map(|(_, s)| s);
        written.or_else(|| {
            old.metadata
                .label(shard_label)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        })
    }

    /// `old` went away (deleted, or replaced by another object of its name).
    fn gone(&mut self, old: &PartialObjectMetadata, labels: &Labels) {
        let before = self.last_shard(old, &labels.shard);
        if let Some(shard) = handover::held_by(before.as_deref(), false, None, None) {
            let shard = shard.to_owned();
            self.bury(old.metadata.key(), shard);
        }
    }

    /// The same object changed from `old` to `new`: a shard label gone without its shard's
    /// acknowledgement (removed by hand) leaves a tombstone, as a delete does (see
    /// [`handover::held_by`]).
    fn changed(
        &mut self,
        old: &PartialObjectMetadata,
        new: &PartialObjectMetadata,
        labels: &Labels,
    ) {
        let after = new.metadata.label(&labels.shard).filter(|s| !s.is_empty());
        if after.is_some() {
            return; // the watch shows a label: `seen` settles the sharder's own write
        }
        let before = self.last_shard(old, &labels.shard);
        let drain = new.metadata.label(&labels.drain);
        if let Some(shard) = handover::held_by(before.as_deref(), true, after, drain) {
            log::info!(
                "sharder: the shard label of {} was removed while it was on {shard}, \
                 without its acknowledgement (by hand?): it goes back to {shard} first",
                new.metadata.key()
            );
            let shard = shard.to_owned();
            self.bury(new.metadata.key(), shard);
        }
    }

    /// Remembers that `shard` may still hold the name `key`.
    fn bury(&mut self, key: String, shard: String) {
        if self.tombs.len() >= MAX_TOMBSTONES && !self.tombs.contains_key(&key) {
            if !self.warned {
                log::warn!(
                    "sharder: more than {MAX_TOMBSTONES} objects deleted (or unlabelled by hand) \
                     while on live shards; forgetting the oldest (a name created again may then reach another shard \
                     before its old shard's watch saw the delete)"
                );
                self.warned = true;
            }
            let oldest = self
                .tombs
                .iter()
                .min_by_key(|(_, (_, at))| *at)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                self.tombs.remove(&k);
            }
        }
        self.tombs.insert(key, (shard, Instant::now()));
    }

    /// The watch shows `new`: the sharder's own write is no longer needed once the watch
    /// shows what it wrote.
    fn seen(&mut self, new: &PartialObjectMetadata, shard_label: &str) {
        let key = new.metadata.key();
        let shown = self.written.get(&key).is_some_and(|(uid, shard)| {
            uid == uid_of(new) && new.metadata.label(shard_label) == Some(shard.as_str())
        });
        if shown {
            self.written.remove(&key);
        }
    }
}

impl ObjectHandler {
    fn touch(&self, key: String) {
        match self.owned {
            None => self.wake.mark(|d| {
                d.objects.insert(key);
            }),
            Some(i) => self.wake.mark(|d| {
                d.owned.insert((i, key));
            }),
        }
    }
}

impl EventHandler<PartialObjectMetadata> for ObjectHandler {
    fn on_add(&mut self, obj: Arc<PartialObjectMetadata>, _initial: bool) {
        if let Some((inc, labels)) = &self.incarnations {
            inc.lock().seen(&obj, &labels.shard);
        }
        self.touch(obj.metadata.key());
    }
    fn on_update(&mut self, old: Arc<PartialObjectMetadata>, new: Arc<PartialObjectMetadata>) {
        if let Some((inc, labels)) = &self.incarnations {
            let mut inc = inc.lock();
            // A relist shows another object under the name: the old one was deleted.
            if uid_of(&old) != uid_of(&new) {
                inc.gone(&old, labels);
            } else {
                inc.changed(&old, &new, labels);
            }
            inc.seen(&new, &labels.shard);
        }
        self.touch(new.metadata.key());
    }
    fn on_delete(&mut self, obj: DeletedObject<PartialObjectMetadata>) {
        if let Some((inc, labels)) = &self.incarnations {
            inc.lock().gone(obj.object(), labels);
        }
        // A deleted object's shard may now have nothing left (a fence to release).
        self.wake.mark(|d| d.leases = true);
    }
}

struct LeaseHandler {
    wake: Arc<Wake>,
    observations: Arc<Mutex<Observations>>,
    ring: Ring,
}

impl LeaseHandler {
    fn observe(&self, lease: &Lease) {
        let mut observations = self.observations.lock();
        observations.observe(lease, Instant::now());
        if let Some(shard) = shard_of(lease, &self.ring) {
            observations.observe_duration(lease, shard);
        }
    }
}

impl EventHandler<Lease> for LeaseHandler {
    fn on_add(&mut self, obj: Arc<Lease>, _initial: bool) {
        self.observe(&obj);
        self.wake.mark(|d| d.leases = true);
    }
    fn on_update(&mut self, _old: Arc<Lease>, new: Arc<Lease>) {
        self.observe(&new);
        self.wake.mark(|d| d.leases = true);
    }
    fn on_delete(&mut self, obj: DeletedObject<Lease>) {
        self.observations
            .lock()
            .forget(obj.object().metadata.name());
        self.wake.mark(|d| d.leases = true);
    }
}

/// A fence this sharder holds on a shard's Lease.
struct Fence {
    /// The record as written (its `resourceVersion` guards the renewal and the release).
    record: Lease,
    /// When the write that holds it was sent: moves are allowed until half its duration.
    sent: Instant,
    /// From when it proves the shard stopped: at once over an expired or released record,
    /// a lease duration after the first fence write returned otherwise.
    ready_at: Instant,
    /// The `resourceVersion` of the record the first fence replaced (if any), and those of
    /// every record this fence wrote: what the watch may show meanwhile.
    known: HashSet<String>,
}

/// The sharder during one term.
struct Leader<'t> {
    client: Client,
    config: Arc<SharderConfig>,
    term: &'t Term,
    shard_label: String,
    drain_label: String,
    fence_holder: String,
    objects: SharedIndexInformer<PartialObjectMetadata>,
    owned: Vec<(SharedIndexInformer<PartialObjectMetadata>, OwnerKind)>,
    leases: SharedIndexInformer<Lease>,
    observations: Arc<Mutex<Observations>>,
    wake: Arc<Wake>,
    rx: crossbeam_channel::Receiver<()>,
    live: Vec<String>,
    fences: HashMap<String, Fence>,
    retry: HashSet<String>,
    retry_owned: HashSet<(usize, String)>,
    incarnations: Arc<Mutex<Incarnations>>,
    /// A new leader assigns nothing before this instant (see "Objects deleted and created
    /// again").
    hold_until: Instant,
    /// Whether an assignment waited for the hold (a full pass follows it).
    held: bool,
    /// Drained objects whose shard has not acknowledged yet, since when, and whether that
    /// was logged.
    waiting: HashMap<String, (Instant, bool)>,
}

impl<'t> Leader<'t> {
    fn new(client: Client, config: Arc<SharderConfig>, term: &'t Term) -> Self {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let wake = Arc::new(Wake {
            dirty: Mutex::new(Dirty::default()),
            tx,
        });
        let ring = config.ring.clone();
        let metadata_informer = |resource: &ApiResource, role: &str, selector: Option<String>| {
            let api = match (&config.namespace, resource.namespaced) {
                (Some(ns), true) => Api::namespaced_with(client.clone(), ns, resource),
                _ => Api::all_with(client.clone(), resource),
            };
            let mut reflector =
                ReflectorConfig::new().name(&format!("{}-sharder-{role}", ring.name()));
            if let Some(selector) = selector {
                reflector = reflector.labels(&selector);
            }
            SharedIndexInformer::new(api, InformerConfig::new().reflector(reflector))
        };
        let objects = metadata_informer(
            &config.resource,
            &config.resource.plural,
            config.selector.clone(),
        );
        let owner = OwnerKind::of(&config.resource);
        let owned = config
            .owned
            .iter()
            .map(|r| (metadata_informer(r, &r.plural, None), owner.clone()))
            .collect();
        let leases = SharedIndexInformer::new(
            Api::namespaced(client.clone(), ring.namespace()),
            InformerConfig::new().reflector(
                ReflectorConfig::new()
                    .labels(&ring.lease_selector())
                    .name(&format!("{}-sharder-leases", ring.name())),
            ),
        );
        Leader {
            shard_label: ring.shard_label(),
            drain_label: ring.drain_label(),
            fence_holder: format!("fence/{}", config.election.identity),
            client,
            term,
            objects,
            owned,
            leases,
            observations: Arc::new(Mutex::new(Observations::default())),
            wake,
            rx,
            live: Vec::new(),
            fences: HashMap::new(),
            retry: HashSet::new(),
            retry_owned: HashSet::new(),
            incarnations: Arc::new(Mutex::new(Incarnations::default())),
            hold_until: crate::deadline::after(config.fence_duration),
            held: false,
            waiting: HashMap::new(),
            config,
        }
    }

    fn emit(&self, event: ShardingEvent) {
        log::info!("sharder {}: {event:?}", self.config.ring.name());
        if let Some(f) = &self.config.on_event {
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&event))).is_err() {
                log::error!(
                    "sharder {}: the on_event callback panicked",
                    self.config.ring.name()
                );
            }
        }
    }

    fn run(mut self) {
        if let Err(e) = self.start_informers() {
            log::error!("sharder {}: {e}", self.config.ring.name());
            self.stop_informers();
            return;
        }
        let mut next_resync = crate::deadline::after(self.config.resync);
        let mut next_retry: Option<Instant> = None;
        let mut first = true;
        while !self.term.is_stopped() {
            let now = Instant::now();
            let dirty = std::mem::take(&mut *self.wake.dirty.lock());
            let (live, next_expiry) = self.judge(now);
            let membership_changed = live != self.live || first;
            if membership_changed {
                self.live = live;
                self.emit(ShardingEvent::Membership {
                    live: self.live.clone(),
                });
            }
            let retry_due = next_retry.is_some_and(|t| now >= t);
            let hold_over = self.held && now >= self.hold_until;
            if hold_over {
                self.held = false;
            }
            if membership_changed || now >= next_resync || hold_over {
                next_resync = crate::deadline::after(self.config.resync);
                self.retry.clear();
                self.retry_owned.clear();
                self.full_pass();
            } else {
                let mut keys: Vec<String> = dirty.objects.into_iter().collect();
                let mut owned: Vec<(usize, String)> = dirty.owned.into_iter().collect();
                if retry_due {
                    keys.extend(self.retry.drain());
                    owned.extend(self.retry_owned.drain());
                }
                for key in keys {
                    if let Some(o) = self.objects.store().get(&key) {
                        self.primary(&o);
                    }
                }
                for (i, key) in owned {
                    let child = self.owned.get(i).and_then(|(inf, _)| inf.store().get(&key));
                    if let Some(c) = child {
                        self.child(i, &c);
                    }
                }
            }
            if retry_due || !self.retry.is_empty() || !self.retry_owned.is_empty() {
                next_retry = if self.retry.is_empty() && self.retry_owned.is_empty() {
                    None
                } else {
                    next_retry
                        .filter(|t| *t > now)
                        .or(Some(crate::deadline::after(Duration::from_secs(1))))
                };
            }
            self.tend_fences();
            first = false;
            // Sleep until something changes, a Lease may expire, a retry or resync is due
            // (bounded, so that the term's end is noticed promptly).
            let mut wake_at = next_resync.min(crate::deadline::after(Duration::from_millis(200)));
            if let Some(t) = next_expiry {
                wake_at = wake_at.min(t);
            }
            if let Some(t) = next_retry {
                wake_at = wake_at.min(t);
            }
            if self.held {
                wake_at = wake_at.min(self.hold_until);
            }
            let _ = self
                .rx
                .recv_timeout(wake_at.saturating_duration_since(Instant::now()));
        }
        self.stop_informers();
    }

    fn start_informers(&mut self) -> Result<()> {
        let index: IndexFn<PartialObjectMetadata> = {
            let owner = OwnerKind::of(&self.config.resource);
            Arc::new(move |o: &PartialObjectMetadata| {
                Ok(owner.key_of_owner(&o.metadata).into_iter().collect())
            })
        };
        for (i, (informer, _)) in self.owned.iter().enumerate() {
            informer.add_indexers([(OWNER_INDEX.to_owned(), Arc::clone(&index))])?;
            informer.add_event_handler(ObjectHandler {
                wake: Arc::clone(&self.wake),
                owned: Some(i),
                incarnations: None,
            })?;
        }
        self.objects.add_event_handler(ObjectHandler {
            wake: Arc::clone(&self.wake),
            owned: None,
            incarnations: Some((
                Arc::clone(&self.incarnations),
                Labels {
                    shard: self.shard_label.clone(),
                    drain: self.drain_label.clone(),
                },
            )),
        })?;
        self.leases.add_event_handler(LeaseHandler {
            wake: Arc::clone(&self.wake),
            observations: Arc::clone(&self.observations),
            ring: self.config.ring.clone(),
        })?;
        self.leases.start()?;
        self.objects.start()?;
        for (informer, _) in &self.owned {
            informer.start()?;
        }
        // Wait for every cache, in short steps so that the term's end is noticed.
        loop {
            if self.term.is_stopped() {
                return Err(Error::Cancelled {
                    request: "the sharder's term ended while its caches synced".into(),
                });
            }
            let synced = self.leases.has_synced()
                && self.objects.has_synced()
                && self.owned.iter().all(|(i, _)| i.has_synced());
            if synced {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn stop_informers(&self) {
        self.leases.stop();
        self.objects.stop();
        for (i, _) in &self.owned {
            i.stop();
        }
    }

    /// The live shards (sorted), and the next instant one of them may expire.
    fn judge(&self, now: Instant) -> (Vec<String>, Option<Instant>) {
        let observations = self.observations.lock();
        let mut live = BTreeSet::new();
        let mut next: Option<Instant> = None;
        for lease in self.leases.store().list() {
            let Some(shard) = shard_of(&lease, &self.config.ring) else {
                continue;
            };
            if let ShardState::Live(until) = observations.judge(&lease, shard, now) {
                live.insert(shard.to_owned());
                next = Some(next.map_or(until, |n| n.min(until)));
            }
        }
        (live.into_iter().collect(), next)
    }

    fn is_live(&self, shard: &str) -> bool {
        self.live
            .binary_search_by(|s| s.as_str().cmp(shard))
            .is_ok()
    }

    fn full_pass(&mut self) {
        for o in self.objects.store().list() {
            if self.term.is_stopped() {
                return;
            }
            self.primary(&o);
        }
        for i in 0..self.owned.len() {
            for c in self.owned[i].0.store().list() {
                if self.term.is_stopped() {
                    return;
                }
                self.child(i, &c);
            }
        }
    }

    fn label<'a>(&self, o: &'a PartialObjectMetadata) -> (Option<&'a str>, Option<&'a str>) {
        (
            o.metadata
                .label(&self.shard_label)
                .filter(|s| !s.is_empty()),
            o.metadata.label(&self.drain_label),
        )
    }

    fn target(&self, namespace: &str, name: &str) -> Option<String> {
        let key = self.config.hash_key.key(namespace, name);
        shard_for(&key, &self.live).map(str::to_owned)
    }

    /// One sharded object: the hand-over rules.
    fn primary(&mut self, o: &PartialObjectMetadata) {
        let m = &o.metadata;
        let key = m.key();
        let (shard, drain) = self.label(o);
        let target = self.target(m.namespace(), m.name());
        let tomb = self
            .incarnations
            .lock()
            .tombs
            .get(&key)
            .map(|(s, _)| s.clone());
        let step = plan(
            shard,
            drain.is_some(),
            tomb.as_deref(),
            target.as_deref(),
            |s| self.is_live(s),
        );
        if step != Step::Wait {
            self.waiting.remove(&key);
        }
        let holding = Instant::now() < self.hold_until;
        let ok = match step {
            Step::Keep => true,
            Step::Wait => {
                self.waited(&key, shard.unwrap_or_default());
                true
            }
            Step::Assign(_) | Step::Reclaim { .. } if holding => {
                self.held = true;
                true
            }
            Step::Assign(to) => {
                let to = to.to_owned();
                self.children_follow(&key, Some(&to));
                let ops = handover::assign_ops(
                    &self.config.ring,
                    m.resource_version(),
                    m.labels.is_some(),
                    drain.is_some(),
                    &to,
                );
                let ok = self.patch_object(o, &to, ops);
                if ok {
                    self.emit(ShardingEvent::Assigned {
                        key: key.clone(),
                        shard: to,
                    });
                }
                ok
            }
            Step::Reclaim { from, to } => {
                let (from, to) = (from.to_owned(), to.to_owned());
                if !self.fence(&from) {
                    false
                } else {
                    self.children_follow(&key, Some(&to));
                    let ops = handover::assign_ops(
                        &self.config.ring,
                        m.resource_version(),
                        m.labels.is_some(),
                        drain.is_some(),
                        &to,
                    );
                    let ok = self.patch_object(o, &to, ops);
                    if ok {
                        self.emit(ShardingEvent::Moved {
                            key: key.clone(),
                            from,
                            to: Some(to),
                        });
                    }
                    ok
                }
            }
            Step::Drain(from) => {
                let ops = handover::drain_ops(&self.config.ring, from);
                let ok = self.patch(None, m.namespace(), m.name(), ops);
                if ok {
                    self.emit(ShardingEvent::Draining {
                        key: key.clone(),
                        from: from.to_owned(),
                        to: target.clone().unwrap_or_default(),
                    });
                }
                ok
            }
            Step::Move { from, to } => {
                let (from, to) = (from.to_owned(), to.map(str::to_owned));
                if !self.fence(&from) {
                    false
                } else {
                    self.children_follow(&key, to.as_deref());
                    let ops = handover::move_ops(
                        &self.config.ring,
                        &from,
                        to.as_deref(),
                        drain.is_some(),
                    );
                    let ok = match &to {
                        Some(t) => self.patch_object(o, t, ops),
                        None => self.patch(None, m.namespace(), m.name(), ops),
                    };
                    if ok {
                        self.emit(ShardingEvent::Moved {
                            key: key.clone(),
                            from,
                            to,
                        });
                    }
                    ok
                }
            }
        };
        if !ok {
            self.retry.insert(key);
        }
    }

    /// A drained object whose shard has not acknowledged: logged once it has waited long.
    fn waited(&mut self, key: &str, shard: &str) {
        let bound = self.config.fence_duration.saturating_mul(2);
        let (since, logged) = self
            .waiting
            .entry(key.to_owned())
            .or_insert((Instant::now(), false));
        if !*logged && since.elapsed() >= bound {
            *logged = true;
            log::warn!(
                "sharder {}: {key} has been drained from {shard} for over {bound:?} without an \
                 acknowledgement (is that shard's controller working, and its cache syncing?)",
                self.config.ring.name()
            );
        }
    }

    /// A patch of a sharded object that puts it on shard `to`: its result is remembered
    /// until the watch shows it (a tombstone needs it if the object goes meanwhile).
    fn patch_object(
        &mut self,
        o: &PartialObjectMetadata,
        to: &str,
        ops: Vec<PatchOperation>,
    ) -> bool {
        let key = o.metadata.key();
        let ok = self.patch(None, o.metadata.namespace(), o.metadata.name(), ops);
        let mut inc = self.incarnations.lock();
        if ok {
            inc.tombs.remove(&key);
            inc.written
                .insert(key, (uid_of(o).to_owned(), to.to_owned()));
        }
        ok
    }

    /// Relabels the owned objects of `owner_key` to `to` (before their owner moves).
    fn children_follow(&mut self, owner_key: &str, to: Option<&str>) {
        for i in 0..self.owned.len() {
            let children = self.owned[i]
                .0
                .store()
                .by_index(OWNER_INDEX, owner_key)
                .unwrap_or_default();
            for c in children {
                let m = &c.metadata;
                let (current, _) = self.label(&c);
                if current != to {
                    let ops = handover::relabel_ops(
                        &self.config.ring,
                        m.resource_version(),
                        m.labels.is_some(),
                        current,
                        to,
                    );
                    if !self.patch(Some(i), m.namespace(), m.name(), ops) {
                        self.retry_owned.insert((i, m.key()));
                    }
                }
            }
        }
    }

    /// One owned object: it carries its owner's shard label (or, with the owner unknown,
    /// the owner's target).
    fn child(&mut self, i: usize, c: &PartialObjectMetadata) {
        let m = &c.metadata;
        let Some(owner_key) = self.owned[i].1.key_of_owner(m) else {
            return;
        };
        let (current, _) = self.label(c);
        let desired = match self.objects.store().get(&owner_key) {
            Some(owner) => match self.label(&owner).0 {
                Some(s) => Some(s.to_owned()),
                None => return, // assigned with its owner
            },
            None => {
                let (ns, name) = owner_key
                    .split_once('/')
                    .unwrap_or(("", owner_key.as_str()));
                self.target(ns, name)
            }
        };
        if current == desired.as_deref() {
            return;
        }
        let ops = handover::relabel_ops(
            &self.config.ring,
            m.resource_version(),
            m.labels.is_some(),
            current,
            desired.as_deref(),
        );
        if !self.patch(Some(i), m.namespace(), m.name(), ops) {
            self.retry_owned.insert((i, m.key()));
        }
    }

    /// A JSON patch of a sharded (`None`) or owned (`Some(i)`) object; false when it failed.
    fn patch(&self, owned: Option<usize>, ns: &str, name: &str, ops: Vec<PatchOperation>) -> bool {
        let resource = match owned {
            None => &self.config.resource,
            Some(i) => &self.config.owned[i],
        };
        let api: Api<PartialObjectMetadata> = if resource.namespaced {
            Api::namespaced_with(self.client.clone(), ns, resource)
        } else {
            Api::all_with(self.client.clone(), resource)
        };
        match api.patch(name, &PatchParams::default(), &Patch::json(ops)) {
            Ok(_) => true,
            Err(e) => {
                if e.is_invalid() || e.is_not_found() || e.is_cancelled() {
                    log::debug!("sharder: patching {}/{ns}/{name}: {e}", resource.plural);
                } else {
                    log::warn!("sharder: patching {}/{ns}/{name}: {e}", resource.plural);
                }
                false
            }
        }
    }

    /// Makes sure this sharder holds a fence on `shard`'s Lease that proves the shard
    /// stopped and still allows moves (see [`membership`](super::membership)).
    fn fence(&mut self, shard: &str) -> bool {
        let half = self.config.fence_duration / 2;
        let name = self.config.ring.shard_lease(shard);
        let current = self
            .leases
            .store()
            .get(&format!("{}/{name}", self.config.ring.namespace()));
        if let Some(f) = self.fences.get(shard) {
            // Written over by someone else since (as far as the watch tells): it proves
            // nothing any more.
            if let Some(cur) = &current {
                if !f.known.contains(cur.metadata.resource_version()) {
                    log::warn!("sharder: the fence on {shard} was overwritten; fencing again");
                    self.fences.remove(shard);
                    return false;
                }
            }
            if Instant::now() < f.ready_at {
                return false;
            }
            if f.sent.elapsed() < half {
                return true;
            }
            return self.renew_fence(shard) && self.fences.contains_key(shard);
        }
        let now = Instant::now();
        let state = match &current {
            // Judged again on the record the write will be guarded by.
            Some(l) => self.observations.lock().judge(l, shard, now),
            None => ShardState::Invalid,
        };
        if state.is_live() {
            return false;
        }
        let secs = i32::try_from(self.config.fence_duration.as_secs().max(1)).unwrap_or(i32::MAX);
        let stamp = MicroTime::now();
        let sent = Instant::now();
        let written = match &current {
            Some(l) => {
                let mut record = (**l).clone();
                let transitions = record
                    .spec
                    .as_ref()
                    .and_then(|s| s.lease_transitions)
                    .unwrap_or(0)
                    .max(0);
                record.spec = Some(LeaseSpec {
                    holder_identity: Some(self.fence_holder.clone()),
                    lease_duration_seconds: Some(secs),
                    acquire_time: Some(stamp),
                    renew_time: Some(stamp),
                    lease_transitions: Some(transitions.saturating_add(1)),
                    ..Default::default()
                });
                self.lease_api()
                    .replace(&name, &PostParams::default(), &record)
            }
            None => {
                let mut record = Lease::new(self.config.ring.namespace(), &name);
                let mut labels = crate::api::StringMap::new();
                labels.insert(super::RING_LABEL, self.config.ring.name());
                record.metadata.labels = Some(labels);
                record.spec = Some(LeaseSpec {
                    holder_identity: Some(self.fence_holder.clone()),
                    lease_duration_seconds: Some(secs),
                    acquire_time: Some(stamp),
                    renew_time: Some(stamp),
                    lease_transitions: Some(0),
                    ..Default::default()
                });
                self.lease_api().create(&PostParams::default(), &record)
            }
        };
        match written {
            Ok(record) => {
                // Counted from when the write returned: later than it landed, so safe.
                let wait = if state.fence_proves_stop() {
                    Duration::ZERO
                } else {
                    let known = self.observations.lock().duration_of(shard);
                    known.map_or(self.config.fence_duration, |d| {
                        d.max(self.config.fence_duration)
                    })
                };
                if !wait.is_zero() {
                    log::warn!(
                        "sharder {}: the Lease of {shard} proves nothing ({}); fenced it, its \
                         objects move in {wait:?} if it does not come back",
                        self.config.ring.name(),
                        match state {
                            ShardState::Foreign => "held by someone else",
                            _ if current.is_none() => "missing",
                            _ => "nonsense fields",
                        }
                    );
                }
                let mut known: HashSet<String> = current
                    .map(|l| l.metadata.resource_version().to_owned())
                    .into_iter()
                    .collect();
                known.insert(record.metadata.resource_version().to_owned());
                self.fences.insert(
                    shard.to_owned(),
                    Fence {
                        record,
                        sent,
                        ready_at: crate::deadline::after(wait),
                        known,
                    },
                );
                self.emit(ShardingEvent::Fenced {
                    shard: shard.to_owned(),
                });
                wait.is_zero()
            }
            Err(e) if e.is_already_exists() => {
                self.adopt(&name, shard);
                false
            }
            Err(e) => {
                log::info!("sharder: fencing {shard}: {e}");
                false
            }
        }
    }

    /// A shard Lease the sharder's watch does not show exists: the shard's elector created
    /// it again (without the ring's label) after someone deleted it. The label is put back
    /// (a compare-and-swap), so that the sharder judges it again.
    fn adopt(&self, name: &str, shard: &str) {
        let api = self.lease_api();
        let Ok(mut lease) = api.get(name) else {
            return;
        };
        let holder = lease
            .spec
            .as_ref()
            .and_then(|s| s.holder_identity.as_deref())
            .unwrap_or("");
        if lease.metadata.label(super::RING_LABEL).is_some()
            || !(holder.is_empty() || holder == shard)
        {
            return;
        }
        lease
            .metadata
            .labels
            .get_or_insert_with(crate::api::StringMap::new)
            .insert(super::RING_LABEL, self.config.ring.name());
        match api.replace(name, &PostParams::default(), &lease) {
            Ok(_) => log::info!("sharder: labelled the Lease {name} of {shard} again"),
            Err(e) => log::info!("sharder: labelling the Lease {name}: {e}"),
        }
    }

    /// Renews a fence (compare-and-swap on the record written); forgets it when that fails.
    fn renew_fence(&mut self, shard: &str) -> bool {
        let Some(f) = self.fences.get(shard) else {
            return false;
        };
        let mut record = f.record.clone();
        if let Some(spec) = record.spec.as_mut() {
            spec.renew_time = Some(MicroTime::now());
        }
        let sent = Instant::now();
        let name = self.config.ring.shard_lease(shard);
        match self
            .lease_api()
            .replace(&name, &PostParams::default(), &record)
        {
            Ok(record) => {
                if let Some(f) = self.fences.get_mut(shard) {
                    f.known
                        .insert(record.metadata.resource_version().to_owned());
                    f.record = record;
                    f.sent = sent;
                }
                true
            }
            Err(e) => {
                log::info!("sharder: renewing the fence on {shard}: {e}");
                self.fences.remove(shard);
                false
            }
        }
    }

    fn lease_api(&self) -> Api<Lease> {
        Api::namespaced(self.client.clone(), self.config.ring.namespace())
    }

    /// Renews the fences still needed; releases those that proved their shard stopped and
    /// whose shard has nothing left (its tombstones go with the proof).
    fn tend_fences(&mut self) {
        if self.fences.is_empty() {
            return;
        }
        let now = Instant::now();
        let proven: HashSet<String> = self
            .fences
            .iter()
            .filter(|(_, f)| now >= f.ready_at)
            .map(|(s, _)| s.clone())
            .collect();
        let mut holding: HashSet<String> = HashSet::new();
        {
            let mut inc = self.incarnations.lock();
            // A shard proven stopped starts its next term with a fresh list and confirms
            // every object by its UID: its tombstones are no longer needed.
            inc.tombs.retain(|_, (s, _)| !proven.contains(s));
            for (s, _) in inc.tombs.values() {
                if self.fences.contains_key(s) {
                    holding.insert(s.clone());
                }
            }
        }
        for o in self.objects.store().list() {
            if let (Some(s), _) = self.label(&o) {
                if self.fences.contains_key(s) {
                    holding.insert(s.to_owned());
                }
            }
        }
        let half = self.config.fence_duration / 2;
        let shards: Vec<String> = self.fences.keys().cloned().collect();
        for shard in shards {
            if holding.contains(&shard) || !proven.contains(&shard) {
                if self.fences[&shard].sent.elapsed() >= half {
                    self.renew_fence(&shard);
                }
                continue;
            }
            let Some(f) = self.fences.remove(&shard) else {
                continue;
            };
            let mut record = f.record;
            let stamp = MicroTime::now();
            if let Some(spec) = record.spec.as_mut() {
                spec.holder_identity = Some(String::new());
                spec.lease_duration_seconds = Some(1);
                spec.renew_time = Some(stamp);
            }
            let name = self.config.ring.shard_lease(&shard);
            match self
                .lease_api()
                .replace(&name, &PostParams::default(), &record)
            {
                Ok(_) => self.emit(ShardingEvent::Unfenced { shard }),
                Err(e) => log::info!("sharder: releasing the fence on {shard}: {e}"),
            }
        }
    }
}

use handover::plan;
