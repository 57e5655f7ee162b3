//! The test server against kube-apiserver's resourceVersion table: every list and watch of
//! `tests/fixtures/semantics/rv-matrix.json` (captured from kube-apiserver 1.36.2 on etcd
//! 3.6.8; see `tests/fixtures/semantics/README.md`) replayed on `testing::ApiServer` in the
//! same three phases — warm, restarted with etcd kept, compacted and restarted — and compared
//! answer by answer. The versions of the capture are symbols (A, B, NOW, FUTURE): the replay
//! maps its own versions to them the same way.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use kube_informer::api::DynamicObject;
use kube_informer::testing::ApiServer;
use kube_informer::{Api, Client, DeleteParams, ListParams, Patch, PatchParams};
use serde_json::{json, Value};

const NS: &str = "sem";

/// Entries whose answer differs from the capture on purpose, with the reason. Empty: the
/// test server answers every entry as kube-apiserver did.
const DIFFERENT_ON_PURPOSE: &[(&str, &str)] = &[];

/// The replay's versions, to write answers with the capture's symbols.
struct Versions {
    a: u64,
    b: u64,
}

impl Versions {
    fn future(&self) -> u64 {
        self.b + 100_000
    }

    /// The request's value for a symbol of the matrix.
    fn param(&self, symbol: &str) -> String {
        match symbol {
            "A" => self.a.to_string(),
            "B" => self.b.to_string(),
            "FUTURE" => self.future().to_string(),
            other => other.to_owned(),
        }
    }

    /// The symbol of a version the server answered.
    fn symbol(&self, rv: &str) -> String {
        match rv.parse::<u64>() {
            Ok(v) if v == self.a => "A".into(),
            Ok(v) if v == self.b => "B".into(),
            Ok(v) if v > self.b && v < self.future() => "NOW".into(),
            _ => "OTHER".into(),
        }
    }
}

/// Digits folded, so "current: 220" and "current: 57" compare equal.
fn fold_digits(s: &str) -> String {
    let mut out = String::new();
    let mut in_number = false;
    for c in s.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('N');
            }
            in_number = true;
        } else {
            out.push(c);
            in_number = false;
        }
    }
    out
}

fn query(entry: &Value, v: &Versions) -> Vec<(String, String)> {
    let text = |k: &str| entry[k].as_str().unwrap_or("").to_owned();
    let mut q = Vec::new();
    let rv = text("resourceVersion");
    if entry["op"] == "watch" {
        q.push(("watch".into(), "1".into()));
        q.push(("allowWatchBookmarks".into(), "true".into()));
        q.push(("timeoutSeconds".into(), "1".into()));
        if !rv.is_empty() {
            q.push(("resourceVersion".into(), v.param(&rv)));
        }
        if entry["sendInitialEvents"] == true {
            q.push(("sendInitialEvents".into(), "true".into()));
            q.push(("resourceVersionMatch".into(), "NotOlderThan".into()));
        }
    } else {
        if !rv.is_empty() {
            q.push(("resourceVersion".into(), v.param(&rv)));
        }
        let m = text("resourceVersionMatch");
        if !m.is_empty() {
            q.push(("resourceVersionMatch".into(), m));
        }
        let limit = text("limit");
        if !limit.is_empty() {
            q.push(("limit".into(), limit));
        }
    }
    q
}

fn url(server: &ApiServer, q: &[(String, String)]) -> String {
    let pairs: Vec<String> = q
        .iter()
        .map(|(k, v)| format!("{k}={}", v.replace('=', "%3D")))
        .collect();
    format!(
        "{}/api/v1/namespaces/{NS}/pods?{}",
        server.url(),
        pairs.join("&")
    )
}

/// A list answer in the matrix's terms.
fn list_answer(code: u16, body: &str, v: &Versions) -> BTreeMap<String, Value> {
    let doc: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let mut out = BTreeMap::new();
    out.insert("code".into(), json!(code));
    if code != 200 {
        out.insert("reason".into(), doc["reason"].clone());
        out.insert(
            "message".into(),
            json!(fold_digits(doc["message"].as_str().unwrap_or(""))),
        );
        return out;
    }
    out.insert(
        "listRV".into(),
        json!(v.symbol(doc["metadata"]["resourceVersion"].as_str().unwrap_or(""))),
    );
    let names: Vec<Value> = doc["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|i| i["metadata"]["name"].clone())
                .collect()
        })
        .unwrap_or_default();
    out.insert("items".into(), Value::Array(names));
    out
}

/// The matrix entry's expectation in the same terms (page 2 apart).
fn expected_list(entry: &Value) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    out.insert("code".into(), entry["code"].clone());
    if entry["code"] != 200 {
        out.insert("reason".into(), entry["reason"].clone());
        out.insert(
            "message".into(),
            json!(fold_digits(entry["message"].as_str().unwrap_or(""))),
        );
        return out;
    }
    out.insert("listRV".into(), entry["listRV"].clone());
    out.insert("items".into(), entry["items"].clone());
    out
}

/// A watch's events in the matrix's terms.
fn watch_events(body: &str) -> Value {
    let events: Vec<Value> = body
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let ev: Value = serde_json::from_str(line).unwrap_or(Value::Null);
            let ty = ev["type"].as_str().unwrap_or("?");
            let o = &ev["object"];
            match ty {
                "ERROR" => json!(["ERROR", o["code"], o["reason"]]),
                "BOOKMARK" => {
                    let end = o["metadata"]["annotations"]["k8s.io/initial-events-end"] == "true";
                    json!(["BOOKMARK", if end { "initial-events-end" } else { "" }])
                }
                _ => json!([
                    ty,
                    o["metadata"]["name"],
                    o["metadata"]["labels"]["tier"].as_str().unwrap_or("")
                ]),
            }
        })
        .collect();
    Value::Array(events)
}

fn entry_name(e: &Value) -> String {
    format!(
        "{} {} rv={:?} match={:?} limit={:?} initialEvents={}",
        e["phase"].as_str().unwrap_or(""),
        e["op"].as_str().unwrap_or(""),
        e["resourceVersion"].as_str().unwrap_or(""),
        e["resourceVersionMatch"].as_str().unwrap_or(""),
        e["limit"].as_str().unwrap_or(""),
        e["sendInitialEvents"]
    )
}

/// Replays one phase's entries; returns the differences.
fn replay_phase(server: &ApiServer, matrix: &[Value], phase: &str, v: &Versions) -> Vec<String> {
    let entries: Vec<&Value> = matrix
        .iter()
        .filter(|e| e["phase"] == phase)
        .filter(|e| {
            !DIFFERENT_ON_PURPOSE
                .iter()
                .any(|(n, _)| *n == entry_name(e))
        })
        .collect();
    // The watches (one second each, to their timeout) at once; nothing is written meanwhile.
    let mut diffs: Vec<String> = std::thread::scope(|scope| {
        let watches: Vec<_> = entries
            .iter()
            .filter(|e| e["op"] == "watch")
            .map(|entry| {
                scope.spawn(move || {
                    let (code, body) = common::raw_get(&url(server, &query(entry, v)), None);
                    let got = json!({"code": code, "events": watch_events(&body)});
                    let want = json!({"code": entry["code"], "events": entry["events"]});
                    (got != want).then(|| {
                        format!(
                            "{}:\n  capture: {want}\n  server:  {got}",
                            entry_name(entry)
                        )
                    })
                })
            })
            .collect();
        watches
            .into_iter()
            .filter_map(|w| w.join().unwrap())
            .collect()
    });
    for entry in entries.into_iter().filter(|e| e["op"] == "list") {
        let name = entry_name(entry);
        let (code, body) = common::raw_get(&url(server, &query(entry, v)), None);
        let got = list_answer(code, &body, v);
        let want = expected_list(entry);
        if got != want {
            diffs.push(format!("{name}:\n  capture: {want:?}\n  server:  {got:?}"));
            continue;
        }
        let doc: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        let token = doc["metadata"]["continue"].as_str().unwrap_or("");
        if code == 200 && (entry["continue"] == true) == token.is_empty() {
            diffs.push(format!(
                "{name}: continue: capture {}, server {token:?}",
                entry["continue"]
            ));
            continue;
        }
        if let Some(page2) = entry.get("page2") {
            let q = vec![
                ("limit".to_owned(), "2".to_owned()),
                ("continue".to_owned(), token.to_owned()),
            ];
            let (code, body) = common::raw_get(&url(server, &q), None);
            let got = list_answer(code, &body, v);
            let want = expected_list(page2);
            if got != want {
                diffs.push(format!(
                    "{name} page 2:\n  capture: {want:?}\n  server:  {got:?}"
                ));
            }
        }
    }
    diffs
}

fn list_rv(api: &Api<DynamicObject>) -> u64 {
    api.list(&ListParams::default())
        .unwrap()
        .metadata
        .resource_version
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn the_test_server_answers_the_captured_resource_version_table() {
    let matrix: Value =
        serde_json::from_slice(&common::fixture("semantics/rv-matrix.json")).unwrap();
    let matrix = matrix["matrix"].as_array().unwrap().clone();
    assert_eq!(matrix.len(), 120, "the captured table has 120 entries");

    let server = ApiServer::start();
    // The answers are compared, not how long they took: the future versions' 504s need not
    // wait the real three seconds each (`a_list_at_a_future_version_waits_for_it` does).
    server.set_too_large_wait(Duration::from_millis(20));
    let api: Api<DynamicObject> = Api::namespaced_with(
        Client::new(server.client_config()).unwrap(),
        NS,
        &common::pods(),
    );
    // The capture's steps, over HTTP.
    for name in ["p1", "p2", "p3"] {
        let mut pod = common::pod(NS, name, "Pending");
        pod["metadata"]["labels"] = json!({"app": "sem"});
        api.create(&Default::default(), &pod).unwrap();
    }
    let a = list_rv(&api);
    api.patch(
        "p1",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"tier": "front"}}})),
    )
    .unwrap();
    api.delete("p2", &DeleteParams::default()).unwrap();
    let mut p4 = common::pod(NS, "p4", "Pending");
    p4["metadata"]["labels"] = json!({"app": "sem"});
    api.create(&Default::default(), &p4).unwrap();
    let b = list_rv(&api);
    let v = Versions { a, b };

    let mut diffs = replay_phase(&server, &matrix, "warm", &v);
    // kube-apiserver restarted with etcd kept: a new watch cache.
    server.restart().unwrap();
    diffs.extend(replay_phase(&server, &matrix, "restarted", &v));
    // etcd compacted to its current revision, then kube-apiserver restarted.
    server.compact();
    server.restart().unwrap();
    diffs.extend(replay_phase(&server, &matrix, "compacted", &v));
    assert!(
        diffs.is_empty(),
        "{} of 120 answers differ from kube-apiserver's:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

/// A list at a version the server has not reached waits for it, as kube-apiserver waits for
/// its cache (`list-future-resourceversion*.json`): reached meanwhile, the list is answered;
/// not reached, 504 `ResourceVersionTooLarge` with `Retry-After: 1`.
#[test]
fn a_list_at_a_future_version_waits_for_it() {
    let server = ApiServer::start();
    server.set_too_large_wait(Duration::from_millis(50));
    let future = server.resource_version() + 1;
    let url = format!(
        "{}/api/v1/namespaces/{NS}/pods?resourceVersion={future}&resourceVersionMatch=NotOlderThan",
        server.url()
    );
    let (code, body) = common::raw_get(&url, None);
    assert_eq!(code, 504, "{body}");
    let status: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        status["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );

    // A wait as long as the test may take: the write below ends it, whenever it comes.
    server.set_too_large_wait(Duration::from_secs(3600));
    let list = {
        let url = url.clone();
        std::thread::spawn(move || common::raw_get(&url, None))
    };
    common::wait_until("the list is waiting", || {
        server
            .requests()
            .iter()
            .filter(|r| r.contains("NotOlderThan"))
            .count()
            == 2
    });
    server
        .create(&common::pods(), common::pod(NS, "reached", "Pending"))
        .unwrap();
    let (code, body) = list.join().unwrap();
    assert_eq!(code, 200, "{body}");
    let list: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(list["metadata"]["resourceVersion"], future.to_string());
    assert_eq!(list["items"][0]["metadata"]["name"], "reached");
}
