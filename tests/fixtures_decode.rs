//! Every captured list, watch and Status response decodes, through the real client over
//! HTTP where the capture is a whole response.

mod common;

use common::*;
use kube_informer::api::{DynamicObject, ObjectList, Status, WatchEvent};
use kube_informer::{Api, Client, ClientConfig, Error, ListParams, WatchParams};

fn client_for(url: &str) -> Client {
    let mut c = ClientConfig::new(url);
    c.qps = 0.0;
    Client::new(c).unwrap()
}

#[test]
fn every_list_capture_decodes_with_its_metadata() {
    let lists = fixtures_where(|n| {
        n.ends_with(".json")
            && n.contains("list")
            && !n.starts_with("status")
            && !n.contains("table")
            && !n.contains("patch")
            && !n.contains("410")
    });
    assert!(lists.len() >= 15, "{lists:?}");
    for name in lists {
        let raw: serde_json::Value = serde_json::from_slice(&fixture(&name)).unwrap();
        let list: ObjectList<DynamicObject> =
            serde_json::from_slice(&fixture(&name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let want = raw["items"].as_array().map_or(0, Vec::len);
        assert_eq!(list.items.len(), want, "{name}");
        assert_eq!(
            list.metadata.resource_version.as_deref(),
            raw["metadata"]["resourceVersion"].as_str(),
            "{name}"
        );
        assert_eq!(
            list.metadata.continue_token.as_deref(),
            raw["metadata"]["continue"].as_str()
        );
        for (item, raw_item) in list.items.iter().zip(raw["items"].as_array().unwrap()) {
            assert_eq!(
                item.metadata.name(),
                raw_item["metadata"]["name"].as_str().unwrap()
            );
            assert!(item.metadata.uid.is_some(), "{name}");
            // Nothing is lost: re-encoding gives back the same JSON value.
            let back: serde_json::Value = serde_json::to_value(item).unwrap();
            assert_eq!(&back, raw_item, "{name}: round trip");
        }
    }
}

#[test]
fn paged_captures_count_down_and_end_without_continue() {
    let mut remaining = Vec::new();
    for i in 1..=5 {
        let l: ObjectList<DynamicObject> =
            serde_json::from_slice(&fixture(&format!("list-pods-page{i}.json"))).unwrap();
        assert_eq!(l.items.len(), 10);
        remaining.push(l.metadata.remaining_item_count);
        assert_eq!(l.metadata.continue_token.is_some(), i < 5);
    }
    assert_eq!(
        remaining,
        vec![Some(40), Some(30), Some(20), Some(10), None]
    );
}

#[test]
fn every_watch_capture_decodes_line_by_line() {
    for name in fixtures_where(|n| n.ends_with(".jsonl")) {
        let text = String::from_utf8(fixture(&name)).unwrap();
        for (i, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
            let ev = WatchEvent::<DynamicObject>::from_json(line.as_bytes())
                .unwrap_or_else(|e| panic!("{name}:{}: {e}", i + 1));
            let ty: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(
                ev.type_name(),
                ty["type"].as_str().unwrap(),
                "{name}:{}",
                i + 1
            );
            match ev {
                WatchEvent::Bookmark(b) => assert!(!b.resource_version.is_empty()),
                WatchEvent::Error(st) => assert!(st.code == 410 || st.code == 500, "{name}"),
                WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                    assert!(!o.metadata.name().is_empty(), "{name}");
                    assert!(o.kind.is_some(), "watch objects carry their kind");
                }
            }
        }
    }
}

#[test]
fn streaming_list_capture_ends_with_the_initial_events_bookmark() {
    let text = String::from_utf8(fixture("streaming-list.jsonl")).unwrap();
    let events: Vec<WatchEvent<DynamicObject>> = text
        .lines()
        .map(|l| WatchEvent::from_json(l.as_bytes()).unwrap())
        .collect();
    assert_eq!(events.len(), 51);
    assert!(events[..50]
        .iter()
        .all(|e| matches!(e, WatchEvent::Added(_))));
    match &events[50] {
        WatchEvent::Bookmark(b) => assert!(b.is_initial_events_end()),
        other => panic!("last event {other:?}"),
    }
    let text =
        String::from_utf8(fixture("streaming-list-without-allowWatchBookmarks.jsonl")).unwrap();
    assert!(text.lines().all(|l| !l.contains("BOOKMARK")));
}

#[test]
fn watch_captures_replayed_over_http() {
    let r = replay("watch-bookmarks.jsonl");
    let api: Api<DynamicObject> = Api::namespaced_with(client_for(&r.url), "lab", &pods());
    let types: Vec<&str> = api
        .watch(&WatchParams::from_version("257"))
        .unwrap()
        .map(|e| e.unwrap().type_name())
        .collect();
    assert_eq!(
        types,
        ["ADDED", "MODIFIED", "MODIFIED", "DELETED", "BOOKMARK"]
    );

    for name in [
        "watch-410-error.jsonl",
        "crd-watch-410-error.jsonl",
        "watch-410-etcd-compacted-nocache.jsonl",
    ] {
        let r = replay(name);
        let api: Api<DynamicObject> = Api::namespaced_with(client_for(&r.url), "lab", &pods());
        let items: Vec<_> = api
            .watch(&WatchParams::from_version("1"))
            .unwrap()
            .collect();
        assert_eq!(items.len(), 1, "{name}");
        let err = items.into_iter().next().unwrap().unwrap_err();
        assert!(err.is_gone(), "{name}: {err}");
        assert_eq!(err.status().unwrap().reason, "Expired");
    }

    let r = replay("etcd34-streaming-list-unsupported.jsonl");
    let api: Api<DynamicObject> = Api::namespaced_with(client_for(&r.url), "lab", &pods());
    let err = api
        .watch(&WatchParams::streaming_list())
        .unwrap()
        .next()
        .unwrap()
        .unwrap_err();
    assert_eq!(err.code(), Some(500));
    assert!(err.to_string().contains("RequestWatchProgress"), "{err}");
}

#[test]
fn every_status_capture_becomes_an_api_error_with_its_status() {
    let names = fixtures_where(|n| {
        n.ends_with(".json")
            && (n.starts_with("status-") || n.starts_with("continue-expired") || n.contains("410"))
    });
    assert!(names.len() >= 16, "{names:?}");
    for name in names {
        let want: Status = serde_json::from_slice(&fixture(&name)).unwrap();
        let code = fixture_code(&name);
        assert_eq!(want.code, code, "{name}: body and status line agree");
        let r = replay(&name);
        let api: Api<DynamicObject> = Api::namespaced_with(client_for(&r.url), "lab", &pods());
        let err = api.list(&ListParams::default()).unwrap_err();
        let Error::Api { request, status } = &err else {
            panic!("{name}: {err:?}")
        };
        assert_eq!(**status, want, "{name}");
        assert_eq!(request, "GET /api/v1/namespaces/lab/pods", "{name}");
        let text = err.to_string();
        assert!(
            text.contains(&want.reason) && text.contains(&code.to_string()),
            "{name}: {text}"
        );
        assert_eq!(err.is_gone(), code == 410, "{name}");
        assert_eq!(err.is_conflict(), code == 409, "{name}");
        assert_eq!(err.is_not_found(), code == 404, "{name}");
    }
    // An expired continue token's Status carries the inconsistent continue token.
    let st: Status = serde_json::from_slice(&fixture("continue-expired.json")).unwrap();
    assert!(st.metadata.continue_token.is_some());
}

#[test]
fn get_capture_decodes_typed_and_dynamic() {
    #[derive(serde::Deserialize)]
    struct Phase {
        phase: String,
    }
    let r = replay("get-pod.json");
    let api: Api<DynamicObject> = Api::namespaced_with(client_for(&r.url), "lab", &pods());
    let pod = api.get("pod-00").unwrap();
    assert_eq!(pod.kind.as_deref(), Some("Pod"));
    assert_eq!(pod.metadata.namespace(), "lab");
    assert!(pod.metadata.managed_fields.is_some());
    let status: Phase = pod.decode_field("status").unwrap().unwrap();
    assert_eq!(status.phase, "Pending");
    assert!(pod.field("spec").is_some());
}
