//! A CRD's life on `testing::ApiServer`, as the real kube-apiserver v1.36.2 lives it
//! (`tests/fixtures/crd-deleted/`, see its README): created through the API and
//! established at once (so `apply_crd` returns promptly); deleted under open watches (one
//! DELETED per object, then the stream ends cleanly; afterwards the plain-text `404 page
//! not found` for the resource and its group's discovery); created again (its first list
//! 429 `storage is (re)initializing`). And the client's side: that 404 is a clear
//! `NotFound`, and an informer on the deleted CRD says *gone*, then comes back.

mod common;

use std::sync::mpsc;
use std::time::Duration;

use common::capture::{self, Response};
use common::view::View;
use common::{wait_until, PATIENCE};
use kube_informer::api::{ApiResource, DynamicObject, WatchEvent};
use kube_informer::cache::{FactoryOptions, ReflectorConfig};
use kube_informer::controller::wait::apply_crd;
use kube_informer::manager::Manager;
use kube_informer::testing::ApiServer;
use kube_informer::{Api, Client, DeleteParams, ListParams, PostParams, WatchParams};
use serde_json::{json, Value};

const GROUP: &str = "crddel.capture.example.com";
const NAME: &str = "gizmos.crddel.capture.example.com";
const NS: &str = "cap-crddel";

fn gizmos() -> ApiResource {
    ApiResource::new(GROUP, "v1", "Gizmo", "gizmos", true)
}

/// The captured CRD, as the capture's client sent it.
fn crd() -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": NAME, "labels": {"capture": "true"}},
        "spec": {"group": GROUP, "names": {"plural": "gizmos", "singular": "gizmo",
            "kind": "Gizmo", "listKind": "GizmoList"}, "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]}})
}

fn gizmo(name: &str) -> Value {
    json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Gizmo",
        "metadata": {"name": name, "namespace": NS}, "spec": {"size": 1}})
}

struct Env {
    server: ApiServer,
    client: Client,
    crds: Api<DynamicObject>,
    gizmos: Api<DynamicObject>,
}

/// Watch parameters without bookmarks.
fn from_version(rv: &str) -> WatchParams {
    WatchParams {
        allow_watch_bookmarks: false,
        ..WatchParams::from_version(rv)
    }
}

fn env() -> Env {
    // No periodic bookmarks: a watch's events are exactly what the test expects.
    let server = ApiServer::builder()
        .bookmark_interval(Duration::from_secs(3600))
        .start();
    let client = Client::new(server.client_config()).unwrap();
    Env {
        crds: Api::all_with(client.clone(), &common::crds()),
        gizmos: Api::namespaced_with(client.clone(), NS, &gizmos()),
        client,
        server,
    }
}

/// The capture's answer: status, `Content-Type`, `X-Content-Type-Options` and the body
/// text of a non-JSON answer.
fn captured(name: &str) -> (u16, Option<String>, Option<String>, Value) {
    let v: Value =
        serde_json::from_slice(&common::fixture(&format!("crd-deleted/{name}"))).unwrap();
    let r = &v["response"];
    let header = |h: &str| {
        r["headers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p[0].as_str().unwrap().eq_ignore_ascii_case(h))
            .map(|p| p[1].as_str().unwrap().to_owned())
    };
    let body = match r.get("body_json") {
        Some(b) if !b.is_null() => b.clone(),
        _ => r["body_chunks"][0]["body"]["text"].clone(),
    };
    (
        r["status"].as_u64().unwrap() as u16,
        header("content-type"),
        header("x-content-type-options"),
        body,
    )
}

fn request(env: &Env, method: &str, target: &str, body: &[u8]) -> Response {
    capture::send(
        env.server.addr(),
        &capture::Request {
            method: method.into(),
            target: target.into(),
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: body.to_vec(),
        },
    )
}

/// Asserts that `got` is the captured plain-text 404 of `name`.
fn assert_page_not_found(name: &str, got: &Response) {
    let (code, content_type, nosniff, body) = captured(name);
    assert_eq!(code, 404, "{name}: the capture");
    assert_eq!(
        got.code,
        code,
        "{name}: {}",
        String::from_utf8_lossy(&got.body)
    );
    assert_eq!(
        got.header("content-type").map(str::to_owned),
        content_type,
        "{name}"
    );
    assert_eq!(
        got.header("x-content-type-options").map(str::to_owned),
        nosniff,
        "{name}"
    );
    assert_eq!(
        String::from_utf8_lossy(&got.body),
        body.as_str().unwrap(),
        "{name}"
    );
}

/// Watches in a thread; every event (or error) goes to the channel, which closes when the
/// stream ends.
fn watch_in_thread(
    api: Api<DynamicObject>,
    params: WatchParams,
) -> mpsc::Receiver<Result<WatchEvent<DynamicObject>, String>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || match api.watch(&params) {
        Ok(events) => {
            for e in events {
                if tx.send(e.map_err(|e| e.to_string())).is_err() {
                    return;
                }
            }
        }
        Err(e) => {
            let _ = tx.send(Err(e.to_string()));
        }
    });
    rx
}

fn describe(e: &Result<WatchEvent<DynamicObject>, String>) -> String {
    match e {
        Ok(WatchEvent::Added(o)) => format!("ADDED {}", o.metadata.name()),
        Ok(WatchEvent::Modified(o)) => format!("MODIFIED {}", o.metadata.name()),
        Ok(WatchEvent::Deleted(o)) => format!("DELETED {}", o.metadata.name()),
        Ok(WatchEvent::Bookmark(_)) => "BOOKMARK".into(),
        Ok(other) => format!("{other:?}"),
        Err(e) => format!("error: {e}"),
    }
}

fn condition<'a>(crd: &'a Value, ty: &str) -> Option<&'a Value> {
    crd.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == ty)
}

#[test]
fn apply_crd_returns_once_the_test_server_has_established_the_crd() {
    let env = env();
    // Bounded: before the test server set the conditions, this waited the whole timeout.
    let crd = apply_crd(&env.client, &crd(), "installer", PATIENCE).expect("established");
    let crd: Value = serde_json::to_value(&crd).unwrap();
    for (ty, reason, message) in [
        ("NamesAccepted", "NoConflicts", "no conflicts found"),
        (
            "Established",
            "InitialNamesAccepted",
            "the initial names have been accepted",
        ),
    ] {
        let c = condition(&crd, ty).unwrap_or_else(|| panic!("{ty} in {crd}"));
        assert_eq!(
            (&c["status"], &c["reason"], &c["message"]),
            (&json!("True"), &json!(reason), &json!(message))
        );
        assert!(c["lastTransitionTime"].is_string());
    }
    assert_eq!(
        crd["status"]["acceptedNames"],
        json!({"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList"})
    );
    // The resource is served and listed by discovery, as wait_crd_served checked.
    env.gizmos
        .create(&PostParams::default(), &gizmo("g1"))
        .unwrap();
}

#[test]
fn a_created_crd_answers_as_captured_then_is_established_by_one_modified_event() {
    let env = env();
    let rv = env.server.resource_version().to_string();
    let created: Value =
        serde_json::to_value(env.crds.create(&PostParams::default(), &crd()).unwrap()).unwrap();
    let (_, _, _, want) = captured("crd-create.json");
    assert_eq!(created["status"], want["status"], "the create's answer");
    assert_eq!(created["spec"], want["spec"]);
    let events: Vec<String> = env
        .crds
        .watch(&from_version(&rv).timeout(1))
        .unwrap()
        .map(|e| describe(&e.map_err(|e| e.to_string())))
        .collect();
    assert_eq!(
        events,
        [format!("ADDED {NAME}"), format!("MODIFIED {NAME}")]
    );
    let crd: Value = serde_json::to_value(env.crds.get(NAME).unwrap()).unwrap();
    let (_, _, _, deleted) = captured("crd-delete.json");
    // The established CRD is the captured one before its deletion marked it.
    assert_eq!(
        crd["status"]["acceptedNames"],
        deleted["status"]["acceptedNames"]
    );
    for ty in ["NamesAccepted", "Established"] {
        let (ours, theirs) = (
            condition(&crd, ty).unwrap(),
            condition(&deleted, ty).unwrap(),
        );
        for field in ["status", "reason", "message"] {
            assert_eq!(ours[field], theirs[field], "{ty}.{field}");
        }
    }
}

#[test]
fn a_crd_deleted_under_open_watches_ends_them_after_one_deleted_per_object() {
    let env = env();
    let before_crd = env.server.resource_version().to_string();
    apply_crd(&env.client, &crd(), "installer", PATIENCE).unwrap();
    let before = env.server.resource_version().to_string();
    for n in ["g1", "g2"] {
        env.gizmos
            .create(&PostParams::default(), &gizmo(n))
            .unwrap();
    }
    // From before the objects, so that the watches are known to be open once they
    // replayed both ADDED events.
    let all: Api<DynamicObject> = Api::all_with(env.client.clone(), &gizmos());
    let watches = [
        watch_in_thread(env.gizmos.clone(), from_version(&before)),
        watch_in_thread(all, WatchParams::from_version(&before)),
    ];
    for w in &watches {
        for n in ["g1", "g2"] {
            let e = w.recv_timeout(PATIENCE).expect("the replayed ADDED");
            assert_eq!(describe(&e), format!("ADDED {n}"));
        }
    }

    let answer = request(
        &env,
        "DELETE",
        &format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{NAME}"),
        b"",
    );
    let (code, _, _, want) = captured("crd-delete.json");
    assert_eq!(answer.code, code);
    let marked: Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(
        marked["kind"], "CustomResourceDefinition",
        "the CRD, not a Status"
    );
    assert_eq!(
        marked["metadata"]["finalizers"],
        want["metadata"]["finalizers"]
    );
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    let (ours, theirs) = (
        condition(&marked, "Terminating").unwrap(),
        condition(&want, "Terminating").unwrap(),
    );
    for field in ["status", "reason", "message"] {
        assert_eq!(ours[field], theirs[field], "Terminating.{field}");
    }

    // Each open watch: one DELETED per object, then the end (no ERROR, no BOOKMARK).
    for w in watches {
        let mut rest = Vec::new();
        loop {
            match w.recv_timeout(PATIENCE) {
                Ok(e) => rest.push(describe(&e)),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => panic!("the watch never ended: {rest:?}"),
            }
        }
        assert_eq!(rest, ["DELETED g1", "DELETED g2"]);
    }
    // The CRD's own watch, as captured: MODIFIED (pending), MODIFIED (in progress), DELETED.
    let fields = format!("metadata.name={NAME}");
    let crd_events: Vec<Value> = env
        .crds
        .watch(&from_version(&before_crd).fields(&fields).timeout(1))
        .unwrap()
        .map(|e| match e.unwrap() {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                serde_json::to_value(&o).unwrap()
            }
            other => panic!("{other:?}"),
        })
        .collect();
    let reasons: Vec<String> = crd_events
        .iter()
        .map(|o| condition(o, "Terminating").map_or("-".into(), |c| c["reason"].to_string()))
        .collect();
    assert_eq!(
        reasons,
        [
            "-",
            "-",
            "\"InstanceDeletionPending\"",
            "\"InstanceDeletionInProgress\"",
            "\"InstanceDeletionInProgress\""
        ],
        "ADDED, MODIFIED (established), then the deletion's three events"
    );

    // Afterwards: the Go mux's plain-text 404 for every verb and for the group's discovery.
    let base = format!("/apis/{GROUP}/v1/namespaces/{NS}/gizmos");
    let body = serde_json::to_vec(&gizmo("g3")).unwrap();
    for (capture, method, target, body) in [
        ("after-5s-list.json", "GET", base.clone(), &b""[..]),
        ("after-5s-get.json", "GET", format!("{base}/g1"), &b""[..]),
        (
            "after-5s-watch.json",
            "GET",
            format!("{base}?watch=1&timeoutSeconds=2"),
            &b""[..],
        ),
        ("after-5s-create.json", "POST", base.clone(), &body[..]),
        (
            "after-5s-discovery-group-version.json",
            "GET",
            format!("/apis/{GROUP}/v1"),
            &b""[..],
        ),
        (
            "after-5s-discovery-group.json",
            "GET",
            format!("/apis/{GROUP}"),
            &b""[..],
        ),
    ] {
        assert_page_not_found(capture, &request(&env, method, &target, body));
    }
    // `/apis` no longer lists the group; the CRD itself is a JSON NotFound.
    let apis: Value = serde_json::from_slice(&request(&env, "GET", "/apis", b"").body).unwrap();
    assert!(
        !apis["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["name"] == GROUP),
        "{apis}"
    );
    let got = request(
        &env,
        "GET",
        &format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{NAME}"),
        b"",
    );
    let (code, _, _, want) = captured("after-5s-get-crd.json");
    assert_eq!(got.code, code);
    assert_eq!(serde_json::from_slice::<Value>(&got.body).unwrap(), want);

    // The client: a clear NotFound.
    let err = env.gizmos.list(&ListParams::default()).unwrap_err();
    assert!(err.is_not_found(), "{err}");
    let st = err.status().unwrap();
    assert_eq!((st.code, st.reason.as_str()), (404, "NotFound"));
    assert!(st.message.contains("404 page not found"), "{}", st.message);
    assert!(
        st.message.contains("CustomResourceDefinition"),
        "{}",
        st.message
    );
}

#[test]
fn a_recreated_crd_refuses_its_first_list_with_429_then_serves_no_objects() {
    let env = env();
    apply_crd(&env.client, &crd(), "installer", PATIENCE).unwrap();
    env.gizmos
        .create(&PostParams::default(), &gizmo("g1"))
        .unwrap();
    env.crds.delete(NAME, &DeleteParams::default()).unwrap();
    env.crds.create(&PostParams::default(), &crd()).unwrap();

    let list = format!("/apis/{GROUP}/v1/namespaces/{NS}/gizmos");
    let got = request(&env, "GET", &list, b"");
    let (code, _, _, want) = captured("recreated-list-immediately.json");
    assert_eq!(got.code, code);
    assert_eq!(got.header("retry-after"), Some("1"));
    assert_eq!(serde_json::from_slice::<Value>(&got.body).unwrap(), want);
    let got = request(&env, "GET", &list, b"");
    assert_eq!(got.code, 200);
    let items = serde_json::from_slice::<Value>(&got.body).unwrap()["items"].clone();
    assert_eq!(items, json!([]), "the old objects are gone for good");
}

#[test]
fn the_client_retries_the_recreated_crds_429_and_lists() {
    let env = env();
    apply_crd(&env.client, &crd(), "installer", PATIENCE).unwrap();
    env.crds.delete(NAME, &DeleteParams::default()).unwrap();
    env.crds.create(&PostParams::default(), &crd()).unwrap();
    // The client honours Retry-After: 1 on a 429 (one retry), then lists.
    assert!(env
        .gizmos
        .list(&ListParams::default())
        .unwrap()
        .items
        .is_empty());
}

#[test]
fn an_informer_on_a_crd_deleted_through_the_api_says_gone_then_comes_back() {
    let env = env();
    apply_crd(&env.client, &crd(), "installer", PATIENCE).unwrap();
    env.gizmos
        .create(&PostParams::default(), &gizmo("g1"))
        .unwrap();
    let options = FactoryOptions::new().reflector(
        ReflectorConfig::new()
            .backoff(Duration::from_millis(50), Duration::from_millis(200))
            .gone_backoff_max(Duration::from_millis(500)),
    );
    let builder = Manager::builder_with_options(env.client.clone(), options)
        .unhealthy_after(Duration::ZERO)
        .grace_period(Duration::from_secs(20));
    let informer = builder.factory().dynamic_informer(&gizmos());
    let view = View::default();
    informer.add_event_handler(view.clone()).unwrap();
    let manager = builder.start().unwrap();
    wait_until("g1 handled", || {
        view.snapshot().iter().any(|(k, _)| k.ends_with("g1"))
    });
    // An object the handler hears of after the list: the informer's watch is open (a
    // CRD deleted before it opened would leave it nothing to hear but the 404).
    env.gizmos
        .create(&PostParams::default(), &gizmo("g0"))
        .unwrap();
    wait_until("g0 handled", || {
        view.snapshot().iter().any(|(k, _)| k.ends_with("g0"))
    });

    env.crds.delete(NAME, &DeleteParams::default()).unwrap();
    wait_until("the handler told of g0's and g1's deletion", || {
        view.snapshot().is_empty()
    });
    wait_until("the informer to say gone", || informer.health().is_gone());
    let health = informer.health();
    let last = health.last_error.clone().expect("the 404");
    assert_eq!(last.status.as_ref().map(|s| s.code), Some(404), "{health}");
    assert!(last.message.contains("404 page not found"), "{health}");
    assert!(
        health.failing_for.is_none(),
        "gone is not failing: {health}"
    );

    apply_crd(&env.client, &crd(), "installer", PATIENCE).unwrap();
    env.gizmos
        .create(&PostParams::default(), &gizmo("g2"))
        .unwrap();
    wait_until("g2 handled after the CRD came back", || {
        view.snapshot().iter().any(|(k, _)| k.ends_with("g2"))
    });
    wait_until("no longer gone", || !informer.health().is_gone());
    assert!(view.violations().is_empty(), "{:?}", view.violations());
    manager.stop().unwrap();
}

#[test]
fn a_crd_delete_honours_preconditions_and_dry_run_and_no_object_finalizer_holds_it() {
    let env = env();
    apply_crd(&env.client, &crd(), "installer", PATIENCE).unwrap();
    let mut held = gizmo("held");
    held["metadata"]["finalizers"] = json!(["example.com/keep"]);
    env.gizmos.create(&PostParams::default(), &held).unwrap();
    let path = format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{NAME}");

    // A failed precondition and a dry run leave everything as it was.
    let wrong_uid =
        br#"{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"not-its-uid"}}"#;
    assert_eq!(request(&env, "DELETE", &path, wrong_uid).code, 409);
    let dry = request(&env, "DELETE", &format!("{path}?dryRun=All"), b"");
    assert_eq!(dry.code, 200);
    let crd_now: Value = serde_json::to_value(env.crds.get(NAME).unwrap()).unwrap();
    assert!(
        crd_now["metadata"].get("deletionTimestamp").is_none(),
        "{crd_now}"
    );
    assert_eq!(
        env.gizmos.list(&ListParams::default()).unwrap().items.len(),
        1
    );

    // The cleanup does not wait on the object's own finalizer: the CRD goes.
    env.crds.delete(NAME, &DeleteParams::default()).unwrap();
    assert!(env.crds.get(NAME).unwrap_err().is_not_found());
    assert!(env.gizmos.get("held").unwrap_err().is_not_found());
}
