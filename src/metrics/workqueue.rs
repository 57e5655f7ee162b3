//! client-go's work queue metrics, under client-go's names and its `name` label, so that
//! dashboards and alerts written for Go controllers work unchanged:
//! `workqueue_depth`, `workqueue_adds_total`, `workqueue_queue_duration_seconds`,
//! `workqueue_work_duration_seconds`, `workqueue_unfinished_work_seconds`,
//! `workqueue_longest_running_processor_seconds`, `workqueue_retries_total`.
//!
//! The gauges and counters are read from [`QueueMetrics`] at scrape time; the two
//! histograms are observed by the queue itself (the only per-item cost of the feature: a
//! short lock and a bucket search per `get` and per `done`).

use std::hash::Hash;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};

use super::encode::{counters, gauges, secs};
use crate::workqueue::{DelayingQueue, Queue, QueueMetrics, RateLimitingQueue};

/// The label set of every workqueue metric: `name`.
pub(super) type NameLabel = [(&'static str, String); 1];

/// client-go's buckets for both duration histograms: 10 ns to 10 s, by tens.
fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(10e-9, 10.0, 10))
}

/// A work queue whose figures [`Metrics`](super::Metrics) can export: the library's
/// [`Queue`], [`DelayingQueue`] and [`RateLimitingQueue`].
pub trait MeteredQueue: Send + Sync + 'static {
    /// The queue's counters now.
    fn queue_metrics(&self) -> QueueMetrics;
    /// Reports each item's time queued and time in processing to `histograms` from now on.
    #[doc(hidden)]
    fn observe_durations(&self, histograms: QueueHistograms);
}

/// The two histograms of one queue (opaque; installed by [`Metrics::register_queue`](super::Metrics::register_queue)).
#[doc(hidden)]
pub struct QueueHistograms {
    queued: Histogram,
    worked: Histogram,
}

impl crate::workqueue::QueueObserver for QueueHistograms {
    fn queued(&self, waited: Duration) {
        self.queued.observe(secs(waited));
    }
    fn worked(&self, took: Duration) {
        self.worked.observe(secs(took));
    }
}

impl<T: Hash + Eq + Clone + Send + Sync + 'static> MeteredQueue for Queue<T> {
    fn queue_metrics(&self) -> QueueMetrics {
        self.metrics()
    }
    fn observe_durations(&self, histograms: QueueHistograms) {
        self.set_observer(Arc::new(histograms));
    }
}

impl<T: Hash + Eq + Clone + Send + Sync + 'static> MeteredQueue for DelayingQueue<T> {
    fn queue_metrics(&self) -> QueueMetrics {
        self.metrics()
    }
    fn observe_durations(&self, histograms: QueueHistograms) {
        self.set_observer(Arc::new(histograms));
    }
}

impl<T: Hash + Eq + Clone + Send + Sync + 'static> MeteredQueue for RateLimitingQueue<T> {
    fn queue_metrics(&self) -> QueueMetrics {
        self.metrics()
    }
    fn observe_durations(&self, histograms: QueueHistograms) {
        self.set_observer(Arc::new(histograms));
    }
}

/// Every registered queue, read at scrape time; the histogram families.
#[derive(Debug)]
pub(super) struct Queues {
    sources: Mutex<Vec<(String, Weak<dyn MeteredQueue>)>>,
    pub(super) queue_duration: Family<NameLabel, Histogram, fn() -> Histogram>,
    pub(super) work_duration: Family<NameLabel, Histogram, fn() -> Histogram>,
}

impl Queues {
    pub(super) fn new() -> Self {
        Queues {
            sources: Mutex::new(Vec::new()),
            queue_duration: Family::new_with_constructor(duration_histogram),
            work_duration: Family::new_with_constructor(duration_histogram),
        }
    }

    pub(super) fn add(&self, name: &str, queue: Arc<dyn MeteredQueue>) {
        let label = [("name", name.to_owned())];
        queue.observe_durations(QueueHistograms {
            queued: self.queue_duration.get_or_create_owned(&label),
            worked: self.work_duration.get_or_create_owned(&label),
        });
        let mut sources = self.sources.lock();
        sources.retain(|(n, q)| n != name && q.strong_count() > 0);
        sources.push((name.to_owned(), Arc::downgrade(&queue)));
    }
}

impl Collector for Queues {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let snapshots: Vec<(NameLabel, QueueMetrics)> = self
            .sources
            .lock()
            .iter()
            .filter_map(|(name, q)| Some(([("name", name.clone())], q.upgrade()?.queue_metrics())))
            .collect();
        let e = &mut encoder;
        let rows =
            |f: fn(&QueueMetrics) -> f64| snapshots.iter().map(move |(l, m)| (l.clone(), f(m)));
        let counts =
            |f: fn(&QueueMetrics) -> u64| snapshots.iter().map(move |(l, m)| (l.clone(), f(m)));
        gauges(
            e,
            "workqueue_depth",
            "Current depth of workqueue",
            rows(|m| m.depth as f64),
        )?;
        counters(
            e,
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            counts(|m| m.adds),
        )?;
        counters(
            e,
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            counts(|m| m.retries),
        )?;
        gauges(
            e,
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases",
            rows(|m| secs(m.unfinished_work)),
        )?;
        gauges(
            e,
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running",
            rows(|m| secs(m.longest_running)),
        )?;
        Ok(())
    }
}
