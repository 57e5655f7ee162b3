//! Captured exchanges with a real kube-apiserver, replayed against the test server and
//! compared field by field.
//!
//! A capture `NAME` is `tests/fixtures/NAME.request` (the request line, the headers set by
//! hand, an empty line, the body), `NAME.json.headers` (status line and headers) and
//! `NAME.json` (the body; absent when there is none). [`send`] replays a request over a raw
//! HTTP/1.1 connection (so every response header, repeated `Warning`s included, is seen as
//! sent), and [`Compare`] checks the answer against the capture:
//! - the status code, `Content-Type`, `Cache-Control` and every `Warning` header (in order);
//! - the JSON bodies field by field, both ways (a field missing on either side is a
//!   difference), except paths declared *volatile* (must be present on both sides with the
//!   same JSON type; the value may differ: uids, timestamps, resourceVersions) or *ignored*
//!   (not compared at all), and with exact-text substitutions for values that must differ
//!   inside messages (a uid quoted in a 409).
//!
//! Paths are dotted with list indices as segments (`items.0.metadata.uid`); patterns may use
//! `*` for one segment and `**` for any number of them (`**.uid`).
//!
//! ```ignore
//! let answer = capture::replay(&server, "delete-configmap");
//! capture::Compare::new().assert("delete-configmap", &answer);
//! ```
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};

use kube_informer::testing::ApiServer;
use serde_json::Value;

use super::fixture_path;

/// A request as captured.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    /// Path and query, as on the request line.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// A response: captured, or received from the test server.
#[derive(Clone, Debug)]
pub struct Response {
    pub code: u16,
    /// Header names in lower case, in the order received.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// The first value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every value of a header, in order.
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The body as JSON (`Null` when empty; panics on anything else that is not JSON).
    pub fn json(&self) -> Value {
        if self.body.iter().all(u8::is_ascii_whitespace) {
            return Value::Null;
        }
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixture_path(name)).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

/// `NAME.request`.
pub fn request(name: &str) -> Request {
    let raw = read(&format!("{name}.request"));
    let split = raw
        .windows(2)
        .position(|w| w == b"\n\n")
        .unwrap_or(raw.len());
    let head = String::from_utf8(raw[..split].to_vec()).expect("request head is text");
    let body = raw.get(split + 2..).unwrap_or_default().to_vec();
    let mut lines = head.lines();
    let line = lines.next().expect("request line");
    let mut parts = line.split(' ');
    let method = parts.next().unwrap().to_owned();
    let target = parts.next().expect("request target").to_owned();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Request {
        method,
        target,
        headers,
        body,
    }
}

/// `NAME.json.headers` and `NAME.json` (an empty body when that file does not exist).
pub fn response(name: &str) -> Response {
    let head = String::from_utf8(read(&format!("{name}.json.headers"))).unwrap();
    let mut lines = head.lines();
    let code = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .expect("status line");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let body = std::fs::read(fixture_path(&format!("{name}.json"))).unwrap_or_default();
    Response {
        code,
        headers,
        body,
    }
}

/// Sends a request over a fresh HTTP/1.1 connection and reads the whole answer.
pub fn send(addr: SocketAddr, req: &Request) -> Response {
    let mut s = TcpStream::connect(addr).expect("connect to the test server");
    s.set_read_timeout(Some(super::PATIENCE)).unwrap();
    let mut head = format!(
        "{} {} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        req.method,
        req.target,
        req.body.len()
    );
    for (k, v) in &req.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(&req.body).unwrap();
    s.flush().unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let code = line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("status line {line:?}"));
    let mut headers = Vec::new();
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let mut body = Vec::new();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    if chunked {
        loop {
            line.clear();
            r.read_line(&mut line).unwrap();
            let n = usize::from_str_radix(line.trim(), 16).unwrap_or(0);
            if n == 0 {
                break;
            }
            let mut chunk = vec![0; n + 2];
            r.read_exact(&mut chunk).unwrap();
            body.extend_from_slice(&chunk[..n]);
        }
    } else {
        r.read_to_end(&mut body).unwrap();
    }
    Response {
        code,
        headers,
        body,
    }
}

/// The User-Agent of the semantics tables' captures (`semantics/README.md`): the manager of
/// a write sent without `fieldManager`.
pub const USER_AGENT: &str = "kube-informer-semantics/1";

/// Sends one request as the semantics tables' captures did: JSON accepted, their
/// [`USER_AGENT`], `ct` as the Content-Type when there is a body.
pub fn send_json(
    addr: SocketAddr,
    method: &str,
    target: &str,
    ct: Option<&str>,
    body: Vec<u8>,
) -> Response {
    let mut headers = vec![
        ("Accept".to_owned(), "application/json".to_owned()),
        ("User-Agent".to_owned(), USER_AGENT.to_owned()),
    ];
    if let Some(ct) = ct {
        headers.push(("Content-Type".to_owned(), ct.to_owned()));
    }
    send(
        addr,
        &Request {
            method: method.into(),
            target: target.into(),
            headers,
            body,
        },
    )
}

/// An answer's body as JSON; `null` when it is not JSON.
pub fn body_json(r: &Response) -> Value {
    serde_json::from_slice(&r.body).unwrap_or(Value::Null)
}

/// Sends the captured request `NAME.request` to `server`.
pub fn replay(server: &ApiServer, name: &str) -> Response {
    send(server.addr(), &request(name))
}

/// Sends the captured request with its body replaced (for a body that names what the test
/// server made, such as a uid or resourceVersion).
pub fn replay_with_body(server: &ApiServer, name: &str, body: &[u8]) -> Response {
    let mut req = request(name);
    req.body = body.to_vec();
    send(server.addr(), &req)
}

/// How a capture and an answer are compared; see the module docs.
#[derive(Clone, Debug)]
pub struct Compare {
    volatile: Vec<String>,
    ignored: Vec<String>,
    substitutions: Vec<(String, String)>,
    generated: Vec<String>,
}

impl Default for Compare {
    fn default() -> Self {
        Self::new()
    }
}

impl Compare {
    /// Volatile by default: every `uid`, `creationTimestamp`, `deletionTimestamp` and
    /// `resourceVersion`, and the `time` of managed fields entries.
    pub fn new() -> Self {
        Compare {
            volatile: vec![
                "**.uid".into(),
                "**.creationTimestamp".into(),
                "**.deletionTimestamp".into(),
                "**.resourceVersion".into(),
                "**.managedFields.*.time".into(),
            ],
            ignored: Vec::new(),
            substitutions: Vec::new(),
            generated: Vec::new(),
        }
    }

    /// Present on both sides with the same JSON type; the value is not compared.
    pub fn volatile(mut self, pattern: &str) -> Self {
        self.volatile.push(pattern.into());
        self
    }

    /// Not compared at all (say why where you use it).
    pub fn ignore(mut self, pattern: &str) -> Self {
        self.ignored.push(pattern.into());
        self
    }

    /// Replaces `ours` by `theirs` in every string of the answer before comparing (a uid or
    /// resourceVersion the test server made, quoted inside a message).
    pub fn substitute(mut self, ours: &str, theirs: &str) -> Self {
        self.substitutions.push((ours.into(), theirs.into()));
        self
    }

    /// A `generateName` result: the same prefix, then as many characters from the API
    /// server's alphabet as the capture has.
    pub fn generated_name(mut self, pattern: &str) -> Self {
        self.generated.push(pattern.into());
        self
    }

    /// Every difference between the capture `name` and `actual`, one line each.
    pub fn differences(&self, name: &str, actual: &Response) -> Vec<String> {
        let expected = response(name);
        let mut out = Vec::new();
        if expected.code != actual.code {
            out.push(format!("status code: {} != {}", expected.code, actual.code));
        }
        for h in ["content-type", "cache-control"] {
            if expected.header(h) != actual.header(h) {
                out.push(format!(
                    "header {h}: {:?} != {:?}",
                    expected.header(h),
                    actual.header(h)
                ));
            }
        }
        if expected.all("warning") != actual.all("warning") {
            out.push(format!(
                "warning headers: {:?} != {:?}",
                expected.all("warning"),
                actual.all("warning")
            ));
        }
        let mut got = actual.json();
        self.substitute_in(&mut got);
        self.diff(&mut Vec::new(), &expected.json(), &got, &mut out);
        out
    }

    /// The differences between two JSON values under these rules (one line of a watch
    /// capture against one line received).
    pub fn value_differences(&self, want: &Value, got: &Value) -> Vec<String> {
        let mut got = got.clone();
        self.substitute_in(&mut got);
        let mut out = Vec::new();
        self.diff(&mut Vec::new(), want, &got, &mut out);
        out
    }

    /// Panics with every difference, if any.
    pub fn assert(&self, name: &str, actual: &Response) {
        let diffs = self.differences(name, actual);
        assert!(
            diffs.is_empty(),
            "{name}: the test server's answer differs from the capture:\n  {}\nanswer: {} {}",
            diffs.join("\n  "),
            actual.code,
            String::from_utf8_lossy(&actual.body)
        );
    }

    fn substitute_in(&self, v: &mut Value) {
        match v {
            Value::String(s) => {
                for (ours, theirs) in &self.substitutions {
                    if s.contains(ours.as_str()) {
                        *s = s.replace(ours.as_str(), theirs);
                    }
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.substitute_in(x)),
            Value::Object(m) => m.values_mut().for_each(|x| self.substitute_in(x)),
            _ => {}
        }
    }

    fn diff(&self, path: &mut Vec<String>, want: &Value, got: &Value, out: &mut Vec<String>) {
        let here = path.join(".");
        if self.ignored.iter().any(|p| matches(p, path)) {
            return;
        }
        if self.volatile.iter().any(|p| matches(p, path)) {
            if std::mem::discriminant(want) != std::mem::discriminant(got) {
                out.push(format!("{here}: {want} != {got} (volatile: type differs)"));
            }
            return;
        }
        if self.generated.iter().any(|p| matches(p, path)) {
            if !is_generated_like(want, got) {
                out.push(format!("{here}: {want} != {got} (generated name)"));
            }
            return;
        }
        match (want, got) {
            (Value::Object(a), Value::Object(b)) => {
                for (k, va) in a {
                    path.push(k.clone());
                    match b.get(k) {
                        Some(vb) => self.diff(path, va, vb, out),
                        None if self.ignored.iter().any(|p| matches(p, path)) => {}
                        None => out.push(format!("{}: missing (capture has {va})", path.join("."))),
                    }
                    path.pop();
                }
                for (k, vb) in b {
                    if !a.contains_key(k) {
                        path.push(k.clone());
                        if !self.ignored.iter().any(|p| matches(p, path)) {
                            out.push(format!("{}: unexpected {vb}", path.join(".")));
                        }
                        path.pop();
                    }
                }
            }
            (Value::Array(a), Value::Array(b)) => {
                if a.len() != b.len() {
                    out.push(format!("{here}: {} items != {} items", a.len(), b.len()));
                }
                for (i, (va, vb)) in a.iter().zip(b).enumerate() {
                    path.push(i.to_string());
                    self.diff(path, va, vb, out);
                    path.pop();
                }
            }
            _ if want == got => {}
            _ => out.push(format!("{here}: {want} != {got}")),
        }
    }
}

/// The API server's `generateName` alphabet.
const NAME_ALPHABET: &str = "bcdfghjklmnpqrstvwxz2456789";

fn is_generated_like(want: &Value, got: &Value) -> bool {
    let (Some(w), Some(g)) = (want.as_str(), got.as_str()) else {
        return false;
    };
    let Some(prefix_len) = w.len().checked_sub(5) else {
        return false;
    };
    g.len() == w.len()
        && g[..prefix_len] == w[..prefix_len]
        && g[prefix_len..].chars().all(|c| NAME_ALPHABET.contains(c))
}

/// Whether a dotted pattern (`*` one segment, `**` any number) matches a path.
fn matches(pattern: &str, path: &[String]) -> bool {
    fn go(p: &[&str], s: &[String]) -> bool {
        match (p.first(), s.first()) {
            (None, None) => true,
            (Some(&"**"), _) => go(&p[1..], s) || (!s.is_empty() && go(p, &s[1..])),
            (Some(&"*"), Some(_)) => go(&p[1..], &s[1..]),
            (Some(x), Some(y)) if *x == y => go(&p[1..], &s[1..]),
            _ => false,
        }
    }
    let p: Vec<&str> = pattern.split('.').collect();
    go(&p, path)
}
