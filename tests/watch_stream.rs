//! Watch streams against the test API server over loopback HTTP: every event type,
//! bookmarks, 410, garbage and truncated lines, dropped connections, streaming lists,
//! selectors, server timeouts and cancellation from another thread.

mod common;

use std::sync::mpsc;

use common::*;
use kube_informer::api::{DynamicObject, WatchEvent};
use kube_informer::testing::{ApiServer, Fault, Target};
use kube_informer::{Api, Client, Error, WatchParams};
use serde_json::json;

fn setup() -> (ApiServer, Api<DynamicObject>) {
    let server = ApiServer::builder()
        .resource(&pods())
        .bookmark_interval(std::time::Duration::from_millis(200))
        .start();
    let client = Client::new(server.client_config()).unwrap();
    (server, Api::namespaced_with(client, "lab", &pods()))
}

/// Collects up to `n` items of a watch on another thread, bounded by PATIENCE.
fn take<T: Send + 'static>(iter: impl Iterator<Item = T> + Send + 'static, n: usize) -> Vec<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for item in iter.take(n) {
            if tx.send(item).is_err() {
                return;
            }
        }
    });
    let mut out = Vec::new();
    while out.len() < n {
        match rx.recv_timeout(PATIENCE) {
            Ok(item) => out.push(item),
            Err(_) => break,
        }
    }
    out
}

fn summary(ev: &Result<WatchEvent<DynamicObject>, Error>) -> String {
    match ev {
        Ok(WatchEvent::Added(o)) => format!("ADDED {}", o.metadata.name()),
        Ok(WatchEvent::Modified(o)) => format!("MODIFIED {}", o.metadata.name()),
        Ok(WatchEvent::Deleted(o)) => format!("DELETED {}", o.metadata.name()),
        Ok(WatchEvent::Bookmark(_)) => "BOOKMARK".into(),
        Ok(WatchEvent::Error(s)) => format!("ERROR {}", s.code),
        Err(e) => format!("Err {e}"),
    }
}

#[test]
fn replays_every_event_type_from_a_version_then_bookmarks() {
    let (server, api) = setup();
    let rv = server.resource_version().to_string();
    server.create(&pods(), pod("lab", "a", "Pending")).unwrap();
    server
        .patch(
            &pods(),
            Some("lab"),
            "a",
            &json!({"status": {"phase": "Running"}}),
        )
        .unwrap();
    server.delete(&pods(), Some("lab"), "a").unwrap();
    server
        .create(&pods(), pod("elsewhere", "b", "Pending"))
        .unwrap();
    let stream = api.watch(&WatchParams::from_version(&rv)).unwrap();
    let got = take(stream, 4);
    let names: Vec<_> = got.iter().map(summary).collect();
    assert_eq!(names, ["ADDED a", "MODIFIED a", "DELETED a", "BOOKMARK"]);
    let last_rv = server.resource_version().to_string();
    match &got[3] {
        Ok(WatchEvent::Bookmark(b)) => assert_eq!(b.resource_version, last_rv),
        other => panic!("{other:?}"),
    }
    match &got[2] {
        Ok(WatchEvent::Deleted(o)) => {
            let del_rv: u64 = o.metadata.resource_version().parse().unwrap();
            assert!(del_rv > rv.parse().unwrap());
            assert_eq!(o.kind.as_deref(), Some("Pod"), "watch objects carry kind");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn live_events_arrive_while_watching() {
    let (server, api) = setup();
    let rv = server.resource_version().to_string();
    let mut params = WatchParams::from_version(&rv);
    params.allow_watch_bookmarks = false;
    let stream = api.watch(&params).unwrap();
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for ev in stream.take(3) {
            tx.send(summary(&ev)).unwrap();
        }
    });
    for i in 0..3 {
        server
            .create(&pods(), pod("lab", &format!("live-{i}"), "Pending"))
            .unwrap();
        assert_eq!(
            rx.recv_timeout(PATIENCE).unwrap(),
            format!("ADDED live-{i}")
        );
    }
    reader.join().unwrap();
}

#[test]
fn too_old_version_gets_one_410_error_event() {
    let (server, api) = setup();
    let old = server.resource_version().to_string();
    server.create(&pods(), pod("lab", "a", "Pending")).unwrap();
    server.compact();
    let items: Vec<_> = take(api.watch(&WatchParams::from_version(&old)).unwrap(), 5);
    assert_eq!(
        items.len(),
        1,
        "{:?}",
        items.iter().map(summary).collect::<Vec<_>>()
    );
    let err = items.into_iter().next().unwrap().unwrap_err();
    assert!(err.is_gone(), "{err}");
    let msg = &err.status().unwrap().message;
    assert!(
        msg.starts_with(&format!("too old resource version: {old} (")),
        "{msg}"
    );
}

#[test]
fn garbage_line_is_an_error_item_and_the_stream_goes_on() {
    let (server, api) = setup();
    let rv = server.resource_version().to_string();
    server.create(&pods(), pod("lab", "a", "Pending")).unwrap();
    server.inject(Target::Watch, Fault::GarbageLine);
    let got = take(api.watch(&WatchParams::from_version(&rv)).unwrap(), 2);
    match &got[0] {
        Err(Error::WatchLine { line, message, .. }) => {
            assert_eq!(*line, 1);
            // Described by position and length, never quoted (a line may be a Secret).
            assert!(!message.contains("this is not JSON"), "{message}");
            assert!(message.contains("bytes"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(summary(&got[1]), "ADDED a");
}

#[test]
fn buffered_events_are_read_without_waiting_and_none_is_held_back() {
    let server = ApiServer::builder().resource(&pods()).start();
    let api: Api<DynamicObject> =
        Api::namespaced_with(Client::new(server.client_config()).unwrap(), "lab", &pods());
    let rv = server.resource_version().to_string();
    for i in 0..30 {
        server
            .create(&pods(), pod("lab", &format!("p{i:02}"), "Pending"))
            .unwrap();
    }
    let params = WatchParams {
        resource_version: Some(rv),
        ..Default::default()
    };
    let mut stream = api.watch(&params).unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // Mixes waiting reads with reads of what is already buffered, as the reflector does.
        let mut names = Vec::new();
        while names.len() < 30 {
            let Some(first) = stream.next() else { break };
            let mut next = Some(first);
            while let Some(item) = next {
                names.push(summary(&item));
                next = stream.next_buffered();
            }
        }
        // Everything sent was read: nothing is buffered, and asking must not wait.
        let after = stream.next_buffered().map(|item| summary(&item));
        let _ = tx.send((names, after));
    });
    let (names, after) = rx
        .recv_timeout(PATIENCE)
        .expect("next_buffered never waits for the network");
    let expected: Vec<String> = (0..30).map(|i| format!("ADDED p{i:02}")).collect();
    assert_eq!(names, expected);
    assert_eq!(after, None);
}

#[test]
fn truncated_last_line_is_reported_once_then_the_stream_ends() {
    let (server, api) = setup();
    let rv = server.resource_version().to_string();
    for i in 0..3 {
        server
            .create(&pods(), pod("lab", &format!("p{i}"), "Pending"))
            .unwrap();
    }
    // The first event line is the object plus ~60 bytes of envelope; every line is over
    // 200 bytes, so this cut lands inside the second line.
    let first_len = server
        .get(&pods(), Some("lab"), "p0")
        .unwrap()
        .to_string()
        .len();
    server.inject(Target::Watch, Fault::CloseAfterBytes(first_len + 100));
    let got = take(api.watch(&WatchParams::from_version(&rv)).unwrap(), 10);
    let names: Vec<_> = got.iter().map(summary).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert_eq!(names[0], "ADDED p0");
    match &got[1] {
        Err(Error::WatchLine { line, message, .. }) => {
            assert_eq!(*line, 2);
            assert!(message.contains("in the middle of an event"), "{message}");
            assert!(message.contains("bytes received"), "{message}");
            assert!(!message.contains("ADDED"), "not quoted: {message}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn dropped_connection_ends_the_stream_after_the_events_sent() {
    let (server, api) = setup();
    let rv = server.resource_version().to_string();
    for i in 0..5 {
        server
            .create(&pods(), pod("lab", &format!("p{i}"), "Pending"))
            .unwrap();
    }
    server.inject(Target::Watch, Fault::CloseAfterEvents(2));
    let got = take(api.watch(&WatchParams::from_version(&rv)).unwrap(), 10);
    let ok: Vec<_> = got.iter().filter(|e| e.is_ok()).map(summary).collect();
    assert_eq!(ok, ["ADDED p0", "ADDED p1"]);
    // At most one error item (the broken body) and then the end.
    assert!(
        got.len() <= 3,
        "{:?}",
        got.iter().map(summary).collect::<Vec<_>>()
    );
}

#[test]
fn server_timeout_ends_the_stream_cleanly_after_a_bookmark() {
    // kube-apiserver sends a bookmark two seconds before a watch's timeout (none for a watch
    // shorter than that), then ends the stream.
    let (server, api) = setup();
    let rv = server.resource_version().to_string();
    let got = take(
        api.watch(&WatchParams::from_version(&rv).timeout(3))
            .unwrap(),
        100,
    );
    assert!(!got.is_empty());
    assert!(
        got.iter().all(|e| matches!(e, Ok(WatchEvent::Bookmark(_)))),
        "{:?}",
        got.iter().map(summary).collect::<Vec<_>>()
    );
    drop(server);
}

#[test]
fn streaming_list_sends_state_then_the_end_bookmark() {
    let (server, api) = setup();
    for i in 0..20 {
        server
            .create(&pods(), pod("lab", &format!("p{i:02}"), "Pending"))
            .unwrap();
    }
    let got = take(api.watch(&WatchParams::streaming_list()).unwrap(), 21);
    assert!(got[..20]
        .iter()
        .all(|e| matches!(e, Ok(WatchEvent::Added(_)))));
    match &got[20] {
        Ok(WatchEvent::Bookmark(b)) => {
            assert!(b.is_initial_events_end());
            assert_eq!(b.resource_version, server.resource_version().to_string());
        }
        other => panic!("{other:?}"),
    }
    // Without bookmarks the end marker never comes (like the capture).
    let mut p = WatchParams::streaming_list().timeout(1);
    p.allow_watch_bookmarks = false;
    let got = take(api.watch(&p).unwrap(), 100);
    assert_eq!(got.len(), 20);

    server.set_streaming_list_supported(false);
    let got = take(api.watch(&WatchParams::streaming_list()).unwrap(), 5);
    assert_eq!(got.len(), 1);
    let err = got.into_iter().next().unwrap().unwrap_err();
    assert_eq!(err.code(), Some(500));
    assert_eq!(err.status().unwrap().reason, "InternalError");
}

#[test]
fn watch_from_zero_starts_with_synthetic_adds() {
    let (server, api) = setup();
    server.create(&pods(), pod("lab", "x", "Pending")).unwrap();
    server.create(&pods(), pod("lab", "y", "Pending")).unwrap();
    let mut p = WatchParams::from_version("0");
    p.allow_watch_bookmarks = false;
    let got = take(api.watch(&p).unwrap(), 2);
    assert_eq!(
        got.iter().map(summary).collect::<Vec<_>>(),
        ["ADDED x", "ADDED y"]
    );
}

#[test]
fn label_selector_turns_leaving_and_entering_into_delete_and_add() {
    let (server, api) = setup();
    let rv = server.resource_version().to_string();
    server.create(&pods(), pod("lab", "a", "Pending")).unwrap();
    server
        .patch(
            &pods(),
            Some("lab"),
            "a",
            &json!({"metadata": {"labels": {"app": "gone"}}}),
        )
        .unwrap();
    server
        .patch(
            &pods(),
            Some("lab"),
            "a",
            &json!({"metadata": {"labels": {"app": "lab"}}}),
        )
        .unwrap();
    let mut p = WatchParams::from_version(&rv).labels("app=lab");
    p.allow_watch_bookmarks = false;
    let got = take(api.watch(&p).unwrap(), 3);
    assert_eq!(
        got.iter().map(summary).collect::<Vec<_>>(),
        ["ADDED a", "DELETED a", "ADDED a"]
    );
}

#[test]
fn cancel_ends_an_idle_watch_from_another_thread() {
    let (server, api) = setup();
    let rv = server.resource_version().to_string();
    let mut p = WatchParams::from_version(&rv);
    p.allow_watch_bookmarks = false;
    let stream = api.watch(&p).unwrap();
    let canceller = stream.canceller();
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let n = stream.count();
        tx.send(n).unwrap();
    });
    canceller.cancel();
    assert_eq!(
        rx.recv_timeout(PATIENCE).unwrap(),
        0,
        "the idle stream ends, with no error item"
    );
    reader.join().unwrap();
    assert!(canceller.is_cancelled());
}

#[test]
fn error_status_before_the_stream_starts_is_an_api_error() {
    let (server, api) = setup();
    server.inject(Target::Watch, Fault::status(403));
    let err = api.watch(&WatchParams::from_version("1")).unwrap_err();
    assert_eq!(err.code(), Some(403));
    assert!(
        err.to_string()
            .starts_with("GET /api/v1/namespaces/lab/pods?watch=1"),
        "{err}"
    );
}

#[test]
fn the_request_timeout_bounds_requests_but_not_watches() {
    let (server, _) = setup();
    let mut config = server.client_config();
    config.request_timeout = std::time::Duration::from_secs(1);
    let api: Api<DynamicObject> =
        Api::namespaced_with(Client::new(config).unwrap(), "lab", &pods());
    // A watch the server holds open for 3 s outlives the 1 s request timeout.
    let rv = server.resource_version().to_string();
    let got = take(
        api.watch(&WatchParams::from_version(&rv).timeout(3))
            .unwrap(),
        100,
    );
    assert!(
        got.len() >= 3,
        "{:?}",
        got.iter().map(summary).collect::<Vec<_>>()
    );
    assert!(got.iter().all(|e| e.is_ok()));
    // An ordinary request that stalls past it fails with a transport timeout.
    server
        .create(
            &pods(),
            serde_json::json!({"metadata": {"name": "p", "namespace": "lab"}}),
        )
        .unwrap();
    server.inject(Target::Get, Fault::Stall(std::time::Duration::from_secs(3)));
    let err = api.get("p").unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    assert!(err.is_transient());
    // A list is not bound by it: a list that takes long to start answering completes.
    server.inject(
        Target::List,
        Fault::Stall(std::time::Duration::from_secs(3)),
    );
    let list = api.list(&kube_informer::ListParams::default()).unwrap();
    assert_eq!(list.items.len(), 1);
}

#[test]
fn a_list_is_bounded_per_read() {
    let (server, _) = setup();
    let mut config = server.client_config();
    config.list_read_timeout = std::time::Duration::from_millis(500);
    let api: Api<DynamicObject> =
        Api::namespaced_with(Client::new(config).unwrap(), "lab", &pods());
    // A server that says nothing for far longer than the read timeout: a dead connection.
    server.inject(
        Target::List,
        Fault::Stall(std::time::Duration::from_secs(60)),
    );
    let err = api.list(&kube_informer::ListParams::default()).unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    assert!(err.to_string().contains("timeout"), "{err}");
    assert!(err.is_transient());
}

/// Lines ending in `\r\n`, blank lines, an event split across two chunks and a run of events
/// in one chunk, from a raw HTTP server: whole lines are decoded where they lie in the read
/// buffer or from the copy a waiting read makes, and both give the same events in order.
#[test]
fn crlf_blank_and_split_lines_decode_alike() {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let event = |name: &str| {
        format!(
            r#"{{"type":"ADDED","object":{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"lab","resourceVersion":"5"}},"spec":{{"x":[1,2]}}}}}}"#
        )
    };
    let split = event("c");
    let (c1, c2) = split.split_at(split.len() / 2);
    let chunks: Vec<String> = vec![
        format!("{}\r\n\n  \r\n{}\n{c1}", event("a"), event("b")),
        format!("{c2}\r\n{}\n{}\r\n", event("d"), event("e")),
    ];
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap_or(0) > 2 {
            line.clear();
        }
        let mut stream = stream;
        let _ = stream.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n",
        );
        for chunk in chunks {
            let _ = write!(stream, "{:x}\r\n{chunk}\r\n", chunk.len());
            let _ = stream.flush();
        }
        let _ = stream.write_all(b"0\r\n\r\n");
    });
    let api: Api<DynamicObject> = Api::namespaced_with(
        Client::new(kube_informer::ClientConfig::new(url)).unwrap(),
        "lab",
        &pods(),
    );
    let got = take(api.watch(&WatchParams::from_version("1")).unwrap(), 10);
    let names: Vec<String> = got.iter().map(summary).collect();
    assert_eq!(
        names,
        ["ADDED a", "ADDED b", "ADDED c", "ADDED d", "ADDED e"]
    );
    match &got[2] {
        Ok(WatchEvent::Added(o)) => {
            assert_eq!(o.field("spec").unwrap().get(), r#"{"x":[1,2]}"#)
        }
        other => panic!("{other:?}"),
    }
}
