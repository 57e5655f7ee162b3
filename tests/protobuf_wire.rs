//! Protobuf on the wire (feature `protobuf`): the client asking kube-apiserver for protobuf
//! for built-in types and reading whatever the answer's `Content-Type` says, and the test
//! server answering as kube-apiserver 1.36 does.
//!
//! - a typed `Pod` informer syncing over protobuf against `testing::ApiServer` over TLS
//!   (paged lists, watch frames cut across chunks, bookmarks, a connection cut in the middle
//!   of a frame, a 410 `ERROR` frame and its relist), with a custom resource informer in the
//!   same test that stays JSON;
//! - gets, lists, writes and errors answered in protobuf, and the server's refusals (406,
//!   415, 400) as captured;
//! - the client reading the exact bytes of each capture (`tests/fixtures/protobuf/`, from
//!   `fixtures/apiserver/protobuf/` with the readable renderings left out), replayed by a raw
//!   loopback server that also records what the client asked for.
//!
//! Run with `cargo test --features protobuf,k8s-openapi,k8s-openapi/v1_35 --test protobuf_wire`.
#![cfg(all(feature = "protobuf", feature = "k8s-openapi"))]

mod common;

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use common::*;
use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_informer::api::{
    ApiResource, DynamicObject, Meta, Object, PartialObjectMetadata, Status, WatchEvent,
};
use kube_informer::cache::{FactoryOptions, ReflectorConfig, SharedInformerFactory};
use kube_informer::testing::{ApiServer, Fault, Target};
use kube_informer::{
    Api, Client, ClientConfig, DeleteParams, ListParams, Patch, PatchParams, PostParams,
    WatchParams,
};
use serde_json::{json, Value};

const NS: &str = "lab";
const PB: &str = "application/vnd.kubernetes.protobuf";
const PB_OR_JSON: &str = "application/vnd.kubernetes.protobuf, application/json";

fn client(server: &ApiServer) -> Client {
    let mut c = server.client_config();
    c.qps = 0.0;
    Client::new(c).unwrap()
}

fn pod(name: &str, node: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            labels: Some(BTreeMap::from([("app".to_owned(), "web".to_owned())])),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            node_name: Some(node.into()),
            containers: vec![Container {
                name: "app".into(),
                image: Some("nginx:1.27".into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        status: None,
    }
}

fn widgets() -> ApiResource {
    ApiResource::new("example.com", "v1", "Widget", "widgets", true)
}

/// The `Accept` headers the server saw on requests whose line contains `path`.
fn accepts(server: &ApiServer, path: &str) -> Vec<String> {
    server
        .request_headers()
        .iter()
        .filter(|r| r.request.contains(path))
        .flat_map(|r| r.values("accept").into_iter().map(str::to_owned))
        .collect()
}

/// A raw HTTP/1.1 request to the test server: status, content type and body bytes.
fn raw(
    server: &ApiServer,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String, Vec<u8>) {
    let mut s = std::net::TcpStream::connect(server.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    if r.read_line(&mut line).unwrap_or(0) == 0 {
        return (0, String::new(), Vec::new());
    }
    let code: u16 = line.split(' ').nth(1).unwrap().parse().unwrap();
    let (mut ct, mut len, mut chunked) = (String::new(), None, false);
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':').unwrap();
        match k.to_ascii_lowercase().as_str() {
            "content-type" => ct = v.trim().to_owned(),
            "content-length" => len = Some(v.trim().parse::<usize>().unwrap()),
            "transfer-encoding" => chunked = true,
            _ => {}
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            r.read_line(&mut line).unwrap();
            let n = usize::from_str_radix(line.trim(), 16).unwrap();
            let mut c = vec![0; n + 2];
            r.read_exact(&mut c).unwrap();
            if n == 0 {
                break;
            }
            body.extend_from_slice(&c[..n]);
        }
    } else {
        body.resize(len.unwrap_or(0), 0);
        r.read_exact(&mut body).unwrap();
    }
    (code, ct, body)
}

/// The `Status` of a protobuf error body.
fn pb_status(body: &[u8]) -> Status {
    let env = kube_informer::protobuf::read_envelope(body).unwrap();
    assert_eq!((env.api_version, env.kind), ("v1", "Status"));
    let m = kube_informer::protobuf::message_for("v1", "Status").unwrap();
    kube_informer::protobuf::decode(m, env.raw).unwrap()
}

// ---- against the test server ----

#[test]
fn a_typed_pod_informer_syncs_over_protobuf_and_a_custom_resource_stays_json() {
    let server = ApiServer::builder()
        .tls()
        .resource(&widgets())
        .bookmark_interval(Duration::from_millis(300))
        .start();
    let pods: Api<Pod> = Api::namespaced(client(&server), NS);
    for i in 0..7 {
        pods.create(
            &PostParams::default(),
            &pod(&format!("web-{i}"), ["n1", "n2"][i % 2]),
        )
        .unwrap();
    }
    let w: Api<DynamicObject> = Api::namespaced_with(client(&server), NS, &widgets());
    w.create(
        &PostParams::default(),
        &json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w-1"}, "spec": {"size": 3}}),
    )
    .unwrap();

    let options = FactoryOptions::new().reflector(
        ReflectorConfig::new()
            .page_size(3)
            .backoff(Duration::from_millis(50), Duration::from_millis(400)),
    );
    let factory = SharedInformerFactory::with_options(client(&server), options);
    let pod_informer = factory.informer::<Pod>();
    let widget_informer = factory.dynamic_informer(&widgets());
    factory.start().unwrap();
    assert!(factory.wait_for_cache_sync(PATIENCE).all_synced());
    let lister = pod_informer.lister();
    assert_eq!(lister.list_all().len(), 7);
    let p = lister.get(Some(NS), "web-1").unwrap();
    assert_eq!(p.spec.as_ref().unwrap().node_name.as_deref(), Some("n2"));
    assert_eq!(
        widget_informer
            .lister()
            .get(Some(NS), "w-1")
            .unwrap()
            .metadata
            .name(),
        "w-1"
    );

    // What went over the wire: protobuf asked for pods (lists and watches), JSON only for the
    // custom resource; and the server's pod answers are protobuf (a raw request with the
    // client's Accept gets `k8s\0` back).
    let pod_accepts = accepts(&server, "/pods");
    assert!(
        pod_accepts.iter().any(|a| a == PB_OR_JSON),
        "{pod_accepts:?}"
    );
    assert!(
        pod_accepts.iter().all(|a| a == PB_OR_JSON),
        "{pod_accepts:?}"
    );
    let widget_accepts = accepts(&server, "/widgets");
    assert!(!widget_accepts.is_empty());
    assert!(
        widget_accepts.iter().all(|a| !a.contains("protobuf")),
        "{widget_accepts:?}"
    );
    let plain = ApiServer::builder().start();
    plain
        .create(
            &ApiResource::of::<Pod>(),
            serde_json::to_value(pod("x", "n1")).unwrap(),
        )
        .unwrap();
    let (code, ct, body) = raw(
        &plain,
        "GET",
        "/api/v1/namespaces/lab/pods?limit=1",
        &[("accept", PB_OR_JSON)],
        b"",
    );
    assert_eq!((code, ct.as_str()), (200, PB));
    assert!(body.starts_with(b"k8s\0"));

    // Changes arrive as watch frames.
    pods.patch(
        "web-1",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"moved": "yes"}}})),
    )
    .unwrap();
    wait_until("the labelled pod in the cache", || {
        lister
            .get(Some(NS), "web-1")
            .is_some_and(|p| Object::metadata(p.as_ref()).label("moved") == Some("yes"))
    });

    // A watch cut in the middle of a frame: the reflector watches (or lists) again and
    // misses nothing.
    server.inject(Target::Watch, Fault::CloseAfterBytes(30));
    server.disconnect_all();
    pods.create(&PostParams::default(), &pod("after-cut", "n1"))
        .unwrap();
    wait_until("the pod created after the cut", || {
        lister.get(Some(NS), "after-cut").is_some()
    });

    // A 410 ERROR frame: a relist, as in JSON.
    let is_list = |r: &String| r.contains("/pods") && !r.contains("watch=");
    let lists_before = server.requests().iter().filter(|r| is_list(r)).count();
    server.inject(Target::Watch, Fault::ErrorEventAfter(0, 410));
    server.disconnect_all();
    pods.delete("web-0", &DeleteParams::default()).unwrap();
    // A pod bound to a node is deleted gracefully: it stays, marked, until its kubelet
    // lets go.
    wait_until("the deleted pod marked after the relist", || {
        lister
            .get(Some(NS), "web-0")
            .is_none_or(|p| p.metadata.deletion_timestamp.is_some())
    });
    wait_until("a relist after the 410 frame", || {
        server.requests().iter().filter(|r| is_list(r)).count() > lists_before
    });
    // Bookmarks came (every 300 ms) and were read: the informer is still in step.
    pods.create(&PostParams::default(), &pod("last", "n2"))
        .unwrap();
    wait_until("the last pod", || lister.get(Some(NS), "last").is_some());
    assert_eq!(
        lister.list_all().len(),
        9,
        "web-0 stays, marked for deletion"
    );
    factory.shutdown();
}

#[test]
fn gets_lists_writes_and_errors_are_answered_in_protobuf() {
    let server = ApiServer::builder().resource(&widgets()).start();
    let pods: Api<Pod> = Api::namespaced(client(&server), NS);
    let created = pods
        .create(&PostParams::default(), &pod("web", "n1"))
        .unwrap();
    assert_eq!(created.metadata.name.as_deref(), Some("web"));
    assert!(created.metadata.uid.is_some());
    let got = pods.get("web").unwrap();
    assert_eq!(got.metadata.uid, created.metadata.uid);
    assert_eq!(
        got.spec.as_ref().unwrap().containers[0].image.as_deref(),
        Some("nginx:1.27")
    );
    assert_eq!(
        pods.get_status("web").unwrap().metadata.uid,
        created.metadata.uid
    );
    for i in 0..4 {
        pods.create(&PostParams::default(), &pod(&format!("p-{i}"), "n2"))
            .unwrap();
    }
    let page = pods.list(&ListParams::default().limit(2)).unwrap();
    assert_eq!(page.items.len(), 2);
    assert_eq!(page.kind.as_deref(), Some("PodList"));
    assert!(page.metadata.continue_token.is_some());
    assert_eq!(page.metadata.remaining_item_count, Some(3));
    let all = pods.list_all(&ListParams::default().limit(2)).unwrap();
    assert_eq!(all.items.len(), 5);
    let patched = pods
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"tier": "front"}}})),
        )
        .unwrap();
    assert_eq!(Object::metadata(&patched).label("tier"), Some("front"));
    let mut stale = got.clone();
    stale.metadata.labels = Some(BTreeMap::from([("x".into(), "y".into())]));
    let err = pods
        .replace("web", &PostParams::default(), &stale)
        .unwrap_err();
    assert!(err.is_conflict(), "{err}");
    let replaced = pods
        .replace("web", &PostParams::default(), &patched)
        .unwrap();
    assert_eq!(Object::metadata(&replaced).label("tier"), Some("front"));
    // Errors in protobuf become the same typed errors as JSON ones.
    let err = pods.get("missing").unwrap_err();
    assert!(err.is_not_found(), "{err}");
    assert_eq!(
        err.status()
            .unwrap()
            .details
            .as_ref()
            .unwrap()
            .kind
            .as_deref(),
        Some("pods")
    );
    // Metadata-only, in protobuf.
    let meta: Api<PartialObjectMetadata> =
        Api::namespaced_with(client(&server), NS, &ApiResource::of::<Pod>());
    assert_eq!(
        meta.get("web").unwrap().metadata.label("tier"),
        Some("front")
    );
    assert_eq!(meta.list(&ListParams::default()).unwrap().items.len(), 5);
    assert!(
        accepts(&server, "/pods")
            .iter()
            .any(|a| a
                .starts_with("application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList"))
    );
    // A watch from a list's version: frames.
    let rv = pods
        .list(&ListParams::default())
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = pods
        .watch(&WatchParams::from_version(&rv).timeout(5))
        .unwrap();
    pods.delete("p-0", &DeleteParams::default()).unwrap();
    match stream.next().unwrap().unwrap() {
        // Graceful: marked first (a pod bound to a node), or gone.
        WatchEvent::Modified(p) => {
            assert_eq!(p.metadata.name.as_deref(), Some("p-0"));
            assert!(p.metadata.deletion_timestamp.is_some());
        }
        WatchEvent::Deleted(p) => assert_eq!(p.metadata.name.as_deref(), Some("p-0")),
        other => panic!("{}", other.type_name()),
    }

    // The server's refusals, as captured.
    let (code, ct, body) = raw(
        &server,
        "GET",
        "/apis/example.com/v1/namespaces/lab/widgets",
        &[("accept", PB)],
        b"",
    );
    assert_eq!((code, ct.as_str()), (406, PB));
    assert_eq!(pb_status(&body), capture_status("crd-get-accept-protobuf"));
    let (code, ct, _) = raw(
        &server,
        "GET",
        "/apis/example.com/v1/namespaces/lab/widgets",
        &[("accept", PB_OR_JSON)],
        b"",
    );
    assert_eq!((code, ct.as_str()), (200, "application/json"));
    let (code, ct, body) = raw(
        &server,
        "PATCH",
        "/api/v1/namespaces/lab/pods/web",
        &[("accept", PB), ("content-type", PB)],
        b"k8s\0",
    );
    assert_eq!((code, ct.as_str()), (415, PB));
    let want = capture_status("status-415-patch-content-type-protobuf");
    assert_eq!(pb_status(&body).message, want.message);
    let bare = base64_body("status-400-create-bare-protobuf-body");
    let (code, _, body) = raw(
        &server,
        "POST",
        "/api/v1/namespaces/lab/configmaps",
        &[("accept", PB), ("content-type", PB)],
        &bare,
    );
    assert_eq!(code, 400);
    assert_eq!(
        pb_status(&body).message,
        capture_status("status-400-create-bare-protobuf-body").message
    );
    let secret = base64_body("status-400-create-kind-mismatch-protobuf-body");
    let (code, _, body) = raw(
        &server,
        "POST",
        "/api/v1/namespaces/lab/configmaps",
        &[("accept", PB), ("content-type", PB)],
        &secret,
    );
    assert_eq!(code, 400);
    assert_eq!(
        pb_status(&body).message,
        capture_status("status-400-create-kind-mismatch-protobuf-body").message
    );
    // A captured protobuf ConfigMap body creates the ConfigMap.
    let cm = base64_body("create-configmap-protobuf-body");
    let (code, ct, body) = raw(
        &server,
        "POST",
        "/api/v1/namespaces/lab/configmaps",
        &[("accept", PB), ("content-type", PB)],
        &cm,
    );
    assert_eq!(
        (code, ct.as_str()),
        (201, PB),
        "{}",
        String::from_utf8_lossy(&body)
    );
    let cms: Api<ConfigMap> = Api::namespaced(client(&server), NS);
    let stored = cms.list(&ListParams::default()).unwrap();
    assert_eq!(stored.items.len(), 1);
    assert!(stored.items[0].data.as_ref().is_some_and(|d| !d.is_empty()));
    // A custom resource's protobuf body: no answer at all, as kube-apiserver's crash.
    let (code, _, _) = raw(
        &server,
        "POST",
        "/apis/example.com/v1/namespaces/lab/widgets",
        &[("accept", PB), ("content-type", PB)],
        b"k8s\0",
    );
    assert_eq!(code, 0);
}

/// The `Status` a capture's protobuf body holds.
fn capture_status(name: &str) -> Status {
    pb_status(&capture_body(&capture(name)))
}

fn capture(name: &str) -> Value {
    serde_json::from_slice(&fixture(&format!("protobuf/{name}.json"))).unwrap()
}

fn capture_body(c: &Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(c["response"]["bodyBase64"].as_str().unwrap_or(""))
        .unwrap()
}

fn base64_body(name: &str) -> Vec<u8> {
    let c = capture(name);
    base64::engine::general_purpose::STANDARD
        .decode(c["request"]["body"]["bodyBase64"].as_str().unwrap())
        .unwrap()
}

// ---- the captures' exact bytes, replayed ----

/// A raw loopback server answering each connection with the next capture, byte for byte
/// (its status line, content type, and body, chunked as captured when it was), and
/// recording each request's line and `Accept`.
struct Replay {
    url: String,
    seen: Arc<Mutex<Vec<(String, String)>>>,
}

fn replay(names: &[&str]) -> Replay {
    replay_values(names.iter().map(|n| capture(n)).collect())
}

/// [`replay`] of answers given as capture-shaped values.
fn replay_values(answers: Vec<Value>) -> Replay {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let mut queue: VecDeque<Value> = answers.into();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::Builder::new()
        .name("test/pb-replay".into())
        .spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let Some(c) = queue.pop_front() else { return };
                let request = common::raw_request::read_request(&stream);
                let accept = request.header("accept").to_owned();
                log.lock().unwrap().push((request.line, accept));
                let r = &c["response"];
                let ct = r["headers"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|h| h[0].as_str().unwrap().eq_ignore_ascii_case("content-type"))
                    .map(|h| h[1].as_str().unwrap().to_owned())
                    .unwrap_or_default();
                let mut out = format!(
                    "{}\r\ncontent-type: {ct}\r\nconnection: close\r\n",
                    r["status_line"].as_str().unwrap()
                )
                .into_bytes();
                match r["body_chunks"].as_array() {
                    Some(chunks) => {
                        out.extend_from_slice(b"transfer-encoding: chunked\r\n\r\n");
                        for ch in chunks {
                            let bytes = base64::engine::general_purpose::STANDARD
                                .decode(ch.as_str().or(ch["base64"].as_str()).unwrap_or(""))
                                .unwrap();
                            if bytes.is_empty() {
                                continue;
                            }
                            out.extend_from_slice(format!("{:x}\r\n", bytes.len()).as_bytes());
                            out.extend_from_slice(&bytes);
                            out.extend_from_slice(b"\r\n");
                        }
                        out.extend_from_slice(b"0\r\n\r\n");
                    }
                    None => {
                        let body = match r.get("bodyBase64") {
                            Some(_) => capture_body(&c),
                            None => r["bodyText"].as_str().unwrap_or("").as_bytes().to_vec(),
                        };
                        out.extend_from_slice(
                            format!("content-length: {}\r\n\r\n", body.len()).as_bytes(),
                        );
                        out.extend_from_slice(&body);
                    }
                }
                let _ = stream.write_all(&out);
                let _ = stream.flush();
            }
        })
        .unwrap();
    Replay { url, seen }
}

impl Replay {
    fn client(&self) -> Client {
        let mut c = ClientConfig::new(self.url.clone());
        c.qps = 0.0;
        Client::new(c).unwrap()
    }

    fn accepts(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|(_, a)| a.clone())
            .collect()
    }
}

/// The object of a JSON capture's body.
fn json_body<T: serde::de::DeserializeOwned>(name: &str) -> T {
    serde_json::from_slice(&capture_body(&capture(name))).unwrap()
}

#[test]
fn the_client_reads_a_captured_protobuf_pod_as_the_json_capture_of_it() {
    let r = replay(&["get-pod-running", "get-pod-metadata", "status-404-get-pod"]);
    let pods: Api<Pod> = Api::namespaced(r.client(), "cap-pb-main");
    let from_protobuf = pods.get("web-running").unwrap();
    let from_json: Pod = json_body("get-pod-running-json");
    assert_eq!(from_protobuf, from_json);
    let meta: Api<PartialObjectMetadata> =
        Api::namespaced_with(r.client(), "cap-pb-main", &ApiResource::of::<Pod>());
    let m = meta.get("web-running").unwrap();
    assert_eq!(m.metadata.name(), "web-running");
    assert_eq!(m.metadata.uid(), from_json.metadata.uid.as_deref());
    let err = pods.get("nosuchpod").unwrap_err();
    assert!(err.is_not_found(), "{err}");
    assert_eq!(
        err.status().unwrap().message,
        "pods \"nosuchpod\" not found"
    );
    let accepts = r.accepts();
    assert_eq!(accepts[0], PB_OR_JSON);
    assert!(accepts[1].starts_with(
        "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
    ));
}

#[test]
fn the_client_reads_captured_protobuf_list_pages_and_metadata_lists() {
    let r = replay(&[
        "list-pods-limit2-page1",
        "list-pods-limit2-page2",
        "list-pods-limit2-page3",
        "list-pods-empty",
        "list-pods-metadata",
    ]);
    let pods: Api<Pod> = Api::namespaced(r.client(), "cap-pb-main");
    let pages: Vec<_> = pods
        .pages(&ListParams::default().limit(2))
        .map(|p| p.unwrap().list)
        .collect();
    assert_eq!(
        pages.iter().map(|p| p.items.len()).collect::<Vec<_>>(),
        [2, 2, 1]
    );
    assert_eq!(pages[0].metadata.remaining_item_count, Some(3));
    assert_eq!(pages[1].metadata.remaining_item_count, Some(1));
    assert!(pages[2].metadata.continue_token.is_none());
    assert!(pages[2].metadata.resource_version.is_some());
    let seen = r.seen.lock().unwrap().clone();
    assert!(seen[1].0.contains("continue="), "{seen:?}");
    let empty: Api<Pod> = Api::namespaced(r.client(), "cap-pb-empty");
    let list = empty.list(&ListParams::default()).unwrap();
    assert!(list.items.is_empty());
    assert_eq!(list.metadata.resource_version.as_deref(), Some("184691"));
    let meta: Api<PartialObjectMetadata> =
        Api::namespaced_with(r.client(), "cap-pb-main", &ApiResource::of::<Pod>());
    let list = meta.list(&ListParams::default()).unwrap();
    assert!(!list.items.is_empty());
    assert!(list.items.iter().all(|i| !i.metadata.name().is_empty()));
}

#[test]
fn the_client_reads_captured_protobuf_watches_cut_across_chunks() {
    let r = replay(&[
        "watch-pods-bookmarks",
        "streaming-list-pods",
        "watch-pods-metadata",
        "watch-pods-rv1-410",
    ]);
    let pods: Api<Pod> = Api::namespaced(r.client(), "cap-pb-main");
    let types: Vec<&str> = pods
        .watch(&WatchParams::default())
        .unwrap()
        .map(|e| e.unwrap().type_name())
        .collect();
    assert_eq!(
        types,
        ["ADDED", "MODIFIED", "MODIFIED", "DELETED", "BOOKMARK", "BOOKMARK"]
    );
    let events: Vec<_> = pods
        .watch(&WatchParams::default())
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(events.len(), 6);
    assert!(events[..5]
        .iter()
        .all(|e| matches!(e, WatchEvent::Added(_))));
    match &events[5] {
        WatchEvent::Bookmark(b) => {
            assert!(b.is_initial_events_end());
            assert!(!b.resource_version.is_empty());
        }
        other => panic!("{}", other.type_name()),
    }
    let meta: Api<PartialObjectMetadata> =
        Api::namespaced_with(r.client(), "cap-pb-main", &ApiResource::of::<Pod>());
    let names: Vec<String> = meta
        .watch(&WatchParams::default())
        .unwrap()
        .filter_map(|e| match e.unwrap() {
            WatchEvent::Added(m) | WatchEvent::Modified(m) | WatchEvent::Deleted(m) => {
                Some(m.metadata.name().to_owned())
            }
            _ => None,
        })
        .collect();
    assert_eq!(names, ["w-1", "w-1", "w-1", "w-1"]);
    let first = pods.watch(&WatchParams::default()).unwrap().next().unwrap();
    let err = first.unwrap_err();
    assert!(err.is_gone(), "{err}");
    assert_eq!(
        err.status().unwrap().message,
        "too old resource version: 1 (164594)"
    );
}

#[test]
fn the_client_reads_captured_protobuf_write_answers_and_json_fallbacks() {
    let r = replay(&[
        "create-configmap-protobuf-body",
        "status-409-update-configmap-stale-rv",
        "status-401-bad-token",
        "crd-get-accept-protobuf-json",
        "crd-watch-accept-protobuf-json",
        "delete-configmap-accept-protobuf",
    ]);
    let cms: Api<ConfigMap> = Api::namespaced(r.client(), "cap-pb-main");
    let created = cms
        .create(&PostParams::default(), &ConfigMap::default())
        .unwrap();
    assert!(created.metadata.uid.is_some());
    assert!(created.binary_data.is_some());
    let err = cms
        .replace("x", &PostParams::default(), &created)
        .unwrap_err();
    assert!(err.is_conflict(), "{err}");
    let err = cms.get("x").unwrap_err();
    assert_eq!(err.status().unwrap().code, 401);
    // A custom resource answered in JSON although protobuf was accepted first.
    let gadgets = ApiResource::new("pbcap.example.com", "v1", "Gadget", "gadgets", true);
    let g: Api<DynamicObject> = Api::namespaced_with(r.client(), "cap-pb-main", &gadgets);
    assert!(!g.get("x").unwrap().metadata.name().is_empty());
    let events = g.watch(&WatchParams::default()).unwrap().count();
    assert!(events > 0);
    // A DELETE answered by a protobuf Status.
    match cms.delete("x", &DeleteParams::default()).unwrap() {
        kube_informer::client::DeleteResponse::Status(st) => {
            assert_eq!(st.status, "Success");
            assert!(st.details.is_some());
        }
        kube_informer::client::DeleteResponse::Object(_) => panic!("an object"),
    }
    assert_eq!(r.accepts().last().map(String::as_str), Some(PB_OR_JSON));
}

#[test]
fn hostile_protobuf_watch_frames_are_errors_never_a_panic_a_hang_or_a_huge_allocation() {
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let watch = |chunks: Vec<Vec<u8>>| {
        json!({"response": {
            "status_line": "HTTP/1.1 200 OK",
            "headers": [["Content-Type", "application/vnd.kubernetes.protobuf;stream=watch"]],
            "body_chunks": chunks.iter().map(|c| b64(c)).collect::<Vec<_>>(),
        }})
    };
    // A frame of garbage, then one frame announcing 4 GiB that never comes.
    let mut garbage = 5u32.to_be_bytes().to_vec();
    garbage.extend_from_slice(b"\xff\xff\xff\xff\xff");
    let huge = u32::MAX.to_be_bytes().to_vec();
    // A length cut in two (the stream ends after 2 of its 4 bytes).
    let r = replay_values(vec![
        watch(vec![garbage.clone(), huge, b"k8s".to_vec()]),
        watch(vec![garbage, vec![0, 0]]),
        json!({"response": {"status_line": "HTTP/1.1 403 Forbidden",
            "headers": [["Content-Type", "application/vnd.kubernetes.protobuf"]],
            "bodyBase64": b64(b"k8s\0\x0a\xff\xff\xff\xff\x0f")}}),
    ]);
    let pods: Api<Pod> = Api::namespaced(r.client(), NS);
    for _ in 0..2 {
        let items: Vec<_> = pods.watch(&WatchParams::default()).unwrap().collect();
        assert_eq!(items.len(), 2, "{items:?}");
        for item in &items {
            let err = item.as_ref().unwrap_err();
            assert!(
                matches!(err, kube_informer::Error::WatchLine { .. }),
                "{err}"
            );
        }
    }
    // An error body that is not a decodable Status: the code, never the bytes.
    let err = pods.get("x").unwrap_err();
    assert_eq!(err.status().unwrap().code, 403);
    assert_eq!(err.status().unwrap().reason, "Forbidden");
}
