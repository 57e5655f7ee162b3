//! `testing::ApiServer` checks a custom resource's values as kube-apiserver v1.36.2 does:
//! the `values` and `combinators` groups of `tests/fixtures/crd-matrix.json` (described in
//! the crd-matrix section of the semantics README) replayed over real loopback HTTP.
//!
//! Each group runs on a fresh server where the matrix's `checks` CRD is created through the
//! API, as the capture did. Every step's answer (code, kind, Status reason, message, details
//! and causes, or the object), its `Warning` headers and the target as a GET sees it
//! afterwards are summarised with the capture's symbolic rules and compared. Causes are
//! compared as a multiset and a message listing several causes with its list sorted: the
//! real server reports schema errors in Go map order.

mod common;

use std::net::SocketAddr;

use common::capture::{self, Request, Response};
use common::PATIENCE;
use kube_informer::testing::ApiServer;
use serde_json::{json, Map, Value};

const NS: &str = "crd-values";

fn matrix() -> Value {
    serde_json::from_slice(&common::fixture("crd-matrix.json")).expect("crd-matrix.json is JSON")
}

fn send(addr: SocketAddr, method: &str, target: &str, ct: Option<&str>, body: Vec<u8>) -> Response {
    let mut headers = vec![
        ("Accept".to_owned(), "application/json".to_owned()),
        (
            "User-Agent".to_owned(),
            "kube-informer-semantics/1".to_owned(),
        ),
    ];
    if let Some(ct) = ct {
        headers.push(("Content-Type".to_owned(), ct.to_owned()));
    }
    capture::send(
        addr,
        &Request {
            method: method.into(),
            target: target.into(),
            headers,
            body,
        },
    )
}

fn json_of(r: &Response) -> Value {
    serde_json::from_slice(&r.body).unwrap_or(Value::Null)
}

/// A fresh server with the CRD `name` of the matrix created through the API and served.
fn server(m: &Value, crd: &str) -> ApiServer {
    let server = ApiServer::builder().start();
    let def = m["crds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["metadata"]["name"] == crd)
        .expect("the CRD is in the matrix");
    let r = send(
        server.addr(),
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        Some("application/json"),
        serde_json::to_vec(def).unwrap(),
    );
    assert_eq!(r.code, 201, "{}", String::from_utf8_lossy(&r.body));
    let plural = def["spec"]["names"]["plural"].as_str().unwrap();
    let group = def["spec"]["group"].as_str().unwrap();
    let list = format!("/apis/{group}/v1/namespaces/{NS}/{plural}");
    let deadline = std::time::Instant::now() + PATIENCE;
    while send(server.addr(), "GET", &list, None, Vec::new()).code != 200 {
        assert!(std::time::Instant::now() < deadline, "{crd} never served");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    server
}

fn fill(v: &Value, rv: &str) -> Value {
    match v {
        Value::String(s) if s == "$RV" => rv.into(),
        Value::String(s) => s.replace("$NS", NS).into(),
        Value::Array(a) => a.iter().map(|x| fill(x, rv)).collect(),
        Value::Object(o) => o.iter().map(|(k, x)| (k.clone(), fill(x, rv))).collect(),
        other => other.clone(),
    }
}

/// `X "n" is invalid: [a, b]` with its list sorted (split at each `, `: the same fragments
/// on both sides whatever the order the causes came in).
fn sorted_message(m: &str) -> String {
    match (m.find(": ["), m.ends_with(']')) {
        (Some(i), true) => {
            let mut parts: Vec<&str> = m[i + 3..m.len() - 1].split(", ").collect();
            parts.sort_unstable();
            format!("{}: [{}]", &m[..i], parts.join(", "))
        }
        _ => m.to_owned(),
    }
}

fn sorted_causes(c: &Value) -> Vec<Value> {
    let mut v: Vec<Value> = c.as_array().cloned().unwrap_or_default();
    v.sort_by_key(|x| x.to_string());
    v
}

/// An answer summarised as the capture summarises it.
fn summarise(r: &Response, before: Option<&Value>) -> Value {
    let body = json_of(r);
    let kind = body["kind"].clone();
    if kind == "Status" {
        let d = &body["details"];
        let causes: Vec<Value> = d["causes"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|c| json!([c["reason"], c["field"], c["message"]]))
                    .collect()
            })
            .unwrap_or_default();
        let mut details = Map::new();
        for k in ["name", "group", "kind"] {
            if let Some(v) = d.get(k) {
                details.insert(k.into(), v.clone());
            }
        }
        return json!({
            "code": r.code, "kind": kind, "status": body["status"], "reason": body["reason"],
            "message": sorted_message(body["message"].as_str().unwrap_or("")),
            "details": details, "causes": sorted_causes(&Value::from(causes)),
        });
    }
    let mut obj = body.clone();
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        let old = before.map(|b| &b["metadata"]);
        if meta.contains_key("uid") {
            meta.insert("uid".into(), "<uid>".into());
        }
        if meta.contains_key("creationTimestamp") {
            meta.insert("creationTimestamp".into(), "<time>".into());
        }
        if meta.contains_key("namespace") {
            meta.insert("namespace".into(), "$NS".into());
        }
        let rv_word = match (
            old.map(|o| &o["resourceVersion"]),
            meta.get("resourceVersion"),
        ) {
            (_, None) => "none",
            (None, Some(_)) => "new",
            (Some(a), Some(b)) if a == b => "same",
            (Some(_), Some(_)) => "changed",
        };
        meta.insert("resourceVersion".into(), rv_word.into());
        if let Some(g) = meta.get("generation").and_then(Value::as_i64) {
            let word = match old.and_then(|o| o["generation"].as_i64()) {
                None => format!("={g}"),
                Some(b) => format!("+{}", g - b),
            };
            meta.insert("generation".into(), word.into());
        }
        if let Some(mf) = meta.get("managedFields").and_then(Value::as_array) {
            let mut v: Vec<Value> = mf
                .iter()
                .map(|e| {
                    json!([
                        e["manager"].as_str().unwrap_or(""),
                        e["operation"].as_str().unwrap_or(""),
                        e["subresource"].as_str().unwrap_or("")
                    ])
                })
                .collect();
            v.sort_by_key(|x| x.to_string());
            meta.insert("managedFields".into(), v.into());
        }
    }
    json!({"code": r.code, "kind": kind, "object": obj})
}

/// The capture's answer in the same shape (message and causes sorted).
fn expected(a: &Value) -> Value {
    if a["kind"] == "Status" {
        let mut a = a.clone();
        let m = sorted_message(a["message"].as_str().unwrap_or(""));
        a["message"] = m.into();
        a["causes"] = sorted_causes(&a["causes"]).into();
        return a;
    }
    if let Some(o) = a.get("object") {
        let mut o = o.clone();
        if let Some(mf) = o.pointer_mut("/metadata/managedFields") {
            let mut v = mf.as_array().cloned().unwrap_or_default();
            v.sort_by_key(|x| x.to_string());
            *mf = v.into();
        }
        return json!({"code": a["code"], "kind": a["kind"], "object": o});
    }
    a.clone()
}

fn warnings(r: &Response) -> Vec<String> {
    r.all("warning")
        .iter()
        .map(|w| {
            let t = w.strip_prefix("299 - ").unwrap_or(w);
            serde_json::from_str::<String>(t).unwrap_or_else(|_| t.to_owned())
        })
        .collect()
}

/// Replays the steps of `group`; returns the differences, one line each, and how many
/// steps agreed.
fn replay(group: &str) -> (usize, usize, Vec<String>) {
    let m = matrix();
    let server = server(&m, "checks.matrix.capture.example.com");
    let addr = server.addr();
    let mut diffs = Vec::new();
    let (mut total, mut agreed) = (0, 0);
    for step in m["steps"].as_array().unwrap() {
        if step["group"] != group {
            continue;
        }
        total += 1;
        let id = step["id"].as_str().unwrap();
        let target = step["target"].as_str().map(|t| t.replace("$NS", NS));
        let before = target.as_ref().and_then(|t| {
            let r = send(addr, "GET", t, None, Vec::new());
            (r.code == 200).then(|| json_of(&r))
        });
        let rv = before
            .as_ref()
            .and_then(|b| b["metadata"]["resourceVersion"].as_str())
            .unwrap_or("")
            .to_owned();
        let mut path = step["path"].as_str().unwrap().replace("$NS", NS);
        if let Some(q) = step["query"].as_str().filter(|q| !q.is_empty()) {
            path = format!("{path}?{q}");
        }
        let body = match (step.get("bodyText"), step.get("body")) {
            (Some(Value::String(t)), _) => t.replace("$NS", NS).into_bytes(),
            (_, Some(b)) if !b.is_null() => serde_json::to_vec(&fill(b, &rv)).unwrap(),
            _ => Vec::new(),
        };
        let ct = step["contentType"].as_str().filter(|c| !c.is_empty());
        let r = send(addr, step["method"].as_str().unwrap(), &path, ct, body);
        let mut mine = Vec::new();
        let got = summarise(&r, before.as_ref());
        let want = expected(&step["answer"]);
        if got != want {
            mine.push(format!(
                "{group}/{id}: answer\n   got  {got}\n   want {want}"
            ));
        }
        let w = warnings(&r);
        if Value::from(w.clone()) != step["warnings"] {
            mine.push(format!(
                "{group}/{id}: warnings {w:?} != {}",
                step["warnings"]
            ));
        }
        if let Some(t) = &target {
            let a = send(addr, "GET", t, None, Vec::new());
            let got = summarise(&a, before.as_ref());
            let want = expected(&step["after"]);
            if got != want {
                mine.push(format!(
                    "{group}/{id}: after\n   got  {got}\n   want {want}"
                ));
            }
        }
        if mine.is_empty() {
            agreed += 1;
        }
        diffs.extend(mine);
    }
    (agreed, total, diffs)
}

fn check(group: &str, steps: usize) {
    let (agreed, total, diffs) = replay(group);
    eprintln!("{group}: {agreed}/{total} steps agree");
    assert_eq!(total, steps, "the fixture's {group} group");
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

#[test]
fn values_group_matches_kube_apiserver() {
    check("values", 29);
}

#[test]
fn combinators_group_matches_kube_apiserver() {
    check("combinators", 11);
}

/// Hostile schemas and values: a pattern too big to compile, formats fed multi-byte and
/// malformed text, a deeply nested `anyOf`. Every write is answered (a 201 or a 422 naming
/// the field), and the server keeps serving.
#[test]
fn hostile_patterns_and_values_are_answered() {
    let mut m = matrix();
    let crd = m["crds"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|c| c["metadata"]["name"] == "checks.matrix.capture.example.com")
        .unwrap();
    let spec = crd
        .pointer_mut("/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties")
        .unwrap();
    spec["huge"] = json!({"type": "string", "pattern": "(a{1000}){1000}"});
    let mut nested = json!({"maxLength": 1});
    for _ in 0..12 {
        nested = json!({"anyOf": [{"pattern": "^z"}, nested]});
    }
    spec["deep"] = json!({"type": "string", "allOf": [nested]});
    let server = server(&m, "checks.matrix.capture.example.com");
    let path = format!("/apis/matrix.capture.example.com/v1/namespaces/{NS}/checks");
    let odd = [
        "é",
        "2024-01-0é",
        "é@é",
        "::é",
        "\u{0}",
        "<>",
        "a\u{300}b",
        "ééééééééééééééé",
    ];
    let fields = [
        "huge", "when", "day", "blob", "email", "uid", "ip", "host", "name", "deep",
    ];
    for (i, f) in fields.iter().enumerate() {
        for (j, v) in odd.iter().enumerate() {
            let body = json!({"apiVersion": "matrix.capture.example.com/v1", "kind": "Check",
                "metadata": {"name": format!("h-{i}-{j}")}, "spec": {*f: v}});
            let r = send(
                server.addr(),
                "POST",
                &path,
                Some("application/json"),
                serde_json::to_vec(&body).unwrap(),
            );
            let answer = json_of(&r);
            match r.code {
                201 => assert_eq!(answer["spec"][*f], json!(v)),
                422 => {
                    let causes = answer["details"]["causes"].as_array().unwrap();
                    assert!(
                        causes.iter().any(|c| c["field"] == format!("spec.{f}")),
                        "{f}={v:?}: {answer}"
                    );
                }
                code => panic!("{f}={v:?}: {code} {answer}"),
            }
        }
    }
    // A value of the wrong type under the nested combinators is refused, not looped on.
    let body = json!({"apiVersion": "matrix.capture.example.com/v1", "kind": "Check",
        "metadata": {"name": "deep-bool"}, "spec": {"deep": true}});
    let r = send(
        server.addr(),
        "POST",
        &path,
        Some("application/json"),
        serde_json::to_vec(&body).unwrap(),
    );
    assert_eq!(r.code, 422, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        send(server.addr(), "GET", &path, None, Vec::new()).code,
        200
    );
}
