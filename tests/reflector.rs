//! The reflector against the test API server over loopback HTTP. After every injected fault,
//! with objects changing on the server, the cache converges to exactly the server's objects
//! (same keys, same resourceVersions): nothing lost, nothing stale, no ghosts. Deletions
//! missed while disconnected come out as tombstones.

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::*;
use kube_informer::api::DynamicObject;
use kube_informer::cache::{
    DeletedObject, Delta, DeltaFifo, DeltaType, KnownObjects, Reflector, ReflectorConfig,
    RelistCause, Store,
};
use kube_informer::testing::{ApiServer, Fault, Target};
use kube_informer::{Api, Client};
use parking_lot::Mutex;

/// Reflector + FIFO + a consumer thread applying deltas to the store (what an informer does).
struct Harness {
    server: ApiServer,
    store: Arc<Store<DynamicObject>>,
    fifo: Arc<DeltaFifo<DynamicObject>>,
    reflector: Option<Reflector>,
    consumer: Option<JoinHandle<()>>,
    seen: Arc<Mutex<Vec<(DeltaType, String, bool)>>>,
    errors: Arc<Mutex<Vec<String>>>,
}

impl Harness {
    fn start(server: ApiServer, tweak: impl FnOnce(ReflectorConfig) -> ReflectorConfig) -> Harness {
        let config = server.client_config();
        Self::start_with_client(server, config, tweak)
    }

    fn start_with_client(
        server: ApiServer,
        client_config: kube_informer::ClientConfig,
        tweak: impl FnOnce(ReflectorConfig) -> ReflectorConfig,
    ) -> Harness {
        let store = Arc::new(Store::<DynamicObject>::new());
        let known: Arc<dyn KnownObjects<DynamicObject>> = store.clone();
        let fifo = Arc::new(DeltaFifo::new(Some(known)));
        let seen: Arc<Mutex<Vec<(DeltaType, String, bool)>>> = Arc::default();
        let errors: Arc<Mutex<Vec<String>>> = Arc::default();
        let consumer = {
            let (fifo, store, seen) = (fifo.clone(), store.clone(), seen.clone());
            std::thread::spawn(move || {
                while let Ok(()) = fifo.pop(|key, deltas| {
                    for d in deltas {
                        let tomb = matches!(d, Delta::Deleted(DeletedObject::Tombstone(_)));
                        seen.lock().push((d.kind(), key.to_owned(), tomb));
                        match d {
                            Delta::Deleted(_) => {
                                store.delete(key);
                            }
                            other => {
                                let _ = store.upsert(Arc::clone(other.object()));
                            }
                        }
                    }
                }) {}
            })
        };
        let errs = errors.clone();
        let config = tweak(
            ReflectorConfig::new()
                .backoff(Duration::from_millis(50), Duration::from_millis(400))
                .on_watch_error(move |e| errs.lock().push(e.to_string())),
        );
        let api: Api<DynamicObject> = Api::all_with(Client::new(client_config).unwrap(), &pods());
        let reflector = Reflector::start(api, fifo.clone(), config).unwrap();
        Harness {
            server,
            store,
            fifo,
            reflector: Some(reflector),
            consumer: Some(consumer),
            seen,
            errors,
        }
    }

    fn reflector(&self) -> &Reflector {
        self.reflector.as_ref().unwrap()
    }

    /// Waits (bounded) until the cache holds exactly the server's objects.
    fn converge(&self, what: &str) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let want = self.server.keys_and_versions(&pods());
            let got = self.store.keys_and_versions();
            if want == got && self.fifo.is_empty() {
                return;
            }
            if Instant::now() > deadline {
                let w: BTreeSet<_> = want.into_iter().collect();
                let g: BTreeSet<_> = got.into_iter().collect();
                panic!(
                    "{what}: no convergence.\nmissing or stale: {:?}\nghosts or stale: {:?}\nerrors: {:?}\nlast requests: {:?}",
                    w.difference(&g).take(10).collect::<Vec<_>>(),
                    g.difference(&w).take(10).collect::<Vec<_>>(),
                    self.errors.lock(),
                    self.server.requests().iter().rev().take(5).collect::<Vec<_>>()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn wait_for(&self, what: &str, cond: impl Fn() -> bool) {
        let deadline = Instant::now() + PATIENCE;
        while !cond() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Makes the next watch meet `faults`: waits until the current watch is established (so
    /// its request can no longer take them), injects them, and cuts the connection.
    ///
    /// Injecting before the reflector's watch reached the server let that watch take the
    /// fault and then lose it to the cut: a garbage line never sent, a 410 never seen.
    fn fault_next_watch(&self, faults: &[(Target, Fault)]) {
        self.wait_for("a watch established", || self.reflector().is_watching());
        for (target, fault) in faults {
            self.server.inject(*target, fault.clone());
        }
        self.server.disconnect_all();
    }

    fn requests_matching(&self, pred: impl Fn(&str) -> bool) -> Vec<String> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| pred(r))
            .collect()
    }

    fn stop(mut self) -> ApiServer {
        self.reflector.take().unwrap().stop();
        self.consumer.take().unwrap().join().unwrap();
        std::mem::replace(&mut self.server, ApiServer::start())
    }
}

fn is_list(r: &str) -> bool {
    r.starts_with("GET /api/v1/pods") && !r.contains("watch=") && !is_probe(r)
}

/// The reflector's probe of the server's present version: a consistent list of one object.
fn is_probe(r: &str) -> bool {
    r.starts_with("GET /api/v1/pods?")
        && r.split(['?', '&']).any(|p| p == "limit=1")
        && !r.contains("resourceVersion")
}

fn is_watch(r: &str) -> bool {
    r.contains("watch=1")
}

fn seeded(n: usize) -> ApiServer {
    let server = ApiServer::builder()
        .resource(&pods())
        .bookmark_interval(Duration::from_millis(100))
        .start();
    for i in 0..n {
        server
            .create(&pods(), pod("lab", &format!("pod-{i:04}"), "Pending"))
            .unwrap();
    }
    server
}

#[test]
fn lists_in_pages_then_watches_and_follows_changes() {
    let h = Harness::start(seeded(1200), |c| c);
    h.wait_for("has_synced", || h.fifo.has_synced());
    h.converge("initial list");
    let lists = h.requests_matching(is_list);
    assert_eq!(lists.len(), 3, "{lists:?}");
    assert!(lists.iter().all(|r| r.contains("limit=500")), "{lists:?}");
    churn(&h.server, 0, 30);
    h.converge("live changes");
    let watch = &h.requests_matching(is_watch)[0];
    assert!(watch.contains("allowWatchBookmarks=true"), "{watch}");
    let timeout: u64 = watch
        .split("timeoutSeconds=")
        .nth(1)
        .and_then(|s| s.split('&').next())
        .and_then(|s| s.parse().ok())
        .unwrap();
    assert!((300..600).contains(&timeout), "{timeout}");
    h.wait_for("a bookmark moves the version to the server's", || {
        h.reflector().last_sync_resource_version() == h.server.resource_version().to_string()
    });
    assert!(h.reflector().is_watching());
    assert_eq!(h.requests_matching(is_list).len(), 3, "no relist");
    h.stop();
}

#[test]
fn dropped_connections_rewatch_from_the_last_version_without_relisting() {
    let h = Harness::start(seeded(50), |c| c);
    h.converge("initial");
    for round in 0..3 {
        h.server.inject(Target::Watch, Fault::CloseAfterEvents(3));
        h.server.disconnect_all();
        churn(&h.server, round, 10);
        h.converge("after a drop mid-stream");
    }
    // A server restart (all connections gone) while objects change.
    h.server.disconnect_all();
    churn(&h.server, 9, 10);
    h.converge("after a restart");
    assert_eq!(
        h.requests_matching(is_list).len(),
        1,
        "no relist after transient drops"
    );
    let watches = h.requests_matching(is_watch);
    assert!(watches.len() >= 4);
    assert!(
        watches[1..]
            .iter()
            .all(|w| !w.contains("resourceVersion=&")),
        "{watches:?}"
    );
    h.stop();
}

#[test]
fn deletions_missed_while_disconnected_come_out_as_tombstones() {
    let server = ApiServer::builder()
        .resource(&pods())
        .history_limit(5)
        .start();
    for i in 0..20 {
        server
            .create(&pods(), pod("lab", &format!("pod-{i:02}"), "Pending"))
            .unwrap();
    }
    let h = Harness::start(server, |c| c);
    h.converge("initial");
    // Keep the reflector from watching while the world changes beyond the history.
    for _ in 0..1000 {
        h.server.inject(Target::Watch, Fault::status(500));
    }
    h.server.disconnect_all();
    for i in 0..10 {
        h.server
            .delete(&pods(), Some("lab"), &format!("pod-{i:02}"))
            .unwrap();
    }
    churn(&h.server, 0, 12);
    h.server.clear_faults();
    h.converge("after the relist");
    let seen = h.seen.lock().clone();
    for i in 0..10 {
        let key = format!("lab/pod-{i:02}");
        assert!(
            seen.iter()
                .any(|(t, k, tomb)| *t == DeltaType::Deleted && *k == key && *tomb),
            "{key} deleted while disconnected must come as a tombstone"
        );
    }
    assert!(
        h.errors
            .lock()
            .iter()
            .any(|e| e.contains("too old resource version")),
        "{:?}",
        h.errors.lock()
    );
    // The relist after the 410 read the last version, in pages.
    let lists = h.requests_matching(is_list);
    assert!(
        lists[1].contains("resourceVersion=") && lists[1].contains("limit=500"),
        "{lists:?}"
    );
    h.stop();
}

#[test]
fn http_410_on_watch_and_list_relists_at_the_last_version_then_fresh() {
    let h = Harness::start(seeded(30), |c| c);
    h.converge("initial");
    h.fault_next_watch(&[
        (Target::List, Fault::status(410)),
        (Target::Watch, Fault::status(410)),
    ]);
    churn(&h.server, 0, 6);
    h.converge("after 410s");
    let lists = h.requests_matching(is_list);
    assert_eq!(lists.len(), 3, "{lists:?}");
    assert!(
        lists[1].contains("resourceVersion=") && lists[1].contains("limit=500"),
        "{lists:?}"
    );
    assert!(
        lists[2].contains("limit=500") && !lists[2].contains("resourceVersion="),
        "{lists:?}"
    );
    h.stop();
}

#[test]
fn expired_continue_token_during_the_initial_list_still_syncs() {
    let server = seeded(1100);
    server.inject(Target::ListContinue, Fault::status(410));
    let h = Harness::start(server, |c| c);
    h.wait_for("has_synced", || h.fifo.has_synced());
    h.converge("after the full-list fallback");
    h.stop();
}

#[test]
fn server_errors_and_throttling_are_retried_with_backoff() {
    let server = seeded(40);
    server.inject(Target::List, Fault::status(500));
    server.inject(Target::List, Fault::status(503));
    server.inject(Target::List, Fault::too_many_requests(0));
    let h = Harness::start(server, |c| c);
    h.converge("after list errors");
    for _ in 0..3 {
        h.server.inject(Target::Watch, Fault::status(500));
    }
    h.server.disconnect_all();
    churn(&h.server, 0, 6);
    h.converge("after watch errors");
    let errors = h.errors.lock().clone();
    assert!(
        errors.iter().filter(|e| e.contains("500")).count() >= 2,
        "{errors:?}"
    );
    h.stop();
}

#[test]
fn a_garbage_line_makes_it_relist_and_lose_nothing() {
    let h = Harness::start(seeded(20), |c| c);
    h.converge("initial");
    h.fault_next_watch(&[(Target::Watch, Fault::GarbageLine)]);
    churn(&h.server, 0, 6);
    h.converge("after a garbage line");
    assert!(
        h.errors.lock().iter().any(|e| e.contains("watch line")),
        "{:?}",
        h.errors.lock()
    );
    h.stop();
}

#[test]
fn concurrent_churn_under_repeated_faults_converges() {
    let h = Harness::start(seeded(200), |c| c);
    h.converge("initial");
    let faults = [
        (Target::Watch, Fault::CloseAfterEvents(5)),
        (Target::Watch, Fault::CloseAfterBytes(3000)),
        (Target::Watch, Fault::status(410)),
        (Target::Watch, Fault::GarbageLine),
        (Target::List, Fault::status(500)),
        (Target::Watch, Fault::status(503)),
    ];
    for (round, (target, fault)) in faults.into_iter().enumerate() {
        h.server.inject(target, fault);
        h.server.disconnect_all();
        churn(&h.server, round, 25);
        for i in (round * 7..round * 7 + 7).map(|i| i % 200) {
            let _ = h
                .server
                .delete(&pods(), Some("lab"), &format!("pod-{i:04}"));
        }
    }
    h.converge("after every fault");
    h.stop();
}

#[test]
fn streaming_list_syncs_and_falls_back_when_refused_or_unfinished() {
    let h = Harness::start(seeded(60), |c| c.streaming_list(true));
    h.wait_for("has_synced", || h.fifo.has_synced());
    h.converge("streaming list");
    assert!(
        h.requests_matching(is_list).is_empty(),
        "no paged list needed"
    );
    assert!(
        h.requests_matching(|r| r.contains("sendInitialEvents=true"))
            .len()
            == 1
    );
    churn(&h.server, 0, 5);
    h.converge("watch after the streaming list");
    h.stop();

    // Refused like etcd 3.4: fall back to a paged list, and remember.
    let server = seeded(60);
    server.set_streaming_list_supported(false);
    let h = Harness::start(server, |c| c.streaming_list(true));
    h.converge("paged fallback");
    h.server.inject(Target::Watch, Fault::status(410));
    h.server.inject(Target::List, Fault::status(410));
    h.server.disconnect_all();
    churn(&h.server, 1, 5);
    h.converge("relist");
    assert_eq!(
        h.requests_matching(|r| r.contains("sendInitialEvents=true"))
            .len(),
        1,
        "tried once only"
    );
    h.stop();

    // Accepted but the closing bookmark never comes: fall back after the deadline.
    let server = seeded(60);
    server.set_initial_events_end_bookmark(false);
    let h = Harness::start(server, |c| {
        c.streaming_list(true)
            .streaming_list_deadline(Duration::from_millis(500))
    });
    h.converge("fallback after the deadline");
    assert_eq!(h.requests_matching(is_list).len(), 1);
    h.stop();
}

#[test]
fn resync_redelivers_cached_objects_without_asking_the_server() {
    let h = Harness::start(seeded(10), |c| c.resync_period(Duration::from_millis(100)));
    h.converge("initial");
    h.wait_for("two rounds of Sync", || {
        h.seen
            .lock()
            .iter()
            .filter(|(t, _, _)| *t == DeltaType::Sync)
            .count()
            >= 20
    });
    assert_eq!(h.requests_matching(is_list).len(), 1);
    h.stop();
}

#[test]
fn stop_ends_an_idle_watch_and_joins() {
    let h = Harness::start(seeded(5), |c| {
        c.watch_timeout(Duration::from_secs(3600), Duration::from_secs(3601))
    });
    h.converge("initial");
    h.wait_for("watching", || h.reflector().is_watching());
    let (tx, rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        let s = h.stop();
        tx.send(()).unwrap();
        s
    });
    rx.recv_timeout(PATIENCE).expect("stop returns");
    drop(server.join().unwrap());
}

#[test]
fn last_sync_version_and_errors_are_observable() {
    let h = Harness::start(seeded(3), |c| c);
    h.converge("initial");
    let rv = h.reflector().last_sync_resource_version();
    assert!(!rv.is_empty());
    assert!(h.reflector().since_last_activity().is_some());
    h.fault_next_watch(&[(Target::Watch, Fault::status(403))]);
    h.wait_for("the 403 reported", || {
        h.errors.lock().iter().any(|e| e.contains("403"))
    });
    h.converge("after a forbidden watch");
    h.stop();
}

#[test]
fn a_silent_watch_is_detected_as_dead_and_replaced() {
    let server = seeded(10);
    // A short server timeout and read margin, so the silence is noticed in seconds.
    let mut config = server.client_config();
    config.watch_read_margin = Duration::from_secs(1);
    let h = Harness::start_with_client(server, config, |c| {
        c.watch_timeout(Duration::from_secs(1), Duration::from_secs(2))
    });
    h.converge("initial");
    h.server.inject(Target::Watch, Fault::SilenceAfterEvents(0));
    h.server.disconnect_all();
    churn(&h.server, 0, 5);
    h.converge("after a silent connection");
    assert!(h.errors.lock().iter().any(|e| e.to_lowercase().contains("timeout") || e.to_lowercase().contains("timed out")), "{:?}", h.errors.lock());
    h.stop();
}

#[test]
fn a_relist_after_410_pages_and_is_not_cut_by_the_request_timeout() {
    let server = seeded(30);
    // A request timeout far shorter than the server takes to answer a list (below): only
    // gets and writes are bounded by it; a list is bounded per read.
    let mut config = server.client_config();
    config.request_timeout = Duration::from_millis(300);
    let h = Harness::start_with_client(server, config, |c| c);
    h.converge("initial");
    let before = h.requests_matching(is_list).len();
    let mut faults = vec![(Target::Watch, Fault::status(410))];
    // Every list from now on takes a second to start answering. Cut by the request
    // timeout, the relist would fail and be retried the same way (100 times).
    faults.extend((0..100).map(|_| (Target::List, Fault::Stall(Duration::from_secs(1)))));
    h.fault_next_watch(&faults);
    churn(&h.server, 0, 6);
    h.converge("after the slow relist");
    let lists = h.requests_matching(is_list);
    assert_eq!(lists.len(), before + 1, "one relist, not cut: {lists:?}");
    let relist = &lists[before];
    assert!(
        relist.contains("resourceVersion=") && relist.contains("limit=500"),
        "the relist reads the last version, in pages: {relist}"
    );
    h.server.clear_faults();
    h.stop();
}

#[test]
fn a_half_open_watch_is_noticed_within_the_idle_timeout() {
    // The server-side timeout and the client's read margin keep their defaults (minutes):
    // only the idle timeout can notice the silence. Healthy watches get a bookmark every
    // 100 ms from this server, far within it.
    let h = Harness::start(seeded(10), |c| c.watch_idle_timeout(Duration::from_secs(2)));
    h.converge("initial");
    h.fault_next_watch(&[(Target::Watch, Fault::SilenceAfterEvents(0))]);
    churn(&h.server, 0, 5);
    h.converge("after a silent connection");
    let errors = h.errors.lock().clone();
    assert!(
        errors.iter().any(|e| e.to_lowercase().contains("timeout")
            || e.to_lowercase().contains("timed out")),
        "{errors:?}"
    );
    assert_eq!(
        h.requests_matching(is_list).len(),
        1,
        "a reconnect, no relist"
    );
    assert!(
        !h.requests_matching(is_probe).is_empty(),
        "the silent watch made it ask the server for its present version"
    );
    assert_eq!(
        h.reflector()
            .stats()
            .relists
            .get(&RelistCause::ServerBehind),
        None
    );
    h.stop();
}

#[test]
fn a_transient_streaming_list_failure_does_not_disable_streaming_lists() {
    let server = seeded(40);
    // The first streaming list meets a 503, and the next one an ERROR event in the middle of
    // its initial events: neither says anything about support, so it streams again after
    // its back-off, never falling back to paged lists.
    server.inject(Target::Watch, Fault::status(503));
    server.inject(Target::Watch, Fault::ErrorEventAfter(10, 500));
    let h = Harness::start(server, |c| c.streaming_list(true));
    h.converge("streamed after two failures");
    assert_eq!(h.requests_matching(is_list).len(), 0, "no paged list");
    assert_eq!(
        h.requests_matching(|r| r.contains("sendInitialEvents=true"))
            .len(),
        3
    );
    // ...and the next list from scratch streams again.
    h.fault_next_watch(&[
        (Target::Watch, Fault::status(410)),
        (Target::List, Fault::status(410)),
    ]);
    churn(&h.server, 0, 5);
    h.converge("relist");
    h.wait_for("a second streaming list", || {
        h.requests_matching(|r| r.contains("sendInitialEvents=true"))
            .len()
            == 4
    });
    h.stop();
}
