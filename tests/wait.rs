//! Waiting for one object's condition, over loopback against the test server: the stock
//! conditions, the timeout's last state, cancelling from another thread, resuming after a
//! dropped watch and a 410, deletion by uid, and a CRD served only after Established.

mod common;

use std::thread;
use std::time::Duration;

use common::{wait_until, PATIENCE};
use kube_informer::api::{ApiResource, DynamicObject};
use kube_informer::client::Cancel;
use kube_informer::controller::wait::{
    apply_crd, await_condition, conditions, delete_and_wait, wait_crd_served, Condition, Verdict,
    Wait, WaitError,
};
use kube_informer::testing::{ApiServer, Fault, Target};
use kube_informer::{Api, Client, DeleteParams};
use serde_json::{json, Value};

fn cms() -> ApiResource {
    ApiResource::new("", "v1", "ConfigMap", "configmaps", true)
}

fn deployments() -> ApiResource {
    ApiResource::new("apps", "v1", "Deployment", "deployments", true)
}

fn jobs() -> ApiResource {
    ApiResource::new("batch", "v1", "Job", "jobs", true)
}

fn api(server: &ApiServer, ar: &ApiResource) -> Api<DynamicObject> {
    Api::namespaced_with(Client::new(server.client_config()).unwrap(), "lab", ar)
}

/// Requests whose line contains every one of `parts`.
fn requests_with(server: &ApiServer, parts: &[&str]) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| parts.iter().all(|p| r.contains(p)))
        .count()
}

#[test]
fn a_pod_becomes_ready_after_the_wait_started() {
    let server = ApiServer::start();
    let pods = common::pods();
    server
        .create(&pods, common::pod("lab", "web", "Pending"))
        .unwrap();
    let api = api(&server, &pods);
    let waiter =
        thread::spawn(move || Wait::new(&api, "web", PATIENCE).until(conditions::pod_ready()));
    wait_until("the wait to watch", || {
        requests_with(&server, &["watch=1", "metadata.name=web"]) > 0
    });
    server
        .patch(
            &pods,
            Some("lab"),
            "web",
            &json!({"status": {"phase": "Running"}}),
        )
        .unwrap();
    server
        .patch(
            &pods,
            Some("lab"),
            "web",
            &json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
        )
        .unwrap();
    let pod = waiter.join().unwrap().unwrap().expect("the pod");
    let status: Value = pod.decode_field("status").unwrap().unwrap();
    assert_eq!(status["conditions"][0]["type"], "Ready");
}

#[test]
fn a_deployment_is_rolled_out_only_when_kubectl_would_say_so() {
    let server = ApiServer::start();
    let d = deployments();
    let created = server
        .create(
            &d,
            json!({"metadata": {"name": "web", "namespace": "lab"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}}),
        )
        .unwrap();
    let generation = created["metadata"]["generation"].as_i64().unwrap_or(1);
    let api = api(&server, &d);
    // Old replicas left: still waiting, and the timeout says so with the last state.
    server
        .patch(
            &d,
            Some("lab"),
            "web",
            &json!({"status": {"observedGeneration": generation,
            "replicas": 3, "updatedReplicas": 2, "availableReplicas": 2}}),
        )
        .unwrap();
    let err = Wait::new(&api, "web", Duration::from_millis(300))
        .until(conditions::deployment_rolled_out())
        .unwrap_err();
    match &err {
        WaitError::TimedOut {
            waiting_for, last, ..
        } => {
            assert!(waiting_for.contains("old replicas"), "{waiting_for}");
            assert!(last.is_some());
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(err.to_string().contains("old replicas"), "{err}");
    let waiter = thread::spawn(move || {
        await_condition(&api, "web", conditions::deployment_rolled_out(), PATIENCE)
    });
    wait_until("the wait to watch", || {
        requests_with(&server, &["watch=1", "metadata.name=web"]) > 0
    });
    server
        .patch(&d, Some("lab"), "web", &json!({"status": {"replicas": 2}}))
        .unwrap();
    let done = waiter.join().unwrap().unwrap().expect("the deployment");
    let status: Value = done.decode_field("status").unwrap().unwrap();
    assert_eq!(status["replicas"], 2);
}

#[test]
fn a_failed_job_ends_a_wait_for_completion_at_once() {
    let server = ApiServer::start();
    let j = jobs();
    server
        .create(&j, json!({"metadata": {"name": "batch", "namespace": "lab"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}}},
            "status": {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}}))
        .unwrap();
    let api = api(&server, &j);
    match Wait::new(&api, "batch", PATIENCE).until(conditions::job_complete()) {
        Err(WaitError::Failed { reason, last, .. }) => {
            assert!(reason.contains("BackoffLimitExceeded"), "{reason}");
            assert!(last.is_some());
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    assert!(Wait::new(&api, "batch", PATIENCE)
        .until(conditions::job_failed())
        .is_ok());
}

#[test]
fn a_namespace_becomes_active() {
    let server = ApiServer::start();
    let ns = ApiResource::new("", "v1", "Namespace", "namespaces", false);
    server
        .create(
            &ns,
            json!({"metadata": {"name": "lab"}, "status": {"phase": "Terminating"}}),
        )
        .unwrap();
    let api: Api<DynamicObject> = Api::all_with(Client::new(server.client_config()).unwrap(), &ns);
    let waiter = thread::spawn(move || {
        Wait::new(&api, "lab", PATIENCE).until(conditions::namespace_active())
    });
    wait_until("the wait to watch", || {
        requests_with(&server, &["watch=1", "metadata.name=lab"]) > 0
    });
    server
        .patch(&ns, None, "lab", &json!({"status": {"phase": "Active"}}))
        .unwrap();
    assert!(waiter.join().unwrap().unwrap().is_some());
}

#[test]
fn a_cancel_from_another_thread_ends_the_wait() {
    let server = ApiServer::start();
    let api = api(&server, &cms());
    let cancel = Cancel::new();
    let waiter = thread::spawn({
        let cancel = cancel.clone();
        move || {
            Wait::new(&api, "never", Duration::from_secs(3600))
                .cancel(&cancel)
                .until(conditions::exists())
        }
    });
    wait_until("the wait to watch", || {
        requests_with(&server, &["watch=1", "metadata.name=never"]) > 0
    });
    cancel.cancel();
    match waiter.join().unwrap() {
        Err(WaitError::Cancelled { object }) => assert_eq!(object, "configmaps lab/never"),
        other => panic!("expected a cancel, got {other:?}"),
    }
}

#[test]
fn the_wait_resumes_after_a_dropped_watch_and_relists_after_a_410() {
    let server = ApiServer::start();
    let api = api(&server, &cms());
    // The first watch answers 410: the wait must list again.
    server.inject(Target::Watch, Fault::status(410));
    let waiter = thread::spawn(move || {
        Wait::new(&api, "late", PATIENCE).until(|o: Option<&DynamicObject>| {
            o.is_some_and(|o| o.metadata.label("step") == Some("2"))
        })
    });
    wait_until("a second list after the 410", || {
        requests_with(
            &server,
            &[
                "GET /api/v1/namespaces/lab/configmaps?",
                "metadata.name=late",
            ],
        ) - requests_with(&server, &["watch=1", "metadata.name=late"])
            >= 2
    });
    wait_until("a watch after the relist", || {
        requests_with(&server, &["watch=1", "metadata.name=late"]) >= 2
    });
    // Cut the watch; the change made meanwhile is seen by the next watch (from its version).
    server.disconnect_all();
    server
        .create(
            &cms(),
            json!({"metadata": {"name": "late", "namespace": "lab", "labels": {"step": "1"}}}),
        )
        .unwrap();
    server
        .patch(
            &cms(),
            Some("lab"),
            "late",
            &json!({"metadata": {"labels": {"step": "2"}}}),
        )
        .unwrap();
    let cm = waiter.join().unwrap().unwrap().expect("the object");
    assert_eq!(cm.metadata.label("step"), Some("2"));
}

#[test]
fn an_object_recreated_under_its_name_counts_as_deleted() {
    let server = ApiServer::start();
    let created = server
        .create(
            &cms(),
            json!({"metadata": {"name": "phoenix", "namespace": "lab"}}),
        )
        .unwrap();
    let uid = created["metadata"]["uid"].as_str().unwrap().to_owned();
    let api = api(&server, &cms());
    let still = Wait::new(&api, "phoenix", Duration::from_millis(200))
        .until(conditions::deleted(&uid))
        .unwrap_err();
    assert!(still.is_timeout());
    server.delete(&cms(), Some("lab"), "phoenix").unwrap();
    server
        .create(
            &cms(),
            json!({"metadata": {"name": "phoenix", "namespace": "lab"}}),
        )
        .unwrap();
    let new = Wait::new(&api, "phoenix", PATIENCE)
        .until(conditions::deleted(&uid))
        .unwrap()
        .expect("the new object");
    assert_ne!(new.metadata.uid.as_deref(), Some(uid.as_str()));
    assert_eq!(conditions::deleted(&uid).check(Some(&new)), Verdict::Met);
}

#[test]
fn delete_and_wait_waits_out_a_finalizer() {
    let server = ApiServer::start();
    server
        .create(&cms(), json!({"metadata": {"name": "held", "namespace": "lab", "finalizers": ["lab.example.com/hold"]}}))
        .unwrap();
    let api = api(&server, &cms());
    let waiter =
        thread::spawn(move || delete_and_wait(&api, "held", &DeleteParams::default(), PATIENCE));
    wait_until("the delete to mark the object", || {
        server
            .get(&cms(), Some("lab"), "held")
            .is_ok_and(|o| o["metadata"]["deletionTimestamp"].is_string())
    });
    wait_until("the wait to watch", || {
        requests_with(&server, &["watch=1", "metadata.name=held"]) > 0
    });
    assert!(!waiter.is_finished());
    server
        .patch(
            &cms(),
            Some("lab"),
            "held",
            &json!({"metadata": {"finalizers": null}}),
        )
        .unwrap();
    waiter.join().unwrap().unwrap();
    assert!(server
        .get(&cms(), Some("lab"), "held")
        .unwrap_err()
        .is_not_found());
    // Gone already: nothing to do.
    let api = self::api(&server, &cms());
    delete_and_wait(&api, "held", &DeleteParams::default(), PATIENCE).unwrap();
}

fn gadget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.lab.example.com"},
        "spec": {"group": "lab.example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})
}

#[test]
fn a_crd_is_served_only_once_its_resource_stops_answering_404() {
    let server = ApiServer::builder()
        .custom_resource_definition(&gadget_crd())
        .unwrap()
        .start();
    let client = Client::new(server.client_config()).unwrap();
    // The test server establishes the CRD as it is written; the first list after that (the
    // wait's own list of the CRD) passes, the next one (the probe of the new resource)
    // answers 404, as a real server may right after Established.
    server.inject(Target::List, Fault::Stall(Duration::ZERO));
    server.inject(Target::List, Fault::status(404));
    let crd = apply_crd(&client, &gadget_crd(), "lab-installer", PATIENCE).unwrap();
    assert_eq!(crd.metadata.name(), "gadgets.lab.example.com");
    assert!(
        requests_with(&server, &["GET /apis/lab.example.com/v1/gadgets?limit=1"]) >= 2,
        "the 404 was retried: {:?}",
        server.requests()
    );
    // Already served: a second apply returns at once.
    apply_crd(&client, &gadget_crd(), "lab-installer", PATIENCE).unwrap();
}

#[test]
fn an_established_crd_that_discovery_does_not_list_is_not_served() {
    // A CRD stored from Rust (a fixture, not a write through the API) is not served by the
    // test server, nor listed by its discovery; it is marked Established by hand.
    let server = ApiServer::start();
    let client = Client::new(server.client_config()).unwrap();
    server.create(&common::crds(), gadget_crd()).unwrap();
    server
        .patch(
            &common::crds(),
            None,
            "gadgets.lab.example.com",
            &json!({"status": {"conditions": [{"type": "Established", "status": "True"}]}}),
        )
        .unwrap();
    let err = wait_crd_served(
        &client,
        "gadgets.lab.example.com",
        Duration::from_millis(500),
    )
    .unwrap_err();
    match &err {
        WaitError::TimedOut {
            waiting_for, last, ..
        } => {
            assert!(waiting_for.contains("discovery"), "{waiting_for}");
            assert_eq!(
                last.as_ref().unwrap().metadata.name(),
                "gadgets.lab.example.com"
            );
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
}

/// An installer allowed to manage CRDs but not to list their objects: the probe's list is
/// answered 403 by the resource's own handler, which means served (only 404 and transient
/// answers mean "not yet").
#[test]
fn a_forbidden_probe_means_served() {
    let server = ApiServer::builder()
        .custom_resource_definition(&gadget_crd())
        .unwrap()
        .start();
    let client = Client::new(server.client_config()).unwrap();
    // The test server establishes the CRD as it is written; the wait's own list of the CRD
    // passes, the probe of the new resource answers 403 (an installer allowed to manage
    // CRDs, not to list their objects).
    server.inject(Target::List, Fault::Stall(Duration::ZERO));
    server.inject(Target::List, Fault::status(403));
    let crd = apply_crd(&client, &gadget_crd(), "lab-installer", PATIENCE).unwrap();
    assert_eq!(crd.metadata.name(), "gadgets.lab.example.com");
    assert_eq!(
        requests_with(&server, &["GET /apis/lab.example.com/v1/gadgets?limit=1"]),
        1,
        "{:?}",
        server.requests()
    );
}

/// The caller's own resourceVersion precondition, stale: kube-apiserver answers 409 and the
/// object stays. That is not "deleted": the 409 is the answer, the object still there.
/// A uid precondition of the caller's that fails (the object was replaced) is "gone".
#[test]
fn delete_with_a_stale_resource_version_precondition_is_not_gone() {
    let server = ApiServer::start();
    server
        .create(
            &cms(),
            json!({"metadata": {"name": "kept", "namespace": "lab"}}),
        )
        .unwrap();
    let api = api(&server, &cms());
    let stale = api
        .get("kept")
        .unwrap()
        .metadata
        .resource_version()
        .to_owned();
    server
        .patch(
            &cms(),
            Some("lab"),
            "kept",
            &json!({"data": {"moved": "on"}}),
        )
        .unwrap();
    let params = DeleteParams::default().precondition_resource_version(&stale);
    let err = delete_and_wait(&api, "kept", &params, PATIENCE).unwrap_err();
    match &err {
        WaitError::Api(e) => assert!(e.is_conflict(), "{e}"),
        other => panic!("expected the 409, got {other:?}"),
    }
    assert!(api.get("kept").is_ok(), "the object is still there");
    // With the current version it goes.
    let current = api
        .get("kept")
        .unwrap()
        .metadata
        .resource_version()
        .to_owned();
    let params = DeleteParams::default().precondition_resource_version(&current);
    delete_and_wait(&api, "kept", &params, PATIENCE).unwrap();
    assert!(api.get("kept").unwrap_err().is_not_found());
    // The caller's uid names an object replaced under the same name: that one is gone,
    // and the new one is left alone.
    let old_uid = server
        .create(
            &cms(),
            json!({"metadata": {"name": "kept", "namespace": "lab"}}),
        )
        .unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_owned();
    server.delete(&cms(), Some("lab"), "kept").unwrap();
    server
        .create(
            &cms(),
            json!({"metadata": {"name": "kept", "namespace": "lab"}}),
        )
        .unwrap();
    let params = DeleteParams::default().precondition_uid(&old_uid);
    delete_and_wait(&api, "kept", &params, PATIENCE).unwrap();
    assert!(api.get("kept").is_ok(), "the new object is left alone");
}
