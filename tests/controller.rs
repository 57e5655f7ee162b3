//! The controller pattern against the test API server under faults: every object ends
//! reconciled exactly once for its final generation, and no key is lost.

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use kube_informer::api::DynamicObject;
use kube_informer::cache::{InformerConfig, ReflectorConfig, SharedIndexInformer};
use kube_informer::controller::{Action, Controller};
use kube_informer::testing::{ApiServer, Fault, Target};
use kube_informer::workqueue::ItemExponential;
use kube_informer::{Api, Client};
use kube_informer::{Patch, PatchParams};
use parking_lot::Mutex;
use serde_json::json;

fn observed(o: &DynamicObject) -> i64 {
    o.decode_field::<serde_json::Value>("status")
        .ok()
        .flatten()
        .and_then(|s| s["observedGeneration"].as_i64())
        .unwrap_or(0)
}

#[test]
fn every_object_is_reconciled_once_per_final_generation_under_faults() {
    let server = ApiServer::builder().resource(&widgets()).start();
    for i in 0..60 {
        server
            .create(&widgets(), json!({"metadata": {"name": format!("w-{i:02}"), "namespace": "lab"}, "spec": {"size": 0}}))
            .unwrap();
    }
    let client = Client::new(server.client_config()).unwrap();
    let config = InformerConfig::new().reflector(
        ReflectorConfig::new()
            .backoff(Duration::from_millis(50), Duration::from_millis(300))
            // Short watches, so injected watch faults bite often. (Connections are not cut
            // by hand: a write whose answer is lost would leave the client unable to know
            // it happened.)
            .watch_timeout(Duration::from_secs(1), Duration::from_secs(2)),
    );
    let informer: SharedIndexInformer<DynamicObject> =
        SharedIndexInformer::new(Api::all_with(client.clone(), &widgets()), config);
    let lister = informer.lister();
    let writer: Api<DynamicObject> = Api::namespaced_with(client, "lab", &widgets());
    // (key, generation) -> successful status writes
    let actions: Arc<Mutex<HashMap<(String, i64), u32>>> = Arc::default();
    let acts = actions.clone();
    let controller = Controller::builder("widgets", informer.clone())
        .workers(3)
        .rate_limiter(Box::new(ItemExponential::new(
            Duration::from_millis(5),
            Duration::from_millis(200),
        )))
        .run(move |key: &str| -> Result<Action, kube_informer::Error> {
            let (ns, name) = key.split_once('/').unwrap();
            let Some(obj) = lister.get(Some(ns), name) else {
                return Ok(Action::Done); // deleted: nothing to do
            };
            let generation = obj.metadata.generation.unwrap_or(0);
            if observed(&obj) >= generation {
                return Ok(Action::Done);
            }
            // Optimistic concurrency: the write fails with 409 if the cache was stale.
            writer.patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(
                    json!({"metadata": {"resourceVersion": obj.metadata.resource_version()},
                        "status": {"observedGeneration": generation}}),
                ),
            )?;
            *acts.lock().entry((key.to_owned(), generation)).or_default() += 1;
            Ok(Action::Done)
        })
        .unwrap();

    // Change specs (new generations) while the network and the writes misbehave.
    for round in 1..=5 {
        server.inject(Target::Watch, Fault::CloseAfterEvents(7));
        server.inject(Target::Write, Fault::status(500));
        server.inject(Target::Write, Fault::too_many_requests(0));
        if round == 3 {
            server.inject(Target::Watch, Fault::status(410));
        }
        for i in (round..60).step_by(round + 1) {
            server
                .patch(
                    &widgets(),
                    Some("lab"),
                    &format!("w-{i:02}"),
                    &json!({"spec": {"size": round}}),
                )
                .unwrap();
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    server.delete(&widgets(), Some("lab"), "w-00").unwrap();

    wait_until("every object observed at its final generation", || {
        server.list(&widgets(), Some("lab")).iter().all(|o| {
            o["status"]["observedGeneration"].as_i64() == o["metadata"]["generation"].as_i64()
        })
    });
    // Let the last events settle, then check the ledger.
    wait_until("the queue is idle", || {
        let m = controller.queue().metrics();
        m.depth == 0 && m.processing == 0 && m.waiting_for_delay == 0
    });
    let actions = actions.lock().clone();
    for o in server.list(&widgets(), Some("lab")) {
        let key = format!("lab/{}", o["metadata"]["name"].as_str().unwrap());
        let generation = o["metadata"]["generation"].as_i64().unwrap();
        assert_eq!(
            actions.get(&(key.clone(), generation)),
            Some(&1),
            "{key} at generation {generation}: {o}; ledger: {:?}",
            actions
                .iter()
                .filter(|((k, _), _)| *k == key)
                .collect::<Vec<_>>()
        );
    }
    let m = controller.queue().metrics();
    assert!(
        m.retries >= 1,
        "write faults and conflicts were retried: {m:?}"
    );
    controller.stop();
    informer.stop();
}
