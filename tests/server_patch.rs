//! `testing::ApiServer` answers PATCH like kube-apiserver v1.36.2: every captured JSON patch,
//! merge patch, strategic merge patch and server-side apply of `tests/fixtures` is sent over
//! real HTTP and the answer compared with the capture field by field (see
//! `tests/common/capture.rs`), managed fields included.
//!
//! Each test first stores the object as it was before the captured request (the capture's
//! answer with the request's change undone). The `time` of managed fields entries is not
//! compared, but their ORDER is, and the server orders entries by time: a seeded entry that
//! the capture lists after the write's own entry (same second, sorted by name) is given a
//! time in the future, so the order does not depend on the clock.

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

fn namespaces() -> ApiResource {
    ApiResource::new("", "v1", "Namespace", "namespaces", false)
}

/// After any time the server stamps: puts a seeded entry after the write's own.
const LATER: &str = "2999-01-01T00:00:00Z";

fn server() -> ApiServer {
    ApiServer::builder()
        .resource(&configmaps())
        .resource(&deployments())
        .resource(&pods())
        .resource(&namespaces())
        .subresources(&widgets(), Subresources::none().with_status())
        .start()
}

fn captured(name: &str) -> Value {
    serde_json::from_slice(&fixture(&format!("{name}.json"))).unwrap()
}

fn entry(manager: &str, api_version: &str, time: &str, fields: Value) -> Value {
    json!({"manager": manager, "operation": "Update", "apiVersion": api_version, "time": time,
           "fieldsType": "FieldsV1", "fieldsV1": fields})
}

fn replay(server: &ApiServer, name: &str) {
    let answer = capture::replay(server, name);
    Compare::new().assert(name, &answer);
}

fn get(server: &ApiServer, ar: &ApiResource, ns: &str, name: &str) -> Value {
    server.get(ar, Some(ns), name).expect("object exists")
}

// ---------------------------------------------------------------- JSON patch, merge patch

/// cm-patch as kubectl created it, before `json-patch-configmap`.
fn seed_cm_patch(server: &ApiServer) {
    server
        .create(
            &configmaps(),
            json!({"metadata": {"name": "cm-patch", "namespace": "fx-writes",
                "managedFields": [entry("kubectl-create", "v1", LATER,
                    json!({"f:data": {".": {}, "f:color": {}, "f:size": {}}}))]},
                "data": {"color": "red", "size": "1"}}),
        )
        .unwrap();
}

#[test]
fn json_patch_answers_as_captured() {
    let server = server();
    seed_cm_patch(&server);
    // test + replace + add + remove; kubectl-create keeps only `data` itself.
    replay(&server, "json-patch-configmap");
    let before = get(&server, &configmaps(), "fx-writes", "cm-patch");
    // A failing `test`, an `add` under a missing parent: the generic 422, nothing changed.
    replay(&server, "status-422-json-patch-test-failed");
    replay(&server, "status-422-json-patch-missing-parent");
    assert_eq!(get(&server, &configmaps(), "fx-writes", "cm-patch"), before);
    // `replace` of a missing key adds it.
    replay(&server, "json-patch-replace-missing-key");
    replay(&server, "status-400-json-patch-not-array");
    replay(&server, "status-404-json-patch-missing");
}

#[test]
fn merge_patch_answers_as_captured() {
    let server = server();
    seed_cm_patch(&server);
    capture::replay(&server, "json-patch-configmap");
    capture::replay(&server, "json-patch-replace-missing-key");
    replay(&server, "merge-patch-configmap");
    replay(&server, "status-404-merge-patch-missing");
    replay(&server, "status-415-patch-application-json");

    server
        .create(
            &widgets(),
            json!({"apiVersion": "lab.example.com/v1", "kind": "Widget",
                "metadata": {"name": "w1", "namespace": "fx-writes", "generation": 1,
                "managedFields": [entry("kubectl-create", "lab.example.com/v1",
                    "2026-11-23T04:37:38Z", json!({"f:spec": {".": {}, "f:color": {}, "f:size": {}}}))]},
                "spec": {"color": "red", "size": 1}}),
        )
        .unwrap();
    replay(&server, "merge-patch-custom-resource");
    replay(&server, "status-415-strategic-merge-patch-custom-resource");
}

// ---------------------------------------------------------------- strategic merge patch

#[test]
fn strategic_merge_patch_of_a_deployment_then_a_merge_patch_answer_as_captured() {
    let server = server();
    // Before the patch: no `extra` container, the sidecar's old image, another toleration,
    // all of it kubectl-create's.
    let mut web = captured("strategic-merge-patch-deployment");
    web["metadata"]["generation"] = json!(1);
    let spec = &mut web["spec"]["template"]["spec"];
    spec["containers"].as_array_mut().unwrap().truncate(2);
    spec["containers"][1]["image"] = json!("registry.k8s.io/busybox:1.36");
    spec["tolerations"] =
        json!([{"key": "node.example.com/a", "operator": "Exists", "effect": "NoSchedule"}]);
    let mf = &mut web["metadata"]["managedFields"];
    mf.as_array_mut().unwrap().truncate(1);
    let pod_fields = &mut mf[0]["fieldsV1"]["f:spec"]["f:template"]["f:spec"];
    pod_fields["f:containers"]["k:{\"name\":\"sidecar\"}"]["f:image"] = json!({});
    pod_fields["f:tolerations"] = json!({});
    server.create(&deployments(), web).unwrap();

    // Containers merged by name (the sidecar's image changed, `extra` appended, with the
    // defaults of a container), the tolerations replaced.
    replay(&server, "strategic-merge-patch-deployment");
    // A merge patch replaces the whole list: kubectl-create loses its containers.
    replay(&server, "merge-patch-deployment-replaces-list");
}

#[test]
fn strategic_merge_patch_of_a_pod_and_of_its_status_answer_as_captured() {
    let server = server();
    let mut pod = captured("strategic-merge-patch-pod");
    pod["metadata"]["generation"] = json!(1);
    pod["metadata"]["labels"] = json!({"app": "smp"});
    pod["spec"]["containers"][1]["image"] = json!("registry.k8s.io/busybox:1.36");
    let mf = &mut pod["metadata"]["managedFields"];
    mf.as_array_mut().unwrap().truncate(1);
    mf[0]["fieldsV1"]["f:spec"]["f:containers"]["k:{\"name\":\"sidecar\"}"]["f:image"] = json!({});
    server.create(&pods(), pod).unwrap();
    replay(&server, "strategic-merge-patch-pod");

    // Conditions are merged by type; the new one goes first.
    let mut pod = captured("patch-pod-status-strategic");
    pod["status"]["conditions"]
        .as_array_mut()
        .unwrap()
        .remove(0);
    let status_fields = &mut pod["metadata"]["managedFields"][1]["fieldsV1"]["f:status"];
    status_fields["f:conditions"]
        .as_object_mut()
        .unwrap()
        .remove("k:{\"type\":\"PodScheduled\"}");
    server.create(&pods(), pod).unwrap();
    replay(&server, "patch-pod-status-strategic");
}

// ---------------------------------------------------------------- server-side apply

#[test]
fn server_side_apply_answers_as_captured() {
    let server = server();
    server
        .create(&namespaces(), json!({"metadata": {"name": "fx-writes"}}))
        .unwrap();
    replay(&server, "status-422-apply-no-fieldmanager");
    // Created by apply: 201 and one Apply entry.
    replay(&server, "apply-create-configmap");
    replay(&server, "apply-update-configmap");
    // bob sets alice's color: a conflict; forced, color moves to bob.
    replay(&server, "status-409-apply-conflict");
    replay(&server, "apply-force-configmap");
    replay(&server, "status-400-apply-name-mismatch");
    replay(&server, "status-404-apply-missing-namespace");
    replay(&server, "status-500-apply-unknown-field-strict");
    replay(&server, "status-500-apply-unknown-field-default");
    replay(&server, "apply-create-custom-resource");
}

#[test]
fn server_side_apply_of_status_answers_as_captured() {
    let server = server();
    let mut w = captured("apply-widget-status");
    w["status"]["ready"] = json!(false);
    let mf = w["metadata"]["managedFields"].as_array_mut().unwrap();
    mf.remove(0);
    mf[1]["fieldsV1"] = json!({"f:status": {".": {}, "f:ready": {}}});
    server.create(&widgets(), w).unwrap();
    replay(&server, "apply-widget-status");

    // Through the main resource, `status` is not applied (the resource serves /status).
    let main = send(
        &server,
        "PATCH",
        "/apis/lab.example.com/v1/namespaces/fx-sub/widgets/w-status?fieldManager=tool",
        "application/apply-patch+yaml",
        "apiVersion: lab.example.com/v1\nkind: Widget\nmetadata: {name: w-status}\nspec: {color: red}\nstatus: {ready: false}\n",
    );
    assert_eq!(main.code, 200, "{}", String::from_utf8_lossy(&main.body));
    let v = main.json();
    assert_eq!(v["status"], json!({"ready": true}));
    let tool = managers(&v).into_iter().find(|m| m.0 == "tool").unwrap();
    assert_eq!(tool.2, json!({"f:spec": {"f:color": {}}}));
}

// ---------------------------------------------------------------- managers meet

fn send(server: &ApiServer, method: &str, target: &str, ct: &str, body: &str) -> capture::Response {
    capture::send(
        server.addr(),
        &capture::Request {
            method: method.into(),
            target: target.into(),
            headers: vec![
                ("Accept".into(), "application/json".into()),
                ("Content-Type".into(), ct.into()),
                ("User-Agent".into(), "patcher/2.0 (tests)".into()),
            ],
            body: body.as_bytes().to_vec(),
        },
    )
}

fn managers(v: &Value) -> Vec<(String, String, Value)> {
    v["metadata"]["managedFields"]
        .as_array()
        .map(|l| {
            l.iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap().to_owned(),
                        e["operation"].as_str().unwrap().to_owned(),
                        e["fieldsV1"].clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn apply_conflicts_with_fields_other_writes_changed() {
    let server = server();
    let cms = "/api/v1/namespaces/default/configmaps";
    let created = send(
        &server,
        "POST",
        &format!("{cms}?fieldManager=installer"),
        "application/json",
        r#"{"metadata":{"name":"cm"},"data":{"a":"1","b":"2"}}"#,
    );
    assert_eq!(created.code, 201);
    assert_eq!(
        managers(&created.json()),
        vec![(
            "installer".into(),
            "Update".into(),
            json!({"f:data": {".": {}, "f:a": {}, "f:b": {}}})
        )]
    );

    // alice applies `a` with the value it has: shared, no conflict; then `b` changed: conflict.
    let apply = |body: &str, query: &str| {
        send(
            &server,
            "PATCH",
            &format!("{cms}/cm?fieldManager=alice{query}"),
            "application/apply-patch+yaml",
            body,
        )
    };
    assert_eq!(
        apply("metadata: {name: cm}\ndata: {a: '1'}\n", "").code,
        200
    );
    let refused = apply("metadata: {name: cm}\ndata: {a: '1', b: '3'}\n", "");
    assert_eq!(refused.code, 409);
    let st = refused.json();
    // An Update manager is named with its apiVersion and time.
    let message = st["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "Apply failed with 1 conflict: conflict with \"installer\" using v1 at 20"
        ) && message.ends_with("Z: .data.b"),
        "{message}"
    );
    assert_eq!(st["details"]["causes"][0]["field"], ".data.b");
    assert_eq!(st["details"]["causes"][0]["reason"], "FieldManagerConflict");

    // A merge patch (manager from the User-Agent) changes `a`: alice and installer lose it.
    let patched = send(
        &server,
        "PATCH",
        &format!("{cms}/cm"),
        "application/merge-patch+json",
        r#"{"data":{"a":"9"}}"#,
    );
    assert_eq!(patched.code, 200);
    let m = managers(&patched.json());
    assert_eq!(m.len(), 2, "{m:?}");
    assert_eq!(
        m[0],
        (
            "installer".into(),
            "Update".into(),
            json!({"f:data": {".": {}, "f:b": {}}})
        )
    );
    assert_eq!(
        m[1],
        (
            "patcher".into(),
            "Update".into(),
            json!({"f:data": {"f:a": {}}})
        )
    );

    // Forced, alice takes both; the field she stops naming later goes (nobody else owns it).
    let forced = apply(
        "metadata: {name: cm}\ndata: {a: '1', b: '3'}\n",
        "&force=true",
    );
    assert_eq!(forced.code, 200);
    assert_eq!(forced.json()["data"], json!({"a": "1", "b": "3"}));
    let m = managers(&forced.json());
    assert_eq!(
        m[0],
        (
            "alice".into(),
            "Apply".into(),
            json!({"f:data": {"f:a": {}, "f:b": {}}})
        )
    );
    let dropped = apply("metadata: {name: cm}\ndata: {a: '1'}\n", "");
    assert_eq!(dropped.code, 200);
    assert_eq!(dropped.json()["data"], json!({"a": "1"}));

    // Two conflicts are counted, and each has its cause.
    assert_eq!(
        apply("metadata: {name: cm}\ndata: {a: '1', b: '3'}\n", "").code,
        200
    );
    let two = send(
        &server,
        "PATCH",
        &format!("{cms}/cm?fieldManager=bob"),
        "application/apply-patch+yaml",
        "metadata: {name: cm}\ndata: {a: x, b: y}\n",
    );
    assert_eq!(two.code, 409);
    let st = two.json();
    assert_eq!(
        st["message"],
        "Apply failed with 2 conflicts: conflicts with \"alice\":\n- .data.a\n- .data.b"
    );
    let fields: Vec<&str> = st["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, [".data.a", ".data.b"]);
}

#[test]
fn json_patch_operations_over_http() {
    let server = server();
    server
        .create(
            &configmaps(),
            json!({"metadata": {"name": "ops", "namespace": "default",
                "annotations": {"example.com/owner": "a", "t~x": "1"}},
                "data": {"list": "x"}}),
        )
        .unwrap();
    let answer = send(
        &server,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/ops",
        "application/json-patch+json",
        r#"[{"op":"test","path":"/metadata/annotations/example.com~1owner","value":"a"},
            {"op":"copy","from":"/data/list","path":"/data/copy"},
            {"op":"move","from":"/metadata/annotations/t~0x","path":"/data/moved"},
            {"op":"add","path":"/metadata/finalizers","value":["a"]},
            {"op":"add","path":"/metadata/finalizers/-","value":"b"},
            {"op":"remove","path":"/metadata/finalizers/0"}]"#,
    );
    assert_eq!(
        answer.code,
        200,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    let v = answer.json();
    assert_eq!(v["data"], json!({"list": "x", "copy": "x", "moved": "1"}));
    assert_eq!(
        v["metadata"]["annotations"],
        json!({"example.com/owner": "a"})
    );
    assert_eq!(v["metadata"]["finalizers"], json!(["b"]));
}

#[test]
fn dry_run_apply_and_patches_change_nothing() {
    let server = server();
    let cm = "/api/v1/namespaces/default/configmaps/dry";
    let rv = server.resource_version();
    let created = send(
        &server,
        "PATCH",
        &format!("{cm}?fieldManager=alice&dryRun=All"),
        "application/apply-patch+yaml",
        "metadata: {name: dry}\ndata: {a: '1'}\n",
    );
    assert_eq!(
        created.code,
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    assert_eq!(created.json()["data"], json!({"a": "1"}));
    assert!(server
        .get(&configmaps(), Some("default"), "dry")
        .unwrap_err()
        .is_not_found());
    assert_eq!(server.resource_version(), rv);

    server
        .create(
            &configmaps(),
            json!({"metadata": {"name": "dry", "namespace": "default"}, "data": {"a": "1"}}),
        )
        .unwrap();
    let before = get(&server, &configmaps(), "default", "dry");
    for (ct, body) in [
        (
            "application/apply-patch+yaml",
            "metadata: {name: dry}\ndata: {a: '2'}\n",
        ),
        (
            "application/json-patch+json",
            r#"[{"op":"replace","path":"/data/a","value":"2"}]"#,
        ),
        ("application/merge-patch+json", r#"{"data":{"a":"2"}}"#),
        (
            "application/strategic-merge-patch+json",
            r#"{"data":{"a":"2"}}"#,
        ),
    ] {
        let answer = send(
            &server,
            "PATCH",
            &format!("{cm}?fieldManager=bob&dryRun=All"),
            ct,
            body,
        );
        assert_eq!(
            answer.code,
            200,
            "{ct}: {}",
            String::from_utf8_lossy(&answer.body)
        );
        assert_eq!(answer.json()["data"], json!({"a": "2"}), "{ct}");
        assert_eq!(
            get(&server, &configmaps(), "default", "dry"),
            before,
            "{ct}"
        );
    }
}

#[test]
fn json_patch_of_status_changes_only_status_and_records_the_subresource() {
    let server = server();
    server
        .create(
            &pods(),
            json!({"metadata": {"name": "p", "namespace": "default"},
                   "spec": {"containers": [{"name": "app", "image": "x:1"}]},
                   "status": {"phase": "Pending"}}),
        )
        .unwrap();
    let answer = send(
        &server,
        "PATCH",
        "/api/v1/namespaces/default/pods/p/status?fieldManager=kubelet",
        "application/json-patch+json",
        r#"[{"op":"replace","path":"/status/phase","value":"Running"},
            {"op":"replace","path":"/spec/containers/0/image","value":"x:2"}]"#,
    );
    assert_eq!(
        answer.code,
        200,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    let v = answer.json();
    assert_eq!(v["status"]["phase"], "Running");
    assert_eq!(v["spec"]["containers"][0]["image"], "x:1");
    let entry = &v["metadata"]["managedFields"][0];
    assert_eq!(entry["manager"], "kubelet");
    assert_eq!(entry["subresource"], "status");
    assert_eq!(entry["fieldsV1"], json!({"f:status": {"f:phase": {}}}));
}
