//! The finalizer helper inside a controller, over real HTTP against the test API server
//! (which keeps an object with finalizers, marked with a deletionTimestamp, until the last
//! one is removed).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use kube_informer::api::{ApiResource, DynamicObject};
use kube_informer::cache::SharedInformerFactory;
use kube_informer::controller::{finalizer, Action, Controller, FinalizerError, FinalizerEvent};
use kube_informer::testing::ApiServer;
use kube_informer::workqueue::ItemExponential;
use kube_informer::{Api, Client};
use parking_lot::Mutex;
use serde_json::{json, Value};

const FINALIZER: &str = "example.com/cleanup";

fn configmaps() -> ApiResource {
    ApiResource::new("", "v1", "ConfigMap", "configmaps", true)
}

/// What the callbacks saw.
#[derive(Default)]
struct Seen {
    applies: Vec<String>,
    applies_without_finalizer: Vec<String>,
    cleanups: Vec<String>,
    reconciled: Vec<String>,
}

type Cleanup = Box<dyn Fn(&DynamicObject, usize) -> Result<(), String> + Send + Sync>;

struct Harness {
    server: Arc<ApiServer>,
    seen: Arc<Mutex<Seen>>,
    controller: Controller<DynamicObject>,
    factory: SharedInformerFactory,
}

impl Harness {
    /// A controller over ConfigMaps using the finalizer; `cleanup(obj, n)` is the n-th
    /// cleanup (1-based).
    fn start(server: Arc<ApiServer>, cleanup: Cleanup) -> Harness {
        let client = Client::new(server.client_config()).unwrap();
        let factory = SharedInformerFactory::new(client.clone());
        let informer = factory.dynamic_informer(&configmaps());
        let lister = informer.lister();
        let api: Api<DynamicObject> = Api::all_with(client, &configmaps());
        let seen: Arc<Mutex<Seen>> = Arc::default();
        let s = seen.clone();
        let controller = Controller::builder("cms", informer)
            .workers(2)
            .rate_limiter(Box::new(ItemExponential::new(
                Duration::from_millis(5),
                Duration::from_millis(200),
            )))
            .run(move |key: &str| -> Result<Action, FinalizerError<String>> {
                s.lock().reconciled.push(key.to_owned());
                let (ns, name) = key.split_once('/').unwrap();
                let Some(obj) = lister.get(Some(ns), name) else {
                    return Ok(Action::Done);
                };
                finalizer(&api, FINALIZER, obj, |event| match event {
                    FinalizerEvent::Apply(o) => {
                        let mut s = s.lock();
                        s.applies.push(key.to_owned());
                        let has = o
                            .metadata
                            .finalizers
                            .iter()
                            .flatten()
                            .any(|f| f == FINALIZER);
                        if !has {
                            s.applies_without_finalizer.push(key.to_owned());
                        }
                        Ok(Action::Done)
                    }
                    FinalizerEvent::Cleanup(o) => {
                        let n = {
                            let mut s = s.lock();
                            s.cleanups.push(key.to_owned());
                            s.cleanups.iter().filter(|k| *k == key).count()
                        };
                        cleanup(&o, n).map(|()| Action::Done)
                    }
                })
            })
            .unwrap();
        Harness {
            server,
            seen,
            controller,
            factory,
        }
    }

    fn get(&self, name: &str) -> Option<Value> {
        self.server.get(&configmaps(), Some("lab"), name).ok()
    }

    fn finalizers(&self, name: &str) -> Vec<String> {
        self.get(name)
            .and_then(|o| serde_json::from_value(o["metadata"]["finalizers"].clone()).ok())
            .unwrap_or_default()
    }

    fn cleanups(&self, key: &str) -> usize {
        self.seen
            .lock()
            .cleanups
            .iter()
            .filter(|k| *k == key)
            .count()
    }

    fn idle(&self) -> bool {
        let m = self.controller.queue().metrics();
        m.depth == 0 && m.processing == 0 && m.waiting_for_delay == 0
    }

    fn stop(self) {
        self.controller.stop();
        self.factory.shutdown();
    }
}

fn create(server: &ApiServer, name: &str, finalizers: &[&str]) {
    let mut meta = json!({"name": name, "namespace": "lab"});
    if !finalizers.is_empty() {
        meta["finalizers"] = json!(finalizers);
    }
    server
        .create(&configmaps(), json!({"metadata": meta, "data": {"k": "v"}}))
        .unwrap();
}

#[test]
fn the_finalizer_is_added_before_the_first_apply_and_cleanup_runs_once_on_delete() {
    let server = ApiServer::builder().resource(&configmaps()).start();
    create(&server, "a", &[]);
    // Being deleted already, and not with our finalizer: left alone.
    create(&server, "theirs", &["example.com/other"]);
    server.delete(&configmaps(), Some("lab"), "theirs").unwrap();
    let h = Harness::start(Arc::new(server), Box::new(|_, _| Ok(())));

    wait_until("the finalizer added and a applied", || {
        h.finalizers("a") == [FINALIZER] && !h.seen.lock().applies.is_empty()
    });
    wait_until("theirs reconciled", || {
        h.seen.lock().reconciled.iter().any(|k| k == "lab/theirs") && h.idle()
    });
    {
        let s = h.seen.lock();
        assert!(
            s.applies_without_finalizer.is_empty(),
            "{:?}",
            s.applies_without_finalizer
        );
        assert!(
            !s.applies.iter().any(|k| k == "lab/theirs"),
            "no apply for theirs"
        );
        assert!(s.cleanups.is_empty(), "no cleanup yet: {:?}", s.cleanups);
    }
    let theirs = h.get("theirs").expect("theirs is kept by its finalizer");
    assert_eq!(
        theirs["metadata"]["finalizers"],
        json!(["example.com/other"])
    );

    // Delete over HTTP: the server keeps it for our finalizer; cleanup runs, then it is gone.
    let api: Api<DynamicObject> = Api::namespaced_with(
        Client::new(h.server.client_config()).unwrap(),
        "lab",
        &configmaps(),
    );
    api.delete("a", &Default::default()).unwrap();
    wait_until("a gone", || h.get("a").is_none());
    wait_until("the deletion reconciled", || h.idle());
    assert_eq!(h.cleanups("lab/a"), 1);
    assert_eq!(h.controller.stats().errors, 0, "{:?}", h.controller.stats());
    // The whole life cost two writes: one PATCH adding the finalizer, one removing it.
    let patches = h
        .server
        .requests()
        .iter()
        .filter(|r| r.starts_with("PATCH /api/v1/namespaces/lab/configmaps/a"))
        .count();
    assert_eq!(patches, 2, "{:?}", h.server.requests());
    h.stop();
}

#[test]
fn a_failing_cleanup_keeps_the_finalizer_and_is_retried() {
    let server = ApiServer::builder().resource(&configmaps()).start();
    create(&server, "b", &[]);
    let kept: Arc<Mutex<Vec<bool>>> = Arc::default();
    let k = kept.clone();
    let cleanup: Cleanup = Box::new(move |o, n| {
        // What the server holds at each attempt: still there with our finalizer.
        k.lock().push(
            o.metadata.deletion_timestamp.is_some()
                && o.metadata
                    .finalizers
                    .iter()
                    .flatten()
                    .any(|f| f == FINALIZER),
        );
        if n <= 2 {
            Err(format!("cleanup attempt {n} fails on purpose"))
        } else {
            Ok(())
        }
    });
    let h = Harness::start(Arc::new(server), cleanup);
    wait_until("the finalizer added", || h.finalizers("b") == [FINALIZER]);
    h.server.delete(&configmaps(), Some("lab"), "b").unwrap();
    wait_until("b gone", || h.get("b").is_none());
    wait_until("idle", || h.idle());
    assert_eq!(h.cleanups("lab/b"), 3);
    assert_eq!(
        *kept.lock(),
        [true, true, true],
        "each cleanup saw the object kept for it"
    );
    assert_eq!(h.controller.stats().errors, 2, "{:?}", h.controller.stats());
    h.stop();
}

#[test]
fn a_conflict_while_removing_the_finalizer_is_retried() {
    let server = ApiServer::builder().resource(&configmaps()).start();
    // Another controller's finalizer comes first: ours is appended at index 1.
    create(&server, "c", &["example.com/other"]);
    let server = Arc::new(server);
    let srv = Arc::clone(&server);
    let cleanup: Cleanup = Box::new(move |_, n| {
        // While we clean up, the other controller removes its finalizer: ours moves to
        // index 0, and our removal (computed from the object as read) fails its guard.
        if n == 1 {
            srv.patch(
                &configmaps(),
                Some("lab"),
                "c",
                &json!({"metadata": {"finalizers": [FINALIZER]}}),
            )
            .unwrap();
        }
        Ok(())
    });
    let h = Harness::start(server, cleanup);
    wait_until("our finalizer added", || {
        h.finalizers("c") == ["example.com/other", FINALIZER]
    });
    h.server.delete(&configmaps(), Some("lab"), "c").unwrap();
    wait_until("c gone", || h.get("c").is_none());
    wait_until("idle", || h.idle());
    assert_eq!(h.cleanups("lab/c"), 1);
    let patches = h
        .server
        .requests()
        .iter()
        .filter(|r| r.starts_with("PATCH /api/v1/namespaces/lab/configmaps/c"))
        .count();
    assert_eq!(
        patches,
        3,
        "one add, then a removal refused by its guard and retried: {:?}",
        h.server.requests()
    );
    assert_eq!(
        h.controller.stats().errors,
        0,
        "the conflict was retried inside the helper"
    );
    h.stop();
}

/// `finalizer` called directly with an object read before someone else changed it.
fn call_with_stale(
    api: &Api<DynamicObject>,
    stale: DynamicObject,
) -> (Result<Action, FinalizerError<String>>, Vec<String>) {
    let mut events = Vec::new();
    let r = finalizer(api, FINALIZER, Arc::new(stale), |e| {
        events.push(match e {
            FinalizerEvent::Apply(o) => {
                format!("apply {}", o.metadata.uid.as_deref().unwrap_or(""))
            }
            FinalizerEvent::Cleanup(o) => {
                format!("cleanup {}", o.metadata.uid.as_deref().unwrap_or(""))
            }
        });
        Ok(Action::Done)
    });
    (r, events)
}

#[test]
fn the_guards_keep_concurrent_changes_and_leave_other_objects_alone() {
    let server = ApiServer::builder().resource(&configmaps()).start();
    let api: Api<DynamicObject> = Api::namespaced_with(
        Client::new(server.client_config()).unwrap(),
        "lab",
        &configmaps(),
    );

    // Another controller adds its finalizer after we read: ours is added after it, not over it.
    create(&server, "d", &[]);
    let stale = api.get("d").unwrap();
    server
        .patch(
            &configmaps(),
            Some("lab"),
            "d",
            &json!({"metadata": {"finalizers": ["example.com/other"]}}),
        )
        .unwrap();
    let (r, events) = call_with_stale(&api, stale);
    assert!(matches!(r, Ok(Action::Done)), "{r:?}");
    assert_eq!(events.len(), 1, "{events:?}");
    let d = server.get(&configmaps(), Some("lab"), "d").unwrap();
    assert_eq!(
        d["metadata"]["finalizers"],
        json!(["example.com/other", FINALIZER])
    );

    // Deleted after we read (kept by another finalizer): ours is not added, nothing runs.
    create(&server, "e", &["example.com/other"]);
    let stale = api.get("e").unwrap();
    server.delete(&configmaps(), Some("lab"), "e").unwrap();
    let (r, events) = call_with_stale(&api, stale);
    assert!(matches!(r, Ok(Action::Done)), "{r:?}");
    assert!(events.is_empty(), "{events:?}");
    let e = server.get(&configmaps(), Some("lab"), "e").unwrap();
    assert_eq!(e["metadata"]["finalizers"], json!(["example.com/other"]));

    // Deleted and created again under the same name after we read: the new object is not
    // touched for the old one.
    create(&server, "f", &[]);
    let stale = api.get("f").unwrap();
    server.delete(&configmaps(), Some("lab"), "f").unwrap();
    create(&server, "f", &[]);
    let (r, events) = call_with_stale(&api, stale);
    assert!(matches!(r, Ok(Action::Done)), "{r:?}");
    assert!(events.is_empty(), "{events:?}");
    let f = server.get(&configmaps(), Some("lab"), "f").unwrap();
    assert!(f["metadata"]["finalizers"].is_null(), "{f}");

    // A bad name is refused before any request.
    let obj = api.get("f").unwrap();
    let before = server.requests().len();
    let r = finalizer(&api, "", Arc::new(obj), |_| Ok::<_, String>(Action::Done));
    assert!(matches!(r, Err(FinalizerError::Invalid(_))), "{r:?}");
    assert_eq!(server.requests().len(), before, "no request made");
}
