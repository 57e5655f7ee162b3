//! Sharded controllers against the test API server: replicas joining, stopping cleanly,
//! hanging and crashing, under churn. Every reconcile is instrumented with enter/exit: no
//! object may ever be reconciled by two shards at once. After every membership change the
//! labels must converge to the rendezvous assignment over the live shards, each shard's
//! cache must hold exactly its objects, owned objects must follow their owner, and a touch
//! of every object must be reconciled by its shard (the bound is `PATIENCE`, never a timing
//! assertion).

mod common;

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use kube_informer::api::{ApiResource, DynamicObject};
use kube_informer::cache::{SharedIndexInformer, SharedInformerFactory};
use kube_informer::controller::sharding::{
    shard_for, Ring, ShardConfig, Sharder, SharderConfig, ShardingEvent,
};
use kube_informer::controller::{Action, Controller, LeaderElectionConfig};
use kube_informer::testing::ApiServer;
use kube_informer::Client;
use parking_lot::Mutex;
use serde_json::{json, Value};

const NS: &str = "kube-system";
const SHARD_LABEL: &str = "shard.sharding.kube-informer.io/widgets";
const DRAIN_LABEL: &str = "drain.sharding.kube-informer.io/widgets";

fn configmaps() -> ApiResource {
    ApiResource::new("", "v1", "ConfigMap", "configmaps", true)
}

fn leases() -> ApiResource {
    ApiResource::new("coordination.k8s.io", "v1", "Lease", "leases", true)
}

fn ring() -> Ring {
    Ring::new("widgets", NS).unwrap()
}

/// Short timings: a 4 s lease, stopped working after 2 s without a renewal.
fn timings(c: LeaderElectionConfig) -> LeaderElectionConfig {
    c.lease_duration(Duration::from_secs(4))
        .renew_deadline(Duration::from_secs(2))
        .retry_period(Duration::from_millis(400))
}

/// The name of a shard's Lease.
fn shard_lease(id: &str) -> String {
    format!("widgets-{id}")
}

/// Who is inside a reconcile, and every reconcile that happened.
#[derive(Default)]
struct Tracker {
    inside: Mutex<HashMap<String, String>>,
    overlaps: Mutex<Vec<String>>,
    done: Mutex<Vec<(String, String, Instant)>>,
    count: AtomicUsize,
    events: Mutex<Vec<ShardingEvent>>,
    /// How long each reconcile takes (ms).
    sleep_ms: AtomicU64,
    /// The shards' lease duration (s; 0: 4 s); the margin is this minus the 2 s deadline.
    lease_secs: AtomicU64,
}

impl Tracker {
    fn enter(&self, key: &str, shard: &str) {
        let mut inside = self.inside.lock();
        if let Some(other) = inside.insert(key.to_owned(), shard.to_owned()) {
            self.overlaps
                .lock()
                .push(format!("{key}: {shard} entered while {other} was inside"));
        }
    }

    fn new() -> Arc<Tracker> {
        let t = Tracker::default();
        t.sleep_ms.store(2, Ordering::SeqCst);
        t.lease_secs.store(4, Ordering::SeqCst);
        Arc::new(t)
    }

    fn reconciled(&self, key: &str, shard: &str, since: Instant) -> usize {
        self.done
            .lock()
            .iter()
            .filter(|(k, s, at)| k == key && s == shard && *at >= since)
            .count()
    }

    fn any_event(&self, f: impl Fn(&ShardingEvent) -> bool) -> bool {
        self.events.lock().iter().any(f)
    }

    fn exit(&self, key: &str, shard: &str) {
        let mut inside = self.inside.lock();
        if inside.get(key).map(String::as_str) == Some(shard) {
            inside.remove(key);
        }
        self.done
            .lock()
            .push((key.to_owned(), shard.to_owned(), Instant::now()));
        self.count.fetch_add(1, Ordering::SeqCst);
    }

    fn assert_no_overlap(&self) {
        let overlaps = self.overlaps.lock();
        assert!(
            overlaps.is_empty(),
            "reconciled by two shards at once: {overlaps:#?}"
        );
    }
}

struct Replica {
    id: String,
    controller: Option<Controller<DynamicObject>>,
    sharder: Option<Sharder>,
    informer: SharedIndexInformer<DynamicObject>,
    _factory: SharedInformerFactory,
}

impl Replica {
    fn start(server: &ApiServer, id: &str, tracker: &Arc<Tracker>, release: bool) -> Replica {
        let client = Client::new(server.client_config()).unwrap();
        let t = Arc::clone(tracker);
        let lease = Duration::from_secs(tracker.lease_secs.load(Ordering::SeqCst));
        let sharder_config = SharderConfig::new(ring(), &widgets(), id)
            .owns(&configmaps())
            .namespace("lab")
            .leader_election(timings(LeaderElectionConfig::new(
                NS,
                &ring().sharder_lease(),
                id,
            )))
            .fence_duration(lease)
            .resync(Duration::from_secs(2))
            .on_event(move |e| t.events.lock().push(e.clone()));
        let sharder = Sharder::start(client.clone(), sharder_config).unwrap();
        let shard = ShardConfig::new(ring(), id)
            .unwrap()
            .lease_duration(lease)
            .renew_deadline(Duration::from_secs(2))
            .retry_period(Duration::from_millis(400))
            .release_on_stop(release);
        let factory = SharedInformerFactory::with_options(client.clone(), shard.factory_options());
        let informer = factory.dynamic_informer(&widgets());
        let (t, me) = (Arc::clone(tracker), id.to_owned());
        let controller = Controller::builder(&format!("widgets-{id}"), informer.clone())
            .workers(3)
            .owns(factory.dynamic_informer(&configmaps()))
            .sharded(client, shard)
            .run(move |key: &str| -> Result<Action, kube_informer::Error> {
                t.enter(key, &me);
                std::thread::sleep(Duration::from_millis(t.sleep_ms.load(Ordering::SeqCst)));
                t.exit(key, &me);
                Ok(Action::Done)
            })
            .unwrap();
        Replica {
            id: id.to_owned(),
            controller: Some(controller),
            sharder: Some(sharder),
            informer,
            _factory: factory,
        }
    }

    /// A hung process: no renewal, no release (its informers keep running).
    fn hang(&self) {
        self.controller
            .as_ref()
            .unwrap()
            .elector()
            .unwrap()
            .freeze();
    }

    fn thaw(&self) {
        self.controller.as_ref().unwrap().elector().unwrap().thaw();
    }

    fn stop(mut self) {
        if let Some(c) = self.controller.take() {
            c.stop();
        }
        if let Some(s) = self.sharder.take() {
            s.stop();
        }
    }
}

fn label_of(o: &Value, key: &str) -> Option<String> {
    o["metadata"]["labels"][key].as_str().map(str::to_owned)
}

fn key_of(o: &Value) -> String {
    format!(
        "{}/{}",
        o["metadata"]["namespace"].as_str().unwrap_or(""),
        o["metadata"]["name"].as_str().unwrap_or("")
    )
}

/// Labels as assigned over `live`, no drain left, each replica caching exactly its objects,
/// owned objects on their owner's shard.
fn converged(server: &ApiServer, live: &[&str], replicas: &[&Replica]) -> bool {
    let objects = server.list(&widgets(), None);
    let mut by_shard: HashMap<String, BTreeSet<String>> = HashMap::new();
    let mut shard_of: HashMap<String, String> = HashMap::new();
    for o in &objects {
        let key = key_of(o);
        let want = shard_for(&key, live).map(str::to_owned);
        if label_of(o, SHARD_LABEL) != want || label_of(o, DRAIN_LABEL).is_some() {
            return false;
        }
        if let Some(s) = want {
            by_shard.entry(s.clone()).or_default().insert(key.clone());
            shard_of.insert(key, s);
        }
    }
    for r in replicas {
        let cached: BTreeSet<String> = r.informer.store().list_keys().into_iter().collect();
        if cached != by_shard.remove(&r.id).unwrap_or_default() {
            return false;
        }
    }
    server.list(&configmaps(), Some("lab")).iter().all(|cm| {
        let owner = cm["metadata"]["ownerReferences"][0]["name"].as_str();
        match owner {
            Some(owner) => {
                label_of(cm, SHARD_LABEL).as_ref() == shard_of.get(&format!("lab/{owner}"))
            }
            None => true,
        }
    })
}

/// Touches every object and waits until each is reconciled by its shard; no other shard
/// may reconcile any of them meanwhile.
fn every_object_served_by_its_shard(server: &ApiServer, tracker: &Tracker, live: &[&str]) {
    let since = Instant::now();
    let objects = server.list(&widgets(), None);
    for o in &objects {
        let name = o["metadata"]["name"].as_str().unwrap();
        let patch = json!({"metadata": {"annotations": {"touched": format!("{since:?}")}}});
        server.patch(&widgets(), Some("lab"), name, &patch).unwrap();
    }
    let want: HashMap<String, String> = objects
        .iter()
        .map(|o| {
            let key = key_of(o);
            let s = shard_for(&key, live).unwrap().to_owned();
            (key, s)
        })
        .collect();
    wait_until("every touched object reconciled by its shard", || {
        let done = tracker.done.lock();
        let mut seen = BTreeSet::new();
        for (key, shard, at) in done.iter().filter(|(_, _, at)| *at >= since) {
            let _ = at;
            if want.get(key) == Some(shard) {
                seen.insert(key.clone());
            }
        }
        seen.len() == want.len()
    });
    let done = tracker.done.lock();
    for (key, shard, _) in done.iter().filter(|(_, _, at)| *at >= since) {
        if let Some(w) = want.get(key) {
            assert_eq!(w, shard, "{key} reconciled by {shard}, not its shard {w}");
        }
    }
}

fn create_widgets(server: &ApiServer, n: usize, owned_every: usize) {
    for i in 0..n {
        let name = format!("w-{i:03}");
        let w = server
            .create(
                &widgets(),
                json!({"metadata": {"name": name, "namespace": "lab"}}),
            )
            .unwrap();
        if owned_every > 0 && i % owned_every == 0 {
            server
                .create(
                    &configmaps(),
                    json!({"metadata": {"name": format!("{name}-config"), "namespace": "lab",
                    "ownerReferences": [{"apiVersion": "lab.example.com/v1", "kind": "Widget",
                        "name": name, "uid": w["metadata"]["uid"], "controller": true}]}}),
                )
                .unwrap();
        }
    }
}

/// The shard renewed its Lease over the sabotage: held by itself, with a sane duration.
fn lease_repaired(server: &ApiServer, id: &str) -> bool {
    server
        .get(&leases(), Some(NS), &shard_lease(id))
        .is_ok_and(|l| {
            l["spec"]["holderIdentity"].as_str() == Some(id)
                && l["spec"]["leaseDurationSeconds"]
                    .as_i64()
                    .is_some_and(|d| d > 0)
        })
}

/// Sets its flag when dropped: a scoped helper thread looping until the flag is set then
/// stops also when a wait in the scope fails (a panic must fail the test, not hang it).
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn lease_holder(server: &ApiServer, name: &str) -> Option<String> {
    server.get(&leases(), Some(NS), name).ok()?["spec"]["holderIdentity"]
        .as_str()
        .map(str::to_owned)
}

#[test]
fn joins_and_clean_stops_hand_objects_over_without_overlap() {
    let server = ApiServer::builder().resource(&widgets()).start();
    create_widgets(&server, 30, 5);
    // An object with no labels at all, and one with other labels.
    server
        .create(
            &widgets(),
            json!({"metadata": {"name": "bare", "namespace": "lab"}}),
        )
        .unwrap();
    server
        .create(
            &widgets(),
            json!({"metadata": {"name": "labelled", "namespace": "lab", "labels": {"app": "x"}}}),
        )
        .unwrap();
    let tracker = Tracker::new();
    let a = Replica::start(&server, "replica-a", &tracker, true);
    let b = Replica::start(&server, "replica-b", &tracker, true);
    wait_until("labels converged over a, b", || {
        converged(&server, &["replica-a", "replica-b"], &[&a, &b])
    });
    every_object_served_by_its_shard(&server, &tracker, &["replica-a", "replica-b"]);
    let before: HashMap<String, Option<String>> = server
        .list(&widgets(), None)
        .iter()
        .map(|o| (key_of(o), label_of(o, SHARD_LABEL)))
        .collect();

    // A join: about a third moves, all of it to the newcomer, each drained first.
    let c = Replica::start(&server, "replica-c", &tracker, true);
    let live = ["replica-a", "replica-b", "replica-c"];
    wait_until("labels converged over a, b, c", || {
        converged(&server, &live, &[&a, &b, &c])
    });
    let mut moved = 0;
    for o in server.list(&widgets(), None) {
        let now = label_of(&o, SHARD_LABEL);
        if before[&key_of(&o)] != now {
            assert_eq!(
                now.as_deref(),
                Some("replica-c"),
                "a join moves objects only to the newcomer"
            );
            moved += 1;
        }
    }
    assert!(moved > 0 && moved < 32, "{moved} of 32 objects moved");
    let drained = tracker
        .events
        .lock()
        .iter()
        .filter(|e| matches!(e, ShardingEvent::Draining { to, .. } if to == "replica-c"))
        .count();
    assert!(
        drained >= moved,
        "every move to a live ring was drained first ({drained} < {moved})"
    );
    every_object_served_by_its_shard(&server, &tracker, &live);

    // A clean stop releases the shard Lease before `stop` returns.
    assert_eq!(
        lease_holder(&server, &shard_lease("replica-a")).as_deref(),
        Some("replica-a")
    );
    a.stop();
    assert_ne!(
        lease_holder(&server, &shard_lease("replica-a")).as_deref(),
        Some("replica-a"),
        "stop released the shard Lease"
    );
    let live = ["replica-b", "replica-c"];
    wait_until("labels converged over b, c", || {
        converged(&server, &live, &[&b, &c])
    });
    every_object_served_by_its_shard(&server, &tracker, &live);
    tracker.assert_no_overlap();
    assert!(tracker.count.load(Ordering::SeqCst) >= 32 * 3);
    b.stop();
    c.stop();
}

#[test]
fn hangs_crashes_and_rejoins_under_churn_never_overlap() {
    let server = ApiServer::builder().resource(&widgets()).start();
    create_widgets(&server, 24, 4);
    let tracker = Tracker::new();
    let a = Replica::start(&server, "replica-a", &tracker, true);
    let b = Replica::start(&server, "replica-b", &tracker, true);
    // Replica c crashes: a stop without releasing its Lease.
    let c = Replica::start(&server, "replica-c", &tracker, false);
    let all = ["replica-a", "replica-b", "replica-c"];
    wait_until("labels converged over a, b, c", || {
        converged(&server, &all, &[&a, &b, &c])
    });

    // Churn all along: objects created, changed and deleted.
    let stop_churn = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let _stop_churn = StopOnDrop(&stop_churn);
        let churn = scope.spawn(|| {
            let mut i = 0u32;
            while !stop_churn.load(Ordering::SeqCst) {
                let name = format!("churn-{}", i % 12);
                if server.get(&widgets(), Some("lab"), &name).is_ok() {
                    if i % 3 == 0 {
                        let _ = server.delete(&widgets(), Some("lab"), &name);
                    } else {
                        let patch = json!({"metadata": {"annotations": {"round": i.to_string()}}});
                        let _ = server.patch(&widgets(), Some("lab"), &name, &patch);
                    }
                } else {
                    let _ = server.create(
                        &widgets(),
                        json!({"metadata": {"name": name, "namespace": "lab"}}),
                    );
                }
                i += 1;
                std::thread::sleep(Duration::from_millis(15));
            }
        });

        // b hangs: its workers stop at its renew deadline, its Lease expires, the sharder
        // fences it and moves its objects.
        b.hang();
        wait_until("the sharder to fence the hung replica-b", || {
            tracker
                .events
                .lock()
                .iter()
                .any(|e| matches!(e, ShardingEvent::Fenced { shard } if shard == "replica-b"))
        });
        wait_until("no object left on replica-b", || {
            server
                .list(&widgets(), None)
                .iter()
                .all(|o| label_of(o, SHARD_LABEL).as_deref() != Some("replica-b"))
        });
        // b comes back: it takes its Lease again once the fence is released, confirms
        // before reconciling, and gets its share back through drains.
        b.thaw();
        wait_until("replica-b to hold its Lease again", || {
            b.controller.as_ref().unwrap().is_leader()
        });
        // c crashes: no release.
        c.stop();
        assert_eq!(
            lease_holder(&server, &shard_lease("replica-c")).as_deref(),
            Some("replica-c"),
            "a crash leaves the Lease held until it expires"
        );
        stop_churn.store(true, Ordering::SeqCst);
        churn.join().unwrap();
    });
    let live = ["replica-a", "replica-b"];
    wait_until("labels converged over a, b after the crash", || {
        converged(&server, &live, &[&a, &b])
    });
    every_object_served_by_its_shard(&server, &tracker, &live);
    tracker.assert_no_overlap();
    a.stop();
    b.stop();
}

#[test]
fn nonsense_leases_count_as_dead_and_crash_nothing() {
    let server = ApiServer::builder().resource(&widgets()).start();
    let ring_labels = json!({"sharding.kube-informer.io/ring": "widgets"});
    let specs = [
        ("no-spec", Value::Null),
        ("no-holder", json!({"leaseDurationSeconds": 10})),
        (
            "zero",
            json!({"holderIdentity": "zero", "leaseDurationSeconds": 0}),
        ),
        (
            "negative",
            json!({"holderIdentity": "negative", "leaseDurationSeconds": -5}),
        ),
        (
            "junk",
            json!({"holderIdentity": 7, "leaseDurationSeconds": "long", "renewTime": "later"}),
        ),
        (
            "stranger",
            json!({"holderIdentity": "someone-else", "leaseDurationSeconds": 3}),
        ),
        // No Lease at all.
        ("ghost", json!("none")),
    ];
    for (i, (name, spec)) in specs.iter().enumerate() {
        if spec != "none" {
            let mut lease = json!({"metadata": {"name": shard_lease(name), "namespace": NS,
                "labels": ring_labels}});
            if !spec.is_null() {
                lease["spec"] = spec.clone();
            }
            server.create(&leases(), lease).unwrap();
        }
        server
            .create(
                &widgets(),
                json!({"metadata": {"name": format!("w-{i}"), "namespace": "lab",
                    "labels": {SHARD_LABEL: name, DRAIN_LABEL: "true"}}}),
            )
            .unwrap();
    }
    let tracker = Tracker::new();
    let a = Replica::start(&server, "replica-a", &tracker, true);
    wait_until("every object on replica-a", || {
        converged(&server, &["replica-a"], &[&a])
    });
    every_object_served_by_its_shard(&server, &tracker, &["replica-a"]);
    assert!(a.sharder.as_ref().unwrap().is_leader());
    // Every shard's Lease was fenced before its objects moved (none was skipped).
    for (name, _) in specs {
        assert!(
            tracker.any_event(|e| matches!(e, ShardingEvent::Fenced { shard } if shard == name)),
            "{name} was not fenced: {:?}",
            tracker.events.lock()
        );
    }
    tracker.assert_no_overlap();
    a.stop();
}

/// What happens to a live shard's Lease behind its back.
#[derive(Clone, Copy, Debug)]
enum Sabotage {
    /// `kubectl delete lease`.
    Delete,
    /// Its duration overwritten with nonsense (the holder unchanged).
    Nonsense,
    /// Taken over by a stranger (another identity writes itself in as the holder).
    Stranger,
}

/// A live shard, busy with long reconciles (1.5 s, well inside the 4 s margin of these
/// timings), has its Lease sabotaged: the sharder may fence it at once, but must not move
/// its objects until the shard has certainly stopped; the shard takes its Lease back later
/// and gets its share again.
fn sabotage_a_live_shards_lease(how: Sabotage) {
    let server = ApiServer::builder().resource(&widgets()).start();
    create_widgets(&server, 6, 0);
    let tracker = Tracker::new();
    tracker.lease_secs.store(6, Ordering::SeqCst);
    let a = Replica::start(&server, "replica-a", &tracker, true);
    let b = Replica::start(&server, "replica-b", &tracker, true);
    let live = ["replica-a", "replica-b"];
    wait_until("converged over a, b", || {
        converged(&server, &live, &[&a, &b])
    });
    tracker.sleep_ms.store(1500, Ordering::SeqCst);
    let on_a = |o: &Value| label_of(o, SHARD_LABEL).as_deref() == Some("replica-a");
    assert!(server.list(&widgets(), None).iter().any(on_a));
    let stop = AtomicBool::new(false);
    let moved_off_a = || {
        tracker.any_event(|e| matches!(e, ShardingEvent::Moved { from, .. } if from == "replica-a"))
    };
    std::thread::scope(|scope| {
        let _stop_busy = StopOnDrop(&stop);
        // Keeps replica-a's workers busy with its objects.
        let busy = scope.spawn(|| {
            let mut i = 0u32;
            while !stop.load(Ordering::SeqCst) {
                for o in server.list(&widgets(), None).iter().filter(|o| on_a(o)) {
                    let name = o["metadata"]["name"].as_str().unwrap();
                    let p = json!({"metadata": {"annotations": {"busy": i.to_string()}}});
                    let _ = server.patch(&widgets(), Some("lab"), name, &p);
                }
                i += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        wait_until("replica-a inside a reconcile", || {
            tracker.inside.lock().values().any(|s| s == "replica-a")
        });
        let name = shard_lease("replica-a");
        match how {
            Sabotage::Delete => {
                server.delete(&leases(), Some(NS), &name).unwrap();
            }
            Sabotage::Nonsense => {
                let p = json!({"spec": {"leaseDurationSeconds": 0}});
                server.patch(&leases(), Some(NS), &name, &p).unwrap();
            }
            Sabotage::Stranger => {
                let p = json!({"spec": {"holderIdentity": "intruder", "leaseDurationSeconds": 1}});
                server.patch(&leases(), Some(NS), &name, &p).unwrap();
            }
        }
        // Two outcomes are right, and which one comes is a race: the sharder fences the Lease
        // (and, after waiting it out, moves replica-a's objects), or replica-a's next renewal
        // repairs its Lease first (a live shard keeps its objects). Either way no object is
        // ever reconciled by two shards at once (checked below).
        wait_until(
            "replica-a's objects moved off it, or its Lease repaired",
            || moved_off_a() || lease_repaired(&server, "replica-a"),
        );
        stop.store(true, Ordering::SeqCst);
        busy.join().unwrap();
    });
    tracker.sleep_ms.store(2, Ordering::SeqCst);
    if moved_off_a() {
        assert!(
            tracker.any_event(
                |e| matches!(e, ShardingEvent::Fenced { shard } if shard == "replica-a")
            ),
            "{how:?}: moved without a fence"
        );
    }
    // replica-a takes its Lease back once the fence is released, and its share with it.
    wait_until("converged over a, b again", || {
        converged(&server, &live, &[&a, &b])
    });
    every_object_served_by_its_shard(&server, &tracker, &live);
    tracker.assert_no_overlap();
    a.stop();
    b.stop();
}

#[test]
fn a_deleted_lease_of_a_live_shard_moves_nothing_until_it_stopped() {
    sabotage_a_live_shards_lease(Sabotage::Delete);
}

#[test]
fn a_nonsense_lease_of_a_live_shard_moves_nothing_until_it_stopped() {
    sabotage_a_live_shards_lease(Sabotage::Nonsense);
}

#[test]
fn a_stranger_holding_a_live_shards_lease_moves_nothing_until_it_stopped() {
    sabotage_a_live_shards_lease(Sabotage::Stranger);
}

/// An object deleted and created again under the same name, while the shard that had it
/// still caches the old one (its watch lags) and the ring has changed meanwhile: the new
/// object must not reach another shard before the old shard let go of the name.
#[test]
fn a_recreated_object_is_handed_over_by_the_shard_that_had_its_name() {
    let server = ApiServer::builder().resource(&widgets()).start();
    // A name that replica-b wins once it joins.
    let name = (0..)
        .map(|i| format!("w-{i:03}"))
        .find(|n| shard_for(&format!("lab/{n}"), &["replica-a", "replica-b"]) == Some("replica-b"))
        .unwrap();
    let key = format!("lab/{name}");
    let create = || {
        server
            .create(
                &widgets(),
                json!({"metadata": {"name": name, "namespace": "lab"}}),
            )
            .unwrap()
    };
    create();
    let tracker = Tracker::new();
    let a = Replica::start(&server, "replica-a", &tracker, true);
    wait_until("converged over a", || {
        converged(&server, &["replica-a"], &[&a])
    });
    every_object_served_by_its_shard(&server, &tracker, &["replica-a"]);
    // replica-a's watch of the widgets stops delivering: its cache keeps the old object.
    a.informer.stop();
    server.delete(&widgets(), Some("lab"), &name).unwrap();
    let b = Replica::start(&server, "replica-b", &tracker, true);
    wait_until("the sharder to see replica-b live", || {
        tracker.any_event(|e| matches!(e, ShardingEvent::Membership { live } if live.len() == 2))
    });
    create();
    tracker.sleep_ms.store(200, Ordering::SeqCst);
    let since = Instant::now();
    let a_queue = a.controller.as_ref().unwrap().queue();
    // Work arrives on both sides: replica-a (from its stale cache) and whoever has the new
    // object. Until replica-a lets go of the name, only replica-a may reconcile it.
    wait_until("replica-a reconciling from its stale cache", || {
        a_queue.add(key.clone());
        let p = json!({"metadata": {"annotations": {"t": format!("{:?}", Instant::now())}}});
        let _ = server.patch(&widgets(), Some("lab"), &name, &p);
        std::thread::sleep(Duration::from_millis(50));
        tracker.reconciled(&key, "replica-a", since) >= 4
            && (tracker.reconciled(&key, "replica-b", since) >= 4
                || tracker.any_event(
                    |e| matches!(e, ShardingEvent::Draining { key: k, .. } if *k == key),
                ))
    });
    tracker.sleep_ms.store(2, Ordering::SeqCst);
    tracker.assert_no_overlap();
    // replica-a stops (its watch never caught up): the name moves to replica-b.
    a.stop();
    wait_until("converged over b", || {
        converged(&server, &["replica-b"], &[&b])
    });
    every_object_served_by_its_shard(&server, &tracker, &["replica-b"]);
    tracker.assert_no_overlap();
    b.stop();
}

/// An object's shard label removed by hand (`kubectl label … shard-`, with the drain label
/// or without) mid-drain, while the shard that has it (replica-a) still works on it from a
/// cache that never saw the drain (its watch lags): the removal is a move, not a free
/// object. The name must go back to replica-a (and be drained from there), never to
/// replica-b while replica-a may reconcile it; once replica-a stops, it moves to replica-b.
fn a_shard_label_removed_by_hand_mid_drain(drain_too: bool) {
    let server = ApiServer::builder().resource(&widgets()).start();
    // A name that replica-b wins once it joins.
    let name = (0..)
        .map(|i| format!("w-{i:03}"))
        .find(|n| shard_for(&format!("lab/{n}"), &["replica-a", "replica-b"]) == Some("replica-b"))
        .unwrap();
    let key = format!("lab/{name}");
    server
        .create(
            &widgets(),
            json!({"metadata": {"name": name, "namespace": "lab"}}),
        )
        .unwrap();
    let tracker = Tracker::new();
    let a = Replica::start(&server, "replica-a", &tracker, true);
    wait_until("converged over a", || {
        converged(&server, &["replica-a"], &[&a])
    });
    every_object_served_by_its_shard(&server, &tracker, &["replica-a"]);
    // replica-a's watch of the widgets stops delivering: its cache keeps the object as its
    // own (confirmed for its term), so it never sees the drain and never acknowledges.
    a.informer.stop();
    let b = Replica::start(&server, "replica-b", &tracker, true);
    wait_until("the sharder to drain the object from replica-a", || {
        tracker.any_event(|e| matches!(e, ShardingEvent::Draining { key: k, .. } if *k == key))
    });
    wait_until("the drain label on the object", || {
        server
            .get(&widgets(), Some("lab"), &name)
            .is_ok_and(|o| label_of(&o, DRAIN_LABEL).is_some())
    });
    tracker.sleep_ms.store(200, Ordering::SeqCst);
    let a_queue = a.controller.as_ref().unwrap().queue();
    // replica-a busy with the object from its stale cache.
    wait_until("replica-a reconciling the object", || {
        a_queue.add(key.clone());
        tracker.inside.lock().get(&key).map(String::as_str) == Some("replica-a")
    });
    let mut labels = serde_json::Map::new();
    labels.insert(SHARD_LABEL.to_owned(), Value::Null);
    if drain_too {
        labels.insert(DRAIN_LABEL.to_owned(), Value::Null);
    }
    server
        .patch(
            &widgets(),
            Some("lab"),
            &name,
            &json!({"metadata": {"labels": labels}}),
        )
        .unwrap();
    let since = Instant::now();
    let given_back = || {
        tracker.any_event(
            |e| matches!(e, ShardingEvent::Assigned { key: k, shard } if *k == key && shard == "replica-a"),
        )
    };
    let to_b = || {
        tracker.any_event(
            |e| matches!(e, ShardingEvent::Assigned { key: k, shard } if *k == key && shard == "replica-b"),
        )
    };
    // Work keeps arriving on both sides: replica-a (from its stale cache) and whoever has the
    // object on the server.
    wait_until(
        "the object given back to replica-a (or, wrongly, to replica-b)",
        || {
            a_queue.add(key.clone());
            let p = json!({"metadata": {"annotations": {"t": format!("{:?}", Instant::now())}}});
            let _ = server.patch(&widgets(), Some("lab"), &name, &p);
            std::thread::sleep(Duration::from_millis(50));
            tracker.reconciled(&key, "replica-a", since) >= 4
                && (given_back() || (to_b() && tracker.reconciled(&key, "replica-b", since) >= 2))
        },
    );
    assert!(
        !to_b(),
        "the unlabelled object went to replica-b while replica-a had not let go: {:?}",
        tracker.events.lock()
    );
    tracker.sleep_ms.store(2, Ordering::SeqCst);
    tracker.assert_no_overlap();
    // replica-a stops (its watch never caught up): the object moves to replica-b.
    a.stop();
    wait_until("converged over b", || {
        converged(&server, &["replica-b"], &[&b])
    });
    every_object_served_by_its_shard(&server, &tracker, &["replica-b"]);
    tracker.assert_no_overlap();
    b.stop();
}

#[test]
fn a_shard_label_removed_by_hand_mid_drain_goes_back_to_its_shard() {
    a_shard_label_removed_by_hand_mid_drain(false);
}

#[test]
fn shard_and_drain_labels_removed_by_hand_mid_drain_go_back_to_their_shard() {
    a_shard_label_removed_by_hand_mid_drain(true);
}
