//! Answers no well-behaved API server gives, over real loopback HTTP: a tiny server whose
//! every answer a test scripts (the list and watch bodies, the Status of a failure), for what
//! `testing::ApiServer` cannot be made to say — a `remainingItemCount` of `i64::MAX`, an event
//! without a resourceVersion, a "too large resource version" Status.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::*;
use kube_informer::api::DynamicObject;
use kube_informer::cache::{DeltaFifo, Reflector, ReflectorConfig, RelistCause};
use kube_informer::{Api, Client, ClientConfig, ListParams};
use parking_lot::Mutex;

/// What the scripted server answers to one request.
enum Reply {
    /// A whole response with this code and JSON body.
    Full(u16, String),
    /// A chunked watch response: these lines in one chunk, then the body ends properly.
    WatchEnd(Vec<String>),
    /// A chunked watch response: these lines in one chunk, then the connection stays open
    /// and silent until the client closes it (or the server stops).
    WatchHold(Vec<String>),
}

type Script = Box<dyn Fn(usize, &str) -> Reply + Send + Sync>;

/// A server answering request number `n` (from 0) with the path `p` by `script(n, p)`.
struct Scripted {
    url: String,
    requests: Arc<Mutex<Vec<String>>>,
    stopped: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
    accept: Option<JoinHandle<()>>,
    addr: std::net::SocketAddr,
}

impl Scripted {
    fn start(script: impl Fn(usize, &str) -> Reply + Send + Sync + 'static) -> Scripted {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let requests: Arc<Mutex<Vec<String>>> = Arc::default();
        let stopped = Arc::new(AtomicBool::new(false));
        let conns: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let script: Arc<Script> = Arc::new(Box::new(script));
        let accept = {
            let (requests, stopped, conns) = (requests.clone(), stopped.clone(), conns.clone());
            std::thread::spawn(move || {
                let mut workers = Vec::new();
                for stream in listener.incoming() {
                    if stopped.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    conns.lock().push(stream.try_clone().unwrap());
                    let (requests, script) = (requests.clone(), script.clone());
                    workers.push(std::thread::spawn(move || {
                        serve(stream, &requests, &script)
                    }));
                }
                for w in workers {
                    let _ = w.join();
                }
            })
        };
        Scripted {
            url: format!("http://{addr}"),
            requests,
            stopped,
            conns,
            accept: Some(accept),
            addr,
        }
    }

    fn client_config(&self) -> ClientConfig {
        let mut c = ClientConfig::new(self.url.clone());
        c.qps = 0.0;
        c
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().clone()
    }

    /// Waits (bounded) until at least `n` requests came.
    fn wait_for_requests(&self, n: usize) -> Vec<String> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let r = self.requests();
            if r.len() >= n {
                return r;
            }
            assert!(
                Instant::now() < deadline,
                "only {} requests: {r:?}",
                r.len()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Scripted {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        for c in self.conns.lock().drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
        if let Some(a) = self.accept.take() {
            let _ = a.join();
        }
    }
}

fn serve(stream: TcpStream, requests: &Mutex<Vec<String>>, script: &Script) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let target = line.split_whitespace().nth(1).unwrap_or("").to_owned();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            if h.trim().is_empty() {
                break;
            }
        }
        let n = {
            let mut r = requests.lock();
            r.push(target.clone());
            r.len() - 1
        };
        let chunked = |out: &mut TcpStream, lines: &[String]| {
            let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
            let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
            // No lines, no chunk: an empty chunk would end the body.
            let chunk = if body.is_empty() {
                String::new()
            } else {
                format!("{:x}\r\n{body}\r\n", body.len())
            };
            // The head and the lines in one write, so they arrive together.
            out.write_all(format!("{head}{chunk}").as_bytes())
        };
        match script(n, &target) {
            Reply::Full(code, body) => {
                let head = format!(
                    "HTTP/1.1 {code} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                );
                if out.write_all(format!("{head}{body}").as_bytes()).is_err() {
                    return;
                }
            }
            Reply::WatchEnd(lines) => {
                if chunked(&mut out, &lines).is_err() || out.write_all(b"0\r\n\r\n").is_err() {
                    return;
                }
            }
            Reply::WatchHold(lines) => {
                if chunked(&mut out, &lines).is_err() {
                    return;
                }
                // Until the client closes (or the server shuts the socket down).
                let mut sink = [0u8; 64];
                while matches!(reader.read(&mut sink), Ok(n) if n > 0) {}
                return;
            }
        }
    }
}

fn pod_json(name: &str, rv: &str) -> String {
    format!(
        r#"{{"kind":"Pod","apiVersion":"v1","metadata":{{"name":"{name}","namespace":"lab","resourceVersion":"{rv}"}}}}"#
    )
}

fn list_json(rv: &str, items: &[String], more: Option<(&str, &str)>) -> String {
    let more = more
        .map(|(c, n)| format!(r#","continue":"{c}","remainingItemCount":{n}"#))
        .unwrap_or_default();
    format!(
        r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"{rv}"{more}}},"items":[{}]}}"#,
        items.join(",")
    )
}

fn event(ty: &str, object: &str) -> String {
    format!(r#"{{"type":"{ty}","object":{object}}}"#)
}

fn is_watch(path: &str) -> bool {
    path.contains("watch=1")
}

/// A reflector over `server` into a FIFO nobody pops (these tests look at its requests).
fn reflector(server: &Scripted) -> Reflector {
    reflector_into(server, Arc::new(DeltaFifo::new(None)))
}

/// The same into `fifo`, for a test that looks at what was queued.
fn reflector_into(server: &Scripted, fifo: Arc<DeltaFifo<DynamicObject>>) -> Reflector {
    let api: Api<DynamicObject> =
        Api::all_with(Client::new(server.client_config()).unwrap(), &pods());
    let config =
        ReflectorConfig::new().backoff(Duration::from_millis(50), Duration::from_millis(200));
    Reflector::start(api, fifo, config).unwrap()
}

#[test]
fn list_all_does_not_trust_a_huge_remaining_item_count() {
    for claimed in [i64::MAX.to_string(), "1000000000000".to_string()] {
        let server = Scripted::start(move |_, path| {
            if path.contains("continue=") {
                Reply::Full(200, list_json("7", &[pod_json("b", "6")], None))
            } else {
                Reply::Full(
                    200,
                    list_json("7", &[pod_json("a", "5")], Some(("next", &claimed))),
                )
            }
        });
        let api: Api<DynamicObject> =
            Api::all_with(Client::new(server.client_config()).unwrap(), &pods());
        let all = api.list_all(&ListParams::default()).unwrap();
        let names: Vec<&str> = all.items.iter().map(|o| o.metadata.name()).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(all.items.capacity() < 1_000_000, "{}", all.items.capacity());
    }
}

#[test]
fn an_event_without_a_version_keeps_the_runs_last_good_version() {
    let server = Scripted::start(|_, path| {
        if !is_watch(path) {
            return Reply::Full(200, list_json("3", &[pod_json("a", "3")], None));
        }
        if path.contains("resourceVersion=3&") {
            // One run: a good event, then an event and a bookmark with no version; the
            // watch then ends and the reflector watches again from its version.
            return Reply::WatchEnd(vec![
                event("ADDED", &pod_json("b", "5")),
                event("ADDED", &pod_json("c", "")),
                event(
                    "BOOKMARK",
                    r#"{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":""}}"#,
                ),
            ]);
        }
        Reply::WatchHold(Vec::new())
    });
    let r = reflector(&server);
    let requests = server.wait_for_requests(3);
    let rewatch = &requests[2];
    assert!(
        is_watch(rewatch) && rewatch.contains("resourceVersion=5&"),
        "the rewatch starts from the run's last good version: {requests:?}"
    );
    assert_eq!(r.last_sync_resource_version(), "5");
    r.stop();
}

#[test]
fn too_large_resource_version_relists_consistently() {
    let too_large = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Too large resource version: 100, current: 90","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":1},"code":504}"#;
    let lists = Arc::new(Mutex::new(0usize));
    let server = Scripted::start(move |_, path| {
        if is_watch(path) {
            if path.contains("resourceVersion=100&") {
                let gone = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 100 (95)","reason":"Expired","code":410}"#;
                return Reply::WatchEnd(vec![event("ERROR", gone)]);
            }
            return Reply::WatchHold(Vec::new());
        }
        let n = {
            let mut l = lists.lock();
            *l += 1;
            *l
        };
        match n {
            1 => Reply::Full(200, list_json("100", &[pod_json("a", "100")], None)),
            // The relist at the last version meets a server whose cache is behind it.
            2 => Reply::Full(504, too_large.to_owned()),
            _ => Reply::Full(200, list_json("101", &[pod_json("a", "101")], None)),
        }
    });
    let r = reflector(&server);
    assert_relist_then_consistent(&server.wait_for_requests(4), "resourceVersion=100");
    r.stop();
}

/// The second list of `requests` carries `relist_has`; the third is a consistent list (no
/// version), not the same request again.
fn assert_relist_then_consistent(requests: &[String], relist_has: &str) {
    let lists: Vec<&String> = requests.iter().filter(|p| !is_watch(p)).collect();
    assert!(lists.len() >= 3, "{requests:?}");
    assert!(
        lists[1].contains(relist_has),
        "first {relist_has}: {requests:?}"
    );
    assert!(
        !lists[2].contains("resourceVersion"),
        "then a consistent list (resourceVersion \"\"): {requests:?}"
    );
}

fn gone(rv: &str) -> String {
    format!(
        r#"{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":"too old resource version: {rv} ({rv}1)","reason":"Expired","code":410}}"#
    )
}

#[test]
fn a_relist_no_newer_than_the_failed_watch_is_followed_by_a_consistent_list() {
    let lists = Arc::new(Mutex::new(0usize));
    let server = Scripted::start(move |_, path| {
        if is_watch(path) {
            if path.contains("resourceVersion=10&") {
                return Reply::WatchEnd(vec![event("ERROR", &gone("10"))]);
            }
            return Reply::WatchHold(Vec::new());
        }
        let n = {
            let mut l = lists.lock();
            *l += 1;
            *l
        };
        match n {
            1 => Reply::Full(200, list_json("10", &[pod_json("a", "10")], None)),
            // The relist "at least as fresh as 10" answers an older state (a proxy's stale
            // cache, a lagging server): none of it may reach the FIFO.
            2 => Reply::Full(200, list_json("9", &[pod_json("zombie", "9")], None)),
            _ => Reply::Full(200, list_json("12", &[pod_json("a", "12")], None)),
        }
    });
    let fifo = Arc::new(DeltaFifo::new(None));
    let r = reflector_into(&server, Arc::clone(&fifo));
    let requests = server.wait_for_requests(5);
    let lists: Vec<&String> = requests.iter().filter(|p| !is_watch(p)).collect();
    assert!(
        lists[1].contains("resourceVersion=10")
            && lists[1].contains("resourceVersionMatch=NotOlderThan"),
        "the relist is at least as fresh as the failed version: {requests:?}"
    );
    assert!(
        !lists[2].contains("resourceVersion"),
        "then a consistent list, not a watch from the same version: {requests:?}"
    );
    assert!(
        requests[4].contains("watch=1") && requests[4].contains("resourceVersion=12&"),
        "and a watch from the consistent list's version: {requests:?}"
    );
    assert_eq!(r.stats().relists.get(&RelistCause::StaleList), Some(&1));
    assert_eq!(
        fifo.queued_keys(),
        ["lab/a"],
        "the stale list handed nothing over"
    );
    r.stop();
}

/// After a watch error that is not a 410 (here a garbage line), a list at least as fresh
/// that answers the same version is fine: nothing changed, and the watch goes on from there.
#[test]
fn after_a_garbage_line_the_same_version_is_not_stale() {
    let watches = Arc::new(Mutex::new(0usize));
    let server = Scripted::start(move |_, path| {
        if is_watch(path) {
            let n = {
                let mut w = watches.lock();
                *w += 1;
                *w
            };
            if n == 1 {
                return Reply::WatchEnd(vec!["this is not JSON {".to_owned()]);
            }
            return Reply::WatchHold(Vec::new());
        }
        Reply::Full(200, list_json("10", &[pod_json("a", "10")], None))
    });
    let r = reflector(&server);
    let requests = server.wait_for_requests(4);
    assert!(
        requests[2].contains("resourceVersionMatch=NotOlderThan") && is_watch(&requests[3]),
        "{requests:?}"
    );
    assert!(requests[3].contains("resourceVersion=10&"), "{requests:?}");
    assert_eq!(r.stats().relists.get(&RelistCause::StaleList), None);
    r.stop();
}

/// A server (or proxy) that refuses `resourceVersionMatch` (422) gets a consistent list at
/// once instead of the same refused request again and again.
#[test]
fn a_refused_not_older_than_list_falls_back_to_a_consistent_list() {
    let invalid = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"resourceVersionMatch: Unsupported value","reason":"Invalid","code":422}"#;
    let server = Scripted::start(move |_, path| {
        if is_watch(path) {
            if path.contains("resourceVersion=10&") {
                return Reply::WatchEnd(vec![event("ERROR", &gone("10"))]);
            }
            return Reply::WatchHold(Vec::new());
        }
        if path.contains("resourceVersionMatch") {
            return Reply::Full(422, invalid.to_owned());
        }
        if path.contains("resourceVersion=") {
            return Reply::Full(500, "{}".to_owned());
        }
        Reply::Full(200, list_json("10", &[pod_json("a", "10")], None))
    });
    let r = reflector(&server);
    assert_relist_then_consistent(
        &server.wait_for_requests(4),
        "resourceVersionMatch=NotOlderThan",
    );
    r.stop();
}

/// A server that refuses every watch with 410 right after every list: the relist that
/// follows a list this recent waits on the back-off (here an hour: nothing more comes).
#[test]
fn list_watch_410_cycles_back_off_instead_of_looping() {
    let server = Scripted::start(|_, path| {
        if is_watch(path) {
            Reply::WatchEnd(vec![event("ERROR", &gone("10"))])
        } else {
            Reply::Full(200, list_json("10", &[pod_json("a", "10")], None))
        }
    });
    let api: Api<DynamicObject> =
        Api::all_with(Client::new(server.client_config()).unwrap(), &pods());
    let fifo = Arc::new(DeltaFifo::new(None));
    let config =
        ReflectorConfig::new().backoff(Duration::from_secs(3600), Duration::from_secs(3600));
    let r = Reflector::start(api, fifo, config).unwrap();
    let requests = server.wait_for_requests(2);
    assert!(
        !is_watch(&requests[0]) && is_watch(&requests[1]),
        "{requests:?}"
    );
    wait_until("the 410 is handled", || r.consecutive_failures() == 1);
    // Without the back-off the next list and watch would follow at once, and again.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(server.requests().len(), 2, "{:?}", server.requests());
    r.stop();
}

/// How the server behind a load balancer answers the retry of a relist that failed part way.
#[derive(Clone, Copy, Debug, PartialEq)]
enum RetryAnswer {
    /// A lagging server (or proxy) that ignores the version asked for: the state at 105,
    /// older than the pages already handed over (at 120), without `x`.
    OlderIgnoringTheAsk,
    /// A lagging kube-apiserver asked for a version it has not reached: 504, too large.
    OlderTooLarge,
    /// The same version as the pages handed over.
    Equal,
    /// A newer version.
    Newer,
}

/// The HA case: the watch from 100 gets 410; the relist "at least as fresh as 100" is
/// answered at 120 in three pages, `x` (created at 110) on the first, and fails at page
/// `fail_at` (500). Whatever the retry meets, `x` is never deleted: no answer older than
/// the pages handed over replaces them.
fn partial_relist_then(fail_at: usize, answer: RetryAnswer) {
    let consistent = Arc::new(Mutex::new(0usize));
    let relists = Arc::new(Mutex::new(0usize));
    let server = Scripted::start(move |_, path| {
        let item = |n: &str, rv: &str| pod_json(n, rv);
        if is_watch(path) {
            if path.contains("resourceVersion=100&") {
                return Reply::WatchEnd(vec![event("ERROR", &gone("100"))]);
            }
            return Reply::WatchHold(Vec::new());
        }
        let whole_at = |rv: &str| {
            let items = [
                item("a", "1"),
                item("b", "2"),
                item("c", "3"),
                item("x", "110"),
            ];
            Reply::Full(200, list_json(rv, &items, None))
        };
        if let Some(page) = path.split("continue=").nth(1) {
            let page: usize = page[1..2].parse().unwrap();
            if page == fail_at {
                return Reply::Full(500, "{}".to_owned());
            }
            return match page {
                2 => Reply::Full(200, list_json("120", &[item("b", "2")], Some(("p3", "1")))),
                _ => Reply::Full(200, list_json("120", &[item("c", "3")], None)),
            };
        }
        if !path.contains("resourceVersion") {
            // The first list, the probe, then any consistent list: the present at 130.
            let n = {
                let mut c = consistent.lock();
                *c += 1;
                *c
            };
            if n == 1 {
                let items = [item("a", "1"), item("b", "2"), item("c", "3")];
                return Reply::Full(200, list_json("100", &items, None));
            }
            return whole_at("130");
        }
        let n = {
            let mut r = relists.lock();
            *r += 1;
            *r
        };
        if n == 1 {
            if fail_at == 1 {
                return Reply::Full(500, "{}".to_owned());
            }
            return Reply::Full(
                200,
                list_json(
                    "120",
                    &[item("a", "1"), item("x", "110")],
                    Some(("p2", "2")),
                ),
            );
        }
        match answer {
            RetryAnswer::OlderIgnoringTheAsk => {
                let items = [item("a", "1"), item("b", "2"), item("c", "3")];
                Reply::Full(200, list_json("105", &items, None))
            }
            RetryAnswer::OlderTooLarge => Reply::Full(
                504,
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: Too large resource version: 120, current: 105","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":1},"code":504}"#.to_owned(),
            ),
            RetryAnswer::Equal => whole_at("120"),
            RetryAnswer::Newer => whole_at("125"),
        }
    });
    let fifo = Arc::new(DeltaFifo::new(None));
    let r = reflector_into(&server, Arc::clone(&fifo));
    let case = format!("failure at page {fail_at}, retry answered {answer:?}");
    // Done once it watches from a version past the 410.
    let deadline = Instant::now() + PATIENCE;
    let requests = loop {
        let requests = server.requests();
        let watching_on = requests
            .iter()
            .skip(2)
            .any(|p| is_watch(p) && !p.contains("resourceVersion=100&"));
        if watching_on {
            break requests;
        }
        assert!(Instant::now() < deadline, "{case}: {requests:?}");
        std::thread::sleep(Duration::from_millis(10));
    };
    let x_deleted = fifo
        .deltas_of("lab/x")
        .unwrap_or_default()
        .iter()
        .any(|d| matches!(d, kube_informer::cache::Delta::Deleted(_)));
    assert!(!x_deleted, "{case}: x was announced deleted: {requests:?}");
    let retried: Vec<&String> = requests
        .iter()
        .filter(|p| p.contains("resourceVersionMatch=NotOlderThan"))
        .collect();
    assert!(retried.len() >= 2, "{case}: {requests:?}");
    let asked = if fail_at == 1 { "100" } else { "120" };
    assert!(
        retried[1].contains(&format!("resourceVersion={asked}&")),
        "{case}: the retry asks for at least what was handed over ({asked}): {requests:?}"
    );
    let watch = requests.iter().rev().find(|p| is_watch(p)).unwrap();
    let from: u64 = watch
        .split("resourceVersion=")
        .nth(1)
        .and_then(|v| v.split('&').next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    if fail_at > 1 {
        assert!(from >= 120, "{case}: watching from {from}: {requests:?}");
    }
    r.stop();
}

#[test]
fn a_relist_retried_after_a_partial_failure_never_travels_back() {
    for fail_at in 1..=3 {
        for answer in [
            RetryAnswer::OlderIgnoringTheAsk,
            RetryAnswer::OlderTooLarge,
            RetryAnswer::Equal,
            RetryAnswer::Newer,
        ] {
            partial_relist_then(fail_at, answer);
        }
    }
}

/// A server restored from a backup: its versions are behind the informer's. A watch from the
/// informer's version is answered 200 and then nothing (`silent`, as captured from
/// kube-apiserver 1.36: `watch-future-resourceversion*.jsonl`), or refused as too large. The
/// probe of the server's present version finds it behind, and a consistent list replaces the
/// cache: `a` changed, `b` gone, `c` new.
fn restored_behind(silent: bool) {
    let fresh = Arc::new(Mutex::new(0usize));
    let server = Scripted::start(move |_, path| {
        if is_watch(path) {
            if path.contains("resourceVersion=500&") && !silent {
                let too_large = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: Too large resource version: 500, current: 300","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":1},"code":504}"#;
                return Reply::WatchEnd(vec![event("ERROR", too_large)]);
            }
            return Reply::WatchHold(Vec::new());
        }
        if path.split(['?', '&']).any(|p| p == "limit=1") {
            return Reply::Full(200, list_json("300", &[pod_json("a", "200")], None));
        }
        let n = {
            let mut f = fresh.lock();
            *f += 1;
            *f
        };
        if n == 1 {
            let items = [pod_json("a", "400"), pod_json("b", "450")];
            return Reply::Full(200, list_json("500", &items, None));
        }
        let items = [pod_json("a", "200"), pod_json("c", "250")];
        Reply::Full(200, list_json("301", &items, None))
    });
    let api: Api<DynamicObject> =
        Api::all_with(Client::new(server.client_config()).unwrap(), &pods());
    let fifo = Arc::new(DeltaFifo::new(None));
    let config = ReflectorConfig::new()
        .backoff(Duration::from_millis(50), Duration::from_millis(200))
        .watch_idle_timeout(Duration::from_secs(1));
    let r = Reflector::start(api, Arc::clone(&fifo), config).unwrap();
    wait_until("the relist from scratch", || {
        r.stats().relists.get(&RelistCause::ServerBehind) == Some(&1)
            && r.last_sync_resource_version() == "301"
    });
    wait_until("a watch from the restored server's version", || {
        server
            .requests()
            .iter()
            .any(|p| is_watch(p) && p.contains("resourceVersion=301&"))
    });
    let error = r.last_error().expect("the health view says why");
    assert!(
        error.message.contains("300") && error.message.contains("older than 500"),
        "{}",
        error.message
    );
    let last = |key: &str| fifo.deltas_of(key).unwrap_or_default().pop();
    assert!(matches!(
        last("lab/b"),
        Some(kube_informer::cache::Delta::Deleted(_))
    ));
    assert!(
        matches!(last("lab/a"), Some(kube_informer::cache::Delta::Replaced(a)) if a.metadata.resource_version() == "200")
    );
    assert!(matches!(
        last("lab/c"),
        Some(kube_informer::cache::Delta::Replaced(_))
    ));
    r.stop();
}

#[test]
fn a_server_restored_behind_us_is_found_by_a_silent_watch() {
    restored_behind(true);
}

#[test]
fn a_server_restored_behind_us_is_found_by_a_too_large_watch() {
    restored_behind(false);
}

/// kube-apiserver's watch cache, when it cannot catch up within 3 s, answers a consistent
/// list (`streaming`: a streaming list's ERROR event; else the paged list's 504) "too large".
/// The reflector probes the server's version once and then waits its back-off (here an
/// hour) before listing again: not the same list again at once, thousands of times.
fn a_fresh_list_answered_too_large_backs_off(streaming: bool) {
    let too_large = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: Too large resource version: 7, current: 5","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":1},"code":504}"#;
    let server = Scripted::start(move |_, path| {
        if path.split(['?', '&']).any(|p| p == "limit=1") {
            return Reply::Full(200, list_json("5", &[pod_json("a", "5")], None));
        }
        if is_watch(path) {
            if path.contains("sendInitialEvents=true") {
                return Reply::WatchEnd(vec![event("ERROR", too_large)]);
            }
            return Reply::WatchHold(Vec::new());
        }
        Reply::Full(504, too_large.to_owned())
    });
    let api: Api<DynamicObject> =
        Api::all_with(Client::new(server.client_config()).unwrap(), &pods());
    let config = ReflectorConfig::new()
        .streaming_list(streaming)
        .backoff(Duration::from_secs(3600), Duration::from_secs(3600));
    let r = Reflector::start(api, Arc::new(DeltaFifo::new(None)), config).unwrap();
    let requests = server.wait_for_requests(2);
    assert_eq!(
        requests[0].contains("sendInitialEvents=true"),
        streaming,
        "{requests:?}"
    );
    assert!(requests[1].contains("limit=1"), "the probe: {requests:?}");
    wait_until("the failure is reported", || r.consecutive_failures() >= 1);
    // Without the back-off the same list and probe would follow at once, again and again.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(server.requests().len(), 2, "{:?}", server.requests());
    assert_eq!(r.stats().list_failures, 1);
    r.stop();
}

#[test]
fn a_streaming_list_answered_too_large_backs_off() {
    a_fresh_list_answered_too_large_backs_off(true);
}

#[test]
fn a_consistent_list_answered_too_large_backs_off() {
    a_fresh_list_answered_too_large_backs_off(false);
}
