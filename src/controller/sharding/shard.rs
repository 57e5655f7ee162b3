//! The shard side: what [`ControllerBuilder::sharded`](crate::controller::ControllerBuilder::sharded)
//! does to a controller.
//!
//! A sharded controller is a controller under leader election on a Lease of its own (the
//! shard Lease, `<ring>-<shard>`): its workers run only during the terms of that Lease,
//! exactly as a leader's do, which gives the "stop before anyone may call you dead" rule of
//! [`membership`](super::membership) for free. Two things are added:
//! - its informers select the objects labelled with the shard
//!   ([`ShardConfig::factory_options`], or [`ShardConfig::selector`] for informers made
//!   otherwise), so the shard caches only its part;
//! - every key goes through a gate before the user's reconcile (the shard's rule of
//!   [`handover`](super::handover)): objects not labelled with the shard are skipped,
//!   drained ones acknowledged, the others reconciled once confirmed for the term.
//!
//! # Confirmations
//!
//! A confirmation is for one object (its UID) in one term: the term's first list (in the
//! informer's namespace, with the shard's selector) or a GET says the object is this
//! shard's and not drained. The gate compares the UID of the cached object it is about to
//! reconcile with the confirmed one, so an object deleted and created again under the same
//! name is confirmed again. Confirmations are dropped when the shard acknowledges a drain,
//! when the object leaves the cache or the shard, and at every new term, so they never
//! outnumber the shard's objects. Every request of the gate is cut when the term ends
//! (its client carries the term's cancel token), and the term is checked again right
//! before the user's reconcile is called: a worker stuck in a confirmation past the end of
//! its term never starts a reconcile.
//!
//! # The bound on a reconcile
//!
//! The hand-over's safety rests on a reconcile in hand returning within
//! `lease_duration - renew_deadline` of the end of its term (the workers are not
//! interrupted; see [`ShardConfig::renew_deadline`]). A reconcile that returns after its
//! term ended is logged (a warning, an error past the margin).
//!
//! # A shard label removed by hand
//!
//! The shard's informers select its label, so an object whose shard label someone removes
//! leaves the cache (a delete event): its key is skipped from then on and its confirmation
//! dropped, but a reconcile of it already in hand goes on until it returns. That is why the
//! sharder does not hand such an object to another shard: it gives it back to this shard
//! and drains it ([`handover`](super::handover)), and the acknowledgement, like every key,
//! waits for the worker that holds the key, so it comes only after that reconcile returned.
//!
//! Keys of objects that are not (or no longer) in the shard's cache are skipped: a sharded
//! controller does not see deletions as reconciles of missing objects; use a finalizer
//! ([`finalizer()`](crate::controller::finalizer())) for clean-up, which keeps the object
//! (and so its shard) until the clean-up is done.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::handover::{self, Gate};
use super::membership;
use super::ring::{validate_shard_id, Ring};
use crate::api::{ApiResource, Meta, Object, PartialObjectMetadata};
use crate::cache::{FactoryOptions, SharedIndexInformer, Store};
use crate::client::{Api, Client, ListParams, Patch, PatchParams};
use crate::controller::controller::Reconcile;
use crate::controller::{Action, LeaderElectionConfig, Term};
use crate::error::Result;

/// One shard of a ring: its id and the timings of its Lease.
///
/// ```
/// use std::time::Duration;
/// use kube_informer::controller::sharding::{Ring, ShardConfig};
/// let ring = Ring::new("widgets", "operators")?;
/// let shard = ShardConfig::new(ring, "widgets-0")?.lease_duration(Duration::from_secs(20));
/// assert_eq!(shard.selector(), "shard.sharding.kube-informer.io/widgets=widgets-0");
/// // The factory's informers select by the shard's label.
/// assert!(format!("{:?}", shard.factory_options()).contains(&shard.selector()));
/// assert_eq!(shard.label(), ("shard.sharding.kube-informer.io/widgets".to_owned(), "widgets-0".to_owned()));
/// assert!(ShardConfig::new(Ring::new("widgets", "operators")?, "Not_A_Name").is_err());
/// # Ok::<(), kube_informer::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ShardConfig {
    ring: Ring,
    id: String,
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
    release_on_stop: bool,
}

impl ShardConfig {
    /// The shard `id` of `ring` (unique among the ring's replicas, e.g. the pod name: it
    /// names the shard's Lease, `<ring>-<id>`, and is the value of the shard label), with
    /// client-go's leader election timings for its Lease (15 s, renew deadline 10 s, retry
    /// 2 s).
    ///
    /// Two processes running with the same id at once (a StatefulSet pod force-deleted
    /// while its old process still runs) are not supported: they would share one Lease and
    /// both reconcile.
    pub fn new(ring: Ring, id: &str) -> Result<ShardConfig> {
        validate_shard_id(id)?;
        Ok(ShardConfig {
            ring,
            id: id.to_owned(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            release_on_stop: true,
        })
    }

    /// The ring.
    pub fn ring(&self) -> &Ring {
        &self.ring
    }

    /// The shard's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The label selector of this shard's objects.
    pub fn selector(&self) -> String {
        self.ring.shard_selector(&self.id)
    }

    /// The shard label as (key, value): put it on the objects the shard creates for an
    /// object it reconciles, so they are in its cache at once (the sharder would label them
    /// soon anyway).
    pub fn label(&self) -> (String, String) {
        (self.ring.shard_label(), self.id.clone())
    }

    /// Factory options whose informers watch only this shard's objects.
    pub fn factory_options(&self) -> FactoryOptions {
        FactoryOptions::new().labels(&self.selector())
    }

    /// How long the sharder waits after the shard's last renewal before calling it dead.
    /// Give the sharder a [`fence_duration`](super::SharderConfig::fence_duration) at least
    /// this long: it is also how long the sharder waits after fencing a Lease that proves
    /// nothing (deleted, nonsense, held by someone else) before moving its objects.
    pub fn lease_duration(mut self, d: Duration) -> Self {
        self.lease_duration = d;
        self
    }

    /// How long the shard keeps working without a successful renewal (must be shorter
    /// than the lease duration: the difference is the safety margin).
    ///
    /// **The bound on a reconcile**: when a term ends, the reconciles in hand are finished,
    /// not interrupted, and the sharder may hand the shard's objects to another shard
    /// `lease_duration - renew_deadline` later (5 s with the defaults). A reconcile must
    /// return within that margin once its term ends, or two shards may work on one object:
    /// keep reconciles shorter than the margin (give long work its own timeouts), or widen
    /// the margin. A reconcile that outlives its term is logged.
    pub fn renew_deadline(mut self, d: Duration) -> Self {
        self.renew_deadline = d;
        self
    }

    /// How often the shard renews its Lease.
    pub fn retry_period(mut self, d: Duration) -> Self {
        self.retry_period = d;
        self
    }

    /// Whether a clean stop releases the Lease (default true: the sharder then moves the
    /// shard's objects at once instead of after a lease duration).
    pub fn release_on_stop(mut self, release: bool) -> Self {
        self.release_on_stop = release;
        self
    }

    /// The leader election on the shard's own Lease.
    pub(crate) fn election(&self) -> LeaderElectionConfig {
        LeaderElectionConfig::new(
            self.ring.namespace(),
            &self.ring.shard_lease(&self.id),
            &self.id,
        )
        .lease_duration(self.lease_duration)
        .renew_deadline(self.renew_deadline)
        .retry_period(self.retry_period)
        .release_on_cancel(self.release_on_stop)
    }
}

/// What the gate decided for one key.
enum Decision {
    Reconcile,
    Done,
    Retry,
}

/// The shard's gate in front of the user's reconcile (see the module docs).
pub(crate) struct ShardGate<K: Object> {
    ring: Ring,
    id: String,
    shard_label: String,
    drain_label: String,
    resource: ApiResource,
    namespace: Option<String>,
    client: Client,
    store: Arc<Store<K>>,
    /// The current term (its requests are cut when it ends).
    term: Mutex<Option<Term>>,
    /// Key -> UID of the object confirmed as this shard's in the current term.
    confirmed: Mutex<HashMap<String, String>>,
    /// `lease_duration - renew_deadline`: how long a reconcile may outlive its term.
    margin: Duration,
}

fn uid_of(meta: &crate::api::ObjectMeta) -> &str {
    meta.uid.as_deref().unwrap_or("")
}

impl<K: Object> ShardGate<K> {
    fn new(client: Client, shard: &ShardConfig, informer: &SharedIndexInformer<K>) -> Self {
        ShardGate {
            ring: shard.ring.clone(),
            id: shard.id.clone(),
            shard_label: shard.ring.shard_label(),
            drain_label: shard.ring.drain_label(),
            resource: informer.resource().clone(),
            namespace: informer.namespace().map(str::to_owned),
            client,
            store: informer.store(),
            term: Mutex::new(None),
            confirmed: Mutex::new(HashMap::new()),
            margin: shard.lease_duration.saturating_sub(shard.renew_deadline),
        }
    }

    fn api(&self, term: &Term, namespace: Option<&str>) -> Api<PartialObjectMetadata> {
        let client = self.client.with_cancel(term.cancel_token().clone());
        match namespace {
            Some(ns) if self.resource.namespaced => {
                Api::namespaced_with(client, ns, &self.resource)
            }
            _ => Api::all_with(client, &self.resource),
        }
    }

    /// A term starts: forget every confirmation, then confirm what a fresh (quorum) list
    /// says is this shard's (in the informer's namespace).
    fn term_started(&self, term: &Term) {
        *self.term.lock() = Some(term.clone());
        self.confirmed.lock().clear();
        let params = ListParams::default().labels(&self.ring.shard_selector(&self.id));
        match self.api(term, self.namespace.as_deref()).list_all(&params) {
            Ok(list) => {
                let drain = &self.drain_label;
                let keys = list
                    .items
                    .iter()
                    .filter(|o| o.metadata.label(drain).is_none())
                    .map(|o| (o.metadata.key(), uid_of(&o.metadata).to_owned()));
                self.confirmed.lock().extend(keys);
            }
            Err(e) => log::warn!(
                "shard {}: listing its objects at the start of a term (each will be confirmed by a GET): {e}",
                self.id
            ),
        }
    }

    fn current_term(&self) -> Option<Term> {
        self.term.lock().clone()
    }

    fn check(&self, key: &str, term: &Term) -> Decision {
        let Some(obj) = self.store.get(key) else {
            self.confirmed.lock().remove(key);
            return Decision::Done;
        };
        let meta = obj.metadata();
        let shard = meta.label(&self.shard_label);
        let drain = meta.label(&self.drain_label);
        match handover::gate(shard, drain.is_some(), &self.id) {
            Gate::Skip => {
                self.confirmed.lock().remove(key);
                Decision::Done
            }
            Gate::Acknowledge => {
                let ops = handover::acknowledge_ops(&self.ring, &self.id, drain.unwrap_or("true"));
                let (ns, name) = (meta.namespace(), meta.name());
                match self.api(term, Some(ns)).patch(
                    name,
                    &PatchParams::default(),
                    &Patch::json(ops),
                ) {
                    Ok(_) => {
                        self.confirmed.lock().remove(key);
                        log::info!("shard {}: let go of {key}", self.id);
                        Decision::Done
                    }
                    // The labels changed meanwhile (acknowledged before, moved): nothing to do.
                    Err(e) if e.is_invalid() || e.is_not_found() => {
                        self.confirmed.lock().remove(key);
                        Decision::Done
                    }
                    Err(e) => {
                        log::warn!("shard {}: acknowledging the drain of {key}: {e}", self.id);
                        Decision::Retry
                    }
                }
            }
            Gate::Reconcile => {
                let uid = meta.uid().unwrap_or("");
                if self.confirmed.lock().get(key).map(String::as_str) == Some(uid) {
                    return Decision::Reconcile;
                }
                match self.api(term, Some(meta.namespace())).get(meta.name()) {
                    Ok(now) => {
                        // This shard's, not drained, and the very object the cache holds.
                        let mine = now.metadata.label(&self.shard_label) == Some(self.id.as_str())
                            && now.metadata.label(&self.drain_label).is_none()
                            && uid_of(&now.metadata) == uid;
                        if mine {
                            self.confirmed.lock().insert(key.to_owned(), uid.to_owned());
                            Decision::Reconcile
                        } else {
                            self.confirmed.lock().remove(key);
                            Decision::Done
                        }
                    }
                    Err(e) if e.is_not_found() => {
                        self.confirmed.lock().remove(key);
                        Decision::Done
                    }
                    Err(e) => {
                        if !term.is_stopped() {
                            log::warn!("shard {}: confirming {key}: {e}", self.id);
                        }
                        Decision::Retry
                    }
                }
            }
        }
    }
}

/// Called with each term of the shard's Lease as it starts, before its workers start.
pub(crate) type OnTerm = Arc<dyn Fn(&Term) + Send + Sync>;

/// Binds a controller to its shard: prepares the shard Lease, wraps `reconcile` in the gate,
/// and returns what must run at the start of each term (the term's confirmation) and the
/// leader election to run under.
pub(crate) fn bind<K: Object, E: 'static>(
    client: Client,
    shard: &ShardConfig,
    informer: &SharedIndexInformer<K>,
    reconcile: Reconcile<E>,
) -> Result<(Reconcile<E>, OnTerm, LeaderElectionConfig)> {
    let election = shard.election();
    election.validate()?;
    membership::prepare_lease(&client, &shard.ring, &shard.id)?;
    let gate = Arc::new(ShardGate::new(client, shard, informer));
    let g = Arc::clone(&gate);
    let wrapped: Reconcile<E> = Arc::new(move |key: &str| {
        let later = Ok(Action::RequeueAfter(Duration::from_secs(1)));
        let Some(term) = g.current_term() else {
            return later;
        };
        match g.check(key, &term) {
            // The term may have ended during the check: no reconcile starts after it.
            Decision::Reconcile if term.is_stopped() => later,
            Decision::Reconcile => {
                let started = Instant::now();
                let result = reconcile(key);
                if term.is_stopped() {
                    let took = started.elapsed();
                    if took >= g.margin {
                        log::error!(
                            "shard {}: the reconcile of {key} returned after its term ended \
                             (it took {took:?}, more than the margin of {:?} the hand-over \
                             assumes: another shard may have reconciled it meanwhile)",
                            g.id,
                            g.margin
                        );
                    } else {
                        log::warn!(
                            "shard {}: the reconcile of {key} returned after its term ended \
                             (it took {took:?}; it must return within {:?} of the term's end)",
                            g.id,
                            g.margin
                        );
                    }
                }
                result
            }
            Decision::Done => Ok(Action::Done),
            Decision::Retry => later,
        }
    });
    let on_term: OnTerm = Arc::new(move |term: &Term| gate.term_started(term));
    Ok((wrapped, on_term, election))
}
