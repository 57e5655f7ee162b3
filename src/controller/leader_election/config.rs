//! `LeaderElectionConfig`: what an elector contends for (the Lease, its own identity) and
//! how (its timings), checked against client-go's rules before an elector starts.
//!
//! Why the rules matter: a leader renews every `retry_period` and steps down when it has
//! not renewed for `renew_deadline`, before anyone else may take over at `lease_duration`.
//! A configuration that breaks that order (with client-go's margins) is refused instead of
//! run.

use std::time::Duration;

use crate::error::{Error, Result};

/// client-go's jitter factor: retries wait between 1 and 1.2 retry periods.
pub(super) const JITTER_FACTOR: f64 = 1.2;

/// What a [`LeaderElector`](super::LeaderElector) contends for and how: the Lease, the
/// identity, the timings.
///
/// The defaults are client-go's: lease 15 s, renew deadline 10 s, retry 2 s.
#[derive(Clone, Debug)]
pub struct LeaderElectionConfig {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub name: String,
    /// This replica's identity (unique among the contenders, e.g. the pod name).
    pub identity: String,
    /// How long others wait, after the record last changed, before taking over.
    pub lease_duration: Duration,
    /// How long the leader keeps leading without a successful renewal.
    pub renew_deadline: Duration,
    /// How often to try to acquire or renew.
    pub retry_period: Duration,
    /// Whether a clean stop releases the lease (so a successor takes over at once).
    pub release_on_cancel: bool,
    /// How long [`LeaderElector::stop`](super::LeaderElector::stop) lets the release request
    /// take before cutting it.
    pub release_timeout: Duration,
}

impl LeaderElectionConfig {
    /// The Lease `namespace/name`, contended for as `identity`, with client-go's timings.
    pub fn new(namespace: &str, name: &str, identity: &str) -> Self {
        LeaderElectionConfig {
            namespace: namespace.into(),
            name: name.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            release_on_cancel: true,
            release_timeout: Duration::from_secs(1),
        }
    }

    /// Sets the lease duration.
    pub fn lease_duration(mut self, d: Duration) -> Self {
        self.lease_duration = d;
        self
    }

    /// Sets the renew deadline.
    pub fn renew_deadline(mut self, d: Duration) -> Self {
        self.renew_deadline = d;
        self
    }

    /// Sets the retry period.
    pub fn retry_period(mut self, d: Duration) -> Self {
        self.retry_period = d;
        self
    }

    /// Sets whether a clean stop releases the lease.
    pub fn release_on_cancel(mut self, release: bool) -> Self {
        self.release_on_cancel = release;
        self
    }

    /// Checks client-go's rules: a namespace, name and identity; every duration positive;
    /// `lease_duration > renew_deadline > 1.2 × retry_period`; a lease that fits the record
    /// (whole seconds in an `i32`).
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidInput(format!("leader election: {m}")));
        if self.namespace.is_empty() || self.name.is_empty() {
            return bad("the Lease needs a namespace and a name".into());
        }
        if self.identity.is_empty() {
            return bad("the identity must not be empty".into());
        }
        if self.retry_period.is_zero()
            || self.renew_deadline.is_zero()
            || self.lease_duration.is_zero()
        {
            return bad("lease duration, renew deadline and retry period must be positive".into());
        }
        if self.lease_duration <= self.renew_deadline {
            return bad(format!(
                "the lease duration ({:?}) must be greater than the renew deadline ({:?})",
                self.lease_duration, self.renew_deadline
            ));
        }
        if self.renew_deadline.as_secs_f64() <= JITTER_FACTOR * self.retry_period.as_secs_f64() {
            return bad(format!(
                "the renew deadline ({:?}) must be greater than {JITTER_FACTOR} × the retry period ({:?})",
                self.renew_deadline, self.retry_period
            ));
        }
        if self.lease_seconds().is_none() {
            return bad(format!(
                "the lease duration ({:?}) does not fit the record",
                self.lease_duration
            ));
        }
        Ok(())
    }

    /// The lease duration in whole seconds, rounded up, as the record holds it.
    pub(super) fn lease_seconds(&self) -> Option<i32> {
        let d = self.lease_duration;
        let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
        i32::try_from(secs).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_follows_client_go() {
        let ok = LeaderElectionConfig::new("ns", "l", "me");
        ok.validate().unwrap();
        let s = Duration::from_secs;
        for bad in [
            ok.clone().lease_duration(s(10)),
            ok.clone().renew_deadline(s(2)).retry_period(s(2)),
            ok.clone().retry_period(Duration::ZERO),
            ok.clone().lease_duration(s(u64::MAX / 2)),
            LeaderElectionConfig::new("ns", "l", ""),
            LeaderElectionConfig::new("", "l", "me"),
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
        let short = ok
            .lease_duration(Duration::from_millis(1500))
            .renew_deadline(s(1))
            .retry_period(Duration::from_millis(200));
        short.validate().unwrap();
        assert_eq!(short.lease_seconds(), Some(2));
    }
}
