//! The controller's other triggers (`owns`, `watches`) and its reconcile outcomes, over real
//! HTTP against the test API server. Every wait is on a condition; "did not happen" is
//! proved with a barrier (a later change that must be seen after it), never by waiting.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::controllers::*;
use common::*;
use kube_informer::api::DynamicObject;
use kube_informer::cache::{DeletedObject, HandlerFns, SharedInformerFactory};
use kube_informer::controller::{Action, Controller};
use kube_informer::testing::{ApiServer, Fault, Target};
use kube_informer::workqueue::ItemExponential;
use kube_informer::Client;
use parking_lot::Mutex;
use serde_json::{json, Value};

fn deployment(ns: &str, name: &str) -> serde_json::Value {
    json!({"metadata": {"name": name, "namespace": ns, "uid": format!("uid-{ns}-{name}")},
           "spec": {"replicas": 1}})
}

fn replicaset(ns: &str, name: &str, owners: serde_json::Value) -> serde_json::Value {
    json!({"metadata": {"name": name, "namespace": ns, "ownerReferences": owners},
           "spec": {"replicas": 1}, "status": {"readyReplicas": 0}})
}

fn owner_ref(
    api_version: &str,
    kind: &str,
    name: &str,
    controller: Option<bool>,
) -> serde_json::Value {
    let mut r = json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": format!("uid-{name}")});
    if let Some(c) = controller {
        r["controller"] = c.into();
    }
    r
}

#[test]
fn an_owned_objects_changes_reconcile_its_owner_and_only_it() {
    let server = ApiServer::builder()
        .resource(&deployments())
        .resource(&replicasets())
        .start();
    for (ns, name) in [
        ("lab", "web"),
        ("lab", "api"),
        ("other", "web"),
        ("lab", "sentinel"),
    ] {
        server.create(&deployments(), deployment(ns, name)).unwrap();
    }
    let rs = |name: &str, owners| {
        server
            .create(&replicasets(), replicaset("lab", name, owners))
            .unwrap()
    };
    rs(
        "web-1",
        json!([owner_ref("apps/v1", "Deployment", "web", Some(true))]),
    );
    // A plain owner (no `controller: true`), and controllers of another group or kind.
    rs(
        "plain-1",
        json!([owner_ref("apps/v1", "Deployment", "api", None)]),
    );
    rs(
        "foreign-1",
        json!([owner_ref("example.com/v1", "Deployment", "api", Some(true))]),
    );
    rs(
        "sts-1",
        json!([owner_ref("apps/v1", "StatefulSet", "api", Some(true))]),
    );
    rs(
        "sentinel-1",
        json!([owner_ref("apps/v1", "Deployment", "sentinel", Some(true))]),
    );

    let factory = SharedInformerFactory::new(Client::new(server.client_config()).unwrap());
    let rs_informer = factory.dynamic_informer(&replicasets());
    // Our own handler on the same informer tells whether a deletion came as a tombstone.
    let tombstones: Arc<Mutex<Vec<String>>> = Arc::default();
    let t = tombstones.clone();
    let _spy = rs_informer
        .add_event_handler(
            HandlerFns::new().on_delete(move |d: DeletedObject<DynamicObject>| {
                if let DeletedObject::Tombstone(tomb) = d {
                    t.lock().push(tomb.key.clone());
                }
            }),
        )
        .unwrap();
    let handlers_before = rs_informer.health().handlers.len();
    let ledger = Ledger::default();
    let l = ledger.clone();
    // One worker: keys are reconciled in the order they were queued, so a reconcile of the
    // sentinel proves every key queued before it was reconciled already.
    let controller = Controller::builder("deployments", factory.dynamic_informer(&deployments()))
        .workers(1)
        .owns(rs_informer.clone())
        .run(move |key: &str| -> Result<Action, kube_informer::Error> {
            l.record(key);
            Ok(Action::Done)
        })
        .unwrap();
    assert_eq!(rs_informer.health().handlers.len(), handlers_before + 1);
    wait_until("the initial reconciles", || {
        ["lab/web", "lab/api", "other/web", "lab/sentinel"]
            .iter()
            .all(|k| ledger.count(k) >= 1)
            && idle(&controller)
    });
    let start = ledger.snapshot();

    // A status change of an owned ReplicaSet reconciles its Deployment.
    server
        .patch(
            &replicasets(),
            Some("lab"),
            "web-1",
            &json!({"status": {"readyReplicas": 1}}),
        )
        .unwrap();
    wait_until("lab/web reconciled after its ReplicaSet changed", || {
        ledger.count("lab/web") > start["lab/web"]
    });
    // Changes of ReplicaSets that are not controlled by a Deployment reconcile nothing;
    // the sentinel's change, made after them, is the barrier.
    for name in ["plain-1", "foreign-1", "sts-1", "sentinel-1"] {
        server
            .patch(
                &replicasets(),
                Some("lab"),
                name,
                &json!({"status": {"readyReplicas": 1}}),
            )
            .unwrap();
    }
    wait_until("the sentinel reconciled", || {
        ledger.count("lab/sentinel") > start["lab/sentinel"]
    });
    assert_eq!(
        ledger.count("lab/api"),
        start["lab/api"],
        "{:?}",
        ledger.snapshot()
    );
    assert_eq!(
        ledger.count("other/web"),
        start["other/web"],
        "{:?}",
        ledger.snapshot()
    );

    // Deleting an owned ReplicaSet reconciles its owner.
    let before = ledger.count("lab/web");
    server.delete(&replicasets(), Some("lab"), "web-1").unwrap();
    wait_until(
        "lab/web reconciled after its ReplicaSet was deleted",
        || ledger.count("lab/web") > before,
    );

    // A deletion missed while disconnected (a tombstone after the relist) does too.
    rs(
        "web-2",
        json!([owner_ref("apps/v1", "Deployment", "web", Some(true))]),
    );
    wait_until("web-2 cached", || {
        rs_informer.lister().get(Some("lab"), "web-2").is_some() && idle(&controller)
    });
    let before = ledger.count("lab/web");
    for _ in 0..1000 {
        server.inject(Target::Watch, Fault::status(500));
    }
    server.disconnect_all();
    server.delete(&replicasets(), Some("lab"), "web-2").unwrap();
    server.compact();
    server.clear_faults();
    wait_until("a tombstone for web-2", || {
        tombstones.lock().iter().any(|k| k == "lab/web-2")
    });
    wait_until("lab/web reconciled after the tombstone", || {
        ledger.count("lab/web") > before
    });

    // Stopping removes the controller's handler; the shared informer keeps running.
    controller.stop();
    assert_eq!(rs_informer.health().handlers.len(), handlers_before);
    assert!(rs_informer.health().running);
    factory.shutdown();
}

#[test]
fn watches_maps_objects_to_primary_keys_old_and_new() {
    let server = ApiServer::builder()
        .resource(&deployments())
        .resource(&configmaps())
        .start();
    for name in ["a", "b", "sentinel"] {
        server
            .create(&deployments(), deployment("lab", name))
            .unwrap();
    }
    server
        .create(
            &configmaps(),
            json!({"metadata": {"name": "cfg", "namespace": "lab", "labels": {"app": "a"}}}),
        )
        .unwrap();
    server
        .create(&configmaps(), json!({"metadata": {"name": "marker", "namespace": "lab", "labels": {"app": "sentinel"}}}))
        .unwrap();
    let factory = SharedInformerFactory::new(Client::new(server.client_config()).unwrap());
    let cm_informer = factory.dynamic_informer(&configmaps());
    let ledger = Ledger::default();
    let l = ledger.clone();
    let controller = Controller::builder("apps", factory.dynamic_informer(&deployments()))
        .workers(1)
        .watches(cm_informer.clone(), |cm: &DynamicObject| {
            cm.metadata
                .label("app")
                .map(|app| format!("{}/{app}", cm.metadata.namespace()))
        })
        .run(move |key: &str| -> Result<Action, kube_informer::Error> {
            l.record(key);
            Ok(Action::Done)
        })
        .unwrap();
    wait_until("the initial reconciles", || {
        ["lab/a", "lab/b", "lab/sentinel"]
            .iter()
            .all(|k| ledger.count(k) >= 1)
            && idle(&controller)
    });
    let start = ledger.snapshot();

    // Moving the ConfigMap from app a to app b reconciles both.
    server
        .patch(
            &configmaps(),
            Some("lab"),
            "cfg",
            &json!({"metadata": {"labels": {"app": "b"}}}),
        )
        .unwrap();
    wait_until("both apps reconciled", || {
        ledger.count("lab/a") > start["lab/a"] && ledger.count("lab/b") > start["lab/b"]
    });
    // A ConfigMap the mapper maps to nothing reconciles nothing (the marker is the barrier).
    let mid = ledger.snapshot();
    server
        .create(
            &configmaps(),
            json!({"metadata": {"name": "unrelated", "namespace": "lab"}}),
        )
        .unwrap();
    server
        .patch(
            &configmaps(),
            Some("lab"),
            "marker",
            &json!({"data": {"n": "1"}}),
        )
        .unwrap();
    wait_until("the sentinel reconciled", || {
        ledger.count("lab/sentinel") > mid["lab/sentinel"]
    });
    assert_eq!(ledger.count("lab/a"), mid["lab/a"]);
    assert_eq!(ledger.count("lab/b"), mid["lab/b"]);
    // Deleting it reconciles its app.
    server.delete(&configmaps(), Some("lab"), "cfg").unwrap();
    wait_until("lab/b reconciled after the delete", || {
        ledger.count("lab/b") > mid["lab/b"]
    });
    controller.stop();
    assert!(cm_informer.health().handlers.is_empty());
    factory.shutdown();
}

/// A controller over ConfigMaps whose reconcile is `f`.
fn configmap_controller(
    server: &ApiServer,
    f: impl Fn(&str) -> Result<Action, String> + Send + Sync + 'static,
) -> (Controller<DynamicObject>, SharedInformerFactory) {
    let factory = SharedInformerFactory::new(Client::new(server.client_config()).unwrap());
    let controller = Controller::builder("cms", factory.dynamic_informer(&configmaps()))
        .workers(2)
        .rate_limiter(Box::new(ItemExponential::new(
            Duration::from_millis(20),
            Duration::from_secs(1),
        )))
        .run(f)
        .unwrap();
    (controller, factory)
}

#[test]
fn a_panicking_reconcile_is_caught_counted_and_retried_with_back_off() {
    let server = configmaps_server(&["boom"], Value::Null);
    let attempts: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let a = attempts.clone();
    let (controller, factory) = configmap_controller(&server, move |key| {
        let n = {
            let mut a = a.lock();
            a.push(Instant::now());
            a.len()
        };
        if key == "lab/boom" && n <= 3 {
            panic!("reconcile {n} of {key} panics on purpose");
        }
        Ok(Action::Done)
    });
    wait_until("the fourth attempt succeeded", || {
        attempts.lock().len() >= 4 && idle(&controller)
    });
    let stats = controller.stats();
    assert_eq!(
        (stats.panics, stats.errors, stats.reconciles),
        (3, 0, 4),
        "{stats:?}"
    );
    // Back-off: 20 ms, 40 ms, 80 ms at least between the attempts (lower bounds only).
    let at = attempts.lock().clone();
    for (i, pair) in at.windows(2).enumerate() {
        let want = Duration::from_millis(20 << i);
        assert!(
            pair[1] - pair[0] >= want,
            "attempt {}: waited {:?}, want >= {want:?}",
            i + 2,
            pair[1] - pair[0]
        );
    }
    let m = controller.queue().metrics();
    assert_eq!((m.processing, m.retries), (0, 3), "{m:?}");
    assert_eq!(
        controller.queue().num_requeues(&"lab/boom".to_owned()),
        0,
        "forgotten after the success"
    );
    controller.stop();
    factory.shutdown();
}

#[test]
fn a_key_added_while_its_reconcile_runs_is_reconciled_again_after_it() {
    for panics in [false, true] {
        let server = configmaps_server(&["slow"], json!({"v": "1"}));
        let (started_tx, started_rx) = crossbeam_channel::unbounded::<()>();
        let (release_tx, release_rx) = crossbeam_channel::unbounded::<()>();
        let calls = Arc::new(Mutex::new(0u32));
        let c = calls.clone();
        let (controller, factory) = configmap_controller(&server, move |_key| {
            let n = {
                let mut c = c.lock();
                *c += 1;
                *c
            };
            if n == 1 {
                started_tx.send(()).unwrap();
                release_rx.recv_timeout(PATIENCE).expect("released");
                if panics {
                    panic!("the first reconcile panics on purpose");
                }
            }
            Ok(Action::Done)
        });
        started_rx
            .recv_timeout(PATIENCE)
            .expect("the first reconcile started");
        // The object changes while its key is being reconciled: the key is re-added.
        server
            .patch(
                &configmaps(),
                Some("lab"),
                "slow",
                &json!({"data": {"v": "2"}}),
            )
            .unwrap();
        wait_until("the change queued the key again", || {
            controller.queue().metrics().adds >= 2
        });
        release_tx.send(()).unwrap();
        wait_until("a second reconcile", || {
            *calls.lock() >= 2 && idle(&controller)
        });
        let stats = controller.stats();
        assert_eq!(stats.panics, u64::from(panics), "{stats:?}");
        assert_eq!(controller.queue().metrics().processing, 0);
        controller.stop();
        factory.shutdown();
    }
}

#[test]
fn requeue_after_and_errors_are_counted() {
    let server = configmaps_server(&["later", "fails"], Value::Null);
    let ledger = Ledger::default();
    let l = ledger.clone();
    let (controller, factory) = configmap_controller(&server, move |key| {
        l.record(key);
        match (key, l.count(key)) {
            ("lab/later", 1) => Ok(Action::RequeueAfter(Duration::from_millis(10))),
            ("lab/fails", 1 | 2) => Err(format!("{key} fails on purpose")),
            _ => Ok(Action::Done),
        }
    });
    wait_until("both settled", || {
        ledger.count("lab/later") == 2 && ledger.count("lab/fails") == 3 && idle(&controller)
    });
    let stats = controller.stats();
    assert_eq!(
        (stats.reconciles, stats.requeues, stats.errors, stats.panics),
        (5, 1, 2, 0),
        "{stats:?}"
    );
    controller.stop();
    factory.shutdown();
}
