//! The informers' own figures, under names of this library (client-go exports none for
//! informers), label `informer` (the factory's name for it, e.g. `pods.v1 (DynamicObject)`,
//! or the informer's name), read from [`InformerHealth`] at scrape time:
//!
//! | metric | type | what |
//! |---|---|---|
//! | `kube_informer_synced` | gauge | 1 once the initial list is in the cache |
//! | `kube_informer_watching` | gauge | 1 while a watch connection is open |
//! | `kube_informer_objects` | gauge | objects in the cache |
//! | `kube_informer_lists_total` | counter | lists completed (the first and every relist) |
//! | `kube_informer_list_failures_total` | counter | list attempts that failed |
//! | `kube_informer_relists_total{cause}` | counter | relists by cause: `expired`, `watch_error`, `stale_list` |
//! | `kube_informer_watch_restarts_total` | counter | watches started after the first |
//! | `kube_informer_watch_events_total` | counter | watch events handed to the cache |
//! | `kube_informer_bookmarks_total` | counter | bookmarks received |
//! | `kube_informer_errors_total{kind}` | counter | errors by kind: `transport`, `api_403`, `decode`, ... |
//! | `kube_informer_consecutive_failures` | gauge | failures since the last success |
//! | `kube_informer_failing_seconds` | gauge | how long lists and watches have kept failing (0: fine) |
//! | `kube_informer_last_event_age_seconds` | gauge | time since the last list, event or bookmark |
//! | `kube_informer_handler_backlog{handler}` | gauge | notifications waiting for a handler |
//! | `kube_informer_handler_delivered_total{handler}` | counter | notifications handed to a handler |
//! | `kube_informer_handler_coalesced_total{handler}` | counter | notifications merged while a handler lagged |
//! | `kube_informer_handler_panics_total{handler}` | counter | handler panics (caught) |

use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;

use super::encode::{counters, gauges, secs};
use crate::cache::{InformerHealth, SharedInformerFactory};

/// Where informer healths come from: a factory (every informer it has, now and later) or one
/// informer. Weak: a source that is gone reads as nothing.
pub(super) type HealthSource = Box<dyn Fn() -> Option<Vec<InformerHealth>> + Send + Sync>;

/// Every registered source.
#[derive(Default)]
pub(super) struct Informers {
    sources: Mutex<Vec<HealthSource>>,
}

impl std::fmt::Debug for Informers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Informers").finish_non_exhaustive()
    }
}

impl Informers {
    pub(super) fn add(&self, source: HealthSource) {
        self.sources.lock().push(source);
    }

    pub(super) fn factory(factory: &Arc<SharedInformerFactory>) -> HealthSource {
        let weak: Weak<SharedInformerFactory> = Arc::downgrade(factory);
        Box::new(move || weak.upgrade().map(|f| f.health()))
    }
}

type L1 = [(&'static str, String); 1];
type L2 = [(&'static str, String); 2];

impl Collector for Informers {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let all: Vec<InformerHealth> = {
            let mut sources = self.sources.lock();
            let mut all = Vec::new();
            sources.retain(|s| match s() {
                Some(h) => {
                    all.extend(h);
                    true
                }
                None => false,
            });
            all
        };
        let e = &mut encoder;
        let l = |h: &InformerHealth| -> L1 { [("informer", h.name.clone())] };
        let g = |f: fn(&InformerHealth) -> f64| all.iter().map(move |h| (l(h), f(h)));
        let c = |f: fn(&InformerHealth) -> u64| all.iter().map(move |h| (l(h), f(h)));
        let flag = |b: bool| if b { 1.0 } else { 0.0 };
        gauges(
            e,
            "kube_informer_synced",
            "1 once the informer's initial list is in its cache",
            g(|h| if h.synced { 1.0 } else { 0.0 }),
        )?;
        let _ = flag;
        gauges(
            e,
            "kube_informer_watching",
            "1 while the informer's watch connection is open",
            g(|h| if h.watching { 1.0 } else { 0.0 }),
        )?;
        gauges(
            e,
            "kube_informer_objects",
            "Objects in the informer's cache",
            g(|h| h.cached as f64),
        )?;
        counters(
            e,
            "kube_informer_lists",
            "Lists completed (the first one and every relist)",
            c(|h| h.reflector.lists),
        )?;
        counters(
            e,
            "kube_informer_list_failures",
            "List attempts that failed",
            c(|h| h.reflector.list_failures),
        )?;
        counters(
            e,
            "kube_informer_relists",
            "Relists after the first list, by cause (expired, watch_error, stale_list)",
            all.iter().flat_map(|h| {
                crate::cache::RelistCause::ALL
                    .iter()
                    .map(move |cause| -> (L2, u64) {
                        (
                            [
                                ("informer", h.name.clone()),
                                ("cause", cause.as_str().to_owned()),
                            ],
                            h.reflector.relists.get(cause).copied().unwrap_or(0),
                        )
                    })
            }),
        )?;
        counters(
            e,
            "kube_informer_watch_restarts",
            "Watches started after the first one (reconnects and server timeouts included)",
            c(|h| h.reflector.watch_restarts),
        )?;
        counters(
            e,
            "kube_informer_watch_events",
            "Watch events handed to the cache (ADDED, MODIFIED, DELETED)",
            c(|h| h.reflector.events),
        )?;
        counters(
            e,
            "kube_informer_bookmarks",
            "Watch bookmarks received",
            c(|h| h.reflector.bookmarks),
        )?;
        counters(
            e,
            "kube_informer_errors",
            "List and watch errors by kind (transport, io, decode, watch_line, api_<code>, ...)",
            all.iter().flat_map(|h| {
                h.reflector
                    .errors
                    .iter()
                    .map(move |(kind, n)| -> (L2, u64) {
                        ([("informer", h.name.clone()), ("kind", kind.clone())], *n)
                    })
            }),
        )?;
        gauges(
            e,
            "kube_informer_consecutive_failures",
            "List and watch failures since the last success",
            g(|h| f64::from(h.consecutive_failures)),
        )?;
        gauges(
            e,
            "kube_informer_failing_seconds",
            "How long lists and watches have kept failing (0 while the last attempt succeeded)",
            g(|h| h.failing_for.map_or(0.0, secs)),
        )?;
        gauges(
            e,
            "kube_informer_last_event_age_seconds",
            "Seconds since the informer's last list, watch event or bookmark",
            all.iter()
                .filter_map(|h| Some((l(h), secs(h.since_last_event?)))),
        )?;
        let handlers = || {
            all.iter().flat_map(|h| {
                h.handlers.iter().map(move |s| -> (L2, _) {
                    (
                        [("informer", h.name.clone()), ("handler", s.id.to_string())],
                        s,
                    )
                })
            })
        };
        gauges(
            e,
            "kube_informer_handler_backlog",
            "Notifications waiting for the handler",
            handlers().map(|(l, s)| (l, s.backlog as f64)),
        )?;
        counters(
            e,
            "kube_informer_handler_delivered",
            "Notifications handed to the handler",
            handlers().map(|(l, s)| (l, s.delivered)),
        )?;
        counters(
            e,
            "kube_informer_handler_coalesced",
            "Notifications merged into another while the handler lagged behind",
            handlers().map(|(l, s)| (l, s.coalesced)),
        )?;
        counters(
            e,
            "kube_informer_handler_panics",
            "Panics of the handler (each caught and reported)",
            handlers().map(|(l, s)| (l, s.panics)),
        )?;
        Ok(())
    }
}
