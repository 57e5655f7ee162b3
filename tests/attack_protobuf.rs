//! An attacker's server on the protobuf client path (feature `protobuf`): bytes crafted to
//! make the client panic, hang, spin, allocate without bound, lose or repeat an event,
//! accept a wrong object, relist when it must not (or not relist when it must), or put a
//! secret in an error. Each answer is compared with what the JSON path does on the same
//! hostile input, and with client-go where the two could differ.
//!
//! A tiny raw loopback server answers each connection with the next scripted answer (status,
//! `Content-Type`, body cut into the chunks given) and records the request lines.
//!
//! Run with `cargo test --features protobuf,k8s-openapi,k8s-openapi/v1_35 --test attack_protobuf`.
#![cfg(all(feature = "protobuf", feature = "k8s-openapi"))]

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{Pod, Secret};
use kube_informer::api::WatchEvent;
use kube_informer::protobuf::{encode, message_for, write_envelope, write_watch_event};
use kube_informer::{Api, Client, ClientConfig, Error, ListParams, WatchParams};
use serde_json::{json, Value};

const PB: &str = "application/vnd.kubernetes.protobuf";
const PB_WATCH: &str = "application/vnd.kubernetes.protobuf;stream=watch";
const JSON: &str = "application/json";
const NS: &str = "lab";

// ---- the attacker's server ----

/// One scripted answer: a status line, a content type, and the body in the chunks given
/// (sent with `transfer-encoding: chunked`, one HTTP chunk each).
#[derive(Clone)]
struct Answer {
    status: &'static str,
    content_type: String,
    chunks: Vec<Vec<u8>>,
}

fn ok(content_type: &str, body: Vec<u8>) -> Answer {
    Answer {
        status: "200 OK",
        content_type: content_type.into(),
        chunks: vec![body],
    }
}

fn chunked(content_type: &str, chunks: Vec<Vec<u8>>) -> Answer {
    Answer {
        status: "200 OK",
        content_type: content_type.into(),
        chunks,
    }
}

struct Attacker {
    url: String,
    seen: Arc<Mutex<Vec<String>>>,
}

/// Serves `answers`, one per connection, in order; then closes every further connection.
fn attacker(answers: Vec<Answer>) -> Attacker {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let mut queue: VecDeque<Answer> = answers.into();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::Builder::new()
        .name("test/pb-attacker".into())
        .spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let Some(answer) = queue.pop_front() else {
                    return;
                };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let (mut line, mut first, mut len) = (String::new(), String::new(), 0usize);
                while reader.read_line(&mut line).unwrap_or(0) > 2 {
                    let l = line.trim_end().to_owned();
                    if first.is_empty() {
                        first = l.clone();
                    }
                    if let Some((k, v)) = l.split_once(':') {
                        if k.eq_ignore_ascii_case("content-length") {
                            len = v.trim().parse().unwrap_or(0);
                        }
                    }
                    line.clear();
                }
                let mut body = vec![0; len];
                let _ = reader.read_exact(&mut body);
                log.lock().unwrap().push(first);
                let mut out = format!(
                    "HTTP/1.1 {}\r\ncontent-type: {}\r\nconnection: close\r\ntransfer-encoding: chunked\r\n\r\n",
                    answer.status, answer.content_type
                )
                .into_bytes();
                for chunk in answer.chunks.iter().filter(|c| !c.is_empty()) {
                    out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
                    out.extend_from_slice(chunk);
                    out.extend_from_slice(b"\r\n");
                }
                out.extend_from_slice(b"0\r\n\r\n");
                let _ = stream.write_all(&out);
                let _ = stream.flush();
            }
        })
        .unwrap();
    Attacker { url, seen }
}

impl Attacker {
    fn client(&self) -> Client {
        let mut c = ClientConfig::new(self.url.clone());
        c.qps = 0.0;
        Client::new(c).unwrap()
    }

    fn requests(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

// ---- crafting protobuf ----

/// `k8s\0` + Unknown around the message of `api_version`/`kind` encoded from `value`.
fn envelope(api_version: &str, kind: &str, value: &Value) -> Vec<u8> {
    let message = message_for(api_version, kind).unwrap();
    let raw = encode(message, value).unwrap();
    let mut out = Vec::new();
    write_envelope(api_version, kind, &raw, &mut out);
    out
}

/// One watch frame (its 4-byte length and the WatchEvent) around an envelope.
fn frame(event_type: &str, object_envelope: &[u8]) -> Vec<u8> {
    let mut event = Vec::new();
    write_watch_event(event_type, object_envelope, &mut event);
    let mut out = (event.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&event);
    out
}

/// A JSON watch line.
fn line(event_type: &str, object: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec(&json!({"type": event_type, "object": object})).unwrap();
    out.push(b'\n');
    out
}

fn pod_json(name: &str, rv: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "resourceVersion": rv, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]}})
}

fn config_map_json(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS, "resourceVersion": "7"},
        "data": {"spec": "not a pod"}})
}

fn pods(a: &Attacker) -> Api<Pod> {
    Api::namespaced(a.client(), NS)
}

// ---- another kind than asked ----

/// A GET of a Pod answered with a ConfigMap: the JSON path refuses it (k8s-openapi's `Pod`
/// checks `apiVersion` and `kind`), and so must the protobuf path, whose envelope says so;
/// decoding a ConfigMap's bytes as a Pod would hand the caller a wrong object.
#[test]
fn an_object_of_another_kind_is_refused_in_protobuf_as_in_json() {
    let cm = config_map_json("settings");
    let a = attacker(vec![
        ok(JSON, serde_json::to_vec(&cm).unwrap()),
        ok(PB, envelope("v1", "ConfigMap", &cm)),
        ok(
            PB,
            envelope("apps/v1", "Deployment", &json!({"metadata": {"name": "d"}})),
        ),
    ]);
    for encoding in ["JSON", "protobuf", "protobuf (another group)"] {
        match pods(&a).get("settings") {
            Err(Error::Decode { .. }) => {}
            other => panic!("{encoding}: a ConfigMap read as a Pod: {other:?}"),
        }
    }
}

/// A list of Pods answered with a ConfigMapList. The JSON list's items carry no kind, so the
/// JSON path cannot tell (it reads the ConfigMaps' metadata as Pods); the protobuf envelope
/// names the list's type, and the protobuf path refuses it rather than fill a cache with
/// ConfigMaps posing as Pods.
#[test]
fn a_list_of_another_kind_is_refused_in_protobuf() {
    let cm_list = || {
        let item = encode(
            message_for("v1", "ConfigMap").unwrap(),
            &config_map_json("x"),
        )
        .unwrap();
        let mut raw = vec![0x0a, 0x04, 0x12, 0x02, b'4', b'2', 0x12, item.len() as u8];
        raw.extend(item);
        let mut out = Vec::new();
        write_envelope("v1", "ConfigMapList", &raw, &mut out);
        out
    };
    let json_list = json!({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {"resourceVersion": "42"},
        "items": [{"metadata": {"name": "x", "namespace": NS}, "data": {"a": "b"}}]});
    let a = attacker(vec![
        ok(PB, cm_list()),
        ok(JSON, serde_json::to_vec(&json_list).unwrap()),
    ]);
    match pods(&a).list(&ListParams::default()) {
        Err(Error::Decode { message, .. }) => {
            assert!(message.contains("ConfigMapList"), "{message}")
        }
        other => panic!("ConfigMaps listed as Pods: {other:?}"),
    }
    let json = pods(&a).list(&ListParams::default()).unwrap();
    assert_eq!(json.items[0].metadata.name.as_deref(), Some("x"));
}

/// The same in a watch: an ADDED whose object is a ConfigMap is an error item in both
/// encodings, and the events around it come through.
#[test]
fn a_watch_event_of_another_kind_is_an_error_in_protobuf_as_in_json() {
    let cm = config_map_json("settings");
    let mut json_body = line("ADDED", &pod_json("a", "1"));
    json_body.extend(line("ADDED", &cm));
    json_body.extend(line("ADDED", &pod_json("b", "2")));
    let mut pb_body = frame("ADDED", &envelope("v1", "Pod", &pod_json("a", "1")));
    pb_body.extend(frame("ADDED", &envelope("v1", "ConfigMap", &cm)));
    pb_body.extend(frame("ADDED", &envelope("v1", "Pod", &pod_json("b", "2"))));
    let a = attacker(vec![ok(JSON, json_body), ok(PB_WATCH, pb_body)]);
    for encoding in ["JSON", "protobuf"] {
        let items: Vec<_> = pods(&a).watch(&WatchParams::default()).unwrap().collect();
        let shape: Vec<String> = items
            .iter()
            .map(|i| match i {
                Ok(WatchEvent::Added(p)) => p.metadata.name.clone().unwrap_or_default(),
                Ok(e) => e.type_name().to_owned(),
                Err(_) => "error".into(),
            })
            .collect();
        assert_eq!(shape, ["a", "error", "b"], "{encoding}");
    }
}

// ---- frames cut anywhere ----

/// A watch of three events, its bytes cut into two HTTP chunks at every offset: every cut
/// gives the same three events (frames and even their lengths are reassembled).
#[test]
fn a_watch_cut_into_chunks_at_every_byte_gives_every_event_once() {
    let mut body = Vec::new();
    for (i, name) in ["a", "b", "c"].iter().enumerate() {
        body.extend(frame(
            ["ADDED", "MODIFIED", "DELETED"][i],
            &envelope("v1", "Pod", &pod_json(name, &(i + 1).to_string())),
        ));
    }
    let answers: Vec<Answer> = (1..body.len())
        .map(|cut| chunked(PB_WATCH, vec![body[..cut].to_vec(), body[cut..].to_vec()]))
        .collect();
    let n = answers.len();
    let a = attacker(answers);
    for cut in 1..=n {
        let events: Vec<String> = pods(&a)
            .watch(&WatchParams::default())
            .unwrap()
            .map(|e| {
                let e = e.unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
                let name = match &e {
                    WatchEvent::Added(p) | WatchEvent::Modified(p) | WatchEvent::Deleted(p) => {
                        p.metadata.name.clone().unwrap()
                    }
                    _ => String::new(),
                };
                format!("{} {name}", e.type_name())
            })
            .collect();
        assert_eq!(
            events,
            ["ADDED a", "MODIFIED b", "DELETED c"],
            "cut at {cut}"
        );
    }
}

/// The same watch ending at every byte: the whole frames before the end come through, then
/// at most one error (a cut inside a frame or its length), never a wrong event or a hang.
#[test]
fn a_watch_ending_at_every_byte_gives_the_whole_frames_then_one_error() {
    let frames: Vec<Vec<u8>> = ["a", "b"]
        .iter()
        .enumerate()
        .map(|(i, name)| {
            frame(
                "ADDED",
                &envelope("v1", "Pod", &pod_json(name, &(i + 1).to_string())),
            )
        })
        .collect();
    let body: Vec<u8> = frames.concat();
    let a = attacker(
        (0..body.len())
            .map(|end| ok(PB_WATCH, body[..end].to_vec()))
            .collect(),
    );
    for end in 0..body.len() {
        let whole = if end >= frames[0].len() { 1 } else { 0 };
        let at_boundary = end == 0 || end == frames[0].len();
        let items: Vec<_> = pods(&a).watch(&WatchParams::default()).unwrap().collect();
        let names: Vec<String> = items
            .iter()
            .filter_map(|i| i.as_ref().ok())
            .map(|e| match e {
                WatchEvent::Added(p) => p.metadata.name.clone().unwrap(),
                other => panic!("end {end}: {}", other.type_name()),
            })
            .collect();
        assert_eq!(names, ["a", "b"][..whole], "end {end}");
        let errors = items.iter().filter(|i| i.is_err()).count();
        assert_eq!(errors, usize::from(!at_boundary), "end {end}: {items:?}");
    }
}

/// Frames of length 0, of garbage, and one announcing more than the stream holds: each is
/// one error, the stream stays in step (the good frames between them come through).
#[test]
fn empty_and_garbage_frames_are_one_error_each_and_the_stream_stays_in_step() {
    let good = |name: &str, rv: &str| frame("ADDED", &envelope("v1", "Pod", &pod_json(name, rv)));
    let mut body = good("a", "1");
    body.extend(0u32.to_be_bytes());
    body.extend(good("b", "2"));
    body.extend(3u32.to_be_bytes());
    body.extend(b"\x0a\xff\xff");
    body.extend(good("c", "3"));
    body.extend(1000u32.to_be_bytes());
    body.extend(b"short");
    let a = attacker(vec![ok(PB_WATCH, body)]);
    let shape: Vec<String> = pods(&a)
        .watch(&WatchParams::default())
        .unwrap()
        .map(|i| match i {
            Ok(WatchEvent::Added(p)) => p.metadata.name.unwrap(),
            Ok(e) => e.type_name().to_owned(),
            Err(_) => "error".into(),
        })
        .collect();
    assert_eq!(shape, ["a", "error", "b", "error", "c", "error"]);
}

// ---- secrets never quoted ----

/// A Secret whose bytes fail to decode, in a get, a list and a watch: the error says what
/// and where, never the Secret's data.
#[test]
fn a_secret_that_fails_to_decode_is_never_quoted() {
    let secret = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "token", "namespace": NS},
        "data": {"password": "aHVudGVyMi1TM0NSRVQ="}, "type": "Opaque"});
    let good = encode(message_for("v1", "Secret").unwrap(), &secret).unwrap();
    // The same Secret with its `type` (field 3) sent as a varint after its data.
    let mut bad = good.clone();
    bad.extend_from_slice(&[0x18, 0x01]);
    let env = |raw: &[u8]| {
        let mut out = Vec::new();
        write_envelope("v1", "Secret", raw, &mut out);
        out
    };
    let mut list = Vec::new();
    let mut list_raw = vec![0x0a, 0x00];
    for item in [&good, &bad] {
        list_raw.push(0x12);
        list_raw.push(item.len() as u8);
        list_raw.extend_from_slice(item);
    }
    write_envelope("v1", "SecretList", &list_raw, &mut list);
    let a = attacker(vec![
        ok(PB, env(&bad)),
        ok(PB, list),
        ok(PB_WATCH, frame("ADDED", &env(&bad))),
    ]);
    let secrets: Api<Secret> = Api::namespaced(a.client(), NS);
    let get = secrets.get("token").unwrap_err();
    let list = secrets.list(&ListParams::default()).unwrap_err();
    let watch = secrets
        .watch(&WatchParams::default())
        .unwrap()
        .next()
        .unwrap()
        .unwrap_err();
    for e in [get, list, watch] {
        for text in [e.to_string(), format!("{e:?}")] {
            for needle in ["hunter2", "aHVudGVy", "S3CRET", "TM0NSRVQ"] {
                assert!(!text.contains(needle), "{text}");
            }
        }
    }
}

// ---- repeated entries, invalid UTF-8: as the JSON twin ----

/// A label repeated (last wins, as Go's map and serde_json's map do), a label value that is
/// not UTF-8 (Go's JSON writes U+FFFD): the protobuf Pod equals the JSON twin's.
#[test]
fn repeated_map_entries_and_invalid_utf8_read_as_the_json_twin() {
    let pod = message_for("v1", "Pod").unwrap();
    // ObjectMeta{name: "p", labels: {a: "1"}, labels: {a: "\xff2"}}
    let entry = |k: &[u8], v: &[u8]| {
        let mut e = vec![0x0a, k.len() as u8];
        e.extend_from_slice(k);
        e.push(0x12);
        e.push(v.len() as u8);
        e.extend_from_slice(v);
        let mut f = vec![0x5a, e.len() as u8]; // ObjectMeta.labels = 11
        f.extend(e);
        f
    };
    let mut meta = vec![0x0a, 0x01, b'p'];
    meta.extend(entry(b"a", b"1"));
    meta.extend(entry(b"a", b"\xff2"));
    let mut raw = vec![0x0a, meta.len() as u8];
    raw.extend(meta);
    let mut body = Vec::new();
    write_envelope("v1", "Pod", &raw, &mut body);
    let twin = br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"1","a":"\ufffd2"}}}"#;
    let _ = pod;
    let a = attacker(vec![ok(PB, body), ok(JSON, twin.to_vec())]);
    let from_pb = pods(&a).get("p").unwrap();
    let from_json = pods(&a).get("p").unwrap();
    assert_eq!(from_pb, from_json);
    assert_eq!(
        from_pb.metadata.labels,
        Some(BTreeMap::from([("a".to_owned(), "\u{fffd}2".to_owned())]))
    );
}

// ---- deep nesting ----

/// A length-delimited field.
fn field(number: u32, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for mut n in [(number << 3 | 2) as usize, bytes.len()] {
        while n >= 0x80 {
            out.push((n as u8) | 0x80);
            n >>= 7;
        }
        out.push(n as u8);
    }
    out.extend_from_slice(bytes);
    out
}

/// A CustomResourceDefinition whose schema nests `schemas` JSONSchemaProps (`not` in `not`)
/// and whose innermost `default` is raw JSON of `arrays` nested arrays.
fn deep_crd(schemas: usize, arrays: usize) -> Vec<u8> {
    let raw = format!("{}{}", "[".repeat(arrays), "]".repeat(arrays));
    let mut props = field(8, &field(1, raw.as_bytes())); // default: JSON{raw}
    for _ in 0..schemas {
        props = field(28, &props); // not
    }
    let validation = field(1, &props);
    let mut version = field(1, b"v1");
    version.extend(field(4, &validation));
    let spec = field(7, &version);
    let mut crd = field(1, &field(1, b"deep.example.com"));
    crd.extend(field(2, &spec));
    let mut out = Vec::new();
    write_envelope(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        &crd,
        &mut out,
    );
    out
}

/// The JSON twin of [`deep_crd`].
fn deep_crd_json(schemas: usize, arrays: usize) -> Vec<u8> {
    let mut props = format!(
        "{{\"default\":{}{}}}",
        "[".repeat(arrays),
        "]".repeat(arrays)
    );
    for _ in 0..schemas {
        props = format!("{{\"not\":{props}}}");
    }
    format!(
        "{{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\",\
         \"metadata\":{{\"name\":\"deep.example.com\"}},\"spec\":{{\"versions\":[{{\"name\":\"v1\",\
         \"schema\":{{\"openAPIV3Schema\":{props}}}}}]}}}}"
    )
    .into_bytes()
}

/// Raw JSON (a CRD schema's `default`) nested inside nested messages: the protobuf path
/// accepts what the JSON twin accepts and refuses what it refuses (one limit of 128 over the
/// whole object), and refuses messages nested beyond [`MAX_DEPTH`] outright. Before, serde_json
/// gave the raw JSON a fresh 128 levels and 128 messages cost more stack than a thread's
/// 2 MiB: a hostile CRD aborted the process (a stack overflow cannot be caught). Decoded on a
/// thread of 2 MiB, as the informer's.
///
/// [`MAX_DEPTH`]: kube_informer::protobuf::MAX_DEPTH
#[test]
fn nesting_deeper_than_the_json_twin_allows_is_refused_not_a_stack_overflow() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let a = attacker(vec![
        ok(JSON, deep_crd_json(120, 127)),
        ok(PB, deep_crd(120, 127)),
        ok(JSON, deep_crd_json(60, 70)),
        ok(PB, deep_crd(60, 70)),
        ok(PB, deep_crd(120, 1)),
        ok(JSON, deep_crd_json(60, 60)),
        ok(PB, deep_crd(60, 60)),
    ]);
    let client = a.client();
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let crds: Api<CustomResourceDefinition> = Api::all(client);
            for case in [
                "JSON 120+127",
                "protobuf 120+127",
                "JSON 60+70",
                "protobuf 60+70",
            ] {
                let err = crds.get("deep.example.com").unwrap_err();
                assert!(matches!(err, Error::Decode { .. }), "{case}: {err}");
            }
            let err = crds.get("deep.example.com").unwrap_err();
            assert!(err.to_string().contains("nested too deeply"), "{err}");
            let from_json = crds.get("deep.example.com").unwrap();
            let from_pb = crds.get("deep.example.com").unwrap();
            assert_eq!(from_json, from_pb);
        })
        .unwrap()
        .join()
        .unwrap();
}

// ---- a failure in a 200 ----

fn gone_status() -> Value {
    json!({"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
        "message": "too old resource version: 1 (42)", "reason": "Expired", "code": 410})
}

/// A list answered `200 OK` with a 410 `Status` (a proxy answering an error with 200): the
/// 410 it is, in both encodings, for a list and for a page, as client-go's `Result.Into`
/// makes of it (and a reflector relists on it). Before, the JSON path read the Status as an
/// empty list (no `items`), which a reflector would have put in place of its whole cache, and
/// the protobuf path as an undecodable answer retried with the same resource version.
#[test]
fn a_failure_status_answered_200_for_a_list_is_that_failure_in_both_encodings() {
    let st = gone_status();
    let answers = || {
        vec![
            ok(JSON, serde_json::to_vec(&st).unwrap()),
            ok(PB, envelope("v1", "Status", &st)),
        ]
    };
    let a = attacker([answers(), answers()].concat());
    for encoding in ["JSON", "protobuf"] {
        let err = pods(&a).list(&ListParams::default()).unwrap_err();
        assert!(err.is_gone(), "{encoding}: {err}");
    }
    for encoding in ["JSON page", "protobuf page"] {
        let err = pods(&a)
            .pages(&ListParams::default().limit(5))
            .next()
            .unwrap()
            .unwrap_err();
        assert!(err.is_gone(), "{encoding}: {err}");
        assert_eq!(
            err.status().unwrap().message,
            "too old resource version: 1 (42)"
        );
    }
}

// ---- odd events, odd content types, hostile tokens ----

/// An ERROR whose object is a Pod, a BOOKMARK carrying a whole Pod, an unknown event type:
/// the same items in both encodings (an error, a bookmark with the Pod's version, an error),
/// and the watch goes on to the real ERROR after them.
#[test]
fn odd_watch_events_read_the_same_in_both_encodings() {
    let p = pod_json("a", "5");
    let mut json_body = line("ERROR", &p);
    json_body.extend(line("BOOKMARK", &p));
    json_body.extend(line("UPSERTED", &p));
    json_body.extend(line("ERROR", &gone_status()));
    let pod_env = envelope("v1", "Pod", &p);
    let mut pb_body = frame("ERROR", &pod_env);
    pb_body.extend(frame("BOOKMARK", &pod_env));
    pb_body.extend(frame("UPSERTED", &pod_env));
    pb_body.extend(frame("ERROR", &envelope("v1", "Status", &gone_status())));
    let a = attacker(vec![ok(JSON, json_body), ok(PB_WATCH, pb_body)]);
    let mut seen = Vec::new();
    for _ in ["JSON", "protobuf"] {
        let items: Vec<String> = pods(&a)
            .watch(&WatchParams::default())
            .unwrap()
            .map(|i| match i {
                Ok(WatchEvent::Bookmark(b)) => format!("BOOKMARK {}", b.resource_version),
                Ok(e) => e.type_name().to_owned(),
                Err(Error::Api { status, .. }) if status.code != 0 => {
                    format!("ERROR {}", status.code)
                }
                // JSON reads what it can of a Pod as a Status (code 0), protobuf refuses
                // the Pod's fields where a Status has others: an error either way.
                Err(_) => "error".into(),
            })
            .collect();
        seen.push(items);
    }
    assert_eq!(
        seen[0],
        ["error", "BOOKMARK 5", "error", "ERROR 410"],
        "{seen:?}"
    );
    assert_eq!(seen[1], seen[0]);
}

/// The answer's `Content-Type` decides, whatever its case and parameters; a body that is not
/// what its `Content-Type` says is a decoding error (never a panic, never the other
/// decoder's guess), as client-go picks its decoder by the media type.
#[test]
fn the_content_type_decides_whatever_its_case_and_parameters() {
    let p = pod_json("a", "5");
    let pb = envelope("v1", "Pod", &p);
    let a = attacker(vec![
        ok(
            "Application/VND.Kubernetes.Protobuf ; charset=binary",
            pb.clone(),
        ),
        ok(" application/vnd.kubernetes.protobuf", pb.clone()),
        ok(
            "APPLICATION/VND.KUBERNETES.PROTOBUF;STREAM=WATCH",
            frame("ADDED", &pb),
        ),
        ok(JSON, pb.clone()),
        ok(PB, serde_json::to_vec(&p).unwrap()),
        ok("application/vnd.kubernetes.protobuf+json", pb),
    ]);
    for _ in 0..2 {
        assert_eq!(
            pods(&a).get("a").unwrap().metadata.name.as_deref(),
            Some("a")
        );
    }
    let event = pods(&a)
        .watch(&WatchParams::default())
        .unwrap()
        .next()
        .unwrap();
    assert!(matches!(event, Ok(WatchEvent::Added(_))), "{event:?}");
    for case in [
        "protobuf as JSON",
        "JSON as protobuf",
        "an unknown media type",
    ] {
        let err = pods(&a).get("a").unwrap_err();
        assert!(matches!(err, Error::Decode { .. }), "{case}: {err}");
    }
}

/// A protobuf page whose continue token holds query syntax, spaces, non-ASCII and invalid
/// UTF-8: the next request carries it escaped in one `continue` parameter (nothing injected
/// into the query), as the JSON path does.
#[test]
fn a_hostile_continue_token_is_sent_back_escaped() {
    let page = |token: &[u8]| {
        let mut meta = field(2, b"42");
        if !token.is_empty() {
            meta.extend(field(3, token));
        }
        let item = encode(message_for("v1", "Pod").unwrap(), &pod_json("a", "5")).unwrap();
        let mut raw = field(1, &meta);
        raw.extend(field(2, &item));
        let mut out = Vec::new();
        write_envelope("v1", "PodList", &raw, &mut out);
        out
    };
    let a = attacker(vec![
        ok(PB, page(b"x&watch=1&limit=1 #\xc3\xa9\xff")),
        ok(PB, page(b"")),
    ]);
    let pages: Vec<_> = pods(&a)
        .pages(&ListParams::default().limit(1))
        .map(|p| p.unwrap().list.items.len())
        .collect();
    assert_eq!(pages, [1, 1]);
    let requests = a.requests();
    let second = &requests[1];
    assert!(!second.contains("watch=1"), "{second}");
    assert!(
        second.contains("continue=x%26watch%3D1%26limit%3D1"),
        "{second}"
    );
    assert_eq!(second.matches("limit=").count(), 1, "{second}");
}

/// A DELETE answered with a `Status` whose envelope names `meta.k8s.io/v1` (its own group)
/// rather than `v1`: a Status, as the JSON path tells it by its kind alone.
#[test]
fn a_delete_answered_with_a_status_of_either_api_version_is_a_status() {
    use kube_informer::client::DeleteResponse;
    let st = json!({"status": "Success", "details": {"name": "a", "kind": "pods"}});
    let a = attacker(vec![
        ok(PB, envelope("v1", "Status", &st)),
        ok(PB, envelope("meta.k8s.io/v1", "Status", &st)),
        ok(
            JSON,
            serde_json::to_vec(
                &json!({"apiVersion": "meta.k8s.io/v1", "kind": "Status", "status": "Success"}),
            )
            .unwrap(),
        ),
    ]);
    for case in ["v1", "meta.k8s.io/v1", "JSON"] {
        match pods(&a).delete("a", &Default::default()) {
            Ok(DeleteResponse::Status(st)) => assert_eq!(st.status, "Success", "{case}"),
            other => panic!("{case}: {other:?}"),
        }
    }
}
