//! The elector thread (`ki/<lease>/elec`): acquire the lease, start a term, renew every
//! retry period until the term ends, and again; release the lease on a clean stop.
//!
//! It decides when to act; what one attempt on the record does (read, judge expiry by this
//! process's clock, write) and the release are `LeaseRecord`'s (`record.rs`). A term's
//! thread (`ki/<lease>/lead`, the started and then the stopped callback) starts only after
//! the previous term's thread returned, so one elector's terms never overlap; the renew
//! deadline is enforced apart, by the watchdog.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::callbacks::{LeaderCallbacks, Term};
use super::config::JITTER_FACTOR;
use super::lease_backend::LeaseBackend;
use super::record::{Attempt, LeaseRecord};
use super::shared_state::Shared;
use crate::client::Cancel;
use crate::error::{Error, Result};
// From the shim, so that the interleaving checks (`--cfg shuttle`) run this very code.
use crate::sync::thread::{self, JoinHandle};

/// The elector thread's state.
pub(super) struct Run<'a> {
    shared: &'a Shared,
    callbacks: LeaderCallbacks,
    /// The Lease record as this elector sees it, and the requests on it.
    lease: LeaseRecord<'a>,
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
            lease: LeaseRecord::new(shared, backend, callbacks.new_leader.clone()),
            callbacks,
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
                if let Attempt::Holding = self.lease.try_acquire_or_renew() {
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
                        self.lease.release();
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
                    self.lease.release();
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
            self.lease.release();
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
            match self.lease.try_acquire_or_renew() {
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
                        self.lease.reported_leader.as_deref().unwrap_or("")
                    );
                    return;
                }
                Attempt::Retry => {}
            }
        }
    }
}

/// Waits for a term's thread (its callbacks) to return.
fn join_term(t: Option<JoinHandle<()>>) {
    if let Some(t) = t {
        let _ = t.join();
    }
}
