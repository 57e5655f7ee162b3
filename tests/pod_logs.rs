//! Pod logs over loopback HTTP against `testing::ApiServer`: the captured answers
//! (`tests/fixtures/pod-io/logs-*.json`), the typed errors, tail/since/limit, long lines,
//! and the follow that resumes after a dropped stream without losing or repeating a line.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use kube_informer::api::{ApiResource, DynamicObject};
use kube_informer::pod::{LogLine, LogParams, LogTime, PodError};
use kube_informer::testing::ApiServer;
use kube_informer::{Api, Client};
use serde_json::Value;

use common::PATIENCE;

fn pods(server: &ApiServer, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(
        Client::new(server.client_config()).unwrap(),
        ns,
        &ApiResource::new("", "v1", "Pod", "pods", true),
    )
}

/// The pods of the captures: `p` (container `main`), `p2` (`a`, `b`), `nonode`.
fn lab() -> ApiServer {
    let server = ApiServer::start();
    server.add_pod("io-lab", "p", &["main"]).unwrap();
    server.add_pod("io-lab", "p2", &["a", "b"]).unwrap();
    server
        .add_pod_on("io-lab", "nonode", "", serde_json::json!({}))
        .unwrap();
    server
}

fn wait_until(what: &str, f: impl Fn() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A raw `GET`: status code, headers (lower-case names), de-chunked body.
fn raw_get(server: &ApiServer, path: &str) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let mut s = TcpStream::connect(server.addr()).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let split = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8(all[..split].to_vec()).unwrap();
    let mut body = all[split + 4..].to_vec();
    let mut lines = head.lines();
    let code = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_ascii_lowercase(), v.to_owned()))
        .collect();
    if headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v == "chunked")
    {
        let mut out = Vec::new();
        let mut rest = &body[..];
        loop {
            let eol = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let n = usize::from_str_radix(std::str::from_utf8(&rest[..eol]).unwrap(), 16).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&rest[eol + 2..eol + 2 + n]);
            rest = &rest[eol + 4 + n..];
        }
        body = out;
    }
    (code, headers, body)
}

/// The captured response of a fixture: code, content type, body text.
fn captured(name: &str) -> (u16, Option<String>, String) {
    let v: Value =
        serde_json::from_slice(&common::fixture(&format!("pod-io/{name}.json"))).unwrap();
    let code = v["response"]["status"].as_u64().unwrap() as u16;
    let ct = v["response"]["headers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h[0] == "Content-Type")
        .map(|h| h[1].as_str().unwrap().to_owned());
    let mut body = String::new();
    for c in v["response"]["body_chunks"].as_array().unwrap() {
        if let Some(t) = c["chunk"]["text"].as_str().or(c["body"]["text"].as_str()) {
            body.push_str(t);
        }
    }
    (code, ct, body)
}

#[test]
fn errors_are_answered_as_captured() {
    let server = lab();
    for (fixture, path) in [
        ("logs-multicontainer-no-container", "/api/v1/namespaces/io-lab/pods/p2/log"),
        ("logs-unknown-container", "/api/v1/namespaces/io-lab/pods/p/log?container=nope"),
        ("logs-previous", "/api/v1/namespaces/io-lab/pods/p/log?previous=true"),
        ("logs-pod-not-found", "/api/v1/namespaces/io-lab/pods/nosuchpod/log"),
        ("logs-invalid-tailLines", "/api/v1/namespaces/io-lab/pods/p/log?tailLines=-1"),
        (
            "logs-sinceSeconds-and-sinceTime",
            "/api/v1/namespaces/io-lab/pods/p/log?sinceSeconds=5&sinceTime=2026-11-26T11%3A50%3A13Z",
        ),
        ("logs-stream-stderr", "/api/v1/namespaces/io-lab/pods/p/log?stream=Stderr"),
        ("logs-pod-without-node", "/api/v1/namespaces/io-lab/pods/nonode/log"),
    ] {
        let (want_code, want_ct, want_body) = captured(fixture);
        let (code, headers, body) = raw_get(&server, path);
        assert_eq!(code, want_code, "{fixture}");
        let ct = headers
            .iter()
            .find(|(k, _)| k == "content-type")
            .map(|(_, v)| v.clone());
        assert_eq!(ct, want_ct, "{fixture}: content type");
        if want_body.is_empty() {
            assert!(body.is_empty(), "{fixture}: a body where none was captured");
        } else {
            let want: Value = serde_json::from_str(&want_body).unwrap();
            let got: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(got, want, "{fixture}");
        }
    }
}

#[test]
fn choices_are_typed_errors() {
    let server = lab();
    let api = pods(&server, "io-lab");
    let e = api.logs("p2", &LogParams::default()).unwrap_err();
    assert_eq!(
        e.pod_error(),
        Some(&PodError::ContainerRequired {
            pod: "p2".into(),
            containers: vec!["a".into(), "b".into()],
            init_containers: vec![],
        })
    );
    assert_eq!(e.code(), Some(400));
    let e = api
        .logs("p", &LogParams::default().container("nope"))
        .unwrap_err();
    assert!(
        matches!(e.pod_error(), Some(PodError::UnknownContainer { container, .. }) if container == "nope")
    );
    let e = api.logs("p", &LogParams::default().previous()).unwrap_err();
    assert!(
        matches!(e.pod_error(), Some(PodError::NoPreviousContainer { container, .. }) if container == "main")
    );
    let e = api.logs("nonode", &LogParams::default()).unwrap_err();
    assert_eq!(
        e.pod_error(),
        Some(&PodError::NotScheduled {
            pod: "nonode".into()
        })
    );
    let e = api
        .log_stream("nonode", &LogParams::default().follow())
        .unwrap_err();
    assert!(matches!(e.pod_error(), Some(PodError::NotScheduled { .. })));
    let e = api.logs("nosuchpod", &LogParams::default()).unwrap_err();
    assert!(e.is_not_found() && e.pod_error().is_none());
    // The container's previous instance, once there is one.
    server.set_previous_log("io-lab", "p", "main", &["before the restart"]);
    assert_eq!(
        api.logs("p", &LogParams::default().previous()).unwrap(),
        "before the restart\n"
    );
}

fn at(s: &str) -> LogTime {
    LogTime::parse(s).unwrap()
}

/// The captured lines with their captured times (`logs-timestamps.json`).
fn captured_lines(server: &ApiServer) {
    for (t, l) in [
        ("2026-11-26T11:50:12.993384413Z", "capture line 2"),
        ("2026-11-26T11:50:13.023312839Z", "capture line 3"),
        ("2026-11-26T11:50:13.053628887Z", "capture err line"),
    ] {
        server.append_log_at("io-lab", "p", "main", at(t), l);
    }
}

#[test]
fn tail_since_limit_and_timestamps_filter_as_captured() {
    let server = lab();
    captured_lines(&server);
    let api = pods(&server, "io-lab");
    let read = |p: LogParams| api.logs("p", &p).unwrap();
    assert_eq!(
        read(LogParams::default()),
        "capture line 2\ncapture line 3\ncapture err line\n"
    );
    assert_eq!(
        read(LogParams::default().tail_lines(2)),
        "capture line 3\ncapture err line\n"
    );
    assert_eq!(read(LogParams::default().tail_lines(0)), "");
    assert_eq!(read(LogParams::default().limit_bytes(5)), "captu");
    assert_eq!(
        read(LogParams::default().timestamps().tail_lines(3)),
        "2026-11-26T11:50:12.993384413Z capture line 2\n2026-11-26T11:50:13.023312839Z capture line 3\n2026-11-26T11:50:13.053628887Z capture err line\n"
    );
    // sinceTime reaches the kubelet at whole seconds: a time within 11:50:13 gives every
    // line of that second, the ones before the given nanoseconds included.
    let since = |s: &str| read(LogParams::default().since_time(at(s).to_system_time()));
    assert_eq!(
        since("2026-11-26T11:50:13Z"),
        "capture line 3\ncapture err line\n"
    );
    assert_eq!(
        since("2026-11-26T11:50:13.053628887Z"),
        "capture line 3\ncapture err line\n"
    );
    // sinceSeconds: only what is recent.
    server.append_log("io-lab", "p", "main", "line within the last second");
    assert_eq!(
        read(LogParams::default().since_seconds(60)),
        "line within the last second\n"
    );
    let p = LogParams::default()
        .since_seconds(1)
        .since_time(std::time::SystemTime::now());
    let e = api.logs("p", &p).unwrap_err();
    assert!(e.is_invalid(), "{e}");
}

fn text(line: Option<kube_informer::Result<LogLine>>) -> String {
    line.expect("a line")
        .expect("not an error")
        .text()
        .into_owned()
}

#[test]
fn stream_splits_long_lines_and_keeps_blank_ones() {
    let server = lab();
    server.append_log("io-lab", "p", "main", "0123456789abcdefghij\n\nend");
    let api = pods(&server, "io-lab");
    let lines: Vec<LogLine> = api
        .log_stream("p", &LogParams::default().max_line(8))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let shown: Vec<(String, bool)> = lines
        .iter()
        .map(|l| (l.text().into_owned(), l.partial))
        .collect();
    assert_eq!(
        shown,
        [
            ("01234567".to_owned(), true),
            ("89abcdef".to_owned(), true),
            ("ghij".to_owned(), false),
            (String::new(), false),
            ("end".to_owned(), false),
        ]
    );
}

/// The heart of it: a follow dropped mid-second, with several lines in that second (two of
/// them identical, to the nanosecond), resumes with no line lost and none repeated.
#[test]
fn follow_resumes_after_a_drop_without_loss_or_repeat() {
    let server = lab();
    let s = "2026-11-26T11:50:13";
    let put =
        |t: &str, l: &str| server.append_log_at("io-lab", "p", "main", at(&format!("{s}.{t}Z")), l);
    put("100000000", "one");
    put("200000000", "two");
    put("300000000", "same");
    put("300000000", "same");
    let api = pods(&server, "io-lab");
    let mut lines = api.log_stream("p", &LogParams::default().follow()).unwrap();
    let mut got = Vec::new();
    for _ in 0..4 {
        got.push(text(lines.next()));
    }
    wait_until("the follow is served", || server.log_streams_open() == 1);
    // The kubelet restarts; meanwhile the container writes more in the same second: a third
    // identical line at the same nanosecond, then others.
    server.drop_log_streams();
    put("300000000", "same");
    put("400000000", "four");
    put("999999999", "end of second");
    server.append_log_at(
        "io-lab",
        "p",
        "main",
        at("2026-11-26T11:50:14.5Z"),
        "next second",
    );
    for _ in 0..4 {
        got.push(text(lines.next()));
    }
    assert_eq!(
        got,
        [
            "one",
            "two",
            "same",
            "same",
            "same",
            "four",
            "end of second",
            "next second"
        ]
    );
    assert!(lines.reconnects() >= 1);
    // It asked again from the last line's whole second, with timestamps.
    let resumed = server
        .requests()
        .into_iter()
        .filter(|r| r.contains("/pods/p/log"))
        .nth(1)
        .expect("a second log request");
    assert!(
        resumed.contains("sinceTime=2026-11-26T11")
            && resumed.contains("13Z")
            && resumed.contains("timestamps=true"),
        "{resumed}"
    );
    // A second drop while idle, then the container ends: the stream ends, nothing repeated.
    wait_until("the follow is served again", || {
        server.log_streams_open() == 1
    });
    server.drop_log_streams();
    server.append_log_at("io-lab", "p", "main", at("2026-11-26T11:50:14.5Z"), "last");
    server.terminate_container("io-lab", "p", "main", 0);
    assert_eq!(text(lines.next()), "last");
    assert!(lines.next().is_none());
}

#[test]
fn follow_resumes_when_lines_were_buffered_but_not_delivered() {
    let server = lab();
    for (i, l) in ["a", "b", "c", "d", "e"].iter().enumerate() {
        server.append_log_at(
            "io-lab",
            "p",
            "main",
            at(&format!("2026-11-26T11:50:13.{}Z", i + 1)),
            l,
        );
    }
    let api = pods(&server, "io-lab");
    let mut lines = api.log_stream("p", &LogParams::default().follow()).unwrap();
    let mut got = vec![text(lines.next()), text(lines.next())];
    wait_until("the follow is served", || server.log_streams_open() == 1);
    server.drop_log_streams();
    server.append_log_at("io-lab", "p", "main", at("2026-11-26T11:50:13.9Z"), "f");
    server.terminate_container("io-lab", "p", "main", 0);
    got.extend(lines.by_ref().map(|l| l.unwrap().text().into_owned()));
    assert_eq!(got, ["a", "b", "c", "d", "e", "f"]);
}

#[test]
fn resumed_follow_keeps_the_callers_choices() {
    let server = lab();
    let t = at("2026-11-26T11:50:13.5Z");
    server.append_log_at("io-lab", "p", "main", t, "old");
    server.append_log_at("io-lab", "p", "main", t, "kept");
    let api = pods(&server, "io-lab");
    // Timestamps not asked for: stripped, though used inside.
    let mut lines = api
        .log_stream("p", &LogParams::default().follow().tail_lines(1))
        .unwrap();
    let first = lines.next().unwrap().unwrap();
    assert_eq!(first.text(), "kept");
    assert_eq!(first.timestamp, Some(t));
    // Asked for: kept, as kubectl prints them.
    let mut stamped = api
        .log_stream(
            "p",
            &LogParams::default().follow().tail_lines(1).timestamps(),
        )
        .unwrap();
    assert_eq!(text(stamped.next()), "2026-11-26T11:50:13.500000000Z kept");
    stamped.stopper().stop();
    assert!(stamped.next().is_none());
    // limitBytes over a resumed follow: applied by the stream, across the drop.
    let mut limited = api
        .log_stream("p", &LogParams::default().follow().limit_bytes(8))
        .unwrap();
    assert_eq!(text(limited.next()), "old");
    assert_eq!(text(limited.next()), "kept");
    assert!(limited.next().is_none(), "8 bytes: \"old\\n\" and \"kept\"");
    drop(lines);
}

#[test]
fn follow_ends_when_the_container_terminates() {
    let server = lab();
    server.append_log("io-lab", "p2", "b", "from b");
    let api = pods(&server, "io-lab");
    let mut lines = api
        .log_stream("p2", &LogParams::default().container("b").follow())
        .unwrap();
    assert_eq!(text(lines.next()), "from b");
    server.append_log("io-lab", "p2", "b", "bye");
    server.terminate_container("io-lab", "p2", "b", 3);
    assert_eq!(text(lines.next()), "bye");
    assert!(lines.next().is_none());
    assert_eq!(lines.reconnects(), 0);
}

#[test]
fn without_resume_a_drop_ends_the_follow_like_kubectl() {
    let server = lab();
    server.append_log("io-lab", "p", "main", "x");
    let api = pods(&server, "io-lab");
    let mut lines = api
        .log_stream("p", &LogParams::default().follow().no_resume())
        .unwrap();
    assert_eq!(text(lines.next()), "x");
    wait_until("the follow is served", || server.log_streams_open() == 1);
    server.drop_log_streams();
    server.append_log("io-lab", "p", "main", "y");
    let rest: Vec<_> = lines.by_ref().collect();
    assert!(rest.iter().all(|r| r.is_err()), "no line after the drop");
    assert!(lines.next().is_none());
}

#[test]
fn a_follow_stops_from_another_thread_and_with_the_clients_token() {
    let server = lab();
    let api = pods(&server, "io-lab");
    let mut lines = api.log_stream("p", &LogParams::default().follow()).unwrap();
    let stopper = lines.stopper();
    let t = std::thread::spawn(move || lines.next().is_none());
    wait_until("the follow is served", || server.log_streams_open() == 1);
    stopper.stop();
    assert!(t.join().unwrap());

    let cancel = kube_informer::client::Cancel::new();
    let client = Client::new(server.client_config())
        .unwrap()
        .with_cancel(cancel.clone());
    let api: Api<DynamicObject> = Api::namespaced_with(
        client,
        "io-lab",
        &ApiResource::new("", "v1", "Pod", "pods", true),
    );
    let mut lines = api.log_stream("p", &LogParams::default().follow()).unwrap();
    let t = std::thread::spawn(move || lines.next().is_none());
    wait_until("the follow is served", || server.log_streams_open() == 1);
    cancel.cancel();
    assert!(t.join().unwrap());
}

#[test]
fn follow_retries_through_an_apiserver_restart() {
    let server = lab();
    server.append_log("io-lab", "p", "main", "before");
    let api = pods(&server, "io-lab");
    let mut lines = api.log_stream("p", &LogParams::default().follow()).unwrap();
    assert_eq!(text(lines.next()), "before");
    wait_until("the follow is served", || server.log_streams_open() == 1);
    server.go_down();
    server.append_log("io-lab", "p", "main", "while down");
    server.come_back().unwrap();
    assert_eq!(text(lines.next()), "while down");
    assert!(lines.reconnects() >= 1);
}

/// Reads a stream to its end on another thread, bounded by `PATIENCE`: a stream that never
/// ends is stopped and the test fails (rather than hangs).
fn to_the_end(lines: kube_informer::pod::LogStream) -> Vec<String> {
    let stopper = lines.stopper();
    let (tx, rx) = std::sync::mpsc::channel();
    let t = std::thread::spawn(move || {
        let mut lines = lines;
        let got: Vec<String> = lines
            .by_ref()
            .map(|l| l.expect("not an error").text().into_owned())
            .collect();
        let _ = tx.send(());
        (got, lines.reconnects())
    });
    let ended = rx.recv_timeout(PATIENCE).is_ok();
    stopper.stop();
    let (got, reconnects) = t.join().unwrap();
    assert!(
        ended,
        "the stream never ended ({reconnects} reconnects); it had read {got:?}"
    );
    got
}

/// `printf done` then exit: the last line has no newline. kubectl prints it; so do the
/// whole read, the follow that sees it come, and the last read after the follow ended.
#[test]
fn a_last_line_without_newline_is_not_lost() {
    let server = lab();
    server.append_log("io-lab", "p", "main", "one");
    let api = pods(&server, "io-lab");
    // In the follow: "done" comes unterminated, then the body ends.
    let mut lines = api.log_stream("p", &LogParams::default().follow()).unwrap();
    assert_eq!(text(lines.next()), "one");
    server.write_log("io-lab", "p", "main", "done");
    server.terminate_container("io-lab", "p", "main", 0);
    assert_eq!(to_the_end(lines), ["done"]);
    assert_eq!(api.logs("p", &LogParams::default()).unwrap(), "one\ndone");

    // In the last read: written after the follow's body ended (the kubelet's race).
    server.add_pod("io-lab", "q", &["main"]).unwrap();
    server.append_log("io-lab", "q", "main", "one");
    let mut lines = api
        .log_stream("q", &LogParams::default().follow().timestamps())
        .unwrap();
    assert!(text(lines.next()).ends_with("Z one"));
    server.terminate_container("io-lab", "q", "main", 0);
    wait_until("the follow is over", || server.log_streams_open() == 0);
    server.write_log("io-lab", "q", "main", "two\ndone");
    let rest = to_the_end(lines);
    assert_eq!(rest.len(), 2, "{rest:?}");
    assert!(
        rest[0].ends_with("Z two") && rest[1].ends_with("Z done"),
        "{rest:?}"
    );
}

/// `kubectl logs -p -f`: the previous instance is over, so its log ends; it is read once.
#[test]
fn a_follow_of_the_previous_instance_ends() {
    let server = lab();
    server.set_previous_log("io-lab", "p", "main", &["old 1", "old 2"]);
    server.append_log("io-lab", "p", "main", "current");
    let api = pods(&server, "io-lab");
    let lines = api
        .log_stream("p", &LogParams::default().previous().follow())
        .unwrap();
    assert_eq!(to_the_end(lines), ["old 1", "old 2"]);
    let reads = server
        .requests()
        .into_iter()
        .filter(|r| r.contains("/pods/p/log"))
        .count();
    assert_eq!(reads, 1, "no reconnect to a log that cannot grow");
}

/// `kubectl debug`: an ephemeral container's status is in `ephemeralContainerStatuses`.
#[test]
fn a_follow_of_an_ephemeral_container_ends_when_it_exits() {
    let server = lab();
    server
        .add_pod_on(
            "io-lab",
            "dbg",
            "lab-node",
            serde_json::json!({
                "spec": {"ephemeralContainers": [{"name": "debugger", "image": "busybox"}]},
                "status": {"ephemeralContainerStatuses": [{"name": "debugger", "ready": false,
                    "restartCount": 0, "state": {"running": {"startedAt": "2026-11-26T11:48:00Z"}}}]}
            }),
        )
        .unwrap();
    server.append_log("io-lab", "dbg", "debugger", "debugging");
    let api = pods(&server, "io-lab");
    let mut lines = api
        .log_stream("dbg", &LogParams::default().container("debugger").follow())
        .unwrap();
    assert_eq!(text(lines.next()), "debugging");
    server.append_log("io-lab", "dbg", "debugger", "bye");
    server.terminate_container("io-lab", "dbg", "debugger", 0);
    assert_eq!(to_the_end(lines), ["bye"]);
}

/// A drop during the last read after the container ended is a drop like any other: read
/// again, never an end that loses the rest.
#[test]
fn a_drop_during_the_last_read_reads_again() {
    let server = lab();
    server.append_log("io-lab", "p", "main", "a");
    let api = pods(&server, "io-lab");
    let mut lines = api.log_stream("p", &LogParams::default().follow()).unwrap();
    assert_eq!(text(lines.next()), "a");
    server.terminate_container("io-lab", "p", "main", 0);
    wait_until("the follow is over", || server.log_streams_open() == 0);
    // Written after the follow's body ended (the kubelet's race): only the last read has it,
    // and that read is cut inside "b".
    server.append_log("io-lab", "p", "main", "b\nc");
    let a_line = "2026-11-26T11:50:12.993384413Z a\n".len();
    server.cut_next_log(a_line + 20);
    assert_eq!(to_the_end(lines), ["b", "c"]);
}

/// `sinceSeconds` with a drop before the first line: the window is the first request's,
/// not one that moves with each reconnect (lines written during a long outage are kept).
#[test]
fn since_seconds_keeps_the_first_requests_window_across_a_drop() {
    let server = lab();
    let t0 = std::time::SystemTime::now();
    let api = pods(&server, "io-lab");
    let mut lines = api
        .log_stream("p", &LogParams::default().follow().since_seconds(1))
        .unwrap();
    wait_until("the follow is served", || server.log_streams_open() == 1);
    server.go_down();
    // The outage outlasts the one-second window.
    wait_until("two seconds have passed", || {
        t0.elapsed().unwrap_or_default() > Duration::from_secs(2)
    });
    server.append_log_at(
        "io-lab",
        "p",
        "main",
        LogTime::from_system_time(t0),
        "written at the start",
    );
    server.come_back().unwrap();
    server.append_log("io-lab", "p", "main", "after");
    assert_eq!(text(lines.next()), "written at the start");
    assert_eq!(text(lines.next()), "after");
}

/// `max_line` is about the caller's bytes: the time a resuming follow asks for itself is
/// neither counted nor handed out, however small the bound.
#[test]
fn max_line_counts_only_the_callers_bytes() {
    let server = lab();
    let forty = "0123456789012345678901234567890123456789";
    server.append_log("io-lab", "p", "main", forty);
    server.append_log("io-lab", "p", "main", "abcdefghijklmnopqrstuvwxy");
    let api = pods(&server, "io-lab");
    let mut lines = api
        .log_stream("p", &LogParams::default().follow().max_line(50))
        .unwrap();
    let l = lines.next().unwrap().unwrap();
    assert_eq!((l.text().as_ref(), l.partial), (forty, false));
    lines.stopper().stop();

    let mut lines = api
        .log_stream("p", &LogParams::default().follow().max_line(10))
        .unwrap();
    let mut got = Vec::new();
    for _ in 0..7 {
        let l = lines.next().unwrap().unwrap();
        assert!(l.timestamp.is_some(), "{l:?}");
        got.push((l.text().into_owned(), l.partial));
    }
    let want: Vec<(String, bool)> = [
        ("0123456789", true),
        ("0123456789", true),
        ("0123456789", true),
        ("0123456789", false),
        ("abcdefghij", true),
        ("klmnopqrst", true),
        ("uvwxy", false),
    ]
    .iter()
    .map(|(s, p)| (s.to_string(), *p))
    .collect();
    assert_eq!(got, want);
    // Resumed after a drop: the pieces are not handed out again.
    wait_until("the follow is served", || server.log_streams_open() == 1);
    server.drop_log_streams();
    server.append_log("io-lab", "p", "main", "after");
    let l = lines.next().unwrap().unwrap();
    assert_eq!((l.text().as_ref(), l.partial), ("after", false));
}

/// A drop inside a long line whose first pieces were handed out: the new stream goes on
/// with the next piece, none repeated, none lost.
#[test]
fn a_drop_inside_a_long_line_goes_on_where_it_stopped() {
    let server = lab();
    server.append_log("io-lab", "p", "main", "abcdefghijklmnopqrstuvwxy\nnext");
    let stamp = "2026-11-26T11:50:12.993384413Z ".len();
    server.cut_next_log(stamp + 15);
    let api = pods(&server, "io-lab");
    let mut lines = api
        .log_stream("p", &LogParams::default().follow().max_line(10))
        .unwrap();
    let mut got = Vec::new();
    for _ in 0..4 {
        let l = lines.next().unwrap().unwrap();
        got.push((l.text().into_owned(), l.partial));
    }
    let want: Vec<(String, bool)> = [
        ("abcdefghij", true),
        ("klmnopqrst", true),
        ("uvwxy", false),
        ("next", false),
    ]
    .iter()
    .map(|(s, p)| (s.to_string(), *p))
    .collect();
    assert_eq!(got, want);
    assert_eq!(lines.reconnects(), 1);
}
