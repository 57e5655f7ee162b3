//! One reconcile per change, event filters, and failures a program sees without a logger:
//! over real HTTP against the test API server. Every wait is on a condition; "did not
//! happen" is proved with a barrier (a later change on the same informer, whose handler
//! runs in order, seen after it), never by waiting.
//!
//! Counting keys: the queue merges a key added while it still waits, so reconciles alone
//! cannot tell "queued once" from "queued twice and merged by luck". The handlers count every
//! key they hand to the queue (`ControllerStats::enqueued`), before the merge: that is what
//! these tests count.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::controllers::*;
use common::*;
use kube_informer::api::DynamicObject;
use kube_informer::cache::{DeletedObject, FactoryOptions, HandlerFns, SharedInformerFactory};
use kube_informer::controller::{split_key, Action, Controller, EventFilter};
use kube_informer::manager::Manager;
use kube_informer::testing::{ApiServer, Fault, Target};
use kube_informer::Client;
use parking_lot::Mutex;
use serde_json::{json, Value};

fn owned_by_namespace(ns: &str, name: &str, owner: &str) -> serde_json::Value {
    json!({"metadata": {"name": name, "namespace": ns, "ownerReferences": [
        {"apiVersion": "v1", "kind": "Namespace", "name": owner, "uid": format!("uid-{owner}"), "controller": true}
    ]}, "data": {"n": "0"}})
}

#[test]
fn each_change_queues_its_keys_once_for_the_primary_owns_and_watches() {
    let server = ApiServer::builder()
        .resource(&namespaces())
        .resource(&configmaps())
        .resource(&widgets())
        .start();
    for ns in ["alpha", "beta", "marker"] {
        server
            .create(&namespaces(), json!({"metadata": {"name": ns}}))
            .unwrap();
    }
    // A ConfigMap owned by the Namespace alpha (the issue's case), and one per barrier.
    server
        .create(&configmaps(), owned_by_namespace("alpha", "cfg", "alpha"))
        .unwrap();
    server
        .create(&configmaps(), owned_by_namespace("marker", "m", "marker"))
        .unwrap();
    for (ns, target) in [("alpha", "alpha"), ("marker", "marker")] {
        server
            .create(
                &widgets(),
                json!({"metadata": {"name": "w", "namespace": ns, "labels": {"target": target}}, "spec": {"n": 0}}),
            )
            .unwrap();
    }
    let factory = SharedInformerFactory::new(Client::new(server.client_config()).unwrap());
    let ledger = Ledger::default();
    let l = ledger.clone();
    // A slow reconcile: a worker holds a key long enough for a second add of it to arrive
    // while it is being reconciled (which the queue then reconciles again).
    let controller = Controller::builder("namespaces", factory.dynamic_informer(&namespaces()))
        .workers(1)
        .owns(factory.dynamic_informer(&configmaps()))
        .watches(factory.dynamic_informer(&widgets()), |w: &DynamicObject| {
            w.metadata.label("target").map(str::to_owned)
        })
        .run(move |key: &str| -> Result<Action, kube_informer::Error> {
            l.record(key);
            std::thread::sleep(Duration::from_millis(20));
            Ok(Action::Done)
        })
        .unwrap();
    wait_until("the initial reconciles", || {
        ["alpha", "beta", "marker"]
            .iter()
            .all(|k| ledger.count(k) >= 1)
            && idle(&controller)
    });

    // Five changes, then a barrier on the same informer; returns (keys queued, reconciles
    // of alpha) for the five.
    let five = |change: &dyn Fn(u32), barrier: &dyn Fn()| {
        let (queued, alpha) = (controller.stats().enqueued, ledger.count("alpha"));
        for i in 1..=5 {
            change(i);
        }
        let marker = ledger.count("marker");
        barrier();
        wait_until("the barrier reconciled", || {
            ledger.count("marker") > marker && idle(&controller)
        });
        (
            controller.stats().enqueued - queued - 1,
            ledger.count("alpha") - alpha,
        )
    };

    // The primary.
    let (queued, reconciles) = five(
        &|i| {
            server
                .patch(
                    &namespaces(),
                    None,
                    "alpha",
                    &json!({"metadata": {"labels": {"n": i.to_string()}}}),
                )
                .unwrap();
        },
        &|| {
            server
                .patch(
                    &namespaces(),
                    None,
                    "marker",
                    &json!({"metadata": {"labels": {"n": "x"}}}),
                )
                .unwrap();
        },
    );
    assert_eq!(queued, 5, "primary: one key per update");
    assert!(
        (1..=5).contains(&reconciles),
        "primary: {reconciles} reconciles"
    );

    // An owned object: its owner once per update (it was twice).
    let (queued, reconciles) = five(
        &|i| {
            server
                .patch(
                    &configmaps(),
                    Some("alpha"),
                    "cfg",
                    &json!({"data": {"n": i.to_string()}}),
                )
                .unwrap();
        },
        &|| {
            server
                .patch(
                    &configmaps(),
                    Some("marker"),
                    "m",
                    &json!({"data": {"n": "x"}}),
                )
                .unwrap();
        },
    );
    assert_eq!(queued, 5, "owns: one key per update");
    assert!(
        (1..=5).contains(&reconciles),
        "owns: {reconciles} reconciles"
    );

    // A watched object whose old and new state map to the same key: once per update.
    let (queued, reconciles) = five(
        &|i| {
            server
                .patch(&widgets(), Some("alpha"), "w", &json!({"spec": {"n": i}}))
                .unwrap();
        },
        &|| {
            server
                .patch(&widgets(), Some("marker"), "w", &json!({"spec": {"n": 9}}))
                .unwrap();
        },
    );
    assert_eq!(queued, 5, "watches: one key per update");
    assert!(
        (1..=5).contains(&reconciles),
        "watches: {reconciles} reconciles"
    );

    // A change of owner queues both owners, each once.
    let (queued, beta) = (controller.stats().enqueued, ledger.count("beta"));
    let moved = owned_by_namespace("alpha", "cfg", "beta");
    server
        .patch(
            &configmaps(),
            Some("alpha"),
            "cfg",
            &json!({"metadata": {"ownerReferences": moved["metadata"]["ownerReferences"]}}),
        )
        .unwrap();
    wait_until("beta reconciled after it took over cfg", || {
        ledger.count("beta") > beta
    });
    let marker = ledger.count("marker");
    server
        .patch(
            &configmaps(),
            Some("marker"),
            "m",
            &json!({"data": {"n": "y"}}),
        )
        .unwrap();
    wait_until("the barrier reconciled", || {
        ledger.count("marker") > marker && idle(&controller)
    });
    assert_eq!(
        controller.stats().enqueued - queued,
        3,
        "old owner, new owner, barrier"
    );
    controller.stop();
    factory.shutdown();
}

#[test]
fn the_generation_filter_skips_status_writes_never_a_delete() {
    let server = ApiServer::builder()
        .resource(&deployments())
        .resource(&replicasets())
        .start();
    for name in ["web", "sentinel"] {
        server
            .create(
                &deployments(),
                json!({"metadata": {"name": name, "namespace": "lab", "uid": format!("uid-{name}")},
                       "spec": {"replicas": 1}}),
            )
            .unwrap();
    }
    server
        .create(
            &replicasets(),
            json!({"metadata": {"name": "web-1", "namespace": "lab", "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "uid-web", "controller": true}]},
                "spec": {"replicas": 1}, "status": {"readyReplicas": 0}}),
        )
        .unwrap();
    let factory = SharedInformerFactory::new(Client::new(server.client_config()).unwrap());
    let ledger = Ledger::default();
    let l = ledger.clone();
    let controller = Controller::builder("deployments", factory.dynamic_informer(&deployments()))
        .workers(1)
        .filter(EventFilter::generation_changed())
        .owns_filtered(
            factory.dynamic_informer(&replicasets()),
            EventFilter::generation_changed(),
        )
        .run(move |key: &str| -> Result<Action, kube_informer::Error> {
            l.record(key);
            Ok(Action::Done)
        })
        .unwrap();
    wait_until("the initial reconciles", || {
        ledger.count("lab/web") >= 1 && ledger.count("lab/sentinel") >= 1 && idle(&controller)
    });
    let start = controller.stats();
    let web = ledger.count("lab/web");

    // A status-only write (no new generation) of the Deployment and of its ReplicaSet, and a
    // label change: filtered, counted, not reconciled.
    server
        .patch(
            &deployments(),
            Some("lab"),
            "web",
            &json!({"status": {"replicas": 1}}),
        )
        .unwrap();
    server
        .patch(
            &deployments(),
            Some("lab"),
            "web",
            &json!({"metadata": {"labels": {"tier": "front"}}}),
        )
        .unwrap();
    server
        .patch(
            &replicasets(),
            Some("lab"),
            "web-1",
            &json!({"status": {"readyReplicas": 1}}),
        )
        .unwrap();
    wait_until("three updates filtered", || {
        controller.stats().filtered == start.filtered + 3
    });
    // A spec change reconciles; it is the barrier for the Deployment's informer.
    server
        .patch(
            &deployments(),
            Some("lab"),
            "web",
            &json!({"spec": {"replicas": 2}}),
        )
        .unwrap();
    wait_until("lab/web reconciled after its spec changed", || {
        ledger.count("lab/web") > web && idle(&controller)
    });
    assert_eq!(ledger.count("lab/web"), web + 1);
    let stats = controller.stats();
    assert_eq!(stats.enqueued, start.enqueued + 1, "{stats:?}");
    assert_eq!(stats.filtered, start.filtered + 3, "{stats:?}");

    // Deletes always pass: of the owned ReplicaSet, and of the Deployment.
    let web = ledger.count("lab/web");
    server.delete(&replicasets(), Some("lab"), "web-1").unwrap();
    wait_until(
        "lab/web reconciled after its ReplicaSet was deleted",
        || ledger.count("lab/web") > web,
    );
    let sentinel = ledger.count("lab/sentinel");
    server
        .delete(&deployments(), Some("lab"), "sentinel")
        .unwrap();
    wait_until("lab/sentinel reconciled after its deletion", || {
        ledger.count("lab/sentinel") > sentinel
    });
    controller.stop();
    factory.shutdown();
}

#[test]
fn a_filter_that_drops_every_update_loses_no_delete_tombstone_or_resync() {
    let server = configmaps_server(&["a", "b", "c"], json!({"n": "0"}));
    let client = Client::new(server.client_config()).unwrap();
    let factory = SharedInformerFactory::new(client.clone());
    let informer = factory.dynamic_informer(&configmaps());
    let tombstones: Arc<Mutex<Vec<String>>> = Arc::default();
    let t = tombstones.clone();
    let _spy = informer
        .add_event_handler(
            HandlerFns::new().on_delete(move |d: DeletedObject<DynamicObject>| {
                if let DeletedObject::Tombstone(tomb) = d {
                    t.lock().push(tomb.key.clone());
                }
            }),
        )
        .unwrap();
    let ledger = Ledger::default();
    let l = ledger.clone();
    let never = EventFilter::new(|_: &DynamicObject, _: &DynamicObject| false);
    let controller = Controller::builder("cms", informer.clone())
        .workers(1)
        .filter(never)
        .run(move |key: &str| -> Result<Action, kube_informer::Error> {
            l.record(key);
            Ok(Action::Done)
        })
        .unwrap();
    wait_until("the adds reconciled", || {
        ["lab/a", "lab/b", "lab/c"]
            .iter()
            .all(|k| ledger.count(k) == 1)
            && idle(&controller)
    });
    server
        .patch(
            &configmaps(),
            Some("lab"),
            "a",
            &json!({"data": {"n": "1"}}),
        )
        .unwrap();
    wait_until("the update filtered", || controller.stats().filtered == 1);
    assert_eq!(ledger.count("lab/a"), 1);

    // A delete.
    server.delete(&configmaps(), Some("lab"), "a").unwrap();
    wait_until("lab/a reconciled after its deletion", || {
        ledger.count("lab/a") == 2
    });
    // A deletion missed while disconnected: a tombstone after the relist.
    for _ in 0..1000 {
        server.inject(Target::Watch, Fault::status(500));
    }
    server.disconnect_all();
    server.delete(&configmaps(), Some("lab"), "b").unwrap();
    server.compact();
    server.clear_faults();
    wait_until("a tombstone for lab/b", || {
        tombstones.lock().iter().any(|k| k == "lab/b")
    });
    wait_until("lab/b reconciled after the tombstone", || {
        ledger.count("lab/b") == 2
    });
    controller.stop();
    factory.shutdown();

    // Resyncs: a second controller on an informer that resyncs often; its filter drops
    // every update, yet lab/c is reconciled again and again without any change.
    let resyncing = SharedInformerFactory::with_options(
        client,
        FactoryOptions::new().default_resync(Duration::from_millis(200)),
    );
    let ledger = Ledger::default();
    let l = ledger.clone();
    let never = EventFilter::new(|_: &DynamicObject, _: &DynamicObject| false);
    let controller = Controller::builder("cms", resyncing.dynamic_informer(&configmaps()))
        .filter(never)
        .run(move |key: &str| -> Result<Action, kube_informer::Error> {
            l.record(key);
            Ok(Action::Done)
        })
        .unwrap();
    wait_until("lab/c reconciled by resyncs", || ledger.count("lab/c") >= 3);
    assert_eq!(controller.stats().filtered, 0);
    controller.stop();
    resyncing.shutdown();
}

#[test]
fn watches_filtered_judges_updates_before_mapping() {
    let server = ApiServer::builder()
        .resource(&deployments())
        .resource(&configmaps())
        .start();
    server
        .create(
            &deployments(),
            json!({"metadata": {"name": "shop", "namespace": "lab"}}),
        )
        .unwrap();
    server
        .create(&configmaps(), json!({"metadata": {"name": "shop", "namespace": "lab", "labels": {"app": "shop"}}, "data": {"a": "1"}}))
        .unwrap();
    let factory = SharedInformerFactory::new(Client::new(server.client_config()).unwrap());
    let ledger = Ledger::default();
    let l = ledger.clone();
    let controller = Controller::builder("apps", factory.dynamic_informer(&deployments()))
        .workers(1)
        .watches_filtered(
            factory.dynamic_informer(&configmaps()),
            EventFilter::labels_changed().or(EventFilter::annotations_changed()),
            |cm: &DynamicObject| {
                cm.metadata
                    .label("app")
                    .map(|app| format!("{}/{app}", cm.metadata.namespace.as_deref().unwrap_or("")))
            },
        )
        .run(move |key: &str| -> Result<Action, kube_informer::Error> {
            let (ns, name) = split_key(key)?;
            assert_eq!(ns, Some("lab"));
            l.record(name);
            Ok(Action::Done)
        })
        .unwrap();
    wait_until("the initial reconcile", || {
        ledger.count("shop") >= 1 && idle(&controller)
    });
    let shop = ledger.count("shop");
    // Data only: filtered.
    server
        .patch(
            &configmaps(),
            Some("lab"),
            "shop",
            &json!({"data": {"a": "2"}}),
        )
        .unwrap();
    wait_until("the data change filtered", || {
        controller.stats().filtered == 1
    });
    // An annotation: passes.
    server
        .patch(
            &configmaps(),
            Some("lab"),
            "shop",
            &json!({"metadata": {"annotations": {"x": "1"}}}),
        )
        .unwrap();
    wait_until("shop reconciled after the annotation", || {
        ledger.count("shop") > shop && idle(&controller)
    });
    assert_eq!(ledger.count("shop"), shop + 1);
    controller.stop();
    factory.shutdown();
}

#[test]
fn a_failing_reconcile_is_seen_in_health_and_readiness() {
    let server = configmaps_server(&["bad", "good"], Value::Null);
    let client = Client::new(server.client_config()).unwrap();
    let fail = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let f = fail.clone();
    let reconcile = move |key: &str| -> Result<Action, String> {
        let failing = f.load(std::sync::atomic::Ordering::SeqCst);
        if key == "lab/bad" && failing {
            return Err(format!("configmaps {key:?} is forbidden"));
        }
        if key == "lab/boom" && failing {
            panic!("cannot handle {key}");
        }
        Ok(Action::Done)
    };

    // A controller: the failing key is named with its last error; success drops it.
    let factory = SharedInformerFactory::new(client.clone());
    let controller = Controller::builder("cms", factory.dynamic_informer(&configmaps()))
        .rate_limiter(Box::new(kube_informer::workqueue::ItemExponential::new(
            Duration::from_millis(5),
            Duration::from_millis(50),
        )))
        .run(reconcile.clone())
        .unwrap();
    wait_until("lab/bad failing twice", || {
        controller
            .health()
            .failing_keys
            .iter()
            .any(|k| k.key == "lab/bad" && k.failures >= 2)
    });
    let health = controller.health();
    assert_eq!(health.name, "cms");
    assert_eq!(health.failing_keys.len(), 1, "{health:?}");
    assert_eq!(
        health.failing_keys[0].message,
        "configmaps \"lab/bad\" is forbidden"
    );
    assert!(!health.failing_keys[0].panicked);
    // A panic is named too, with its message.
    server
        .create(
            &configmaps(),
            json!({"metadata": {"name": "boom", "namespace": "lab"}}),
        )
        .unwrap();
    wait_until("lab/boom failing", || {
        controller
            .health()
            .failing_keys
            .iter()
            .any(|k| k.key == "lab/boom")
    });
    let boom = controller
        .health()
        .failing_keys
        .into_iter()
        .find(|k| k.key == "lab/boom")
        .unwrap();
    assert!(boom.panicked);
    assert!(boom.message.contains("cannot handle lab/boom"), "{boom:?}");
    // Successes forget the failures (and so does a deletion: see the unit tests).
    server.delete(&configmaps(), Some("lab"), "boom").unwrap();
    fail.store(false, std::sync::atomic::Ordering::SeqCst);
    wait_until("no key failing", || {
        let h = controller.health();
        h.failing_keys.is_empty() && h.failing_for.is_none()
    });
    controller.stop();
    factory.shutdown();

    // A manager: `reconciles` fails while every reconcile fails, once asked for.
    fail.store(true, std::sync::atomic::Ordering::SeqCst);
    server.delete(&configmaps(), Some("lab"), "good").unwrap();
    let manager = Manager::builder(client.clone()).unready_when_failing(Duration::ZERO);
    let informer = manager.factory().dynamic_informer(&configmaps());
    let manager = manager
        .controller(
            Controller::builder("cms", informer).rate_limiter(Box::new(
                kube_informer::workqueue::ItemExponential::new(
                    Duration::from_millis(5),
                    Duration::from_millis(50),
                ),
            )),
            reconcile.clone(),
        )
        .start()
        .unwrap();
    wait_until("readiness names the failing controller", || {
        manager
            .readiness()
            .only("reconciles")
            .and_then(|r| r.checks[0].failure.clone())
            .is_some_and(|why| why.contains("controller cms") && why.contains("forbidden"))
    });
    assert_eq!(manager.controllers_health().len(), 1);
    fail.store(false, std::sync::atomic::Ordering::SeqCst);
    wait_until("readiness passes once a reconcile succeeds", || {
        manager.readiness().passed()
    });
    manager.stop().unwrap();

    // Off by default: no such check.
    let manager = Manager::builder(client).start().unwrap();
    assert!(manager.readiness().only("reconciles").is_none());
    manager.stop().unwrap();
}

#[cfg(feature = "metrics")]
#[test]
fn filtered_updates_and_failing_keys_are_exported() {
    let server = configmaps_server(&["a", "bad"], json!({"n": "0"}));
    let factory = SharedInformerFactory::new(Client::new(server.client_config()).unwrap());
    let controller = Controller::builder("cms-ctl", factory.dynamic_informer(&configmaps()))
        .filter(EventFilter::resource_version_changed().and(EventFilter::labels_changed()))
        .run(|key: &str| -> Result<Action, String> {
            if key == "lab/bad" {
                return Err("no".into());
            }
            Ok(Action::Done)
        })
        .unwrap();
    let metrics = kube_informer::metrics::Metrics::new();
    metrics.register_controller(&controller);
    server
        .patch(
            &configmaps(),
            Some("lab"),
            "a",
            &json!({"data": {"n": "1"}}),
        )
        .unwrap();
    wait_until("the update filtered", || controller.stats().filtered == 1);
    wait_until("lab/bad failing", || {
        !controller.health().failing_keys.is_empty()
    });
    let text = metrics.encode();
    for want in [
        r#"kube_informer_controller_filtered_updates_total{controller="cms-ctl"} 1"#,
        r#"kube_informer_controller_failing_keys{controller="cms-ctl"} 1.0"#,
    ] {
        assert!(text.lines().any(|l| l == want), "{want} not in\n{text}");
    }
    controller.stop();
    factory.shutdown();
}
