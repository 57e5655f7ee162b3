//! `LeaseRecord`: this elector's dealings with the Lease record. One attempt to acquire or
//! renew reads the record, judges it, and writes it with this elector as the holder; a
//! clean stop writes it with no holder. It remembers what it last read or wrote.
//!
//! Why apart from the elector thread: this is where the record's rules live, and they are
//! what makes several electors agree. A holder's record expires when it has not changed for
//! its `leaseDurationSeconds` *by this process's monotonic clock*, counted from when this
//! process first saw it as it is; the times written in it are never compared with the local
//! clock, so clock skew between replicas does not matter. Every write carries the
//! `resourceVersion` read (a 409 is a lost race, not an error), and a record with missing or
//! nonsense fields is taken as the module docs say, with each distinct problem logged once.
//! The elector thread only decides when to call it.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use super::callbacks::NewLeader;
use super::lease_backend::LeaseBackend;
use super::shared_state::Shared;
use crate::controller::lease::{Lease, LeaseSpec, MicroTime};
use crate::error::Error;

/// What one attempt to acquire or renew found.
pub(super) enum Attempt {
    /// This elector holds the lease (acquired or renewed) as of the request sent at `sent`.
    Holding,
    /// Another holder's lease has not expired.
    HeldByOther,
    /// Another elector wrote first (409), or the request failed: try again later.
    Retry,
}

/// This elector's side of the Lease record: the requests that acquire, renew and release it,
/// and what it last saw of it.
pub(super) struct LeaseRecord<'a> {
    shared: &'a Shared,
    backend: Box<dyn LeaseBackend>,
    /// Called when the observed holder changes.
    new_leader: Option<NewLeader>,
    /// The last record read or written (its `resourceVersion` guards the next write).
    record: Option<Lease>,
    /// The spec as last seen changed, and when this process saw it change.
    observed: Option<(Option<LeaseSpec>, Instant)>,
    /// The holder last reported (logged, and given to the new-leader callback).
    pub(super) reported_leader: Option<String>,
    junk_logged: Option<String>,
    last_error: Option<String>,
}

impl<'a> LeaseRecord<'a> {
    pub(super) fn new(
        shared: &'a Shared,
        backend: Box<dyn LeaseBackend>,
        new_leader: Option<NewLeader>,
    ) -> Self {
        LeaseRecord {
            shared,
            backend,
            new_leader,
            record: None,
            observed: None,
            reported_leader: None,
            junk_logged: None,
            last_error: None,
        }
    }

    /// Reads the record, and writes it with this elector as the holder when it is free,
    /// expired or already ours.
    pub(super) fn try_acquire_or_renew(&mut self) -> Attempt {
        let c = &self.shared.config;
        let now = MicroTime::now();
        let lease_secs = c.lease_seconds().unwrap_or(i32::MAX);
        let current = match self.backend.get() {
            Ok(l) => l,
            Err(e) if e.is_not_found() => {
                let mut lease = Lease::new(&c.namespace, &c.name);
                lease.spec = Some(LeaseSpec {
                    holder_identity: Some(c.identity.clone()),
                    lease_duration_seconds: Some(lease_secs),
                    acquire_time: Some(now),
                    renew_time: Some(now),
                    lease_transitions: Some(0),
                    ..Default::default()
                });
                return match self.backend.create(&lease) {
                    Ok(l) => {
                        self.observe(l);
                        Attempt::Holding
                    }
                    Err(e) => self.failed("creating the Lease", e),
                };
            }
            Err(e) => return self.failed("reading the Lease", e),
        };
        self.observe(current.clone());
        let spec = current.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().filter(|h| !h.is_empty());
        let mine = holder.as_deref() == Some(c.identity.as_str());
        if holder.is_some() && !mine && !self.expired(&spec) {
            return Attempt::HeldByOther;
        }
        let transitions = spec.lease_transitions.unwrap_or(0).max(0);
        let mut lease = current;
        lease.spec = Some(LeaseSpec {
            holder_identity: Some(c.identity.clone()),
            lease_duration_seconds: Some(lease_secs),
            acquire_time: if mine {
                spec.acquire_time.or(Some(now))
            } else {
                Some(now)
            },
            renew_time: Some(now),
            lease_transitions: Some(if mine {
                transitions
            } else {
                transitions.saturating_add(1)
            }),
            strategy: spec.strategy,
            preferred_holder: spec.preferred_holder,
        });
        match self.backend.replace(&lease) {
            Ok(l) => {
                self.observe(l);
                Attempt::Holding
            }
            Err(e) => self.failed("updating the Lease", e),
        }
    }

    /// Whether the observed record has gone unchanged for its holder's lease duration.
    fn expired(&self, spec: &LeaseSpec) -> bool {
        let Some((_, seen)) = &self.observed else {
            return false;
        };
        let secs = spec
            .lease_duration_seconds
            .filter(|s| *s > 0)
            .map(|s| Duration::from_secs(s.unsigned_abs().into()))
            .unwrap_or(self.shared.config.lease_duration);
        Instant::now() >= crate::deadline::at(*seen, secs)
    }

    /// Notes a record read or written: when its spec changed (by this process's clock), who
    /// holds it, and anything wrong with it.
    fn observe(&mut self, lease: Lease) {
        let changed = self
            .observed
            .as_ref()
            .is_none_or(|(spec, _)| *spec != lease.spec);
        if changed {
            self.observed = Some((lease.spec.clone(), Instant::now()));
            self.check_junk(&lease);
        }
        self.last_error = None;
        self.shared.state.lock().last_error = None;
        let holder = lease
            .spec
            .as_ref()
            .and_then(|s| s.holder_identity.clone())
            .filter(|h| !h.is_empty());
        self.shared.state.lock().leader = holder.clone();
        if let Some(h) = holder {
            if self.reported_leader.as_deref() != Some(h.as_str()) {
                self.reported_leader = Some(h.clone());
                log::info!("leader election {}: new leader {h}", self.shared.lease_name);
                if let Some(cb) = &self.new_leader {
                    if catch_unwind(AssertUnwindSafe(|| cb(&h))).is_err() {
                        log::error!(
                            "leader election {}: the new-leader callback panicked",
                            self.shared.lease_name
                        );
                    }
                }
            }
        }
        self.record = Some(lease);
    }

    /// Logs once what is wrong with a record held by someone.
    fn check_junk(&mut self, lease: &Lease) {
        let Some(spec) = &lease.spec else {
            return self.log_junk("it has no spec; counted as free");
        };
        if spec.holder_identity.as_deref().unwrap_or("").is_empty() {
            return; // free: a released lease looks like this
        }
        let mut problems = Vec::new();
        if spec.lease_duration_seconds.is_none_or(|s| s <= 0) {
            problems.push(format!(
                "leaseDurationSeconds missing or not positive; counted as {:?}",
                self.shared.config.lease_duration
            ));
        }
        if spec.renew_time.is_none() {
            problems.push("renewTime missing or unparsable (not used to decide)".to_owned());
        }
        if spec.lease_transitions.is_none_or(|t| t < 0) {
            problems.push("leaseTransitions missing or negative; counted as 0".to_owned());
        }
        if !problems.is_empty() {
            self.log_junk(&problems.join("; "));
        }
    }

    fn log_junk(&mut self, what: &str) {
        if self.junk_logged.as_deref() != Some(what) {
            log::warn!(
                "leader election {}: the Lease record is malformed: {what}",
                self.shared.lease_name
            );
            self.junk_logged = Some(what.to_owned());
        }
    }

    /// A failed request: a 409 is a lost race (quiet); anything else is logged when it
    /// differs from the previous failure.
    fn failed(&mut self, what: &str, e: Error) -> Attempt {
        if e.is_conflict() || e.is_cancelled() {
            return Attempt::Retry;
        }
        let message = format!("{what}: {e}");
        if self.last_error.as_deref() != Some(message.as_str()) {
            log::warn!("leader election {}: {message}", self.shared.lease_name);
            self.last_error = Some(message.clone());
        }
        self.shared.state.lock().last_error = Some(message);
        Attempt::Retry
    }

    /// Writes a record with no holder (if the last one seen is ours), so a successor
    /// acquires at once.
    pub(super) fn release(&mut self) {
        self.shared.state.lock().releasing = true;
        self.shared.cond.notify_all();
        let c = &self.shared.config;
        let Some(mut lease) = self.record.take() else {
            return;
        };
        let spec = lease.spec.clone().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(c.identity.as_str()) {
            return;
        }
        let now = MicroTime::now();
        lease.spec = Some(LeaseSpec {
            holder_identity: Some(String::new()),
            lease_duration_seconds: Some(1),
            acquire_time: Some(now),
            renew_time: Some(now),
            lease_transitions: spec.lease_transitions,
            strategy: spec.strategy,
            preferred_holder: spec.preferred_holder,
        });
        match self.backend.release(&lease) {
            Ok(_) => log::info!(
                "leader election {}: {} released the lease",
                self.shared.lease_name,
                c.identity
            ),
            Err(e) => log::warn!(
                "leader election {}: releasing the lease: {e}",
                self.shared.lease_name
            ),
        }
    }
}
