//! `testing::ApiServer` replays kube-apiserver v1.36.2's custom-resource semantics as
//! captured in `tests/fixtures/crd-matrix.json` (155 steps in 8 groups: defaults, pruning,
//! values, combinators, lists, cel, status, metadata; the capture's README describes it).
//!
//! Set up like the capture, each group on a fresh server: the five CRDs created through the
//! API (and waited for until served), one namespace. Each step is sent over real loopback
//! HTTP; its answer, `Warning` headers and the target as a GET sees it afterwards are
//! summarised with the capture's symbolic rules and compared. Causes are compared as a
//! multiset and the list inside an `is invalid: [a, b]` message sorted (the real server
//! reports schema errors in Go map order).
//!
//! The test prints each group's agreement and the total, asserts that the groups of
//! [`WHOLE_GROUPS`] agree on every step (a regression fails) and that the total never drops
//! below [`FLOOR`]. The other groups are work in progress (see `src/testing/mod.rs`).

mod common;

use std::net::SocketAddr;
use std::time::Instant;

use common::capture::{body_json, send_json, Response, USER_AGENT};
use common::PATIENCE;
use kube_informer::testing::ApiServer;
use serde_json::{json, Map, Value};

/// The namespace of every group (a fresh server each).
const NS: &str = "cap-crdm-replay";

/// Groups in which every step agrees with the capture.
const WHOLE_GROUPS: &[&str] = &[
    "defaults",
    "pruning",
    "values",
    "combinators",
    "metadata",
    "cel",
    "status",
    "lists",
];

/// Steps agreeing over all groups: the total may rise, never fall below this.
const FLOOR: usize = 155;

fn matrix() -> Value {
    serde_json::from_slice(&common::fixture("crd-matrix.json")).expect("crd-matrix.json is JSON")
}

fn rv_of(o: &Value) -> Option<&str> {
    o.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
}

/// `Invalid value: "{...}": ` (a whole object quoted in a message) as `"<object>"`.
fn hide_objects(s: &str) -> String {
    const OPEN: &str = "Invalid value: \"{";
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find(OPEN) {
        out.push_str(&rest[..i]);
        out.push_str("Invalid value: \"<object>\"");
        let after = &rest[i + OPEN.len()..];
        match after.find("}\"") {
            Some(j) => rest = &after[j + 2..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// What a step's strings become in the capture's notation: the namespace `$NS`, a
/// generated name's suffix `#####`, a quoted object `"<object>"`.
fn symbolic(s: &str, gen_prefix: Option<&str>) -> String {
    let mut s = hide_objects(&s.replace(NS, "$NS"));
    if let Some(p) = gen_prefix {
        let mut out = String::new();
        let mut rest = s.as_str();
        while let Some(i) = rest.find(p) {
            out.push_str(&rest[..i + p.len()]);
            rest = &rest[i + p.len()..];
            let n = rest
                .chars()
                .take(5)
                .take_while(char::is_ascii_alphanumeric)
                .count();
            if n == 5 {
                out.push_str("#####");
                rest = &rest[5..];
            }
        }
        out.push_str(rest);
        s = out;
    }
    s
}

fn map_strings(v: &Value, f: &dyn Fn(&str) -> String) -> Value {
    match v {
        Value::String(s) => f(s).into(),
        Value::Array(a) => a.iter().map(|x| map_strings(x, f)).collect(),
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, x)| (f(k), map_strings(x, f))).collect())
        }
        other => other.clone(),
    }
}

/// An object in the capture's notation, against the target as it was before the step.
fn object_summary(o: &Value, before: Option<&Value>) -> Value {
    let mut o = o.clone();
    let before_rv = before.and_then(rv_of);
    let rv_word = match (before_rv, rv_of(&o)) {
        (_, None) => "none",
        (None, Some(_)) => "new",
        (Some(b), Some(a)) if a == b => "same",
        _ => "changed",
    };
    let before_gen = before.and_then(|b| b["metadata"]["generation"].as_i64());
    if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        if meta.contains_key("uid") {
            meta.insert("uid".into(), "<uid>".into());
        }
        if meta.contains_key("creationTimestamp") {
            meta.insert("creationTimestamp".into(), "<time>".into());
        }
        meta.insert("resourceVersion".into(), rv_word.into());
        if let Some(g) = meta.get("generation").and_then(Value::as_i64) {
            let word = match before_gen {
                None => format!("={g}"),
                Some(b) => format!("{}{}", if g >= b { "+" } else { "" }, g - b),
            };
            meta.insert("generation".into(), word.into());
        }
        if let Some(Value::Array(mf)) = meta.get("managedFields") {
            let mut mf: Vec<Value> = mf
                .iter()
                .map(|e| {
                    json!([
                        e["manager"].as_str().unwrap_or(""),
                        e["operation"].as_str().unwrap_or(""),
                        e["subresource"].as_str().unwrap_or("")
                    ])
                })
                .collect();
            mf.sort_by_key(|e| e.to_string());
            meta.insert("managedFields".into(), mf.into());
        }
    }
    o
}

/// `X "n" is invalid: [a, b]` with its list sorted; the items are cut where a cause's
/// field starts one.
fn sorted_message(message: &str, causes: &[Value]) -> String {
    const MARK: &str = " is invalid: [";
    let Some(i) = message.find(MARK) else {
        return message.to_owned();
    };
    let Some(inner) = message[i + MARK.len()..].strip_suffix(']') else {
        return message.to_owned();
    };
    let fields: Vec<String> = causes
        .iter()
        .filter_map(|c| c[1].as_str().map(|f| format!(", {f}: ")))
        .collect();
    let mut items = Vec::new();
    let mut start = 0;
    let mut at = 0;
    while at < inner.len() {
        if inner.is_char_boundary(at) && fields.iter().any(|f| inner[at..].starts_with(f.as_str()))
        {
            items.push(&inner[start..at]);
            start = at + 2;
            at = start;
            continue;
        }
        at += 1;
    }
    items.push(&inner[start..]);
    items.sort_unstable();
    format!("{}{MARK}{}]", &message[..i], items.join(", "))
}

/// The summary of an answer or of a GET, per the README's rules.
fn summary(r: &Response, before: Option<&Value>, brief: bool) -> Value {
    let body = body_json(r);
    let kind = body["kind"].as_str().unwrap_or("").to_owned();
    if kind == "Status" {
        let d = &body["details"];
        let mut details = Map::new();
        for k in ["name", "group", "kind"] {
            if let Some(v) = d[k].as_str().filter(|v| !v.is_empty()) {
                details.insert(k.into(), v.into());
            }
        }
        let mut causes: Vec<Value> = d["causes"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|c| {
                        json!([
                            c["reason"].as_str().unwrap_or(""),
                            c["field"].as_str().unwrap_or(""),
                            c["message"].as_str().unwrap_or("")
                        ])
                    })
                    .collect()
            })
            .unwrap_or_default();
        causes.sort_by_key(|c| c.to_string());
        let message = sorted_message(body["message"].as_str().unwrap_or(""), &causes);
        return json!({
            "code": r.code, "kind": "Status", "status": body["status"],
            "reason": body["reason"].as_str().unwrap_or(""), "message": message,
            "details": details, "causes": causes,
        });
    }
    if brief {
        return json!({"code": r.code, "kind": kind});
    }
    if body.is_null() {
        return json!({"code": r.code, "kind": null, "body": String::from_utf8_lossy(&r.body)});
    }
    if let Some(items) = body["items"].as_array().filter(|_| kind.ends_with("List")) {
        let items: Vec<Value> = items.iter().map(|o| object_summary(o, None)).collect();
        return json!({"code": r.code, "kind": kind, "items": items});
    }
    json!({"code": r.code, "kind": kind, "object": object_summary(&body, before)})
}

/// The capture's expected summary in the same canonical form (causes and lists sorted).
fn canonical(v: &Value) -> Value {
    let mut v = v.clone();
    if v["kind"] == "Status" {
        if let Some(c) = v.get_mut("causes").and_then(Value::as_array_mut) {
            c.sort_by_key(|c| c.to_string());
        }
        let causes = v["causes"].as_array().cloned().unwrap_or_default();
        let m = sorted_message(v["message"].as_str().unwrap_or(""), &causes);
        v["message"] = m.into();
    }
    v
}

fn fill(v: &Value, before: Option<&Value>) -> Value {
    match v {
        Value::String(s) if s == "$RV" => before.and_then(rv_of).unwrap_or("").into(),
        Value::String(s) => s.replace("$NS", NS).into(),
        Value::Array(a) => a.iter().map(|x| fill(x, before)).collect(),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), fill(x, before)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn get(addr: SocketAddr, path: &str) -> Response {
    send_json(addr, "GET", path, None, Vec::new())
}

/// Waits (bounded) until `cond` holds; false if it never did.
fn eventually(cond: impl Fn() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < PATIENCE {
        if cond() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    false
}

/// A fresh server with the matrix's CRDs served and its namespace.
fn setup(m: &Value) -> (ApiServer, SocketAddr) {
    let server = ApiServer::builder().start();
    let addr = server.addr();
    for crd in m["crds"].as_array().unwrap() {
        let r = send_json(
            addr,
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            Some("application/json"),
            crd.to_string().into_bytes(),
        );
        assert_eq!(r.code, 201, "CRD: {}", String::from_utf8_lossy(&r.body));
    }
    let r = send_json(
        addr,
        "POST",
        "/api/v1/namespaces",
        Some("application/json"),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
            .to_string()
            .into_bytes(),
    );
    assert_eq!(
        r.code,
        201,
        "namespace: {}",
        String::from_utf8_lossy(&r.body)
    );
    for crd in m["crds"].as_array().unwrap() {
        let path = format!(
            "/apis/{}/v1/namespaces/{NS}/{}",
            crd["spec"]["group"].as_str().unwrap(),
            crd["spec"]["names"]["plural"].as_str().unwrap()
        );
        assert!(
            eventually(|| get(addr, &path).code == 200),
            "{path} never served"
        );
    }
    (server, addr)
}

/// Runs one step; returns its observations (answer, warnings, after).
fn run(addr: SocketAddr, step: &Value) -> [(&'static str, Value); 3] {
    let target = step["target"].as_str().map(|t| t.replace("$NS", NS));
    let before = target.as_ref().and_then(|t| {
        let r = get(addr, t);
        (r.code == 200).then(|| body_json(&r))
    });
    let body = if let Some(text) = step["bodyText"].as_str() {
        let rv = before.as_ref().and_then(rv_of).unwrap_or("");
        text.replace("$NS", NS).replace("$RV", rv).into_bytes()
    } else if step["body"].is_null() {
        Vec::new()
    } else {
        fill(&step["body"], before.as_ref())
            .to_string()
            .into_bytes()
    };
    let mut path = step["path"].as_str().unwrap().replace("$NS", NS);
    if let Some(q) = step["query"].as_str().filter(|q| !q.is_empty()) {
        path = format!("{path}?{q}");
    }
    let r = send_json(
        addr,
        step["method"].as_str().unwrap(),
        &path,
        step["contentType"].as_str(),
        body,
    );
    let brief = step["brief"].as_bool().unwrap_or(false);
    let answer = summary(&r, before.as_ref(), brief);
    let warnings: Vec<Value> = r
        .all("warning")
        .iter()
        .map(|w| {
            let t = w.strip_prefix("299 - ").unwrap_or(w);
            let t = t
                .strip_prefix('"')
                .and_then(|t| t.strip_suffix('"'))
                .unwrap_or(t);
            Value::from(t.replace("\\\"", "\"").replace("\\\\", "\\"))
        })
        .collect();
    if let Some(settle) = step.get("settle").filter(|s| s.is_object()) {
        let path = settle["path"].as_str().unwrap().replace("$NS", NS);
        let pointer = settle["pointer"].as_str().unwrap();
        // A step whose effect never shows is a difference found by the next steps.
        eventually(|| body_json(&get(addr, &path)).pointer(pointer).is_some());
    }
    let after = match &target {
        Some(t) => summary(&get(addr, t), before.as_ref(), false),
        None => Value::Null,
    };
    let gen_prefix = step
        .pointer("/body/metadata/generateName")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty());
    let sym = |v: &Value| map_strings(v, &|s| symbolic(s, gen_prefix));
    [
        ("answer", sym(&answer)),
        ("warnings", sym(&Value::from(warnings))),
        ("after", sym(&after)),
    ]
}

/// The differing leaves of two summaries, as `path: expected X, got Y`.
fn diff(path: &str, want: &Value, got: &Value, out: &mut Vec<String>) {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            let mut keys: Vec<&String> = w.keys().chain(g.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let (w, g) = (
                    w.get(k).unwrap_or(&Value::Null),
                    g.get(k).unwrap_or(&Value::Null),
                );
                diff(&format!("{path}.{k}"), w, g, out);
            }
        }
        _ if want != got => out.push(format!("{path}: expected {want}, got {got}")),
        _ => {}
    }
}

/// Replays one group on a fresh server: (steps agreeing, steps, differences).
fn replay(m: &Value, group: &str) -> (usize, usize, Vec<String>) {
    let (_server, addr) = setup(m);
    let (mut steps, mut agreed, mut differences) = (0, 0, Vec::new());
    for step in m["steps"].as_array().unwrap() {
        if step["group"] != group {
            continue;
        }
        steps += 1;
        let id = step["id"].as_str().unwrap();
        let mut ok = true;
        for (field, got) in run(addr, step) {
            let want = canonical(&step[field]);
            let got = if field == "warnings" {
                got
            } else {
                canonical(&got)
            };
            if got != want {
                ok = false;
                let mut d = Vec::new();
                diff(field, &want, &got, &mut d);
                differences.push(format!(
                    "{group}/{id}: {}",
                    d.join(&format!("\n{group}/{id}: "))
                ));
            }
        }
        agreed += usize::from(ok);
    }
    (agreed, steps, differences)
}

#[test]
fn crd_matrix() {
    let m = matrix();
    let mut line = Vec::new();
    let mut total = 0;
    let mut failures = Vec::new();
    for group in m["groups"].as_array().unwrap() {
        let group = group.as_str().unwrap();
        let (agreed, steps, differences) = replay(&m, group);
        line.push(format!("{group} {agreed}/{steps}"));
        total += agreed;
        if WHOLE_GROUPS.contains(&group) && agreed != steps {
            failures.extend(differences);
        } else if std::env::var_os("CRD_MATRIX_VERBOSE").is_some() {
            for d in differences {
                eprintln!("{d}");
            }
        }
    }
    eprintln!("crd-matrix: {}, total {total}/155", line.join(", "));
    assert!(
        failures.is_empty(),
        "groups that agreed in full now differ:\n{}",
        failures.join("\n")
    );
    assert!(
        total >= FLOOR,
        "crd-matrix: {total} steps agree, fewer than the floor {FLOOR}"
    );
}

/// The matrix is the one the README describes: 155 steps in 8 groups, ids unique per group,
/// every whole group a real one.
#[test]
fn matrix_is_whole() {
    let m = matrix();
    let steps = m["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 155);
    assert_eq!(m["crds"].as_array().unwrap().len(), 5);
    let groups = m["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 8);
    let mut seen = std::collections::HashSet::new();
    for s in steps {
        assert!(groups.contains(&s["group"]), "{s}");
        assert!(
            seen.insert((s["group"].to_string(), s["id"].to_string())),
            "{s}"
        );
    }
    for g in WHOLE_GROUPS {
        assert!(groups.iter().any(|x| x == g), "{g}");
    }
}

#[test]
fn message_lists_sort_by_cause() {
    let causes = [json!(["", "spec.b", "x, y"]), json!(["", "spec.a", "z"])];
    assert_eq!(
        sorted_message("W \"n\" is invalid: [spec.b: x, y, spec.a: z]", &causes),
        "W \"n\" is invalid: [spec.a: z, spec.b: x, y]"
    );
    assert_eq!(
        hide_objects("patch: Invalid value: \"{\\\"a\\\":1}\": strict"),
        "patch: Invalid value: \"<object>\": strict"
    );
    assert_eq!(
        symbolic("md-gen-x7k2p in cap-crdm-replay", Some("md-gen-")),
        "md-gen-##### in $NS"
    );
}

/// The first event of a watch over a raw connection.
fn first_watch_event(addr: SocketAddr, path: &str) -> Value {
    use std::io::{BufRead, BufReader, Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect for a watch");
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    let head = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json\r\nUser-Agent: {USER_AGENT}\r\n\r\n"
    );
    s.write_all(head.as_bytes()).unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert!(line.contains(" 200 "), "watch answered {line:?}");
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        if line.trim().is_empty() {
            break;
        }
    }
    let mut pending = Vec::new();
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        let n = usize::from_str_radix(line.trim(), 16).expect("a chunk size");
        assert!(n > 0, "the watch ended without an event");
        let mut chunk = vec![0; n + 2];
        r.read_exact(&mut chunk).unwrap();
        pending.extend_from_slice(&chunk[..n]);
        if let Some(i) = pending.iter().position(|b| *b == b'\n') {
            return serde_json::from_slice(&pending[..i]).expect("an event is JSON");
        }
    }
}

/// A default added to a CRD shows in the watch events of objects stored before it (from the
/// present and replayed from an older resourceVersion), as decoding from etcd defaults them,
/// while the stored object keeps its resourceVersion.
#[test]
fn defaults_added_later_show_on_watch() {
    let m = matrix();
    let (_server, addr) = setup(&m);
    let gizmos = format!("/apis/matrix.capture.example.com/v1/namespaces/{NS}/gizmos");
    let list_rv = body_json(&get(addr, &gizmos))["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = send_json(
        addr,
        "POST",
        &gizmos,
        Some("application/json"),
        json!({"apiVersion": "matrix.capture.example.com/v1", "kind": "Gizmo",
            "metadata": {"name": "old"}, "spec": {"size": 1}})
        .to_string()
        .into_bytes(),
    );
    assert_eq!(r.code, 201);
    let created_rv = rv_of(&body_json(&r)).unwrap().to_owned();
    let r = send_json(
        addr,
        "PATCH",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gizmos.matrix.capture.example.com",
        Some("application/json-patch+json"),
        json!([{"op": "add",
            "path": "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/level",
            "value": {"type": "integer", "default": 7}}])
        .to_string()
        .into_bytes(),
    );
    assert_eq!(r.code, 200, "{}", String::from_utf8_lossy(&r.body));
    let one = format!("{gizmos}/old");
    assert!(eventually(|| body_json(&get(addr, &one))
        .pointer("/spec/level")
        .is_some()));
    assert_eq!(
        rv_of(&body_json(&get(addr, &one))),
        Some(created_rv.as_str())
    );
    for query in ["watch=1", &format!("watch=1&resourceVersion={list_rv}")] {
        let e = first_watch_event(addr, &format!("{gizmos}?{query}"));
        assert_eq!(e["type"], "ADDED", "{query}: {e}");
        assert_eq!(
            e["object"]["spec"],
            json!({"size": 1, "level": 7}),
            "{query}"
        );
        assert_eq!(
            e["object"]["metadata"]["resourceVersion"],
            created_rv.as_str()
        );
    }
}

/// Admission webhooks see a custom resource defaulted (kube-apiserver defaults while
/// decoding, before admission), and what a mutating webhook removes is defaulted again.
#[test]
fn webhooks_see_defaulted_custom_resources() {
    use kube_informer::serve::{Router, Server, TlsFiles};
    use kube_informer::testing::{CA_PEM, SERVER_CERT_PEM, SERVER_KEY_PEM};
    use kube_informer::webhook::{AdmissionHook, Verdict};
    use std::sync::{Arc, Mutex};

    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen_by_hook = Arc::clone(&seen);
    let router = Router::new()
        .route(
            "/validate",
            AdmissionHook::validating(move |req| {
                let spec = req.object.as_ref().map(|o| o["spec"].clone());
                seen_by_hook
                    .lock()
                    .unwrap()
                    .push(spec.unwrap_or(Value::Null));
                Verdict::allow()
            }),
        )
        .route(
            "/mutate",
            AdmissionHook::mutating(|_req, obj: &mut Value| {
                if let Some(spec) = obj["spec"].as_object_mut() {
                    spec.remove("mode");
                }
                Verdict::allow()
            }),
        );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tls.crt"), SERVER_CERT_PEM).unwrap();
    std::fs::write(dir.path().join("tls.key"), SERVER_KEY_PEM).unwrap();
    let hooks = Server::builder("hooks")
        .tls(TlsFiles::new(dir.path()))
        .bind("127.0.0.1:0", router)
        .unwrap();
    let m = matrix();
    let (_server, addr) = setup(&m);
    for (plural, path) in [
        ("mutatingwebhookconfigurations", "/mutate"),
        ("validatingwebhookconfigurations", "/validate"),
    ] {
        let kind = if plural.starts_with("mutating") {
            "MutatingWebhookConfiguration"
        } else {
            "ValidatingWebhookConfiguration"
        };
        let config = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": "widgets"},
            "webhooks": [{"name": "widgets.example.com",
                "clientConfig": {"url": format!("https://{}{path}", hooks.addr()),
                    "caBundle": base64::Engine::encode(
                        &base64::engine::general_purpose::STANDARD, CA_PEM)},
                "rules": [{"operations": ["CREATE"], "apiGroups": ["matrix.capture.example.com"],
                    "apiVersions": ["v1"], "resources": ["widgets"], "scope": "Namespaced"}],
                "admissionReviewVersions": ["v1"], "sideEffects": "None",
                "failurePolicy": "Fail", "timeoutSeconds": 10}]});
        let r = send_json(
            addr,
            "POST",
            &format!("/apis/admissionregistration.k8s.io/v1/{plural}"),
            Some("application/json"),
            config.to_string().into_bytes(),
        );
        assert_eq!(r.code, 201, "{}", String::from_utf8_lossy(&r.body));
    }
    let r = send_json(
        addr,
        "POST",
        &format!("/apis/matrix.capture.example.com/v1/namespaces/{NS}/widgets"),
        Some("application/json"),
        json!({"apiVersion": "matrix.capture.example.com/v1", "kind": "Widget",
            "metadata": {"name": "hooked"}, "spec": {"size": 5, "mode": null}})
        .to_string()
        .into_bytes(),
    );
    assert_eq!(r.code, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        body_json(&r)["spec"]["mode"],
        "auto",
        "defaulted after the mutation"
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0]["size"], 5);
    assert_eq!(seen[0]["color"], "blue", "the webhook saw {}", seen[0]);
    assert_eq!(
        seen[0]["resources"],
        json!({"cpu": "100m", "memory": "64Mi"})
    );
    hooks.stop();
}

/// Hostile schemas and values: a pattern too big to compile, formats fed multi-byte and
/// malformed text, a deeply nested `anyOf`. Every write is answered (a 201 or a 422 naming
/// the field), and the server keeps serving.
#[test]
fn hostile_patterns_and_values_are_answered() {
    let mut m = matrix();
    let crd = m["crds"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|c| c["metadata"]["name"] == "checks.matrix.capture.example.com")
        .unwrap();
    let spec = crd
        .pointer_mut("/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties")
        .unwrap();
    spec["huge"] = json!({"type": "string", "pattern": "(a{1000}){1000}"});
    let mut nested = json!({"maxLength": 1});
    for _ in 0..12 {
        nested = json!({"anyOf": [{"pattern": "^z"}, nested]});
    }
    spec["deep"] = json!({"type": "string", "allOf": [nested]});
    let (_server, addr) = setup(&m);
    let path = format!("/apis/matrix.capture.example.com/v1/namespaces/{NS}/checks");
    let odd = [
        "é",
        "2024-01-0é",
        "é@é",
        "::é",
        "\u{0}",
        "<>",
        "a\u{300}b",
        "ééééééééééééééé",
    ];
    let fields = [
        "huge", "when", "day", "blob", "email", "uid", "ip", "host", "name", "deep",
    ];
    for (i, f) in fields.iter().enumerate() {
        for (j, v) in odd.iter().enumerate() {
            let body = json!({"apiVersion": "matrix.capture.example.com/v1", "kind": "Check",
                "metadata": {"name": format!("h-{i}-{j}")}, "spec": {*f: v}});
            let r = send_json(
                addr,
                "POST",
                &path,
                Some("application/json"),
                serde_json::to_vec(&body).unwrap(),
            );
            let answer = body_json(&r);
            match r.code {
                201 => assert_eq!(answer["spec"][*f], json!(v)),
                422 => {
                    let causes = answer["details"]["causes"].as_array().unwrap();
                    assert!(
                        causes.iter().any(|c| c["field"] == format!("spec.{f}")),
                        "{f}={v:?}: {answer}"
                    );
                }
                code => panic!("{f}={v:?}: {code} {answer}"),
            }
        }
    }
    // A value of the wrong type under the nested combinators is refused, not looped on.
    let body = json!({"apiVersion": "matrix.capture.example.com/v1", "kind": "Check",
        "metadata": {"name": "deep-bool"}, "spec": {"deep": true}});
    let r = send_json(
        addr,
        "POST",
        &path,
        Some("application/json"),
        serde_json::to_vec(&body).unwrap(),
    );
    assert_eq!(r.code, 422, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(send_json(addr, "GET", &path, None, Vec::new()).code, 200);
}
