//! An outsider's attacks on a followed pod log: a container that writes half lines and
//! long lines while the kubelet drops the stream under the reader. Nothing lost, nothing
//! repeated, no hang. Over loopback HTTP against `testing::ApiServer`.

mod common;

use std::time::{Duration, Instant};

use common::PATIENCE;
use kube_informer::api::{ApiResource, DynamicObject};
use kube_informer::pod::{LogLine, LogParams};
use kube_informer::testing::ApiServer;
use kube_informer::{Api, Client};

fn pods(server: &ApiServer) -> Api<DynamicObject> {
    Api::namespaced_with(
        Client::new(server.client_config()).unwrap(),
        "lab",
        &ApiResource::new("", "v1", "Pod", "pods", true),
    )
}

fn wait_until(what: &str, f: impl Fn() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Joins pieces back into lines.
fn lines_of(items: &[LogLine]) -> Vec<String> {
    let mut out = Vec::new();
    let mut open = String::new();
    for l in items {
        open.push_str(&l.text());
        if !l.partial {
            out.push(std::mem::take(&mut open));
        }
    }
    if !open.is_empty() {
        out.push(open);
    }
    out
}

/// A container writes half a line (`printf 'hello '`), the kubelet drops the follow, the
/// container finishes the line and exits: the line comes out once, whole.
#[test]
fn a_half_written_line_across_a_drop_comes_out_once_whole() {
    let server = ApiServer::start();
    server.add_pod("lab", "web", &["app"]).unwrap();
    server.append_log("lab", "web", "app", "first");
    let api = pods(&server);
    let mut stream = api
        .log_stream("web", &LogParams::default().follow())
        .unwrap();
    let first = stream.next().unwrap().unwrap();
    assert_eq!(first.text(), "first");
    server.write_log("lab", "web", "app", "hello ");
    wait_until("the follow to be served", || server.log_streams_open() > 0);
    server.drop_log_streams();
    server.write_log("lab", "web", "app", "world\nlast\n");
    server.terminate_container("lab", "web", "app", 0);
    let rest: Vec<LogLine> = stream.map(Result::unwrap).collect();
    assert_eq!(lines_of(&rest), ["hello world", "last"]);
}

/// Long lines cut into pieces (`max_line`), the kubelet's answer cut mid-transfer at
/// many places (inside a time, inside a piece, at a piece's edge): every line comes out
/// once, its pieces in order.
#[test]
fn long_lines_read_in_pieces_across_cut_answers_are_neither_lost_nor_repeated() {
    let server = ApiServer::start();
    server.add_pod("lab", "web", &["app"]).unwrap();
    let want: Vec<String> = (0..40)
        .map(|i| format!("{i:03}-{}", "x".repeat(100 + i * 7)))
        .collect();
    for l in &want {
        server.append_log("lab", "web", "app", l);
    }
    let api = pods(&server);
    let pieces_total: usize = want.iter().map(|l| l.len().div_ceil(16)).sum();
    for cut in [5, 31, 32, 47, 333, 1000, 2501, 7777] {
        server.cut_next_log(cut);
        let mut stream = api
            .log_stream("web", &LogParams::default().follow().max_line(16))
            .unwrap();
        let mut got = Vec::new();
        while got.len() < pieces_total {
            let item = stream.next().expect("the stream ended early").unwrap();
            assert!(item.bytes.len() <= 16, "a piece over max_line: {item:?}");
            got.push(item);
        }
        assert!(stream.reconnects() >= 1, "cut at {cut}: no drop was seen");
        assert!(!got.last().unwrap().partial);
        assert_eq!(lines_of(&got), want, "cut at {cut}");
        stream.stopper().stop();
        assert!(stream.next().is_none());
    }
}

/// A hostile container writes one line of a little over 1 MiB; the caller reads it in
/// pieces of 16 bytes (`max_line`), so more than 65 536 pieces share the line's one time,
/// more than the stream remembers the content of. After a drop the kubelet sends the line
/// again from its start: the pieces already delivered must be skipped (by count, past the
/// remembered ones), not delivered a second time.
#[test]
fn a_line_of_more_pieces_than_remembered_is_not_repeated_after_a_drop() {
    let server = ApiServer::start();
    server.add_pod("lab", "web", &["app"]).unwrap();
    let long = "0123456789abcdef".repeat((1 << 16) + 40);
    server.append_log("lab", "web", "app", &long);
    let api = pods(&server);
    let mut stream = api
        .log_stream("web", &LogParams::default().follow().max_line(16))
        .unwrap();
    let pieces = long.len() / 16;
    let mut got = Vec::with_capacity(pieces + 1);
    while got.len() < pieces {
        got.push(stream.next().expect("the stream ended early").unwrap());
    }
    assert!(
        !got.last().unwrap().partial,
        "the line's last piece ends it"
    );
    server.drop_log_streams();
    server.append_log("lab", "web", "app", "after");
    let after = stream.next().unwrap().unwrap();
    assert_eq!(
        after.text(),
        "after",
        "a piece of the long line came out again after the drop"
    );
    assert!(stream.reconnects() >= 1);
    server.terminate_container("lab", "web", "app", 0);
    assert!(stream.next().is_none(), "nothing after the container ended");
    got.push(after);
    assert_eq!(lines_of(&got), [long, "after".to_owned()]);
}

/// The log's bytes again from the items: each item's bytes, and a newline after every item
/// that is neither a piece of a longer line nor the unterminated last one.
fn bytes_of(items: &[LogLine]) -> Vec<u8> {
    let mut out = Vec::new();
    for l in items {
        out.extend_from_slice(&l.bytes);
        if !l.partial && !l.unterminated {
            out.push(b'\n');
        }
    }
    out
}

/// A log whose last line has no newline (`printf done`), read whole, in pieces, and
/// followed: the items say which line was unterminated, so the bytes written back out are
/// the log's, not one more or one fewer (kubectl prints them as they are).
#[test]
fn the_last_line_without_a_newline_is_said_and_no_byte_is_added_or_lost() {
    for (log, max_line) in [
        ("one\n\ntwo", None),
        ("one\ntwo\n", None),
        ("abcdefgh", Some(4)),
        ("abcdefg", Some(4)),
        ("abcd\nefgh", Some(4)),
        ("x", Some(1)),
    ] {
        let server = ApiServer::start();
        server.add_pod("lab", "web", &["app"]).unwrap();
        server.write_log("lab", "web", "app", log);
        let api = pods(&server);
        let mut params = LogParams::default();
        if let Some(m) = max_line {
            params = params.max_line(m);
        }
        let items: Vec<LogLine> = api
            .log_stream("web", &params)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(bytes_of(&items), log.as_bytes(), "{log:?}: {items:?}");
        let last = items.last().unwrap();
        assert_eq!(
            last.unterminated,
            !log.ends_with('\n'),
            "{log:?}: {items:?}"
        );
        assert_eq!(
            items.iter().filter(|l| l.unterminated).count(),
            usize::from(!log.ends_with('\n')),
            "{log:?}: {items:?}"
        );
        // The same through a follow that sees the container end.
        let stream = api.log_stream("web", &params.clone().follow()).unwrap();
        server.terminate_container("lab", "web", "app", 0);
        let followed: Vec<LogLine> = stream.map(Result::unwrap).collect();
        assert_eq!(bytes_of(&followed), log.as_bytes(), "{log:?}: {followed:?}");
    }
    // A line `limit_bytes` cuts has no newline after it either.
    let server = ApiServer::start();
    server.add_pod("lab", "web", &["app"]).unwrap();
    server.write_log("lab", "web", "app", "one\ntwo\nthree\n");
    let api = pods(&server);
    for (limit, want) in [
        (6u64, "one\ntw"),
        (8, "one\ntwo\n"),
        (4, "one\n"),
        (3, "one"),
    ] {
        let items: Vec<LogLine> = api
            .log_stream("web", &LogParams::default().limit_bytes(limit))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(bytes_of(&items), want.as_bytes(), "{limit}: {items:?}");
        let items: Vec<LogLine> = api
            .log_stream("web", &LogParams::default().follow().limit_bytes(limit))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(
            bytes_of(&items),
            want.as_bytes(),
            "follow {limit}: {items:?}"
        );
    }
}

/// A followed log read with `limit_bytes` while the kubelet's answer is cut at many places
/// (inside a time, inside a two-byte character, inside a line): the bytes are the log's
/// first `limit_bytes`, cut where kube-apiserver cuts them (inside a character too), each
/// line once; the last item is `unterminated` exactly when the limit fell inside a line,
/// and no other item is.
#[test]
fn limit_bytes_across_cut_answers_is_the_logs_prefix_once() {
    let server = ApiServer::start();
    server.add_pod("lab", "web", &["app"]).unwrap();
    let log = "añb\nčćd two\n\nthree é\nfour\n";
    server.write_log("lab", "web", "app", log);
    let api = pods(&server);
    // Each limit with one of the cuts (a time, a character, a line, the second time, the
    // third line): every pairing would take a reconnect each, for little more.
    let cuts = [3usize, 33, 37, 40, 75];
    for limit in 1..log.len() as u64 {
        let cut = cuts[limit as usize % cuts.len()];
        server.cut_next_log(cut);
        let stream = api
            .log_stream("web", &LogParams::default().follow().limit_bytes(limit))
            .unwrap();
        let mut items = Vec::new();
        for item in stream {
            items.push(item.unwrap());
            assert!(items.len() <= log.len(), "{limit}/{cut}: {items:?}");
        }
        let want = &log.as_bytes()[..limit as usize];
        assert_eq!(bytes_of(&items), want, "{limit}/{cut}: {items:?}");
        let inside = want.last() != Some(&b'\n');
        let flagged: Vec<usize> = (0..items.len())
            .filter(|&i| items[i].unterminated)
            .collect();
        let expected = if inside {
            vec![items.len() - 1]
        } else {
            vec![]
        };
        assert_eq!(flagged, expected, "{limit}/{cut}: {items:?}");
        assert!(items.iter().all(|l| !l.partial), "{limit}/{cut}: {items:?}");
    }
}

/// The same with lines read in pieces (`max_line`) and with the times asked for (which
/// count against the limit, as kube-apiserver counts them): a followed read cut and
/// resumed gives the bytes a plain read with the same limit gives, the last item alone
/// `unterminated` when the limit fell inside a line.
#[test]
fn limit_bytes_with_pieces_or_times_across_cut_answers_matches_a_plain_read() {
    let server = ApiServer::start();
    server.add_pod("lab", "web", &["app"]).unwrap();
    let log = "añb\nčćd two\n\nthree é\nfour\n";
    server.write_log("lab", "web", "app", log);
    let api = pods(&server);
    let read = |params: &LogParams| -> Vec<LogLine> {
        let mut items = Vec::new();
        for item in api.log_stream("web", params).unwrap() {
            items.push(item.unwrap());
            assert!(items.len() <= 400, "{params:?}: {items:?}");
        }
        items
    };
    let timed_len = bytes_of(&read(&LogParams::default().timestamps())).len() as u64;
    let cuts = [3usize, 33, 37, 40, 75];
    let variants = [
        (LogParams::default().max_line(3), 1..log.len() as u64, 3),
        (LogParams::default().timestamps(), 1..timed_len, 11),
    ];
    for (params, limits, step) in variants {
        for limit in limits.step_by(step) {
            let plain = read(&params.clone().limit_bytes(limit));
            let cut = cuts[limit as usize % cuts.len()];
            server.cut_next_log(cut);
            let followed = read(&params.clone().follow().limit_bytes(limit));
            let what = format!("{params:?} {limit}/{cut}: {followed:?}");
            assert_eq!(bytes_of(&followed), bytes_of(&plain), "{what}");
            assert_eq!(bytes_of(&followed).len() as u64, limit, "{what}");
            let last = followed.len() - 1;
            for (i, l) in followed.iter().enumerate() {
                let inside = bytes_of(&followed).last() != Some(&b'\n');
                assert_eq!(l.unterminated, i == last && inside, "{what}");
                assert!(!(i == last && l.partial), "{what}");
            }
        }
    }
}
