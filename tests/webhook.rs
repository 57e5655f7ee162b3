//! Admission and conversion webhooks end to end: the hooks of `kube_informer::webhook`
//! served over TLS by `kube_informer::serve`, called by `testing::ApiServer` as
//! kube-apiserver calls them, over real loopback.
#![cfg(feature = "webhook")]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use kube_informer::api::{ApiResource, DynamicObject};
use kube_informer::controller::sharding::{
    shard_assigner, shard_for, HashKey, Ring, Sharder, SharderConfig, ShardingEvent, RING_LABEL,
};
use kube_informer::controller::LeaderElectionConfig;
use kube_informer::serve::{Request, Response, Router, Server, TlsFiles};
use kube_informer::testing::{ApiServer, CA_PEM, OTHER_CA_PEM, SERVER_CERT_PEM, SERVER_KEY_PEM};
use kube_informer::webhook::{AdmissionHook, ConversionHook, Verdict};
use kube_informer::{Api, Client, Patch, PatchParams, PostParams};
use serde_json::{json, Value};

fn cms() -> ApiResource {
    ApiResource::new("", "v1", "ConfigMap", "configmaps", true)
}

fn validating_configs() -> ApiResource {
    ApiResource::new(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        false,
    )
}

fn mutating_configs() -> ApiResource {
    ApiResource::new(
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        false,
    )
}

/// The hooks served over TLS with the test server's certificate (for `127.0.0.1`).
struct Hooks {
    server: Option<Server>,
    _dir: tempfile::TempDir,
}

impl Hooks {
    fn start(router: Router) -> Hooks {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tls.crt"), SERVER_CERT_PEM).unwrap();
        std::fs::write(dir.path().join("tls.key"), SERVER_KEY_PEM).unwrap();
        let server = Server::builder("hooks")
            .tls(TlsFiles::new(dir.path()))
            .bind("127.0.0.1:0", router)
            .unwrap();
        Hooks {
            server: Some(server),
            _dir: dir,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.server.as_ref().unwrap().addr())
    }
}

impl Drop for Hooks {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            s.stop();
        }
    }
}

fn ca_bundle(pem: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(pem)
}

/// One webhook entry of a configuration, for ConfigMaps in any namespace.
fn webhook(name: &str, url: &str) -> Value {
    json!({
        "name": name,
        "clientConfig": {"url": url, "caBundle": ca_bundle(CA_PEM)},
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
            "resources": ["configmaps"], "scope": "Namespaced"}],
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Fail",
        "timeoutSeconds": 5,
    })
}

fn register(client: &Client, mutating: bool, name: &str, hooks: Vec<Value>) {
    let ar = if mutating {
        mutating_configs()
    } else {
        validating_configs()
    };
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let body = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": ar.kind,
        "metadata": {"name": name}, "webhooks": hooks});
    api.create(&PostParams::default(), &body).unwrap();
}

fn cm(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels}, "data": {"k": "v"}})
}

fn example_router() -> Router {
    Router::new()
        .route(
            "/validate",
            AdmissionHook::validating(|req| {
                let deny = req
                    .object
                    .as_ref()
                    .and_then(|o| o.pointer("/metadata/labels/deny"));
                if deny.is_some_and(|v| v == "true") {
                    Verdict::deny("denied by kube-informer's example webhook")
                } else {
                    Verdict::allow().warn("looked at by the validating hook")
                }
            }),
        )
        .route(
            "/mutate",
            AdmissionHook::mutating(|_req, obj: &mut Value| {
                obj["metadata"]["labels"]["mutated-by"] = json!("kube-informer");
                Verdict::allow()
            }),
        )
        .route(
            "/panic",
            AdmissionHook::validating(|_| panic!("the hook fell over")),
        )
}

#[test]
fn mutating_then_validating_deny_and_mutate() {
    let server = ApiServer::start();
    let hooks = Hooks::start(example_router());
    let client = Client::new(server.client_config()).unwrap();
    register(
        &client,
        true,
        "mutate",
        vec![webhook("mutate.example.com", &hooks.url("/mutate"))],
    );
    register(
        &client,
        false,
        "validate",
        vec![webhook("validate.example.com", &hooks.url("/validate"))],
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client, "lab", &cms());

    let made = api
        .create(&PostParams::default(), &cm("plain", json!({})))
        .unwrap();
    assert_eq!(made.metadata.label("mutated-by"), Some("kube-informer"));
    let stored = server.get(&cms(), Some("lab"), "plain").unwrap();
    assert_eq!(stored["metadata"]["labels"]["mutated-by"], "kube-informer");

    let err = api
        .create(
            &PostParams::default(),
            &cm("refused", json!({"deny": "true"})),
        )
        .unwrap_err();
    let st = err.status().expect("a Status");
    assert_eq!(st.code, 403);
    assert_eq!(
        st.message,
        "admission webhook \"validate.example.com\" denied the request: denied by kube-informer's example webhook"
    );
    assert!(server
        .get(&cms(), Some("lab"), "refused")
        .unwrap_err()
        .is_not_found());

    // The validating hook's warning reaches the client as a `Warning` header.
    let res = ureq::post(&format!(
        "{}/api/v1/namespaces/lab/configmaps",
        server.url()
    ))
    .header("content-type", "application/json")
    .send(cm("warned", json!({})).to_string())
    .unwrap();
    let warnings: Vec<&str> = res
        .headers()
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    assert_eq!(warnings, ["299 - \"looked at by the validating hook\""]);

    // An update goes through both too: the label the mutating hook adds comes back.
    let mut again = serde_json::to_value(&made).unwrap();
    again["metadata"]["labels"] = json!({});
    let updated = api
        .replace("plain", &PostParams::default(), &again)
        .unwrap();
    assert_eq!(updated.metadata.label("mutated-by"), Some("kube-informer"));
    // And a patch: the merge patch removes the label, the mutating hook puts it back.
    let patched = api
        .patch(
            "plain",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"mutated-by": null}}})),
        )
        .unwrap();
    assert_eq!(patched.metadata.label("mutated-by"), Some("kube-informer"));
    let err = api
        .patch(
            "plain",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"deny": "true"}}})),
        )
        .unwrap_err();
    assert_eq!(err.status().unwrap().code, 403);
}

#[test]
fn a_panicking_hook_is_a_denial_with_its_message() {
    let server = ApiServer::start();
    let hooks = Hooks::start(example_router());
    let client = Client::new(server.client_config()).unwrap();
    register(
        &client,
        false,
        "panics",
        vec![webhook("panic.example.com", &hooks.url("/panic"))],
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client, "lab", &cms());
    let err = api
        .create(&PostParams::default(), &cm("a", json!({})))
        .unwrap_err();
    let st = err.status().expect("a Status");
    assert_eq!(st.code, 500);
    assert!(
        st.message
            .contains("denied the request: the admission hook panicked: the hook fell over"),
        "{}",
        st.message
    );
}

fn review(uid: &str) -> Value {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": uid,
        "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
        "resource": {"group": "", "version": "v1", "resource": "configmaps"},
        "namespace": "lab", "name": "a", "operation": "CREATE", "userInfo": {"username": "ann"},
        "object": cm("a", json!({"deny": "true"})),
    }})
}

/// One HTTPS request to the hooks; the status code and the body.
fn post(hooks: &Hooks, method: &str, path: &str, body: &[u8]) -> (u16, Value) {
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls::pki_types::CertificateDer::pem_slice_iter(CA_PEM.as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    use rustls::pki_types::pem::PemObject;
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let addr = hooks.server.as_ref().unwrap().addr();
    let conn =
        rustls::ClientConnection::new(Arc::new(config), "127.0.0.1".try_into().unwrap()).unwrap();
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(common::PATIENCE)).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    tls.write_all(head.as_bytes()).unwrap();
    // A server may answer 413 before reading a body it refuses, and close.
    let _ = tls.write_all(body);
    let mut answer = Vec::new();
    let _ = tls.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer).into_owned();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    (code, serde_json::from_str(body).unwrap_or(Value::Null))
}

#[test]
fn the_uid_is_echoed_and_bad_reviews_are_refused_with_a_reason() {
    let router = example_router().route(
        "/small",
        AdmissionHook::validating(|_| Verdict::allow()).max_body(1024),
    );
    let hooks = Hooks::start(router);
    for path in ["/validate", "/mutate", "/panic"] {
        let (code, answer) = post(
            &hooks,
            "POST",
            path,
            review("uid-42").to_string().as_bytes(),
        );
        assert_eq!(code, 200, "{path}");
        assert_eq!(answer["response"]["uid"], "uid-42", "{path}");
        assert_eq!(answer["apiVersion"], "admission.k8s.io/v1");
    }
    let (_, denied) = post(
        &hooks,
        "POST",
        "/validate",
        review("u").to_string().as_bytes(),
    );
    assert_eq!(denied["response"]["allowed"], false);
    assert_eq!(denied["response"]["status"]["code"], 403);

    // Malformed: not JSON, JSON of another shape, a review without a request, the wrong kind.
    for bad in [
        &b"{not json"[..],
        b"[]",
        br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#,
        br#"{"apiVersion":"v1","kind":"ConfigMap","request":{}}"#,
        br#"{"kind":"AdmissionReview","request":{"uid":"u","operation":"EXPLODE"}}"#,
        b"",
    ] {
        let (code, answer) = post(&hooks, "POST", "/validate", bad);
        assert_eq!(code, 400, "{}", String::from_utf8_lossy(bad));
        assert_eq!(answer["reason"], "BadRequest");
        assert!(
            answer["message"]
                .as_str()
                .unwrap()
                .starts_with("malformed AdmissionReview"),
            "{answer}"
        );
    }
    let (code, _) = post(&hooks, "GET", "/validate", b"");
    assert_eq!(code, 405);
    // Over the hook's bound.
    let mut big = review("u");
    big["request"]["object"]["data"]["k"] = json!("x".repeat(2048));
    let (code, answer) = post(&hooks, "POST", "/small", big.to_string().as_bytes());
    assert_eq!(code, 413);
    assert_eq!(answer["reason"], "RequestEntityTooLarge");
}

#[test]
fn the_test_server_refuses_an_answer_with_another_uid() {
    let liar = Router::new().route("/liar", |_: &Request| {
        Response::json(
            200,
            &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "response": {"uid": "not-yours", "allowed": true}}),
        )
    });
    let hooks = Hooks::start(liar);
    let server = ApiServer::start();
    let client = Client::new(server.client_config()).unwrap();
    register(
        &client,
        false,
        "liar",
        vec![webhook("liar.example.com", &hooks.url("/liar"))],
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client, "lab", &cms());
    let st = api
        .create(&PostParams::default(), &cm("a", json!({})))
        .unwrap_err()
        .status()
        .cloned()
        .unwrap();
    assert_eq!(st.code, 500);
    assert!(
        st.message.contains("expected response.uid="),
        "{}",
        st.message
    );
}

#[test]
fn failure_policy_decides_for_a_hook_that_cannot_be_called() {
    let server = ApiServer::start();
    let client = Client::new(server.client_config()).unwrap();
    // Nothing listens on port 1; an untrusted CA is a failed call too.
    let mut unreachable = webhook("gone.example.com", "https://127.0.0.1:1/validate");
    unreachable["failurePolicy"] = json!("Ignore");
    register(&client, false, "ignore", vec![unreachable.clone()]);
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "lab", &cms());
    api.create(&PostParams::default(), &cm("a", json!({})))
        .expect("failurePolicy Ignore lets the write through");

    let hooks = Hooks::start(example_router());
    let mut untrusted = webhook("untrusted.example.com", &hooks.url("/validate"));
    untrusted["clientConfig"]["caBundle"] = json!(ca_bundle(OTHER_CA_PEM));
    unreachable["failurePolicy"] = json!("Fail");
    unreachable["name"] = json!("gone-fail.example.com");
    register(&client, false, "fail", vec![untrusted, unreachable]);
    let st = api
        .create(&PostParams::default(), &cm("b", json!({})))
        .unwrap_err()
        .status()
        .cloned()
        .unwrap();
    assert_eq!(st.code, 500);
    assert!(
        st.message
            .starts_with("Internal error occurred: failed calling webhook \"untrusted.example.com\": failed to call webhook: Post"),
        "{}",
        st.message
    );
}

#[test]
fn dry_run_is_refused_by_hooks_with_side_effects() {
    let server = ApiServer::start();
    let hooks = Hooks::start(example_router());
    let client = Client::new(server.client_config()).unwrap();
    let mut some = webhook("effects.example.com", &hooks.url("/validate"));
    some["sideEffects"] = json!("Some");
    register(&client, false, "effects", vec![some]);
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "lab", &cms());
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let st = api
        .create(&dry, &cm("a", json!({})))
        .unwrap_err()
        .status()
        .cloned()
        .unwrap();
    assert_eq!(st.code, 400);
    assert_eq!(
        st.message,
        "admission webhook \"effects.example.com\" does not support dry run"
    );
    // Not a dry run: called and allowed.
    api.create(&PostParams::default(), &cm("a", json!({})))
        .unwrap();

    // sideEffects None: a dry run is sent (dryRun true) and answered.
    let server = ApiServer::start();
    let client = Client::new(server.client_config()).unwrap();
    register(
        &client,
        true,
        "none",
        vec![webhook("mutate.example.com", &hooks.url("/mutate"))],
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client, "lab", &cms());
    let made = api.create(&dry, &cm("a", json!({}))).unwrap();
    assert_eq!(made.metadata.label("mutated-by"), Some("kube-informer"));
    assert!(server
        .get(&cms(), Some("lab"), "a")
        .unwrap_err()
        .is_not_found());
}

#[test]
fn namespace_and_object_selectors_choose_the_hook() {
    let server = ApiServer::start();
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    let router = Router::new().route(
        "/deny",
        AdmissionHook::validating(move |_| {
            seen.fetch_add(1, Ordering::SeqCst);
            Verdict::deny("no")
        }),
    );
    let hooks = Hooks::start(router);
    let client = Client::new(server.client_config()).unwrap();
    let namespaces = ApiResource::new("", "v1", "Namespace", "namespaces", false);
    server
        .create(
            &namespaces,
            json!({"metadata": {"name": "prod", "labels": {"env": "prod"}}}),
        )
        .unwrap();
    let mut hook = webhook("deny.example.com", &hooks.url("/deny"));
    hook["namespaceSelector"] = json!({"matchLabels": {"env": "prod"}});
    hook["objectSelector"] =
        json!({"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]});
    register(&client, false, "deny", vec![hook]);

    let dev: Api<DynamicObject> = Api::namespaced_with(client.clone(), "dev", &cms());
    dev.create(&PostParams::default(), &cm("a", json!({})))
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 0, "dev is not selected");
    let prod: Api<DynamicObject> = Api::namespaced_with(client.clone(), "prod", &cms());
    prod.create(&PostParams::default(), &cm("b", json!({"skip": "yes"})))
        .unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "the object is not selected"
    );
    let err = prod
        .create(&PostParams::default(), &cm("c", json!({})))
        .unwrap_err();
    assert_eq!(err.status().unwrap().code, 403);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn a_service_maps_to_a_url_the_test_registers() {
    let server = ApiServer::start();
    let hooks = Hooks::start(example_router());
    let client = Client::new(server.client_config()).unwrap();
    let mut hook = webhook("svc.example.com", "");
    hook["clientConfig"] = json!({
        "service": {"namespace": "hooks", "name": "example", "path": "/mutate", "port": 443},
        "caBundle": ca_bundle(CA_PEM),
    });
    register(&client, true, "svc", vec![hook]);
    let api: Api<DynamicObject> = Api::namespaced_with(client, "lab", &cms());
    // Not registered yet: a failed call (failurePolicy Fail).
    let st = api
        .create(&PostParams::default(), &cm("a", json!({})))
        .unwrap_err()
        .status()
        .cloned()
        .unwrap();
    assert!(
        st.message
            .contains("is not registered with the test server"),
        "{}",
        st.message
    );
    server.webhook_service("hooks", "example", &hooks.url(""));
    let made = api
        .create(&PostParams::default(), &cm("a", json!({})))
        .unwrap();
    assert_eq!(made.metadata.label("mutated-by"), Some("kube-informer"));
}

fn gadget_crd(url: &str) -> Value {
    json!({"spec": {"group": "lab.example.com", "scope": "Namespaced",
        "names": {"plural": "gadgets", "kind": "Gadget"},
        "conversion": {"strategy": "Webhook", "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {"url": url, "caBundle": ca_bundle(CA_PEM)}}},
        "versions": [
            {"name": "v1", "served": true, "storage": true},
            {"name": "v2", "served": true, "storage": false}]}})
}

/// v1 has `spec.size` as a string, v2 as `spec.dimensions.size`, a number.
fn gadget_conversion() -> ConversionHook {
    ConversionHook::new()
        .convert(
            "lab.example.com/v1",
            "lab.example.com/v2",
            |mut o: Value| {
                let size = o["spec"]["size"].as_str().unwrap_or("").to_owned();
                if size == "broken" {
                    return Err("size \"broken\" is not a number".into());
                }
                let n: i64 = size.parse().map_err(|e| format!("size {size:?}: {e}"))?;
                o["spec"] = json!({"dimensions": {"size": n}});
                Ok(o)
            },
        )
        .convert(
            "lab.example.com/v2",
            "lab.example.com/v1",
            |mut o: Value| {
                let n = o["spec"]["dimensions"]["size"].as_i64().unwrap_or(0);
                o["spec"] = json!({"size": n.to_string()});
                Ok(o)
            },
        )
}

#[test]
fn crd_conversion_through_the_webhook() {
    let hooks = Hooks::start(Router::new().route("/convert", gadget_conversion()));
    let server = ApiServer::builder()
        .custom_resource_definition(&gadget_crd(&hooks.url("/convert")))
        .unwrap()
        .start();
    let v1 = ApiResource::new("lab.example.com", "v1", "Gadget", "gadgets", true);
    let v2 = ApiResource::new("lab.example.com", "v2", "Gadget", "gadgets", true);
    server
        .create(
            &v1,
            json!({"metadata": {"name": "g1", "namespace": "lab"}, "spec": {"size": "3"}}),
        )
        .unwrap();
    let client = Client::new(server.client_config()).unwrap();
    let api2: Api<DynamicObject> = Api::namespaced_with(client.clone(), "lab", &v2);

    let g1 = serde_json::to_value(api2.get("g1").unwrap()).unwrap();
    assert_eq!(g1["apiVersion"], "lab.example.com/v2");
    assert_eq!(g1["spec"], json!({"dimensions": {"size": 3}}));
    let list = api2.list(&Default::default()).unwrap();
    assert_eq!(list.items.len(), 1);
    assert_eq!(
        list.items[0].api_version.as_deref(),
        Some("lab.example.com/v2")
    );

    // Written in v2, stored in v1, answered in v2.
    let made = api2
        .create(
            &PostParams::default(),
            &json!({"apiVersion": "lab.example.com/v2", "kind": "Gadget",
                "metadata": {"name": "g2"}, "spec": {"dimensions": {"size": 7}}}),
        )
        .unwrap();
    assert_eq!(made.api_version.as_deref(), Some("lab.example.com/v2"));
    let stored = server.get(&v1, Some("lab"), "g2").unwrap();
    assert_eq!(stored["spec"]["size"], "7");

    // A failure names the object.
    server
        .create(
            &v1,
            json!({"metadata": {"name": "g3", "namespace": "lab"}, "spec": {"size": "broken"}}),
        )
        .unwrap();
    let st = api2.get("g3").unwrap_err().status().cloned().unwrap();
    assert_eq!(st.code, 500);
    assert!(
        st.message.contains("conversion webhook for lab.example.com/v1, Kind=Gadget failed: cannot convert Gadget \"lab/g3\" from \"lab.example.com/v1\" to \"lab.example.com/v2\": size \"broken\" is not a number"),
        "{}",
        st.message
    );
}

#[test]
fn conversion_reviews_echo_the_uid_and_refuse_bad_bodies() {
    let hooks = Hooks::start(Router::new().route("/convert", gadget_conversion()));
    let body = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": "c-1", "desiredAPIVersion": "lab.example.com/v1", "objects": [
            {"apiVersion": "lab.example.com/v2", "kind": "Gadget",
             "metadata": {"name": "g", "namespace": "lab"}, "spec": {"dimensions": {"size": 2}}},
            {"apiVersion": "lab.example.com/v1", "kind": "Gadget", "metadata": {"name": "h"}}]}});
    let (code, answer) = post(&hooks, "POST", "/convert", body.to_string().as_bytes());
    assert_eq!(code, 200);
    assert_eq!(answer["response"]["uid"], "c-1");
    assert_eq!(answer["response"]["result"]["status"], "Success");
    let objects = answer["response"]["convertedObjects"].as_array().unwrap();
    assert_eq!(objects[0]["spec"]["size"], "2");
    assert_eq!(objects[0]["apiVersion"], "lab.example.com/v1");
    assert_eq!(objects[1]["metadata"]["name"], "h");

    let mut unknown = body.clone();
    unknown["request"]["desiredAPIVersion"] = json!("lab.example.com/v9");
    let (_, answer) = post(&hooks, "POST", "/convert", unknown.to_string().as_bytes());
    assert_eq!(answer["response"]["uid"], "c-1");
    assert_eq!(answer["response"]["result"]["status"], "Failure");
    assert!(answer["response"]["result"]["message"]
        .as_str()
        .unwrap()
        .contains("Gadget \"lab/g\""));
    for bad in [
        &b"]["[..],
        br#"{"kind":"ConversionReview"}"#,
        br#"{"kind":"AdmissionReview","request":{"uid":"u","desiredAPIVersion":"x"}}"#,
    ] {
        let (code, answer) = post(&hooks, "POST", "/convert", bad);
        assert_eq!(code, 400);
        assert!(answer["message"]
            .as_str()
            .unwrap()
            .starts_with("malformed ConversionReview"));
    }
}

#[test]
fn the_sharding_webhook_labels_new_objects_on_create() {
    let server = ApiServer::start();
    let client = Client::new(server.client_config()).unwrap();
    let ring = Ring::new("widgets", "default").unwrap();
    let leases = ApiResource::new("coordination.k8s.io", "v1", "Lease", "leases", true);
    for shard in ["replica-a", "replica-b", "replica-c"] {
        server
            .create(
                &leases,
                json!({"metadata": {"name": ring.shard_lease(shard), "namespace": "default",
                    "labels": {RING_LABEL: "widgets"}},
                    "spec": {"holderIdentity": shard, "leaseDurationSeconds": 15}}),
            )
            .unwrap();
    }
    // replica-c released its Lease: not live.
    let mut released = server
        .get(&leases, Some("default"), &ring.shard_lease("replica-c"))
        .unwrap();
    released["spec"]["holderIdentity"] = Value::Null;
    server.update(&leases, released).unwrap();

    let hooks = Hooks::start(Router::new().route(
        "/shard",
        shard_assigner(client.clone(), ring.clone(), HashKey::Object),
    ));
    let mut hook = webhook("shard.example.com", &hooks.url("/shard"));
    hook["rules"] = json!([{"operations": ["CREATE"], "apiGroups": ["lab.example.com"],
        "apiVersions": ["*"], "resources": ["widgets"]}]);
    hook["failurePolicy"] = json!("Ignore");
    register(&client, true, "sharding", vec![hook]);

    let widgets = common::widgets();
    let api: Api<DynamicObject> = Api::namespaced_with(client, "lab", &widgets);
    let live = ["replica-a", "replica-b"];
    let mut seen = std::collections::BTreeSet::new();
    for i in 0..12 {
        let name = format!("w{i}");
        let made = api
            .create(
                &PostParams::default(),
                &json!({"apiVersion": "lab.example.com/v1", "kind": "Widget",
                    "metadata": {"name": name}, "spec": {}}),
            )
            .unwrap();
        let want = shard_for(&HashKey::Object.key("lab", &name), &live).unwrap();
        assert_eq!(
            made.metadata.label(&ring.shard_label()),
            Some(want),
            "{name}"
        );
        seen.insert(want.to_owned());
    }
    assert_eq!(seen.len(), 2, "both live shards get objects");
    // A label already there is kept; an update is never labelled.
    let made = api
        .create(
            &PostParams::default(),
            &json!({"apiVersion": "lab.example.com/v1", "kind": "Widget",
                "metadata": {"name": "pinned", "labels": {ring.shard_label(): "replica-b"}}}),
        )
        .unwrap();
    assert_eq!(made.metadata.label(&ring.shard_label()), Some("replica-b"));
}

/// The hook and the sharder together: what the hook labelled the sharder keeps (no drain,
/// no move); what it could not label (a `generateName` create) the sharder assigns.
#[test]
fn the_sharder_keeps_what_the_hook_assigned_and_repairs_what_it_missed() {
    let server = ApiServer::start();
    let client = Client::new(server.client_config()).unwrap();
    let ring = Ring::new("widgets", "default").unwrap();
    let leases = ApiResource::new("coordination.k8s.io", "v1", "Lease", "leases", true);
    // Held for a minute from when each reader first sees them: live for the whole test.
    for shard in ["replica-a", "replica-b"] {
        server
            .create(
                &leases,
                json!({"metadata": {"name": ring.shard_lease(shard), "namespace": "default",
                    "labels": {RING_LABEL: "widgets"}},
                    "spec": {"holderIdentity": shard, "leaseDurationSeconds": 60}}),
            )
            .unwrap();
    }
    let hooks = Hooks::start(Router::new().route(
        "/shard",
        shard_assigner(client.clone(), ring.clone(), HashKey::Object),
    ));
    let mut hook = webhook("shard.example.com", &hooks.url("/shard"));
    hook["rules"] = json!([{"operations": ["CREATE"], "apiGroups": ["lab.example.com"],
        "apiVersions": ["*"], "resources": ["widgets"]}]);
    hook["failurePolicy"] = json!("Ignore");
    register(&client, true, "sharding", vec![hook]);
    let widgets = common::widgets();
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "lab", &widgets);
    let mut hooked = Vec::new();
    for i in 0..8 {
        let made = api
            .create(
                &PostParams::default(),
                &json!({"apiVersion": "lab.example.com/v1", "kind": "Widget",
                    "metadata": {"name": format!("w{i}")}}),
            )
            .unwrap();
        let shard = made.metadata.label(&ring.shard_label()).unwrap().to_owned();
        hooked.push((format!("lab/w{i}"), shard));
    }

    let events: Arc<Mutex<Vec<ShardingEvent>>> = Arc::default();
    let seen = Arc::clone(&events);
    let config = SharderConfig::new(ring.clone(), &widgets, "sharder-1")
        .leader_election(
            LeaderElectionConfig::new("default", &ring.sharder_lease(), "sharder-1")
                .lease_duration(Duration::from_secs(4))
                .renew_deadline(Duration::from_secs(2))
                .retry_period(Duration::from_millis(400)),
        )
        .fence_duration(Duration::from_secs(1))
        .on_event(move |e| seen.lock().unwrap().push(e.clone()));
    let sharder = Sharder::start(client, config).unwrap();
    // The hook cannot label a generated name: the sharder does.
    let generated = api
        .create(
            &PostParams::default(),
            &json!({"apiVersion": "lab.example.com/v1", "kind": "Widget",
                "metadata": {"generateName": "gen-"}}),
        )
        .unwrap();
    assert_eq!(generated.metadata.label(&ring.shard_label()), None);
    let name = generated.metadata.name().to_owned();
    common::wait_until("the sharder labels the generated name", || {
        server
            .get(&widgets, Some("lab"), &name)
            .ok()
            .and_then(|o| {
                o["metadata"]["labels"][ring.shard_label()]
                    .as_str()
                    .map(str::to_owned)
            })
            .is_some()
    });
    let want = shard_for(
        &HashKey::Object.key("lab", &name),
        &["replica-a", "replica-b"],
    )
    .unwrap();
    let got = server.get(&widgets, Some("lab"), &name).unwrap();
    assert_eq!(got["metadata"]["labels"][ring.shard_label()], want);
    sharder.stop();
    let events = events.lock().unwrap();
    for (key, shard) in &hooked {
        let o = server
            .get(&widgets, Some("lab"), key.trim_start_matches("lab/"))
            .unwrap();
        assert_eq!(
            o["metadata"]["labels"][ring.shard_label()],
            shard.as_str(),
            "{key}"
        );
        assert!(
            o["metadata"]["labels"].get(ring.drain_label()).is_none(),
            "{key}"
        );
        assert!(
            !events.iter().any(|e| matches!(e,
                ShardingEvent::Draining { key: k, .. } | ShardingEvent::Moved { key: k, .. }
                    | ShardingEvent::Assigned { key: k, .. } if k == key)),
            "the sharder touched {key}: {events:?}"
        );
    }
}

/// Every prefix of a valid review, and the review with each of a few bytes replaced, is
/// answered (200 or 400) without a panic: no fuzzer, every case spelled out.
#[test]
fn truncated_and_garbled_reviews_never_panic() {
    let hook = AdmissionHook::mutating(|_req, obj: &mut Value| {
        obj["metadata"]["labels"]["x"] = json!("y");
        Verdict::allow()
    });
    let conversion = gadget_conversion();
    let admission = review("uid-1").to_string().into_bytes();
    let convert = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": "c", "desiredAPIVersion": "lab.example.com/v2", "objects": [
            {"apiVersion": "lab.example.com/v1", "kind": "Gadget", "metadata": {"name": "g"},
             "spec": {"size": "4"}}]}})
    .to_string()
    .into_bytes();
    type Answer<'a> = Box<dyn Fn(&[u8]) -> (u16, Vec<u8>) + 'a>;
    let cases: Vec<(&Vec<u8>, Answer<'_>)> = vec![
        (&admission, Box::new(|b| hook.review(b))),
        (&convert, Box::new(|b| conversion.review(b))),
    ];
    for (body, answer) in cases {
        for cut in 0..body.len() {
            let (code, out) = answer(&body[..cut]);
            assert_eq!(code, 400, "prefix of {cut} bytes");
            let out: Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(out["reason"], "BadRequest");
        }
        for at in (0..body.len()).step_by(7) {
            for byte in [b'"', b'{', b'}', 0xff, b'0'] {
                let mut garbled = body.clone();
                garbled[at] = byte;
                let (code, out) = answer(&garbled);
                assert!(code == 200 || code == 400, "byte {at} = {byte}: {code}");
                serde_json::from_slice::<Value>(&out).expect("a JSON answer");
            }
        }
        assert_eq!(answer(body).0, 200);
    }
}
