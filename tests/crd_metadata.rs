//! `testing::ApiServer` checks a custom resource's metadata and its `/status` writes as
//! kube-apiserver v1.36 does, beyond the cases of the captured table (`crd_matrix.rs`):
//! names at the 253-character limit, a 64-character label, two controllers among the owner
//! references, the forms a finalizer may take, a long `generateName`, annotations' total size,
//! the body's kind and apiVersion on an update, and what a `/status` write validates, prunes
//! and refuses. Each over real loopback HTTP, on the table's CRDs (`sprockets`, `rules`).

mod common;

use std::net::SocketAddr;

use common::capture::{body_json, send_json, Response};
use kube_informer::testing::ApiServer;
use serde_json::{json, Value};

const NS: &str = "crd-meta";
const GROUP: &str = "matrix.capture.example.com";

/// A server with the table's CRDs served and the namespace.
fn setup() -> (ApiServer, SocketAddr) {
    let m: Value = serde_json::from_slice(&common::fixture("crd-matrix.json")).unwrap();
    let server = ApiServer::builder().start();
    let addr = server.addr();
    for crd in m["crds"].as_array().unwrap() {
        let r = post(
            addr,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            crd,
        );
        assert_eq!(r.code, 201, "{}", text(&r));
    }
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}});
    assert_eq!(post(addr, "/api/v1/namespaces", &ns).code, 201);
    for plural in ["sprockets", "rules"] {
        let path = collection(plural);
        common::wait_until("the CRD is served", || {
            send_json(addr, "GET", &path, None, Vec::new()).code == 200
        });
    }
    (server, addr)
}

fn collection(plural: &str) -> String {
    format!("/apis/{GROUP}/v1/namespaces/{NS}/{plural}")
}

fn text(r: &Response) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

fn post(addr: SocketAddr, path: &str, body: &Value) -> Response {
    send_json(
        addr,
        "POST",
        path,
        Some("application/json"),
        body.to_string().into_bytes(),
    )
}

fn sprocket(meta: Value) -> Value {
    json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Sprocket", "metadata": meta,
        "spec": {"size": 1}})
}

fn create(addr: SocketAddr, meta: Value) -> Response {
    post(addr, &collection("sprockets"), &sprocket(meta))
}

/// The causes of a 422 as `(reason, field, message)`.
fn causes(r: &Response) -> Vec<(String, String, String)> {
    assert_eq!(r.code, 422, "{}", text(r));
    body_json(r)["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or("").to_owned();
            (s("reason"), s("field"), s("message"))
        })
        .collect()
}

fn warnings(r: &Response) -> Vec<String> {
    r.all("warning").iter().map(|w| w.to_string()).collect()
}

const SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

#[test]
fn names_are_dns_subdomains_of_at_most_253_characters() {
    let (_server, addr) = setup();
    let longest = format!("{}.{}", "a".repeat(126), "b".repeat(126));
    assert_eq!(longest.len(), 253);
    let r = create(addr, json!({"name": longest}));
    assert_eq!(r.code, 201, "{}", text(&r));
    let one_more = format!("{longest}c");
    let r = create(addr, json!({"name": one_more}));
    assert_eq!(
        causes(&r),
        [(
            "FieldValueInvalid".to_owned(),
            "metadata.name".to_owned(),
            format!("Invalid value: \"{one_more}\": must be no more than 253 characters")
        )]
    );
    // Too long and badly formed: both reported.
    let r = create(addr, json!({"name": "B".repeat(254)}));
    assert_eq!(causes(&r).len(), 2);
    for bad in ["a..b", "-a", "a-", "UPPER", "a_b", ".", "a/b"] {
        let r = create(addr, json!({"name": bad}));
        let c = causes(&r);
        assert_eq!(c.len(), 1, "{bad}: {c:?}");
        assert_eq!(
            c[0].2,
            format!("Invalid value: {}: {SUBDOMAIN}", json!(bad)),
            "{bad}"
        );
    }
}

#[test]
fn a_long_generate_name_keeps_58_characters_before_the_suffix() {
    let (_server, addr) = setup();
    let prefix = "g".repeat(70);
    let r = create(addr, json!({"generateName": prefix}));
    assert_eq!(r.code, 201, "{}", text(&r));
    let name = body_json(&r)["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(name.len(), 63, "{name}");
    assert!(name.starts_with(&"g".repeat(58)), "{name}");
    assert_eq!(body_json(&r)["metadata"]["generateName"], json!(prefix));
    // A prefix ending in '-' is checked as if the suffix followed; one ending in '.' is not.
    assert_eq!(create(addr, json!({"generateName": "ok-"})).code, 201);
    let c = causes(&create(addr, json!({"generateName": "dot."})));
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].1, "metadata.generateName");
}

#[test]
fn labels_of_64_characters_are_refused() {
    let (_server, addr) = setup();
    let ok = json!({"name": "l-ok", "labels": {
        "a".repeat(63): "v".repeat(63), "example.com/x": "", "x": "A-b_c.9"}});
    assert_eq!(create(addr, ok).code, 201);
    let c = causes(&create(
        addr,
        json!({"name": "l-value", "labels": {"k": "v".repeat(64)}}),
    ));
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].1, "metadata.labels");
    assert!(
        c[0].2.ends_with(": must be no more than 63 characters"),
        "{c:?}"
    );
    let c = causes(&create(
        addr,
        json!({"name": "l-key", "labels": {"k".repeat(64): "v"}}),
    ));
    assert_eq!(c.len(), 1, "{c:?}");
    assert!(
        c[0].2
            .ends_with(": name part must be no more than 63 characters"),
        "{c:?}"
    );
    let c = causes(&create(
        addr,
        json!({"name": "l-prefix", "labels": {"Bad_Prefix/k": "v", "/k": "v"}}),
    ));
    let mut messages: Vec<&str> = c.iter().map(|c| c.2.as_str()).collect();
    messages.sort_unstable();
    assert_eq!(
        messages,
        [
            "Invalid value: \"/k\": prefix part must be non-empty".to_owned(),
            format!("Invalid value: \"Bad_Prefix/k\": prefix part {SUBDOMAIN}")
        ]
    );
}

#[test]
fn owner_references_need_their_fields_and_one_controller_at_most() {
    let (_server, addr) = setup();
    let owner = |kind: &str, name: &str, controller: bool| {
        json!({"apiVersion": "v1", "kind": kind, "name": name, "uid": format!("uid-{name}"),
            "controller": controller})
    };
    let r = create(
        addr,
        json!({"name": "o-ok", "ownerReferences": [owner("ConfigMap", "a", true),
            owner("Secret", "b", false)]}),
    );
    assert_eq!(r.code, 201, "{}", text(&r));
    let r = create(
        addr,
        json!({"name": "o-two", "ownerReferences": [owner("ConfigMap", "a", true),
            owner("Secret", "b", true)]}),
    );
    let c = causes(&r);
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].1, "metadata.ownerReferences");
    assert!(
        c[0].2.ends_with(
            ": Only one reference can have Controller set to true. Found \"true\" in references for ConfigMap/a and Secret/b"
        ),
        "{c:?}"
    );
    let r = create(
        addr,
        json!({"name": "o-empty", "ownerReferences": [{"apiVersion": "apps/"}]}),
    );
    let c = causes(&r);
    let shown: Vec<(&str, &str)> = c.iter().map(|c| (c.1.as_str(), c.2.as_str())).collect();
    assert_eq!(
        shown,
        [
            (
                "metadata.ownerReferences.apiVersion",
                "Invalid value: \"apps/\": version must not be empty"
            ),
            (
                "metadata.ownerReferences.kind",
                "Invalid value: \"\": must not be empty"
            ),
            (
                "metadata.ownerReferences.name",
                "Invalid value: \"\": must not be empty"
            ),
            (
                "metadata.ownerReferences.uid",
                "Invalid value: \"\": must not be empty"
            ),
        ]
    );
}

#[test]
fn finalizer_forms() {
    let (_server, addr) = setup();
    let r = create(
        addr,
        json!({"name": "f-ok", "finalizers": ["example.com/cleanup"]}),
    );
    assert_eq!(r.code, 201, "{}", text(&r));
    assert!(warnings(&r).is_empty(), "{:?}", warnings(&r));
    let r = create(addr, json!({"name": "f-bare", "finalizers": ["cleanup"]}));
    assert_eq!(r.code, 201, "{}", text(&r));
    assert_eq!(
        warnings(&r),
        ["299 - \"metadata.finalizers: \\\"cleanup\\\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers\""]
    );
    // An update warns of the finalizers it adds, not of those already there.
    let mut obj = body_json(&r);
    obj["metadata"]["finalizers"] = json!(["cleanup", "another"]);
    let r = send_json(
        addr,
        "PUT",
        &format!("{}/f-bare", collection("sprockets")),
        Some("application/json"),
        obj.to_string().into_bytes(),
    );
    assert_eq!(r.code, 200, "{}", text(&r));
    let w = warnings(&r);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("\\\"another\\\""), "{w:?}");
    for (bad, detail) in [
        ("a/b/c", "a qualified name must consist of"),
        ("/x", "prefix part must be non-empty"),
        ("example.com/", "name part must be non-empty"),
        ("with space", "name part must consist of"),
    ] {
        let r = create(addr, json!({"name": "f-bad", "finalizers": [bad]}));
        let c = causes(&r);
        assert!(
            c.iter()
                .any(|c| c.1 == "metadata.finalizers" && c.2.contains(detail)),
            "{bad}: {c:?}"
        );
        assert!(warnings(&r).is_empty(), "a refused write warns of nothing");
    }
}

#[test]
fn annotation_keys_and_total_size() {
    let (_server, addr) = setup();
    // Case does not matter in an annotation key's prefix.
    let r = create(
        addr,
        json!({"name": "a-case", "annotations": {"Example.COM/Note": "x"}}),
    );
    assert_eq!(r.code, 201, "{}", text(&r));
    let limit = 256 * 1024;
    let r = create(
        addr,
        json!({"name": "a-full", "annotations": {"k": "v".repeat(limit - 1)}}),
    );
    assert_eq!(r.code, 201, "{}", text(&r));
    let r = create(
        addr,
        json!({"name": "a-over", "annotations": {"k": "v".repeat(limit)}}),
    );
    let c = causes(&r);
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].0, "FieldValueTooLong");
    assert_eq!(c[0].1, "metadata.annotations");
    assert!(!c[0].2.contains("vvv"), "the value is not quoted back");
}

#[test]
fn the_body_must_name_the_resources_kind_and_version_on_update_too() {
    let (_server, addr) = setup();
    let r = create(addr, json!({"name": "k"}));
    assert_eq!(r.code, 201);
    let mut obj = body_json(&r);
    let one = format!("{}/k", collection("sprockets"));
    obj["kind"] = json!("Gadget");
    let r = send_json(
        addr,
        "PUT",
        &one,
        Some("application/json"),
        obj.to_string().into_bytes(),
    );
    assert_eq!(
        causes(&r),
        [(
            "FieldValueInvalid".to_owned(),
            "kind".to_owned(),
            "Invalid value: \"Gadget\": must be Sprocket".to_owned()
        )]
    );
    assert_eq!(
        body_json(&r)["message"],
        format!(
            "Gadget.{GROUP} \"k\" is invalid: kind: Invalid value: \"Gadget\": must be Sprocket"
        )
    );
    obj["kind"] = json!("Sprocket");
    obj["apiVersion"] = json!("other.example.com/v1");
    let r = send_json(
        addr,
        "PUT",
        &one,
        Some("application/json"),
        obj.to_string().into_bytes(),
    );
    assert_eq!(r.code, 400, "{}", text(&r));
    assert_eq!(
        body_json(&r)["message"],
        format!("the API version in the data (other.example.com/v1) does not match the expected API version ({GROUP}/v1)")
    );
    // Another version of the same group: decoded without a schema (every field unknown),
    // then refused; under Strict the unknown fields are the error.
    let v2 = json!({"apiVersion": format!("{GROUP}/v2"), "kind": "Sprocket",
        "metadata": {"name": "v2"}, "spec": {}, "status": {}});
    let r = post(addr, &collection("sprockets"), &v2);
    assert_eq!(r.code, 400, "{}", text(&r));
    assert_eq!(
        warnings(&r),
        [
            "299 - \"unknown field \\\"spec\\\"\"",
            "299 - \"unknown field \\\"status\\\"\""
        ]
    );
    let r = send_json(
        addr,
        "POST",
        &format!("{}?fieldValidation=Strict", collection("sprockets")),
        Some("application/json"),
        v2.to_string().into_bytes(),
    );
    assert_eq!(r.code, 400, "{}", text(&r));
    assert_eq!(
        body_json(&r)["message"],
        "Sprocket in version \"v2\" cannot be handled as a Sprocket: strict decoding error: unknown field \"spec\", unknown field \"status\""
    );
    assert!(warnings(&r).is_empty());
    let r = send_json(
        addr,
        "POST",
        &format!("{}?fieldValidation=Ignore", collection("sprockets")),
        Some("application/json"),
        v2.to_string().into_bytes(),
    );
    assert_eq!(r.code, 400, "{}", text(&r));
    assert!(warnings(&r).is_empty());
    // The first write of a collection does not rename its kind.
    let r = post(
        addr,
        &collection("rules"),
        &json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Gadget",
            "metadata": {"name": "r"}, "spec": {"owner": "o"}}),
    );
    assert_eq!(r.code, 422, "{}", text(&r));
    let list = body_json(&send_json(
        addr,
        "GET",
        &collection("rules"),
        None,
        Vec::new(),
    ));
    assert_eq!(list["kind"], "RuleList");
}

fn rule(addr: SocketAddr) -> Value {
    let r = post(
        addr,
        &collection("rules"),
        &json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Rule",
            "metadata": {"name": "s"}, "spec": {"owner": "o", "replicas": 1}}),
    );
    assert_eq!(r.code, 201, "{}", text(&r));
    body_json(&r)
}

#[test]
fn a_status_write_validates_the_status_with_fields_under_it() {
    let (_server, addr) = setup();
    let mut obj = rule(addr);
    let status = format!("{}/s/status", collection("rules"));
    obj["status"] = json!({"readyReplicas": -1, "message": 5});
    let r = send_json(
        addr,
        "PUT",
        &status,
        Some("application/json"),
        obj.to_string().into_bytes(),
    );
    let mut c = causes(&r);
    c.sort();
    assert_eq!(
        c,
        [
            (
                "FieldValueInvalid".to_owned(),
                "status.readyReplicas".to_owned(),
                "Invalid value: -1: readyReplicas in body should be greater than or equal to 0"
                    .to_owned()
            ),
            (
                "FieldValueTypeInvalid".to_owned(),
                "status.message".to_owned(),
                "Invalid value: \"integer\": message in body must be of type string: \"integer\""
                    .to_owned()
            ),
        ]
    );
    // Valid: taken, unknown status fields pruned with a warning; the spec change ignored.
    obj["status"] = json!({"readyReplicas": 2, "bogus": 1});
    obj["spec"]["replicas"] = json!(9);
    let r = send_json(
        addr,
        "PUT",
        &status,
        Some("application/json"),
        obj.to_string().into_bytes(),
    );
    assert_eq!(r.code, 200, "{}", text(&r));
    assert_eq!(body_json(&r)["status"], json!({"readyReplicas": 2}));
    assert_eq!(body_json(&r)["spec"]["replicas"], 1);
    assert_eq!(
        warnings(&r),
        ["299 - \"unknown field \\\"status.bogus\\\"\""]
    );
}

#[test]
fn a_strict_status_patch_with_an_unknown_field_is_refused_on_field_patch() {
    let (_server, addr) = setup();
    rule(addr);
    let r = send_json(
        addr,
        "PATCH",
        &format!("{}/s/status?fieldValidation=Strict", collection("rules")),
        Some("application/merge-patch+json"),
        json!({"status": {"readyReplicas": 1, "bogus": 1}})
            .to_string()
            .into_bytes(),
    );
    let c = causes(&r);
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].1, "patch");
    assert!(
        c[0].2
            .ends_with("strict decoding error: unknown field \"status.bogus\""),
        "{c:?}"
    );
}
