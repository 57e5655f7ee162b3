//! Metadata-only objects over real HTTP: the test server's answers to the metadata `Accept`
//! headers against the captures, and `Api<PartialObjectMetadata>` and metadata informers
//! (list, paged list, watch, streaming list, 410 relist, listers and indexes) for pods and
//! for a custom resource.

mod common;

use std::sync::Arc;

use common::capture::{self, Compare};
use common::{pods, wait_until, widgets, PATIENCE};
use kube_informer::api::{ApiResource, DynamicObject, PartialObjectMetadata, WatchEvent};
use kube_informer::cache::{
    IndexFn, InformerConfig, ReflectorConfig, SharedIndexInformer, SharedInformerFactory,
    NAMESPACE_INDEX,
};
use kube_informer::testing::ApiServer;
use kube_informer::{Api, Client, ListParams, PostParams, WatchParams};
use serde_json::{json, Value};

const NS: &str = "fx-meta";

fn server() -> ApiServer {
    ApiServer::builder().resource(&widgets()).start()
}

fn client(server: &ApiServer) -> Client {
    Client::new(server.client_config()).unwrap()
}

fn create_as(server: &ApiServer, ar: &ApiResource, manager: &str, body: Value) {
    let api: Api<DynamicObject> = Api::namespaced_with(client(server), NS, ar);
    let pp = PostParams {
        field_manager: Some(manager.into()),
        ..Default::default()
    };
    api.create(&pp, &body).unwrap();
}

/// The five pods of the captures, created as `kubectl create` did.
fn capture_pods(server: &ApiServer) {
    for i in 0..5 {
        create_as(
            server,
            &pods(),
            "kubectl-create",
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("pod-{i:02}"), "namespace": NS,
                    "labels": {"app": "meta", "idx": format!("{i:02}")},
                    "annotations": {"fx.example.com/note": format!("pod {i:02}")}},
                "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}}),
        );
    }
}

/// The three widgets of the captures.
fn capture_widgets(server: &ApiServer) {
    for i in 0..3 {
        create_as(
            server,
            &widgets(),
            "kubectl-create",
            json!({"apiVersion": "lab.example.com/v1", "kind": "Widget",
                "metadata": {"name": format!("w-{i:02}"), "namespace": NS, "labels": {"app": "meta"}},
                "spec": {"size": i}}),
        );
    }
}

/// Field by field, but not the managed fields' content: the server's pod defaulting (which
/// kubectl's fields reflect) is not ours to match here; their presence and shape are compared.
fn compare() -> Compare {
    Compare::new()
        .volatile("metadata.continue")
        .volatile("**.managedFields.*.fieldsV1")
}

/// A capture's request with its continue token replaced by ours.
fn with_continue(name: &str, token: &str) -> capture::Request {
    let mut req = capture::request(name);
    let (path, _) = req.target.split_once("&continue=").unwrap();
    req.target = format!("{path}&continue={token}");
    req
}

/// Page `name` of a captured list, asked with the continue token of the page before it,
/// checked against its capture.
fn next_page(server: &ApiServer, before: &capture::Response, name: &str) -> capture::Response {
    let token = before.json()["metadata"]["continue"]
        .as_str()
        .unwrap()
        .to_owned();
    let page = capture::send(server.addr(), &with_continue(name, &token));
    compare().assert(name, &page);
    page
}

#[test]
fn metadata_lists_and_get_answer_as_captured_for_pods() {
    let server = server();
    capture_pods(&server);
    let page1 = capture::replay(&server, "list-pods-metadata-page1");
    compare().assert("list-pods-metadata-page1", &page1);
    let page2 = next_page(&server, &page1, "list-pods-metadata-page2");
    next_page(&server, &page2, "list-pods-metadata-page3");
    compare().assert(
        "get-pod-metadata",
        &capture::replay(&server, "get-pod-metadata"),
    );
    compare().assert(
        "list-pods-metadata-accept-fallback",
        &capture::replay(&server, "list-pods-metadata-accept-fallback"),
    );
}

#[test]
fn unknown_media_types_get_406_pretty_printed_or_the_fallback() {
    let server = server();
    capture_pods(&server);
    for name in [
        "status-406-unknown-as",
        "status-406-list-as-partialobjectmetadata",
    ] {
        let answer = capture::replay(&server, name);
        Compare::new().assert(name, &answer);
        // Byte for byte: indented, no trailing newline.
        assert_eq!(
            answer.body,
            common::fixture(&format!("{name}.json")),
            "{name}"
        );
    }
    let full = capture::replay(&server, "list-pods-unknown-as-fallback");
    assert_eq!(full.code, 200);
    let want = capture::response("list-pods-unknown-as-fallback").json();
    let got = full.json();
    assert_eq!(got["kind"], want["kind"]);
    assert_eq!(got["apiVersion"], want["apiVersion"]);
    assert!(got["items"][0].get("spec").is_some(), "the full objects");
}

#[test]
fn metadata_lists_answer_as_captured_for_a_custom_resource() {
    let server = server();
    capture_widgets(&server);
    let page1 = capture::replay(&server, "crd-list-metadata-page1");
    compare().assert("crd-list-metadata-page1", &page1);
    next_page(&server, &page1, "crd-list-metadata-page2");
}

/// The event lines of a watch body, managed fields entries ordered by manager: the test
/// server keeps them sorted, the real one in the order they were first written (noted in the
/// report, left alone here).
fn lines(body: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(body)
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if let Some(Value::Array(m)) = v.pointer_mut("/object/metadata/managedFields") {
                m.sort_by_key(|e| e["manager"].as_str().unwrap_or("").to_owned());
            }
            v
        })
        .collect()
}

fn captured_lines(name: &str) -> Vec<Value> {
    lines(&common::fixture(&format!("{name}.jsonl")))
}

#[test]
fn metadata_watch_and_streaming_list_answer_as_captured() {
    let server = server();
    capture_pods(&server);
    let from = server.resource_version();
    create_as(
        &server,
        &pods(),
        "kubectl-create",
        json!({"metadata": {"name": "pod-watched", "namespace": NS, "labels": {"app": "meta"}},
            "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}}),
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client(&server), NS, &pods());
    let patch_as = |manager: &str, patch: Value| {
        let pp = kube_informer::PatchParams {
            field_manager: Some(manager.into()),
            ..Default::default()
        };
        api.patch("pod-watched", &pp, &kube_informer::Patch::Merge(patch))
            .unwrap();
    };
    patch_as(
        "kubectl-label",
        json!({"metadata": {"labels": {"phase": "labelled"}}}),
    );
    patch_as(
        "kubectl-annotate",
        json!({"metadata": {"annotations": {"fx.example.com/note": "annotated"}}}),
    );

    // The events from the list's version, replayed from history; a bookmark two seconds
    // before the timeout (as kube-apiserver sends it), then the stream ends.
    let mut req = capture::request("watch-pods-metadata");
    req.target = format!(
        "/api/v1/namespaces/{NS}/pods?watch=1&allowWatchBookmarks=true&resourceVersion={from}&timeoutSeconds=3"
    );
    let answer = capture::send(server.addr(), &req);
    assert_eq!(answer.code, 200);
    assert_eq!(answer.header("content-type"), Some("application/json"));
    let got = lines(&answer.body);
    let want = captured_lines("watch-pods-metadata");
    let types: Vec<&str> = got.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["ADDED", "MODIFIED", "MODIFIED", "BOOKMARK"]);
    for (g, w) in got[..3].iter().zip(&want[..3]) {
        let diffs = compare().value_differences(w, g);
        assert!(diffs.is_empty(), "{diffs:#?}");
    }
    let diffs = compare().value_differences(want.last().unwrap(), got.last().unwrap());
    assert!(diffs.is_empty(), "bookmark: {diffs:#?}");

    // The streaming list: every object ADDED, then the initial-events-end bookmark.
    api.delete("pod-watched", &Default::default()).unwrap();
    let answer = capture::replay(&server, "streaming-list-pods-metadata");
    let got = lines(&answer.body);
    let want = captured_lines("streaming-list-pods-metadata");
    assert!(got.len() >= want.len(), "{got:#?}");
    for (g, w) in got.iter().zip(&want) {
        let diffs = compare().value_differences(w, g);
        assert!(diffs.is_empty(), "{diffs:#?}");
    }
    // Then only the periodic bookmarks until the timeout (the test server's interval is
    // shorter than the real one's).
    assert!(got[want.len()..].iter().all(|l| l["type"] == "BOOKMARK"));
}

#[test]
fn api_reads_metadata_only_for_get_paged_list_and_watch() {
    let server = server();
    capture_pods(&server);
    let api: Api<PartialObjectMetadata> = Api::namespaced_with(client(&server), NS, &pods());
    let one = api.get("pod-03").unwrap();
    assert_eq!(one.kind.as_deref(), Some("PartialObjectMetadata"));
    assert_eq!(one.api_version.as_deref(), Some("meta.k8s.io/v1"));
    assert!(one.metadata.managed_fields.is_some());

    let list = api
        .list_all(&ListParams {
            limit: Some(2),
            ..Default::default()
        })
        .unwrap();
    let names: Vec<&str> = list.items.iter().map(|o| o.metadata.name()).collect();
    assert_eq!(names, ["pod-00", "pod-01", "pod-02", "pod-03", "pod-04"]);
    assert_eq!(list.kind.as_deref(), Some("PartialObjectMetadataList"));

    let rv = list.metadata.resource_version.clone().unwrap();
    let writer: Api<DynamicObject> = Api::namespaced_with(client(&server), NS, &pods());
    writer.delete("pod-00", &Default::default()).unwrap();
    let stream = api
        .watch(&WatchParams {
            resource_version: Some(rv),
            timeout_seconds: Some(1),
            ..Default::default()
        })
        .unwrap();
    let events: Vec<_> = stream.map(|e| e.unwrap()).collect();
    let deleted = events
        .iter()
        .find_map(|e| match e {
            WatchEvent::Deleted(o) => Some(o),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(deleted.metadata.name(), "pod-00");
    assert_eq!(deleted.kind.as_deref(), Some("PartialObjectMetadata"));
}

#[test]
fn repeated_identical_bookmarks_are_accepted() {
    // A quiet watch with frequent bookmarks: every bookmark carries the same version.
    let server = ApiServer::builder()
        .bookmark_interval(std::time::Duration::from_millis(5))
        .start();
    capture_pods(&server);
    let api: Api<PartialObjectMetadata> = Api::namespaced_with(client(&server), NS, &pods());
    let rv = server.resource_version().to_string();
    let stream = api
        .watch(&WatchParams {
            resource_version: Some(rv.clone()),
            allow_watch_bookmarks: true,
            ..Default::default()
        })
        .unwrap();
    let mut bookmarks = 0;
    for event in stream {
        match event.unwrap() {
            WatchEvent::Bookmark(b) => {
                assert_eq!(b.resource_version, rv);
                bookmarks += 1;
                if bookmarks == 3 {
                    break;
                }
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(bookmarks, 3);
}

fn label_index() -> (String, IndexFn<PartialObjectMetadata>) {
    (
        "app".to_string(),
        Arc::new(|o: &PartialObjectMetadata| {
            Ok(o.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("app"))
                .map(|a| vec![a.to_owned()])
                .unwrap_or_default())
        }),
    )
}

/// A metadata informer syncs, follows changes, and serves its lister and indexes.
fn informer_follows(server: &ApiServer, ar: &ApiResource, streaming: bool) {
    let config = InformerConfig::new().reflector(
        ReflectorConfig::new()
            .streaming_list(streaming)
            .page_size(2)
            .backoff(
                std::time::Duration::from_millis(50),
                std::time::Duration::from_millis(400),
            ),
    );
    let inf: SharedIndexInformer<PartialObjectMetadata> =
        SharedIndexInformer::new(Api::all_with(client(server), ar), config);
    inf.add_indexers([label_index()]).unwrap();
    inf.start().unwrap();
    assert!(inf.wait_for_cache_sync(PATIENCE));
    let lister = inf.lister();
    let n = lister.list_all().len();
    assert!(n >= 3, "{n}");
    assert_eq!(lister.by_index("app", "meta").unwrap().len(), n);
    assert_eq!(lister.by_index(NAMESPACE_INDEX, NS).unwrap().len(), n);
    let first = lister.list_all()[0].clone();
    assert_eq!(first.kind.as_deref(), Some("PartialObjectMetadata"));

    // A change arrives by watch.
    let name = first.metadata.name().to_owned();
    let writer: Api<DynamicObject> = Api::namespaced_with(client(server), NS, ar);
    writer
        .patch(
            &name,
            &Default::default(),
            &kube_informer::Patch::Merge(json!({"metadata": {"labels": {"app": "other"}}})),
        )
        .unwrap();
    wait_until("the relabelled object in the index", || {
        lister
            .by_index("app", "other")
            .is_ok_and(|v| v.len() == 1 && v[0].metadata.name() == name)
    });

    // The server restarts having compacted its history (and lost an object): the watch's
    // version is too old (410), and the informer lists again.
    let is_list = |r: &String| r.starts_with("GET ") && !r.contains("watch=");
    let lists_before = server.requests().iter().filter(|r| is_list(r)).count();
    server.go_down();
    server.delete(ar, Some(NS), &name).unwrap();
    server.compact();
    server.come_back().unwrap();
    wait_until("the deleted object gone after a relist", || {
        lister.get(Some(NS), &name).is_none() && lister.list_all().len() == n - 1
    });
    let lists_after = server.requests().iter().filter(|r| is_list(r)).count();
    if !streaming {
        assert!(lists_after > lists_before, "a relist happened");
    }
    inf.stop();
}

#[test]
fn metadata_informer_lists_watches_and_relists_pods() {
    let server = server();
    capture_pods(&server);
    informer_follows(&server, &pods(), false);
}

#[test]
fn metadata_informer_streams_its_list_for_a_custom_resource() {
    let server = server();
    capture_widgets(&server);
    informer_follows(&server, &widgets(), true);
}

#[test]
fn the_factory_gives_metadata_informers_beside_full_ones() {
    let server = server();
    capture_pods(&server);
    capture_widgets(&server);
    let factory = SharedInformerFactory::new(client(&server));
    let meta_pods = factory.metadata_informer(&pods());
    let meta_widgets = factory.metadata_informer(&widgets());
    let full_pods = factory.dynamic_informer(&pods());
    factory.start().unwrap();
    assert!(factory.wait_for_cache_sync(PATIENCE).all_synced());
    assert_eq!(meta_pods.lister().list_all().len(), 5);
    assert_eq!(meta_widgets.lister().list_all().len(), 3);
    let full = full_pods.lister().get(Some(NS), "pod-01").unwrap();
    assert!(full.field("spec").is_some());
    let meta = meta_pods.lister().get(Some(NS), "pod-01").unwrap();
    assert_eq!(meta.metadata.uid, full.metadata.uid);
    // The same informer again for the same resource.
    assert!(Arc::ptr_eq(
        &meta_pods.lister().get(Some(NS), "pod-01").unwrap(),
        &factory
            .metadata_informer(&pods())
            .lister()
            .get(Some(NS), "pod-01")
            .unwrap()
    ));
    factory.shutdown();
}
