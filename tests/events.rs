//! The event recorder against the test API server, over real HTTP: the captured Event creates
//! and 422, an Event as the recorder writes it, repeats aggregated into a series, the
//! per-object rate limit, a server that is down or stalled (the caller never waits, the queue
//! bound holds, drops are counted), a prompt stop, and the `core/v1` fallback.
//!
//! Nothing here asserts on timing except that `stop` returns within a second (the brief's
//! bound, with a stalled request in flight); every wait is for a condition, bounded by
//! `PATIENCE`.

mod common;

use std::time::{Duration, Instant};

use common::capture::{self, Compare};
use kube_informer::api::{ApiResource, DynamicObject};
use kube_informer::controller::{
    EventRecorder, EventRecorderConfig, EventRecorderStats, EventType, ObjectReference,
};
use kube_informer::testing::{ApiServer, Fault, Target};
use kube_informer::{Api, Client};
use serde_json::{json, Value};

const PATIENCE: Duration = Duration::from_secs(60);

fn events_v1() -> ApiResource {
    ApiResource::new("events.k8s.io", "v1", "Event", "events", true)
}

fn events_core() -> ApiResource {
    ApiResource::new("", "v1", "Event", "events", true)
}

fn pods() -> ApiResource {
    ApiResource::new("", "v1", "Pod", "pods", true)
}

fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !cond() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn wait_processed(r: &EventRecorder, n: u64) -> EventRecorderStats {
    wait_until(&format!("{n} events processed"), || {
        r.stats().processed >= n
    });
    r.stats()
}

/// A pod made through the API, and a reference to it as a controller would take it.
fn pod(server: &ApiServer, client: &Client, name: &str) -> ObjectReference {
    server
        .create(
            &pods(),
            json!({"metadata": {"name": name, "namespace": "lab"}}),
        )
        .unwrap();
    let p = Api::<DynamicObject>::namespaced_with(client.clone(), "lab", &pods())
        .get(name)
        .unwrap();
    ObjectReference::from_object(&pods(), &p)
}

fn config() -> EventRecorderConfig {
    EventRecorderConfig::new("example.com/labeler", "labeler-0")
}

#[test]
fn the_captured_event_creates_and_422_replay_as_captured() {
    let server = ApiServer::start();
    let v1 = capture::replay(&server, "event-create-events-v1");
    Compare::new().assert("event-create-events-v1", &v1);
    let core = capture::replay(&server, "event-create-core-v1");
    // `source` is a struct the real server never owns as a member (no `"."` entry); the
    // test server's managed fields (not this file's area) add one, so its children are not
    // compared. Every other field is.
    Compare::new()
        .ignore("metadata.managedFields.*.fieldsV1.f:source.*")
        .assert("event-create-core-v1", &core);
    let invalid = capture::replay(&server, "status-422-event-missing-eventtime");
    Compare::new().assert("status-422-event-missing-eventtime", &invalid);
    // Each API lists what was written through it (a documented simplification).
    assert_eq!(server.list(&events_v1(), Some("fx-lease")).len(), 1);
    assert_eq!(server.list(&events_core(), Some("fx-lease")).len(), 1);
}

#[test]
fn an_event_is_created_about_the_object() {
    let server = ApiServer::start();
    let client = Client::new(server.client_config()).unwrap();
    let about = pod(&server, &client, "web-0");
    let r = EventRecorder::start(client, config()).unwrap();
    assert!(r.record(
        &about,
        EventType::Warning,
        "Failed",
        "Reconcile",
        "image not found"
    ));
    let stats = wait_processed(&r, 1);
    assert_eq!((stats.created, stats.failed), (1, 0), "{stats:?}");
    let evs = server.list(&events_v1(), Some("lab"));
    assert_eq!(evs.len(), 1);
    let e = &evs[0];
    assert_eq!(e["type"], "Warning");
    assert_eq!(e["reason"], "Failed");
    assert_eq!(e["action"], "Reconcile");
    assert_eq!(e["note"], "image not found");
    assert_eq!(e["reportingController"], "example.com/labeler");
    assert_eq!(e["reportingInstance"], "labeler-0");
    assert!(
        e["eventTime"].as_str().is_some_and(|t| t.len() == 27),
        "{e}"
    );
    assert!(e.get("series").is_none());
    // The server's additions, as captured.
    assert_eq!(e["deprecatedSource"], json!({}));
    assert_eq!(e["deprecatedFirstTimestamp"], Value::Null);
    let reg = &e["regarding"];
    assert_eq!(
        (
            &reg["kind"],
            &reg["namespace"],
            &reg["name"],
            &reg["apiVersion"]
        ),
        (&json!("Pod"), &json!("lab"), &json!("web-0"), &json!("v1"))
    );
    assert_eq!(reg["uid"].as_str(), Some(about.uid.as_str()));
    assert!(!about.uid.is_empty());
    assert_eq!(
        reg["resourceVersion"].as_str(),
        Some(about.resource_version.as_str())
    );
    let name = e["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("web-0."), "{name}");
    r.stop();
}

#[test]
fn repeats_become_one_event_with_a_series_count() {
    let server = ApiServer::start();
    let client = Client::new(server.client_config()).unwrap();
    let about = pod(&server, &client, "web-0");
    // Short refresh so that the later repeats are written within the test.
    let cfg = config().series_refresh(Duration::from_millis(50));
    let r = EventRecorder::start(client, cfg).unwrap();
    for i in 0..5 {
        assert!(r.record(
            &about,
            EventType::Normal,
            "Labelled",
            "Label",
            &format!("try {i}")
        ));
    }
    wait_processed(&r, 5);
    wait_until("the series count to reach 5", || {
        let evs = server.list(&events_v1(), Some("lab"));
        evs.len() == 1 && evs[0]["series"]["count"] == 5
    });
    let e = &server.list(&events_v1(), Some("lab"))[0];
    assert!(e["series"]["lastObservedTime"].as_str().is_some(), "{e}");
    // The first repeat at once, the rest on a refresh.
    wait_until("two patches counted", || r.stats().patched >= 2);
    assert_eq!(r.stats().created, 1, "{:?}", r.stats());
    // A different reason is a different Event.
    r.record(&about, EventType::Normal, "Other", "Label", "");
    wait_processed(&r, 6);
    assert_eq!(server.list(&events_v1(), Some("lab")).len(), 2);
    r.stop();
}

#[test]
fn the_first_repeat_is_written_at_once_the_rest_on_the_refresh() {
    let server = ApiServer::start();
    let client = Client::new(server.client_config()).unwrap();
    let about = pod(&server, &client, "web-0");
    // client-go's intervals (30 min refresh): only the first repeat is written.
    let r = EventRecorder::start(client, config()).unwrap();
    for _ in 0..4 {
        r.record(&about, EventType::Normal, "Labelled", "Label", "");
    }
    let stats = wait_processed(&r, 4);
    assert_eq!((stats.created, stats.patched), (1, 1), "{stats:?}");
    let evs = server.list(&events_v1(), Some("lab"));
    assert_eq!(evs[0]["series"]["count"], 2);
    r.stop();
}

#[test]
fn the_rate_limit_drops_past_its_burst_per_object() {
    let server = ApiServer::start();
    let client = Client::new(server.client_config()).unwrap();
    let a = pod(&server, &client, "a");
    let b = pod(&server, &client, "b");
    let cfg = config().burst(3).refill_every(Duration::from_secs(3600));
    let r = EventRecorder::start(client, cfg).unwrap();
    for i in 0..8 {
        assert!(r.record(&a, EventType::Normal, &format!("R{i}"), "Label", ""));
    }
    // Another object has its own bucket.
    r.record(&b, EventType::Normal, "R0", "Label", "");
    let stats = wait_processed(&r, 9);
    assert_eq!(stats.rate_limited, 5, "{stats:?}");
    assert_eq!(stats.created, 4, "{stats:?}");
    let evs = server.list(&events_v1(), Some("lab"));
    let about_a = evs.iter().filter(|e| e["regarding"]["name"] == "a").count();
    assert_eq!((about_a, evs.len()), (3, 4));
    r.stop();
}

#[test]
fn a_stalled_server_never_blocks_the_caller_and_the_queue_bound_holds() {
    let server = ApiServer::start();
    let client = Client::new(server.client_config()).unwrap();
    let about = pod(&server, &client, "web-0");
    server.inject(Target::Write, Fault::Stall(Duration::from_secs(3600)));
    let cfg = config().queue_capacity(4);
    let r = EventRecorder::start(client, cfg).unwrap();
    r.record(&about, EventType::Normal, "First", "Label", "");
    // The thread took the first one and is stuck on its create.
    wait_until("the first event taken from the queue", || {
        server.requests().iter().any(|l| l.starts_with("POST "))
    });
    let accepted = (0..20)
        .filter(|i| r.record(&about, EventType::Normal, &format!("R{i}"), "Label", ""))
        .count();
    assert_eq!(accepted, 4, "the queue holds its capacity, no more");
    let stats = r.stats();
    assert_eq!(
        (stats.queued, stats.dropped_queue_full),
        (5, 16),
        "{stats:?}"
    );
    let t = Instant::now();
    r.stop();
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "stop took {:?}",
        t.elapsed()
    );
    assert!(!r.record(&about, EventType::Normal, "Late", "Label", ""));
    assert_eq!(r.stats().dropped_stopped, 1);
}

#[test]
fn a_server_that_is_down_costs_failures_not_waits() {
    let server = ApiServer::start();
    let client = Client::new(server.client_config()).unwrap();
    let about = pod(&server, &client, "web-0");
    server.go_down();
    let r = EventRecorder::start(client, config()).unwrap();
    for i in 0..10 {
        r.record(&about, EventType::Normal, &format!("R{i}"), "Label", "");
    }
    let stats = wait_processed(&r, 10);
    assert_eq!((stats.created, stats.failed), (0, 10), "{stats:?}");
    server.come_back().unwrap();
    r.record(&about, EventType::Normal, "Back", "Label", "");
    let stats = wait_processed(&r, 11);
    assert_eq!(stats.created, 1, "{stats:?}");
    let t = Instant::now();
    r.stop();
    assert!(t.elapsed() < Duration::from_secs(1));
}

#[test]
fn without_events_k8s_io_the_recorder_falls_back_to_core_v1() {
    let server = ApiServer::start();
    let client = Client::new(server.client_config()).unwrap();
    let about = pod(&server, &client, "web-0");
    // The first create answers 404, as a server without events.k8s.io/v1 would.
    server.inject(Target::Write, Fault::status(404));
    let cfg = config().series_refresh(Duration::from_millis(50));
    let r = EventRecorder::start(client, cfg).unwrap();
    for _ in 0..3 {
        r.record(&about, EventType::Normal, "Labelled", "Label", "zone=a");
    }
    wait_processed(&r, 3);
    assert!(r.stats().core_v1_fallback);
    assert!(server.list(&events_v1(), Some("lab")).is_empty());
    wait_until("the core/v1 count to reach 3", || {
        let evs = server.list(&events_core(), Some("lab"));
        evs.len() == 1 && evs[0]["count"] == 3
    });
    let e = &server.list(&events_core(), Some("lab"))[0];
    assert_eq!(e["involvedObject"]["name"], "web-0");
    assert_eq!(e["message"], "zone=a");
    assert_eq!(e["source"]["component"], "example.com/labeler");
    assert_eq!(e["reportingComponent"], "example.com/labeler");
    assert!(e["firstTimestamp"].as_str().is_some_and(|t| t.len() == 20));
    r.stop();
}

#[test]
fn an_invalid_config_is_refused() {
    let server = ApiServer::start();
    let client = Client::new(server.client_config()).unwrap();
    let cfg = config().queue_capacity(0);
    assert!(EventRecorder::start(client.clone(), cfg).is_err());
    assert!(EventRecorder::start(client, EventRecorderConfig::new("", "x")).is_err());
}
