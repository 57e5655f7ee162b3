//! Eviction and drain over loopback HTTP against `testing::ApiServer`: a
//! PodDisruptionBudget's 429 as a typed, retryable error; dry run and a UID precondition;
//! kubectl's drain rules, each one.

mod common;

use std::time::Duration;

use kube_informer::api::{ApiResource, DynamicObject};
use kube_informer::pod::{drain_node, uncordon, DrainOptions, PodError};
use kube_informer::testing::ApiServer;
use kube_informer::{Api, Client, DeleteParams};
use serde_json::{json, Value};

fn pods_api(server: &ApiServer, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(
        Client::new(server.client_config()).unwrap(),
        ns,
        &ApiResource::new("", "v1", "Pod", "pods", true),
    )
}

fn pods() -> ApiResource {
    ApiResource::new("", "v1", "Pod", "pods", true)
}

fn pdbs() -> ApiResource {
    ApiResource::new(
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        true,
    )
}

fn nodes() -> ApiResource {
    ApiResource::new("", "v1", "Node", "nodes", false)
}

fn owned_by(kind: &str, name: &str) -> Value {
    let api_version = if kind == "Node" { "v1" } else { "apps/v1" };
    json!({"metadata": {"labels": {"app": name}, "ownerReferences": [{"apiVersion": api_version,
        "kind": kind, "name": name, "uid": format!("uid-{name}"), "controller": true}]}})
}

fn web(server: &ApiServer, n: usize, node: &str) {
    for i in 0..n {
        server
            .add_pod_on(
                "lab",
                &format!("web-{i}"),
                node,
                owned_by("ReplicaSet", "web"),
            )
            .unwrap();
    }
}

fn budget(server: &ApiServer, spec: Value) {
    server
        .create(
            &pdbs(),
            json!({"metadata": {"name": "web", "namespace": "lab"}, "spec": spec}),
        )
        .unwrap();
}

#[test]
fn a_budget_refuses_with_a_typed_retryable_429_and_allows_otherwise() {
    let server = ApiServer::start();
    web(&server, 3, "node-1");
    budget(
        &server,
        json!({"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}),
    );
    let api = pods_api(&server, "lab");
    api.evict("web-0", &DeleteParams::default()).unwrap();
    assert!(
        server.get(&pods(), Some("lab"), "web-0").is_err(),
        "evicted: gone"
    );
    let e = api.evict("web-1", &DeleteParams::default()).unwrap_err();
    assert_eq!(e.code(), Some(429));
    assert!(e.is_transient());
    assert_eq!(
        e.pod_error(),
        Some(&PodError::DisruptionBudget {
            pod: "web-1".into(),
            message: "The disruption budget web needs 2 healthy pods and has 2 currently".into(),
            retry_after_seconds: None,
        })
    );
    let st = e.status().unwrap();
    assert_eq!(st.reason, "TooManyRequests");
    assert_eq!(
        st.message,
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    assert!(server.get(&pods(), Some("lab"), "web-1").is_ok());
    // A new replica comes up: the budget allows one more.
    server
        .add_pod_on("lab", "web-3", "node-2", owned_by("ReplicaSet", "web"))
        .unwrap();
    api.evict("web-1", &DeleteParams::default()).unwrap();
    // A missing pod is a plain 404.
    let e = api.evict("nope", &DeleteParams::default()).unwrap_err();
    assert!(e.is_not_found() && e.pod_error().is_none());
}

#[test]
fn max_unavailable_percentages_and_pods_the_budget_ignores() {
    let server = ApiServer::start();
    web(&server, 4, "node-1");
    budget(
        &server,
        json!({"maxUnavailable": "25%", "selector": {"matchExpressions": [
        {"key": "app", "operator": "In", "values": ["web"]}]}}),
    );
    server
        .add_pod_on("lab", "web-pending", "", owned_by("ReplicaSet", "web"))
        .unwrap();
    let api = pods_api(&server, "lab");
    api.evict("web-0", &DeleteParams::default()).unwrap();
    let e = api.evict("web-1", &DeleteParams::default()).unwrap_err();
    assert!(matches!(
        e.pod_error(),
        Some(PodError::DisruptionBudget { .. })
    ));
    // A Pending pod is evicted whatever the budget says.
    api.evict("web-pending", &DeleteParams::default()).unwrap();
}

#[test]
fn eviction_dry_run_and_uid_precondition() {
    let server = ApiServer::start();
    let pod = server.add_pod("lab", "solo", &["main"]).unwrap();
    let api = pods_api(&server, "lab");
    api.evict("solo", &DeleteParams::default().dry_run())
        .unwrap();
    assert!(
        server.get(&pods(), Some("lab"), "solo").is_ok(),
        "dry run keeps it"
    );
    let e = api
        .evict(
            "solo",
            &DeleteParams::default().precondition_uid("another-uid"),
        )
        .unwrap_err();
    assert!(e.is_conflict(), "{e}");
    let uid = pod["metadata"]["uid"].as_str().unwrap();
    api.evict(
        "solo",
        &DeleteParams::default()
            .precondition_uid(uid)
            .grace_period(5),
    )
    .unwrap();
    assert!(server
        .get(&pods(), Some("lab"), "solo")
        .unwrap_err()
        .is_not_found());
    let sent: Vec<String> = server.requests();
    assert!(sent
        .iter()
        .any(|r| r.starts_with("POST /api/v1/namespaces/lab/pods/solo/eviction")));
}

fn fast() -> DrainOptions {
    DrainOptions::new()
        .eviction_retry_delay(Duration::from_millis(50))
        .poll_interval(Duration::from_millis(20))
        .timeout(common::PATIENCE)
}

fn unschedulable(server: &ApiServer, node: &str) -> bool {
    server.get(&nodes(), None, node).unwrap()["spec"]["unschedulable"] == json!(true)
}

#[test]
fn drain_cordons_evicts_and_skips_daemonset_and_mirror_pods() {
    let server = ApiServer::start();
    server.add_node("node-1").unwrap();
    web(&server, 2, "node-1");
    server
        .add_pod_on("lab", "elsewhere", "node-2", owned_by("ReplicaSet", "web"))
        .unwrap();
    let ds = ApiResource::new("apps", "v1", "DaemonSet", "daemonsets", true);
    server
        .create(
            &ds,
            json!({"metadata": {"name": "proxy", "namespace": "kube-system"}}),
        )
        .unwrap();
    server
        .add_pod_on(
            "kube-system",
            "proxy-x",
            "node-1",
            owned_by("DaemonSet", "proxy"),
        )
        .unwrap();
    server.add_pod_on(
        "kube-system",
        "etcd-node-1",
        "node-1",
        json!({"metadata": {"annotations": {"kubernetes.io/config.mirror": "abc"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "node-1", "uid": "n1", "controller": true}]}}),
    ).unwrap();
    let client = Client::new(server.client_config()).unwrap();

    // Without --ignore-daemonsets: refused, nothing evicted, the node stays cordoned.
    let report = drain_node(&client, "node-1", &fast()).unwrap();
    assert!(!report.is_drained());
    assert_eq!(
        report.refused,
        ["cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): kube-system/proxy-x"]
    );
    assert!(report.evicted.is_empty());
    assert!(unschedulable(&server, "node-1"));
    assert!(server.get(&pods(), Some("lab"), "web-0").is_ok());

    let report = drain_node(&client, "node-1", &fast().ignore_daemonsets(true)).unwrap();
    assert!(report.is_drained(), "{report:?}");
    assert!(report.already_cordoned);
    let mut evicted = report.evicted.clone();
    evicted.sort();
    assert_eq!(evicted, ["lab/web-0", "lab/web-1"]);
    assert_eq!(
        report.warnings,
        "ignoring DaemonSet-managed Pods: kube-system/proxy-x"
    );
    let skipped: Vec<&str> = report.skipped.iter().map(|s| s.pod.as_str()).collect();
    assert!(
        skipped.contains(&"kube-system/proxy-x") && skipped.contains(&"kube-system/etcd-node-1")
    );
    assert!(
        server.get(&pods(), Some("lab"), "elsewhere").is_ok(),
        "another node's pod stays"
    );
    assert!(server.get(&pods(), Some("kube-system"), "proxy-x").is_ok());

    assert!(!uncordon(&client, "node-1").unwrap());
    assert!(!unschedulable(&server, "node-1"));
}

#[test]
fn drain_refuses_unmanaged_and_emptydir_pods_unless_told() {
    let server = ApiServer::start();
    server.add_node("node-1").unwrap();
    server
        .add_pod_on("lab", "bare", "node-1", json!({}))
        .unwrap();
    let mut cache = owned_by("ReplicaSet", "cache");
    cache["spec"] = json!({"volumes": [{"name": "scratch", "emptyDir": {}}]});
    server
        .add_pod_on("lab", "cache-0", "node-1", cache)
        .unwrap();
    server
        .add_pod_on(
            "lab",
            "done",
            "node-1",
            json!({"status": {"phase": "Succeeded"}}),
        )
        .unwrap();
    let client = Client::new(server.client_config()).unwrap();
    let report = drain_node(&client, "node-1", &fast()).unwrap();
    assert_eq!(
        report.refused,
        [
            "cannot delete Pods that declare no controller (use --force to override): lab/bare",
            "cannot delete Pods with local storage (use --delete-emptydir-data to override): lab/cache-0",
        ]
    );
    let report = drain_node(
        &client,
        "node-1",
        &fast().force(true).delete_emptydir_data(true).dry_run(true),
    )
    .unwrap();
    assert!(report.refused.is_empty());
    let mut selected = report.selected.clone();
    selected.sort();
    assert_eq!(
        selected,
        ["lab/bare", "lab/cache-0", "lab/done"],
        "a completed pod goes too"
    );
    assert!(report.evicted.is_empty(), "a dry run evicts nothing");
    assert!(server.get(&pods(), Some("lab"), "bare").is_ok());
    let report = drain_node(
        &client,
        "node-1",
        &fast().force(true).delete_emptydir_data(true),
    )
    .unwrap();
    assert!(report.is_drained(), "{report:?}");
    assert_eq!(
        report.warnings,
        "deleting Pods that declare no controller: lab/bare"
    );
    assert_eq!(report.evicted.len(), 3);
}

#[test]
fn drain_retries_a_budgets_429_until_it_allows_then_waits_for_the_pod_by_uid() {
    let server = ApiServer::start();
    server.add_node("node-1").unwrap();
    web(&server, 2, "node-1");
    budget(
        &server,
        json!({"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}),
    );
    let client = Client::new(server.client_config()).unwrap();
    let drain = {
        let client = client.clone();
        std::thread::spawn(move || drain_node(&client, "node-1", &fast()).unwrap())
    };
    // The budget refuses until two more replicas are up elsewhere. A request is recorded as
    // it arrives, before it is answered: a first eviction seen may not have met the budget
    // yet. Each of the two pods is asked for once, and again only after a 429: a third
    // eviction request means the budget has refused one.
    let deadline = std::time::Instant::now() + common::PATIENCE;
    while server
        .requests()
        .iter()
        .filter(|r| r.contains("/eviction"))
        .count()
        < 3
    {
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(5));
    }
    server
        .add_pod_on("lab", "web-2", "node-2", owned_by("ReplicaSet", "web"))
        .unwrap();
    server
        .add_pod_on("lab", "web-3", "node-2", owned_by("ReplicaSet", "web"))
        .unwrap();
    let report = drain.join().unwrap();
    assert!(report.is_drained(), "{report:?}");
    assert!(!report.retried.is_empty());
    assert!(
        report.retried[0].starts_with("error when evicting pods/\"web-"),
        "{}",
        report.retried[0]
    );
    assert!(report.retried[0].contains("(will retry after 50ms): Cannot evict pod as it would violate the pod's disruption budget."));
    let mut evicted = report.evicted.clone();
    evicted.sort();
    assert_eq!(evicted, ["lab/web-0", "lab/web-1"]);
}

#[test]
fn drain_times_out_and_reports_what_is_left() {
    let server = ApiServer::start();
    server.add_node("node-1").unwrap();
    web(&server, 1, "node-1");
    budget(
        &server,
        json!({"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}),
    );
    let client = Client::new(server.client_config()).unwrap();
    let report = drain_node(
        &client,
        "node-1",
        &fast().timeout(Duration::from_millis(300)),
    )
    .unwrap();
    assert_eq!(report.pending, ["lab/web-0"]);
    assert!(!report.is_drained());
    // With eviction disabled the budget does not hold it: a plain delete.
    let report = drain_node(
        &client,
        "node-1",
        &fast().disable_eviction(true).grace_period(0),
    )
    .unwrap();
    assert!(report.is_drained(), "{report:?}");
    assert!(!report.used_eviction);
    assert!(server
        .requests()
        .iter()
        .any(|r| r.starts_with("DELETE /api/v1/namespaces/lab/pods/web-0")));
}
