//! The elector thread (`ki/<lease>/elec`): acquire the lease, start a term, renew every
//! retry period until the term ends, and again; release the lease on a clean stop.
//!
//! The rules it applies to the record (expiry by this process's clock, optimistic
//! concurrency, malformed records) are in the module docs. A term's thread (`ki/<lease>/lead`,
//! the started and then the stopped callback) starts only after the previous term's thread
//! returned, so one elector's terms never overlap; the renew deadline is enforced apart, by
//! the watchdog.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::callbacks::{LeaderCallbacks, Term};
use super::config::JITTER_FACTOR;
use super::lease_backend::LeaseBackend;
use super::shared_state::Shared;
use crate::client::Cancel;
use crate::controller::lease::{Lease, LeaseSpec, MicroTime};
use crate::error::{Error, Result};
// From the shim, so that the interleaving checks (`--cfg shuttle`) run this very code.
use crate::sync::thread::{self, JoinHandle};

/// What one attempt to acquire or renew found.
enum Attempt {
    /// This elector holds the lease (acquired or renewed) as of the request sent at `sent`.
    Holding,
    /// Another holder's lease has not expired.
    HeldByOther,
    /// Another elector wrote first (409), or the request failed: try again later.
    Retry,
}

/// The elector thread's state.
pub(super) struct Run<'a> {
    shared: &'a Shared,
    backend: Box<dyn LeaseBackend>,
    callbacks: LeaderCallbacks,
    /// The last record read or written (its `resourceVersion` guards the next write).
    record: Option<Lease>,
    /// The spec as last seen changed, and when this process saw it change.
    observed: Option<(Option<LeaseSpec>, Instant)>,
    reported_leader: Option<String>,
    junk_logged: Option<String>,
    last_error: Option<String>,
    terms: u64,
    rng: u64,
}

impl<'a> Run<'a> {
    pub(super) fn new(
        shared: &'a Shared,
        backend: Box<dyn LeaseBackend>,
        callbacks: LeaderCallbacks,
    ) -> Self {
        let c = &shared.config;
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
            ^ (c.identity
                .bytes()
                .fold(0u64, |h, b| h.wrapping_mul(0x100_0000_01b3) ^ u64::from(b)));
        Run {
            shared,
            backend,
            callbacks,
            record: None,
            observed: None,
            reported_leader: None,
            junk_logged: None,
            last_error: None,
            terms: 0,
            rng: seed | 1,
        }
    }

    /// A retry period stretched by up to `JITTER_FACTOR`.
    fn jittered(&mut self) -> Duration {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let f = (self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64;
        let p = self.shared.config.retry_period;
        p + p.mul_f64((JITTER_FACTOR - 1.0) * f)
    }

    fn identity(&self) -> &str {
        &self.shared.config.identity
    }

    pub(super) fn run(&mut self) {
        let mut previous: Option<JoinHandle<()>> = None;
        loop {
            // Acquire.
            let sent = loop {
                if self.shared.pause_point() {
                    return self.finish(previous.take());
                }
                let sent = Instant::now();
                if let Attempt::Holding = self.try_acquire_or_renew() {
                    break sent;
                }
                let wait = self.jittered();
                if self.shared.stop.sleep(wait) {
                    return self.finish(previous.take());
                }
            };
            // The previous term's thread has returned before a new term starts.
            join_term(previous.take());
            self.terms += 1;
            let term = Term {
                stop: Cancel::new(),
                number: self.terms,
                identity: self.identity().to_owned(),
            };
            {
                let mut st = self.shared.state.lock();
                if st.stopping {
                    drop(st);
                    if self.shared.config.release_on_cancel {
                        self.release();
                    }
                    return;
                }
                st.term = Some((
                    term.stop.clone(),
                    crate::deadline::at(sent, self.shared.config.renew_deadline),
                ));
                st.last_renew = Some(sent);
            }
            self.shared.cond.notify_all();
            log::info!(
                "leader election {}: {} is leading (term {})",
                self.shared.lease_name,
                self.identity(),
                term.number
            );
            match self.spawn_term(&term) {
                Ok(t) => previous = Some(t),
                Err(e) => log::error!("leader election {}: {e}", self.shared.lease_name),
            }
            // Renew until the term ends.
            self.renew(&term);
            term.stop.cancel();
            let stopping = {
                let mut st = self.shared.state.lock();
                st.term = None;
                st.stopping
            };
            self.shared.cond.notify_all();
            if stopping {
                join_term(previous.take());
                if self.shared.config.release_on_cancel {
                    self.release();
                }
                return;
            }
            log::warn!(
                "leader election {}: {} stopped leading (term {})",
                self.shared.lease_name,
                self.identity(),
                term.number
            );
        }
    }

    /// Stopping between terms: the last term's callbacks return, then the lease is released
    /// if the last record seen still names this elector (a term ended by the watchdog leaves
    /// it so until the next acquisition).
    fn finish(&mut self, previous: Option<JoinHandle<()>>) {
        join_term(previous);
        if self.shared.config.release_on_cancel {
            self.release();
        }
    }

    /// Starts the term's thread: the started callback, then (once the term ended) the
    /// stopped callback.
    fn spawn_term(&self, term: &Term) -> Result<JoinHandle<()>> {
        let (term, started, stopped) = (
            term.clone(),
            Arc::clone(&self.callbacks.started),
            self.callbacks.stopped.clone(),
        );
        let lease = self.shared.lease_name.clone();
        thread::Builder::new()
            .name(crate::thread_name::thread_name(
                &self.shared.config.name,
                "lead",
            ))
            .spawn(move || {
                if catch_unwind(AssertUnwindSafe(|| started(&term))).is_err() {
                    log::error!("leader election {lease}: the started-leading callback panicked");
                }
                term.wait();
                if let Some(stopped) = stopped {
                    if catch_unwind(AssertUnwindSafe(|| stopped())).is_err() {
                        log::error!(
                            "leader election {lease}: the stopped-leading callback panicked"
                        );
                    }
                }
            })
            .map_err(|e| Error::Config(format!("spawning the leader thread: {e}")))
    }

    /// Renews every retry period until the term ends (deadline, another holder, stop).
    fn renew(&mut self, term: &Term) {
        loop {
            if self.shared.stop.sleep(self.shared.config.retry_period)
                || self.shared.pause_point()
                || term.is_stopped()
            {
                return;
            }
            let sent = Instant::now();
            match self.try_acquire_or_renew() {
                Attempt::Holding => {
                    let mut st = self.shared.state.lock();
                    if term.is_stopped() {
                        // The watchdog ended the term while the renewal was in flight.
                        return;
                    }
                    if let Some((_, deadline)) = &mut st.term {
                        *deadline = crate::deadline::at(sent, self.shared.config.renew_deadline);
                    }
                    st.last_renew = Some(sent);
                    drop(st);
                    self.shared.cond.notify_all();
                }
                Attempt::HeldByOther => {
                    log::warn!(
                        "leader election {}: the lease is held by {:?} now",
                        self.shared.lease_name,
                        self.reported_leader.as_deref().unwrap_or("")
                    );
                    return;
                }
                Attempt::Retry => {}
            }
        }
    }

    /// Reads the record, and writes it with this elector as the holder when it is free,
    /// expired or already ours.
    fn try_acquire_or_renew(&mut self) -> Attempt {
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
                if let Some(cb) = &self.callbacks.new_leader {
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
    fn release(&mut self) {
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

/// Waits for a term's thread (its callbacks) to return.
fn join_term(t: Option<JoinHandle<()>>) {
    if let Some(t) = t {
        let _ = t.join();
    }
}
