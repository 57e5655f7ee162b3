//! Discovery over real loopback HTTP: the captured documents of a real kube-apiserver served
//! as they were (aggregated v2 with ETag and 304, and the legacy documents), the test server's
//! discovery compared with those captures field by field, the disk cache (hits, expiry,
//! damaged files, one refresh on a miss, concurrent writers) and the REST mapper.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use common::capture::{self, Compare};
use common::*;
use kube_informer::api::ApiResource;
use kube_informer::cache::SharedInformerFactory;
use kube_informer::discovery::{host_dir_name, Discovery, DiskCache, Origin, RestMapper};
use kube_informer::testing::{ApiServer, Subresources};
use kube_informer::Client;

// ---- A server that answers with the captures themselves. ----

/// Serves the captured discovery documents by path; counts requests and 304s.
struct FixtureServer {
    url: String,
    requests: Arc<parking_lot::Mutex<Vec<String>>>,
    not_modified: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Drop for FixtureServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.url.trim_start_matches("http://"));
    }
}

/// `aggregated`: `/api` and `/apis` answer v2 when asked; `overrides`: path -> raw body, or
/// `!503` for a 503 Status (an aggregated API server that is down).
fn fixture_server(aggregated: bool, overrides: HashMap<String, String>) -> FixtureServer {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let requests = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let not_modified = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (r2, n2, s2) = (requests.clone(), not_modified.clone(), stop.clone());
    std::thread::Builder::new()
        .name("test/discovery-fixtures".into())
        .spawn(move || {
            for stream in listener.incoming() {
                if s2.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let (r3, n3, o3) = (r2.clone(), n2.clone(), overrides.clone());
                std::thread::spawn(move || serve(stream, aggregated, &o3, &r3, &n3));
            }
        })
        .unwrap();
    FixtureServer {
        url,
        requests,
        not_modified,
        stop,
    }
}

fn serve(
    stream: TcpStream,
    aggregated: bool,
    overrides: &HashMap<String, String>,
    requests: &parking_lot::Mutex<Vec<String>>,
    not_modified: &AtomicUsize,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
        let mut headers = HashMap::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) <= 2 {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
            }
        }
        requests.lock().push(format!("GET {path}"));
        let wants_v2 = aggregated
            && headers
                .get("accept")
                .is_some_and(|a| a.contains("as=APIGroupDiscoveryList"));
        let name = match (path.as_str(), wants_v2) {
            ("/api", true) => "discovery-api-aggregated-v2",
            ("/apis", true) => "discovery-apis-aggregated-v2-v1.36",
            ("/api", false) => "discovery-api",
            ("/apis", false) => "discovery-apis",
            ("/api/v1", _) => "discovery-api-v1",
            ("/apis/apps/v1", _) => "discovery-apps-v1",
            ("/apis/coordination.k8s.io/v1", _) => "discovery-coordination-v1",
            ("/apis/lab.example.com/v1", _) => "discovery-crd-group",
            ("/version", _) => "version-v1.36.2",
            _ => "",
        };
        let (code, content_type, etag, body) = if overrides.get(&path).is_some_and(|b| b == "!503")
        {
            (503, "application/json".to_owned(), None, br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"service unavailable","reason":"ServiceUnavailable","code":503}"#.to_vec())
        } else if let Some(b) = overrides.get(&path) {
            (
                200,
                "application/json".to_owned(),
                None,
                b.clone().into_bytes(),
            )
        } else if name.is_empty() {
            (404, "application/json".to_owned(), None, br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}"#.to_vec())
        } else {
            let head = String::from_utf8(fixture(&format!("{name}.json.headers"))).unwrap();
            let header = |n: &str| {
                head.lines()
                    .find_map(|l| l.strip_prefix(&format!("{n}: ")).map(str::to_owned))
            };
            (
                200,
                header("content-type").unwrap(),
                header("etag"),
                fixture(&format!("{name}.json")),
            )
        };
        let resp = match &etag {
            Some(tag) if headers.get("if-none-match") == Some(tag) => {
                not_modified.fetch_add(1, Ordering::SeqCst);
                format!("HTTP/1.1 304 Not Modified\r\netag: {tag}\r\ncache-control: public\r\nvary: Accept\r\n\r\n").into_bytes()
            }
            _ => {
                let mut r = format!(
                    "HTTP/1.1 {code} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n",
                    body.len()
                );
                if let Some(tag) = &etag {
                    r.push_str(&format!("etag: {tag}\r\n"));
                }
                r.push_str("\r\n");
                let mut r = r.into_bytes();
                r.extend_from_slice(&body);
                r
            }
        };
        if out.write_all(&resp).and_then(|_| out.flush()).is_err() {
            return;
        }
    }
}

fn client_for(url: &str) -> Client {
    Client::new(kube_informer::ClientConfig::new(url)).unwrap()
}

fn widgets_server() -> ApiServer {
    ApiServer::builder()
        .subresources(&widgets(), Subresources::none().with_status())
        .short_names(&widgets(), &["wdg"])
        .start()
}

fn find<'a>(
    data: &'a kube_informer::discovery::DiscoveryData,
    gv: &str,
    plural: &str,
) -> &'a kube_informer::discovery::ServerResource {
    data.resources
        .get(gv)
        .and_then(|rs| rs.iter().find(|r| r.plural == plural))
        .unwrap_or_else(|| panic!("{gv} {plural} not discovered"))
}

// ---- The client parses every capture. ----

#[test]
fn parses_the_captured_aggregated_documents_with_one_request_each() {
    let server = fixture_server(true, HashMap::new());
    let d = client_for(&server.url).discovery();
    let data = d.data().unwrap();
    assert_eq!(*server.requests.lock(), ["GET /api", "GET /apis"]);
    assert_eq!(data.groups[0].name, "");
    assert_eq!(data.groups.len(), 22, "core + the 21 groups of the capture");
    let autoscaling = data
        .groups
        .iter()
        .find(|g| g.name == "autoscaling")
        .unwrap();
    assert_eq!(autoscaling.versions, ["v2", "v1"], "preferred first");
    let pods = find(&data, "v1", "pods");
    assert_eq!(
        (pods.kind.as_str(), pods.singular.as_str(), pods.namespaced),
        ("Pod", "pod", true)
    );
    assert_eq!(pods.short_names, ["po"]);
    assert!(
        pods.subresources.contains(&"status".to_string())
            && pods.subresources.contains(&"log".to_string())
    );
    assert_eq!(pods.categories, ["all"]);
    let deploy = find(&data, "apps/v1", "deployments");
    assert_eq!(deploy.subresources, ["scale", "status"]);
    assert!(deploy.supports("watch"));
    let widgets = find(&data, "lab.example.com/v1", "widgets");
    assert_eq!(
        (widgets.kind.as_str(), widgets.short_names.clone()),
        ("Widget", vec!["wdg".to_string()])
    );
    assert!(!find(&data, "v1", "nodes").namespaced);
    // The other aggregated capture (another server, without the custom resource) too.
    let older = String::from_utf8(fixture("discovery-apis-aggregated-v2.json")).unwrap();
    let server2 = fixture_server_with_aggregated_body(older);
    let data = client_for(&server2.url).discovery().data().unwrap();
    assert_eq!(
        find(&data, "coordination.k8s.io/v1", "leases").kind,
        "Lease"
    );
}

#[test]
fn parses_the_captured_legacy_documents() {
    let server = fixture_server(false, HashMap::new());
    let d = client_for(&server.url).discovery();
    let data = d.data().unwrap();
    let reqs = server.requests.lock().clone();
    assert!(
        reqs.contains(&"GET /api/v1".to_string())
            && reqs.contains(&"GET /apis/apps/v1".to_string()),
        "{reqs:?}"
    );
    assert_eq!(data.groups.len(), 22);
    // Captured group-versions decode; the others (404 here) are skipped.
    assert_eq!(find(&data, "v1", "configmaps").short_names, ["cm"]);
    assert_eq!(
        find(&data, "apps/v1", "deployments").subresources,
        ["scale", "status"]
    );
    assert_eq!(
        find(&data, "coordination.k8s.io/v1", "leases").kind,
        "Lease"
    );
    let w = find(&data, "lab.example.com/v1", "widgets");
    assert_eq!(w.subresources, ["status"]);
    assert!(!data.resources.contains_key("batch/v1"));
    // The same resources as the aggregated capture says, where both were captured.
    let agg = fixture_server(true, HashMap::new());
    let adata = client_for(&agg.url).discovery().data().unwrap();
    for gv in ["apps/v1", "coordination.k8s.io/v1", "lab.example.com/v1"] {
        assert_eq!(data.resources[gv], adata.resources[gv], "{gv}");
    }
}

#[test]
fn parses_the_captured_versions() {
    for name in ["version", "version-v1.36.2"] {
        let v: kube_informer::discovery::ServerVersion =
            serde_json::from_slice(&fixture(&format!("{name}.json"))).unwrap();
        assert_eq!(v.major, "1", "{name}");
        assert!(v.git_version.starts_with("v1.3"), "{name}");
    }
    let server = fixture_server(true, HashMap::new());
    let v = client_for(&server.url)
        .discovery()
        .server_version()
        .unwrap();
    assert_eq!(
        (
            v.minor.as_str(),
            v.git_version.as_str(),
            v.platform.as_str()
        ),
        ("36", "v1.36.2", "linux/amd64")
    );
}

#[test]
fn a_malformed_document_is_an_error_naming_its_group_version() {
    let mut o = HashMap::new();
    o.insert(
        "/apis/apps/v1".to_string(),
        r#"{"kind":"APIResourceList","groupVersion":"apps/v1","resources":[{"name":"x"#.to_string(),
    );
    let server = fixture_server(false, o);
    let err = client_for(&server.url)
        .discovery()
        .data()
        .unwrap_err()
        .to_string();
    assert!(err.contains("apps/v1"), "{err}");

    let mut o = HashMap::new();
    o.insert(
        "/apis/apps/v1".to_string(),
        r#"{"kind":"APIResourceList","groupVersion":"batch/v1","resources":[]}"#.to_string(),
    );
    let server = fixture_server(false, o);
    let err = client_for(&server.url)
        .discovery()
        .data()
        .unwrap_err()
        .to_string();
    assert!(err.contains("apps/v1") && err.contains("batch/v1"), "{err}");

    // Aggregated: a resource with an unknown scope, served with the v2 content type.
    let mut doc: serde_json::Value =
        serde_json::from_slice(&fixture("discovery-apis-aggregated-v2-v1.36.json")).unwrap();
    doc["items"][1]["versions"][0]["resources"][0]["scope"] = "Galaxy".into();
    let listener_server = fixture_server_with_aggregated_body(doc.to_string());
    let err = client_for(&listener_server.url)
        .discovery()
        .data()
        .unwrap_err()
        .to_string();
    assert!(err.contains("apps/v1") && err.contains("Galaxy"), "{err}");
}

/// The aggregated fixture server with `/apis` replaced by `body` (still served as v2).
fn fixture_server_with_aggregated_body(body: String) -> FixtureServer {
    // The fixture server's overrides are plain JSON: this one serves v2.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            if s2.load(Ordering::SeqCst) {
                return;
            }
            let Ok(stream) = stream else { continue };
            let body = body.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut out = stream;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
                    let mut h = String::new();
                    while reader.read_line(&mut h).unwrap_or(0) > 2 {
                        h.clear();
                    }
                    let b = if path == "/apis" {
                        body.clone().into_bytes()
                    } else {
                        fixture("discovery-api-aggregated-v2.json")
                    };
                    let head = format!("HTTP/1.1 200 OK\r\ncontent-type: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList\r\ncontent-length: {}\r\n\r\n", b.len());
                    if out
                        .write_all(head.as_bytes())
                        .and_then(|_| out.write_all(&b))
                        .is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    FixtureServer {
        url,
        requests: Arc::default(),
        not_modified: Arc::default(),
        stop,
    }
}

#[test]
fn a_refresh_revalidates_by_etag_and_reuses_the_answer_on_304() {
    let server = fixture_server(true, HashMap::new());
    let d = client_for(&server.url).discovery();
    let first = d.data().unwrap();
    let second = d.refresh().unwrap();
    assert_eq!(
        server.not_modified.load(Ordering::SeqCst),
        2,
        "both /api and /apis answered 304"
    );
    assert_eq!(first, second);
    assert_eq!(server.requests.lock().len(), 4);
}

// ---- The test server's documents have the captured shape. ----

fn with_header(mut req: capture::Request, name: &str, value: &str) -> capture::Request {
    req.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
    req.headers.push((name.to_owned(), value.to_owned()));
    req
}

#[test]
fn the_test_server_serves_discovery_as_captured() {
    let server = widgets_server();
    let cmp = Compare::new();
    // Aggregated: the same documents (the built-ins and the registered custom resource).
    let apis = capture::replay(&server, "discovery-apis-aggregated-v2-v1.36");
    cmp.assert("discovery-apis-aggregated-v2-v1.36", &apis);
    let etag = apis.header("etag").unwrap().to_owned();
    assert!(
        etag.len() == 130
            && etag.starts_with('"')
            && etag[1..129]
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_lowercase()),
        "{etag}"
    );
    assert_eq!(apis.header("vary"), Some("Accept"));
    let api = capture::replay(&server, "discovery-api-aggregated-v2");
    cmp.assert("discovery-api-aggregated-v2", &api);
    // 304 to the ETag just served, with the captured headers and no body.
    for (name, tag) in [
        ("discovery-apis-aggregated-v2-v1.36-304", etag.clone()),
        (
            "discovery-api-aggregated-v2-304",
            api.header("etag").unwrap().to_owned(),
        ),
    ] {
        let req = with_header(capture::request(name), "If-None-Match", &tag);
        let answer = capture::send(server.addr(), &req);
        cmp.assert(name, &answer);
        assert_eq!(answer.header("etag"), Some(tag.as_str()));
        assert!(answer.body.is_empty());
    }
    // A wrong ETag gets the whole document.
    let req = with_header(
        capture::request("discovery-apis-aggregated-v2-v1.36-304"),
        "If-None-Match",
        "\"0\"",
    );
    assert_eq!(capture::send(server.addr(), &req).code, 200);

    // Legacy.
    let hash = Compare::new().ignore("**.storageVersionHash");
    hash.assert(
        "discovery-apis",
        &capture::replay(&server, "discovery-apis"),
    );
    hash.assert(
        "discovery-apps-v1",
        &capture::replay(&server, "discovery-apps-v1"),
    );
    hash.assert(
        "discovery-coordination-v1",
        &capture::replay(&server, "discovery-coordination-v1"),
    );
    let get = |path: &str| {
        capture::send(
            server.addr(),
            &capture::Request {
                method: "GET".into(),
                target: path.into(),
                headers: vec![("Accept".into(), "application/json".into())],
                body: Vec::new(),
            },
        )
    };
    hash.assert("discovery-crd-group", &get("/apis/lab.example.com/v1"));
    hash.assert("discovery-api-v1", &get("/api/v1"));
    Compare::new()
        .volatile("serverAddressByClientCIDRs.0.serverAddress")
        .assert("discovery-api", &get("/api"));
    Compare::new()
        .volatile("gitVersion")
        .volatile("gitCommit")
        .volatile("buildDate")
        .volatile("goVersion")
        .volatile("platform")
        .assert(
            "version-v1.36.2",
            &capture::replay(&server, "version-v1.36.2"),
        );
    // The group document and a missing one.
    let g = get("/apis/apps").json();
    assert_eq!(
        (
            g["kind"].as_str(),
            g["preferredVersion"]["groupVersion"].as_str()
        ),
        (Some("APIGroup"), Some("apps/v1"))
    );
    assert_eq!(get("/apis/nothing.example.com/v1").code, 404);

    // Legacy only: the same Accept gets the plain APIGroupList.
    server.set_aggregated_discovery(false);
    let plain = capture::replay(&server, "discovery-apis-aggregated-v2-v1.36");
    assert_eq!(plain.header("content-type"), Some("application/json"));
    assert_eq!(plain.json()["kind"], "APIGroupList");
}

#[test]
fn aggregated_and_legacy_discovery_of_the_test_server_agree() {
    let server = widgets_server();
    let client = Client::new(server.client_config()).unwrap();
    let aggregated = client.discovery().data().unwrap();
    assert_eq!(server.requests(), ["GET /api", "GET /apis"]);
    server.set_aggregated_discovery(false);
    let legacy = client.discovery().data().unwrap();
    let reqs = server.requests();
    assert!(
        reqs.contains(&"GET /api/v1".to_string())
            && reqs.contains(&"GET /apis/lab.example.com/v1".to_string()),
        "{reqs:?}"
    );
    assert_eq!(*aggregated, *legacy);
    let w = find(&legacy, "lab.example.com/v1", "widgets");
    assert_eq!(
        (w.kind.as_str(), w.singular.as_str(), w.subresources.clone()),
        ("Widget", "widget", vec!["status".to_string()])
    );
}

// ---- The disk cache. ----

fn disk(root: &Path, server: &ApiServer) -> DiskCache {
    DiskCache::new(root, &server.url())
}

#[test]
fn the_disk_cache_is_kubectls_layout_and_a_second_client_reads_it_without_a_request() {
    let root = tempfile::tempdir().unwrap();
    let server = widgets_server();
    let client = Client::new(server.client_config()).unwrap();
    let first = Discovery::new(client.clone()).with_disk_cache(disk(root.path(), &server));
    let (data, origin) = first.data_with_origin().unwrap();
    assert_eq!(origin, Origin::Server);
    let dir = root.path().join(host_dir_name(&server.url()));
    assert_eq!(
        dir.file_name().unwrap().to_str().unwrap(),
        format!("127.0.0.1_{}", server.addr().port())
    );
    for f in [
        "servergroups.json",
        "v1/serverresources.json",
        "apps/v1/serverresources.json",
        "lab.example.com/v1/serverresources.json",
    ] {
        assert!(dir.join(f).is_file(), "{f}");
        // kubectl's permissions: no access for others (0660 files, 0750 directories).
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.join(f)).unwrap().permissions().mode();
            assert_eq!(mode & 0o007, 0, "{f}: mode {mode:o}");
            let parent = std::fs::metadata(dir.join(f).parent().unwrap()).unwrap();
            assert_eq!(parent.permissions().mode() & 0o007, 0, "{f}'s directory");
        }
    }
    let groups: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("servergroups.json")).unwrap()).unwrap();
    assert_eq!(groups["kind"], "APIGroupList");
    assert_eq!(groups["groups"][0]["name"], "");
    let apps: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("apps/v1/serverresources.json")).unwrap())
            .unwrap();
    assert_eq!(apps["groupVersion"], "apps/v1");
    assert!(apps["resources"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["name"] == "deployments/scale"));

    let before = server.requests().len();
    let second = Discovery::new(client).with_disk_cache(disk(root.path(), &server));
    let (cached, origin) = second.data_with_origin().unwrap();
    assert_eq!(origin, Origin::Disk);
    assert_eq!(*cached, *data);
    assert_eq!(server.requests().len(), before, "a cache hit sends nothing");
    assert_eq!(second.data_with_origin().unwrap().1, Origin::Memory);
}

fn age_files(dir: &Path, by: Duration) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            age_files(&p, by);
        } else {
            let f = std::fs::File::options().write(true).open(&p).unwrap();
            f.set_modified(SystemTime::now() - by).unwrap();
        }
    }
}

#[test]
fn cache_files_older_than_the_ttl_are_refetched() {
    let root = tempfile::tempdir().unwrap();
    let server = ApiServer::start();
    let client = Client::new(server.client_config()).unwrap();
    Discovery::new(client.clone())
        .with_disk_cache(disk(root.path(), &server))
        .data()
        .unwrap();
    let dir = root.path().join(host_dir_name(&server.url()));
    age_files(&dir, Duration::from_secs(9 * 60));
    let d = Discovery::new(client.clone()).with_disk_cache(disk(root.path(), &server));
    assert_eq!(
        d.data_with_origin().unwrap().1,
        Origin::Disk,
        "9 minutes old: fresh"
    );
    age_files(&dir, Duration::from_secs(11 * 60));
    let before = server.requests().len();
    let d = Discovery::new(client.clone()).with_disk_cache(disk(root.path(), &server));
    assert_eq!(
        d.data_with_origin().unwrap().1,
        Origin::Server,
        "11 minutes old: expired"
    );
    assert_eq!(server.requests().len(), before + 2);
    // Rewritten: fresh again. And an injected TTL of zero always refetches.
    let d = Discovery::new(client.clone()).with_disk_cache(disk(root.path(), &server));
    assert_eq!(d.data_with_origin().unwrap().1, Origin::Disk);
    let d =
        Discovery::new(client).with_disk_cache(disk(root.path(), &server).with_ttl(Duration::ZERO));
    assert_eq!(d.data_with_origin().unwrap().1, Origin::Server);
}

#[test]
fn a_damaged_or_foreign_cache_file_is_a_miss_that_is_refetched_and_overwritten() {
    let server = widgets_server();
    let client = Client::new(server.client_config()).unwrap();
    let truth = client.discovery().data().unwrap();
    let damages: Vec<(&str, Vec<u8>)> = vec![
        ("servergroups.json", b"".to_vec()),
        ("servergroups.json", b"{\"kind\":\"APIGroupList\",\"groups\":[{\"na".to_vec()),
        ("servergroups.json", b"\xff\xfe not json at all".to_vec()),
        ("servergroups.json", br#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"x"}}"#.to_vec()),
        ("servergroups.json", br#"{"kind":"APIGroupList","groups":[{"name":"../../escape","versions":[{"groupVersion":"../../escape/v1","version":"v1"}]}]}"#.to_vec()),
        ("servergroups.json", br#"[1,2,3]"#.to_vec()),
        ("apps/v1/serverresources.json", br#"{"kind":"APIResourceList","groupVersion":"batch/v1","resources":[]}"#.to_vec()),
        ("apps/v1/serverresources.json", b"{\"kind\":\"APIResourceList\",\"groupVersion\":\"apps/v1\",\"resources\":[{\"name\":".to_vec()),
        ("lab.example.com/v1/serverresources.json", b"null".to_vec()),
    ];
    for (file, bytes) in damages {
        let root = tempfile::tempdir().unwrap();
        Discovery::new(client.clone())
            .with_disk_cache(disk(root.path(), &server))
            .data()
            .unwrap();
        let path = root.path().join(host_dir_name(&server.url())).join(file);
        std::fs::write(&path, &bytes).unwrap();
        let before = server.requests().len();
        let d = Discovery::new(client.clone()).with_disk_cache(disk(root.path(), &server));
        let (data, origin) = d.data_with_origin().unwrap();
        let sent = server.requests()[before..].to_vec();
        // kubectl's rule: the groups file refetches everything, a group-version's file
        // that group-version alone.
        let (want_origin, want_sent) = match file.strip_suffix("/serverresources.json") {
            None => (
                Origin::Server,
                vec!["GET /api".to_owned(), "GET /apis".to_owned()],
            ),
            Some(gv) => (Origin::Disk, vec![format!("GET /apis/{gv}")]),
        };
        assert_eq!(
            (origin, sent),
            (want_origin, want_sent),
            "{file} damaged as {:?}",
            String::from_utf8_lossy(&bytes)
        );
        assert_eq!(*data, *truth);
        let d = Discovery::new(client.clone()).with_disk_cache(disk(root.path(), &server));
        assert_eq!(
            d.data_with_origin().unwrap().1,
            Origin::Disk,
            "{file} overwritten"
        );
        assert!(!root.path().join("escape").exists());
    }
    // A file replaced by a directory, and a missing group-version file.
    let root = tempfile::tempdir().unwrap();
    Discovery::new(client.clone())
        .with_disk_cache(disk(root.path(), &server))
        .data()
        .unwrap();
    let dir = root.path().join(host_dir_name(&server.url()));
    std::fs::remove_file(dir.join("v1/serverresources.json")).unwrap();
    let before = server.requests().len();
    let d = Discovery::new(client.clone()).with_disk_cache(disk(root.path(), &server));
    assert_eq!(d.data_with_origin().unwrap(), (truth.clone(), Origin::Disk));
    assert_eq!(server.requests()[before..], ["GET /api/v1"]);
    assert!(
        dir.join("v1/serverresources.json").is_file(),
        "written back"
    );
    std::fs::remove_file(dir.join("servergroups.json")).unwrap();
    std::fs::create_dir(dir.join("servergroups.json")).unwrap();
    let d = Discovery::new(client).with_disk_cache(disk(root.path(), &server));
    assert_eq!(
        d.data_with_origin().unwrap().0,
        truth,
        "an unwritable cache still answers"
    );
}

#[test]
fn a_miss_in_cached_data_refreshes_once_and_never_loops() {
    let root = tempfile::tempdir().unwrap();
    // The cache was written before the CRD existed (by another server under the same name).
    let before_crd = ApiServer::start();
    let name = "https://cluster.example:6443";
    Discovery::new(Client::new(before_crd.client_config()).unwrap())
        .with_disk_cache(DiskCache::new(root.path(), name))
        .data()
        .unwrap();
    let server = widgets_server();
    let client = Client::new(server.client_config()).unwrap();
    let mapper = RestMapper::new(
        Discovery::new(client.clone()).with_disk_cache(DiskCache::new(root.path(), name)),
    );
    assert_eq!(mapper.resolve("pods").unwrap().plural, "pods");
    assert!(server.requests().is_empty(), "a hit in the cache");
    assert_eq!(mapper.resolve("wdg").unwrap(), widgets());
    assert_eq!(server.requests(), ["GET /api", "GET /apis"], "one refresh");
    // Data fetched by this client: a miss costs no request.
    assert!(mapper.resolve("gadgets").is_err());
    assert_eq!(server.requests().len(), 2);
    // A name nobody has, looked up in cached data: one refresh, then the error.
    let mapper =
        RestMapper::new(Discovery::new(client).with_disk_cache(DiskCache::new(root.path(), name)));
    assert!(mapper.resolve("gadgets").is_err());
    assert_eq!(server.requests().len(), 4);
    assert!(mapper.resolve("gadgets").is_err());
    assert_eq!(server.requests().len(), 4);
}

#[test]
fn two_clients_sharing_a_cache_directory_write_it_concurrently() {
    let root = tempfile::tempdir().unwrap();
    let server = widgets_server();
    let client = Client::new(server.client_config()).unwrap();
    let truth = client.discovery().data().unwrap();
    let clients: Vec<Arc<Discovery>> = (0..2)
        .map(|_| {
            Arc::new(Discovery::new(client.clone()).with_disk_cache(disk(root.path(), &server)))
        })
        .collect();
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let d = clients[i % 2].clone();
            let (root, server_url, client, truth) = (
                root.path().to_owned(),
                server.url(),
                client.clone(),
                truth.clone(),
            );
            std::thread::spawn(move || {
                for _ in 0..5 {
                    assert_eq!(*d.refresh().unwrap(), *truth);
                    // A reader at the same time sees whole files (or refetches), never an error.
                    let reader = Discovery::new(client.clone())
                        .with_disk_cache(DiskCache::new(&root, &server_url));
                    assert_eq!(*reader.data().unwrap(), *truth);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let d = Discovery::new(client).with_disk_cache(disk(root.path(), &server));
    let (data, origin) = d.data_with_origin().unwrap();
    assert_eq!((origin, &*data), (Origin::Disk, &*truth));
    let leftovers: Vec<_> = walk(root.path())
        .into_iter()
        .filter(|p| p.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p.display().to_string());
        }
    }
    out
}

// ---- The mapper. ----

#[test]
fn the_mapper_resolves_kinds_names_and_short_names() {
    let server = widgets_server();
    let client = Client::new(server.client_config()).unwrap();
    let mapper = RestMapper::new(client.discovery());
    let deployments = ApiResource::new("apps", "v1", "Deployment", "deployments", true);
    for q in [
        "deployments",
        "deployment",
        "deploy",
        "Deployment",
        "DEPLOY",
        "deployments.apps",
        "deployments.v1.apps",
        "apps/v1/Deployment",
    ] {
        assert_eq!(mapper.resolve(q).unwrap(), deployments, "{q}");
    }
    assert_eq!(mapper.resolve("po").unwrap(), pods());
    assert_eq!(mapper.resolve("v1/Pod").unwrap(), pods());
    assert_eq!(mapper.resolve("wdg").unwrap(), widgets());
    assert_eq!(mapper.resolve("widget.lab.example.com").unwrap(), widgets());
    assert!(!mapper.resolve("nodes").unwrap().namespaced);
    // Core first for a name two groups share; a group picks the other.
    assert_eq!(mapper.resolve("events").unwrap().group, "");
    assert_eq!(
        mapper.resolve("events.events.k8s.io").unwrap().group,
        "events.k8s.io"
    );
    // The preferred version unless one is given.
    assert_eq!(mapper.resolve("hpa").unwrap().version, "v2");
    assert_eq!(
        mapper
            .kind(Some("autoscaling"), Some("v1"), "HorizontalPodAutoscaler")
            .unwrap()
            .version,
        "v1"
    );
    assert_eq!(
        mapper.kind(None, None, "Lease").unwrap().group,
        "coordination.k8s.io"
    );
    assert!(mapper.kind(Some("apps"), None, "Pod").is_err());
    // The close-match error.
    let err = mapper.resolve("deploymnets").unwrap_err().to_string();
    assert!(
        err.contains("deploymnets") && err.contains("deployments"),
        "{err}"
    );
    let err = mapper.resolve("widg").unwrap_err().to_string();
    assert!(err.contains("widgets"), "{err}");
    // Each close resource once, by its plural (and group): not Pod, pod, pods.
    let err = mapper.resolve("podz").unwrap_err().to_string();
    assert!(
        err.contains(r#"the server has no resource type "podz"; did you mean pods, nodes"#),
        "{err}"
    );
    let err = mapper.resolve("deploymnet").unwrap_err().to_string();
    assert!(err.ends_with("did you mean deployments.apps?"), "{err}");
    let err = mapper.resolve("zzzzzzzz").unwrap_err().to_string();
    assert!(
        err.contains("zzzzzzzz") && !err.contains("did you mean"),
        "{err}"
    );
    assert!(mapper.resolve("a/b/c/d").is_err() && mapper.resolve(" ").is_err());
}

#[test]
fn an_informer_for_a_resource_known_only_by_its_short_name() {
    let server = widgets_server();
    server
        .create(
            &widgets(),
            serde_json::json!({"metadata": {"name": "w1", "namespace": "lab"}}),
        )
        .unwrap();
    let client = Client::new(server.client_config()).unwrap();
    let mapper = RestMapper::new(client.discovery());
    let listed = mapper
        .api("wdg", Some("lab"))
        .unwrap()
        .list(&Default::default())
        .unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(mapper.api("Widget", None).unwrap().resource(), &widgets());
    let mapped = mapper.resolve("wdg").unwrap();
    let factory = SharedInformerFactory::new(client);
    let informer = factory.dynamic_informer(&mapped);
    factory.start().unwrap();
    assert!(informer.wait_for_cache_sync(PATIENCE));
    assert!(informer.lister().get(Some("lab"), "w1").is_some());
    factory.shutdown();
}

#[test]
fn memory_only_discovery_keeps_answers_for_its_ttl() {
    let server = ApiServer::start();
    let client = Client::new(server.client_config()).unwrap();
    let d = client.discovery();
    assert_eq!(d.data_with_origin().unwrap().1, Origin::Server);
    assert_eq!(d.data_with_origin().unwrap().1, Origin::Memory);
    assert_eq!(server.requests().len(), 2);
    // An injected TTL of zero: every call asks the server again.
    let d = Discovery::new(client).with_ttl(Duration::ZERO);
    assert_eq!(d.data_with_origin().unwrap().1, Origin::Server);
    assert_eq!(d.data_with_origin().unwrap().1, Origin::Server);
    assert_eq!(server.requests().len(), 6);
    d.invalidate();
    assert!(format!("{d:?}").contains("Discovery"));
}

// ---- kubectl's precedence: versions of a group, groups, kinds of match. ----

/// Group `lab.example.com` with v1 (preferred: registered first) and v1beta1: widgets in
/// both (the short name `wold` only in v1beta1's), gadgets (short name `gdg`) only in
/// v1beta1.
fn two_version_server() -> ApiServer {
    let old_widgets = ApiResource::new("lab.example.com", "v1beta1", "Widget", "widgets", true);
    ApiServer::builder()
        .resource(&widgets())
        .resource(&old_widgets)
        .resource(&gadgets_v1beta1())
        .short_names(&old_widgets, &["wold"])
        .short_names(&gadgets_v1beta1(), &["gdg"])
        .start()
}

fn gadgets_v1beta1() -> ApiResource {
    ApiResource::new("lab.example.com", "v1beta1", "Gadget", "gadgets", true)
}

#[test]
fn a_resource_only_a_non_preferred_version_serves_is_found_and_the_preferred_wins_otherwise() {
    let server = two_version_server();
    for aggregated in [true, false] {
        server.set_aggregated_discovery(aggregated);
        let client = Client::new(server.client_config()).unwrap();
        let groups = client.discovery().groups().unwrap();
        let lab = groups.iter().find(|g| g.name == "lab.example.com").unwrap();
        assert_eq!(lab.versions, ["v1", "v1beta1"], "v1 preferred");
        let mapper = RestMapper::new(client.discovery());
        for q in [
            "gadgets",
            "gadget",
            "gdg",
            "Gadget",
            "GADGETS",
            "gadgets.lab.example.com",
            "gadget.lab.example.com",
            "gadgets.v1beta1.lab.example.com",
            "lab.example.com/v1beta1/Gadget",
        ] {
            assert_eq!(
                mapper.resolve(q).unwrap(),
                gadgets_v1beta1(),
                "{q} (aggregated: {aggregated})"
            );
        }
        assert_eq!(
            mapper
                .kind(Some("lab.example.com"), None, "Gadget")
                .unwrap(),
            gadgets_v1beta1()
        );
        assert!(
            mapper.resolve("gadgets.v1.lab.example.com").is_err(),
            "a version given is searched alone"
        );
        // Both versions serve widgets: the preferred one, however it is named; `wold`, a
        // short name only v1beta1 lists, stands for widgets.lab.example.com, which v1 serves.
        for q in [
            "widgets",
            "widget",
            "Widget",
            "wold",
            "widgets.lab.example.com",
        ] {
            assert_eq!(
                mapper.resolve(q).unwrap(),
                widgets(),
                "{q} (aggregated: {aggregated})"
            );
        }
        assert_eq!(
            mapper
                .resolve("widgets.v1beta1.lab.example.com")
                .unwrap()
                .version,
            "v1beta1"
        );
        // The captured built-ins: autoscaling serves HorizontalPodAutoscalers in v2
        // (preferred) and v1.
        for q in [
            "hpa",
            "horizontalpodautoscalers",
            "HorizontalPodAutoscaler",
            "horizontalpodautoscalers.autoscaling",
        ] {
            assert_eq!(mapper.resolve(q).unwrap().version, "v2", "{q}");
        }
    }
}

#[test]
fn groups_rank_before_the_kind_of_match_but_a_name_beats_a_short_name_anywhere() {
    // Groups in this order after the built-ins: a.example.com, then b.example.com.
    let foos = ApiResource::new("a.example.com", "v1", "Foo", "foos", true); // singular "foo"
    let foo = ApiResource::new("b.example.com", "v1", "Bar", "foo", true); // plural "foo"
    let quxes = ApiResource::new("a.example.com", "v1", "Qux", "quxes", true); // short "bazes"
    let bazes = ApiResource::new("b.example.com", "v1", "Baz", "bazes", true); // plural "bazes"
    let server = ApiServer::builder()
        .resource(&foos)
        .resource(&quxes)
        .resource(&foo)
        .resource(&bazes)
        .short_names(&quxes, &["bazes", "qx"])
        .short_names(&bazes, &["qx"])
        .start();
    for aggregated in [true, false] {
        server.set_aggregated_discovery(aggregated);
        let mapper = RestMapper::new(Client::new(server.client_config()).unwrap().discovery());
        // A singular in the first group beats a plural in a later one (kubectl's priority
        // mapper orders by group-version, and plural and singular alike).
        assert_eq!(
            mapper.resolve("foo").unwrap(),
            foos,
            "aggregated: {aggregated}"
        );
        assert_eq!(mapper.resolve("foo.b.example.com").unwrap(), foo);
        // A short name never shadows a plural or singular of any group (kubectl's
        // shortcut expander does not expand an exact resource name).
        assert_eq!(mapper.resolve("bazes").unwrap(), bazes);
        assert_eq!(mapper.resolve("bazes.a.example.com").unwrap(), quxes);
        // Between short names, the first group.
        assert_eq!(mapper.resolve("qx").unwrap(), quxes);
        assert_eq!(mapper.resolve("qx.b.example.com").unwrap(), bazes);
    }
    // The captured built-ins: `events` is the core group's (first), not events.k8s.io's.
    assert_eq!(mapper_of(&server).resolve("events").unwrap().group, "");
}

fn mapper_of(server: &ApiServer) -> RestMapper {
    RestMapper::new(Client::new(server.client_config()).unwrap().discovery())
}

#[test]
fn a_group_version_down_at_write_time_is_refetched_alone_from_the_disk_cache() {
    // Legacy discovery of the captured documents: every group-version without a capture
    // answers 404 here, and apps/v1 is an aggregated API that is down (503).
    let server = fixture_server(
        false,
        HashMap::from([("/apis/apps/v1".to_owned(), "!503".to_owned())]),
    );
    let root = tempfile::tempdir().unwrap();
    let cache = || DiskCache::new(root.path(), &server.url);
    let first = Discovery::new(client_for(&server.url)).with_disk_cache(cache());
    let (data, origin) = first.data_with_origin().unwrap();
    assert_eq!(origin, Origin::Server);
    assert!(!data.resources.contains_key("apps/v1"), "skipped");
    let written = server.requests.lock().clone();
    let failed: Vec<String> = written
        .iter()
        .filter(|r| {
            let gv = r
                .trim_start_matches("GET /apis/")
                .trim_start_matches("GET /api/");
            r.matches('/').count() >= 2 && !data.resources.contains_key(gv)
        })
        .cloned()
        .collect();
    assert!(
        failed.contains(&"GET /apis/apps/v1".to_owned()),
        "{failed:?}"
    );
    assert!(
        failed.contains(&"GET /apis/batch/v1".to_owned()),
        "a 404: {failed:?}"
    );

    // A second program (kubectl, or this one again): the groups and every sound
    // group-version file from the disk; only the failed group-versions are asked again.
    for round in 0..2 {
        server.requests.lock().clear();
        let d = Discovery::new(client_for(&server.url)).with_disk_cache(cache());
        let (again, origin) = d.data_with_origin().unwrap();
        assert_eq!(origin, Origin::Disk, "round {round}");
        assert_eq!(*again, *data);
        let mut sent = server.requests.lock().clone();
        sent.sort();
        let mut want = failed.clone();
        want.sort();
        assert_eq!(
            sent, want,
            "round {round}: only the group-versions that failed"
        );
        assert!(!sent
            .iter()
            .any(|r| r == "GET /api" || r == "GET /apis" || r == "GET /api/v1"));
    }
    // The mapper reads the same cache.
    let mapper = RestMapper::new(Discovery::new(client_for(&server.url)).with_disk_cache(cache()));
    assert_eq!(mapper.resolve("cm").unwrap().plural, "configmaps");
}
