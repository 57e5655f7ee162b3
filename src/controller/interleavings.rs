//! Interleaving checks of the leader elector under the `shuttle` model checker (see
//! `cache/interleavings` for how to run them: `cargo test --lib interleav` with
//! `--cfg shuttle`).
//!
//! Why: an elector's state is handed between four threads — the elector (acquire, renew,
//! release), the watchdog (ends a term at its renew deadline), the term's thread (the user's
//! callbacks) and whoever calls `stop`. The checks run the real elector against a Lease kept
//! in memory (same 404/409 rules as the API server) and, in every explored order, require:
//! `stop` returns (no lost wake-up); every started term gets exactly one stopped callback, and
//! one elector's terms never overlap; no two electors lead at once when the lease changes
//! hands only by release (the lease duration is an hour, so it never expires here); nobody
//! leads after `stop`.
//!
//! Time is not modelled: under shuttle a timed wait ends at a point shuttle picks, and the
//! renew deadline (2 µs) has nearly always passed when the watchdog looks, so the watchdog's
//! step-down races every renewal, acquisition and stop.

use std::sync::Arc;
use std::time::Duration;

use super::leader_election::{LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseBackend};
use super::lease::Lease;
use crate::api::Status;
use crate::cache::interleavings::explore;
use crate::client::Cancel;
use crate::error::{Error, Result};
use crate::sync::{Condvar, Mutex};

/// The Lease in memory: a version counter and the stored record.
#[derive(Clone, Default)]
struct Memory(Arc<Mutex<(u64, Option<Lease>)>>);

fn status(code: u16, reason: &str) -> Error {
    Error::Api {
        request: "memory".into(),
        status: Box::new(Status::failure(code, reason, reason)),
    }
}

impl Memory {
    fn write(&self, lease: &Lease, create: bool) -> Result<Lease> {
        let mut st = self.0.lock();
        match (&st.1, create) {
            (Some(_), true) => return Err(status(409, "AlreadyExists")),
            (None, false) => return Err(status(404, "NotFound")),
            (Some(cur), false)
                if cur.metadata.resource_version != lease.metadata.resource_version =>
            {
                return Err(status(409, "Conflict"))
            }
            _ => {}
        }
        st.0 += 1;
        let mut stored = lease.clone();
        stored.metadata.resource_version = Some(st.0.to_string());
        st.1 = Some(stored.clone());
        Ok(stored)
    }
}

impl LeaseBackend for Memory {
    fn get(&self) -> Result<Lease> {
        self.0
            .lock()
            .1
            .clone()
            .ok_or_else(|| status(404, "NotFound"))
    }
    fn create(&self, lease: &Lease) -> Result<Lease> {
        self.write(lease, true)
    }
    fn replace(&self, lease: &Lease) -> Result<Lease> {
        self.write(lease, false)
    }
    fn release(&self, lease: &Lease) -> Result<Lease> {
        self.write(lease, false)
    }
}

/// Every callback, in order: (elector, started?).
#[derive(Clone, Default)]
struct Log {
    events: Arc<Mutex<Vec<(&'static str, bool)>>>,
    changed: Arc<Condvar>,
}

impl Log {
    fn callbacks(&self, id: &'static str) -> LeaderCallbacks {
        let (a, b) = (self.clone(), self.clone());
        LeaderCallbacks::new(move |term| {
            a.events.lock().push((id, true));
            a.changed.notify_all();
            term.wait();
        })
        .on_stopped_leading(move || {
            b.events.lock().push((id, false));
            b.changed.notify_all();
        })
    }

    /// Blocks until some term has started.
    fn wait_for_a_term(&self) {
        let mut events = self.events.lock();
        while !events.iter().any(|e| e.1) {
            self.changed.wait(&mut events);
        }
    }

    /// Terms alternate started/stopped across all electors, and every one ended.
    fn check(&self) {
        let events = self.events.lock().clone();
        let mut leading: Option<&str> = None;
        for (id, started) in events.iter() {
            if *started {
                assert!(
                    leading.is_none(),
                    "{id} started while {leading:?} led: {events:?}"
                );
                leading = Some(id);
            } else {
                assert_eq!(leading, Some(*id), "{events:?}");
                leading = None;
            }
        }
        assert!(leading.is_none(), "a term never ended: {events:?}");
    }
}

fn config(id: &str) -> LeaderElectionConfig {
    LeaderElectionConfig::new("lab", "lease", id)
        .lease_duration(Duration::from_secs(3600))
        .renew_deadline(Duration::from_micros(2))
        .retry_period(Duration::from_micros(1))
}

fn start(memory: &Memory, log: &Log, id: &'static str) -> LeaderElector {
    LeaderElector::start_with(
        memory.clone(),
        config(id),
        log.callbacks(id),
        Cancel::new(),
        Cancel::new(),
    )
    .expect("valid config")
}

/// Whether the stored record names `id` as the holder.
fn leader_is(memory: &Memory, id: &str) -> bool {
    memory
        .get()
        .ok()
        .and_then(|l| l.spec?.holder_identity)
        .is_some_and(|h| h == id)
}

#[test]
fn interleavings_elector_stopped_at_any_point() {
    explore(|| {
        let (memory, log) = (Memory::default(), Log::default());
        let a = start(&memory, &log, "a");
        a.stop();
        log.check();
        assert!(!leader_is(&memory, "a"), "stopped without releasing");
    });
}

#[test]
fn interleavings_two_electors_hand_over_by_release() {
    explore(|| {
        let (memory, log) = (Memory::default(), Log::default());
        let a = start(&memory, &log, "a");
        let b = start(&memory, &log, "b");
        log.wait_for_a_term();
        let first = log.events.lock()[0].0;
        let (leader, other) = if first == "a" { (a, b) } else { (b, a) };
        leader.stop();
        assert!(
            !leader_is(&memory, first),
            "{first} stopped without releasing"
        );
        other.stop();
        log.check();
        let record = memory.get().expect("the lease exists");
        let holder = record.spec.and_then(|s| s.holder_identity);
        assert_eq!(holder.as_deref(), Some(""), "the last leader released it");
    });
}
