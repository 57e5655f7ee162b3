//! `testing::ApiServer` replays kube-apiserver v1.36.2's write semantics as captured in
//! `tests/fixtures/semantics/write-matrix.json` (described in `tests/fixtures/semantics/README.md`):
//! every step is sent over real loopback HTTP, its answer, `Warning` headers, the target as a
//! GET sees it afterwards and the watch events it caused are summarised with the same
//! symbolic rules as the capture, and compared.
//!
//! Set up like the capture: a namespace per group, the matrix's CRD registered from its
//! definition, one sentinel object per watched resource, one watch per resource opened from
//! its list's resourceVersion before the first step. After each step every sentinel gets the
//! annotation `lab-wsem/step: N`; a step's events are those each watch delivers before its
//! sentinel's MODIFIED carrying `N` (a deterministic end, nothing is timed).
//!
//! Where the test server differs on purpose, [`EXCEPTIONS`] says so, with why; an exception
//! that no longer differs fails the test too, so the table cannot go stale.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;

use common::capture::{body_json, send_json, Response, USER_AGENT};
use common::PATIENCE;
use kube_informer::testing::ApiServer;
use serde_json::{json, Map, Value};

/// `(group, step id, field, why)`: the differences the test server keeps on purpose.
const EXCEPTIONS: &[(&str, &str, &str, &str)] = &[];

fn matrix() -> Value {
    let raw = common::fixture("semantics/write-matrix.json");
    serde_json::from_slice(&raw).expect("write-matrix.json is JSON")
}

fn server(m: &Value) -> ApiServer {
    ApiServer::builder()
        .custom_resource_definition(&m["crd"])
        .expect("the matrix's CRD is accepted")
        .start()
}

/// A watch over a raw connection: its events, one JSON value each, arrive on the channel.
fn open_watch(addr: SocketAddr, path: &str, rv: &str) -> mpsc::Receiver<Value> {
    let (tx, rx) = mpsc::channel();
    let mut s = TcpStream::connect(addr).expect("connect for a watch");
    let head = format!(
        "GET {path}?watch=1&resourceVersion={rv} HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json\r\nUser-Agent: {USER_AGENT}\r\n\r\n"
    );
    s.write_all(head.as_bytes()).unwrap();
    std::thread::spawn(move || {
        let mut r = BufReader::new(s);
        let mut line = String::new();
        r.read_line(&mut line).unwrap_or(0);
        assert!(line.contains(" 200 "), "watch answered {line:?}");
        loop {
            line.clear();
            if r.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                break;
            }
        }
        let mut pending = Vec::new();
        loop {
            line.clear();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let n = usize::from_str_radix(line.trim(), 16).unwrap_or(0);
            if n == 0 {
                return;
            }
            let mut chunk = vec![0; n + 2];
            if r.read_exact(&mut chunk).is_err() {
                return;
            }
            pending.extend_from_slice(&chunk[..n]);
            while let Some(i) = pending.iter().position(|b| *b == b'\n') {
                let l: Vec<u8> = pending.drain(..=i).collect();
                if let Ok(v) = serde_json::from_slice::<Value>(&l) {
                    if tx.send(v).is_err() {
                        return;
                    }
                }
            }
        }
    });
    rx
}

/// What a replay keeps between steps.
struct Replay<'a> {
    m: &'a Value,
    addr: SocketAddr,
    ns: String,
    watches: Vec<(String, mpsc::Receiver<Value>)>,
    /// The first resourceVersion seen of each target (`$OLDRV`).
    first_rv: HashMap<String, String>,
    /// The name the last `generateName` answer gave (`$GENNAME`).
    gen_name: Option<String>,
}

fn is_generated(name: &str) -> bool {
    const ALPHABET: &str = "bcdfghjklmnpqrstvwxz2456789";
    name.strip_prefix("lab-wsem-gen-")
        .is_some_and(|s| s.len() == 5 && s.chars().all(|c| ALPHABET.contains(c)))
}

fn symbolic_name(name: &str) -> String {
    if is_generated(name) {
        "lab-wsem-gen-#####".to_owned()
    } else {
        name.to_owned()
    }
}

fn rv_of(o: &Value) -> Option<&str> {
    o.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
}

/// `.spec.template.spec.containers[name=app].image` as fieldsV1 keys.
fn probe_keys(probe: &str) -> Vec<String> {
    let mut keys = Vec::new();
    for seg in probe.trim_start_matches('.').split('.') {
        match seg.split_once('[') {
            Some((field, key)) => {
                keys.push(format!("f:{field}"));
                let (k, v) = key.trim_end_matches(']').split_once('=').unwrap();
                keys.push(format!("k:{}", json!({ k: v })));
            }
            None => keys.push(format!("f:{seg}")),
        }
    }
    keys
}

fn owns(fields_v1: &Value, probe: &str) -> bool {
    let mut at = fields_v1;
    for k in probe_keys(probe) {
        match at.get(&k) {
            Some(v) => at = v,
            None => return false,
        }
    }
    true
}

fn dotted<'v>(o: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(o, |at, k| at.get(k))
}

fn strings(v: Option<&Value>) -> Value {
    v.cloned().unwrap_or_else(|| json!([]))
}

impl Replay<'_> {
    fn resource<'s>(&'s self, step: &'s Value) -> &'s Value {
        &self.m["resources"][step["resource"].as_str().unwrap()]
    }

    fn subst(&self, s: &str) -> String {
        let mut s = s.replace("$NS", &self.ns);
        if let Some(g) = &self.gen_name {
            s = s.replace("$GENNAME", g);
        }
        s
    }

    fn get(&self, target: &str) -> Response {
        send_json(self.addr, "GET", target, None, Vec::new())
    }

    /// The summary of an answer or of a GET, per the README's rules.
    fn summary(&self, step: &Value, r: &Response, before: Option<&Value>) -> Value {
        let body = body_json(r);
        let kind = body["kind"].as_str().unwrap_or("").to_owned();
        let before_rv = before.and_then(rv_of);
        let rv_word = |o: &Value| match (before_rv, rv_of(o)) {
            (_, None) => "none",
            (None, Some(_)) => "new",
            (Some(b), Some(a)) if a == b => "same",
            _ => "changed",
        };
        if kind == "Status" {
            let d = &body["details"];
            let mut details = Map::new();
            for k in ["name", "group", "kind"] {
                if let Some(v) = d[k].as_str().filter(|v| !v.is_empty()) {
                    details.insert(k.into(), v.into());
                }
            }
            let causes: Vec<Value> = d["causes"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|c| {
                            json!([
                                c["reason"].as_str().unwrap_or(""),
                                c["field"].as_str().unwrap_or("")
                            ])
                        })
                        .collect()
                })
                .unwrap_or_default();
            return json!({
                "code": r.code, "kind": "Status", "status": body["status"],
                "reason": body["reason"].as_str().unwrap_or(""),
                "details": details, "causes": causes,
            });
        }
        if kind == "Scale" {
            return json!({
                "code": r.code, "kind": "Scale",
                "name": body["metadata"]["name"], "rv": rv_word(&body),
                "specReplicas": body["spec"]["replicas"],
                "statusReplicas": body["status"]["replicas"],
                "selector": body["status"]["selector"],
            });
        }
        if kind.ends_with("List") {
            let items: Vec<Value> = body["items"]
                .as_array()
                .map(|a| a.iter().map(|o| o["metadata"]["name"].clone()).collect())
                .unwrap_or_default();
            return json!({"code": r.code, "kind": kind, "items": items});
        }
        if body.is_null() {
            return json!({"code": r.code, "kind": null, "body": String::from_utf8_lossy(&r.body)});
        }
        let meta = &body["metadata"];
        let gen = match (
            before.and_then(|b| b["metadata"]["generation"].as_i64()),
            meta["generation"].as_i64(),
        ) {
            (_, None) => Value::Null,
            (None, Some(g)) => format!("={g}").into(),
            (Some(b), Some(g)) => format!("{}{}", if g >= b { "+" } else { "" }, g - b).into(),
        };
        let res = self.resource(step);
        let content_paths = step.get("content").unwrap_or(&res["content"]);
        let mut content = Map::new();
        for p in content_paths.as_array().unwrap() {
            let p = p.as_str().unwrap();
            content.insert(p.into(), dotted(&body, p).cloned().unwrap_or(Value::Null));
        }
        let probes = step.get("probes").unwrap_or(&res["probes"]);
        let mut mf: Vec<Value> = meta["managedFields"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|e| {
                        let owned: Vec<&Value> = probes
                            .as_array()
                            .unwrap()
                            .iter()
                            .filter(|p| owns(&e["fieldsV1"], p.as_str().unwrap()))
                            .collect();
                        json!([
                            e["manager"].as_str().unwrap_or(""),
                            e["operation"].as_str().unwrap_or(""),
                            e["subresource"].as_str().unwrap_or(""),
                            owned
                        ])
                    })
                    .collect()
            })
            .unwrap_or_default();
        mf.sort_by_key(|e| format!("{}\u{0}{}\u{0}{}", e[0], e[1], e[2]));
        json!({
            "code": r.code, "kind": kind,
            "object": {
                "name": symbolic_name(meta["name"].as_str().unwrap_or("")),
                "rv": rv_word(&body),
                "gen": gen,
                "deleting": meta.get("deletionTimestamp").is_some_and(|t| !t.is_null()),
                "labels": meta.get("labels").cloned().unwrap_or_else(|| json!({})),
                "annotations": meta.get("annotations").cloned().unwrap_or_else(|| json!({})),
                "finalizers": strings(meta.get("finalizers")),
                "content": content,
                "managedFields": mf,
            }
        })
    }

    /// Replaces the placeholders of a request body.
    fn fill(&self, v: &Value, before: Option<&Value>, target: &str) -> Value {
        match v {
            Value::String(s) => match s.as_str() {
                "$RV" => before.and_then(rv_of).unwrap_or("").into(),
                "$OLDRV" => self
                    .first_rv
                    .get(target)
                    .cloned()
                    .unwrap_or_default()
                    .into(),
                "$UID" => before
                    .map(|b| b["metadata"]["uid"].clone())
                    .unwrap_or_default(),
                "$REPLICAS" => before
                    .map(|b| b["spec"]["replicas"].clone())
                    .unwrap_or_default(),
                s => self.subst(s).into(),
            },
            Value::Array(a) => a.iter().map(|x| self.fill(x, before, target)).collect(),
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, x)| (k.clone(), self.fill(x, before, target)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// Marks the end of step `n` on every sentinel and collects each watch's events up to it.
    fn events(&self, n: usize, unordered: bool) -> Vec<Value> {
        let sentinel = self.m["sentinel"]["name"].as_str().unwrap();
        let annotation = self.m["sentinel"]["annotation"].as_str().unwrap();
        let mut all = Vec::new();
        for (res, rx) in &self.watches {
            let path = self.subst(self.m["resources"][res]["path"].as_str().unwrap());
            let patch = json!({"metadata": {"annotations": {annotation: n.to_string()}}});
            let r = send_json(
                self.addr,
                "PATCH",
                &format!("{path}/{sentinel}"),
                Some("application/merge-patch+json"),
                patch.to_string().into_bytes(),
            );
            assert_eq!(
                r.code,
                200,
                "sentinel patch: {}",
                String::from_utf8_lossy(&r.body)
            );
            let mut mine = Vec::new();
            loop {
                let e = rx
                    .recv_timeout(PATIENCE)
                    .unwrap_or_else(|_| panic!("no sentinel mark {n} on the {res} watch"));
                let ty = e["type"].as_str().unwrap_or("").to_owned();
                let o = &e["object"];
                let name = o["metadata"]["name"].as_str().unwrap_or("");
                if name == sentinel {
                    if ty == "MODIFIED"
                        && o["metadata"]["annotations"][annotation].as_str() == Some(&n.to_string())
                    {
                        break;
                    }
                    continue;
                }
                mine.push(json!([res, ty, symbolic_name(name)]));
            }
            if unordered {
                mine.sort_by_key(|e| e.to_string());
            }
            all.extend(mine);
        }
        all
    }

    /// Runs step `n` (1-based over the whole matrix) and returns its four observations.
    fn run(&mut self, n: usize, step: &Value) -> Vec<(&'static str, Value)> {
        let target = step["target"].as_str().map(|t| self.subst(t));
        let before = match &target {
            Some(t) if !t.contains("$GENNAME") && !t.contains('?') => {
                let r = self.get(t);
                (r.code == 200).then(|| body_json(&r))
            }
            _ => None,
        };
        if let (Some(t), Some(rv)) = (&target, before.as_ref().and_then(rv_of)) {
            self.first_rv.entry(t.clone()).or_insert(rv.to_owned());
        }
        let tkey = target.clone().unwrap_or_default();
        let body = if let Some(text) = step["bodyText"].as_str() {
            self.subst(text).into_bytes()
        } else if step["body"].is_null() {
            Vec::new()
        } else {
            self.fill(&step["body"], before.as_ref(), &tkey)
                .to_string()
                .into_bytes()
        };
        let mut path = self.subst(step["path"].as_str().unwrap());
        if let Some(q) = step["query"].as_str().filter(|q| !q.is_empty()) {
            path = format!("{path}?{q}");
        }
        let r = send_json(
            self.addr,
            step["method"].as_str().unwrap(),
            &path,
            step["contentType"].as_str(),
            body,
        );
        if let Some(name) = body_json(&r)["metadata"]["name"]
            .as_str()
            .filter(|n| is_generated(n))
        {
            self.gen_name = Some(name.to_owned());
        }
        let answer = self.summary(step, &r, before.as_ref());
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
        let target = step["target"].as_str().map(|t| self.subst(t));
        let after = match &target {
            Some(t) => {
                let r = self.get(t);
                if let Some(rv) = (r.code == 200)
                    .then(|| body_json(&r))
                    .as_ref()
                    .and_then(rv_of)
                {
                    self.first_rv.entry(t.clone()).or_insert(rv.to_owned());
                }
                self.summary(step, &r, before.as_ref())
            }
            None => Value::Null,
        };
        let events = self.events(n, step["unorderedEvents"].as_bool().unwrap_or(false));
        vec![
            ("answer", answer),
            ("warnings", Value::from(warnings)),
            ("after", after),
            ("events", Value::from(events)),
        ]
    }
}

/// The differing leaves of two summaries, as `path: expected X, got Y`.
fn diff(path: &str, want: &Value, got: &Value, out: &mut Vec<String>) {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) if path.matches('.').count() < 2 => {
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

/// Replays one group in a namespace of its own; panics listing every difference.
fn replay(group: &str) {
    let m = matrix();
    let server = server(&m);
    let addr = server.addr();
    let ns = format!("lab-wsem-{group}");
    let r = send_json(
        addr,
        "POST",
        "/api/v1/namespaces",
        Some("application/json"),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            .to_string()
            .into_bytes(),
    );
    assert_eq!(
        r.code,
        201,
        "namespace: {}",
        String::from_utf8_lossy(&r.body)
    );
    let mut replay = Replay {
        m: &m,
        addr,
        ns,
        watches: Vec::new(),
        first_rv: HashMap::new(),
        gen_name: None,
    };
    for res in m["resourceOrder"].as_array().unwrap() {
        let res = res.as_str().unwrap();
        let path = replay.subst(m["resources"][res]["path"].as_str().unwrap());
        let obj = &m["sentinel"]["objects"][res];
        let r = send_json(
            addr,
            "POST",
            &path,
            Some("application/json"),
            obj.to_string().into_bytes(),
        );
        assert_eq!(
            r.code,
            201,
            "sentinel {res}: {}",
            String::from_utf8_lossy(&r.body)
        );
    }
    for res in m["resourceOrder"].as_array().unwrap() {
        let res = res.as_str().unwrap();
        let path = replay.subst(m["resources"][res]["path"].as_str().unwrap());
        let list = body_json(&replay.get(&path));
        let rv = list["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_owned();
        replay
            .watches
            .push((res.to_owned(), open_watch(addr, &path, &rv)));
    }

    let mut differences = Vec::new();
    let mut excepted = Vec::new();
    let (mut steps, mut passed) = (0, 0);
    for (i, step) in m["steps"].as_array().unwrap().iter().enumerate() {
        if step["group"] != group {
            continue;
        }
        steps += 1;
        let id = step["id"].as_str().unwrap();
        let mut ok = true;
        for (field, got) in replay.run(i + 1, step) {
            let want = &step[field];
            let exception = EXCEPTIONS
                .iter()
                .find(|(g, s, f, _)| *g == group && *s == id && *f == field);
            match (got == *want, exception) {
                (true, None) => {}
                (true, Some(_)) => differences.push(format!(
                    "{id}: {field}: listed as an exception but now as captured; drop the exception"
                )),
                (false, Some(_)) => excepted.push((id, field)),
                (false, None) => {
                    ok = false;
                    let mut d = Vec::new();
                    diff(field, want, &got, &mut d);
                    differences.push(format!("{id}: {}", d.join(&format!("\n{id}: "))));
                }
            }
        }
        passed += usize::from(ok);
    }
    eprintln!(
        "write matrix, group {group}: {passed} of {steps} steps as captured; {} excepted fields",
        excepted.len()
    );
    assert!(
        differences.is_empty(),
        "group {group}: {} difference(s):\n{}",
        differences.len(),
        differences.join("\n")
    );
}

#[test]
fn creates() {
    replay("creates");
}

#[test]
fn patches() {
    replay("patches");
}

#[test]
fn apply() {
    replay("apply");
}

#[test]
fn subresources() {
    replay("subresources");
}

#[test]
fn deletes() {
    replay("deletes");
}

#[test]
fn scale() {
    replay("scale");
}

/// The matrix is the one the README describes: 179 steps in six groups, each group's step
/// ids unique, every exception naming a real step and field.
#[test]
fn matrix_is_whole() {
    let m = matrix();
    let steps = m["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 179);
    let mut seen = std::collections::HashSet::new();
    for s in steps {
        assert!(
            seen.insert((s["group"].to_string(), s["id"].to_string())),
            "{s}"
        );
    }
    for (g, id, field, why) in EXCEPTIONS {
        assert!(!why.is_empty());
        assert!(["answer", "warnings", "after", "events"].contains(field));
        assert!(
            steps.iter().any(|s| s["group"] == *g && s["id"] == *id),
            "exception for a step that does not exist: {g} {id}"
        );
    }
}
