//! Faults a review found in the informer, each over loopback HTTP: resyncs racing the
//! informer thread, resync rounds cut short, panicking transforms and index functions, and
//! durations too large to add to a clock reading.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::view::View;
use common::*;
use kube_informer::api::DynamicObject;
use kube_informer::cache::{EventHandler, IndexFn};
use kube_informer::controller::{Action, Controller};
use kube_informer::testing::ApiServer;
use parking_lot::Mutex;

fn server_with(n: usize) -> ApiServer {
    let server = ApiServer::builder()
        .resource(&pods())
        .bookmark_interval(Duration::from_millis(200))
        .start();
    for i in 0..n {
        server
            .create(&pods(), pod("lab", &format!("pod-{i:04}"), "Pending"))
            .unwrap();
    }
    server
}

/// Counts the resyncs (`on_update` with the same object) each key got.
#[derive(Clone, Default)]
struct ResyncCounts(Arc<Mutex<BTreeMap<String, usize>>>);

impl EventHandler<DynamicObject> for ResyncCounts {
    fn on_add(&mut self, obj: Arc<DynamicObject>, _initial: bool) {
        self.0.lock().insert(obj.metadata.key(), 0);
    }
    fn on_update(&mut self, old: Arc<DynamicObject>, new: Arc<DynamicObject>) {
        if Arc::ptr_eq(&old, &new) {
            *self.0.lock().entry(new.metadata.key()).or_default() += 1;
        }
    }
}

/// Fault 3: the informer forgot which handlers a resync was for about a second after
/// queueing it, so when a round took longer to process (a slow index function here: 200
/// objects at 8 ms each make every round last at least 1.6 s) the rest of it was dropped for
/// every handler, and the objects at the end of the round never had a resync. Now each
/// `Sync` reaches the handlers of its own round, so every object keeps getting resyncs.
///
/// Nothing is asserted about fairness between objects: when the machine is slow enough for a
/// round to outlast the period, the next round skips the keys still queued from the last one
/// (as client-go's DeltaFIFO does), so an object at the front can get a resync more often
/// than one at the back. Only "none is left out" is a promise.
#[test]
fn a_slow_resync_round_reaches_every_object() {
    let server = server_with(200);
    let inf = pods_informer(&server, fast_config());
    let slow: IndexFn<DynamicObject> = Arc::new(|o: &DynamicObject| {
        std::thread::sleep(Duration::from_millis(8));
        Ok(vec![o.metadata.name.clone().unwrap_or_default()])
    });
    inf.add_indexers([("slow".to_string(), slow)]).unwrap();
    let counts = ResyncCounts::default();
    let reg = inf
        .add_event_handler_with_resync(counts.clone(), Duration::from_secs(2))
        .unwrap();
    inf.start().unwrap();
    // The handler's own sync: it has been handed every object of the initial list.
    assert!(reg.wait_for_sync(PATIENCE));
    wait_until("every object to have had two resyncs", || {
        let c = counts.0.lock();
        assert_eq!(c.len(), 200);
        c.values().all(|&n| n >= 2)
    });
    inf.stop();
}

/// Fault 1, end to end: with a resync every millisecond and objects created and deleted
/// meanwhile, a resync racing the informer thread put deleted objects back into the cache
/// (and handed resyncing handlers stale objects). The race window is narrow, so this is a
/// guard, not the proof: `tests/delta_fifo_model.rs` holds a pop in flight deterministically
/// and the interleaving checks explore the schedules.
#[test]
fn resyncs_during_churn_never_bring_back_a_deleted_object() {
    let server = server_with(20);
    let inf = pods_informer(&server, fast_config());
    // A slower apply widens the window between a pop and the cache write.
    let slow: IndexFn<DynamicObject> = Arc::new(|o: &DynamicObject| {
        std::thread::sleep(Duration::from_millis(1));
        Ok(vec![o.metadata.name.clone().unwrap_or_default()])
    });
    inf.add_indexers([("slow".to_string(), slow)]).unwrap();
    let view = View::default();
    let quiet = View::default();
    inf.add_event_handler_with_resync(view.clone(), Duration::from_millis(1))
        .unwrap();
    inf.add_event_handler(quiet.clone()).unwrap();
    inf.start().unwrap();
    assert!(inf.wait_for_cache_sync(PATIENCE));
    for round in 0..6 {
        churn(&server, round, 60);
    }
    let store = inf.store();
    wait_until("the cache to equal the server", || {
        let mut cached: Vec<(String, String)> = store
            .list()
            .iter()
            .map(|o| (o.metadata.key(), o.metadata.resource_version().to_owned()))
            .collect();
        cached.sort();
        cached == server.keys_and_versions(&pods())
    });
    wait_until("both handlers to equal the server", || {
        let want = server.keys_and_versions(&pods());
        view.snapshot() == want && quiet.snapshot() == want
    });
    assert_eq!(view.violations(), Vec::<String>::new());
    assert_eq!(quiet.violations(), Vec::<String>::new());
    inf.stop();
}

/// Fault 9: a panicking transform ended the reflector thread, so the informer never synced
/// and said nothing. Now the panic is reported and the object is cached as it was left.
#[test]
fn a_panicking_transform_is_reported_and_the_informer_syncs() {
    let server = server_with(30);
    let reported = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = reported.clone();
    let config = fast_config()
        .transform(Arc::new(|o: &mut DynamicObject| {
            if o.metadata.name.as_deref() == Some("pod-0013") {
                panic!("this transform cannot handle pod-0013");
            }
        }))
        .on_handler_panic(move |m: &str| sink.lock().push(m.to_owned()));
    let inf = pods_informer(&server, config);
    inf.start().unwrap();
    assert!(inf.wait_for_cache_sync(PATIENCE), "the informer synced");
    assert_eq!(inf.store().len(), 30);
    server
        .create(&pods(), pod("lab", "pod-later", "Pending"))
        .unwrap();
    wait_until("a later event", || {
        inf.lister().get(Some("lab"), "pod-later").is_some()
    });
    let reported = reported.lock();
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert!(
        reported[0].contains("transform panicked on lab/pod-0013"),
        "{}",
        reported[0]
    );
    inf.stop();
}

/// Fault 9: a panicking index function ended the informer thread (no sync, no events).
/// Now that object is left out of that index and everything else goes on.
#[test]
fn a_panicking_index_function_leaves_one_object_unindexed() {
    let server = server_with(30);
    let inf = pods_informer(&server, fast_config());
    let picky: IndexFn<DynamicObject> = Arc::new(|o: &DynamicObject| {
        let name = o.metadata.name.clone().unwrap_or_default();
        assert_ne!(name, "pod-0007", "this index cannot handle pod-0007");
        Ok(vec![name])
    });
    inf.add_indexers([("name".to_string(), picky)]).unwrap();
    let view = View::default();
    inf.add_event_handler(view.clone()).unwrap();
    inf.start().unwrap();
    assert!(inf.wait_for_cache_sync(PATIENCE), "the informer synced");
    assert_eq!(inf.store().len(), 30);
    let lister = inf.lister();
    assert_eq!(lister.by_index("name", "pod-0008").unwrap().len(), 1);
    assert!(lister.by_index("name", "pod-0007").unwrap().is_empty());
    server
        .create(&pods(), pod("lab", "pod-later", "Pending"))
        .unwrap();
    wait_until("a later event reaches the handler", || {
        view.0.lock().objects.contains_key("lab/pod-later")
    });
    inf.stop();
}

/// Fault 9: `Instant + Duration` overflowed for "forever"-sized durations: a resync period,
/// a sync timeout, a requeue far in the future (which killed a controller worker and
/// stranded its key).
#[test]
fn durations_meaning_forever_are_accepted_everywhere() {
    let server = server_with(3);
    let inf = pods_informer(&server, fast_config());
    let view = View::default();
    let reg = inf
        .add_event_handler_with_resync(view.clone(), Duration::MAX)
        .unwrap();
    inf.start().unwrap();
    assert!(inf.wait_for_cache_sync(Duration::MAX));
    assert!(reg.wait_for_sync(Duration::MAX));
    let reconciled = Arc::new(Mutex::new(BTreeMap::<String, usize>::new()));
    let seen = reconciled.clone();
    let controller = Controller::builder("forever", inf.clone())
        .run(move |key: &str| -> Result<Action, kube_informer::Error> {
            *seen.lock().entry(key.to_owned()).or_default() += 1;
            Ok(Action::RequeueAfter(Duration::MAX))
        })
        .unwrap();
    wait_until("the first three keys reconciled", || {
        reconciled.lock().len() == 3
    });
    // A worker that died on the first requeue could not handle this one.
    server
        .create(&pods(), pod("lab", "pod-later", "Pending"))
        .unwrap();
    wait_until("a key added later is reconciled", || {
        reconciled.lock().contains_key("lab/pod-later")
    });
    drop(controller);
    inf.stop();
}
