//! Membership: each shard holds a Lease of its own, and the sharder judges from those
//! Leases which shards are alive.
//!
//! Why Leases: they are what Kubernetes offers for liveness (kubelets, leader election), they
//! need no component of ours on the control plane, and every write to one is a
//! compare-and-swap on its `resourceVersion`. A shard's Lease is named after the shard,
//! lives in the ring's namespace and carries the label `sharding.kube-informer.io/ring=<ring>`;
//! the shard holds it with the crate's [`LeaderElector`](crate::controller::LeaderElector)
//! (it is the only contender for it), renewing it every retry period and releasing it on a
//! clean stop.
//!
//! # How the sharder judges a Lease
//!
//! - **live**: `holderIdentity` is the Lease's own name (the shard holds it) and the record
//!   has changed within its `leaseDurationSeconds`, *by the sharder's own monotonic clock*
//!   counted from when it first saw the record as it is (the leader election's rule: the
//!   times written in the record are never compared with a local clock).
//! - **expired**: held by the shard, but unchanged for longer than its duration.
//! - **free**: no holder (a shard that stopped cleanly released it), or a holder other than
//!   the shard (a fence, see [`handover`](super::handover)).
//! - **nonsense**: no `spec`, a missing, zero or negative duration: never live, never a
//!   panic.
//!
//! Only live shards get objects. A shard that is not live loses its objects only after the
//! sharder has *fenced* its Lease (a compare-and-swap write that makes the sharder its
//! holder), which proves that the shard did not renew since the record the sharder judged,
//! and keeps it from coming back while its objects are moved.
//!
//! # Why a shard has stopped before anyone calls it dead (and the clock assumption)
//!
//! A shard reconciles only during a *term* of its Lease: the elector ends the term when no
//! renewal has succeeded for `renew_deadline` counted from when the last successful one was
//! *sent*, and the controller's workers stop (each finishing the key in hand) when the term
//! ends. The sharder calls the Lease expired only `lease_duration` after it *saw* that renewal
//! (which is after it was sent), and must then win a compare-and-swap against any renewal
//! still in flight. So a shard has stopped working `lease_duration - renew_deadline` (5 s by
//! default) before it can be declared dead, provided that (a) the clocks of the two machines
//! run at the same rate within that margin over a lease duration (bounded clock *drift*;
//! their wall-clock skew does not matter since no timestamps are compared) and (b) a
//! reconcile in hand returns within the margin. Both are the leader election's assumptions.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::ring::{Ring, RING_LABEL};
use crate::api::Object;
use crate::client::{pointer, Api, Client, Patch, PatchOperation, PatchParams, PostParams};
use crate::controller::{Lease, LeaseSpec};
use crate::error::Result;

/// How the sharder sees one shard's Lease at an instant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShardState {
    /// Held by its shard and renewed in time; live until the instant given (unless renewed).
    Live(Instant),
    /// Held by its shard but not renewed within its duration.
    Expired,
    /// Held by nobody (released) or by someone else (a fence).
    Free,
    /// Missing or nonsense fields (no spec, no holder, a duration that is not positive).
    Invalid,
}

impl ShardState {
    /// True for [`ShardState::Live`].
    pub fn is_live(&self) -> bool {
        matches!(self, ShardState::Live(_))
    }
}

/// When this process first saw each Lease's current spec: the base of expiry judgements.
#[derive(Debug, Default)]
pub(crate) struct Observations {
    seen: HashMap<String, (Option<LeaseSpec>, Instant)>,
}

impl Observations {
    /// Notes `lease` as seen now (the instant is kept while its spec does not change).
    pub(crate) fn observe(&mut self, lease: &Lease, now: Instant) {
        let name = lease.metadata.name().to_owned();
        match self.seen.get_mut(&name) {
            Some((spec, _)) if *spec == lease.spec => {}
            _ => {
                self.seen.insert(name, (lease.spec.clone(), now));
            }
        }
    }

    /// Forgets a deleted Lease.
    pub(crate) fn forget(&mut self, name: &str) {
        self.seen.remove(name);
    }

    /// Judges `lease` at `now` (see the module docs). A Lease never observed counts as seen
    /// now.
    pub(crate) fn judge(&self, lease: &Lease, now: Instant) -> ShardState {
        let name = lease.metadata.name();
        let Some(spec) = &lease.spec else {
            return ShardState::Invalid;
        };
        let holder = spec.holder_identity.as_deref().unwrap_or("");
        if holder.is_empty() {
            return ShardState::Free;
        }
        if holder != name {
            return ShardState::Free;
        }
        let Some(secs) = spec.lease_duration_seconds.filter(|s| *s > 0) else {
            return ShardState::Invalid;
        };
        let since = match self.seen.get(name) {
            Some((seen, at)) if *seen == lease.spec => *at,
            _ => now,
        };
        let until = crate::deadline::at(since, Duration::from_secs(secs.unsigned_abs().into()));
        if now < until {
            ShardState::Live(until)
        } else {
            ShardState::Expired
        }
    }
}

/// Makes sure the shard's Lease exists and carries the ring's label, before the shard's
/// elector contends for it: created free (no holder) when missing, labelled when it lacks
/// the label. The elector keeps the label on every write (it writes back what it read).
pub(crate) fn prepare_lease(client: &Client, ring: &Ring, shard: &str) -> Result<()> {
    let api: Api<Lease> = Api::namespaced(client.clone(), ring.namespace());
    match api.get(shard) {
        Ok(lease) => {
            if lease.metadata.label(RING_LABEL) == Some(ring.name()) {
                return Ok(());
            }
            let mut ops = Vec::new();
            if lease.metadata.labels.is_none() {
                ops.push(PatchOperation::add(
                    "/metadata/labels",
                    serde_json::json!({}),
                ));
            }
            ops.push(PatchOperation::add(
                &pointer(&["metadata", "labels", RING_LABEL]),
                ring.name(),
            ));
            api.patch(shard, &PatchParams::default(), &Patch::json(ops))?;
            Ok(())
        }
        Err(e) if e.is_not_found() => {
            let mut lease = Lease::new(ring.namespace(), shard);
            let mut labels = crate::api::StringMap::new();
            labels.insert(RING_LABEL, ring.name());
            lease.metadata.labels = Some(labels);
            lease.spec = Some(LeaseSpec::default());
            match api.create(&PostParams::default(), &lease) {
                Ok(_) => Ok(()),
                // Created meanwhile (by an earlier run, or a fence): label it if needed.
                Err(e) if e.is_conflict() || e.is_already_exists() => {
                    prepare_lease(client, ring, shard)
                }
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// Whether `lease` belongs to `ring`.
pub(crate) fn in_ring(lease: &Lease, ring: &Ring) -> bool {
    lease.metadata().label(RING_LABEL) == Some(ring.name())
        && lease.metadata().namespace() == ring.namespace()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::MicroTime;

    fn lease(name: &str, holder: Option<&str>, secs: Option<i32>) -> Lease {
        let mut l = Lease::new("ns", name);
        l.spec = Some(LeaseSpec {
            holder_identity: holder.map(str::to_owned),
            lease_duration_seconds: secs,
            renew_time: Some(MicroTime::now()),
            ..Default::default()
        });
        l
    }

    #[test]
    fn judges_live_expired_free_and_nonsense() {
        let mut obs = Observations::default();
        let t0 = Instant::now();
        let live = lease("a", Some("a"), Some(10));
        obs.observe(&live, t0);
        assert_eq!(
            obs.judge(&live, t0),
            ShardState::Live(t0 + Duration::from_secs(10))
        );
        assert_eq!(
            obs.judge(&live, t0 + Duration::from_secs(10)),
            ShardState::Expired
        );
        // Seen again unchanged: the first sighting still counts.
        obs.observe(&live, t0 + Duration::from_secs(5));
        assert_eq!(
            obs.judge(&live, t0 + Duration::from_secs(11)),
            ShardState::Expired
        );
        // A renewal (a changed record) restarts the clock.
        let mut renewed = live.clone();
        renewed.spec.as_mut().unwrap().renew_time = Some(MicroTime::from_system_time(
            std::time::SystemTime::now() + Duration::from_secs(1),
        ));
        obs.observe(&renewed, t0 + Duration::from_secs(11));
        assert!(obs.judge(&renewed, t0 + Duration::from_secs(12)).is_live());
        // Never observed: counted from now.
        assert!(obs.judge(&lease("b", Some("b"), Some(1)), t0).is_live());
        for (l, want) in [
            (lease("c", None, Some(10)), ShardState::Free),
            (lease("c", Some(""), Some(10)), ShardState::Free),
            (lease("c", Some("sharder"), Some(10)), ShardState::Free),
            (lease("c", Some("c"), Some(0)), ShardState::Invalid),
            (lease("c", Some("c"), Some(-5)), ShardState::Invalid),
            (lease("c", Some("c"), None), ShardState::Invalid),
            (Lease::new("ns", "c"), ShardState::Invalid),
        ] {
            assert_eq!(obs.judge(&l, t0), want, "{l:?}");
        }
    }
}
