//! The test server's protobuf answers, assembled from each stored version's bytes encoded
//! once (`src/testing/storage/encoded.rs`), are byte for byte what encoding the same
//! answer's JSON gives (how every protobuf answer was made before): objects, list pages,
//! watch frames, metadata-only forms, Status errors. And no answer ever carries the bytes
//! of another version: updates, managedFields stripped, dry-run writes, deletes and a
//! name created again, watches replaying all of it.
//!
//! Feature `protobuf` (`.ci/run` runs it in the protobuf step).
#![cfg(feature = "protobuf")]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::time::Duration;

use common::{pod, pods, widgets};
use kube_informer::protobuf::{self as pb, message_for};
use kube_informer::testing::ApiServer;
use serde_json::{json, Value};

const PB: &str = "application/vnd.kubernetes.protobuf";
const JSON: &str = "application/json";
const PB_META: &str =
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const JSON_META: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const PB_META_LIST: &str =
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1";
const JSON_META_LIST: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1";

struct Answer {
    code: u16,
    content_type: String,
    body: Vec<u8>,
}

/// One HTTP/1.1 request on its own connection, read to the end of its body.
fn request(server: &ApiServer, method: &str, path: &str, accept: &str, body: &[u8]) -> Answer {
    let mut s = std::net::TcpStream::connect(server.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\naccept: {accept}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let code: u16 = line.split(' ').nth(1).unwrap().parse().unwrap();
    let (mut content_type, mut len, mut chunked) = (String::new(), 0, false);
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':').unwrap();
        match k.to_ascii_lowercase().as_str() {
            "content-type" => content_type = v.trim().to_owned(),
            "content-length" => len = v.trim().parse().unwrap(),
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
        body.resize(len, 0);
        r.read_exact(&mut body).unwrap();
    }
    Answer {
        code,
        content_type,
        body,
    }
}

/// How a protobuf answer was made before: the JSON answer's tree encoded whole as the
/// message its `apiVersion` and `kind` name, in the `k8s\0` envelope.
fn encoded_whole(json: &[u8]) -> Vec<u8> {
    let value: Value = serde_json::from_slice(json).unwrap();
    let (api_version, kind) = (
        value["apiVersion"].as_str().unwrap(),
        value["kind"].as_str().unwrap(),
    );
    let message = message_for(api_version, kind).unwrap();
    let raw = pb::encode(message, &value).unwrap();
    let mut out = Vec::new();
    pb::write_envelope(api_version, kind, &raw, &mut out);
    out
}

/// How a protobuf watch was made before: each JSON line's object encoded whole, in a frame.
fn frames_of(json_watch: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in json_watch.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let event: Value = serde_json::from_slice(line).unwrap();
        let object = encoded_whole(event["object"].to_string().as_bytes());
        let mut frame = Vec::new();
        pb::write_watch_event(event["type"].as_str().unwrap(), &object, &mut frame);
        out.extend_from_slice(&(frame.len() as u32).to_be_bytes());
        out.extend_from_slice(&frame);
    }
    out
}

/// The same read in JSON and in protobuf (twice: the second from the kept bytes): the
/// protobuf answer is the JSON answer encoded whole. Returns the JSON answer (a watch's: its
/// events). The three requests go at once: a watch ends at its `timeoutSeconds`.
fn same_as_json(server: &ApiServer, path: &str, json_accept: &str, pb_accept: &str) -> Value {
    let (json, protos) = std::thread::scope(|s| {
        let protos: Vec<_> = (0..2)
            .map(|_| s.spawn(|| request(server, "GET", path, pb_accept, b"")))
            .collect();
        let json = request(server, "GET", path, json_accept, b"");
        (
            json,
            protos
                .into_iter()
                .map(|p| p.join().unwrap())
                .collect::<Vec<_>>(),
        )
    });
    let watch = path.contains("watch=1");
    let expected = match watch {
        true => frames_of(&json.body),
        false => encoded_whole(&json.body),
    };
    for proto in protos {
        assert_eq!(proto.code, json.code, "{path}");
        assert!(
            proto.content_type.starts_with(PB),
            "{path}: {}",
            proto.content_type
        );
        assert!(
            proto.body == expected,
            "{path}: {} bytes in protobuf, {} expected from the JSON",
            proto.body.len(),
            expected.len()
        );
    }
    match watch {
        true => Value::Array(
            json.body
                .split(|b| *b == b'\n')
                .filter(|l| !l.is_empty())
                .map(|l| serde_json::from_slice(l).unwrap())
                .collect(),
        ),
        false => serde_json::from_slice(&json.body).unwrap(),
    }
}

fn post(server: &ApiServer, path: &str, body: &Value) -> Value {
    let path = format!("{path}?fieldManager=lab");
    let a = request(server, "POST", &path, JSON, body.to_string().as_bytes());
    assert_eq!(a.code, 201, "{}", String::from_utf8_lossy(&a.body));
    serde_json::from_slice(&a.body).unwrap()
}

const PODS: &str = "/api/v1/namespaces/lab/pods";

#[test]
fn objects_lists_watches_metadata_and_errors_are_the_bytes_of_their_json_encoded_whole() {
    let server = ApiServer::builder().resource(&widgets()).start();
    let first = server.resource_version();
    for i in 0..7 {
        let mut p = pod("lab", &format!("p{i}"), "Running");
        p["metadata"]["labels"]["tier"] = json!(if i % 2 == 0 { "web" } else { "db" });
        p["metadata"]["annotations"] = json!({"note": "x".repeat(i * 50)});
        post(&server, PODS, &p);
    }
    post(
        &server,
        "/api/v1/namespaces/other/pods",
        &pod("other", "q", "Pending"),
    );
    for i in 0..3 {
        let w = json!({"apiVersion": "lab.example.com/v1", "kind": "Widget",
            "metadata": {"name": format!("w{i}"), "namespace": "lab", "labels": {"n": i.to_string()}},
            "spec": {"size": i}});
        post(
            &server,
            "/apis/lab.example.com/v1/namespaces/lab/widgets",
            &w,
        );
    }
    // Changes for the watches to replay: a label moved out of a selector, a delete.
    let mut p1: Value =
        serde_json::from_slice(&request(&server, "GET", &format!("{PODS}/p1"), JSON, b"").body)
            .unwrap();
    p1["metadata"]["labels"]["tier"] = json!("web");
    let a = request(
        &server,
        "PUT",
        &format!("{PODS}/p1?fieldManager=lab"),
        JSON,
        p1.to_string().as_bytes(),
    );
    assert_eq!(a.code, 200);
    let mut p2: Value =
        serde_json::from_slice(&request(&server, "GET", &format!("{PODS}/p2"), JSON, b"").body)
            .unwrap();
    p2["metadata"]["labels"]["tier"] = json!("db");
    let a = request(
        &server,
        "PUT",
        &format!("{PODS}/p2?fieldManager=lab"),
        JSON,
        p2.to_string().as_bytes(),
    );
    assert_eq!(a.code, 200);
    assert_eq!(
        request(&server, "DELETE", &format!("{PODS}/p3"), JSON, b"").code,
        200
    );

    // Objects, whole and metadata-only.
    let got = same_as_json(&server, &format!("{PODS}/p0"), JSON, PB);
    assert_eq!(got["metadata"]["name"], "p0");
    assert!(
        got["metadata"]["managedFields"].is_array(),
        "written over HTTP: managed fields"
    );
    same_as_json(&server, &format!("{PODS}/p1/status"), JSON, PB);
    same_as_json(&server, &format!("{PODS}/p4"), JSON_META, PB_META);
    same_as_json(
        &server,
        "/apis/lab.example.com/v1/namespaces/lab/widgets/w1",
        JSON_META,
        PB_META,
    );
    // List pages: whole, paged with continue and remainingItemCount, filtered, across
    // namespaces, empty, metadata-only (of a built-in and of a custom resource).
    let list = same_as_json(&server, PODS, JSON, PB);
    assert_eq!(list["items"].as_array().unwrap().len(), 6);
    let page = same_as_json(&server, &format!("{PODS}?limit=4"), JSON, PB);
    let token = page["metadata"]["continue"].as_str().unwrap().to_owned();
    assert_eq!(page["metadata"]["remainingItemCount"], 2);
    same_as_json(
        &server,
        &format!("{PODS}?limit=4&continue={token}"),
        JSON,
        PB,
    );
    same_as_json(
        &server,
        &format!("{PODS}?labelSelector=tier%3Dweb"),
        JSON,
        PB,
    );
    same_as_json(&server, "/api/v1/pods?limit=500", JSON, PB);
    same_as_json(&server, "/api/v1/namespaces/empty/pods", JSON, PB);
    same_as_json(
        &server,
        &format!("{PODS}?limit=2"),
        JSON_META_LIST,
        PB_META_LIST,
    );
    same_as_json(
        &server,
        "/apis/lab.example.com/v1/widgets",
        JSON_META_LIST,
        PB_META_LIST,
    );
    // An old version of the list (the history's objects, not the current ones).
    same_as_json(
        &server,
        &format!(
            "{PODS}?resourceVersion={}&resourceVersionMatch=Exact",
            first + 4
        ),
        JSON,
        PB,
    );
    // Watches: from the present (ADDED of each object), replaying the history (ADDED,
    // MODIFIED, DELETED; a selector turning MODIFIED into ADDED or DELETED), metadata-only.
    let w = "watch=1&timeoutSeconds=1";
    let web = format!("{PODS}?{w}&resourceVersion={first}&labelSelector=tier%3Dweb");
    let widgets = format!("/apis/lab.example.com/v1/widgets?{w}&resourceVersion={first}");
    let watches = [
        (format!("{PODS}?{w}"), JSON, PB),
        (format!("{PODS}?{w}&resourceVersion={first}"), JSON, PB),
        (web, JSON, PB),
        (
            format!("{PODS}?{w}&resourceVersion={first}"),
            JSON_META,
            PB_META,
        ),
        (widgets, JSON_META, PB_META),
    ];
    let events: Vec<Value> = std::thread::scope(|s| {
        let watching: Vec<_> = watches
            .iter()
            .map(|(path, json, proto)| s.spawn(|| same_as_json(&server, path, json, proto)))
            .collect();
        watching.into_iter().map(|w| w.join().unwrap()).collect()
    });
    assert_eq!(events[0].as_array().unwrap().len(), 6);
    let types: Vec<&str> = events[1]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert!(
        types.contains(&"MODIFIED") && types.contains(&"DELETED"),
        "{types:?}"
    );
    let web_types: Vec<&str> = events[2]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert!(
        web_types.contains(&"ADDED") && web_types.contains(&"DELETED"),
        "{web_types:?}"
    );
    // Errors: a Status, in protobuf.
    let missing = same_as_json(&server, &format!("{PODS}/nobody"), JSON, PB);
    assert_eq!(missing["code"], 404);
    let bad = same_as_json(
        &server,
        &format!("{PODS}?limit=2&continue=garbage"),
        JSON,
        PB,
    );
    assert_eq!(bad["code"], 400);
    server.stop();
}

/// The protobuf of a pod read now, and the JSON it must be the encoding of.
fn read_both(server: &ApiServer, name: &str) -> (Answer, Answer) {
    let path = format!("{PODS}/{name}");
    let proto = request(server, "GET", &path, PB, b"");
    let json = request(server, "GET", &path, JSON, b"");
    assert_eq!(proto.code, json.code);
    assert_eq!(proto.body, encoded_whole(&json.body), "{name}");
    (proto, json)
}

fn decoded(proto: &Answer) -> Value {
    let env = pb::read_envelope(&proto.body).unwrap();
    pb::decode(message_for(env.api_version, env.kind).unwrap(), env.raw).unwrap()
}

#[test]
fn no_answer_carries_the_bytes_of_another_version_of_the_object() {
    let server = ApiServer::builder().start();
    let first = server.resource_version();
    let mut p = pod("lab", "p", "Running");
    p["metadata"]["labels"]["round"] = json!("one");
    post(&server, PODS, &p);
    // Read in every form, so that each form's bytes are kept for this version.
    let (v1, _) = read_both(&server, "p");
    same_as_json(&server, PODS, JSON, PB);
    same_as_json(&server, &format!("{PODS}/p"), JSON_META, PB_META);

    // An update: the kept bytes are of the old version, never served for the new one.
    let mut current: Value =
        serde_json::from_slice(&request(&server, "GET", &format!("{PODS}/p"), JSON, b"").body)
            .unwrap();
    current["metadata"]["labels"]["round"] = json!("two");
    let a = request(
        &server,
        "PUT",
        &format!("{PODS}/p?fieldManager=lab"),
        PB,
        current.to_string().as_bytes(),
    );
    assert_eq!(a.code, 200);
    let (v2, _) = read_both(&server, "p");
    assert_ne!(v1.body, v2.body);
    assert_eq!(decoded(&v2)["metadata"]["labels"]["round"], "two");
    same_as_json(&server, PODS, JSON, PB);
    same_as_json(&server, &format!("{PODS}/p"), JSON_META, PB_META);

    // A version without managedFields (a write that strips them): none in any read.
    let mut stripped: Value =
        serde_json::from_slice(&request(&server, "GET", &format!("{PODS}/p"), JSON, b"").body)
            .unwrap();
    assert!(stripped["metadata"]["managedFields"].is_array());
    stripped["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    server.update(&pods(), stripped).unwrap();
    let (v3, json3) = read_both(&server, "p");
    let json3: Value = serde_json::from_slice(&json3.body).unwrap();
    assert!(json3["metadata"].get("managedFields").is_none(), "{json3}");
    assert!(decoded(&v3)["metadata"].get("managedFields").is_none());
    assert_ne!(v2.body, v3.body);

    // A dry-run update answers the object it would store, and changes nothing kept.
    let mut dry = json3.clone();
    dry["metadata"]["labels"]["round"] = json!("dry");
    let a = request(
        &server,
        "PUT",
        &format!("{PODS}/p?dryRun=All"),
        PB,
        dry.to_string().as_bytes(),
    );
    assert_eq!(a.code, 200);
    assert_eq!(decoded(&a)["metadata"]["labels"]["round"], "dry");
    let (after_dry, _) = read_both(&server, "p");
    assert_eq!(after_dry.body, v3.body);
    same_as_json(&server, PODS, JSON, PB);

    // Deleted, then created again under the same name with other content.
    assert_eq!(
        request(&server, "DELETE", &format!("{PODS}/p"), PB, b"").code,
        200
    );
    let (gone, _) = read_both(&server, "p");
    assert_eq!(gone.code, 404);
    same_as_json(&server, PODS, JSON, PB);
    let mut again = pod("lab", "p", "Pending");
    again["metadata"]["labels"]["round"] = json!("reborn");
    post(&server, PODS, &again);
    let (v4, _) = read_both(&server, "p");
    assert_eq!(decoded(&v4)["metadata"]["labels"]["round"], "reborn");
    assert_eq!(decoded(&v4)["status"]["phase"], "Pending");
    same_as_json(&server, PODS, JSON, PB);
    same_as_json(&server, &format!("{PODS}/p"), JSON_META, PB_META);

    // The whole history replayed by a watch, in both forms: each event its own version.
    let w = format!("{PODS}?watch=1&timeoutSeconds=1&resourceVersion={first}");
    let events = same_as_json(&server, &w, JSON, PB);
    let rounds: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["object"]["metadata"]["labels"]["round"].as_str().unwrap())
        .collect();
    // Created; updated; stripped; graceful deletion (MODIFIED), deleted; created again. The
    // dry run left nothing.
    assert_eq!(rounds, ["one", "two", "two", "two", "two", "reborn"]);
    let stripped_from = |e: &Value| e["object"]["metadata"].get("managedFields").is_none();
    let no_fields: Vec<bool> = events
        .as_array()
        .unwrap()
        .iter()
        .map(stripped_from)
        .collect();
    assert_eq!(no_fields, [false, false, true, true, true, false]);
    same_as_json(&server, &w, JSON_META, PB_META);
    server.stop();
}
