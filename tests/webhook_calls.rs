//! Admission webhooks as kube-apiserver v1.36.2 calls them, replayed from the captures in
//! `tests/fixtures/webhook-calls/` (see its README): for each capture a webhook over TLS
//! that answers as the capture's webhook did and records what it receives, the client's
//! request sent to `testing::ApiServer`, then the reviews the webhook got and the client's
//! answer compared to the capture.
//!
//! Normalised before comparing: uids, resourceVersions, creationTimestamps and managed
//! fields' times (volatile: present on both sides, any value); the webhook's port and the
//! sleeping hooks' `timeoutSeconds` (1 s here instead of 5 s, so the timeout cases take a
//! second);
//! the `uid` and `creationTimestamp` the real server gives the object it shows a validating
//! hook on a create, and the writer's entry in the managed fields of the object the hooks
//! see (the test server adds both when it stores the object, after admission; stated in the
//! testing docs).
#![cfg(feature = "webhook")]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use common::capture::{self, Compare};
use kube_informer::api::{ApiResource, UserInfo};
use kube_informer::serve::{Request, Response, Router, Server, TlsFiles};
use kube_informer::testing::{ApiServer, CA_PEM, SERVER_CERT_PEM, SERVER_KEY_PEM};
use kube_informer::webhook::{AdmissionHook, ConversionHook, Verdict};
use serde_json::{json, Value};

const TOKEN: &str = "lab-admin-token";
/// The timeout of the hooks that sleep past it (the captures' had 5 s and slept 6 s; here
/// 1 s and 2 s, so those cases take seconds); the others keep the captures' 5 s.
const TIMEOUT_SECS: u64 = 1;

fn timeout_of(path: &str) -> u64 {
    if path.starts_with("/sleep") {
        TIMEOUT_SECS
    } else {
        5
    }
}

/// One call the webhook received.
#[derive(Clone, Debug)]
struct Call {
    path: String,
    query: String,
    headers: Vec<(String, String)>,
    body: Value,
}

/// The capture's webhook (README: "Answers by path"), recording every call.
struct Webhook {
    server: Option<Server>,
    calls: Arc<Mutex<Vec<Call>>>,
    _dir: tempfile::TempDir,
}

fn allow(uid: &Value) -> Value {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "response": {"uid": uid, "allowed": true}})
}

/// The capture's conversion webhook (README: `/convert*`).
fn convert(path: &str, review: &Value) -> Value {
    let uid = &review["request"]["uid"];
    let desired = &review["request"]["desiredAPIVersion"];
    let poisoned = review["request"]["objects"].as_array().is_some_and(|os| {
        os.iter()
            .any(|o| !o["metadata"]["labels"]["poison"].is_null())
    });
    if path == "/convert-failure" || (path == "/convert-unless-poisoned" && poisoned) {
        return json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": uid, "result": {"status": "Failure",
                "message": "capture webhook cannot convert this object"}}});
    }
    let objects: Vec<Value> = review["request"]["objects"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut o| {
            o["apiVersion"] = desired.clone();
            match path {
                "/convert-label" => {
                    o["metadata"]["labels"]["converted-by"] = json!("capture-webhook");
                }
                "/convert-bad-name" => {
                    let renamed = format!("{}-renamed", o["metadata"]["name"].as_str().unwrap());
                    o["metadata"]["name"] = json!(renamed);
                }
                _ => {}
            }
            o
        })
        .collect();
    let uid = if path == "/convert-bad-uid" {
        json!("00000000-0000-0000-0000-000000000000")
    } else {
        uid.clone()
    };
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "response": {"uid": uid, "convertedObjects": objects, "result": {"status": "Success"}}})
}

fn answer(path: &str, review: &Value) -> Value {
    if review["kind"] == "ConversionReview" {
        return convert(path, review);
    }
    let uid = &review["request"]["uid"];
    let patch = base64::engine::general_purpose::STANDARD.encode(
        json!([{"op": "add", "path": "/metadata/labels/mutated-by", "value": "capture-webhook"}])
            .to_string(),
    );
    let mut a = allow(uid);
    let r = &mut a["response"];
    match path {
        "/mutate-patch" | "/validate-with-patch" => {
            r["patchType"] = json!("JSONPatch");
            r["patch"] = json!(patch);
        }
        "/bad-uid" => r["uid"] = json!("00000000-0000-0000-0000-000000000000"),
        "/mutate-patchtype-no-patch" => r["patchType"] = json!("JSONPatch"),
        "/no-apiversion" => {
            a.as_object_mut().unwrap().remove("apiVersion");
        }
        "/no-kind" => {
            a.as_object_mut().unwrap().remove("kind");
        }
        "/sleep6-fail" | "/sleep6-ignore" => {
            std::thread::sleep(Duration::from_secs(TIMEOUT_SECS + 1));
        }
        "/deny-403" => {
            r["allowed"] = json!(false);
            r["status"] = json!({"code": 403,
                "message": "capture webhook says no: label forbidden=yes is not allowed"});
        }
        "/deny-plain" => r["allowed"] = json!(false),
        "/deny-reason" => {
            r["allowed"] = json!(false);
            r["status"] = json!({"code": 422, "reason": "Invalid",
                "message": "capture webhook: data.key is invalid"});
        }
        "/allow-warnings" => {
            r["warnings"] = json!([
                "capture webhook warning one",
                "second warning, with \"quotes\""
            ]);
        }
        _ => {}
    }
    a
}

impl Webhook {
    fn start() -> Webhook {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tls.crt"), SERVER_CERT_PEM).unwrap();
        std::fs::write(dir.path().join("tls.key"), SERVER_KEY_PEM).unwrap();
        let calls = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&calls);
        let router = Router::new().subtree("/", move |req: &Request| {
            let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
            log.lock().unwrap().push(Call {
                path: req.path.clone(),
                query: req.query.clone(),
                headers: req.headers.clone(),
                body: body.clone(),
            });
            Response::json(200, &answer(&req.path, &body))
        });
        let server = Server::builder("capture-hook")
            .tls(TlsFiles::new(dir.path()))
            .bind("127.0.0.1:0", router)
            .unwrap();
        Webhook {
            server: Some(server),
            calls,
            _dir: dir,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.server.as_ref().unwrap().addr())
    }

    fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }
}

impl Drop for Webhook {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            s.stop();
        }
    }
}

fn load(name: &str) -> Value {
    let text = common::fixture(&format!("webhook-calls/{name}.json"));
    serde_json::from_slice(&text).unwrap()
}

fn review_request(call: &Value) -> &Value {
    &call["request"]["body"]["json"]["request"]
}

fn cms() -> ApiResource {
    ApiResource::new("", "v1", "ConfigMap", "configmaps", true)
}

/// The test server, with the lab's admin as the caller and the capture namespace.
fn lab() -> ApiServer {
    let server = ApiServer::builder()
        .user_info_token(
            TOKEN,
            UserInfo {
                username: "lab-admin".into(),
                uid: "lab-admin".into(),
                groups: vec!["system:masters".into(), "system:authenticated".into()],
                ..Default::default()
            },
        )
        .start();
    let ns = ApiResource::new("", "v1", "Namespace", "namespaces", false);
    server
        .create(
            &ns,
            json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "cap-webhook", "labels": {"capture": "true"}}}),
        )
        .unwrap();
    server
}

/// The objects the capture's request found: each review's `oldObject`, stored as it was
/// (managed fields included); the resourceVersion given to the last one.
fn seed(server: &ApiServer, capture: &Value) -> Option<String> {
    let mut rv = None;
    let mut seen = Vec::new();
    for call in capture["webhook_calls"].as_array().unwrap() {
        let old = &review_request(call)["oldObject"];
        let Some(name) = old.pointer("/metadata/name").and_then(Value::as_str) else {
            continue;
        };
        if seen.iter().any(|n| n == name) {
            continue;
        }
        seen.push(name.to_owned());
        let mut o = old.clone();
        let meta = o["metadata"].as_object_mut().unwrap();
        for k in ["uid", "resourceVersion", "creationTimestamp"] {
            meta.remove(k);
        }
        let stored = server.create(&cms(), o).unwrap();
        rv = stored["metadata"]["resourceVersion"]
            .as_str()
            .map(str::to_owned);
    }
    rv
}

/// One configuration per hook the capture called, in order, as the README registers them.
fn register(server: &ApiServer, hook: &Webhook, name: &str, capture: &Value) {
    let mut paths: Vec<String> = Vec::new();
    for call in capture["webhook_calls"].as_array().unwrap() {
        let p = call["webhook_path"].as_str().unwrap().to_owned();
        if !paths.contains(&p) {
            paths.push(p);
        }
    }
    let first = review_request(&capture["webhook_calls"][0]);
    let case = first
        .pointer("/object/metadata/labels/webhook-case")
        .or_else(|| first.pointer("/oldObject/metadata/labels/webhook-case"))
        .and_then(Value::as_str)
        .unwrap();
    let config = &capture["webhook_configuration"];
    for path in paths {
        let (mutating, hook_name, policy) = if config.is_object() {
            (
                config["kind"] == "MutatingWebhookConfiguration",
                format!("{name}.capture.example.com"),
                config["failurePolicy"].as_str().unwrap().to_owned(),
            )
        } else {
            let m = path.starts_with("/mutate");
            let role = if m { "mutate" } else { "validate" };
            (
                m,
                format!("{name}-{role}.capture.example.com"),
                "Fail".to_owned(),
            )
        };
        let (kind, plural) = if mutating {
            (
                "MutatingWebhookConfiguration",
                "mutatingwebhookconfigurations",
            )
        } else {
            (
                "ValidatingWebhookConfiguration",
                "validatingwebhookconfigurations",
            )
        };
        let ar = ApiResource::new("admissionregistration.k8s.io", "v1", kind, plural, false);
        let mut body = json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": format!("cap-{name}{}", path.replace('/', "-")),
                "labels": {"capture": "true"}},
            "webhooks": [{
                "name": hook_name,
                "clientConfig": {"url": hook.url(&path),
                    "caBundle": base64::engine::general_purpose::STANDARD.encode(CA_PEM)},
                "rules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE", "DELETE"],
                    "resources": ["configmaps"], "scope": "Namespaced"}],
                "namespaceSelector": {"matchLabels": {"capture": "true"}},
                "objectSelector": {"matchLabels": {"webhook-case": case}},
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "timeoutSeconds": timeout_of(&path),
                "failurePolicy": policy,
            }],
        });
        if mutating {
            body["webhooks"][0]["reinvocationPolicy"] = json!("Never");
        }
        server.create(&ar, body).unwrap();
    }
}

/// The capture's client request, sent to the test server (a PUT's resourceVersion is the
/// seeded object's).
fn send(server: &ApiServer, capture: &Value, rv: Option<&str>) -> capture::Response {
    let req = &capture["client"]["request"];
    let mut headers = vec![
        ("Authorization".to_owned(), format!("Bearer {TOKEN}")),
        ("Accept".to_owned(), "application/json".to_owned()),
        ("User-Agent".to_owned(), "capture.py".to_owned()),
    ];
    for (k, v) in req["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h[0].as_str().unwrap(), h[1].as_str().unwrap()))
    {
        if k.eq_ignore_ascii_case("content-type") {
            headers.push((k.to_owned(), v.to_owned()));
        }
    }
    let body = match (&req["body"]["json"], &req["body"]["text"]) {
        (Value::Null, Value::String(t)) => t.as_bytes().to_vec(),
        (Value::Null, _) => Vec::new(),
        (j, _) => {
            let mut j = j.clone();
            if let (Some(rv), true) = (rv, j.pointer("/metadata/resourceVersion").is_some()) {
                j["metadata"]["resourceVersion"] = json!(rv);
            }
            serde_json::to_vec(&j).unwrap()
        }
    };
    capture::send(
        server.addr(),
        &capture::Request {
            method: req["method"].as_str().unwrap().into(),
            target: req["path"].as_str().unwrap().into(),
            headers,
            body,
        },
    )
}

/// The rules of comparison (see the module docs).
fn rules(hook: &Webhook) -> Compare {
    let port = hook.url("");
    Compare::new()
        .substitute(&port, "https://127.0.0.1:18443")
        .substitute(&format!("?timeout={TIMEOUT_SECS}s"), "?timeout=5s")
}

/// Replays one capture; every difference, one line each.
fn replay(name: &str) -> Vec<String> {
    let capture = load(name);
    let server = lab();
    let rv = seed(&server, &capture);
    let hook = Webhook::start();
    register(&server, &hook, name, &capture);
    let answer = send(&server, &capture, rv.as_deref());
    let mut out = Vec::new();
    let calls = hook.calls();
    let want_calls = capture["webhook_calls"].as_array().unwrap();
    // The reviews' uids, quoted in messages, are the capture's.
    let mut compare = rules(&hook);
    for (got, want) in calls.iter().zip(want_calls) {
        if let (Some(ours), Some(theirs)) = (
            got.body.pointer("/request/uid").and_then(Value::as_str),
            review_request(want)["uid"].as_str(),
        ) {
            compare = compare.substitute(ours, theirs);
        }
    }

    // The client's answer: status, Warning headers, body.
    let want = &capture["client"]["response"];
    if want["status"].as_u64() != Some(u64::from(answer.code)) {
        out.push(format!(
            "client status: {} != {}",
            want["status"], answer.code
        ));
    }
    let want_warnings: Vec<&str> = want["headers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h[0].as_str().unwrap().eq_ignore_ascii_case("warning"))
        .map(|h| h[1].as_str().unwrap())
        .collect();
    let got_warnings: Vec<&str> = answer.all("warning");
    if want_warnings != got_warnings {
        out.push(format!(
            "Warning headers: {want_warnings:?} != {got_warnings:?}"
        ));
    }
    // The answer's object: its managed fields are the test server's own (tests/write_matrix
    // judges them), not this capture's subject.
    let answer_rules = compare
        .clone()
        .ignore("metadata.managedFields")
        .ignore("items.*.metadata.managedFields");
    for d in answer_rules.value_differences(&want["body_json"], &capture::body_json(&answer)) {
        out.push(format!("client body: {d}"));
    }

    // The reviews.
    if calls.len() != want_calls.len() {
        out.push(format!(
            "{} webhook calls, the capture has {}: {:?}",
            calls.len(),
            want_calls.len(),
            calls.iter().map(|c| &c.path).collect::<Vec<_>>()
        ));
    }
    for (i, (got, want)) in calls.iter().zip(want_calls).enumerate() {
        let w = &want["request"];
        if got.path != want["webhook_path"].as_str().unwrap() {
            out.push(format!(
                "call {i}: path {} != {}",
                got.path, want["webhook_path"]
            ));
        }
        if got.query != format!("timeout={}s", timeout_of(&got.path)) {
            out.push(format!("call {i}: query {:?}", got.query));
        }
        for h in ["user-agent", "accept", "content-type"] {
            let wanted = w["headers"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x[0].as_str().unwrap().eq_ignore_ascii_case(h))
                .and_then(|x| x[1].as_str());
            let have = got
                .headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(h))
                .map(|(_, v)| v.as_str());
            if wanted != have {
                out.push(format!("call {i}: header {h}: {wanted:?} != {have:?}"));
            }
        }
        if got.headers.iter().any(|(k, _)| k == "authorization") {
            out.push(format!("call {i}: sent an Authorization header"));
        }
        let mut review_rules = compare
            .clone()
            .volatile("request.uid")
            .volatile("request.options.fieldManager");
        // The writer's managed fields are recorded by the store, after admission: the hooks
        // see the object's managed fields as they were before the write (none on a create).
        review_rules = review_rules.ignore("request.object.metadata.managedFields");
        if w["body"]["json"]["request"]["operation"] == "CREATE" {
            // Named by the store after admission (see the module docs).
            review_rules = review_rules
                .ignore("request.object.metadata.uid")
                .ignore("request.object.metadata.creationTimestamp");
        }
        for d in review_rules.value_differences(&w["body"]["json"], &got.body) {
            out.push(format!("call {i} ({}): {d}", got.path));
        }
    }
    out
}

fn check(name: &str) {
    let diffs = replay(name);
    assert!(
        diffs.is_empty(),
        "{name}: the test server differs from kube-apiserver:\n  {}",
        diffs.join("\n  ")
    );
}

#[test]
fn writes_send_the_reviews_kube_apiserver_sends() {
    for name in [
        "admission-create",
        "admission-create-dryrun",
        "admission-update",
        "admission-patch-merge",
        "admission-delete",
        "admission-delete-dryrun-grace",
        "admission-mutating-jsonpatch",
    ] {
        check(name);
    }
}

#[test]
fn apply_is_admitted_as_a_create_or_an_update_with_its_field_manager() {
    check("admission-apply-create");
    check("admission-apply-update");
}

#[test]
fn a_collection_delete_is_one_review_per_object_without_a_name() {
    check("admission-deletecollection");
}

#[test]
fn bad_answers_are_refused_with_kube_apiservers_words() {
    for name in [
        "bad-wrong-uid",
        "bad-wrong-uid-ignore",
        "bad-missing-apiversion",
        "bad-missing-kind",
        "bad-validating-with-patch",
        "bad-mutating-patchtype-no-patch",
    ] {
        check(name);
    }
}

#[test]
fn denials_and_warnings_reach_the_client_as_captured() {
    for name in [
        "deny-403-message",
        "deny-403-mutating",
        "deny-422-reason",
        "deny-no-status",
        "allow-with-warnings",
    ] {
        check(name);
    }
}

#[test]
fn a_hook_that_times_out_fails_the_write_or_is_ignored_by_its_policy() {
    check("timeout-fail");
    check("timeout-ignore");
}

// Conversion (README: "Conversion webhook").

fn widgets(version: &str) -> ApiResource {
    ApiResource::new(
        "capture.example.com",
        version,
        "CvWidget",
        "cvwidgets",
        true,
    )
}

/// The test server with the capture's CRD, converting through `path` of `hook`, and the
/// capture's objects `w1`..`w3` stored at v1 (as the v2 LIST capture shows them).
fn converting(hook: &Webhook, path: &str) -> ApiServer {
    converting_with(hook, path, json!({}))
}

/// [`converting`] with `subresources` in both versions.
fn converting_with(hook: &Webhook, path: &str, subresources: Value) -> ApiServer {
    let mut schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"size": {"type": "integer"}, "color": {"type": "string"}}}}});
    if !subresources["status"].is_null() {
        schema["properties"]["status"] = json!({"type": "object",
            "properties": {"ready": {"type": "boolean"}}});
    }
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "cvwidgets.capture.example.com"},
        "spec": {"group": "capture.example.com", "scope": "Namespaced",
            "names": {"plural": "cvwidgets", "singular": "cvwidget", "kind": "CvWidget"},
            "conversion": {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
                "clientConfig": {"url": hook.url(path),
                    "caBundle": base64::engine::general_purpose::STANDARD.encode(CA_PEM)}}},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema},
                    "subresources": subresources},
                {"name": "v2", "served": true, "storage": false, "schema": {"openAPIV3Schema": schema},
                    "subresources": subresources}]}});
    let server = ApiServer::builder()
        .custom_resource_definition(&crd)
        .unwrap()
        .start();
    let list = load("conversion-list-v2");
    for item in list["client"]["response"]["body_json"]["items"]
        .as_array()
        .unwrap()
    {
        let mut o = item.clone();
        o["apiVersion"] = json!("capture.example.com/v1");
        let meta = o["metadata"].as_object_mut().unwrap();
        for k in ["uid", "resourceVersion", "creationTimestamp"] {
            meta.remove(k);
        }
        server.create(&widgets("v1"), o).unwrap();
    }
    server
}

fn get(server: &ApiServer, target: &str) -> capture::Response {
    capture::send_json(server.addr(), "GET", target, None, Vec::new())
}

const W1_V2: &str = "/apis/capture.example.com/v2/namespaces/cap-webhook/cvwidgets/w1";
const W1_V1: &str = "/apis/capture.example.com/v1/namespaces/cap-webhook/cvwidgets/w1";
const LIST_V2: &str = "/apis/capture.example.com/v2/namespaces/cap-webhook/cvwidgets";
const LIST_V1: &str = "/apis/capture.example.com/v1/namespaces/cap-webhook/cvwidgets";

/// The client's answer and the webhook's reviews against a conversion capture; `calls` the
/// reviews made for this request. A LIST capture's items are compared with ours by name.
fn conversion_differences(name: &str, answer: &capture::Response, calls: &[Call]) -> Vec<String> {
    let capture = load(name);
    let mut compare = Compare::new().volatile("request.uid");
    for (got, want) in calls
        .iter()
        .zip(capture["webhook_calls"].as_array().unwrap())
    {
        if let (Some(ours), Some(theirs)) = (
            got.body.pointer("/request/uid").and_then(Value::as_str),
            want["request"]["body"]["json"]["request"]["uid"].as_str(),
        ) {
            compare = compare.substitute(ours, theirs);
        }
    }
    let mut out = Vec::new();
    let want = &capture["client"]["response"];
    if want["status"].as_u64() != Some(u64::from(answer.code)) {
        out.push(format!("status {} != {}", want["status"], answer.code));
    }
    let retry = want["headers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h[0] == "Retry-After")
        .and_then(|h| h[1].as_str());
    if retry != answer.header("retry-after") {
        out.push(format!(
            "Retry-After {retry:?} != {:?}",
            answer.header("retry-after")
        ));
    }
    let mut want_body = want["body_json"].clone();
    let mut got_body = capture::body_json(answer);
    if want_body["kind"] == "CvWidgetList" {
        // The capture's list is at another resourceVersion, with the objects it held then.
        for b in [&mut want_body, &mut got_body] {
            b["metadata"]["resourceVersion"] = json!("");
        }
    }
    for d in compare.value_differences(&want_body, &got_body) {
        out.push(format!("client body: {d}"));
    }
    for (i, (got, want)) in calls
        .iter()
        .zip(capture["webhook_calls"].as_array().unwrap())
        .enumerate()
    {
        for d in compare.value_differences(&want["request"]["body"]["json"], &got.body) {
            out.push(format!("review {i}: {d}"));
        }
        if got.query != "timeout=30s" {
            out.push(format!("review {i}: query {:?}", got.query));
        }
    }
    out
}

fn assert_none(name: &str, diffs: Vec<String>) {
    assert!(
        diffs.is_empty(),
        "{name}: the test server differs from kube-apiserver:\n  {}",
        diffs.join("\n  ")
    );
}

#[test]
fn a_get_in_another_version_is_one_review_of_one_object() {
    let hook = Webhook::start();
    let server = converting(&hook, "/convert");
    let answer = get(&server, W1_V2);
    let calls = hook.calls();
    assert_eq!(calls.len(), 1, "one review per GET");
    assert_none(
        "conversion-get-v2",
        conversion_differences("conversion-get-v2", &answer, &calls),
    );
    let answer = get(&server, W1_V1);
    assert_eq!(
        hook.calls().len(),
        1,
        "the storage version needs no conversion"
    );
    assert_none(
        "conversion-get-v1",
        conversion_differences("conversion-get-v1", &answer, &[]),
    );
}

#[test]
fn lists_in_another_version_are_served_from_objects_converted_once() {
    let hook = Webhook::start();
    let server = converting(&hook, "/convert");
    let first = get(&server, LIST_V2);
    let calls = hook.calls();
    assert_eq!(calls.len(), 3, "w1..w3, once each");
    for c in &calls {
        assert_eq!(c.body["request"]["objects"].as_array().unwrap().len(), 1);
    }
    for target in [LIST_V2, &format!("{LIST_V2}?resourceVersion=0")] {
        let answer = get(&server, target);
        assert_none(
            "conversion-list-v2",
            conversion_differences("conversion-list-v2", &answer, &[]),
        );
    }
    assert_none(
        "conversion-list-v2",
        conversion_differences("conversion-list-v2", &first, &[]),
    );
    assert_eq!(hook.calls().len(), 3, "no review per list");

    // A changed object is converted again, alone.
    let mut w3 = server
        .get(&widgets("v1"), Some("cap-webhook"), "w3")
        .unwrap();
    w3["metadata"]["labels"]["touched"] = json!("yes");
    server.update(&widgets("v1"), w3).unwrap();
    let list = capture::body_json(&get(&server, LIST_V2));
    let calls = hook.calls();
    assert_eq!(calls.len(), 4);
    assert_eq!(
        calls[3].body["request"]["objects"][0]["metadata"]["name"],
        "w3"
    );
    assert_eq!(list["items"][2]["metadata"]["labels"]["touched"], "yes");
}

#[test]
fn a_converter_changing_labels_is_taken_one_changing_the_name_or_uid_or_failing_is_refused() {
    for (path, get_capture, list_capture) in [
        (
            "/convert-label",
            "conversion-changed-label-get",
            "conversion-changed-label-list",
        ),
        (
            "/convert-bad-name",
            "conversion-bad-name-get",
            "conversion-bad-name-list",
        ),
        (
            "/convert-bad-uid",
            "conversion-bad-uid-get",
            "conversion-bad-uid-list",
        ),
        (
            "/convert-failure",
            "conversion-failure-get",
            "conversion-failure-list",
        ),
    ] {
        let hook = Webhook::start();
        let server = converting(&hook, path);
        let answer = get(&server, W1_V2);
        assert_none(
            get_capture,
            conversion_differences(get_capture, &answer, &hook.calls()),
        );
        let before = hook.calls().len();
        let answer = get(&server, LIST_V2);
        let list_calls = hook.calls()[before..].to_vec();
        if path == "/convert-label" {
            // The capture's list holds w1..w5 (w3 labelled meanwhile): the converter's label
            // on each of ours is what it shows.
            assert_eq!(answer.code, 200);
            let items = capture::body_json(&answer)["items"]
                .as_array()
                .unwrap()
                .clone();
            assert_eq!(items.len(), 3);
            for item in items {
                assert_eq!(
                    item["metadata"]["labels"]["converted-by"],
                    "capture-webhook"
                );
                assert_eq!(item["metadata"]["labels"]["app"], "cv");
            }
            continue;
        }
        let mut diffs = conversion_differences(list_capture, &answer, &[]);
        if answer.code == 429 {
            // The message quotes the uid of the list's review (the capture's came from
            // its cache's background retries).
            let capture = load(list_capture);
            let want = capture["client"]["response"]["body_json"]["message"]
                .as_str()
                .unwrap();
            let got = capture::body_json(&answer)["message"]
                .as_str()
                .unwrap()
                .to_owned();
            let ours = list_calls[0].body["request"]["uid"].as_str().unwrap();
            let theirs = want
                .split("expected response.uid=\"")
                .nth(1)
                .and_then(|r| r.split('"').next());
            if let Some(theirs) = theirs {
                diffs.retain(|d| !d.starts_with("client body: message"));
                assert_eq!(got.replace(ours, theirs), want, "{list_capture}");
            }
        }
        assert_none(list_capture, diffs);
        if path == "/convert-failure" {
            let before = hook.calls().len();
            let answer = get(&server, W1_V1);
            assert_none(
                "conversion-failure-get-v1",
                conversion_differences("conversion-failure-get-v1", &answer, &[]),
            );
            // The capture's v1 list holds w1..w5: ours is whole and needs no review.
            let answer = get(&server, LIST_V1);
            assert_eq!(answer.code, 200);
            assert_eq!(
                capture::body_json(&answer)["items"]
                    .as_array()
                    .unwrap()
                    .len(),
                3
            );
            assert_eq!(
                hook.calls().len(),
                before,
                "the storage version is not converted"
            );
        }
    }
}

#[test]
fn a_create_in_another_version_is_converted_to_storage_and_back() {
    let hook = Webhook::start();
    let server = converting(&hook, "/convert");
    let capture = load("conversion-create-v2");
    let req = &capture["client"]["request"];
    let answer = capture::send_json(
        server.addr(),
        "POST",
        req["path"].as_str().unwrap(),
        Some("application/json"),
        serde_json::to_vec(&req["body"]["json"]).unwrap(),
    );
    let calls = hook.calls();
    // The capture's third review is the real server's cache taking the new object in;
    // here that happens at the next list.
    assert_eq!(calls.len(), 2);
    let mut diffs = conversion_differences("conversion-create-v2", &answer, &calls);
    // Our writer's managed fields entry (tests/write_matrix judges those).
    // The object a create converts to the storage version: the real server converts it
    // in its storage layer, after giving it a uid, creationTimestamp and generation; the
    // test server converts the request's body (stated in the testing docs).
    diffs.retain(|d| {
        !d.contains("managedFields")
            && !["uid", "creationTimestamp", "generation"].iter().any(|f| {
                d.starts_with(&format!(
                    "review 0: request.objects.0.metadata.{f}: missing"
                ))
            })
    });
    assert_none("conversion-create-v2", diffs);
}

#[test]
fn our_conversion_hook_takes_the_review_kube_apiserver_sends() {
    // The captured request carries an empty `response` stub (`convertedObjects: null`, a
    // `result` without `status`): a hook must read it as absent.
    let capture = load("conversion-get-v2");
    let sent = capture["webhook_calls"][0]["request"]["body"]["json"].clone();
    let hook =
        ConversionHook::new().convert("capture.example.com/v1", "capture.example.com/v2", Ok);
    let (code, body) = hook.review(serde_json::to_vec(&sent).unwrap().as_slice());
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(code, 200, "{answer}");
    assert_eq!(
        answer["response"]["result"]["status"], "Success",
        "{answer}"
    );
    assert_eq!(answer["response"]["uid"], sent["request"]["uid"]);
    assert_eq!(
        answer["response"]["convertedObjects"][0]["apiVersion"],
        "capture.example.com/v2"
    );
}

#[test]
fn our_admission_hooks_take_every_review_kube_apiserver_sent() {
    let validating = AdmissionHook::validating(|_| Verdict::allow());
    let mutating = AdmissionHook::mutating(|_, o: &mut Value| {
        o["metadata"]["labels"]["seen"] = json!("yes");
        Verdict::allow()
    });
    let mut reviews = 0;
    let mut names: Vec<String> = std::fs::read_dir(common::fixture_path("webhook-calls"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| !n.starts_with("conversion-") && n.ends_with(".json"))
        .collect();
    names.sort();
    for name in &names {
        let name = name.trim_end_matches(".json");
        if name.starts_with("get-") {
            continue;
        }
        for call in load(name)["webhook_calls"].as_array().unwrap() {
            let sent = serde_json::to_vec(&call["request"]["body"]["json"]).unwrap();
            let uid = &call["request"]["body"]["json"]["request"]["uid"];
            for hook in [&validating, &mutating] {
                let (code, body) = hook.review(&sent);
                let answer: Value = serde_json::from_slice(&body).unwrap();
                assert_eq!(code, 200, "{name}: {answer}");
                assert_eq!(answer["response"]["uid"], *uid, "{name}");
                assert_eq!(answer["response"]["allowed"], true, "{name}: {answer}");
            }
            reviews += 1;
        }
    }
    assert!(reviews >= 20, "{reviews} reviews");
}

#[test]
fn a_mutating_hooks_change_is_stored_and_attributed_to_no_manager() {
    // POST through the JSONPatch hook, then GET (get-after-mutating-jsonpatch.json): the
    // label is stored, the writer's managed fields do not list it.
    assert_none(
        "admission-mutating-jsonpatch",
        replay("admission-mutating-jsonpatch"),
    );
    let capture = load("admission-mutating-jsonpatch");
    let server = lab();
    let hook = Webhook::start();
    register(&server, &hook, "admission-mutating-jsonpatch", &capture);
    let created = send(&server, &capture, None);
    assert_eq!(created.code, 201);
    let got = get(
        &server,
        "/api/v1/namespaces/cap-webhook/configmaps/cm-mutated",
    );
    let want = &load("get-after-mutating-jsonpatch")["response"]["body_json"];
    let diffs = Compare::new().value_differences(want, &capture::body_json(&got));
    assert_none("get-after-mutating-jsonpatch", diffs);

    // The same through an apply and a merge patch: the hook's label is no manager's.
    let apply = capture::Request {
        method: "PATCH".into(),
        target: "/api/v1/namespaces/cap-webhook/configmaps/cm-applied?fieldManager=capture".into(),
        headers: vec![
            ("Authorization".into(), format!("Bearer {TOKEN}")),
            ("Content-Type".into(), "application/apply-patch+yaml".into()),
        ],
        body: b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-applied\n  namespace: cap-webhook\n  labels:\n    webhook-case: mutate\ndata:\n  k: applied\n".to_vec(),
    };
    let patch = capture::Request {
        method: "PATCH".into(),
        target: "/api/v1/namespaces/cap-webhook/configmaps/cm-applied".into(),
        headers: vec![
            ("Authorization".into(), format!("Bearer {TOKEN}")),
            ("Content-Type".into(), "application/merge-patch+json".into()),
            ("User-Agent".into(), "capture.py".into()),
        ],
        body: br#"{"data":{"k":"patched"}}"#.to_vec(),
    };
    for (req, code) in [(&apply, 201), (&patch, 200)] {
        let answer = capture::send(server.addr(), req);
        assert_eq!(
            answer.code,
            code,
            "{}",
            String::from_utf8_lossy(&answer.body)
        );
        let o = capture::body_json(&answer);
        assert_eq!(
            o["metadata"]["labels"]["mutated-by"], "capture-webhook",
            "{o}"
        );
        let fields = o["metadata"]["managedFields"].to_string();
        assert!(!fields.contains("mutated-by"), "{fields}");
        assert!(fields.contains("webhook-case"), "{fields}");
    }
}

/// What an informer's handler saw: (event, name, apiVersion, label `touched`).
type Seen = Arc<Mutex<Vec<(String, String, String, Option<String>)>>>;

fn v2_informer(
    server: &ApiServer,
) -> (
    kube_informer::cache::SharedIndexInformer<kube_informer::api::DynamicObject>,
    Seen,
) {
    use kube_informer::api::DynamicObject;
    use kube_informer::cache::{HandlerFns, SharedIndexInformer};
    let client = kube_informer::Client::new(server.client_config()).unwrap();
    let informer = SharedIndexInformer::new(
        kube_informer::Api::all_with(client, &widgets("v2")),
        common::fast_config(),
    );
    let seen: Seen = Arc::default();
    let note = |seen: &Seen, ty: &str, o: &DynamicObject| {
        let v = serde_json::to_value(o).unwrap();
        seen.lock().unwrap().push((
            ty.to_owned(),
            v["metadata"]["name"].as_str().unwrap_or("").to_owned(),
            v["apiVersion"].as_str().unwrap_or("").to_owned(),
            v["metadata"]["labels"]["touched"]
                .as_str()
                .map(str::to_owned),
        ));
    };
    let (a, u, d) = (seen.clone(), seen.clone(), seen.clone());
    informer
        .add_event_handler(
            HandlerFns::new()
                .on_add(move |o: Arc<DynamicObject>, _| note(&a, "ADDED", &o))
                .on_update(move |_, o: Arc<DynamicObject>| note(&u, "MODIFIED", &o))
                .on_delete(move |o| match o {
                    // A tombstone would mean the watch missed the event: recorded as such.
                    kube_informer::cache::DeletedObject::Object(o) => note(&d, "DELETED", &o),
                    _ => d.lock().unwrap().push((
                        "TOMBSTONE".into(),
                        String::new(),
                        String::new(),
                        None,
                    )),
                }),
        )
        .unwrap();
    informer.start().unwrap();
    assert!(informer.wait_for_cache_sync(common::PATIENCE));
    (informer, seen)
}

/// Reviews of `name` the webhook got so far.
fn reviews_of(hook: &Webhook, name: &str) -> usize {
    hook.calls()
        .iter()
        .filter(|c| c.body["request"]["objects"][0]["metadata"]["name"] == name)
        .count()
}

#[test]
fn informers_on_another_version_sync_and_see_converted_events_one_review_per_version() {
    let hook = Webhook::start();
    let server = converting(&hook, "/convert");
    let (first, seen1) = v2_informer(&server);
    let (second, seen2) = v2_informer(&server);
    for seen in [&seen1, &seen2] {
        common::wait_until("the three objects delivered", || {
            seen.lock().unwrap().len() >= 3
        });
        let s = seen.lock().unwrap().clone();
        assert_eq!(s.len(), 3, "{s:?}");
        assert!(s
            .iter()
            .all(|(ty, _, v, _)| ty == "ADDED" && v == "capture.example.com/v2"));
    }
    assert_eq!(
        hook.calls().len(),
        3,
        "w1..w3 once each, for both informers"
    );

    let v1 = widgets("v1");
    let mut w3 = server.get(&v1, Some("cap-webhook"), "w3").unwrap();
    w3["metadata"]["labels"]["touched"] = json!("yes");
    server.update(&v1, w3).unwrap();
    let mut w4 = server.get(&v1, Some("cap-webhook"), "w2").unwrap();
    let meta = w4["metadata"].as_object_mut().unwrap();
    for k in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "managedFields",
    ] {
        meta.remove(k);
    }
    meta.insert("name".into(), json!("w4"));
    server.create(&v1, w4).unwrap();
    server.delete(&v1, Some("cap-webhook"), "w1").unwrap();

    for seen in [&seen1, &seen2] {
        common::wait_until("the modification, addition and deletion in v2", || {
            seen.lock().unwrap().len() >= 6
        });
        let s = seen.lock().unwrap()[3..].to_vec();
        let v2 = "capture.example.com/v2".to_owned();
        assert_eq!(
            s,
            vec![
                (
                    "MODIFIED".into(),
                    "w3".into(),
                    v2.clone(),
                    Some("yes".into())
                ),
                ("ADDED".into(), "w4".into(), v2.clone(), None),
                ("DELETED".into(), "w1".into(), v2.clone(), None),
            ]
        );
    }
    // One review per object version, whatever the number of watchers.
    assert_eq!(reviews_of(&hook, "w3"), 2);
    assert_eq!(reviews_of(&hook, "w4"), 1);
    assert_eq!(
        reviews_of(&hook, "w1"),
        2,
        "its state at deletion is a new version"
    );
    for c in hook.calls() {
        assert_eq!(c.body["request"]["objects"].as_array().unwrap().len(), 1);
        assert_eq!(
            c.body["request"]["desiredAPIVersion"],
            "capture.example.com/v2"
        );
    }
    first.stop();
    second.stop();
}

#[test]
fn a_watch_in_another_version_converts_objects_not_bookmarks_and_ends_at_an_object_it_cannot_convert(
) {
    let hook = Webhook::start();
    let server = converting(&hook, "/convert-unless-poisoned");
    let list = capture::body_json(&get(&server, LIST_V1));
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let v1 = widgets("v1");
    let mut ok = list["items"][0].clone();
    let meta = ok["metadata"].as_object_mut().unwrap();
    for k in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "managedFields",
    ] {
        meta.remove(k);
    }
    meta.insert("name".into(), json!("fine"));
    server.create(&v1, ok.clone()).unwrap();
    ok["metadata"]["name"] = json!("poisoned");
    ok["metadata"]["labels"]["poison"] = json!("yes");
    server.create(&v1, ok.clone()).unwrap();
    ok["metadata"]["name"] = json!("never-sent");
    ok["metadata"]["labels"] = json!({});
    server.create(&v1, ok).unwrap();

    // Longer than the client's patience: only an ended stream lets this return.
    let answer = get(
        &server,
        &format!("{LIST_V2}?watch=1&resourceVersion={rv}&timeoutSeconds=600"),
    );
    assert_eq!(answer.code, 200);
    let lines: Vec<Value> = String::from_utf8(answer.body)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["type"], "ADDED");
    assert_eq!(lines[0]["object"]["apiVersion"], "capture.example.com/v2");
    assert_eq!(lines[0]["object"]["kind"], "CvWidget");
    assert_eq!(lines[0]["object"]["metadata"]["name"], "fine");
    assert_eq!(reviews_of(&hook, "never-sent"), 0);
    // The version's cache is re-initializing: the next watch is refused (no reconnect
    // storm), until the object that cannot be converted is gone.
    let again = get(&server, &format!("{LIST_V2}?watch=1&resourceVersion={rv}"));
    assert_eq!(again.code, 429, "{}", String::from_utf8_lossy(&again.body));
    assert!(again
        .headers
        .iter()
        .any(|(k, v)| k == "retry-after" && v == "1"));
    let refused = capture::body_json(&again);
    assert!(refused["message"]
        .as_str()
        .unwrap()
        .starts_with("storage is (re)initializing: failed to list capture.example.com/v2, Kind=CvWidget: conversion webhook for capture.example.com/v1, Kind=CvWidget failed: capture webhook cannot convert this object"), "{refused}");
    server.delete(&v1, Some("cap-webhook"), "poisoned").unwrap();
    let now = capture::body_json(&get(&server, LIST_V1))["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let answer = get(
        &server,
        &format!("{LIST_V2}?watch=1&resourceVersion={now}&timeoutSeconds=1"),
    );
    assert_eq!(answer.code, 200, "rebuilt once it converts again");

    // A bookmark is not converted: only its resourceVersion, in the version watched.
    let answer = get(
        &server,
        &format!("{LIST_V2}?watch=1&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1&labelSelector=none%3Dnone"),
    );
    let text = String::from_utf8(answer.body).unwrap();
    let bookmark: Value = serde_json::from_str(text.lines().last().unwrap_or("null")).unwrap();
    assert_eq!(bookmark["type"], "BOOKMARK", "{text}");
    assert_eq!(bookmark["object"]["apiVersion"], "capture.example.com/v2");
    assert_eq!(
        {
            let mut keys: Vec<&String> = bookmark["object"]["metadata"]
                .as_object()
                .unwrap()
                .keys()
                .collect();
            keys.sort();
            keys
        },
        vec!["annotations", "resourceVersion"]
    );
    assert_eq!(
        bookmark["object"].as_object().unwrap().len(),
        3,
        "{bookmark}"
    );
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn lists_in_another_version_page_and_select_on_the_converted_objects() {
    let hook = Webhook::start();
    let server = converting(&hook, "/convert-label");
    // The converter's label selects in v2, not in v1 where it is not stored.
    let by_label = "labelSelector=converted-by%3Dcapture-webhook";
    let v2 = capture::body_json(&get(&server, &format!("{LIST_V2}?{by_label}")));
    assert_eq!(names(&v2), ["w1", "w2", "w3"], "{v2}");
    let v1 = capture::body_json(&get(&server, &format!("{LIST_V1}?{by_label}")));
    assert_eq!(names(&v1), Vec::<String>::new());
    let none = capture::body_json(&get(
        &server,
        &format!("{LIST_V2}?labelSelector=converted-by%21%3Dcapture-webhook"),
    ));
    assert_eq!(names(&none), Vec::<String>::new());
    let w2 = capture::body_json(&get(
        &server,
        &format!("{LIST_V2}?fieldSelector=metadata.name%3Dw2"),
    ));
    assert_eq!(names(&w2), ["w2"]);
    assert_eq!(
        hook.calls().len(),
        3,
        "selectors read the objects converted once"
    );

    // Pages, the second read at the first's version although w3 changed in between.
    let first = capture::body_json(&get(&server, &format!("{LIST_V2}?limit=2")));
    assert_eq!(names(&first), ["w1", "w2"]);
    assert_eq!(first["metadata"]["remainingItemCount"], 1);
    let token = first["metadata"]["continue"].as_str().unwrap().to_owned();
    assert!(!token.is_empty());
    let v1r = widgets("v1");
    let mut w3 = server.get(&v1r, Some("cap-webhook"), "w3").unwrap();
    w3["metadata"]["labels"]["touched"] = json!("yes");
    server.update(&v1r, w3).unwrap();
    let second = capture::body_json(&get(
        &server,
        &format!("{LIST_V2}?limit=2&continue={token}"),
    ));
    assert_eq!(names(&second), ["w3"], "{second}");
    assert_eq!(second["metadata"]["continue"], "");
    assert_eq!(
        second["metadata"]["resourceVersion"],
        first["metadata"]["resourceVersion"]
    );
    assert!(second["items"][0]["metadata"]["labels"]["touched"].is_null());
    assert_eq!(second["items"][0]["apiVersion"], "capture.example.com/v2");
    assert_eq!(
        second["items"][0]["metadata"]["labels"]["converted-by"],
        "capture-webhook"
    );
    // A selector and a limit: the page fills with matches only.
    let sel = capture::body_json(&get(
        &server,
        &format!("{LIST_V2}?limit=1&labelSelector=touched%3Dyes"),
    ));
    assert_eq!(names(&sel), ["w3"]);
    assert!(sel["metadata"]["remainingItemCount"].is_null());
}

#[test]
fn a_list_in_another_version_at_an_exact_version_pages_as_captured() {
    let hook = Webhook::start();
    let server = converting(&hook, "/convert");
    let at = capture::body_json(&get(&server, LIST_V2))["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let v1 = widgets("v1");
    server.delete(&v1, Some("cap-webhook"), "w1").unwrap();
    // As `conversion-list-v2-exact-rv-limit`: the state at that version, two of them.
    let page = capture::body_json(&get(
        &server,
        &format!("{LIST_V2}?resourceVersion={at}&resourceVersionMatch=Exact&limit=2"),
    ));
    assert_eq!(names(&page), ["w1", "w2"], "{page}");
    assert_eq!(page["metadata"]["resourceVersion"], at.as_str());
    assert_eq!(page["metadata"]["remainingItemCount"], 1);
    // `resourceVersion=0` is the cache's whole list: the limit is ignored.
    let whole = capture::body_json(&get(
        &server,
        &format!("{LIST_V2}?resourceVersion=0&limit=1"),
    ));
    assert_eq!(names(&whole), ["w2", "w3"]);
    assert_eq!(whole["metadata"]["continue"], "");
}

#[test]
fn a_patch_in_another_version_is_applied_to_the_converted_object_and_stored_converted_back() {
    let hook = Webhook::start();
    let server = converting(&hook, "/convert");
    let w3 = format!("{LIST_V2}/w3");
    let patch = |ct: &str, body: Value| {
        capture::send_json(
            server.addr(),
            "PATCH",
            &w3,
            Some(ct),
            body.to_string().into_bytes(),
        )
    };
    let answer = patch(
        "application/merge-patch+json",
        json!({"metadata": {"labels": {"touched": "yes"}}, "spec": {"color": "blue"}}),
    );
    assert_eq!(answer.code, 200);
    let body = capture::body_json(&answer);
    assert_eq!(body["apiVersion"], "capture.example.com/v2");
    assert_eq!(body["metadata"]["labels"]["touched"], "yes");
    assert_eq!(body["spec"]["color"], "blue");
    let stored = server
        .get(&widgets("v1"), Some("cap-webhook"), "w3")
        .unwrap();
    assert_eq!(stored["metadata"]["labels"]["touched"], "yes");
    assert_eq!(stored["spec"]["color"], "blue");
    assert_eq!(
        stored["metadata"]["resourceVersion"],
        body["metadata"]["resourceVersion"]
    );
    let desired: Vec<Value> = hook
        .calls()
        .iter()
        .map(|c| c.body["request"]["desiredAPIVersion"].clone())
        .collect();
    assert_eq!(
        desired,
        [
            "capture.example.com/v2",
            "capture.example.com/v1",
            "capture.example.com/v2"
        ],
        "read, stored, answered"
    );

    // A JSON patch tests the converted object; a stale resourceVersion is a conflict.
    let answer = patch(
        "application/json-patch+json",
        json!([{"op": "test", "path": "/apiVersion", "value": "capture.example.com/v2"},
            {"op": "replace", "path": "/spec/size", "value": 9}]),
    );
    assert_eq!(
        answer.code,
        200,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    assert_eq!(capture::body_json(&answer)["spec"]["size"], 9);
    let answer = patch(
        "application/merge-patch+json",
        json!({"metadata": {"resourceVersion": "1"}, "spec": {"size": 1}}),
    );
    assert_eq!(
        answer.code,
        409,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    let answer = patch(
        "application/strategic-merge-patch+json",
        json!({"spec": {"size": 1}}),
    );
    assert_eq!(answer.code, 415);
    let answer = patch("application/merge-patch+json", json!({"spec": {"size": 1}}));
    let missing = capture::send_json(
        server.addr(),
        "PATCH",
        &format!("{LIST_V2}/nope"),
        Some("application/merge-patch+json"),
        b"{}".to_vec(),
    );
    assert_eq!(answer.code, 200);
    assert_eq!(missing.code, 404);
    assert_eq!(
        server
            .get(&widgets("v1"), Some("cap-webhook"), "w3")
            .unwrap()["spec"]["size"],
        1
    );
}

#[test]
fn status_in_another_version_is_converted_as_the_object_is() {
    let hook = Webhook::start();
    let plain = converting(&hook, "/convert");
    let no_status = get(&plain, &format!("{W1_V2}/status"));
    assert_eq!(no_status.code, 404, "the CRD has no status subresource");
    assert!(hook.calls().is_empty());

    let server = converting_with(&hook, "/convert", json!({"status": {}}));
    let status_url = format!("{W1_V2}/status");
    let answer = get(&server, &status_url);
    assert_eq!(answer.code, 200);
    assert_eq!(
        capture::body_json(&answer)["apiVersion"],
        "capture.example.com/v2"
    );
    let answer = capture::send_json(
        server.addr(),
        "PATCH",
        &status_url,
        Some("application/merge-patch+json"),
        json!({"status": {"ready": true}, "spec": {"size": 99}})
            .to_string()
            .into_bytes(),
    );
    assert_eq!(
        answer.code,
        200,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    let body = capture::body_json(&answer);
    assert_eq!(body["apiVersion"], "capture.example.com/v2");
    let stored = server
        .get(&widgets("v1"), Some("cap-webhook"), "w1")
        .unwrap();
    assert_eq!(stored["status"]["ready"], true, "{stored}");
    assert_ne!(stored["spec"]["size"], 99, "a status write keeps the spec");
    // An update of /status in v2: the body converted to v1, the spec again kept.
    let mut o = body.clone();
    o["status"]["ready"] = json!(false);
    o["spec"]["size"] = json!(98);
    let answer = capture::send_json(
        server.addr(),
        "PUT",
        &status_url,
        Some("application/json"),
        o.to_string().into_bytes(),
    );
    assert_eq!(
        answer.code,
        200,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    let stored = server
        .get(&widgets("v1"), Some("cap-webhook"), "w1")
        .unwrap();
    assert_eq!(stored["status"]["ready"], false);
    assert_ne!(stored["spec"]["size"], 98);
    // /scale is not imitated in another version: said so.
    assert_eq!(get(&server, &format!("{W1_V2}/scale")).code, 405);
}
