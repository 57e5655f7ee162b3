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
//! - **live**: `holderIdentity` is the shard's id (the shard holds it) and the record
//!   has changed within its `leaseDurationSeconds`, *by the sharder's own monotonic clock*
//!   counted from when it first saw the record as it is (the leader election's rule: the
//!   times written in the record are never compared with a local clock).
//! - **expired**: held by the shard, but unchanged for longer than its duration.
//! - **free**: no holder: the shard released it on a clean stop (or the sharder released a
//!   fence once it had proved the shard stopped).
//! - **foreign**: held by another identity (a sharder's fence, or a stranger).
//! - **nonsense** (invalid): no `spec`, a missing, zero or negative duration: never live,
//!   never a panic.
//! - a **missing** Lease (deleted) is not live either.
//!
//! Only live shards get objects. A shard that is not live loses its objects only after the
//! sharder has *fenced* its Lease (a compare-and-swap write that makes the sharder its
//! holder, or a create when it is missing), which proves that the shard has not renewed
//! since the record the sharder judged, and keeps it from coming back while its objects are
//! moved. What the fence proves depends on what it replaced:
//! - an **expired** record (by the sharder's clock) or a **free** one: the shard stopped
//!   working before (below); its objects move right after the fence.
//! - anything else (**missing**, **nonsense**, **foreign**): nothing about the shard — it may
//!   be working right now (someone deleted or overwrote its Lease behind its back). The
//!   sharder then waits, after the fence write returned and by its own clock, the shard's
//!   lease duration (the last one it saw the shard write, and at least its
//!   [`fence_duration`](super::SharderConfig::fence_duration)) before moving anything: the
//!   shard cannot renew past the fence, so by then its term has ended (its renew deadline)
//!   and its reconciles in hand have returned (the margin below). Such Leases count as dead
//!   eventually, never at once.
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
use crate::error::{Error, Result};

/// How the sharder sees one shard's Lease at an instant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShardState {
    /// Held by its shard and renewed in time; live until the instant given (unless renewed).
    Live(Instant),
    /// Held by its shard but not renewed within its duration.
    Expired,
    /// Held by nobody: released.
    Free,
    /// Held by someone other than the shard (a sharder's fence, a stranger).
    Foreign,
    /// Missing or nonsense fields (no spec, a duration that is not positive).
    Invalid,
}

impl ShardState {
    /// True for [`ShardState::Live`].
    pub fn is_live(&self) -> bool {
        matches!(self, ShardState::Live(_))
    }

    /// True when a fence written over this state proves at once that the shard stopped
    /// (expired by the sharder's clock, or released); otherwise the sharder waits a lease
    /// duration after the fence.
    pub fn fence_proves_stop(&self) -> bool {
        matches!(self, ShardState::Expired | ShardState::Free)
    }
}

/// When this process first saw each Lease's current spec: the base of expiry judgements.
#[derive(Debug, Default)]
pub(crate) struct Observations {
    seen: HashMap<String, (Option<LeaseSpec>, Instant)>,
    /// The last valid duration each shard wrote on its Lease (kept after a delete).
    durations: HashMap<String, Duration>,
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

    /// Notes the duration `shard` wrote, when it holds `lease` with a valid one.
    pub(crate) fn observe_duration(&mut self, lease: &Lease, shard: &str) {
        if let Some(spec) = &lease.spec {
            if spec.holder_identity.as_deref() == Some(shard) {
                if let Some(secs) = spec.lease_duration_seconds.filter(|s| *s > 0) {
                    self.durations.insert(
                        shard.to_owned(),
                        Duration::from_secs(secs.unsigned_abs().into()),
                    );
                }
            }
        }
    }

    /// The last valid lease duration `shard` was seen to write.
    pub(crate) fn duration_of(&self, shard: &str) -> Option<Duration> {
        self.durations.get(shard).copied()
    }

    /// Forgets a deleted Lease (its shard's duration is kept).
    pub(crate) fn forget(&mut self, name: &str) {
        self.seen.remove(name);
    }

    /// Judges `lease`, the Lease of `shard`, at `now` (see the module docs). A Lease never
    /// observed counts as seen now.
    pub(crate) fn judge(&self, lease: &Lease, shard: &str, now: Instant) -> ShardState {
        let name = lease.metadata.name();
        let Some(spec) = &lease.spec else {
            return ShardState::Invalid;
        };
        let holder = spec.holder_identity.as_deref().unwrap_or("");
        if holder.is_empty() {
            return ShardState::Free;
        }
        if holder != shard {
            return ShardState::Foreign;
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

/// How many times [`prepare_lease`] tries again after losing a race.
const PREPARE_ATTEMPTS: usize = 5;

/// Makes sure the shard's Lease (`<ring>-<shard>`) exists and carries the ring's label,
/// before the shard's elector contends for it: created free (no holder) when missing,
/// labelled when it lacks the label and is free or held by the shard itself. The elector
/// keeps the label on every write (it writes back what it read).
///
/// Refused (an error): a Lease of that name carrying another ring's label, or no ring label
/// while held by someone else (a sharder's leader Lease, another program's Lease): names can
/// meet (see [`Ring`]), and relabelling would hand that Lease to this ring.
pub(crate) fn prepare_lease(client: &Client, ring: &Ring, shard: &str) -> Result<()> {
    let api: Api<Lease> = Api::namespaced(client.clone(), ring.namespace());
    let name = ring.shard_lease(shard);
    let mut last = None;
    for _ in 0..PREPARE_ATTEMPTS {
        let attempt = match api.get(&name) {
            Ok(lease) => {
                match lease.metadata.label(RING_LABEL) {
                    Some(r) if r == ring.name() => return Ok(()),
                    Some(other) => {
                        return Err(Error::InvalidInput(format!(
                        "sharding: the Lease {}/{name} belongs to the ring {other:?}, not {:?}: \
                             choose another shard id or ring name",
                        ring.namespace(),
                        ring.name()
                    )))
                    }
                    None => {}
                }
                let holder = lease
                    .spec
                    .as_ref()
                    .and_then(|s| s.holder_identity.as_deref())
                    .unwrap_or("");
                if !holder.is_empty() && holder != shard {
                    return Err(Error::InvalidInput(format!(
                        "sharding: the Lease {}/{name} is held by {holder:?} and is not a shard \
                         Lease of the ring {:?}: choose another shard id or ring name",
                        ring.namespace(),
                        ring.name()
                    )));
                }
                let mut ops = vec![PatchOperation::test(
                    "/metadata/resourceVersion",
                    lease.metadata.resource_version(),
                )];
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
                api.patch(&name, &PatchParams::default(), &Patch::json(ops))
                    .map(|_| ())
            }
            Err(e) if e.is_not_found() => {
                let mut lease = Lease::new(ring.namespace(), &name);
                let mut labels = crate::api::StringMap::new();
                labels.insert(RING_LABEL, ring.name());
                lease.metadata.labels = Some(labels);
                lease.spec = Some(LeaseSpec::default());
                api.create(&PostParams::default(), &lease).map(|_| ())
            }
            Err(e) => Err(e),
        };
        match attempt {
            Ok(()) => return Ok(()),
            // Written meanwhile (an earlier run, a fence, the elector): look again.
            Err(e) if e.is_conflict() || e.is_already_exists() || e.is_invalid() => {
                last = Some(e);
            }
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| Error::InvalidInput("sharding: preparing the Lease".into())))
}

/// The shard `lease` is the Lease of, when it is one of `ring`'s.
pub(crate) fn shard_of<'a>(lease: &'a Lease, ring: &Ring) -> Option<&'a str> {
    if lease.metadata().label(RING_LABEL) != Some(ring.name())
        || lease.metadata().namespace() != ring.namespace()
    {
        return None;
    }
    ring.shard_of_lease(lease.metadata().name())
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
            obs.judge(&live, "a", t0),
            ShardState::Live(t0 + Duration::from_secs(10))
        );
        assert_eq!(
            obs.judge(&live, "a", t0 + Duration::from_secs(10)),
            ShardState::Expired
        );
        // Seen again unchanged: the first sighting still counts.
        obs.observe(&live, t0 + Duration::from_secs(5));
        assert_eq!(
            obs.judge(&live, "a", t0 + Duration::from_secs(11)),
            ShardState::Expired
        );
        // A renewal (a changed record) restarts the clock.
        let mut renewed = live.clone();
        renewed.spec.as_mut().unwrap().renew_time = Some(MicroTime::from_system_time(
            std::time::SystemTime::now() + Duration::from_secs(1),
        ));
        obs.observe(&renewed, t0 + Duration::from_secs(11));
        assert!(obs
            .judge(&renewed, "a", t0 + Duration::from_secs(12))
            .is_live());
        // Never observed: counted from now.
        assert!(obs
            .judge(&lease("b", Some("b"), Some(1)), "b", t0)
            .is_live());
        for (l, want) in [
            (lease("c", None, Some(10)), ShardState::Free),
            (lease("c", Some(""), Some(10)), ShardState::Free),
            (lease("c", Some("sharder"), Some(10)), ShardState::Foreign),
            (lease("c", Some("c"), Some(0)), ShardState::Invalid),
            (lease("c", Some("c"), Some(-5)), ShardState::Invalid),
            (lease("c", Some("c"), None), ShardState::Invalid),
            (Lease::new("ns", "c"), ShardState::Invalid),
        ] {
            assert_eq!(obs.judge(&l, "c", t0), want, "{l:?}");
            assert_eq!(
                want.fence_proves_stop(),
                matches!(want, ShardState::Free),
                "{l:?}"
            );
        }
    }
}
