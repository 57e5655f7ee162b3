//! End-to-end pod logs and eviction against a real cluster, opt-in:
//!
//! ```text
//! KUBE_E2E=1 cargo test --test e2e_pod_logs -- --ignored --nocapture
//! ```
//!
//! As in `tests/e2e.rs`, the `real_*` tests are ignored by default and print `skipped: ...`
//! unless `KUBE_E2E=1` is set and a kubeconfig (or an in-cluster service account) is found.
//! They create a namespace `kube-informer-e2e-logs-<random>` (deleted at the end, also when a
//! test fails), a busybox pod that prints three lines and sleeps, and a PodDisruptionBudget
//! over it; they need a node that can pull `busybox`. Nothing else is touched (no drain: it
//! would cordon a node of the cluster).
//!
//! The same body runs in every `cargo test` against `testing::ApiServer` (the `fake_*`
//! twin), so it cannot rot unseen.

mod common;

use std::time::{Duration, Instant};

use common::e2e::{self, Env, Owned};
use kube_informer::api::{ApiResource, DynamicObject};
use kube_informer::pod::{LogParams, PodError};
use kube_informer::testing::ApiServer;
use kube_informer::{Api, Client, DeleteParams, PostParams};
use serde_json::{json, Value};

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

/// Creates the namespace and the pod on a real cluster and waits until it runs.
fn real_setup(client: &Client) -> Owned {
    let ns = e2e::namespace(client, "kube-informer-e2e-logs");
    let pods: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns.name, &pods());
    pods.create(
        &PostParams::default(),
        &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "talker", "labels": {"app": "talker"}},
            "spec": {"terminationGracePeriodSeconds": 1, "containers": [{"name": "main", "image": "busybox",
                "command": ["sh", "-c", "echo line 1; echo line 2; echo line 3; sleep 3600"]}]}}),
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let p: Value = client
            .request(
                kube_informer::Method::GET,
                &format!("/api/v1/namespaces/{}/pods/talker", ns.name),
            )
            .send_json()
            .unwrap();
        let ready = p["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        });
        if ready
            && pods
                .logs("talker", &LogParams::default())
                .unwrap_or_default()
                .contains("line 3")
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the pod did not start in 3 minutes"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    ns
}

/// The scenario: whole log, tail, a follow stopped from another thread, typed errors, and
/// an eviction a PodDisruptionBudget refuses (then a dry run it allows once it is gone).
fn scenario(client: &Client, ns: &str, budgets: &dyn Fn(Option<Value>)) {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &pods());
    let all = api.logs("talker", &LogParams::default()).unwrap();
    assert_eq!(all, "line 1\nline 2\nline 3\n");
    assert_eq!(
        api.logs("talker", &LogParams::default().tail_lines(1))
            .unwrap(),
        "line 3\n"
    );
    let stamped = api
        .logs("talker", &LogParams::default().timestamps().tail_lines(1))
        .unwrap();
    assert!(stamped.ends_with("Z line 3\n"), "{stamped}");

    let mut follow = api
        .log_stream("talker", &LogParams::default().follow().tail_lines(2))
        .unwrap();
    assert_eq!(follow.next().unwrap().unwrap().text(), "line 2");
    assert_eq!(follow.next().unwrap().unwrap().text(), "line 3");
    let stopper = follow.stopper();
    let t = std::thread::spawn(move || follow.next().is_none());
    std::thread::sleep(Duration::from_millis(200));
    stopper.stop();
    assert!(t.join().unwrap(), "a stopped follow ends");

    let e = api
        .logs("talker", &LogParams::default().container("nope"))
        .unwrap_err();
    assert!(
        matches!(e.pod_error(), Some(PodError::UnknownContainer { .. })),
        "{e}"
    );
    let e = api
        .logs("talker", &LogParams::default().previous())
        .unwrap_err();
    assert!(
        matches!(e.pod_error(), Some(PodError::NoPreviousContainer { .. })),
        "{e}"
    );

    budgets(Some(
        json!({"minAvailable": 1, "selector": {"matchLabels": {"app": "talker"}}}),
    ));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        // A real cluster's budget needs its controller first: 429 either way, typed.
        let e = api.evict("talker", &DeleteParams::default()).unwrap_err();
        assert!(
            matches!(e.pod_error(), Some(PodError::DisruptionBudget { .. })),
            "{e}"
        );
        assert!(e.is_transient());
        if e.to_string().contains("needs 1 healthy pods") || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    budgets(None);
    api.evict("talker", &DeleteParams::default().dry_run())
        .unwrap();
    assert!(
        api.logs("talker", &LogParams::default()).is_ok(),
        "a dry run keeps the pod"
    );
}

#[test]
#[ignore = "needs a cluster: KUBE_E2E=1 cargo test --test e2e_pod_logs -- --ignored"]
fn real_pod_logs_and_eviction() {
    let Some(Env { client, .. }) = Env::real() else {
        return;
    };
    let ns = real_setup(&client);
    let budgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns.name, &pdbs());
    scenario(&client, &ns.name, &|spec| match spec {
        Some(spec) => {
            budgets
                .create(
                    &PostParams::default(),
                    &json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                        "metadata": {"name": "talker"}, "spec": spec}),
                )
                .unwrap();
        }
        None => {
            budgets.delete("talker", &DeleteParams::default()).unwrap();
            // The eviction handler reads budgets from a cache: give it a moment.
            std::thread::sleep(Duration::from_secs(2));
        }
    });
}

/// `printf done` as a container's last words: a follow hands out the line without a newline
/// and ends when the container does (`kubectl logs -f` prints `done` and returns). `finish`
/// makes the container write it and exit (a real one does by itself).
fn last_line_scenario(client: &Client, ns: &str, finish: &dyn Fn()) {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &pods());
    let mut follow = api
        .log_stream("printer", &LogParams::default().follow())
        .unwrap();
    assert_eq!(follow.next().unwrap().unwrap().text(), "one");
    finish();
    let stopper = follow.stopper();
    let (tx, rx) = std::sync::mpsc::channel();
    let t = std::thread::spawn(move || {
        let rest: Vec<String> = follow
            .by_ref()
            .map(|l| l.unwrap().text().into_owned())
            .collect();
        let _ = tx.send(());
        rest
    });
    let ended = rx.recv_timeout(Duration::from_secs(120)).is_ok();
    stopper.stop();
    let rest = t.join().unwrap();
    assert!(ended, "the follow did not end with the container: {rest:?}");
    assert_eq!(rest, ["done"]);
    assert_eq!(
        api.logs("printer", &LogParams::default()).unwrap(),
        "one\ndone"
    );
}

#[test]
#[ignore = "needs a cluster: KUBE_E2E=1 cargo test --test e2e_pod_logs -- --ignored"]
fn real_follow_ends_with_a_last_line_without_newline() {
    let Some(Env { client, .. }) = Env::real() else {
        return;
    };
    let ns = real_setup(&client);
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns.name, &pods());
    api.create(
        &PostParams::default(),
        &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "printer"},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                "containers": [{"name": "main", "image": "busybox",
                    "command": ["sh", "-c", "echo one; sleep 5; printf done"]}]}}),
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(180);
    while !api
        .logs("printer", &LogParams::default())
        .unwrap_or_default()
        .starts_with("one")
    {
        assert!(
            Instant::now() < deadline,
            "the printer did not start in 3 minutes"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    last_line_scenario(&client, &ns.name, &|| {});
}

#[test]
fn fake_follow_ends_with_a_last_line_without_newline() {
    let server = ApiServer::builder().tls().start();
    server
        .add_pod_on("e2e", "printer", "lab-node", json!({}))
        .unwrap();
    server.append_log("e2e", "printer", "main", "one");
    let client = Client::new(server.client_config()).unwrap();
    last_line_scenario(&client, "e2e", &|| {
        server.write_log("e2e", "printer", "main", "done");
        server.terminate_container("e2e", "printer", "main", 0);
    });
}

#[test]
fn fake_pod_logs_and_eviction() {
    let server = ApiServer::builder().tls().start();
    server
        .add_pod_on(
            "e2e",
            "talker",
            "lab-node",
            json!({"metadata": {"labels": {"app": "talker"}}}),
        )
        .unwrap();
    server.append_log("e2e", "talker", "main", "line 1\nline 2\nline 3");
    let client = Client::new(server.client_config()).unwrap();
    scenario(&client, "e2e", &|spec| match spec {
        Some(spec) => {
            server
                .create(
                    &pdbs(),
                    json!({"metadata": {"name": "talker", "namespace": "e2e"}, "spec": spec}),
                )
                .unwrap();
        }
        None => {
            server.delete(&pdbs(), Some("e2e"), "talker").unwrap();
        }
    });
}
