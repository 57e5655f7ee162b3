//! Every write verb of the client against captures of kube-apiserver v1.36.2, over real
//! loopback HTTP: a server answers with `NAME.json` (status and headers of
//! `NAME.json.headers`) and records the request; the test asserts the request equals
//! `NAME.request` (method, path, query, Accept, Content-Type, body as a JSON value; an apply's
//! YAML body read as YAML) and that the answer decodes as it should.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::fixture;
use kube_informer::api::{ApiResource, DynamicObject};
use kube_informer::client::{
    DeleteResponse, FieldValidation, PatchOperation, Scale, Warning, WarningHandler,
};
use kube_informer::{
    Api, Client, ClientConfig, DeleteParams, ListParams, Method, Patch, PatchParams, PostParams,
};
use parking_lot::Mutex;
use serde_json::{json, Value};

/// One request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A server answering every request with one capture, recording what it was sent.
struct CaptureServer {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    stopped: Arc<AtomicBool>,
}

impl Drop for CaptureServer {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
        let _ = std::net::TcpStream::connect(self.url.trim_start_matches("http://"));
    }
}

/// The answer of capture `name`: status code, headers (without framing ones), body.
fn answer(name: &str) -> (u16, Vec<(String, String)>, Vec<u8>, bool) {
    let (body_file, chunked) = if common::fixture_path(&format!("{name}.jsonl")).exists() {
        (format!("{name}.jsonl"), true)
    } else {
        (format!("{name}.json"), false)
    };
    let head = String::from_utf8(fixture(&format!("{body_file}.headers"))).unwrap();
    let mut lines = head.lines();
    let code = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .expect("status line");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .filter(|(n, _)| {
            !n.eq_ignore_ascii_case("content-length")
                && !n.eq_ignore_ascii_case("transfer-encoding")
        })
        .collect();
    (code, headers, fixture(&body_file), chunked)
}

fn serve(name: &str) -> CaptureServer {
    let (code, headers, body, chunked) = answer(name);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let stopped = Arc::new(AtomicBool::new(false));
    let (seen2, stopped2) = (seen.clone(), stopped.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            if stopped2.load(Ordering::SeqCst) {
                return;
            }
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                continue;
            }
            let mut parts = line.split_whitespace();
            let method = parts.next().unwrap_or("").to_owned();
            let target = parts.next().unwrap_or("").to_owned();
            let mut req_headers = Vec::new();
            loop {
                line.clear();
                if reader.read_line(&mut line).unwrap_or(0) <= 2 {
                    break;
                }
                if let Some((n, v)) = line.split_once(':') {
                    req_headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
                }
            }
            let len: usize = req_headers
                .iter()
                .find(|(n, _)| n == "content-length")
                .and_then(|(_, v)| v.parse().ok())
                .unwrap_or(0);
            let mut req_body = vec![0; len];
            let _ = reader.read_exact(&mut req_body);
            seen2.lock().push(Seen {
                method,
                target,
                headers: req_headers,
                body: req_body,
            });
            let mut head = format!("HTTP/1.1 {code} X\r\nconnection: close\r\n");
            for (n, v) in &headers {
                head.push_str(&format!("{n}: {v}\r\n"));
            }
            if chunked {
                head.push_str("transfer-encoding: chunked\r\n\r\n");
            } else {
                head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
            }
            let _ = stream.write_all(head.as_bytes());
            if chunked {
                for l in body.split_inclusive(|&b| b == b'\n') {
                    let _ = write!(stream, "{:x}\r\n", l.len());
                    let _ = stream.write_all(l);
                    let _ = stream.write_all(b"\r\n");
                }
                let _ = stream.write_all(b"0\r\n\r\n");
            } else {
                let _ = stream.write_all(&body);
            }
        }
    });
    CaptureServer { url, seen, stopped }
}

impl CaptureServer {
    fn client(&self) -> Client {
        Client::new(ClientConfig::new(self.url.clone())).unwrap()
    }

    fn api(&self, resource: &ApiResource, ns: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client(), ns, resource)
    }

    fn requests(&self) -> Vec<Seen> {
        self.seen.lock().clone()
    }

    /// The one request made, checked against `NAME.request`.
    fn assert_sent(&self, name: &str) {
        let seen = self.requests();
        assert_eq!(seen.len(), 1, "{name}: one request, got {seen:?}");
        assert_request(name, &seen[0]);
    }
}

/// The request of capture `name`, parsed: request line, headers, body.
fn captured_request(name: &str) -> Seen {
    let text = String::from_utf8(fixture(&format!("{name}.request"))).unwrap();
    let (head, body) = text.split_once("\n\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let mut first = lines.next().unwrap().split_whitespace();
    let method = first.next().unwrap().to_owned();
    let target = first.next().unwrap().to_owned();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Seen {
        method,
        target,
        headers,
        body: body.as_bytes().to_vec(),
    }
}

/// A query string as decoded pairs, in order.
fn query_pairs(target: &str) -> (String, Vec<(String, String)>) {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let pairs = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (
                kube_informer::client::percent_decode(k),
                kube_informer::client::percent_decode(v),
            )
        })
        .collect();
    (path.to_owned(), pairs)
}

fn body_value(bytes: &[u8], content_type: Option<&str>) -> Option<Value> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    if content_type == Some("application/apply-patch+yaml") {
        if let Ok(v) = serde_json::from_slice(bytes) {
            return Some(v);
        }
        return Some(serde_yaml::from_slice(bytes).expect("YAML body"));
    }
    Some(serde_json::from_slice(bytes).expect("JSON body"))
}

fn assert_request(name: &str, got: &Seen) {
    let want = captured_request(name);
    assert_eq!(got.method, want.method, "{name}: method");
    assert_eq!(
        query_pairs(&got.target),
        query_pairs(&want.target),
        "{name}: path and query"
    );
    assert_eq!(
        got.header("accept"),
        want.header("accept"),
        "{name}: Accept"
    );
    assert_eq!(
        got.header("content-type"),
        want.header("content-type"),
        "{name}: Content-Type"
    );
    let ct = want.header("content-type");
    assert_eq!(
        body_value(&got.body, ct),
        body_value(&want.body, ct),
        "{name}: body"
    );
}

/// The captured request's body as a JSON value (YAML read as YAML).
fn request_body(name: &str) -> Value {
    let r = captured_request(name);
    body_value(&r.body, r.header("content-type")).expect("a body")
}

fn configmaps() -> ApiResource {
    ApiResource::new("", "v1", "ConfigMap", "configmaps", true)
}

fn deployments() -> ApiResource {
    ApiResource::new("apps", "v1", "Deployment", "deployments", true)
}

fn widgets() -> ApiResource {
    common::widgets()
}

fn pods() -> ApiResource {
    common::pods()
}

fn managers(obj: &DynamicObject) -> Vec<(String, String, Option<String>)> {
    let raw = obj.metadata.managed_fields.as_ref().expect("managedFields");
    let v: Value = serde_json::from_str(raw.get()).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["manager"].as_str().unwrap().to_owned(),
                e["operation"].as_str().unwrap().to_owned(),
                e["subresource"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

// ---- server-side apply ----

/// Server-side applies the body of capture `name` to ConfigMap `fx-writes/cm-apply` with
/// `params`, checks that what was sent is the captured request, and answers the object.
fn apply_to_cm_apply(name: &str, params: &PatchParams) -> DynamicObject {
    let s = serve(name);
    let body = request_body(name);
    let cm = s
        .api(&configmaps(), "fx-writes")
        .patch("cm-apply", params, &Patch::Apply(&body))
        .unwrap();
    s.assert_sent(name);
    cm
}

#[test]
fn apply_creates_with_its_field_manager() {
    let cm = apply_to_cm_apply("apply-create-configmap", &PatchParams::apply("alice"));
    assert_eq!(cm.metadata.name(), "cm-apply");
    assert_eq!(managers(&cm), vec![("alice".into(), "Apply".into(), None)]);
}

#[test]
fn apply_again_updates() {
    apply_to_cm_apply("apply-update-configmap", &PatchParams::apply("alice"));
}

#[test]
fn apply_with_force_takes_fields_over() {
    let cm = apply_to_cm_apply("apply-force-configmap", &PatchParams::apply("bob").force());
    let m = managers(&cm);
    assert!(m.iter().any(|(n, _, _)| n == "bob"), "{m:?}");
}

#[test]
fn apply_creates_a_custom_resource() {
    let s = serve("apply-create-custom-resource");
    let r = captured_request("apply-create-custom-resource");
    let (_, q) = query_pairs(&r.target);
    let manager = &q.iter().find(|(k, _)| k == "fieldManager").unwrap().1;
    let body = request_body("apply-create-custom-resource");
    let name = body["metadata"]["name"].as_str().unwrap().to_owned();
    let ns = r.target.split('/').nth(5).unwrap().to_owned();
    let w = s
        .api(&widgets(), &ns)
        .patch(&name, &PatchParams::apply(manager), &Patch::Apply(&body))
        .unwrap();
    s.assert_sent("apply-create-custom-resource");
    assert_eq!(w.metadata.name(), name);
}

#[test]
fn apply_conflict_lists_the_fields_and_their_managers() {
    let s = serve("status-409-apply-conflict");
    let body = request_body("status-409-apply-conflict");
    let r = captured_request("status-409-apply-conflict");
    let (_, q) = query_pairs(&r.target);
    let manager = &q.iter().find(|(k, _)| k == "fieldManager").unwrap().1;
    let err = s
        .api(&configmaps(), "fx-writes")
        .patch(
            "cm-apply",
            &PatchParams::apply(manager),
            &Patch::Apply(&body),
        )
        .unwrap_err();
    s.assert_sent("status-409-apply-conflict");
    assert!(err.is_conflict(), "{err}");
    assert!(!err.is_already_exists());
    let st = err.status().unwrap();
    assert_eq!(st.reason, "Conflict");
    let conflicts = st.field_manager_conflicts();
    assert_eq!(conflicts.len(), 1);
    assert_eq!(conflicts[0].field, ".data.color");
    assert_eq!(conflicts[0].manager(), Some("alice"));
}

#[test]
fn apply_without_a_field_manager_is_refused_before_sending() {
    let s = serve("status-422-apply-no-fieldmanager");
    let body = request_body("status-422-apply-no-fieldmanager");
    let err = s
        .api(&configmaps(), "fx-writes")
        .patch("cm-apply", &PatchParams::default(), &Patch::Apply(&body))
        .unwrap_err();
    assert!(
        matches!(err, kube_informer::Error::InvalidInput(_)),
        "{err}"
    );
    assert!(err.to_string().contains("field manager"), "{err}");
    assert!(s.requests().is_empty(), "nothing sent");
    // Sent anyway through the request builder, the server's 422 comes back with its causes.
    let err = s
        .client()
        .request(
            Method::PATCH,
            "/api/v1/namespaces/fx-writes/configmaps/cm-apply",
        )
        .content_type("application/apply-patch+yaml")
        .json(&body)
        .send()
        .unwrap_err();
    s.assert_sent("status-422-apply-no-fieldmanager");
    assert!(err.is_invalid(), "{err}");
    let causes = &err.status().unwrap().details.as_ref().unwrap().causes;
    assert_eq!(causes[0].field, "fieldManager");
}

#[test]
fn apply_failures_come_back_with_their_status() {
    for (name, check) in [
        (
            "status-400-apply-name-mismatch",
            (|e: &kube_informer::Error| e.is_bad_request()) as fn(&kube_informer::Error) -> bool,
        ),
        ("status-404-apply-missing-namespace", |e| e.is_not_found()),
        ("status-422-apply-invalid", |e| {
            e.is_invalid() && e.status().unwrap().details.as_ref().unwrap().causes.len() == 2
        }),
    ] {
        let s = serve(name);
        let r = captured_request(name);
        let (path, q) = query_pairs(&r.target);
        let manager = &q.iter().find(|(k, _)| k == "fieldManager").unwrap().1;
        let mut segs = path.split('/');
        let ns = segs.nth(4).unwrap().to_owned();
        let cm = path.rsplit('/').next().unwrap().to_owned();
        let err = s
            .api(&configmaps(), &ns)
            .patch(
                &cm,
                &PatchParams::apply(manager),
                &Patch::Apply(request_body(name)),
            )
            .unwrap_err();
        s.assert_sent(name);
        assert!(check(&err), "{name}: {err}");
    }
}

#[test]
fn a_500_from_apply_is_not_retried() {
    let s = serve("status-500-apply-unknown-field-strict");
    let r = captured_request("status-500-apply-unknown-field-strict");
    let (_, q) = query_pairs(&r.target);
    assert!(q.contains(&("fieldValidation".into(), "Strict".into())));
    let manager = &q.iter().find(|(k, _)| k == "fieldManager").unwrap().1;
    let name = r
        .target
        .split('?')
        .next()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    let err = s
        .api(&configmaps(), "fx-writes")
        .patch(
            &name,
            &PatchParams::apply(manager).validation(FieldValidation::Strict),
            &Patch::Apply(request_body("status-500-apply-unknown-field-strict")),
        )
        .unwrap_err();
    // One request: a 500 without Retry-After is never sent again.
    s.assert_sent("status-500-apply-unknown-field-strict");
    assert_eq!(err.code(), Some(500));
    assert!(err
        .status()
        .unwrap()
        .message
        .contains("field not declared in schema"));
}

#[test]
fn apply_of_the_status_subresource() {
    let s = serve("apply-widget-status");
    let body = request_body("apply-widget-status");
    let w = s
        .api(&widgets(), "fx-sub")
        .patch_status(
            "w-status",
            &PatchParams::apply("widget-controller").force(),
            &Patch::Apply(&body),
        )
        .unwrap();
    s.assert_sent("apply-widget-status");
    assert!(managers(&w)
        .iter()
        .any(|m| m.0 == "widget-controller" && m.2.as_deref() == Some("status")));
}

// ---- other patches ----

#[test]
fn json_patch_sends_typed_operations() {
    let s = serve("json-patch-configmap");
    let ops = vec![
        PatchOperation::test("/data/size", "1"),
        PatchOperation::replace("/data/size", "2"),
        PatchOperation::add("/metadata/labels", json!({"patched": "json-patch"})),
        PatchOperation::remove("/data/color"),
    ];
    let cm = s
        .api(&configmaps(), "fx-writes")
        .patch("cm-patch", &PatchParams::default(), &Patch::json(ops))
        .unwrap();
    s.assert_sent("json-patch-configmap");
    assert_eq!(cm.metadata.label("patched"), Some("json-patch"));
}

#[test]
fn a_failed_json_patch_test_is_invalid() {
    let s = serve("status-422-json-patch-test-failed");
    let ops: Vec<PatchOperation> =
        serde_json::from_value(request_body("status-422-json-patch-test-failed"))
            .map(|v: Vec<Value>| {
                v.into_iter()
                    .map(|op| match op["op"].as_str().unwrap() {
                        "test" => {
                            PatchOperation::test(op["path"].as_str().unwrap(), op["value"].clone())
                        }
                        "replace" => PatchOperation::replace(
                            op["path"].as_str().unwrap(),
                            op["value"].clone(),
                        ),
                        "add" => {
                            PatchOperation::add(op["path"].as_str().unwrap(), op["value"].clone())
                        }
                        "remove" => PatchOperation::remove(op["path"].as_str().unwrap()),
                        other => panic!("{other}"),
                    })
                    .collect()
            })
            .unwrap();
    let r = captured_request("status-422-json-patch-test-failed");
    let name = r.target.rsplit('/').next().unwrap().to_owned();
    let err = s
        .api(&configmaps(), "fx-writes")
        .patch(&name, &PatchParams::default(), &Patch::json(ops))
        .unwrap_err();
    s.assert_sent("status-422-json-patch-test-failed");
    assert!(err.is_invalid(), "{err}");
}

#[test]
fn a_json_patch_that_is_not_an_array_is_a_bad_request() {
    let s = serve("status-400-json-patch-not-array");
    let err = s
        .client()
        .request(
            Method::PATCH,
            "/api/v1/namespaces/fx-writes/configmaps/cm-patch",
        )
        .content_type("application/json-patch+json")
        .json(&json!({"op": "remove", "path": "/data/mode"}))
        .send()
        .unwrap_err();
    s.assert_sent("status-400-json-patch-not-array");
    assert!(err.is_bad_request(), "{err}");
}

#[test]
fn merge_patch() {
    let s = serve("merge-patch-configmap");
    let cm = s
        .api(&configmaps(), "fx-writes")
        .patch(
            "cm-patch",
            &PatchParams::default(),
            &Patch::Merge(request_body("merge-patch-configmap")),
        )
        .unwrap();
    s.assert_sent("merge-patch-configmap");
    assert_eq!(cm.metadata.label("patched"), Some("merge-patch"));
}

#[test]
fn strategic_merge_patch() {
    let s = serve("strategic-merge-patch-deployment");
    let r = captured_request("strategic-merge-patch-deployment");
    let name = r.target.rsplit('/').next().unwrap().to_owned();
    let ns = r.target.split('/').nth(5).unwrap().to_owned();
    let d = s
        .api(&deployments(), &ns)
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Strategic(request_body("strategic-merge-patch-deployment")),
        )
        .unwrap();
    s.assert_sent("strategic-merge-patch-deployment");
    assert_eq!(d.metadata.name(), name);
}

#[test]
fn unsupported_patch_types_are_415() {
    let s = serve("status-415-strategic-merge-patch-custom-resource");
    let r = captured_request("status-415-strategic-merge-patch-custom-resource");
    let name = r.target.rsplit('/').next().unwrap().to_owned();
    let ns = r.target.split('/').nth(5).unwrap().to_owned();
    let err = s
        .api(&widgets(), &ns)
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Strategic(request_body(
                "status-415-strategic-merge-patch-custom-resource",
            )),
        )
        .unwrap_err();
    s.assert_sent("status-415-strategic-merge-patch-custom-resource");
    assert!(err.is_unsupported_media_type(), "{err}");

    let s = serve("status-415-patch-application-json");
    let err = s
        .client()
        .request(
            Method::PATCH,
            "/api/v1/namespaces/fx-writes/configmaps/cm-patch",
        )
        .header("Content-Type", "application/json")
        .json(&request_body("status-415-patch-application-json"))
        .send()
        .unwrap_err();
    s.assert_sent("status-415-patch-application-json");
    assert!(err.is_unsupported_media_type(), "{err}");
    assert_eq!(err.status().unwrap().reason, "UnsupportedMediaType");
}

#[test]
fn a_patch_of_a_missing_object_is_not_found() {
    let s = serve("status-404-merge-patch-missing");
    let r = captured_request("status-404-merge-patch-missing");
    let name = r.target.rsplit('/').next().unwrap().to_owned();
    let err = s
        .api(&configmaps(), "fx-writes")
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(request_body("status-404-merge-patch-missing")),
        )
        .unwrap_err();
    s.assert_sent("status-404-merge-patch-missing");
    assert!(err.is_not_found(), "{err}");
}

// ---- creates ----

#[test]
fn create_dry_run() {
    let s = serve("create-configmap-dryrun");
    let cm = s
        .api(&configmaps(), "fx-writes")
        .create(
            &PostParams::default().dry_run(),
            &request_body("create-configmap-dryrun"),
        )
        .unwrap();
    s.assert_sent("create-configmap-dryrun");
    assert!(cm.metadata.uid.is_some());
    assert_eq!(cm.metadata.resource_version, None, "nothing stored");
}

#[test]
fn create_with_generate_name() {
    let s = serve("create-configmap-generatename");
    let body = request_body("create-configmap-generatename");
    assert!(body["metadata"].get("name").is_none());
    let cm = s
        .api(&configmaps(), "fx-writes")
        .create(&PostParams::default(), &body)
        .unwrap();
    s.assert_sent("create-configmap-generatename");
    assert!(cm.metadata.name().starts_with("cm-gen-"));
    assert_eq!(cm.metadata.name().len(), "cm-gen-".len() + 5);
}

#[test]
fn strict_field_validation_refuses_unknown_fields() {
    let s = serve("status-400-fieldvalidation-strict");
    let err = s
        .api(&configmaps(), "fx-writes")
        .create(
            &PostParams::default().validation(FieldValidation::Strict),
            &request_body("status-400-fieldvalidation-strict"),
        )
        .unwrap_err();
    s.assert_sent("status-400-fieldvalidation-strict");
    assert!(err.is_bad_request(), "{err}");
    assert!(err
        .status()
        .unwrap()
        .message
        .contains("strict decoding error"));
}

#[test]
fn warnings_reach_the_response_and_the_clients_handler() {
    let s = serve("create-configmap-unknown-field-warn");
    let expected = vec![
        r#"unknown field "metadata.bogusMeta""#.to_owned(),
        r#"unknown field "spec""#.to_owned(),
    ];
    // The request builder's response shows them.
    let res = s
        .client()
        .request(Method::POST, "/api/v1/namespaces/fx-writes/configmaps")
        .json(&request_body("create-configmap-unknown-field-warn"))
        .send()
        .unwrap();
    s.assert_sent("create-configmap-unknown-field-warn");
    assert_eq!(res.status(), 201);
    let texts: Vec<String> = res.warnings().iter().map(|w| w.text.clone()).collect();
    assert_eq!(texts, expected);
    assert!(res
        .warnings()
        .iter()
        .all(|w| w.code == 299 && w.agent == "-"));

    // The typed API hands them to the client's handler.
    let got: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = got.clone();
    let mut config = ClientConfig::new(s.url.clone());
    config.warning_handler = WarningHandler::Custom(Arc::new(move |w: &Warning| {
        sink.lock().push(w.text.clone())
    }));
    let api: Api<DynamicObject> =
        Api::namespaced_with(Client::new(config).unwrap(), "fx-writes", &configmaps());
    api.create(
        &PostParams::default(),
        &request_body("create-configmap-unknown-field-warn"),
    )
    .unwrap();
    assert_eq!(*got.lock(), expected);
}

#[test]
fn field_validation_ignore_has_no_warnings() {
    let s = serve("create-configmap-unknown-field-ignore");
    let res = s
        .client()
        .request(Method::POST, "/api/v1/namespaces/fx-writes/configmaps")
        .query("fieldValidation", "Ignore")
        .json(&request_body("create-configmap-unknown-field-ignore"))
        .send()
        .unwrap();
    s.assert_sent("create-configmap-unknown-field-ignore");
    assert!(res.warnings().is_empty());
    // The typed API sends the same request.
    let s = serve("create-configmap-unknown-field-ignore");
    s.api(&configmaps(), "fx-writes")
        .create(
            &PostParams::default().validation(FieldValidation::Ignore),
            &request_body("create-configmap-unknown-field-ignore"),
        )
        .unwrap();
    s.assert_sent("create-configmap-unknown-field-ignore");
}

// ---- subresources ----

#[test]
fn status_subresource_get_replace_patch() {
    let s = serve("get-pod-status");
    let r = captured_request("get-pod-status");
    let name = r.target.split('/').nth(6).unwrap().to_owned();
    let ns = r.target.split('/').nth(4).unwrap().to_owned();
    let pod = s.api(&pods(), &ns).get_status(&name).unwrap();
    s.assert_sent("get-pod-status");
    assert_eq!(pod.metadata.name(), name);
    assert!(pod.field("spec").is_some(), "the whole object");

    let s = serve("put-pod-status");
    let r = captured_request("put-pod-status");
    let name = r.target.split('/').nth(6).unwrap().to_owned();
    let pod = s
        .api(&pods(), &ns)
        .replace_status(
            &name,
            &PostParams::default(),
            &request_body("put-pod-status"),
        )
        .unwrap();
    s.assert_sent("put-pod-status");
    assert!(managers(&pod)
        .iter()
        .any(|m| m.2.as_deref() == Some("status")));

    let s = serve("patch-pod-status-strategic");
    let r = captured_request("patch-pod-status-strategic");
    let name = r.target.split('/').nth(6).unwrap().to_owned();
    s.api(&pods(), &ns)
        .patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Strategic(request_body("patch-pod-status-strategic")),
        )
        .unwrap();
    s.assert_sent("patch-pod-status-strategic");

    let s = serve("patch-widget-status-merge");
    let r = captured_request("patch-widget-status-merge");
    let name = r.target.split('/').nth(7).unwrap().to_owned();
    let ns = r.target.split('/').nth(5).unwrap().to_owned();
    s.api(&widgets(), &ns)
        .patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(request_body("patch-widget-status-merge")),
        )
        .unwrap();
    s.assert_sent("patch-widget-status-merge");
}

#[test]
fn scale_subresource_get_replace_patch() {
    let s = serve("get-deployment-scale");
    let api = s.api(&deployments(), "fx-sub");
    let scale = api.get_scale("web-scale").unwrap();
    s.assert_sent("get-deployment-scale");
    assert_eq!(scale.kind, "Scale");
    assert_eq!(scale.api_version, "autoscaling/v1");
    assert_eq!(scale.spec.replicas, 1);
    let status = scale.status.clone().unwrap();
    assert_eq!(status.replicas, 0);
    assert_eq!(status.selector.as_deref(), Some("app=web-scale"));
    assert_eq!(scale.metadata.resource_version(), "271");

    let s = serve("put-deployment-scale");
    let mut wanted = scale.clone();
    wanted.spec.replicas = 3;
    let back = s
        .api(&deployments(), "fx-sub")
        .replace_scale("web-scale", &PostParams::default(), &wanted)
        .unwrap();
    s.assert_sent("put-deployment-scale");
    assert_eq!(back.spec.replicas, 3);

    let s = serve("patch-deployment-scale-merge");
    let back: Scale = s
        .api(&deployments(), "fx-sub")
        .patch_scale(
            "web-scale",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .unwrap();
    s.assert_sent("patch-deployment-scale-merge");
    assert_eq!(back.spec.replicas, 5);
}

#[test]
fn any_subresource_by_name_bytes_in_bytes_out() {
    // The scale subresource through the generic builder: the same request, raw bytes back.
    let s = serve("patch-deployment-scale-merge");
    let res = s
        .api(&deployments(), "fx-sub")
        .subresource(Method::PATCH, "web-scale", "scale")
        .unwrap()
        .content_type("application/merge-patch+json")
        .body(br#"{"spec":{"replicas":5}}"#.to_vec())
        .send()
        .unwrap();
    s.assert_sent("patch-deployment-scale-merge");
    assert_eq!(res.body(), fixture("patch-deployment-scale-merge.json"));
    assert!(s
        .api(&deployments(), "fx-sub")
        .subresource(Method::GET, "web-scale", "")
        .is_err());
}

// ---- deletes ----

fn delete_one(
    name: &str,
    resource: &ApiResource,
    params: &DeleteParams,
) -> DeleteResponse<DynamicObject> {
    let s = serve(name);
    let r = captured_request(name);
    let (path, _) = query_pairs(&r.target);
    let segs: Vec<&str> = path.split('/').collect();
    let ns = segs[segs.iter().position(|s| *s == "namespaces").unwrap() + 1];
    let obj = segs.last().unwrap();
    let out = s.api(resource, ns).delete(obj, params).unwrap();
    s.assert_sent(name);
    out
}

#[test]
fn delete_of_a_configmap_answers_a_status() {
    for (name, params) in [
        ("delete-configmap", DeleteParams::default()),
        ("delete-configmap-background", DeleteParams::background()),
    ] {
        let out = delete_one(name, &configmaps(), &params);
        let st = out.status().expect("a Status");
        assert_eq!(st.status, "Success");
        assert_eq!(
            st.details.as_ref().unwrap().kind.as_deref(),
            Some("configmaps")
        );
    }
    let out = delete_one(
        "delete-custom-resource",
        &widgets(),
        &DeleteParams::default(),
    );
    assert_eq!(
        out.status()
            .unwrap()
            .details
            .as_ref()
            .unwrap()
            .group
            .as_deref(),
        Some("lab.example.com")
    );
}

#[test]
fn delete_with_finalizers_answers_the_object() {
    for (name, params, finalizer) in [
        (
            "delete-deployment-foreground",
            DeleteParams::foreground(),
            "foregroundDeletion",
        ),
        ("delete-deployment-orphan", DeleteParams::orphan(), "orphan"),
    ] {
        let out = delete_one(name, &deployments(), &params);
        let d = out.object().expect("the object");
        assert!(d.metadata.deletion_timestamp.is_some());
        assert_eq!(
            d.metadata.finalizers.as_deref(),
            Some(&[finalizer.to_owned()][..])
        );
    }
}

#[test]
fn delete_of_pods_answers_the_pod() {
    // Still terminating: the grace period holds it.
    let out = delete_one(
        "delete-pod-bound-default-grace",
        &pods(),
        &DeleteParams::default(),
    );
    assert_eq!(
        out.object().unwrap().metadata.deletion_grace_period_seconds,
        Some(30)
    );
    // Gone at once, the body is its last state.
    for (name, params) in [
        (
            "delete-pod-grace0-body",
            DeleteParams::default().grace_period(0),
        ),
        ("delete-pod-unscheduled", DeleteParams::default()),
    ] {
        let out = delete_one(name, &pods(), &params);
        let pod = out.into_object().expect("the pod");
        assert_eq!(pod.metadata.deletion_grace_period_seconds, Some(0));
    }
}

#[test]
fn delete_preconditions_fail_with_409() {
    for (name, params) in [
        (
            "status-409-delete-precondition-uid",
            DeleteParams::default().precondition_uid("00000000-0000-0000-0000-000000000000"),
        ),
        (
            "status-409-delete-precondition-rv",
            DeleteParams::default().precondition_resource_version("1"),
        ),
    ] {
        let s = serve(name);
        let r = captured_request(name);
        let obj = r.target.rsplit('/').next().unwrap().to_owned();
        let err = s
            .api(&configmaps(), "fx-del")
            .delete(&obj, &params)
            .unwrap_err();
        s.assert_sent(name);
        assert!(err.is_conflict(), "{err}");
        assert!(err.status().unwrap().message.contains("precondition"));
    }
}

#[test]
fn delete_collection_answers_the_deleted_list() {
    for (name, resource, count) in [
        ("deletecollection-configmaps", configmaps(), None),
        ("deletecollection-custom-resources", widgets(), None),
        ("deletecollection-no-match", configmaps(), Some(0)),
    ] {
        let s = serve(name);
        let r = captured_request(name);
        let (_, q) = query_pairs(&r.target);
        let selector = &q.iter().find(|(k, _)| k == "labelSelector").unwrap().1;
        let out = s
            .api(&resource, "fx-del")
            .delete_collection(
                &DeleteParams::default(),
                &ListParams::default().labels(selector),
            )
            .unwrap();
        s.assert_sent(name);
        let list = out.object().expect("a list");
        let captured: Value = serde_json::from_slice(&fixture(&format!("{name}.json"))).unwrap();
        let n = captured["items"].as_array().unwrap().len();
        assert_eq!(list.items.len(), n, "{name}");
        if let Some(c) = count {
            assert_eq!(n, c);
        } else {
            assert!(n > 0);
            assert!(list
                .items
                .iter()
                .all(|o| o.metadata.deletion_timestamp.is_none()));
        }
    }
}

// ---- the request builder: accept, lines ----

#[test]
fn builder_asks_for_metadata_only_lists() {
    let s = serve("list-pods-metadata-page1");
    let r = captured_request("list-pods-metadata-page1");
    let (path, q) = query_pairs(&r.target);
    let mut req = s
        .client()
        .request(Method::GET, &path)
        .accept(r.header("accept").unwrap());
    for (k, v) in &q {
        req = req.query(k, v);
    }
    let list: Value = req.send_json().unwrap();
    s.assert_sent("list-pods-metadata-page1");
    assert_eq!(list["kind"], "PartialObjectMetadataList");
}

#[test]
fn builder_streams_a_watch_line_by_line() {
    let s = serve("crd-watch-metadata");
    let r = captured_request("crd-watch-metadata");
    let (path, q) = query_pairs(&r.target);
    let mut req = s
        .client()
        .request(Method::GET, &path)
        .accept(r.header("accept").unwrap());
    for (k, v) in &q {
        req = req.query(k, v);
    }
    let lines: Vec<Vec<u8>> = req.lines().unwrap().map(Result::unwrap).collect();
    s.assert_sent("crd-watch-metadata");
    let captured = fixture("crd-watch-metadata.jsonl");
    let want: Vec<&[u8]> = captured
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(lines, want);
    let types: Vec<String> = lines
        .iter()
        .map(|l| {
            serde_json::from_slice::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(types.last().map(String::as_str), Some("BOOKMARK"));
}

#[test]
fn builder_refuses_what_the_client_owns() {
    let s = serve("get-deployment-scale");
    let err = s
        .client()
        .request(
            Method::GET,
            "/apis/apps/v1/namespaces/fx-sub/deployments/web-scale/scale",
        )
        .header("Authorization", "Bearer stolen")
        .send()
        .unwrap_err();
    assert!(matches!(err, kube_informer::Error::InvalidInput(_)));
    assert!(
        !err.to_string().contains("stolen"),
        "never quotes a credential"
    );
    for (name, value) in [
        ("content-length", "0"),
        ("Host", "elsewhere"),
        ("Impersonate-User", "root"),
    ] {
        let err = s
            .client()
            .request(Method::GET, "/api/v1/namespaces")
            .header(name, value)
            .send()
            .unwrap_err();
        assert!(
            matches!(err, kube_informer::Error::InvalidInput(_)),
            "{name}"
        );
    }
    let err = s
        .client()
        .request(Method::GET, "no-slash")
        .send()
        .unwrap_err();
    assert!(matches!(err, kube_informer::Error::InvalidInput(_)));
    assert!(s.requests().is_empty());
}
