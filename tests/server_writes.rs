//! `testing::ApiServer` answers writes like kube-apiserver v1.36.2: every captured request of
//! `tests/fixtures` about write options (dryRun, generateName, fieldValidation), deletes
//! (DeleteOptions, preconditions, propagation, finalizers, pod grace), deletecollection and
//! the status and scale subresources is sent over real HTTP and the answer compared with the
//! capture field by field (see `tests/common/capture.rs`), managed fields included.

mod common;

use common::capture::{self, Compare};
use common::{fixture, pods, widgets};
use kube_informer::api::ApiResource;
use kube_informer::testing::{ApiServer, Subresources};
use serde_json::{json, Value};

fn configmaps() -> ApiResource {
    ApiResource::new("", "v1", "ConfigMap", "configmaps", true)
}

fn deployments() -> ApiResource {
    ApiResource::new("apps", "v1", "Deployment", "deployments", true)
}

/// A server that knows the kinds of the captures; widgets have the status subresource, as
/// the lab's CRD does.
fn server() -> ApiServer {
    ApiServer::builder()
        .resource(&configmaps())
        .resource(&deployments())
        .resource(&pods())
        .subresources(&widgets(), Subresources::none().with_status())
        .start()
}

/// A captured body as JSON.
fn captured(name: &str) -> Value {
    serde_json::from_slice(&fixture(&format!("{name}.json"))).unwrap()
}

/// Creates an object from a captured body, with `edit` applied first (to undo what the
/// captured request did to it).
fn seed(server: &ApiServer, ar: &ApiResource, name: &str, edit: impl FnOnce(&mut Value)) -> Value {
    let mut v = captured(name);
    edit(&mut v);
    server.create(ar, v).unwrap()
}

/// The object as it was before a delete marked it.
fn undeleted(v: &mut Value) {
    let m = v["metadata"].as_object_mut().unwrap();
    m.remove("deletionTimestamp");
    m.remove("deletionGracePeriodSeconds");
    m.remove("finalizers");
}

fn cm(server: &ApiServer, ns: &str, name: &str, labels: Value) -> Value {
    server
        .create(
            &configmaps(),
            json!({"metadata": {"name": name, "namespace": ns, "labels": labels}, "data": {"k": "v"}}),
        )
        .unwrap()
}

fn send(server: &ApiServer, method: &str, target: &str, ct: &str, body: &str) -> capture::Response {
    let mut headers = vec![("Accept".to_owned(), "application/json".to_owned())];
    if !ct.is_empty() {
        headers.push(("Content-Type".to_owned(), ct.to_owned()));
    }
    capture::send(
        server.addr(),
        &capture::Request {
            method: method.into(),
            target: target.into(),
            headers,
            body: body.as_bytes().to_vec(),
        },
    )
}

/// The events of a resource after `rv` (the watch ends at its timeout; the events after
/// `rv` are all in the server's history before it starts).
fn events_after(server: &ApiServer, path: &str, rv: u64) -> Vec<(String, Value)> {
    let r = send(
        server,
        "GET",
        &format!("{path}?watch=1&resourceVersion={rv}&timeoutSeconds=1"),
        "",
        "",
    );
    assert_eq!(r.code, 200);
    String::from_utf8(r.body)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["type"].as_str().unwrap().to_owned(), v["object"].clone())
        })
        .collect()
}

fn types(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(t, _)| t.as_str()).collect()
}

fn rv_of(v: &Value) -> String {
    v["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Seconds since the epoch of `2026-11-23T04:39:21Z`.
fn epoch(ts: &str) -> i64 {
    let d = |a: usize, b: usize| ts[a..b].parse::<i64>().unwrap();
    let (y, m, day) = (d(0, 4), d(5, 7), d(8, 10));
    let (y, m) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    days * 86_400 + d(11, 13) * 3600 + d(14, 16) * 60 + d(17, 19)
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

// ---------------------------------------------------------------- write options

#[test]
fn dry_run_create_answers_201_without_resource_version_and_stores_nothing() {
    let server = server();
    let rv = server.resource_version();
    let answer = capture::replay(&server, "create-configmap-dryrun");
    Compare::new().assert("create-configmap-dryrun", &answer);
    assert_eq!(server.resource_version(), rv, "nothing was written");
    let get = capture::replay(&server, "status-404-get-after-dryrun");
    Compare::new().assert("status-404-get-after-dryrun", &get);
    assert!(events_after(&server, "/api/v1/configmaps", rv).is_empty());
}

#[test]
fn dry_run_update_patch_and_delete_change_nothing() {
    let server = server();
    let before = cm(&server, "fx-writes", "cm-dry", json!({"a": "1"}));
    let rv = server.resource_version();
    let path = "/api/v1/namespaces/fx-writes/configmaps/cm-dry";

    let mut changed = before.clone();
    changed["data"]["k"] = json!("changed");
    let put = send(
        &server,
        "PUT",
        &format!("{path}?dryRun=All"),
        "application/json",
        &changed.to_string(),
    );
    assert_eq!(put.code, 200);
    assert_eq!(put.json()["data"]["k"], "changed", "answered as if written");
    assert_eq!(rv_of(&put.json()), rv_of(&before));

    let patch = send(
        &server,
        "PATCH",
        &format!("{path}?dryRun=All"),
        "application/merge-patch+json",
        r#"{"data":{"k":"patched"}}"#,
    );
    assert_eq!(patch.code, 200);
    assert_eq!(patch.json()["data"]["k"], "patched");

    let del = send(&server, "DELETE", &format!("{path}?dryRun=All"), "", "");
    assert_eq!(del.code, 200);
    assert_eq!(del.json()["status"], "Success");
    let del_body = send(
        &server,
        "DELETE",
        path,
        "application/json",
        r#"{"kind":"DeleteOptions","apiVersion":"v1","dryRun":["All"]}"#,
    );
    assert_eq!(del_body.code, 200);

    assert_eq!(server.resource_version(), rv, "nothing was written");
    assert_eq!(
        server
            .get(&configmaps(), Some("fx-writes"), "cm-dry")
            .unwrap(),
        before
    );
    assert!(events_after(&server, "/api/v1/configmaps", rv).is_empty());
}

#[test]
fn generate_name_makes_a_name_of_five_characters_and_keeps_the_prefix() {
    let server = server();
    let compare = Compare::new().generated_name("metadata.name");
    let first = capture::replay(&server, "create-configmap-generatename");
    compare.assert("create-configmap-generatename", &first);
    let second = capture::replay(&server, "create-configmap-generatename");
    compare.assert("create-configmap-generatename", &second);
    let (a, b) = (first.json(), second.json());
    assert_ne!(a["metadata"]["name"], b["metadata"]["name"]);
    let name = a["metadata"]["name"].as_str().unwrap();
    assert!(
        server.get(&configmaps(), Some("fx-writes"), name).is_ok(),
        "stored under its name"
    );
}

#[test]
fn field_validation_strict_warn_and_ignore_answer_as_captured() {
    let server = server();
    let strict = capture::replay(&server, "status-400-fieldvalidation-strict");
    Compare::new().assert("status-400-fieldvalidation-strict", &strict);
    assert!(server
        .get(&configmaps(), Some("fx-writes"), "cm-strict")
        .is_err());

    let warn = capture::replay(&server, "create-configmap-unknown-field-warn");
    Compare::new().assert("create-configmap-unknown-field-warn", &warn);
    assert_eq!(
        warn.all("warning").len(),
        2,
        "one Warning header per unknown field"
    );

    let ignore = capture::replay(&server, "create-configmap-unknown-field-ignore");
    Compare::new().assert("create-configmap-unknown-field-ignore", &ignore);
    assert!(ignore.all("warning").is_empty());

    // The unknown fields are dropped, as decoding into the typed object does.
    let stored = server
        .get(&configmaps(), Some("fx-writes"), "cm-warn")
        .unwrap();
    assert!(stored.get("spec").is_none() && stored["metadata"].get("bogusMeta").is_none());
}

#[test]
fn field_validation_of_custom_resources_and_updates() {
    let server = ApiServer::builder()
        .resource(&widgets())
        .schema_fields(
            &ApiResource::new("lab.example.com", "v1", "Gadget", "gadgets", true),
            &["spec", "extra"],
        )
        .start();
    let strict = send(
        &server,
        "POST",
        "/apis/lab.example.com/v1/namespaces/lab/widgets?fieldValidation=Strict",
        "application/json",
        r#"{"apiVersion":"lab.example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{},"bogus":1}"#,
    );
    assert_eq!(strict.code, 400);
    assert_eq!(
        strict.json()["message"],
        "Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: unknown field \"bogus\""
    );
    let gadget = send(
        &server,
        "POST",
        "/apis/lab.example.com/v1/namespaces/lab/gadgets?fieldValidation=Strict",
        "application/json",
        r#"{"metadata":{"name":"g"},"spec":{},"extra":1}"#,
    );
    assert_eq!(gadget.code, 201, "a declared schema field is known");
    let created = server
        .create(
            &widgets(),
            json!({"metadata": {"name": "u", "namespace": "lab"}, "spec": {}}),
        )
        .unwrap();
    let mut body = created.clone();
    body["status2"] = json!({});
    let put = send(
        &server,
        "PUT",
        "/apis/lab.example.com/v1/namespaces/lab/widgets/u",
        "application/json",
        &body.to_string(),
    );
    assert_eq!(put.code, 200);
    assert_eq!(
        put.all("warning"),
        vec![r#"299 - "unknown field \"status2\"""#]
    );
}

#[test]
fn generation_is_kept_by_pods_workloads_and_custom_resources_only() {
    let server = server();
    let cmv = cm(&server, "lab", "c", json!({}));
    assert!(cmv["metadata"].get("generation").is_none());
    let p = send(
        &server,
        "POST",
        "/api/v1/namespaces/lab/pods",
        "application/json",
        &common::pod("lab", "p", "Pending").to_string(),
    );
    assert_eq!(p.json()["metadata"]["generation"], 1);
    let w = server
        .create(
            &widgets(),
            json!({"metadata": {"name": "w", "namespace": "lab"}, "spec": {"size": 1}}),
        )
        .unwrap();
    assert_eq!(w["metadata"]["generation"], 1);
    let patched = send(
        &server,
        "PATCH",
        "/apis/lab.example.com/v1/namespaces/lab/widgets/w",
        "application/merge-patch+json",
        r#"{"spec":{"size":2}}"#,
    );
    assert_eq!(patched.json()["metadata"]["generation"], 2);
    let labelled = send(
        &server,
        "PATCH",
        "/apis/lab.example.com/v1/namespaces/lab/widgets/w",
        "application/merge-patch+json",
        r#"{"metadata":{"labels":{"a":"b"}}}"#,
    );
    assert_eq!(
        labelled.json()["metadata"]["generation"],
        2,
        "metadata changes keep it"
    );
}

#[test]
fn patch_content_types_the_resource_does_not_take_get_415_as_captured() {
    let server = server();
    cm(&server, "fx-writes", "cm-patch", json!({}));
    let answer = capture::replay(&server, "status-415-patch-application-json");
    Compare::new().assert("status-415-patch-application-json", &answer);
    server
        .create(
            &widgets(),
            json!({"metadata": {"name": "w1", "namespace": "fx-writes"}, "spec": {"size": 1}}),
        )
        .unwrap();
    let answer = capture::replay(&server, "status-415-strategic-merge-patch-custom-resource");
    Compare::new().assert("status-415-strategic-merge-patch-custom-resource", &answer);
}

// ---------------------------------------------------------------- deletes

#[test]
fn deletes_that_remove_the_object_answer_a_success_status() {
    let server = server();
    for name in ["delete-configmap", "delete-configmap-background"] {
        let want = captured(name);
        let cm_name = want["details"]["name"].as_str().unwrap();
        let created = cm(&server, "fx-del", cm_name, json!({}));
        let answer = capture::replay(&server, name);
        Compare::new().assert(name, &answer);
        assert_eq!(answer.json()["details"]["uid"], created["metadata"]["uid"]);
        assert!(server
            .get(&configmaps(), Some("fx-del"), cm_name)
            .unwrap_err()
            .is_not_found());
    }
    server
        .create(
            &widgets(),
            json!({"metadata": {"name": "w-delete", "namespace": "fx-del"}, "spec": {"size": 1}}),
        )
        .unwrap();
    let answer = capture::replay(&server, "delete-custom-resource");
    Compare::new().assert("delete-custom-resource", &answer);
}

#[test]
fn foreground_and_orphan_deletes_leave_the_object_with_their_finalizer() {
    let server = server();
    for (name, dep) in [
        ("delete-deployment-foreground", "dep-foreground"),
        ("delete-deployment-orphan", "dep-orphan"),
    ] {
        seed(&server, &deployments(), name, |v| {
            undeleted(v);
            v["metadata"]["generation"] = json!(1);
        });
        let rv = server.resource_version();
        let answer = capture::replay(&server, name);
        Compare::new().assert(name, &answer);
        let stored = server.get(&deployments(), Some("fx-del"), dep).unwrap();
        assert_eq!(
            stored,
            answer
                .json()
                .as_object()
                .map(|m| {
                    let mut m = m.clone();
                    m.remove("kind");
                    m.remove("apiVersion");
                    Value::Object(m)
                })
                .unwrap(),
            "the object stays, as answered"
        );
        assert_eq!(
            types(&events_after(&server, "/apis/apps/v1/deployments", rv)),
            ["MODIFIED"]
        );
    }
    let first = capture::replay(&server, "delete-deployment-foreground");
    let again = capture::replay(&server, "delete-deployment-foreground-again");
    Compare::new().assert("delete-deployment-foreground-again", &again);
    assert_eq!(
        rv_of(&first.json()),
        rv_of(&again.json()),
        "deleting again changes nothing"
    );
}

#[test]
fn a_bound_pod_stays_terminating_for_its_grace_period() {
    let server = server();
    seed(&server, &pods(), "delete-pod-bound-default-grace", |v| {
        undeleted(v);
        v["metadata"]["generation"] = json!(1);
    });
    let before = now();
    let answer = capture::replay(&server, "delete-pod-bound-default-grace");
    let after = now();
    Compare::new().assert("delete-pod-bound-default-grace", &answer);
    let ts = epoch(
        answer.json()["metadata"]["deletionTimestamp"]
            .as_str()
            .unwrap(),
    );
    assert!(
        (before + 30..=after + 30).contains(&ts),
        "deletionTimestamp is now + 30 s"
    );
    let again = capture::replay(&server, "delete-pod-bound-default-grace-again");
    Compare::new().assert("delete-pod-bound-default-grace-again", &again);
    assert_eq!(rv_of(&answer.json()), rv_of(&again.json()));
    assert!(
        server.get(&pods(), Some("fx-del"), "pod-bound").is_ok(),
        "no kubelet: it stays"
    );

    // A second delete with grace 0 finishes it (what `kubectl delete --force` does): marked
    // again with grace 0 (MODIFIED), then gone (DELETED), as v1.36 does it
    // (`tests/fixtures/semantics/write-matrix.json`, step `pod-delete-bound-grace0`).
    let rv = server.resource_version();
    let force = send(
        &server,
        "DELETE",
        "/api/v1/namespaces/fx-del/pods/pod-bound?gracePeriodSeconds=0",
        "",
        "",
    );
    assert_eq!(force.code, 200);
    assert!(server
        .get(&pods(), Some("fx-del"), "pod-bound")
        .unwrap_err()
        .is_not_found());
    assert_eq!(
        types(&events_after(&server, "/api/v1/pods", rv)),
        ["MODIFIED", "DELETED"]
    );
}

#[test]
fn pods_deleted_at_once_answer_the_pod_as_deleted() {
    let server = server();
    for (name, pod) in [
        ("delete-pod-bound-grace0", "pod-bound-grace0"),
        ("delete-pod-grace0-body", "pod-grace0"),
        ("delete-pod-unscheduled", "pod-default-grace"),
    ] {
        seed(&server, &pods(), name, |v| {
            undeleted(v);
            v["metadata"]["generation"] = json!(1);
        });
        let rv = server.resource_version();
        let answer = capture::replay(&server, name);
        Compare::new().assert(name, &answer);
        assert!(
            server.get(&pods(), Some("fx-del"), pod).is_err(),
            "{name}: gone"
        );
        let events = events_after(&server, "/api/v1/pods", rv);
        assert_eq!(types(&events), ["MODIFIED", "DELETED"], "{name}");
        assert!(events[1].1["metadata"]["deletionTimestamp"].is_string());
    }
}

#[test]
fn delete_preconditions_that_fail_answer_409_as_captured() {
    let server = server();
    let uid_cm = cm(&server, "fx-del", "cm-uid", json!({}));
    let uid = uid_cm["metadata"]["uid"].as_str().unwrap();
    let answer = capture::replay(&server, "status-409-delete-precondition-uid");
    Compare::new()
        .substitute(uid, "54e9ad86-c134-4330-a515-d4469703bc3e")
        .assert("status-409-delete-precondition-uid", &answer);

    let rv_cm = cm(&server, "fx-del", "cm-rv", json!({}));
    let answer = capture::replay(&server, "status-409-delete-precondition-rv");
    Compare::new()
        .substitute(&format!("record ({})", rv_of(&rv_cm)), "record (287)")
        .assert("status-409-delete-precondition-rv", &answer);
    assert!(server.get(&configmaps(), Some("fx-del"), "cm-rv").is_ok());

    // Preconditions that hold let the delete through.
    let body = json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": uid, "resourceVersion": rv_of(&uid_cm)}});
    let ok = send(
        &server,
        "DELETE",
        "/api/v1/namespaces/fx-del/configmaps/cm-uid",
        "application/json",
        &body.to_string(),
    );
    assert_eq!(ok.code, 200);
    assert!(server.get(&configmaps(), Some("fx-del"), "cm-uid").is_err());
}

#[test]
fn finalizers_hold_a_delete_until_an_update_removes_the_last_one() {
    let server = server();
    let path = "/api/v1/namespaces/lab/configmaps/held";
    server
        .create(&configmaps(), json!({"metadata": {"name": "held", "namespace": "lab", "finalizers": ["example.com/a", "example.com/b"]}}))
        .unwrap();
    let rv = server.resource_version();
    let del = send(&server, "DELETE", path, "", "");
    assert_eq!(del.code, 200);
    let marked = del.json();
    assert_eq!(marked["kind"], "ConfigMap", "the object, not a Status");
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 0);
    assert!(server.get(&configmaps(), Some("lab"), "held").is_ok());

    // Adding a finalizer now is refused like the real server refuses it.
    let add = send(
        &server,
        "PATCH",
        path,
        "application/merge-patch+json",
        r#"{"metadata":{"finalizers":["example.com/a","example.com/b","example.com/c"]}}"#,
    );
    assert_eq!(add.code, 422);
    let st = add.json();
    assert_eq!(st["reason"], "Invalid");
    assert_eq!(
        st["message"],
        "ConfigMap \"held\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"example.com/c\"}"
    );
    assert_eq!(st["details"]["causes"][0]["field"], "metadata.finalizers");

    // Removing one: still there; removing the last: gone, with a DELETED event.
    let one = send(
        &server,
        "PATCH",
        path,
        "application/merge-patch+json",
        r#"{"metadata":{"finalizers":["example.com/b"]}}"#,
    );
    assert_eq!(one.code, 200);
    assert!(server.get(&configmaps(), Some("lab"), "held").is_ok());
    let mut last = one.json();
    last["metadata"]["finalizers"] = json!([]);
    let put = send(&server, "PUT", path, "application/json", &last.to_string());
    assert_eq!(put.code, 200);
    assert!(server
        .get(&configmaps(), Some("lab"), "held")
        .unwrap_err()
        .is_not_found());
    assert_eq!(
        types(&events_after(&server, "/api/v1/configmaps", rv)),
        ["MODIFIED", "MODIFIED", "DELETED"]
    );
}

#[test]
fn deletecollection_answers_the_deleted_objects_as_they_were() {
    let server = server();
    let list = captured("deletecollection-configmaps");
    for item in list["items"].as_array().unwrap() {
        server.create(&configmaps(), item.clone()).unwrap();
    }
    cm(&server, "fx-del", "cm-keep", json!({"batch": "new"}));
    cm(&server, "other", "cm-elsewhere", json!({"batch": "old"}));
    let rv = server.resource_version();
    let answer = capture::replay(&server, "deletecollection-configmaps");
    Compare::new().assert("deletecollection-configmaps", &answer);
    let got = answer.json();
    let list_rv: u64 = rv_of(&got).parse().unwrap();
    assert!(
        list_rv > rv,
        "the list's version is the one after the deletions"
    );
    for item in got["items"].as_array().unwrap() {
        assert!(
            rv_of(item).parse::<u64>().unwrap() <= rv,
            "items as they were"
        );
    }
    let left: Vec<String> = server
        .list(&configmaps(), None)
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(left, ["cm-keep", "cm-elsewhere"]);
    assert_eq!(
        types(&events_after(&server, "/api/v1/configmaps", rv)),
        ["DELETED"; 3]
    );

    let none = capture::replay(&server, "deletecollection-no-match");
    Compare::new().assert("deletecollection-no-match", &none);

    let widgets_list = captured("deletecollection-custom-resources");
    for item in widgets_list["items"].as_array().unwrap() {
        server.create(&widgets(), item.clone()).unwrap();
    }
    let answer = capture::replay(&server, "deletecollection-custom-resources");
    Compare::new().assert("deletecollection-custom-resources", &answer);
}

// ---------------------------------------------------------------- subresources

#[test]
fn status_get_returns_the_whole_object() {
    let server = server();
    seed(&server, &pods(), "get-pod-status", |_| {});
    seed(&server, &widgets(), "get-widget-status", |_| {});
    for name in ["get-pod-status", "get-widget-status"] {
        let answer = capture::replay(&server, name);
        Compare::new().assert(name, &answer);
    }
}

/// The captured request body with the captured object's uid and resourceVersion replaced by
/// those of `ours` (both are preconditions of a PUT).
fn aimed_at(name: &str, ours: &Value) -> Vec<u8> {
    let req = capture::request(name);
    let theirs: Value = serde_json::from_slice(&req.body).unwrap();
    let mut body = String::from_utf8(req.body).unwrap();
    for f in ["uid", "resourceVersion"] {
        let (t, o) = (&theirs["metadata"][f], &ours["metadata"][f]);
        body = body.replace(&format!("\"{f}\":{t}"), &format!("\"{f}\":{o}"));
    }
    body.into_bytes()
}

#[test]
fn status_writes_change_only_status_and_main_writes_leave_it() {
    let server = server();
    let pod = seed(&server, &pods(), "get-pod-status", |_| {});
    let body = aimed_at("put-pod-status", &pod);
    let answer = capture::replay_with_body(&server, "put-pod-status", &body);
    Compare::new().assert("put-pod-status", &answer);

    let widget = seed(&server, &widgets(), "get-widget-status", |_| {});
    let body = aimed_at("put-widget-status", &widget);
    let answer = capture::replay_with_body(&server, "put-widget-status", &body);
    Compare::new().assert("put-widget-status", &answer);
    let answer = capture::replay(&server, "patch-widget-status-merge");
    Compare::new().assert("patch-widget-status-merge", &answer);

    // A write to the main resource leaves status as it was.
    let mut main = answer.json();
    main["status"] = json!({"ready": true, "other": 1});
    main["spec"]["size"] = json!(7);
    let put = send(
        &server,
        "PUT",
        "/apis/lab.example.com/v1/namespaces/fx-sub/widgets/w-status",
        "application/json",
        &main.to_string(),
    );
    assert_eq!(put.code, 200);
    assert_eq!(put.json()["status"], json!({"ready": false}));
    assert_eq!(put.json()["spec"]["size"], 7);
    assert_eq!(put.json()["metadata"]["generation"], 2);
}

#[test]
fn subresources_a_resource_does_not_serve_are_404() {
    let server = server();
    cm(&server, "lab", "c", json!({}));
    server
        .create(
            &widgets(),
            json!({"metadata": {"name": "w", "namespace": "lab"}}),
        )
        .unwrap();
    for path in [
        "/api/v1/namespaces/lab/configmaps/c/status",
        "/api/v1/namespaces/lab/configmaps/c/scale",
        "/apis/lab.example.com/v1/namespaces/lab/widgets/w/scale",
    ] {
        let r = send(&server, "GET", path, "", "");
        assert_eq!(r.code, 404, "{path}");
        assert_eq!(
            r.json()["message"],
            "the server could not find the requested resource"
        );
    }
    let pod = server
        .create(&pods(), common::pod("lab", "p", "Pending"))
        .unwrap();
    let r = send(
        &server,
        "DELETE",
        "/api/v1/namespaces/lab/pods/p/status",
        "",
        "",
    );
    assert_eq!(r.code, 405, "a subresource is not deleted");
    assert_eq!(server.get(&pods(), Some("lab"), "p").unwrap(), pod);
    let plain = ApiServer::builder().resource(&widgets()).start();
    plain
        .create(
            &widgets(),
            json!({"metadata": {"name": "w", "namespace": "lab"}}),
        )
        .unwrap();
    let r = send(
        &plain,
        "PUT",
        "/apis/lab.example.com/v1/namespaces/lab/widgets/w/status",
        "application/json",
        "{}",
    );
    assert_eq!(r.code, 404, "a CRD without the status subresource");
}

#[test]
fn scale_reads_and_writes_the_replicas_of_a_deployment() {
    let server = server();
    let dep = server
        .create(
            &deployments(),
            json!({"metadata": {"name": "web-scale", "namespace": "fx-sub", "labels": {"app": "web-scale"}},
                   "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web-scale"}},
                            "template": {"metadata": {"labels": {"app": "web-scale"}}, "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}}),
        )
        .unwrap();
    let get = capture::replay(&server, "get-deployment-scale");
    Compare::new().assert("get-deployment-scale", &get);
    assert_eq!(
        get.json()["metadata"]["uid"],
        dep["metadata"]["uid"],
        "the object's uid"
    );

    let body = aimed_at("put-deployment-scale", &dep);
    let put = capture::replay_with_body(&server, "put-deployment-scale", &body);
    Compare::new().assert("put-deployment-scale", &put);
    let stale = capture::replay(&server, "put-deployment-scale");
    assert_eq!(
        stale.code, 409,
        "a stale resourceVersion in the Scale conflicts"
    );
    assert_eq!(stale.json()["details"]["group"], "apps");

    let patch = capture::replay(&server, "patch-deployment-scale-merge");
    Compare::new().assert("patch-deployment-scale-merge", &patch);
    let stored = server
        .get(&deployments(), Some("fx-sub"), "web-scale")
        .unwrap();
    assert_eq!(stored["spec"]["replicas"], 5);
    assert_eq!(
        stored["metadata"]["generation"], 3,
        "each scale changed the spec"
    );
}

// ---------------------------------------------------------------- the comparer itself

#[test]
fn the_comparer_sees_every_kind_of_difference() {
    let same = capture::response("create-configmap-unknown-field-warn");
    assert!(Compare::new()
        .differences("create-configmap-unknown-field-warn", &same)
        .is_empty());

    let mut changed = same.clone();
    let mut body = changed.json();
    body["data"]["k"] = json!("other");
    body["metadata"]["uid"] = json!("any-uid-is-fine");
    body["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("namespace");
    body["extra"] = json!(1);
    changed.body = body.to_string().into_bytes();
    changed.headers.retain(|(k, _)| k != "warning");
    changed.code = 200;
    let diffs = Compare::new().differences("create-configmap-unknown-field-warn", &changed);
    let joined = diffs.join("\n");
    for want in [
        "status code",
        "warning headers",
        "data.k",
        "metadata.namespace: missing",
        "extra: unexpected",
    ] {
        assert!(joined.contains(want), "{want} not in:\n{joined}");
    }
    assert!(!joined.contains("uid"), "uids are volatile:\n{joined}");
    assert_eq!(diffs.len(), 5, "{joined}");

    let mut typed = same.clone();
    let mut body = typed.json();
    body["metadata"]["resourceVersion"] = json!(5);
    typed.body = body.to_string().into_bytes();
    let diffs = Compare::new().differences("create-configmap-unknown-field-warn", &typed);
    assert_eq!(
        diffs.len(),
        1,
        "a volatile value of another type is a difference: {diffs:?}"
    );
}

#[test]
fn a_custom_resource_declared_with_scale_serves_it_from_its_paths() {
    let paths = kube_informer::testing::ScaleSubresource {
        spec_replicas: "/spec/replicas".into(),
        status_replicas: "/status/replicas".into(),
        label_selector: Some("/status/selector".into()),
    };
    let server = ApiServer::builder()
        .subresources(
            &widgets(),
            Subresources::none().with_status().with_scale(paths),
        )
        .start();
    server
        .create(
            &widgets(),
            json!({"metadata": {"name": "w", "namespace": "lab"}, "spec": {"replicas": 2},
                   "status": {"replicas": 1, "selector": "app=w"}}),
        )
        .unwrap();
    let path = "/apis/lab.example.com/v1/namespaces/lab/widgets/w/scale";
    let get = send(&server, "GET", path, "", "");
    assert_eq!(get.code, 200);
    let scale = get.json();
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["spec"], json!({"replicas": 2}));
    assert_eq!(scale["status"], json!({"replicas": 1, "selector": "app=w"}));
    let patch = send(
        &server,
        "PATCH",
        path,
        "application/merge-patch+json",
        r#"{"spec":{"replicas":4}}"#,
    );
    assert_eq!(patch.code, 200);
    assert_eq!(patch.json()["spec"]["replicas"], 4);
    let stored = server.get(&widgets(), Some("lab"), "w").unwrap();
    assert_eq!(stored["spec"]["replicas"], 4);
    assert_eq!(
        stored["status"]["replicas"], 1,
        "scale writes leave status alone"
    );
    assert_eq!(stored["metadata"]["generation"], 2);
}

#[test]
fn rust_side_deletes_go_at_once_unless_finalizers_hold_them() {
    let server = server();
    server
        .create(
            &pods(),
            json!({"metadata": {"name": "p", "namespace": "lab"}, "spec": {"nodeName": "n1"}}),
        )
        .unwrap();
    server.delete(&pods(), Some("lab"), "p").unwrap();
    assert!(
        server.get(&pods(), Some("lab"), "p").is_err(),
        "grace 0 even for a bound pod"
    );
    server
        .create(
            &configmaps(),
            json!({"metadata": {"name": "c", "namespace": "lab", "finalizers": ["x"]}}),
        )
        .unwrap();
    let marked = server.delete(&configmaps(), Some("lab"), "c").unwrap();
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    let mut done = marked.clone();
    done["metadata"]["finalizers"] = json!([]);
    server.update(&configmaps(), done).unwrap();
    assert!(
        server.get(&configmaps(), Some("lab"), "c").is_err(),
        "the last finalizer removed"
    );
}

#[test]
fn deletecollection_takes_field_selectors_all_namespaces_and_dry_run() {
    let server = server();
    for (ns, name) in [("a", "x"), ("a", "y"), ("b", "x")] {
        cm(&server, ns, name, json!({}));
    }
    let rv = server.resource_version();
    let dry = send(&server, "DELETE", "/api/v1/configmaps?dryRun=All", "", "");
    assert_eq!(dry.code, 200);
    assert_eq!(dry.json()["items"].as_array().unwrap().len(), 3);
    assert_eq!(server.resource_version(), rv, "a dry run deletes nothing");

    let some = send(
        &server,
        "DELETE",
        "/api/v1/configmaps?fieldSelector=metadata.name%3Dx",
        "",
        "",
    );
    assert_eq!(some.code, 200);
    let names: Vec<String> = some.json()["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            format!(
                "{}/{}",
                o["metadata"]["namespace"].as_str().unwrap(),
                o["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(names, ["a/x", "b/x"]);
    assert_eq!(server.list(&configmaps(), None).len(), 1);

    let bad = send(
        &server,
        "DELETE",
        "/api/v1/configmaps?fieldSelector=spec.x%3D1",
        "",
        "",
    );
    assert_eq!(bad.code, 400);
    assert_eq!(
        server.list(&configmaps(), None).len(),
        1,
        "a refused selector deletes nothing"
    );
}

#[test]
fn subresource_writes_honour_dry_run_and_bad_input_is_a_status() {
    let server = server();
    let dep = server
        .create(&deployments(), json!({"metadata": {"name": "d", "namespace": "lab"}, "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}}}}))
        .unwrap();
    let rv = server.resource_version();
    let scale = send(
        &server,
        "PATCH",
        "/apis/apps/v1/namespaces/lab/deployments/d/scale?dryRun=All",
        "application/merge-patch+json",
        r#"{"spec":{"replicas":9}}"#,
    );
    assert_eq!(scale.code, 200);
    assert_eq!(scale.json()["spec"]["replicas"], 9);
    let status = send(
        &server,
        "PATCH",
        "/apis/apps/v1/namespaces/lab/deployments/d/status?dryRun=All",
        "application/merge-patch+json",
        r#"{"status":{"replicas":9}}"#,
    );
    assert_eq!(status.code, 200);
    assert_eq!(status.json()["status"]["replicas"], 9);
    assert_eq!(server.resource_version(), rv);
    assert_eq!(server.get(&deployments(), Some("lab"), "d").unwrap(), dep);

    for (method, target, ct, body) in [
        (
            "PUT",
            "/apis/apps/v1/namespaces/lab/deployments/d/scale",
            "application/json",
            "not json",
        ),
        (
            "DELETE",
            "/apis/apps/v1/namespaces/lab/deployments/d",
            "application/json",
            "{",
        ),
        (
            "DELETE",
            "/apis/apps/v1/namespaces/lab/deployments/d?gracePeriodSeconds=soon",
            "",
            "",
        ),
        (
            "DELETE",
            "/apis/apps/v1/namespaces/lab/deployments/d?propagationPolicy=Sideways",
            "",
            "",
        ),
        (
            "POST",
            "/api/v1/namespaces/lab/configmaps?dryRun=Some",
            "application/json",
            r#"{"metadata":{"name":"z"}}"#,
        ),
        (
            "POST",
            "/api/v1/namespaces/lab/configmaps?fieldValidation=Loose",
            "application/json",
            r#"{"metadata":{"name":"z"}}"#,
        ),
        (
            "POST",
            "/api/v1/namespaces/lab/configmaps",
            "application/json",
            "[1,2]",
        ),
    ] {
        let r = send(&server, method, target, ct, body);
        assert!(matches!(r.code, 400 | 422), "{method} {target}: {}", r.code);
        assert_eq!(r.json()["kind"], "Status", "{method} {target}");
    }
    assert_eq!(server.resource_version(), rv, "nothing bad was written");
}

#[test]
fn a_terminating_pod_without_finalizers_is_not_deleted_by_an_update() {
    let server = server();
    let mut body = common::pod("lab", "p", "Running");
    body["spec"]["nodeName"] = json!("n1");
    body["metadata"]["finalizers"] = json!(["example.com/x"]);
    server.create(&pods(), body).unwrap();
    let del = send(&server, "DELETE", "/api/v1/namespaces/lab/pods/p", "", "");
    assert_eq!(del.json()["metadata"]["deletionGracePeriodSeconds"], 30);
    // The finalizer comes off during the grace period: the pod stays Terminating.
    let patch = send(
        &server,
        "PATCH",
        "/api/v1/namespaces/lab/pods/p",
        "application/merge-patch+json",
        r#"{"metadata":{"finalizers":null}}"#,
    );
    assert_eq!(patch.code, 200);
    let left = server
        .get(&pods(), Some("lab"), "p")
        .expect("still Terminating");
    assert!(left["metadata"].get("finalizers").is_none());
    // A status update of a Terminating pod keeps it too.
    let status = send(
        &server,
        "PATCH",
        "/api/v1/namespaces/lab/pods/p/status",
        "application/merge-patch+json",
        r#"{"status":{"phase":"Succeeded"}}"#,
    );
    assert_eq!(status.code, 200);
    assert!(server.get(&pods(), Some("lab"), "p").is_ok());
}

#[test]
fn a_create_starts_the_status_of_a_resource_with_the_status_subresource_afresh() {
    let server = server();
    let w = send(
        &server,
        "POST",
        "/apis/lab.example.com/v1/namespaces/lab/widgets",
        "application/json",
        r#"{"apiVersion":"lab.example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":1},"status":{"ready":true}}"#,
    );
    assert_eq!(w.code, 201);
    assert!(
        w.json().get("status").is_none(),
        "a custom resource's status is dropped"
    );
    let p = send(
        &server,
        "POST",
        "/api/v1/namespaces/lab/pods",
        "application/json",
        &common::pod("lab", "p", "Running").to_string(),
    );
    assert_eq!(
        p.json()["status"],
        json!({"phase": "Pending", "qosClass": "BestEffort"})
    );
    let d = send(
        &server,
        "POST",
        "/apis/apps/v1/namespaces/lab/deployments",
        "application/json",
        r#"{"metadata":{"name":"d"},"spec":{"replicas":1},"status":{"replicas":3}}"#,
    );
    assert_eq!(d.json()["status"], json!({}));
    let c = send(
        &server,
        "POST",
        "/api/v1/namespaces/lab/configmaps",
        "application/json",
        r#"{"metadata":{"name":"c"},"data":{}}"#,
    );
    assert!(c.json().get("status").is_none());
    // Rust-side creates are fixtures: status as given.
    let fixture = server
        .create(&pods(), common::pod("lab", "q", "Running"))
        .unwrap();
    assert_eq!(fixture["status"]["phase"], "Running");
}

#[test]
fn lists_of_built_ins_carry_no_kind_on_items_and_custom_ones_do() {
    let server = server();
    server
        .create(
            &deployments(),
            json!({"metadata": {"name": "d", "namespace": "lab"}}),
        )
        .unwrap();
    server
        .create(
            &widgets(),
            json!({"metadata": {"name": "w", "namespace": "lab"}}),
        )
        .unwrap();
    // As `events-list-events-v1.json` shows for a built-in group other than the core one.
    let deps = send(
        &server,
        "GET",
        "/apis/apps/v1/namespaces/lab/deployments",
        "",
        "",
    )
    .json();
    assert_eq!(deps["kind"], "DeploymentList");
    assert!(deps["items"][0].get("kind").is_none());
    let ws = send(
        &server,
        "GET",
        "/apis/lab.example.com/v1/namespaces/lab/widgets",
        "",
        "",
    )
    .json();
    assert_eq!(ws["items"][0]["kind"], "Widget");
    assert_eq!(ws["items"][0]["apiVersion"], "lab.example.com/v1");
}

#[test]
fn an_informer_sees_a_finalized_object_marked_then_deleted() {
    use kube_informer::api::DynamicObject;
    use kube_informer::cache::{HandlerFns, InformerConfig, SharedIndexInformer};
    use kube_informer::{Api, Client};
    use std::sync::{Arc, Mutex};

    let server = server();
    server
        .create(&configmaps(), json!({"metadata": {"name": "held", "namespace": "lab", "finalizers": ["example.com/cleanup"]}}))
        .unwrap();
    let client = Client::new(server.client_config()).unwrap();
    let informer: SharedIndexInformer<DynamicObject> = SharedIndexInformer::new(
        Api::all_with(client, &configmaps()),
        InformerConfig::default(),
    );
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let (s1, s2) = (seen.clone(), seen.clone());
    informer
        .add_event_handler(
            HandlerFns::new()
                .on_update(move |_, new: Arc<DynamicObject>| {
                    let marked = new.metadata.deletion_timestamp.is_some();
                    s1.lock().unwrap().push(format!("update marked={marked}"));
                })
                .on_delete(move |_| s2.lock().unwrap().push("delete".into())),
        )
        .unwrap();
    informer.start().unwrap();
    assert!(informer.wait_for_cache_sync(common::PATIENCE));
    let lister = informer.lister();

    let path = "/api/v1/namespaces/lab/configmaps/held";
    assert_eq!(send(&server, "DELETE", path, "", "").code, 200);
    common::wait_until("the cache holds the marked object", || {
        lister
            .get(Some("lab"), "held")
            .is_some_and(|o| o.metadata.deletion_timestamp.is_some())
    });
    // What a controller does once it has cleaned up: take its finalizer off.
    let done = send(
        &server,
        "PATCH",
        path,
        "application/merge-patch+json",
        r#"{"metadata":{"finalizers":null}}"#,
    );
    assert_eq!(done.code, 200);
    common::wait_until("the cache drops it", || {
        lister.get(Some("lab"), "held").is_none()
    });
    common::wait_until("the handler is told", || seen.lock().unwrap().len() == 2);
    assert_eq!(*seen.lock().unwrap(), ["update marked=true", "delete"]);
    informer.stop();
}

#[test]
fn a_uid_in_an_update_is_a_precondition() {
    let server = server();
    let created = cm(&server, "lab", "c", json!({}));
    let mut body = created.clone();
    body["metadata"]["uid"] = json!("00000000-0000-0000-0000-000000000000");
    let put = send(
        &server,
        "PUT",
        "/api/v1/namespaces/lab/configmaps/c",
        "application/json",
        &body.to_string(),
    );
    assert_eq!(put.code, 409);
    let st = put.json();
    assert_eq!(st["reason"], "Conflict");
    assert_eq!(
        st["message"],
        format!(
            "Operation cannot be fulfilled on configmaps \"c\": StorageError: invalid object, Code: 4, Key: /registry/configmaps/lab/c, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: 00000000-0000-0000-0000-000000000000, UID in object meta: {}",
            created["metadata"]["uid"].as_str().unwrap()
        )
    );
    assert_eq!(
        server.get(&configmaps(), Some("lab"), "c").unwrap(),
        created
    );
}
