//! An outsider's attack on protobuf request bodies (`src/client/protobuf_body.rs`,
//! `protobuf::encode_exact`) and on the test server's protobuf answers: make a write lose
//! or change data, send protobuf where it must not, resend where it must not, leak a
//! secret, or make the test server answer otherwise than kube-apiserver.
//!
//! The oracle for "what kube-apiserver stores": the protobuf body we send, decoded by our
//! decoder, against the JSON text the same write would have sent, read as Go's
//! `encoding/json` reads it (a member named twice in one object merges into the same Go
//! struct; a number is its decimal text). A tiny raw loopback server records each request's
//! `Content-Type` and body; the test server (`testing::ApiServer`) is used for its answers.
//!
//! Run with `cargo test --features protobuf,k8s-openapi,k8s-openapi/v1_35 --test attack_protobuf_bodies`.
#![cfg(all(feature = "protobuf", feature = "k8s-openapi"))]

#[path = "common/raw_request.rs"]
mod raw_request;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::apps::v1::{ControllerRevision, Deployment};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_informer::protobuf::{self as pb, message_for};
use kube_informer::testing::ApiServer;
use kube_informer::{Api, Client, ClientConfig, PostParams};
use serde::Serialize;
use serde_json::{json, Value};

const NS: &str = "lab";
const PB: &str = "application/vnd.kubernetes.protobuf";
const JSON: &str = "application/json";

// ---- a raw loopback server that records what each write carried ----

/// One request as the server read it.
#[derive(Clone, Debug)]
struct Seen {
    line: String,
    content_type: String,
    body: Vec<u8>,
}

type Log = Arc<Mutex<Vec<Seen>>>;

/// Serves `answers` in order, one per connection, and records each request.
fn recorder(answers: Vec<Vec<u8>>) -> (String, Log) {
    raw_request::serve_in_turn("test/atk-pb-bodies", answers, |request| Seen {
        content_type: request.header("content-type").to_owned(),
        line: request.line,
        body: request.body,
    })
}

fn http(status: &str, headers: &str, ct: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {ct}\r\n{headers}connection: close\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

fn created(api_version: &str, kind: &str, extra: Value) -> Vec<u8> {
    let mut v = json!({"apiVersion": api_version, "kind": kind,
        "metadata": {"name": "a", "namespace": NS, "uid": "u-1"}});
    v.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    http("201 Created", "", JSON, &serde_json::to_vec(&v).unwrap())
}

fn client(url: &str, max_retries: u32) -> Client {
    let mut c = ClientConfig::new(url);
    c.qps = 0.0;
    c.max_retries = max_retries;
    Client::new(c).unwrap()
}

fn seen(log: &Log) -> Vec<Seen> {
    log.lock().unwrap().clone()
}

/// The object a protobuf body carries, decoded by our decoder (with its envelope's
/// `apiVersion` and `kind`).
fn carried(body: &[u8]) -> Value {
    let envelope = pb::read_envelope(body).unwrap();
    pb::decode_envelope(&envelope).unwrap()
}

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some(NS.into()),
        ..ObjectMeta::default()
    }
}

// ---- 1. bodies that would store something else than their JSON ----

/// A body type naming `metadata` twice (a user's wrapper flattening a typed object beside a
/// member of its own). serde_json writes both members; Go's `encoding/json` decodes both
/// into the same `ObjectMeta`, so kube-apiserver keeps the first's name *and* the second's
/// labels. A body made from a `serde_json::Value` of it keeps only the last.
#[derive(Serialize)]
struct Doubled {
    #[serde(flatten)]
    base: ConfigMap,
    metadata: BTreeMap<String, Value>,
}

#[test]
fn a_body_naming_a_member_twice_goes_as_the_json_go_merges() {
    let (url, log) = recorder(vec![created("v1", "ConfigMap", json!({}))]);
    let cms: Api<ConfigMap> = Api::namespaced(client(&url, 0), NS);
    let body = Doubled {
        base: ConfigMap {
            metadata: meta("a"),
            data: Some(BTreeMap::from([("k".into(), "v".into())])),
            ..ConfigMap::default()
        },
        metadata: BTreeMap::from([("labels".into(), json!({"team": "x"}))]),
    };
    let text = serde_json::to_string(&body).unwrap();
    assert_eq!(text.matches("\"metadata\"").count(), 2, "{text}");
    cms.create(&PostParams::default(), &body).unwrap();
    let s = seen(&log);
    assert_eq!(s.len(), 1);
    // Protobuf could carry only one of the two: the name would be lost.
    if s[0].content_type == PB {
        let got = carried(&s[0].body);
        assert_eq!(
            got["metadata"]["name"], "a",
            "the protobuf body lost a member Go keeps: {got}"
        );
    }
    assert_eq!(s[0].content_type, JSON);
    assert_eq!(s[0].body, text.as_bytes());
}

/// The crate's own `DynamicObject` holds its top-level fields as a list of raw texts: the
/// same member twice (two `data`) is written twice, and Go merges both maps.
#[test]
fn a_dynamic_object_naming_a_field_twice_goes_as_the_json_go_merges() {
    use kube_informer::api::{DynamicObject, RawJson};
    let (url, log) = recorder(vec![created("v1", "ConfigMap", json!({}))]);
    let cms: Api<ConfigMap> = Api::namespaced(client(&url, 0), NS);
    let raw = |t: &str| RawJson::from_string(t.to_owned()).unwrap();
    let object = DynamicObject {
        api_version: Some("v1".into()),
        kind: Some("ConfigMap".into()),
        metadata: serde_json::from_value(json!({"name": "a", "namespace": NS})).unwrap(),
        fields: vec![
            ("data".into(), raw(r#"{"first": "1"}"#)),
            ("data".into(), raw(r#"{"second": "2"}"#)),
        ],
    };
    cms.create(&PostParams::default(), &object).unwrap();
    let s = seen(&log);
    if s[0].content_type == PB {
        let got = carried(&s[0].body);
        assert_eq!(
            got["data"]["first"], "1",
            "the protobuf body lost a map entry Go keeps: {got}"
        );
    }
    assert_eq!(s[0].content_type, JSON);
    // One of each: protobuf.
    let (url, log) = recorder(vec![created("v1", "ConfigMap", json!({}))]);
    let cms: Api<ConfigMap> = Api::namespaced(client(&url, 0), NS);
    let object = DynamicObject {
        fields: vec![("data".into(), raw(r#"{"first": "1", "second": "2"}"#))],
        ..object
    };
    cms.create(&PostParams::default(), &object).unwrap();
    let s = seen(&log);
    assert_eq!(s[0].content_type, PB);
    assert_eq!(
        carried(&s[0].body)["data"],
        json!({"first": "1", "second": "2"})
    );
}

/// A body type holding an `f32` inside a `RawExtension` (a ControllerRevision's `data`):
/// serde_json writes the f32's own shortest digits (`0.1`), which is what Go stores; a
/// detour through `serde_json::Value` widens it to f64 first (`0.10000000149011612`).
#[derive(Serialize)]
struct Revision {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    metadata: ObjectMeta,
    data: RevisionData,
    revision: i64,
}

#[derive(Serialize)]
struct RevisionData {
    ratio: f32,
    weights: Vec<f32>,
}

#[test]
fn a_raw_extension_carries_the_numbers_the_json_text_has() {
    let (url, log) = recorder(vec![created(
        "apps/v1",
        "ControllerRevision",
        json!({"revision": 1}),
    )]);
    let revisions: Api<ControllerRevision> = Api::namespaced(client(&url, 0), NS);
    let body = Revision {
        api_version: "apps/v1",
        kind: "ControllerRevision",
        metadata: meta("a"),
        data: RevisionData {
            ratio: 0.1,
            weights: vec![0.3, 1.0e-7, 16_777_217.0],
        },
        revision: 1,
    };
    revisions.create(&PostParams::default(), &body).unwrap();
    let s = seen(&log);
    assert_eq!(s.len(), 1);
    let json_text: Value = serde_json::from_slice(&serde_json::to_vec(&body).unwrap()).unwrap();
    let got = match s[0].content_type.as_str() {
        PB => carried(&s[0].body),
        _ => serde_json::from_slice(&s[0].body).unwrap(),
    };
    assert_eq!(
        got["data"], json_text["data"],
        "sent as {}",
        s[0].content_type
    );
    assert_eq!(got["data"]["ratio"].to_string(), "0.1");
}

/// A body type holding integers past 64 bits (`u128`, `i128`) in a `RawExtension`:
/// serde_json writes their digits, which Go keeps as text; read back into a value they
/// would become floats (`1.8446744073709552e19`), other text in what kube-apiserver stores.
#[derive(Serialize)]
struct WideRevision {
    metadata: ObjectMeta,
    data: WideData,
    revision: i64,
}

#[derive(Serialize)]
struct WideData {
    above: u128,
    below: i128,
    fits: u128,
}

#[test]
fn a_raw_extension_keeps_the_digits_of_integers_past_64_bits() {
    let (url, log) = recorder(vec![
        created("apps/v1", "ControllerRevision", json!({"revision": 1})),
        created("apps/v1", "ControllerRevision", json!({"revision": 1})),
    ]);
    let revisions: Api<ControllerRevision> = Api::namespaced(client(&url, 0), NS);
    let wide = WideRevision {
        metadata: meta("a"),
        data: WideData {
            above: u128::from(u64::MAX) + 2,
            below: i128::from(i64::MIN) - 1,
            fits: 7,
        },
        revision: 1,
    };
    revisions.create(&PostParams::default(), &wide).unwrap();
    let s = seen(&log);
    let text = String::from_utf8_lossy(&s[0].body).into_owned();
    assert_eq!(s[0].content_type, JSON, "{text}");
    assert!(text.contains("18446744073709551617") && text.contains("-9223372036854775809"));
    // Within 64 bits it still goes in protobuf, digits intact.
    let fits = WideRevision {
        data: WideData {
            above: u128::from(u64::MAX),
            below: i128::from(i64::MIN),
            fits: 7,
        },
        ..wide
    };
    revisions.create(&PostParams::default(), &fits).unwrap();
    let s = seen(&log);
    assert_eq!(s[1].content_type, PB);
    let got = carried(&s[1].body);
    assert_eq!(got["data"]["above"].as_u64(), Some(u64::MAX));
    assert_eq!(got["data"]["below"].as_i64(), Some(i64::MIN));
}

#[test]
fn a_typed_object_with_nothing_odd_still_goes_in_protobuf_and_carries_its_json() {
    // The fixes above must not send everything as JSON.
    let (url, log) = recorder(vec![
        created("v1", "ConfigMap", json!({})),
        created("apps/v1", "ControllerRevision", json!({"revision": 1})),
    ]);
    let c = client(&url, 0);
    let cm = ConfigMap {
        metadata: meta("a"),
        data: Some(BTreeMap::from([("k".into(), "ünïcode ✓ \u{0}".into())])),
        ..ConfigMap::default()
    };
    Api::<ConfigMap>::namespaced(c.clone(), NS)
        .create(&PostParams::default(), &cm)
        .unwrap();
    let rev = ControllerRevision {
        metadata: meta("a"),
        data: Some(k8s_openapi::apimachinery::pkg::runtime::RawExtension(
            json!({"b": [1, 2.5, -0.0, 1e-300, 18446744073709551615u64, -9223372036854775808i64], "a": {"z": null}}),
        )),
        revision: 1,
    };
    Api::<ControllerRevision>::namespaced(c, NS)
        .create(&PostParams::default(), &rev)
        .unwrap();
    let s = seen(&log);
    assert_eq!(s.len(), 2);
    for (seen, object) in s.iter().zip([
        serde_json::to_value(&cm).unwrap(),
        serde_json::to_value(&rev).unwrap(),
    ]) {
        assert_eq!(seen.content_type, PB, "{}", seen.line);
        let got = carried(&seen.body);
        for member in ["data", "revision"] {
            assert_eq!(got.get(member), object.get(member), "{member}");
        }
    }
}

/// A typed Pod (encoded straight, without the read-back detour) whose quantities, ports and
/// times are in every form Go's JSON accepts as they are: the protobuf carries each one's
/// text as the JSON does (kube-apiserver parses the same text either way).
#[test]
fn a_typed_pod_carries_quantities_ports_and_times_as_their_json_text() {
    use k8s_openapi::api::core::v1::Pod;
    let pod: Pod = serde_json::from_value(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": NS, "labels": {"": "", "a/b.c": "✓", "k": "\u{0}"},
            "annotations": {"note": "line\nbreak \"quoted\" \u{1F600}"},
            "creationTimestamp": "2026-11-28T11:31:33Z"},
        "spec": {"containers": [{"name": "c", "image": "i",
            "resources": {"requests": {"cpu": "1.0", "memory": "0.1Gi", "ephemeral-storage": "+1"},
                "limits": {"cpu": "1e3", "memory": "1E3", "hugepages-2Mi": "0"}},
            "ports": [{"containerPort": 65535, "hostPort": -1}],
            "readinessProbe": {"httpGet": {"port": "http-alt"}, "periodSeconds": 2147483647},
            "livenessProbe": {"tcpSocket": {"port": 0}}}],
            "activeDeadlineSeconds": 9007199254740993i64,
            "terminationGracePeriodSeconds": -9223372036854775808i64}}))
    .unwrap();
    let (url, log) = recorder(vec![created("v1", "Pod", json!({}))]);
    Api::<Pod>::namespaced(client(&url, 0), NS)
        .create(&PostParams::default(), &pod)
        .unwrap();
    let s = seen(&log);
    assert_eq!(s[0].content_type, PB);
    let got = carried(&s[0].body);
    let sent = serde_json::to_value(&pod).unwrap();
    let c = &got["spec"]["containers"][0];
    assert_eq!(c["resources"], sent["spec"]["containers"][0]["resources"]);
    assert_eq!(c["ports"][0]["containerPort"], 65535);
    assert_eq!(c["ports"][0]["hostPort"], -1);
    assert_eq!(c["readinessProbe"]["httpGet"]["port"], "http-alt");
    assert_eq!(c["readinessProbe"]["periodSeconds"], 2147483647);
    assert_eq!(c["livenessProbe"]["tcpSocket"]["port"], 0);
    assert_eq!(got["spec"]["activeDeadlineSeconds"], 9007199254740993i64);
    assert_eq!(got["spec"]["terminationGracePeriodSeconds"], i64::MIN);
    assert_eq!(got["metadata"]["labels"], sent["metadata"]["labels"]);
    assert_eq!(
        got["metadata"]["annotations"],
        sent["metadata"]["annotations"]
    );
    assert_eq!(got["metadata"]["creationTimestamp"], "2026-11-28T11:31:33Z");
}

/// Pointer fields given `null` are nil in Go (the server defaults them); an encoder that
/// wrote their zero would store `replicas: 0`, `maxUnavailable: 0`, `deletionTimestamp`
/// at the epoch.
#[test]
fn null_pointers_stay_unset_and_set_zeros_stay_set() {
    let m = message_for("apps/v1", "Deployment").unwrap();
    let tm = ("apps/v1", "Deployment");
    let nulls = json!({"metadata": {"name": "d", "deletionTimestamp": null,
            "deletionGracePeriodSeconds": null, "labels": null},
        "spec": {"replicas": null, "revisionHistoryLimit": null, "progressDeadlineSeconds": null,
            "paused": false,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": null, "maxSurge": null}},
            "template": {"spec": {"terminationGracePeriodSeconds": null, "automountServiceAccountToken": null,
                "containers": [{"name": "a", "resources": {"limits": null}}],
                "volumes": [{"name": "v", "emptyDir": {"sizeLimit": null}}]}}}});
    let got: Value = pb::decode(m, &pb::encode_exact(m, tm, &nulls).unwrap()).unwrap();
    let spec = &got["spec"];
    for (what, v) in [
        ("replicas", &spec["replicas"]),
        ("revisionHistoryLimit", &spec["revisionHistoryLimit"]),
        ("progressDeadlineSeconds", &spec["progressDeadlineSeconds"]),
        (
            "maxUnavailable",
            &spec["strategy"]["rollingUpdate"]["maxUnavailable"],
        ),
        ("maxSurge", &spec["strategy"]["rollingUpdate"]["maxSurge"]),
        ("deletionTimestamp", &got["metadata"]["deletionTimestamp"]),
        (
            "grace",
            &spec["template"]["spec"]["terminationGracePeriodSeconds"],
        ),
        (
            "automount",
            &spec["template"]["spec"]["automountServiceAccountToken"],
        ),
        (
            "sizeLimit",
            &spec["template"]["spec"]["volumes"][0]["emptyDir"]["sizeLimit"],
        ),
    ] {
        assert!(v.is_null(), "{what} became {v}");
    }
    // Zeros that were set stay set: `replicas: 0` is not "default to 1".
    let zeros = json!({"metadata": {"name": "d"},
        "spec": {"replicas": 0, "revisionHistoryLimit": 0,
            "strategy": {"rollingUpdate": {"maxUnavailable": 0, "maxSurge": "0%"}},
            "template": {"spec": {"terminationGracePeriodSeconds": 0, "automountServiceAccountToken": false,
                "containers": []}}}});
    let got: Value = pb::decode(m, &pb::encode_exact(m, tm, &zeros).unwrap()).unwrap();
    assert_eq!(got["spec"]["replicas"], 0);
    assert_eq!(got["spec"]["revisionHistoryLimit"], 0);
    assert_eq!(
        got["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"],
        0
    );
    assert_eq!(got["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "0%");
    let pod = &got["spec"]["template"]["spec"];
    assert_eq!(pod["terminationGracePeriodSeconds"], 0);
    assert_eq!(pod["automountServiceAccountToken"], false);
    // An empty string in a pointer (`storageClassName: ""`: no class, not the default).
    let pvc = message_for("v1", "PersistentVolumeClaim").unwrap();
    let got: Value = pb::decode(
        pvc,
        &pb::encode_exact(
            pvc,
            ("v1", "PersistentVolumeClaim"),
            &json!({"spec": {"storageClassName": ""}}),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(got["spec"]["storageClassName"], "");
}

/// Secret data in forms Go's base64 reads differently from the strict standard alphabet
/// (no padding, the URL-safe alphabet, whitespace, non-zero trailing bits): never a
/// protobuf body that stores other bytes; Go's own form is exact.
#[test]
fn secret_bytes_in_any_other_form_than_gos_go_as_json() {
    let m = message_for("v1", "Secret").unwrap();
    let tm = ("v1", "Secret");
    for odd in [
        "YQ", "YQ=", "-_8=", "YQ==\n", " YQ==", "YR==", "Y Q==", "YQ==YQ==", "ＹＱ==",
    ] {
        let body = json!({"metadata": {"name": "s"}, "data": {"k": odd}});
        assert!(
            pb::encode_exact(m, tm, &body).is_err(),
            "{odd:?} went in protobuf"
        );
    }
    for (text, bytes) in [("", &b""[..]), ("YQ==", b"a"), ("+/8=", b"\xfb\xff")] {
        let body = json!({"metadata": {"name": "s"}, "data": {"k": text}});
        let raw = pb::encode_exact(m, tm, &body).unwrap();
        let got: Secret = pb::decode(m, &raw).unwrap();
        assert_eq!(got.data.unwrap()["k"].0, bytes, "{text:?}");
    }
}

// ---- 2. resends: never a write twice ----

fn status_json(code: u16, reason: &str) -> Vec<u8> {
    serde_json::to_vec(
        &json!({"apiVersion": "v1", "kind": "Status", "metadata": {},
        "status": "Failure", "message": "m", "reason": reason, "code": code}),
    )
    .unwrap()
}

fn config_map(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: meta(name),
        data: Some(BTreeMap::from([("k".into(), "v".into())])),
        ..ConfigMap::default()
    }
}

#[test]
fn a_415_to_the_json_resend_too_is_the_error_with_no_third_try() {
    // A 415 to the protobuf goes again once in JSON; a 415 to that JSON too is the error
    // (no loop, no third encoding), and that type's next write goes straight as JSON.
    let (url, log) = recorder(vec![
        http(
            "415 Unsupported Media Type",
            "",
            JSON,
            &status_json(415, "UnsupportedMediaType"),
        ),
        http("415 Unsupported Media Type", "", "text/plain", b"no"),
        created("v1", "ConfigMap", json!({})),
    ]);
    let cms: Api<ConfigMap> = Api::namespaced(client(&url, 3), NS);
    let err = cms
        .create(&PostParams::default(), &config_map("a"))
        .unwrap_err();
    assert_eq!(err.code(), Some(415), "{err}");
    cms.create(&PostParams::default(), &config_map("a"))
        .unwrap();
    let types: Vec<String> = seen(&log).into_iter().map(|s| s.content_type).collect();
    assert_eq!(types, [PB, JSON, JSON]);
    // Any other refusal is that error, with no second write: the write may have been
    // checked, admitted or even done.
    for (status, code, reason) in [
        ("400 Bad Request", 400, "BadRequest"),
        ("406 Not Acceptable", 406, "NotAcceptable"),
        ("409 Conflict", 409, "AlreadyExists"),
        ("422 Unprocessable Entity", 422, "Invalid"),
        ("500 Internal Server Error", 500, "InternalError"),
    ] {
        let (url, log) = recorder(vec![
            http(status, "", JSON, &status_json(code, reason)),
            created("v1", "ConfigMap", json!({})),
        ]);
        let cms: Api<ConfigMap> = Api::namespaced(client(&url, 3), NS);
        let err = cms
            .create(&PostParams::default(), &config_map("a"))
            .unwrap_err();
        assert_eq!(err.code(), Some(code), "{err}");
        let types: Vec<String> = seen(&log).into_iter().map(|s| s.content_type).collect();
        assert_eq!(types, [PB], "{status}");
    }
}

#[test]
fn a_retried_protobuf_write_sends_the_same_whole_body_again() {
    let (url, log) = recorder(vec![
        http(
            "503 Service Unavailable",
            "retry-after: 0\r\n",
            JSON,
            &status_json(503, "ServiceUnavailable"),
        ),
        http(
            "429 Too Many Requests",
            "retry-after: 0\r\n",
            JSON,
            &status_json(429, "TooManyRequests"),
        ),
        created("v1", "ConfigMap", json!({})),
    ]);
    let cms: Api<ConfigMap> = Api::namespaced(client(&url, 3), NS);
    let mut cm = config_map("a");
    cm.data
        .as_mut()
        .unwrap()
        .insert("big".into(), "x".repeat(200_000));
    cms.create(&PostParams::default(), &cm).unwrap();
    let s = seen(&log);
    assert_eq!(s.len(), 3);
    for one in &s {
        assert_eq!(one.content_type, PB);
        assert_eq!(one.body, s[0].body);
    }
    assert_eq!(
        carried(&s[2].body)["data"]["big"].as_str().unwrap().len(),
        200_000
    );
}

// ---- 3. a refusal never puts a secret in a log line ----

struct Capture(Mutex<Vec<String>>);

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        self.0.lock().unwrap().push(format!("{}", record.args()));
    }
    fn flush(&self) {}
}

static LOGS: Capture = Capture(Mutex::new(Vec::new()));

#[test]
fn a_secret_the_encoder_refuses_is_never_in_a_log_line_or_an_error() {
    let _ = log::set_logger(&LOGS);
    log::set_max_level(log::LevelFilter::Trace);
    let (url, log) = recorder(vec![
        created("v1", "Secret", json!({})),
        created("v1", "Secret", json!({})),
        created("v1", "Secret", json!({})),
    ]);
    let secrets: Api<Secret> = Api::namespaced(client(&url, 0), NS);
    let secret = "hunter2-SECRET-do-not-log";
    // Refused for its value (not base64), for an unknown member holding it, for a key.
    for body in [
        json!({"metadata": {"name": "a"}, "data": {"password": format!("{secret}!")}}),
        json!({"metadata": {"name": "a"}, "stringData": {"p": "x"}, secret: secret}),
        json!({"metadata": {"name": "a", "annotations": {"k": 1}}, "data": {secret: "eA=="}}),
    ] {
        secrets.create(&PostParams::default(), &body).unwrap();
    }
    let s = seen(&log);
    assert!(s.iter().all(|s| s.content_type == JSON));
    let logs = LOGS.0.lock().unwrap();
    assert!(logs.iter().any(|l| l.contains("sent as JSON")), "{logs:?}");
    for l in logs.iter() {
        assert!(!l.contains("hunter2"), "{l}");
    }
}

// ---- 4. the test server chooses protobuf as kube-apiserver does ----

/// One raw GET on its own connection: the answer's status code and `Content-Type`.
fn get(server: &ApiServer, path: &str, accept: &str) -> (u16, String) {
    let (code, ct, _) = get_text(server, path, accept);
    (code, ct)
}

/// [`get`], with the whole answer as text.
fn get_text(server: &ApiServer, path: &str, accept: &str) -> (u16, String, String) {
    let mut s = std::net::TcpStream::connect(server.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\naccept: {accept}\r\n\r\n"
    )
    .unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let head = String::from_utf8_lossy(&answer);
    let code = head.split(' ').nth(1).unwrap().parse().unwrap();
    let ct = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_owned())
        })
        .unwrap_or_default();
    (code, ct, head.into_owned())
}

/// kube-apiserver sorts `Accept`'s ranges by q-value (then a concrete type before a
/// wildcard, github.com/munnerz/goautoneg) and serves the first it can; a q of 0 is not
/// dropped there.
#[test]
fn accept_q_values_and_wildcards_choose_as_kube_apiserver_does() {
    let server = ApiServer::start();
    let cms: Api<ConfigMap> = Api::namespaced(Client::new(server.client_config()).unwrap(), NS);
    cms.create(&PostParams::default(), &config_map("a"))
        .unwrap();
    let path = format!("/api/v1/namespaces/{NS}/configmaps/a");
    for (accept, expected) in [
        ("application/vnd.kubernetes.protobuf, application/json", PB),
        (
            "application/json, application/vnd.kubernetes.protobuf",
            JSON,
        ),
        (
            "application/json;q=0.5, application/vnd.kubernetes.protobuf",
            PB,
        ),
        (
            "application/vnd.kubernetes.protobuf;q=0.5, application/json",
            JSON,
        ),
        (
            "application/vnd.kubernetes.protobuf;q=0.9,application/json;q=0.95",
            JSON,
        ),
        (
            "application/json;q=0.1, application/vnd.kubernetes.protobuf;q=0.2",
            PB,
        ),
        ("*/*, application/vnd.kubernetes.protobuf", PB),
        ("application/*, application/vnd.kubernetes.protobuf", PB),
        ("application/vnd.kubernetes.protobuf;q=0.9, */*", JSON),
        ("application/vnd.kubernetes.protobuf;q=0", PB),
        // Of two q's the last counts; a q that does not parse is 0.
        (
            "application/vnd.kubernetes.protobuf;q=1;q=0.1, application/json;q=0.5",
            JSON,
        ),
        (
            "application/vnd.kubernetes.protobuf;q=high, application/json;q=0.01",
            JSON,
        ),
    ] {
        let (code, ct) = get(&server, &path, accept);
        assert_eq!(code, 200, "{accept}");
        assert!(ct.starts_with(expected), "{accept}: {ct}");
    }
    // A hostile header of many ranges is sorted in bounded time, with the same keys.
    let many = format!(
        "{}application/vnd.kubernetes.protobuf",
        "application/json;q=0.5,".repeat(400)
    );
    let (code, ct) = get(&server, &path, &many);
    assert!(code == 200 && ct.starts_with(PB), "{code} {ct}");
    // The same for a list and a metadata-only list.
    let list = format!("/api/v1/namespaces/{NS}/configmaps");
    let (_, ct) = get(
        &server,
        &list,
        "application/json;q=0.5, application/vnd.kubernetes.protobuf",
    );
    assert!(ct.starts_with(PB), "{ct}");
    let (_, ct) = get(
        &server,
        &list,
        "application/json;q=0.5,application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
    );
    assert!(ct.starts_with(PB), "{ct}");
    // `as=Table` is never protobuf, whatever its q.
    let (code, ct) = get(
        &server,
        &list,
        "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1, application/json;q=0.5",
    );
    assert!(code == 200 && ct.starts_with(JSON), "{code} {ct}");
    // A Table asked only in protobuf is passed over: the plain JSON range after it is
    // served, a list, not a Table.
    let (code, ct, text) = get_text(
        &server,
        &list,
        "application/json;q=0.1, application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1",
    );
    assert!(code == 200 && ct.starts_with(JSON), "{code} {ct}");
    assert!(
        text.contains("ConfigMapList") && !text.contains("\"Table\""),
        "{text}"
    );
}

#[test]
fn a_deployment_written_in_protobuf_reads_back_from_the_test_server_as_its_json() {
    // Through the real server: a protobuf create of a Deployment without replicas, then its
    // JSON read: no `replicas: 0` invented on the way.
    let server = ApiServer::start();
    let deployments: Api<Deployment> =
        Api::namespaced(Client::new(server.client_config()).unwrap(), NS);
    let d: Deployment = serde_json::from_value(json!({"metadata": {"name": "d", "namespace": NS},
        "spec": {"selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}))
    .unwrap();
    deployments.create(&PostParams::default(), &d).unwrap();
    let sent = server
        .request_headers()
        .iter()
        .filter(|r| r.request.starts_with("POST"))
        .map(|r| {
            r.values("content-type")
                .first()
                .copied()
                .unwrap_or("")
                .to_owned()
        })
        .collect::<Vec<_>>();
    assert_eq!(sent, [PB]);
    let stored = server
        .get(
            &kube_informer::api::ApiResource::of::<Deployment>(),
            Some(NS),
            "d",
        )
        .unwrap();
    let spec = &stored["spec"];
    assert!(spec.get("replicas").is_none_or(|r| r != 0), "{spec}");
    assert!(spec.get("paused").is_none_or(|p| p == false), "{spec}");
}

// ---- 5. the test server reads protobuf bodies as kube-apiserver does ----

/// One raw write on its own connection: the answer's status code and body.
fn send(
    server: &ApiServer,
    method: &str,
    path: &str,
    content_type: &str,
    body: &[u8],
) -> (u16, Vec<u8>) {
    let mut s = std::net::TcpStream::connect(server.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\naccept: application/json\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(body).unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer).into_owned();
    let code = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = match text.find("\r\n\r\n") {
        Some(i) => answer[i + 4..].to_vec(),
        None => Vec::new(),
    };
    (code, body)
}

fn config_map_body(name: &str, extra: &[u8]) -> Vec<u8> {
    let m = message_for("v1", "ConfigMap").unwrap();
    let mut raw = pb::encode(m, &json!({"metadata": {"name": name}, "data": {"k": "v"}})).unwrap();
    raw.extend_from_slice(extra);
    let mut out = Vec::new();
    pb::write_envelope("v1", "ConfigMap", &raw, &mut out);
    out
}

#[test]
fn the_test_server_reads_odd_protobuf_bodies_as_kube_apiserver_does() {
    let server = ApiServer::start();
    let path = format!("/api/v1/namespaces/{NS}/configmaps");
    // An unknown field (a newer client's): skipped, as Go's generated code skips it.
    let (code, body) = send(
        &server,
        "POST",
        &path,
        "application/vnd.kubernetes.protobuf",
        &config_map_body("unknown", b"\xf8\x06\x01"),
    );
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&body));
    // The media type's parameters and case do not matter (Go's mime.ParseMediaType).
    for (i, ct) in [
        "application/vnd.kubernetes.protobuf; charset=utf-8",
        "Application/Vnd.Kubernetes.Protobuf",
    ]
    .into_iter()
    .enumerate()
    {
        let (code, body) = send(
            &server,
            "POST",
            &path,
            ct,
            &config_map_body(&format!("ct-{i}"), b""),
        );
        assert_eq!(code, 201, "{ct}: {}", String::from_utf8_lossy(&body));
    }
    // A field of the wrong wire type: a 400, nothing stored.
    let (code, _) = send(
        &server,
        "POST",
        &path,
        "application/vnd.kubernetes.protobuf",
        &config_map_body("wrong", b"\x10\x01"),
    );
    assert_eq!(code, 400);
    let cms: Api<ConfigMap> = Api::namespaced(Client::new(server.client_config()).unwrap(), NS);
    assert!(cms.get("wrong").is_err());
    let got = cms.get("unknown").unwrap();
    assert_eq!(got.data.unwrap()["k"], "v");
}
