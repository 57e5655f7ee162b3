//! controller-runtime's reconcile metrics, under its names and labels:
//! `controller_runtime_reconcile_total{controller,result}` (`result`: `success`, `error`,
//! `requeue`, `requeue_after`; a panic counts as an error, as controller-runtime's recovery
//! does), `controller_runtime_reconcile_errors_total{controller}`,
//! `controller_runtime_reconcile_panics_total{controller}`,
//! `controller_runtime_reconcile_time_seconds{controller}` and
//! `controller_runtime_active_workers{controller}`; and our own
//! `kube_informer_controller_filtered_updates_total{controller}` (updates an
//! [`EventFilter`](crate::controller::EventFilter) dropped) and
//! `kube_informer_controller_failing_keys{controller}` (keys whose last reconcile failed).
//!
//! Counts are read from the controller's [`ControllerStats`](crate::controller::ControllerStats)
//! at scrape time; the duration histogram is observed by each worker.

use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;

use super::encode::{counters, gauges, secs};
use crate::controller::stats::{Counters, ReconcileObserver};

/// `controller`.
pub(super) type ControllerLabel = [(&'static str, String); 1];

/// controller-runtime's buckets for `reconcile_time_seconds`.
fn reconcile_histogram() -> Histogram {
    Histogram::new([
        0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
        0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
        15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
    ])
}

struct TimeObserver(Histogram);

impl ReconcileObserver for TimeObserver {
    fn took(&self, took: Duration) {
        self.0.observe(secs(took));
    }
}

/// Every registered controller's counters; the duration family.
#[derive(Debug)]
pub(super) struct Reconciles {
    sources: Mutex<Vec<(String, Weak<Counters>)>>,
    pub(super) time: Family<ControllerLabel, Histogram, fn() -> Histogram>,
}

impl Reconciles {
    pub(super) fn new() -> Self {
        Reconciles {
            sources: Mutex::new(Vec::new()),
            time: Family::new_with_constructor(reconcile_histogram),
        }
    }

    pub(super) fn add(&self, name: &str, counters: &Arc<Counters>) {
        let histogram = self
            .time
            .get_or_create_owned(&[("controller", name.to_owned())]);
        counters.set_observer(Arc::new(TimeObserver(histogram)));
        let mut sources = self.sources.lock();
        sources.retain(|(n, c)| n != name && c.strong_count() > 0);
        sources.push((name.to_owned(), Arc::downgrade(counters)));
    }
}

impl Collector for Reconciles {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let snapshots: Vec<_> = self
            .sources
            .lock()
            .iter()
            .filter_map(|(name, c)| {
                let c = c.upgrade()?;
                Some((name.clone(), c.snapshot(), c.active(), c.failing_keys()))
            })
            .collect();
        let e = &mut encoder;
        let label = |n: &String| [("controller", n.clone())];
        counters(
            e,
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            snapshots.iter().flat_map(|(n, s, _, _)| {
                let failed = s.errors + s.panics;
                let success = s.reconciles.saturating_sub(failed + s.requeues);
                [
                    ("success", success),
                    ("error", failed),
                    ("requeue", 0),
                    ("requeue_after", s.requeues),
                ]
                .map(|(result, v)| {
                    (
                        [("controller", n.clone()), ("result", result.to_owned())],
                        v,
                    )
                })
            }),
        )?;
        counters(
            e,
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            snapshots
                .iter()
                .map(|(n, s, _, _)| (label(n), s.errors + s.panics)),
        )?;
        counters(
            e,
            "controller_runtime_reconcile_panics",
            "Total number of reconciliation panics per controller",
            snapshots.iter().map(|(n, s, _, _)| (label(n), s.panics)),
        )?;
        gauges(
            e,
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            snapshots.iter().map(|(n, _, a, _)| (label(n), *a as f64)),
        )?;
        counters(
            e,
            "kube_informer_controller_filtered_updates",
            "Updates an event filter kept from the controller's queue",
            snapshots.iter().map(|(n, s, _, _)| (label(n), s.filtered)),
        )?;
        gauges(
            e,
            "kube_informer_controller_failing_keys",
            "Keys whose last reconcile failed (at most 1024 remembered)",
            snapshots.iter().map(|(n, _, _, f)| (label(n), *f as f64)),
        )?;
        Ok(())
    }
}
