//! What a work queue tells about itself: depth, adds, retries, time spent waiting and working
//! — client-go's workqueue metrics, as a plain value a program copies into whatever metrics
//! system it uses (no runtime dependency).

use std::time::Duration;

/// A snapshot of a queue's counters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueueMetrics {
    /// Items waiting now (not counting items delayed for later).
    pub depth: usize,
    /// Items being processed now.
    pub processing: usize,
    /// Items waiting for a delay to pass (delaying and rate-limited queues).
    pub waiting_for_delay: usize,
    /// Calls to `add` that queued something (an item already waiting is not counted again).
    pub adds: u64,
    /// Calls to `add_rate_limited` (retries).
    pub retries: u64,
    /// Items handed out by `get`.
    pub gets: u64,
    /// Total and longest time items spent queued before `get`.
    pub queue_time_total: Duration,
    /// Longest time one item spent queued before `get`.
    pub queue_time_max: Duration,
    /// Total time between `get` and `done`.
    pub work_time_total: Duration,
    /// Longest time between `get` and `done`.
    pub work_time_max: Duration,
    /// How long the longest-running item now in processing has been at it.
    pub longest_running: Duration,
    /// How long every item now in processing has been at it, added up (client-go's
    /// `unfinished_work_seconds`: it grows while a worker is stuck).
    pub unfinished_work: Duration,
}

/// Told how long each item waited and was worked on, for histograms (client-go's
/// `workqueue_queue_duration_seconds` and `workqueue_work_duration_seconds`); set by
/// `metrics::Metrics::register_queue`. Called under the queue's lock: keep it quick.
#[cfg(feature = "metrics")]
pub(crate) trait QueueObserver: Send + Sync {
    /// An item was handed out after waiting `waited` in the queue.
    fn queued(&self, waited: Duration);
    /// An item was done after `took` in processing.
    fn worked(&self, took: Duration);
}
