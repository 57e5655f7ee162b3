//! What a controller tells about its reconciles: how many, how they ended, and which keys
//! are failing now and why.
//!
//! Why: the queue's metrics say how long keys wait and how often they are retried, but not
//! whether a retry came from an error or a panic, nor how many reconciles asked to look
//! again later, nor *what* failed. A reconcile that fails (a 403 on every write, retried
//! forever) must be visible to a program that installed no logger: [`Controller::health`]
//! names the last error of every failing key and how long every reconcile has failed.
//! Plain values, copied into whatever metrics system the program uses (no runtime
//! dependency), like [`QueueMetrics`](crate::workqueue::QueueMetrics).
//!
//! Memory stays bounded: at most [`MAX_FAILING_KEYS`] keys are remembered (past it, the key
//! whose last failure is the oldest is forgotten); a key's entry is dropped when a reconcile
//! of it succeeds and when its primary object is deleted.
//!
//! [`Controller::health`]: super::Controller::health

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// At most this many failing keys are remembered per controller: past it, the key whose
/// last failure is the oldest is forgotten. A key's entry is also dropped when a reconcile
/// of it succeeds and when its primary object is deleted.
pub const MAX_FAILING_KEYS: usize = 1024;

/// A snapshot of a controller's reconcile counters ([`Controller::stats`](super::Controller::stats)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ControllerStats {
    /// Reconciles that ended, whatever the outcome (the three below included).
    pub reconciles: u64,
    /// Reconciles that returned an error (retried with the queue's rate limiter).
    pub errors: u64,
    /// Reconciles that panicked (caught; retried with the queue's rate limiter).
    pub panics: u64,
    /// Reconciles that asked to look again after a delay (`Action::RequeueAfter`).
    pub requeues: u64,
    /// Keys the controller's handlers (primary, `owns`, `watches`) handed to the queue, one
    /// per key per event, before the queue's deduplication: a change that queues its key
    /// twice shows here even when the queue merged the two.
    pub enqueued: u64,
    /// Updates an [`EventFilter`](super::EventFilter) dropped (primary, `owns` and
    /// `watches` together).
    pub filtered: u64,
}

/// The last failure of one key ([`ControllerHealth::failing_keys`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyError {
    /// The key (`namespace/name`, or `name`).
    pub key: String,
    /// The error's text (`Display`), or the panic's message.
    pub message: String,
    /// True when the reconcile panicked.
    pub panicked: bool,
    /// Reconciles of this key that failed in a row.
    pub failures: u32,
    /// How long ago the last one failed.
    pub ago: Duration,
}

/// What a controller is doing, and what fails ([`Controller::health`](super::Controller::health)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControllerHealth {
    /// The controller's name.
    pub name: String,
    /// The counters.
    pub stats: ControllerStats,
    /// How long every reconcile has failed: since the first failure after the last
    /// reconcile that succeeded (`Done` or `RequeueAfter`), or after the start when none
    /// did. `None` when the last reconcile succeeded, or none ran yet.
    pub failing_for: Option<Duration>,
    /// Reconciles that failed in a row (errors and panics), over all keys.
    pub consecutive_failures: u64,
    /// Every key whose last reconcile failed, in key order (at most [`MAX_FAILING_KEYS`]).
    pub failing_keys: Vec<KeyError>,
}

impl ControllerHealth {
    /// True when every reconcile has failed for longer than `bound`.
    pub fn failing_longer_than(&self, bound: Duration) -> bool {
        self.failing_for.is_some_and(|d| d > bound)
    }
}

/// A key's failure as kept.
struct Failure {
    message: String,
    panicked: bool,
    failures: u32,
    at: Instant,
}

/// The failing keys and the run of failures.
#[derive(Default)]
struct Failures {
    keys: HashMap<String, Failure>,
    /// The first failure after the last success.
    since: Option<Instant>,
    in_a_row: u64,
}

/// The live counters, shared by the workers and the handlers (one short lock per reconcile
/// or event, so a snapshot is consistent: the outcomes never add up to more than
/// `reconciles`).
#[derive(Default)]
pub(crate) struct Counters {
    stats: Mutex<ControllerStats>,
    failures: Mutex<Failures>,
    /// Reconciles running now (controller-runtime's `active_workers`).
    #[cfg(feature = "metrics")]
    active: std::sync::atomic::AtomicI64,
    /// Told how long each reconcile took (the `metrics` feature; installed once).
    #[cfg(feature = "metrics")]
    observer: std::sync::OnceLock<std::sync::Arc<dyn ReconcileObserver>>,
}

impl std::fmt::Debug for Counters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Counters")
            .field(&*self.stats.lock())
            .finish()
    }
}

/// Told how long each reconcile took, for controller-runtime's
/// `controller_runtime_reconcile_time_seconds`; installed by `metrics::Metrics`.
#[cfg(feature = "metrics")]
pub(crate) trait ReconcileObserver: Send + Sync {
    /// A reconcile ended (however) after `took`.
    fn took(&self, took: std::time::Duration);
}

/// One reconcile in progress: [`end`](Reconciling::end) counts its outcome.
pub(super) struct Reconciling<'a> {
    counters: &'a Counters,
    #[cfg(feature = "metrics")]
    started: std::time::Instant,
}

impl Reconciling<'_> {
    /// Counts how the reconcile of `key` ended.
    pub(super) fn end(self, key: &str, outcome: Outcome) {
        self.counters.record(key, outcome);
        #[cfg(feature = "metrics")]
        {
            use std::sync::atomic::Ordering;
            self.counters.active.fetch_sub(1, Ordering::Relaxed);
            if let Some(o) = self.counters.observer.get() {
                o.took(self.started.elapsed());
            }
        }
    }
}

/// How one reconcile ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Done,
    Requeue,
    /// The error's text.
    Error(String),
    /// The panic's message.
    Panic(String),
}

impl Counters {
    /// A reconcile starts.
    pub(super) fn begin(&self) -> Reconciling<'_> {
        #[cfg(feature = "metrics")]
        self.active
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Reconciling {
            counters: self,
            #[cfg(feature = "metrics")]
            started: std::time::Instant::now(),
        }
    }

    /// Reconciles running now.
    #[cfg(feature = "metrics")]
    pub(crate) fn active(&self) -> i64 {
        self.active.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Reports each reconcile's duration to `observer` (the first one installed stays).
    #[cfg(feature = "metrics")]
    pub(crate) fn set_observer(&self, observer: std::sync::Arc<dyn ReconcileObserver>) {
        let _ = self.observer.set(observer);
    }

    /// Keys whose last reconcile failed (as remembered).
    #[cfg(feature = "metrics")]
    pub(crate) fn failing_keys(&self) -> usize {
        self.failures.lock().keys.len()
    }

    /// A handler handed a key to the queue.
    pub(super) fn enqueued(&self) {
        self.stats.lock().enqueued += 1;
    }

    /// A filter dropped an update.
    pub(super) fn filtered(&self) {
        self.stats.lock().filtered += 1;
    }

    /// The primary object of `key` was deleted: its failure is forgotten (a reconcile that
    /// fails afterwards records it again).
    pub(super) fn forget(&self, key: &str) {
        self.failures.lock().keys.remove(key);
    }

    fn record(&self, key: &str, outcome: Outcome) {
        {
            let mut s = self.stats.lock();
            s.reconciles += 1;
            match &outcome {
                Outcome::Done => {}
                Outcome::Requeue => s.requeues += 1,
                Outcome::Error(_) => s.errors += 1,
                Outcome::Panic(_) => s.panics += 1,
            }
        }
        let mut f = self.failures.lock();
        let (message, panicked) = match outcome {
            Outcome::Done | Outcome::Requeue => {
                f.keys.remove(key);
                f.since = None;
                f.in_a_row = 0;
                return;
            }
            Outcome::Error(m) => (m, false),
            Outcome::Panic(m) => (m, true),
        };
        let now = Instant::now();
        f.since.get_or_insert(now);
        f.in_a_row += 1;
        if let Some(entry) = f.keys.get_mut(key) {
            entry.message = message;
            entry.panicked = panicked;
            entry.failures = entry.failures.saturating_add(1);
            entry.at = now;
            return;
        }
        if f.keys.len() >= MAX_FAILING_KEYS {
            let oldest = f
                .keys
                .iter()
                .min_by_key(|(_, e)| e.at)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                f.keys.remove(&k);
            }
        }
        f.keys.insert(
            key.to_owned(),
            Failure {
                message,
                panicked,
                failures: 1,
                at: now,
            },
        );
    }

    pub(crate) fn snapshot(&self) -> ControllerStats {
        *self.stats.lock()
    }

    /// The health view (`name` is the controller's).
    pub(crate) fn health(&self, name: &str) -> ControllerHealth {
        let stats = self.snapshot();
        let f = self.failures.lock();
        let now = Instant::now();
        let mut failing_keys: Vec<KeyError> = f
            .keys
            .iter()
            .map(|(k, e)| KeyError {
                key: k.clone(),
                message: e.message.clone(),
                panicked: e.panicked,
                failures: e.failures,
                ago: now.saturating_duration_since(e.at),
            })
            .collect();
        failing_keys.sort_unstable_by(|a, b| a.key.cmp(&b.key));
        ControllerHealth {
            name: name.to_owned(),
            stats,
            failing_for: f.since.map(|s| now.saturating_duration_since(s)),
            consecutive_failures: f.in_a_row,
            failing_keys,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_kept_per_key_and_dropped_on_success() {
        let c = Counters::default();
        c.begin().end("a", Outcome::Error("forbidden".into()));
        c.begin().end("a", Outcome::Error("forbidden again".into()));
        c.begin().end("b", Outcome::Panic("boom".into()));
        let h = c.health("ctl");
        assert_eq!(h.stats.errors, 2);
        assert_eq!(h.stats.panics, 1);
        assert_eq!(h.consecutive_failures, 3);
        assert!(h.failing_for.is_some());
        let keys: Vec<_> = h
            .failing_keys
            .iter()
            .map(|e| (e.key.as_str(), e.message.as_str(), e.failures, e.panicked))
            .collect();
        assert_eq!(
            keys,
            [("a", "forbidden again", 2, false), ("b", "boom", 1, true)]
        );
        c.begin().end("a", Outcome::Done);
        let h = c.health("ctl");
        assert_eq!(h.failing_for, None);
        assert_eq!(h.consecutive_failures, 0);
        assert_eq!(h.failing_keys.len(), 1);
        c.forget("b");
        assert!(c.health("ctl").failing_keys.is_empty());
    }

    #[test]
    fn failing_keys_are_capped() {
        let c = Counters::default();
        for i in 0..MAX_FAILING_KEYS + 10 {
            c.begin().end(&format!("k{i}"), Outcome::Error("no".into()));
        }
        let h = c.health("ctl");
        assert_eq!(h.failing_keys.len(), MAX_FAILING_KEYS);
        assert_eq!(h.consecutive_failures, (MAX_FAILING_KEYS + 10) as u64);
    }
}
