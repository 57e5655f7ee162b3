//! What a controller tells about its reconciles: how many, and how they ended.
//!
//! Why: the queue's metrics say how long keys wait and how often they are retried, but not
//! whether a retry came from an error or a panic, nor how many reconciles asked to look
//! again later. A plain value, copied into whatever metrics system the program uses (no
//! runtime dependency), like [`QueueMetrics`](crate::workqueue::QueueMetrics).

use parking_lot::Mutex;

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
}

/// The live counters, shared by the workers (one short lock per reconcile, so a snapshot is
/// consistent: the outcomes never add up to more than `reconciles`).
#[derive(Default)]
pub(crate) struct Counters {
    stats: Mutex<ControllerStats>,
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
    /// Counts how the reconcile ended.
    pub(super) fn end(self, outcome: Outcome) {
        self.counters.record(outcome);
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Done,
    Requeue,
    Error,
    Panic,
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

    fn record(&self, outcome: Outcome) {
        let mut s = self.stats.lock();
        s.reconciles += 1;
        match outcome {
            Outcome::Done => {}
            Outcome::Requeue => s.requeues += 1,
            Outcome::Error => s.errors += 1,
            Outcome::Panic => s.panics += 1,
        }
    }

    pub(crate) fn snapshot(&self) -> ControllerStats {
        *self.stats.lock()
    }
}
