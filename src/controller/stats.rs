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
#[derive(Debug, Default)]
pub(super) struct Counters(Mutex<ControllerStats>);

/// How one reconcile ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    Done,
    Requeue,
    Error,
    Panic,
}

impl Counters {
    pub(super) fn record(&self, outcome: Outcome) {
        let mut s = self.0.lock();
        s.reconciles += 1;
        match outcome {
            Outcome::Done => {}
            Outcome::Requeue => s.requeues += 1,
            Outcome::Error => s.errors += 1,
            Outcome::Panic => s.panics += 1,
        }
    }

    pub(super) fn snapshot(&self) -> ControllerStats {
        *self.0.lock()
    }
}
