//! End-to-end, opt-in: a CRD deleted while its informer runs, against a real cluster.
//!
//! ```text
//! KUBE_E2E=1 cargo test --test e2e_gone -- --ignored --nocapture
//! ```
//!
//! `real_*` is ignored by default and, when run, prints `skipped: ...` unless `KUBE_E2E=1`
//! is set and a kubeconfig is found the way kubectl finds one. It needs the rights to create
//! and delete a CRD, and touches only its own: `gizmos.e2e-<random>.kube-informer.test`
//! (cluster-scoped, deleted at the end by a guard, also when the test fails). It prints the
//! server's answer to the list of the deleted resource (the informer's last error), which no
//! capture in the fixtures holds.
//!
//! The same body runs in every `cargo test` against `testing::ApiServer` (`fake_*`), whose
//! `remove_resource` / `serve_resource` stand for the CRD's deletion and creation.

mod common;

use std::time::Duration;

use common::e2e::{self, Env, Owned};
use common::view::View;
use kube_informer::api::{ApiResource, DynamicObject};
use kube_informer::cache::{FactoryOptions, ReflectorConfig};
use kube_informer::manager::Manager;
use kube_informer::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;

/// Bound for anything waited on; a CRD's deletion waits for its objects' cleanup.
const PATIENCE: Duration = Duration::from_secs(120);

fn wait_until(what: &str, cond: impl FnMut() -> bool) {
    e2e::wait_until(what, PATIENCE, cond)
}

/// The test's CRD: created, deleted, created again; deleted on drop.
struct TestCrd {
    group: String,
    /// The CRD's name and its API (`customresourcedefinitions`), deleted on drop.
    owned: Owned,
}

impl TestCrd {
    fn resource(&self) -> ApiResource {
        ApiResource::new(&self.group, "v1", "Gizmo", "gizmos", false)
    }

    fn create(&self, env: &Env) {
        match &env.fake {
            Some(server) => server.serve_resource(&self.resource()),
            None => {
                self.owned
                    .api
                    .create(
                        &PostParams::default(),
                        &e2e::open_crd_object(&self.resource()),
                    )
                    .unwrap_or_else(|e| panic!("creating CRD {}: {e}", self.owned.name));
                println!("e2e: CRD {} created", self.owned.name);
            }
        }
        // Established can come a moment before the resource is served: 404 until then.
        let api: Api<DynamicObject> = Api::all_with(env.client.clone(), &self.resource());
        wait_until("the resource served", || {
            api.list(&ListParams::default()).is_ok()
        });
    }

    fn delete(&self, env: &Env) {
        match &env.fake {
            Some(server) => server.remove_resource(&self.resource()),
            None => {
                let (api, name) = (&self.owned.api, &self.owned.name);
                api.delete(name, &DeleteParams::default())
                    .unwrap_or_else(|e| panic!("deleting CRD {name}: {e}"));
                println!("e2e: CRD {name} deleted");
            }
        }
    }
}

fn a_deleted_crd_is_gone_and_its_informer_comes_back(env: &Env) {
    let group = format!("e2e-{}.kube-informer.test", e2e::random_suffix());
    let crd = TestCrd {
        owned: Owned {
            what: "CRD",
            name: format!("gizmos.{group}"),
            api: Api::all_with(env.client.clone(), &common::crds()),
        },
        group,
    };
    crd.create(env);
    let gizmos = crd.resource();
    let api: Api<DynamicObject> = Api::all_with(env.client.clone(), &gizmos);
    let gizmo = |name: &str| json!({"apiVersion": format!("{}/v1", crd.group), "kind": "Gizmo", "metadata": {"name": name}});
    api.create(&PostParams::default(), &gizmo("g1")).unwrap();

    let options = FactoryOptions::new().reflector(
        ReflectorConfig::new()
            .backoff(Duration::from_millis(100), Duration::from_millis(500))
            .gone_backoff_max(Duration::from_secs(2)),
    );
    let builder = Manager::builder_with_options(env.client.clone(), options)
        .unhealthy_after(Duration::ZERO)
        .grace_period(Duration::from_secs(20));
    let informer = builder.factory().dynamic_informer(&gizmos);
    let view = View::default();
    informer.add_event_handler(view.clone()).unwrap();
    let manager = builder.start().unwrap();
    wait_until("g1 cached and handled", || {
        view.snapshot().iter().any(|(k, _)| k == "g1")
    });
    // Deleted while the informer watches, as the test means: a deletion between its list
    // and its watch would leave the watch nothing to tell (on the test server, which
    // removes a resource at once, that raced one run in four on a loaded machine).
    wait_until("the informer watching", || informer.health().watching);

    crd.delete(env);
    wait_until("the informer to say gone", || informer.health().is_gone());
    let health = informer.health();
    let last = health.last_error.clone().expect("the 404");
    println!("e2e: the answer for the deleted resource: {}", last.message);
    assert_eq!(last.status.as_ref().map(|s| s.code), Some(404), "{health}");
    assert!(health.failing_for.is_none(), "{health}");
    assert!(manager.liveness().passed(), "{}", manager.liveness());
    wait_until("the handler told of g1's deletion", || {
        view.snapshot().is_empty()
    });

    crd.create(env);
    api.create(&PostParams::default(), &gizmo("g2")).unwrap();
    wait_until("g2 cached and handled after the CRD came back", || {
        view.snapshot().iter().any(|(k, _)| k == "g2")
    });
    wait_until("no longer gone", || !informer.health().is_gone());
    assert!(view.violations().is_empty(), "{:?}", view.violations());
    manager.stop().unwrap();
}

#[test]
#[ignore = "needs a cluster: KUBE_E2E=1 cargo test --test e2e_gone -- --ignored"]
fn real_a_deleted_crd_is_gone_and_its_informer_comes_back() {
    if let Some(env) = Env::real() {
        a_deleted_crd_is_gone_and_its_informer_comes_back(&env);
    }
}

#[test]
fn fake_a_deleted_crd_is_gone_and_its_informer_comes_back() {
    a_deleted_crd_is_gone_and_its_informer_comes_back(&Env::fake());
}
