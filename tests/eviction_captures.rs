//! The eviction subresource against the captures of kube-apiserver v1.36.2 in
//! `tests/fixtures/eviction/` (see its README): a budget whose status was computed is used
//! as the real handler uses it (no disruption left: 429 without `Retry-After`; otherwise the
//! server counts one down itself, records the pod in `disruptedPods` and, at zero, sets
//! `DisruptionAllowed=False`), dry runs change nothing, two budgets are a bare 500 and a
//! name that differs from the URL's a 400. Answers compared field by field with the
//! captures.

mod common;

use std::time::Duration;

use common::capture::{self, Compare};
use kube_informer::api::ApiResource;
use kube_informer::pod::{drain_node, DrainOptions};
use kube_informer::testing::ApiServer;
use kube_informer::Client;
use serde_json::{json, Value};

fn pdbs() -> ApiResource {
    ApiResource::new(
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        true,
    )
}

fn pods() -> ApiResource {
    ApiResource::new("", "v1", "Pod", "pods", true)
}

fn captured(name: &str) -> Value {
    let v: Value =
        serde_json::from_slice(&common::fixture(&format!("eviction/{name}.json"))).unwrap();
    v
}

/// A running, ready pod labelled `app=<app>` in `cap-evict`.
fn pod(server: &ApiServer, name: &str, app: &str) {
    server
        .add_pod_on(
            "cap-evict",
            name,
            "lab-node",
            json!({"metadata": {"labels": {"app": app}}}),
        )
        .unwrap();
}

/// A budget over `app=<app>` whose status a disruption controller computed.
fn budget(server: &ApiServer, name: &str, app: &str, status: Value) {
    let mut status = status;
    status["observedGeneration"] = json!(1);
    server
        .create(
            &pdbs(),
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": name, "namespace": "cap-evict", "generation": 1},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}},
                "status": status}),
        )
        .unwrap();
}

fn evict(server: &ApiServer, pod: &str, query: &str, body: Value) -> capture::Response {
    capture::send_json(
        server.addr(),
        "POST",
        &format!("/api/v1/namespaces/cap-evict/pods/{pod}/eviction{query}"),
        Some("application/json"),
        serde_json::to_vec(&body).unwrap(),
    )
}

fn eviction(pod: &str) -> Value {
    json!({"apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": pod, "namespace": "cap-evict"}})
}

/// The answer against the capture `name`: status, `Retry-After`, body.
fn assert_like(name: &str, answer: &capture::Response) {
    let want = &captured(name)["response"];
    assert_eq!(
        Some(u64::from(answer.code)),
        want["status"].as_u64(),
        "{name}: {}",
        String::from_utf8_lossy(&answer.body)
    );
    let want_retry = want["headers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h[0] == "Retry-After")
        .and_then(|h| h[1].as_str());
    assert_eq!(
        answer.header("retry-after"),
        want_retry,
        "{name}: Retry-After"
    );
    let diffs = Compare::new().value_differences(&want["body_json"], &capture::body_json(answer));
    assert!(diffs.is_empty(), "{name}:\n  {}", diffs.join("\n  "));
}

fn pdb_status(server: &ApiServer, name: &str) -> Value {
    server.get(&pdbs(), Some("cap-evict"), name).unwrap()["status"].clone()
}

#[test]
fn a_computed_budget_refuses_counts_down_and_refuses_again_as_captured() {
    let server = ApiServer::start();
    pod(&server, "e-guard", "guard");
    budget(
        &server,
        "pdb-guard",
        "guard",
        json!({"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1}),
    );
    assert_like(
        "evict-pdb-disruptions-0",
        &evict(&server, "e-guard", "", eviction("e-guard")),
    );
    assert_like(
        "evict-pdb-disruptions-0-dryrun",
        &evict(&server, "e-guard", "?dryRun=All", eviction("e-guard")),
    );

    // The budget allows one: dry runs (query or body) change nothing.
    let mut pdb = server.get(&pdbs(), Some("cap-evict"), "pdb-guard").unwrap();
    pdb["status"] = json!({"observedGeneration": 1, "disruptionsAllowed": 1,
        "currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2});
    server.update(&pdbs(), pdb).unwrap();
    pod(&server, "e-guard2", "guard");
    let before = server.get(&pdbs(), Some("cap-evict"), "pdb-guard").unwrap();
    assert_like(
        "evict-pdb-disruptions-1-dryrun-query",
        &evict(&server, "e-guard", "?dryRun=All", eviction("e-guard")),
    );
    let mut body = eviction("e-guard");
    body["deleteOptions"] = json!({"dryRun": ["All"]});
    assert_like(
        "evict-pdb-disruptions-1-dryrun-body",
        &evict(&server, "e-guard", "", body),
    );
    let after = server.get(&pdbs(), Some("cap-evict"), "pdb-guard").unwrap();
    assert_eq!(
        before["metadata"]["resourceVersion"],
        after["metadata"]["resourceVersion"]
    );
    assert!(server.get(&pods(), Some("cap-evict"), "e-guard").is_ok());

    // For real: 201, and the server's own count-down.
    assert_like(
        "evict-pdb-disruptions-1",
        &evict(&server, "e-guard", "", eviction("e-guard")),
    );
    let st = pdb_status(&server, "pdb-guard");
    let want = &captured("get-pdb-after-evict")["response"]["body_json"]["status"];
    assert_eq!(st["disruptionsAllowed"], want["disruptionsAllowed"]);
    assert_eq!(st["currentHealthy"], want["currentHealthy"]);
    assert!(st["disruptedPods"]["e-guard"].is_string(), "{st}");
    let cond = &st["conditions"][0];
    let want_cond = &want["conditions"][0];
    for k in ["type", "status", "reason", "message", "observedGeneration"] {
        assert_eq!(cond[k], want_cond[k], "condition {k}: {st}");
    }
    assert_like(
        "evict-pdb-after-decrement",
        &evict(&server, "e-guard2", "", eviction("e-guard2")),
    );
}

#[test]
fn two_budgets_are_a_bare_500_and_a_pending_pod_ignores_its_budget() {
    let server = ApiServer::start();
    pod(&server, "e-two", "two");
    let allows = json!({"disruptionsAllowed": 1, "currentHealthy": 1, "desiredHealthy": 0, "expectedPods": 1});
    budget(&server, "pdb-two-a", "two", allows.clone());
    budget(&server, "pdb-two-b", "two", allows);
    assert_like(
        "evict-two-pdbs",
        &evict(&server, "e-two", "", eviction("e-two")),
    );

    server
        .create(
            &pods(),
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "e-pending", "namespace": "cap-evict", "labels": {"app": "pending"}},
                "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]},
                "status": {"phase": "Pending"}}),
        )
        .unwrap();
    budget(
        &server,
        "pdb-pending",
        "pending",
        json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 1, "expectedPods": 1}),
    );
    assert_like(
        "evict-pending-pod-blocking-pdb",
        &evict(&server, "e-pending", "", eviction("e-pending")),
    );
}

#[test]
fn a_name_that_differs_from_the_url_and_a_missing_pod_are_refused_as_captured() {
    let server = ApiServer::start();
    pod(&server, "e-misc", "misc");
    assert_like(
        "evict-name-mismatch",
        &evict(&server, "e-misc", "", eviction("other")),
    );
    assert_like(
        "evict-missing-pod",
        &evict(&server, "nosuchpod", "", eviction("nosuchpod")),
    );
    assert_like(
        "evict-no-pdb",
        &evict(&server, "e-misc", "", eviction("e-misc")),
    );
}

#[test]
fn a_budget_behind_its_spec_is_still_being_processed_retry_after_10() {
    let server = ApiServer::start();
    pod(&server, "e-guard", "guard");
    // Computed for generation 0 (the real fresh budget: no observedGeneration at all, which
    // the test server's stand-in disruption controller computes on the spot instead).
    server
        .create(
            &pdbs(),
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": "pdb-guard", "namespace": "cap-evict", "generation": 1},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guard"}}},
                "status": {"observedGeneration": 0, "disruptionsAllowed": 0, "currentHealthy": 0,
                    "desiredHealthy": 0, "expectedPods": 0}}),
        )
        .unwrap();
    assert_like(
        "evict-pdb-status-not-computed",
        &evict(&server, "e-guard", "", eviction("e-guard")),
    );
}

#[test]
fn drain_retries_a_computed_budgets_429_and_reports_two_budgets() {
    let server = ApiServer::start();
    server.add_node("lab-node").unwrap();
    pod(&server, "e-guard", "guard");
    pod(&server, "e-two", "two");
    budget(
        &server,
        "pdb-guard",
        "guard",
        json!({"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1}),
    );
    let allows = json!({"disruptionsAllowed": 1, "currentHealthy": 1, "desiredHealthy": 0, "expectedPods": 1});
    budget(&server, "pdb-two-a", "two", allows.clone());
    budget(&server, "pdb-two-b", "two", allows);
    let client = Client::new(server.client_config()).unwrap();
    let options = DrainOptions::new()
        .eviction_retry_delay(Duration::from_millis(50))
        .poll_interval(Duration::from_millis(20))
        .force(true)
        .timeout(common::PATIENCE);
    let drain = {
        let client = client.clone();
        std::thread::spawn(move || drain_node(&client, "lab-node", &options).unwrap())
    };
    // Refused until the budget (as its controller would) allows one.
    common::wait_until("the budget's first 429", || {
        server
            .requests()
            .iter()
            .filter(|r| r.contains("/pods/e-guard/eviction"))
            .count()
            >= 2
    });
    let mut pdb = server.get(&pdbs(), Some("cap-evict"), "pdb-guard").unwrap();
    pdb["status"] = json!({"observedGeneration": 1, "disruptionsAllowed": 1,
        "currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2});
    server.update(&pdbs(), pdb).unwrap();
    let report = drain.join().unwrap();
    assert_eq!(report.evicted, ["cap-evict/e-guard"], "{report:?}");
    assert!(
        report.retried.iter().all(|r| {
            r.contains(
        "(will retry after 50ms): Cannot evict pod as it would violate the pod's disruption budget."
    )
        }),
        "{report:?}"
    );
    assert_eq!(report.failed.len(), 1, "{report:?}");
    // kubectl's words: the Status message alone.
    assert_eq!(
        report.failed[0],
        "error when evicting pods/\"e-two\" -n \"cap-evict\": This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    );
    // The server counted the budget down itself.
    assert_eq!(pdb_status(&server, "pdb-guard")["disruptionsAllowed"], 0);
}
