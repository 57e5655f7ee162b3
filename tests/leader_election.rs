//! Leader election on Leases against the test API server, over real HTTP: the captured Lease
//! records and 409, several electors never leading at once, hand-over on a clean stop, a
//! frozen leader, an unreachable server, clock-skewed and malformed records, and a controller
//! whose workers run only while it leads.
//!
//! Nothing here asserts on timing: every wait is for a condition (bounded by `PATIENCE`), and
//! the time comparisons check an order of events that correct code guarantees whatever the
//! scheduling (a successor never starts before the lease it took over could have expired).

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use kube_informer::api::{ApiResource, DynamicObject, Status};
use kube_informer::cache::SharedIndexInformer;
use kube_informer::controller::{
    Action, Controller, LeaderCallbacks, LeaderElectionConfig, LeaderElector, Lease, MicroTime,
};
use kube_informer::testing::ApiServer;
use kube_informer::{Api, Client, PostParams};
use parking_lot::Mutex;
use serde_json::{json, Value};

fn leases() -> ApiResource {
    ApiResource::new("coordination.k8s.io", "v1", "Lease", "leases", true)
}

fn body_of(request: &str) -> &str {
    request.split_once("\n\n").expect("a request body").1.trim()
}

#[test]
fn lease_fixtures_parse_and_write_back_byte_for_byte() {
    for name in ["lease-create.json", "lease-get.json", "lease-update.json"] {
        let text = String::from_utf8(fixture(name)).unwrap();
        let text = text.trim_end();
        let lease: Lease = serde_json::from_str(text).unwrap();
        let spec = lease.spec.as_ref().unwrap();
        assert_eq!(
            spec.holder_identity.as_deref(),
            Some("fx-controller-0_6f1c2a")
        );
        assert_eq!(spec.lease_duration_seconds, Some(15));
        assert_eq!(spec.lease_transitions, Some(0));
        // The spec is written back exactly as the server wrote it (6 fractional digits).
        let written = serde_json::to_string(spec).unwrap();
        let start = text.find("\"spec\":").unwrap() + "\"spec\":".len();
        assert_eq!(written, &text[start..text.len() - 1], "{name}");
    }
    let update: Lease = serde_json::from_slice(&fixture("lease-update.json")).unwrap();
    assert_eq!(
        update.spec.unwrap().renew_time.unwrap().to_string(),
        "2026-11-23T04:40:40.123456Z"
    );
    // The requests a client sends, re-encoded from our type, are the bodies captured.
    for name in [
        "lease-update.request",
        "status-409-lease-update-stale-rv.request",
    ] {
        let text = String::from_utf8(fixture(name)).unwrap();
        let body = body_of(&text);
        let lease: Lease = serde_json::from_str(body).unwrap();
        assert_eq!(serde_json::to_string(&lease).unwrap(), body, "{name}");
    }
}

#[test]
fn a_stale_lease_update_answers_409_like_kube_apiserver() {
    let server = ApiServer::start();
    let created: Value = serde_json::from_slice(&fixture("lease-create.json")).unwrap();
    let mut create = created.clone();
    for field in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "managedFields",
    ] {
        create["metadata"].as_object_mut().unwrap().remove(field);
    }
    server.create(&leases(), create).unwrap();
    let api: Api<Lease> = Api::namespaced(Client::new(server.client_config()).unwrap(), "fx-lease");
    let mut lease = api.get("fx-controller-leader").unwrap();
    let stale = lease.clone();
    lease.spec.as_mut().unwrap().renew_time = Some(MicroTime::now());
    let renewed = api
        .replace("fx-controller-leader", &PostParams::default(), &lease)
        .unwrap();
    assert_ne!(
        renewed.metadata.resource_version,
        stale.metadata.resource_version
    );

    // The takeover with the old resourceVersion, as captured.
    let request = String::from_utf8(fixture("status-409-lease-update-stale-rv.request")).unwrap();
    let mut takeover: Lease = serde_json::from_str(body_of(&request)).unwrap();
    takeover.metadata.resource_version = stale.metadata.resource_version.clone();
    let err = api
        .replace("fx-controller-leader", &PostParams::default(), &takeover)
        .expect_err("a stale resourceVersion is refused");
    assert!(err.is_conflict(), "{err}");
    let expected: Status =
        serde_json::from_slice(&fixture("status-409-lease-update-stale-rv.json")).unwrap();
    assert_eq!(fixture_code("status-409-lease-update-stale-rv.json"), 409);
    assert_eq!(err.status().unwrap(), &expected);
    // And the raw body is the captured one, byte for byte.
    let url = format!(
        "{}/apis/coordination.k8s.io/v1/namespaces/fx-lease/leases/fx-controller-leader",
        server.url()
    );
    let agent = ureq::Agent::new_with_defaults();
    let res = agent
        .put(&url)
        .header("Content-Type", "application/json")
        .config()
        .http_status_as_error(false)
        .build()
        .send(serde_json::to_string(&takeover).unwrap())
        .unwrap();
    assert_eq!(res.status().as_u16(), 409);
    let body = res.into_body().read_to_string().unwrap();
    assert_eq!(
        body.into_bytes(),
        fixture("status-409-lease-update-stale-rv.json")
    );
}

/// Who started and stopped leading, in the order the callbacks ran.
#[derive(Default)]
struct Terms {
    events: Mutex<Vec<(String, bool, Instant)>>,
    /// (observer, leader) from the new-leader callbacks.
    observed: Mutex<Vec<(String, String)>>,
}

impl Terms {
    fn callbacks(self: &Arc<Self>, id: &str) -> LeaderCallbacks {
        let (started, stopped, observed) = (Arc::clone(self), Arc::clone(self), Arc::clone(self));
        let (id1, id2, id3) = (id.to_owned(), id.to_owned(), id.to_owned());
        LeaderCallbacks::new(move |term| {
            let thread = std::thread::current().name().unwrap_or("").to_owned();
            assert!(
                thread.starts_with("ki/") && thread.ends_with("/lead"),
                "{thread}"
            );
            started
                .events
                .lock()
                .push((id1.clone(), true, Instant::now()));
            term.wait();
        })
        .on_stopped_leading(move || {
            stopped
                .events
                .lock()
                .push((id2.clone(), false, Instant::now()));
        })
        .on_new_leader(move |leader| {
            let thread = std::thread::current().name().unwrap_or("").to_owned();
            assert!(thread.ends_with("/elec"), "{thread}");
            observed
                .observed
                .lock()
                .push((id3.clone(), leader.to_owned()));
        })
    }

    fn saw_as_leader(&self, observer: &str, leader: &str) -> bool {
        self.observed
            .lock()
            .iter()
            .any(|(o, l)| o == observer && l == leader)
    }

    /// Panics unless every term ended before the next one started.
    fn check_no_overlap(&self) {
        let mut leading: Option<&str> = None;
        let events = self.events.lock();
        for (id, started, _) in events.iter() {
            if *started {
                assert!(
                    leading.is_none(),
                    "{id} started while {leading:?} led: {events:?}"
                );
                leading = Some(id);
            } else {
                assert_eq!(leading, Some(id.as_str()), "{events:?}");
                leading = None;
            }
        }
    }

    fn leader(&self) -> Option<String> {
        let events = self.events.lock();
        match events.last() {
            Some((id, true, _)) => Some(id.clone()),
            _ => None,
        }
    }

    fn starts(&self) -> usize {
        self.events.lock().iter().filter(|e| e.1).count()
    }

    /// Waits for a term started by someone other than `not`, among the terms after the
    /// first `from`; who started it, and when. (A leader may also step down and start again
    /// on its own when a loaded machine delays its renewals: tests never count on a term
    /// number to name a hand-over.)
    fn wait_start(&self, from: usize, not: Option<&str>) -> (String, Instant) {
        let found = || {
            let events = self.events.lock();
            events
                .iter()
                .filter(|e| e.1)
                .skip(from)
                .find(|e| Some(e.0.as_str()) != not)
                .map(|e| (e.0.clone(), e.2))
        };
        wait_until("a term to start", || found().is_some());
        found().unwrap()
    }

    /// How many electors have led.
    fn distinct_leaders(&self) -> usize {
        let mut ids: Vec<String> = self
            .events
            .lock()
            .iter()
            .filter(|e| e.1)
            .map(|e| e.0.clone())
            .collect();
        ids.sort();
        ids.dedup();
        ids.len()
    }

    /// Whether `id`'s last callback was its stop.
    fn stopped(&self, id: &str) -> bool {
        let events = self.events.lock();
        events
            .iter()
            .rev()
            .find(|e| e.0 == id)
            .is_some_and(|e| !e.1)
    }
}

fn config(lease: &str, id: &str) -> LeaderElectionConfig {
    LeaderElectionConfig::new("lab", lease, id)
        .lease_duration(Duration::from_secs(4))
        .renew_deadline(Duration::from_secs(2))
        .retry_period(Duration::from_millis(200))
}

fn electors(
    server: &ApiServer,
    terms: &Arc<Terms>,
    ids: &[&str],
    config: impl Fn(&str) -> LeaderElectionConfig,
) -> Vec<Option<LeaderElector>> {
    ids.iter()
        .map(|id| {
            let client = Client::new(server.client_config()).unwrap();
            Some(LeaderElector::start(client, config(id), terms.callbacks(id)).unwrap())
        })
        .collect()
}

fn index_of(electors: &[Option<LeaderElector>], id: &str) -> usize {
    electors
        .iter()
        .position(|e| e.as_ref().is_some_and(|e| e.identity() == id))
        .unwrap()
}

fn lease_spec(server: &ApiServer, name: &str) -> Value {
    server.get(&leases(), Some("lab"), name).unwrap()["spec"].clone()
}

#[test]
fn three_electors_lead_one_at_a_time_and_a_clean_stop_hands_over_at_once() {
    let server = ApiServer::start();
    let terms = Arc::new(Terms::default());
    // A long lease: a successor that had to wait for it to expire would show.
    let lease = Duration::from_secs(30);
    let mut all = electors(&server, &terms, &["e-0", "e-1", "e-2"], |id| {
        config("clean", id)
            .lease_duration(lease)
            .renew_deadline(Duration::from_secs(20))
    });
    // (the stopped leader, its last renewal, how many terms had started before its stop)
    let mut previous: Option<(String, Instant, usize)> = None;
    for _ in 0..3 {
        let (leader, started) = match &previous {
            None => terms.wait_start(0, None),
            Some((stopped, _, from)) => terms.wait_start(*from, Some(stopped)),
        };
        if let Some((_, last_renew, _)) = &previous {
            assert!(
                started < *last_renew + lease,
                "the successor waited for the lease to expire: it was not released"
            );
        }
        let i = index_of(&all, &leader);
        let elector = all[i].take().unwrap();
        assert!(elector.is_leader());
        assert_eq!(elector.leader().as_deref(), Some(leader.as_str()));
        let last_renew = elector.last_renew().unwrap();
        for other in all.iter().flatten() {
            wait_until("the others to observe the leader", || {
                terms.saw_as_leader(other.identity(), &leader)
            });
            assert!(!other.is_leader());
        }
        let from = terms.starts();
        let stopping = Instant::now();
        elector.stop();
        eprintln!("the leader's stop took {:?}", stopping.elapsed());
        let spec = lease_spec(&server, "clean");
        assert_ne!(spec["holderIdentity"], json!(leader), "released: {spec}");
        previous = Some((leader, last_renew, from));
    }
    terms.check_no_overlap();
    assert_eq!(terms.distinct_leaders(), 3);
    let spec = lease_spec(&server, "clean");
    assert_eq!(spec["holderIdentity"], json!(""));
    assert_eq!(spec["leaseDurationSeconds"], json!(1));
    assert_eq!(spec["leaseTransitions"], json!(2), "{spec}");
}

#[test]
fn a_frozen_leader_is_succeeded_only_after_its_lease_expired() {
    let server = ApiServer::start();
    let terms = Arc::new(Terms::default());
    let lease = Duration::from_secs(4);
    let mut all = electors(&server, &terms, &["f-0", "f-1", "f-2"], |id| {
        config("frozen", id)
    });
    let (leader, _) = terms.wait_start(0, None);
    let i = index_of(&all, &leader);
    let frozen = all[i].as_ref().unwrap();
    frozen.freeze();
    let last_renew = frozen.last_renew().unwrap();
    // The frozen leader's watchdog ends its term at the renew deadline.
    wait_until("the frozen leader to step down", || terms.stopped(&leader));
    assert!(!frozen.is_leader());
    let (successor, started) = terms.wait_start(0, Some(&leader));
    assert!(
        started >= last_renew + lease,
        "the successor started before the frozen leader's lease could have expired"
    );
    // Thawed, the old leader sees the new holder and stays a follower.
    frozen.thaw();
    let s = successor.clone();
    wait_until("the thawed elector to observe the successor", || {
        all[i].as_ref().unwrap().leader().as_deref() == Some(s.as_str())
    });
    assert!(!all[i].as_ref().unwrap().is_leader());
    // Read before the stops: each stop releases the lease to whoever still runs.
    assert_eq!(lease_spec(&server, "frozen")["leaseTransitions"], json!(1));
    for e in all.iter_mut() {
        e.take().unwrap().stop();
    }
    terms.check_no_overlap();
}

#[test]
fn an_unreachable_server_makes_the_leader_step_down_and_it_leads_again_later() {
    let server = ApiServer::start();
    let terms = Arc::new(Terms::default());
    let mut all = electors(&server, &terms, &["u-0", "u-1"], |id| config("down", id));
    terms.wait_start(0, None);
    server.go_down();
    wait_until("the leader to step down", || terms.leader().is_none());
    assert!(all.iter().all(|e| !e.as_ref().unwrap().is_leader()));
    let before = terms.starts();
    server.come_back().unwrap();
    terms.wait_start(before, None);
    for e in all.iter_mut() {
        e.take().unwrap().stop();
    }
    terms.check_no_overlap();
}

fn skewed_lease(name: &str, holder: &str, renew: &str, duration: i64) -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": name, "namespace": "lab"},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": duration,
                 "acquireTime": renew, "renewTime": renew, "leaseTransitions": 4}
    })
}

#[test]
fn a_holder_whose_clock_is_far_ahead_is_waited_out_by_observation() {
    let server = ApiServer::start();
    let created = Instant::now();
    server
        .create(
            &leases(),
            skewed_lease("ahead", "ghost", "2099-01-01T00:00:00.000000Z", 2),
        )
        .unwrap();
    let terms = Arc::new(Terms::default());
    let mut all = electors(&server, &terms, &["a-0", "a-1", "a-2"], |id| {
        config("ahead", id)
    });
    let (_, started) = terms.wait_start(0, None);
    assert!(started >= created + Duration::from_secs(2));
    assert_eq!(lease_spec(&server, "ahead")["leaseTransitions"], json!(5));
    for e in all.iter_mut() {
        e.take().unwrap().stop();
    }
    terms.check_no_overlap();
}

#[test]
fn a_live_holder_whose_clock_is_far_behind_keeps_the_lease() {
    let server = ApiServer::start();
    server
        .create(
            &leases(),
            skewed_lease("behind", "old-clock", "1990-01-01T00:00:00.000000Z", 10),
        )
        .unwrap();
    let terms = Arc::new(Terms::default());
    let mut all = electors(&server, &terms, &["b-0", "b-1"], |id| config("behind", id));
    // The holder renews with times from 1990; each renewal changes the record.
    let base = MicroTime::parse("1990-01-01T00:00:00Z")
        .unwrap()
        .to_system_time();
    let observed = |id: &str, all: &[Option<LeaderElector>]| {
        all.iter()
            .all(|e| e.as_ref().unwrap().leader().as_deref() == Some(id))
    };
    wait_until("the electors to observe the holder", || {
        observed("old-clock", &all)
    });
    for n in 1..=25u64 {
        let mut lease = server.get(&leases(), Some("lab"), "behind").unwrap();
        let t = MicroTime::from_system_time(base + Duration::from_millis(n));
        lease["spec"]["renewTime"] = json!(t.to_string());
        server.update(&leases(), lease).unwrap();
        assert_eq!(terms.starts(), 0, "an elector took a live lease");
        std::thread::sleep(Duration::from_millis(100)); // the holder's renew period
    }
    assert_eq!(terms.starts(), 0, "an elector took a live lease");
    // The holder stops renewing: one elector takes over once it expired.
    terms.wait_start(0, None);
    for e in all.iter_mut() {
        e.take().unwrap().stop();
    }
    terms.check_no_overlap();
}

#[test]
fn malformed_lease_records_are_taken_over_without_panic() {
    let server = ApiServer::start();
    let junk = [
        (
            "no-spec",
            json!({"metadata": {"name": "no-spec", "namespace": "lab"}}),
        ),
        (
            "no-holder",
            json!({"metadata": {"name": "no-holder", "namespace": "lab"}, "spec": {"leaseDurationSeconds": 15}}),
        ),
        (
            "zero",
            json!({"metadata": {"name": "zero", "namespace": "lab"}, "spec": {"holderIdentity": "z", "leaseDurationSeconds": 0}}),
        ),
        (
            "negative",
            json!({"metadata": {"name": "negative", "namespace": "lab"}, "spec": {"holderIdentity": "n", "leaseDurationSeconds": -5, "leaseTransitions": -2}}),
        ),
        (
            "bad-time",
            json!({"metadata": {"name": "bad-time", "namespace": "lab"}, "spec": {"holderIdentity": "t", "leaseDurationSeconds": 1, "renewTime": "yesterday", "acquireTime": 12}}),
        ),
        (
            "bad-types",
            json!({"metadata": {"name": "bad-types", "namespace": "lab"}, "spec": {"holderIdentity": 7, "leaseDurationSeconds": "long", "leaseTransitions": "many"}}),
        ),
        (
            "spec-null",
            json!({"metadata": {"name": "spec-null", "namespace": "lab"}, "spec": null}),
        ),
    ];
    for (_, lease) in &junk {
        server.create(&leases(), lease.clone()).unwrap();
    }
    let terms = Arc::new(Terms::default());
    let mut all: Vec<_> = junk
        .iter()
        .map(|(name, _)| {
            let client = Client::new(server.client_config()).unwrap();
            let id = format!("taker-{name}");
            LeaderElector::start(client, config(name, &id), terms.callbacks(&id)).unwrap()
        })
        .collect();
    wait_until("every malformed lease taken", || {
        terms.distinct_leaders() == junk.len()
    });
    for (name, _) in &junk {
        let spec = lease_spec(&server, name);
        assert_eq!(spec["holderIdentity"], json!(format!("taker-{name}")));
        assert!(spec["leaseTransitions"].as_i64().unwrap() >= 0, "{spec}");
        assert!(spec["renewTime"].as_str().unwrap().ends_with('Z'));
    }
    for e in all.drain(..) {
        e.stop();
    }
}

#[test]
fn invalid_timings_are_refused() {
    let server = ApiServer::start();
    let client = Client::new(server.client_config()).unwrap();
    let bad = config("x", "me").renew_deadline(Duration::from_secs(5));
    let err = LeaderElector::start(client, bad, LeaderCallbacks::new(|_| {})).unwrap_err();
    assert!(err.to_string().contains("renew deadline"), "{err}");
}

/// One replica's view in the controller test.
enum Seen {
    Leading(&'static str, bool),
    Reconciled(&'static str, String),
}

#[test]
fn a_controller_under_election_runs_its_workers_only_while_leading() {
    let server = ApiServer::start();
    for i in 0..5 {
        server
            .create(&pods(), pod("lab", &format!("p-{i}"), "Pending"))
            .unwrap();
    }
    let log: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let replica = |id: &'static str| {
        let client = Client::new(server.client_config()).unwrap();
        let informer: SharedIndexInformer<DynamicObject> =
            SharedIndexInformer::new(Api::all_with(client.clone(), &pods()), fast_config());
        let (l1, l2) = (Arc::clone(&log), Arc::clone(&log));
        Controller::builder("labeler", informer)
            .workers(2)
            .leader_election(
                client,
                config("labeler", id)
                    .lease_duration(Duration::from_secs(10))
                    .renew_deadline(Duration::from_secs(5)),
            )
            .on_leadership(move |leading| l1.lock().push(Seen::Leading(id, leading)))
            .run(move |key: &str| -> Result<Action, kube_informer::Error> {
                l2.lock().push(Seen::Reconciled(id, key.to_owned()));
                Ok(Action::Done)
            })
            .unwrap()
    };
    let a = replica("replica-a");
    let b = replica("replica-b");
    let reconciled_by = |id: &str| {
        let mut keys: Vec<String> = log
            .lock()
            .iter()
            .filter_map(|s| match s {
                Seen::Reconciled(r, k) if *r == id => Some(k.clone()),
                _ => None,
            })
            .collect();
        keys.sort();
        keys.dedup();
        keys.len()
    };
    wait_until("the leader to reconcile every pod", || {
        reconciled_by("replica-a") == 5 || reconciled_by("replica-b") == 5
    });
    let (first, second, second_id) = if reconciled_by("replica-a") == 5 {
        (a, b, "replica-b")
    } else {
        (b, a, "replica-a")
    };
    // The other replica cannot lead before the leader releases (or the 10 s lease expires).
    assert!(!second.is_leader());
    assert_eq!(reconciled_by(second_id), 0, "a follower reconciled");
    first.stop();
    // The follower's warm queue holds every key: it reconciles all of them in its term.
    wait_until("the successor to reconcile every pod", || {
        reconciled_by(second_id) == 5
    });
    server
        .create(&pods(), pod("lab", "p-new", "Pending"))
        .unwrap();
    wait_until("the successor to reconcile a new pod", || {
        reconciled_by(second_id) == 6
    });
    // The API server away: the leader steps down and its workers stop; back: a new term.
    server.go_down();
    wait_until("the leader to step down", || !second.is_leader());
    server.come_back().unwrap();
    wait_until("a new term", || second.is_leader());
    server
        .create(&pods(), pod("lab", "p-after", "Pending"))
        .unwrap();
    wait_until("the new term to reconcile a new pod", || {
        reconciled_by(second_id) == 7
    });
    second.stop();
    // Every reconcile happened inside its replica's term, and terms never overlapped.
    let mut leading: Option<&str> = None;
    for s in log.lock().iter() {
        match s {
            Seen::Leading(id, true) => {
                assert!(leading.is_none(), "{id} led while {leading:?} did");
                leading = Some(id);
            }
            Seen::Leading(id, false) => {
                assert_eq!(leading, Some(*id));
                leading = None;
            }
            Seen::Reconciled(id, key) => {
                assert_eq!(leading, Some(*id), "{id} reconciled {key} outside its term");
            }
        }
    }
}
