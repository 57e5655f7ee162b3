//! The operator toolbox end to end against a real cluster, opt-in (the pattern of
//! `tests/e2e.rs`):
//!
//! ```text
//! KUBE_E2E=1 cargo test --test e2e_toolbox -- --ignored --nocapture
//! ```
//!
//! The `real_*` tests are ignored by default and, even when run, only print `skipped: ...`
//! unless `KUBE_E2E=1` is set and a kubeconfig (or an in-cluster service account) is found
//! the way kubectl finds one. They need the rights to create a namespace and a CRD, and touch
//! only what they create: a CRD `gadgets.e2e-<random>.kube-informer.test` and a namespace
//! `kube-informer-e2e-<random>`, both deleted at the end (also when a test fails, by guards).
//!
//! The same bodies run in `cargo test` against `testing::ApiServer` (the `fake_*` tests);
//! there a thread plays the API server's CRD controller (it marks the CRD Established) and
//! the namespace is made Active by hand.

mod common;

use std::time::Duration;

use common::e2e::{self, Env, Owned};
use kube_informer::api::{ApiResource, DynamicObject, OwnerReference, OwnerReferences};
use kube_informer::controller::wait::{self, conditions, Wait};
use kube_informer::controller::{CreateOrPatch, OperationResult};
use kube_informer::testing::ApiServer;
use kube_informer::{Api, DeleteParams, PostParams};
use serde_json::{json, Value};

/// Bound for anything these tests wait on; a real cluster can be slow.
const PATIENCE: Duration = Duration::from_secs(120);

/// The test server, serving the CRD of `group` (it lists in discovery only what it was
/// built with).
fn fake_env(group: &str) -> Env {
    Env::fake_from(
        ApiServer::builder()
            .tls()
            .custom_resource_definition(&gadget_crd(group))
            .unwrap(),
    )
}

fn gadgets(group: &str) -> ApiResource {
    ApiResource::new(group, "v1", "Gadget", "gadgets", true)
}

fn gadget_crd(group: &str) -> Value {
    e2e::open_crd_object(&gadgets(group))
}

/// A namespace of the test's own, Active.
fn test_namespace(env: &Env) -> Owned {
    let owned = e2e::namespace(&env.client, "kube-informer-e2e");
    let (api, name) = (&owned.api, &owned.name);
    let ns = ApiResource::new("", "v1", "Namespace", "namespaces", false);
    if let Some(server) = &env.fake {
        server
            .patch(&ns, None, name, &json!({"status": {"phase": "Active"}}))
            .unwrap();
    }
    Wait::new(api, name, PATIENCE)
        .until(conditions::namespace_active())
        .unwrap_or_else(|e| panic!("{e}"));
    println!("e2e: namespace {name} Active");
    owned
}

/// (1) A CRD applied and waited for until served: the first custom object is created at
/// once (no 404 after Established), the CRD deleted and waited for until gone.
fn a_crd_applied_is_served(env: &Env, group: &str) {
    let crd = gadget_crd(group);
    let name = format!("gadgets.{group}");
    let crd_api: Api<DynamicObject> = Api::all_with(env.client.clone(), &common::crds());
    let _guard = Owned {
        what: "CRD",
        api: crd_api.clone(),
        name: name.clone(),
    };
    std::thread::scope(|s| {
        if let Some(server) = &env.fake {
            // What the API server's CRD controller does.
            s.spawn(|| {
                common::wait_until("the CRD to exist", || server.get(&common::crds(), None, &name).is_ok());
                server
                    .patch(&common::crds(), None, &name,
                        &json!({"status": {"conditions": [{"type": "Established", "status": "True"}]}}))
                    .unwrap();
            });
        }
        let applied = wait::apply_crd(&env.client, &crd, "kube-informer-e2e", PATIENCE)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(applied.metadata.name(), name);
    });
    println!("e2e: CRD {name} served");
    let ns = test_namespace(env);
    let api: Api<DynamicObject> =
        Api::namespaced_with(env.client.clone(), &ns.name, &gadgets(group));
    let g = api
        .create(
            &PostParams::default(),
            &json!({"apiVersion": format!("{group}/v1"), "kind": "Gadget",
            "metadata": {"name": "g0"}, "spec": {"size": 1}}),
        )
        .unwrap_or_else(|e| panic!("the first gadget, right after the wait: {e}"));
    assert_eq!(g.kind.as_deref(), Some("Gadget"));
    // Applying it again finds it served at once.
    wait::apply_crd(&env.client, &crd, "kube-informer-e2e", PATIENCE)
        .unwrap_or_else(|e| panic!("{e}"));
    wait::delete_and_wait(&crd_api, &name, &DeleteParams::default(), PATIENCE)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(crd_api.get(&name).unwrap_err().is_not_found());
    println!("e2e: CRD {name} deleted and gone");
}

/// (2) Create or patch a ConfigMap owned by another: created, unchanged, updated (merge
/// patch), then server-side apply; a second controller refused.
fn create_or_patch_an_owned_object(env: &Env) {
    let ns = test_namespace(env);
    let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    let api: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), &ns.name, &cms);
    let owner = api
        .create(
            &PostParams::default(),
            &json!({"metadata": {"name": "owner"}}),
        )
        .unwrap();
    let blank: DynamicObject =
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "owned"}}))
        .unwrap();
    let set = |color: &'static str| {
        let owner = owner.clone();
        let cms = cms.clone();
        move |cm: &mut DynamicObject| {
            cm.metadata
                .set_controller_reference(OwnerReference::controller(&owner, &cms)?)?;
            let mut v = serde_json::to_value(&*cm).unwrap();
            v["data"]["color"] = color.into();
            *cm = serde_json::from_value(v).unwrap();
            Ok(())
        }
    };
    let cop = CreateOrPatch::new(&api).field_manager("kube-informer-e2e");
    let first = cop.run(blank.clone(), set("blue")).unwrap();
    assert!(
        matches!(first, OperationResult::Created(_)),
        "{}",
        first.as_str()
    );
    let second = cop.run(blank.clone(), set("blue")).unwrap();
    assert!(
        matches!(second, OperationResult::Unchanged(_)),
        "{}",
        second.as_str()
    );
    let third = cop.run(blank.clone(), set("green")).unwrap();
    assert!(
        matches!(third, OperationResult::Updated(_)),
        "{}",
        third.as_str()
    );
    let data: Value = third.object().decode_field("data").unwrap().unwrap();
    assert_eq!(data["color"], "green");
    assert!(kube_informer::api::is_controlled_by(
        &third.object().metadata,
        &owner.metadata
    ));

    let apply = CreateOrPatch::new(&api).apply("kube-informer-e2e-apply");
    let intent = |cm: &mut DynamicObject| {
        let mut v = serde_json::to_value(&*cm).unwrap();
        v["data"]["size"] = "10".into();
        *cm = serde_json::from_value(v).unwrap();
        Ok(())
    };
    let blank_applied: DynamicObject =
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "applied"}}))
        .unwrap();
    let a = apply.run(blank_applied.clone(), intent).unwrap();
    assert!(matches!(a, OperationResult::Created(_)), "{}", a.as_str());
    let b = apply.run(blank_applied, intent).unwrap();
    assert!(matches!(b, OperationResult::Unchanged(_)), "{}", b.as_str());

    let mut cm = third.into_object();
    let err = cm
        .metadata
        .set_controller_reference(OwnerReference::controller(&a.into_object(), &cms).unwrap())
        .unwrap_err();
    assert_eq!(err.controller.name, "owner");
}

#[test]
#[ignore = "needs a cluster: KUBE_E2E=1 cargo test --test e2e_toolbox -- --ignored"]
fn real_a_crd_applied_is_served() {
    if let Some(env) = Env::real() {
        a_crd_applied_is_served(
            &env,
            &format!("e2e-{}.kube-informer.test", e2e::random_suffix()),
        );
    }
}

#[test]
#[ignore = "needs a cluster: KUBE_E2E=1 cargo test --test e2e_toolbox -- --ignored"]
fn real_create_or_patch_an_owned_object() {
    if let Some(env) = Env::real() {
        create_or_patch_an_owned_object(&env);
    }
}

#[test]
fn fake_a_crd_applied_is_served() {
    let group = "e2e-fake.kube-informer.test";
    a_crd_applied_is_served(&fake_env(group), group);
}

#[test]
fn fake_create_or_patch_an_owned_object() {
    create_or_patch_an_owned_object(&fake_env("e2e-fake.kube-informer.test"));
}
