//! Create or patch and owner references, over loopback against the test server: created,
//! unchanged (nothing written), updated with only the difference; a conflict retried with a
//! fresh read (another writer's change kept); a stale cache read caught by the
//! resourceVersion precondition; server-side apply that skips a write that would change
//! nothing; a second controller refused.

mod common;

use std::sync::atomic::{AtomicU32, Ordering};

use common::PATIENCE;
use kube_informer::api::{
    is_controlled_by, ApiResource, DynamicObject, OwnerReference, OwnerReferences,
};
use kube_informer::cache::{InformerConfig, SharedIndexInformer};
use kube_informer::controller::{create_or_patch, CreateOrPatch, OperationResult};
use kube_informer::testing::ApiServer;
use kube_informer::{Api, Client, PostParams};
use serde_json::{json, Value};

fn cms() -> ApiResource {
    ApiResource::new("", "v1", "ConfigMap", "configmaps", true)
}

fn api(server: &ApiServer) -> Api<DynamicObject> {
    Api::namespaced_with(Client::new(server.client_config()).unwrap(), "lab", &cms())
}

fn blank(name: &str) -> DynamicObject {
    serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}),
    )
    .unwrap()
}

/// Edits a DynamicObject as JSON.
fn edit(o: &mut DynamicObject, f: impl FnOnce(&mut Value)) {
    let mut v = serde_json::to_value(&*o).unwrap();
    f(&mut v);
    *o = serde_json::from_value(v).unwrap();
}

fn data(o: &DynamicObject) -> Value {
    o.decode_field::<Value>("data")
        .unwrap()
        .unwrap_or(Value::Null)
}

fn writes(server: &ApiServer) -> Vec<String> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.starts_with("PATCH") || r.starts_with("POST") || r.starts_with("PUT"))
        .collect()
}

#[test]
fn created_then_unchanged_then_updated_with_a_merge_patch() {
    let server = ApiServer::start();
    let api = api(&server);
    let set = |color: &'static str| {
        move |o: &mut DynamicObject| {
            edit(o, |v| v["data"]["color"] = color.into());
            Ok(())
        }
    };
    let first = create_or_patch(&api, blank("settings"), set("blue")).unwrap();
    assert!(matches!(first, OperationResult::Created(_)));
    assert_eq!(data(first.object())["color"], "blue");
    let before = writes(&server).len();
    let second = create_or_patch(&api, blank("settings"), set("blue")).unwrap();
    assert!(
        matches!(second, OperationResult::Unchanged(_)),
        "{}",
        second.as_str()
    );
    assert_eq!(
        writes(&server).len(),
        before,
        "an unchanged object is not written"
    );
    let third = CreateOrPatch::new(&api)
        .field_manager("lab-controller")
        .run(blank("settings"), set("green"))
        .unwrap();
    assert!(matches!(third, OperationResult::Updated(_)));
    assert_eq!(data(third.object())["color"], "green");
    let patch = writes(&server).pop().unwrap();
    assert!(
        patch.starts_with("PATCH /api/v1/namespaces/lab/configmaps/settings"),
        "{patch}"
    );
    assert!(patch.contains("fieldManager=lab-controller"), "{patch}");
}

#[test]
fn a_conflict_is_retried_with_a_fresh_read_and_keeps_the_other_writers_change() {
    let server = ApiServer::start();
    server
        .create(
            &cms(),
            json!({"metadata": {"name": "list", "namespace": "lab"}, "data": {"items": "a"}}),
        )
        .unwrap();
    let api = api(&server);
    let calls = AtomicU32::new(0);
    let result = create_or_patch(&api, blank("list"), |o| {
        if calls.fetch_add(1, Ordering::SeqCst) == 0 {
            // Another writer changes the object between our read and our write.
            server
                .patch(
                    &cms(),
                    Some("lab"),
                    "list",
                    &json!({"data": {"items": "a,b"}}),
                )
                .unwrap();
        }
        edit(o, |v| {
            let items = v["data"]["items"].as_str().unwrap().to_owned();
            v["data"]["items"] = format!("{items},c").into();
        });
        Ok(())
    })
    .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2, "one conflict, one retry");
    assert!(matches!(result, OperationResult::Updated(_)));
    assert_eq!(data(result.object())["items"], "a,b,c");
}

#[test]
fn a_stale_cache_read_is_caught_by_the_precondition() {
    let server = ApiServer::start();
    server
        .create(
            &cms(),
            json!({"metadata": {"name": "cached", "namespace": "lab"}, "data": {"n": "1"}}),
        )
        .unwrap();
    let api = api(&server);
    let informer = SharedIndexInformer::new(api.clone(), InformerConfig::default());
    informer.start().unwrap();
    assert!(informer.wait_for_cache_sync(PATIENCE));
    // Frozen cache, newer server.
    informer.stop();
    server
        .patch(&cms(), Some("lab"), "cached", &json!({"data": {"n": "2"}}))
        .unwrap();
    let lister = informer.lister();
    let seen = std::sync::Mutex::new(Vec::new());
    let result = CreateOrPatch::new(&api)
        .lister(&lister)
        .run(blank("cached"), |o| {
            seen.lock()
                .unwrap()
                .push(data(o)["n"].as_str().unwrap().to_owned());
            edit(o, |v| v["data"]["m"] = "x".into());
            Ok(())
        })
        .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        ["1", "2"],
        "the cache first, then the server"
    );
    assert_eq!(data(result.object()), json!({"n": "2", "m": "x"}));
}

#[test]
fn a_create_that_loses_a_race_patches_the_winner() {
    let server = ApiServer::start();
    let api = api(&server);
    let mut raced = false;
    let result = create_or_patch(&api, blank("race"), |o| {
        if !raced {
            raced = true;
            server
                .create(&cms(), json!({"metadata": {"name": "race", "namespace": "lab"}, "data": {"winner": "them"}}))
                .unwrap();
        }
        edit(o, |v| v["data"]["mine"] = "yes".into());
        Ok(())
    })
    .unwrap();
    assert!(
        matches!(result, OperationResult::Updated(_)),
        "{}",
        result.as_str()
    );
    assert_eq!(
        data(result.object()),
        json!({"winner": "them", "mine": "yes"})
    );
}

#[test]
fn server_side_apply_writes_only_when_the_intent_is_not_there() {
    let server = ApiServer::start();
    let api = api(&server);
    let intent = |pairs: &'static [(&'static str, &'static str)]| {
        move |o: &mut DynamicObject| {
            edit(o, |v| {
                for (k, val) in pairs {
                    v["data"][*k] = (*val).into();
                }
            });
            Ok(())
        }
    };
    let apply = CreateOrPatch::new(&api).apply("lab-applier");
    let first = apply
        .run(blank("applied"), intent(&[("a", "1"), ("b", "2")]))
        .unwrap();
    assert!(
        matches!(first, OperationResult::Created(_)),
        "{}",
        first.as_str()
    );
    // Someone else adds a field: our intent is still there, nothing to write.
    server
        .patch(
            &cms(),
            Some("lab"),
            "applied",
            &json!({"data": {"other": "x"}}),
        )
        .unwrap();
    let before = writes(&server).len();
    let same = apply
        .run(blank("applied"), intent(&[("a", "1"), ("b", "2")]))
        .unwrap();
    assert!(
        matches!(same, OperationResult::Unchanged(_)),
        "{}",
        same.as_str()
    );
    assert_eq!(writes(&server).len(), before);
    // Dropping a field we own needs an apply, which removes it.
    let dropped = apply.run(blank("applied"), intent(&[("a", "1")])).unwrap();
    assert!(
        matches!(dropped, OperationResult::Updated(_)),
        "{}",
        dropped.as_str()
    );
    assert_eq!(data(dropped.object()), json!({"a": "1", "other": "x"}));
    let changed = apply.run(blank("applied"), intent(&[("a", "9")])).unwrap();
    assert!(matches!(changed, OperationResult::Updated(_)));
    assert_eq!(data(changed.object())["a"], "9");
}

#[test]
fn owner_references_built_from_the_owner_and_one_controller_only() {
    let server = ApiServer::start();
    let client = Client::new(server.client_config()).unwrap();
    let deploys = ApiResource::new("apps", "v1", "Deployment", "deployments", true);
    let deploy_api: Api<DynamicObject> = Api::namespaced_with(client, "lab", &deploys);
    let spec = |name: &str| json!({"metadata": {"name": name}, "spec": {"replicas": 1}});
    let web = deploy_api
        .create(&PostParams::default(), &spec("web"))
        .unwrap();
    let other = deploy_api
        .create(&PostParams::default(), &spec("other"))
        .unwrap();
    let api = api(&server);
    let result = create_or_patch(&api, blank("web-config"), |cm| {
        cm.metadata
            .set_controller_reference(OwnerReference::controller(&web, &deploys)?)?;
        Ok(())
    })
    .unwrap();
    let cm = result.into_object();
    assert!(is_controlled_by(&cm.metadata, &web.metadata));
    let stored = server.get(&cms(), Some("lab"), "web-config").unwrap();
    assert_eq!(
        stored["metadata"]["ownerReferences"],
        json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
            "uid": web.metadata.uid.clone().unwrap(), "controller": true, "blockOwnerDeletion": true}])
    );
    // Setting it again changes nothing; another controller is refused, naming the first.
    let again = create_or_patch(&api, blank("web-config"), |cm| {
        cm.metadata
            .set_controller_reference(OwnerReference::controller(&web, &deploys)?)?;
        Ok(())
    })
    .unwrap();
    assert!(matches!(again, OperationResult::Unchanged(_)));
    let mut cm = cm;
    let err = cm
        .metadata
        .set_controller_reference(OwnerReference::controller(&other, &deploys).unwrap())
        .unwrap_err();
    assert_eq!(err.controller.name, "web");
    // A plain owner reference sits beside it.
    cm.metadata
        .set_owner_reference(OwnerReference::owner(&other, &deploys).unwrap());
    assert_eq!(cm.metadata.owner_references.as_ref().unwrap().len(), 2);
    assert!(is_controlled_by(&cm.metadata, &web.metadata));
}

/// Fields this manager applied inside a keyed list (an env var of container `app`, a value
/// inside one) and then dropped from its intent: the apply is sent, and the server removes
/// them. Read down to the first list only, the intent looked already there (the current
/// container holds everything the intent's container has).
#[test]
fn server_side_apply_sees_fields_dropped_inside_keyed_lists() {
    let server = ApiServer::start();
    let pods = ApiResource::new("", "v1", "Pod", "pods", true);
    let api: Api<DynamicObject> =
        Api::namespaced_with(Client::new(server.client_config()).unwrap(), "lab", &pods);
    let blank: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"}}))
    .unwrap();
    let with_env = |env: Value| {
        move |o: &mut DynamicObject| {
            edit(o, |v| {
                v["spec"] = json!({"containers": [{"name": "app", "image": "nginx", "env": env}]});
            });
            Ok(())
        }
    };
    let env_of = |o: &DynamicObject| {
        serde_json::to_value(o).unwrap()["spec"]["containers"][0]["env"].clone()
    };
    let apply = CreateOrPatch::new(&api).apply("lab-applier");
    let both = json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]);
    apply.run(blank.clone(), with_env(both.clone())).unwrap();
    let same = apply.run(blank.clone(), with_env(both)).unwrap();
    assert!(!same.changed(), "{}", same.as_str());
    // B's value dropped: B stays, its value goes.
    let valueless = json!([{"name": "A", "value": "1"}, {"name": "B"}]);
    let dropped = apply
        .run(blank.clone(), with_env(valueless.clone()))
        .unwrap();
    assert!(
        matches!(dropped, OperationResult::Updated(_)),
        "{}",
        dropped.as_str()
    );
    assert_eq!(env_of(&api.get("web").unwrap()), valueless);
    // The whole env of container `app` dropped.
    let no_env = |o: &mut DynamicObject| {
        edit(o, |v| {
            v["spec"] = json!({"containers": [{"name": "app", "image": "nginx"}]});
        });
        Ok(())
    };
    let dropped = apply.run(blank.clone(), no_env).unwrap();
    assert!(
        matches!(dropped, OperationResult::Updated(_)),
        "{}",
        dropped.as_str()
    );
    let env = env_of(&api.get("web").unwrap());
    assert!(
        env.is_null() || env == json!([]),
        "the env vars are gone: {env}"
    );
    let again = apply.run(blank, no_env).unwrap();
    assert!(!again.changed(), "{}", again.as_str());
}

/// The owner deleted and created again under its name (a new uid): the owned object's
/// controller entry is taken over by the new owner, as controller-runtime's
/// `SetControllerReference` does, not refused as "already controlled" for ever.
#[test]
fn a_recreated_owner_takes_over_its_objects() {
    let server = ApiServer::start();
    let client = Client::new(server.client_config()).unwrap();
    let deploys = ApiResource::new("apps", "v1", "Deployment", "deployments", true);
    let deploy_api: Api<DynamicObject> = Api::namespaced_with(client, "lab", &deploys);
    let spec = json!({"metadata": {"name": "web"}, "spec": {"replicas": 1}});
    let api = api(&server);
    let reconcile = |owner: &DynamicObject| {
        create_or_patch(&api, blank("web-config"), |cm| {
            cm.metadata
                .set_controller_reference(OwnerReference::controller(owner, &deploys)?)?;
            Ok(())
        })
    };
    let first = deploy_api.create(&PostParams::default(), &spec).unwrap();
    reconcile(&first).unwrap();
    // The test server has no garbage collector: the ConfigMap outlives its first owner.
    server.delete(&deploys, Some("lab"), "web").unwrap();
    let second = deploy_api.create(&PostParams::default(), &spec).unwrap();
    assert_ne!(first.metadata.uid, second.metadata.uid);
    let result = reconcile(&second).unwrap();
    assert!(
        matches!(result, OperationResult::Updated(_)),
        "{}",
        result.as_str()
    );
    let stored = server.get(&cms(), Some("lab"), "web-config").unwrap();
    let refs = stored["metadata"]["ownerReferences"].as_array().unwrap();
    assert_eq!(refs.len(), 1, "{refs:?}");
    assert_eq!(
        refs[0]["uid"],
        second.metadata.uid.clone().unwrap().as_str()
    );
    assert!(is_controlled_by(
        &result.object().metadata,
        &second.metadata
    ));
}
