//! The event recorders' figures, label `component` (the reporting controller):
//! `kube_informer_events_queued_total`, `kube_informer_events_dropped_total{reason}`
//! (`queue_full`, `stopped`, `rate_limited`), `kube_informer_events_written_total{op}`
//! (`create`, `patch`) and `kube_informer_events_failed_total`, read from
//! [`EventRecorderStats`] at scrape time.

use parking_lot::Mutex;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;

use super::encode::counters;
use crate::controller::EventRecorderStats;

/// A recorder's stats, while it lives.
pub(super) type StatsSource = Box<dyn Fn() -> Option<EventRecorderStats> + Send + Sync>;

/// Every registered recorder.
#[derive(Default)]
pub(super) struct Recorders {
    sources: Mutex<Vec<(String, StatsSource)>>,
}

impl std::fmt::Debug for Recorders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorders").finish_non_exhaustive()
    }
}

impl Recorders {
    pub(super) fn add(&self, component: String, source: StatsSource) {
        self.sources.lock().push((component, source));
    }
}

type L1 = [(&'static str, String); 1];
type L2 = [(&'static str, String); 2];

impl Collector for Recorders {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let all: Vec<(String, EventRecorderStats)> = {
            let mut sources = self.sources.lock();
            let mut all = Vec::new();
            sources.retain(|(c, s)| match s() {
                Some(stats) => {
                    all.push((c.clone(), stats));
                    true
                }
                None => false,
            });
            all
        };
        let e = &mut encoder;
        let l = |c: &String| -> L1 { [("component", c.clone())] };
        let two = |c: &String, k: &'static str, v: &str| -> L2 {
            [("component", c.clone()), (k, v.to_owned())]
        };
        counters(
            e,
            "kube_informer_events_queued",
            "Events accepted into the recorder's queue",
            all.iter().map(|(c, s)| (l(c), s.queued)),
        )?;
        counters(
            e,
            "kube_informer_events_dropped",
            "Events dropped: queue_full, stopped (recorded after stop), rate_limited (per-object limit)",
            all.iter().flat_map(|(c, s)| {
                [
                    (two(c, "reason", "queue_full"), s.dropped_queue_full),
                    (two(c, "reason", "stopped"), s.dropped_stopped),
                    (two(c, "reason", "rate_limited"), s.rate_limited),
                ]
            }),
        )?;
        counters(
            e,
            "kube_informer_events_written",
            "Events written to the server: create (a new Event), patch (a series count)",
            all.iter().flat_map(|(c, s)| {
                [
                    (two(c, "op", "create"), s.created),
                    (two(c, "op", "patch"), s.patched),
                ]
            }),
        )?;
        counters(
            e,
            "kube_informer_events_failed",
            "Event writes that failed (not retried)",
            all.iter().map(|(c, s)| (l(c), s.failed)),
        )?;
        Ok(())
    }
}
