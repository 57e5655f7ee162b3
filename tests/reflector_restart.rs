//! A kube-apiserver restart with etcd kept (what every rolling upgrade of a control plane
//! does): the watch from the last version gets 410, and a paged list at that version would
//! answer the OLD state at the OLD version (an Exact read), whose watch gets 410 again. The
//! informer must get back to the present, deliver every later change once, never bring a
//! deleted object back, and do it in a bounded number of requests. The test server answers
//! like the real one here (see `tests/rv_matrix.rs`); the first test also replays the
//! captured relist requests on it.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use kube_informer::api::DynamicObject;
use kube_informer::cache::{DeletedObject, HandlerFns, InformerConfig, RelistCause};
use kube_informer::testing::ApiServer;
use parking_lot::Mutex;
use serde_json::{json, Value};

/// The captured relist requests at an old version after a restart, answered by the test
/// server as kube-apiserver 1.36.2 answered them (`*-after-restart.json` in the fixtures).
#[test]
fn the_captured_relists_after_a_restart_answer_the_same_states() {
    let server = ApiServer::start();
    for name in ["pod-a", "pod-b", "pod-c"] {
        server.create(&pods(), pod("lab", name, "Pending")).unwrap();
    }
    let old = server.resource_version();
    server.restart().unwrap();
    server.delete(&pods(), Some("lab"), "pod-a").unwrap();
    server
        .create(&pods(), pod("lab", "pod-d", "Pending"))
        .unwrap();
    let now = server.resource_version();

    for capture in [
        "watch-old-rv-after-restart.jsonl",
        "relist-paged-old-rv-after-restart.json",
        "relist-exact-old-rv-after-restart.json",
        "relist-paged-notolderthan-old-rv-after-restart.json",
        "relist-unpaged-old-rv-after-restart.json",
    ] {
        let request = String::from_utf8(fixture(&format!("{capture}.request"))).unwrap();
        let target = request.split_whitespace().nth(1).unwrap();
        let captured_rv = "31289";
        let (_, query) = target.split_once('?').unwrap();
        let query = query.replace(captured_rv, &old.to_string());
        let url = format!("{}/api/v1/namespaces/lab/pods?{query}", server.url());
        let (code, body) = raw_get(&url, None);
        assert_eq!(code, fixture_code(capture), "{capture}");
        let want = String::from_utf8(fixture(capture)).unwrap();
        if capture.ends_with(".jsonl") {
            let event: Value = serde_json::from_str(body.trim()).unwrap();
            let captured: Value = serde_json::from_str(want.trim()).unwrap();
            assert_eq!(event["type"], captured["type"], "{capture}");
            assert_eq!(event["object"]["code"], captured["object"]["code"]);
            assert_eq!(event["object"]["reason"], captured["object"]["reason"]);
            continue;
        }
        let names = |list: &Value| -> Vec<String> {
            list["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["metadata"]["name"].as_str().unwrap().to_owned())
                .collect()
        };
        let got: Value = serde_json::from_str(&body).unwrap();
        let captured: Value = serde_json::from_str(&want).unwrap();
        assert_eq!(names(&got), names(&captured), "{capture}: the same state");
        let captured_at_old = captured["metadata"]["resourceVersion"] == captured_rv;
        let expected_rv = if captured_at_old { old } else { now };
        assert_eq!(
            got["metadata"]["resourceVersion"],
            json!(expected_rv.to_string()),
            "{capture}: at the old version, or the present, as captured"
        );
    }
}

/// One handler event, as the test records it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seen {
    Add(String),
    Update(String, String),
    Delete(String),
}

fn recorder() -> (Arc<Mutex<Vec<Seen>>>, HandlerFns<DynamicObject>) {
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let (a, u, d) = (seen.clone(), seen.clone(), seen.clone());
    let fns = HandlerFns::new()
        .on_add(move |o: Arc<DynamicObject>, _| a.lock().push(Seen::Add(o.metadata.name().into())))
        .on_update(move |_, o: Arc<DynamicObject>| {
            let tier = o.metadata.label("tier").unwrap_or("").to_owned();
            u.lock().push(Seen::Update(o.metadata.name().into(), tier))
        })
        .on_delete(move |o: DeletedObject<DynamicObject>| {
            d.lock()
                .push(Seen::Delete(o.object().metadata.name().into()))
        });
    (seen, fns)
}

#[test]
fn after_a_restart_with_history_kept_every_later_change_arrives_once() {
    every_later_change_arrives_once(|server| server.restart().unwrap());
}

/// The third phase of the captured table: etcd compacted, then the restart (paged lists at
/// the old version are 410 too; `NotOlderThan` still answers the present).
#[test]
fn after_compaction_and_a_restart_every_later_change_arrives_once() {
    every_later_change_arrives_once(|server| {
        server.compact();
        server.restart().unwrap();
    });
}

fn every_later_change_arrives_once(restart: impl Fn(&ApiServer)) {
    let server = ApiServer::builder()
        .resource(&pods())
        .bookmark_interval(Duration::from_millis(200))
        .start();
    for name in ["pod-a", "pod-b", "pod-c", "pod-x"] {
        server.create(&pods(), pod("lab", name, "Pending")).unwrap();
    }
    let inf = pods_informer(&server, fast_config());
    let (seen, fns) = recorder();
    let reg = inf.add_event_handler(fns).unwrap();
    inf.start().unwrap();
    assert!(reg.wait_for_sync(PATIENCE));
    wait_until("watching", || inf.is_watching());
    let before = server.requests().len();

    // The restart, then seven changes, as in the outage that was reported.
    restart(&server);
    server.delete(&pods(), Some("lab"), "pod-a").unwrap();
    server
        .create(&pods(), pod("lab", "pod-d", "Pending"))
        .unwrap();
    server
        .create(&pods(), pod("lab", "pod-e", "Pending"))
        .unwrap();
    let tier = |t: &str| json!({"metadata": {"labels": {"tier": t}}});
    server
        .patch(&pods(), Some("lab"), "pod-b", &tier("front"))
        .unwrap();
    server.delete(&pods(), Some("lab"), "pod-x").unwrap();
    server
        .create(&pods(), pod("lab", "pod-f", "Pending"))
        .unwrap();
    server
        .patch(&pods(), Some("lab"), "pod-c", &tier("back"))
        .unwrap();

    let lister = inf.lister();
    wait_until("the cache holds the present", || {
        let mut cached: Vec<(String, String)> = lister
            .list_all()
            .iter()
            .map(|o| {
                (
                    format!("lab/{}", o.metadata.name()),
                    o.metadata.resource_version().to_owned(),
                )
            })
            .collect();
        cached.sort();
        cached == server.keys_and_versions(&pods())
    });
    // The handler hears of each change after the cache has it (and a relist tells deletions
    // after its last page): wait for every one of them, not only the last made.
    let expected = [
        Seen::Delete("pod-a".into()),
        Seen::Add("pod-d".into()),
        Seen::Add("pod-e".into()),
        Seen::Update("pod-b".into(), "front".into()),
        Seen::Delete("pod-x".into()),
        Seen::Add("pod-f".into()),
        Seen::Update("pod-c".into(), "back".into()),
    ];
    wait_until("the handler heard of every change", || {
        let seen = seen.lock();
        expected.iter().all(|e| seen.contains(e))
    });
    let health = inf.health().reflector;
    let requests: Vec<String> = server.requests()[before..].to_vec();
    inf.stop();

    let seen = seen.lock().clone();
    let count = |e: &Seen| seen.iter().filter(|s| *s == e).count();
    for created in ["pod-d", "pod-e", "pod-f"] {
        assert_eq!(count(&Seen::Add(created.into())), 1, "{created}: {seen:?}");
    }
    for deleted in ["pod-a", "pod-x"] {
        assert_eq!(
            count(&Seen::Delete(deleted.into())),
            1,
            "{deleted}: {seen:?}"
        );
        // Nothing about it after its deletion: it never comes back.
        let at = seen
            .iter()
            .position(|s| *s == Seen::Delete(deleted.into()))
            .unwrap();
        let later = seen[at + 1..].iter().any(|s| match s {
            Seen::Add(n) | Seen::Update(n, _) | Seen::Delete(n) => n == deleted,
        });
        assert!(!later, "{deleted} came back after its deletion: {seen:?}");
    }
    // The labels arrived (a relist may deliver a state more than once, never an older one
    // after a newer one).
    for (name, label) in [("pod-b", "front"), ("pod-c", "back")] {
        let updates: Vec<&String> = seen
            .iter()
            .filter_map(|s| match s {
                Seen::Update(n, t) if n == name => Some(t),
                _ => None,
            })
            .collect();
        let first = updates.iter().position(|t| *t == label).unwrap();
        assert!(
            updates[first..].iter().all(|t| *t == label),
            "{name}: the label went back: {updates:?}"
        );
    }
    // Back to the present in a few requests: no list → watch → 410 loop.
    let lists = requests.iter().filter(|r| !r.contains("watch=")).count();
    let watches = requests.iter().filter(|r| r.contains("watch=")).count();
    assert!(
        (1..=3).contains(&lists) && watches <= 6,
        "{lists} lists, {watches} watches after the restart: {requests:#?}"
    );
    assert_eq!(
        health.relists.get(&RelistCause::Expired),
        Some(&1),
        "{health:?}"
    );
    let relist = requests
        .iter()
        .find(|r| !r.contains("watch="))
        .expect("a relist");
    assert!(
        relist.contains("resourceVersionMatch=NotOlderThan") && relist.contains("limit=500"),
        "the relist asks for a state at least as fresh, paged: {relist}"
    );
}

/// A relist of several pages: the first names its version and `NotOlderThan`, the continue
/// pages carry neither (kube-apiserver answers 400 and 422 to a continue page that does).
#[test]
fn a_paged_relist_after_a_restart_sends_its_version_on_the_first_page_only() {
    let server = ApiServer::builder().resource(&pods()).start();
    for i in 0..7 {
        server
            .create(&pods(), pod("lab", &format!("pod-{i}"), "Pending"))
            .unwrap();
    }
    let config = InformerConfig::new().reflector(fast_reflector().page_size(3));
    let inf = pods_informer(&server, config);
    let (_seen, fns) = recorder();
    let reg = inf.add_event_handler(fns).unwrap();
    inf.start().unwrap();
    assert!(reg.wait_for_sync(PATIENCE));
    wait_until("watching", || inf.is_watching());
    let before = server.requests().len();
    server.restart().unwrap();
    server
        .create(&pods(), pod("lab", "pod-new", "Pending"))
        .unwrap();
    wait_until("the new pod is cached", || {
        inf.lister().get(Some("lab"), "pod-new").is_some()
    });
    let requests: Vec<String> = server.requests()[before..].to_vec();
    inf.stop();
    let pages: Vec<&String> = requests.iter().filter(|r| !r.contains("watch=")).collect();
    assert_eq!(pages.len(), 3, "8 pods in pages of 3: {requests:#?}");
    assert!(
        pages[0].contains("resourceVersion=")
            && pages[0].contains("resourceVersionMatch=NotOlderThan"),
        "{pages:?}"
    );
    for page in &pages[1..] {
        assert!(page.contains("continue="), "{page}");
        assert!(
            !page.contains("resourceVersion"),
            "a continue page names no version: {page}"
        );
    }
    assert!(
        !requests
            .iter()
            .any(|r| r.contains("continue=") && r.contains("resourceVersion")),
        "{requests:#?}"
    );
}

/// etcd restored from a backup: the server's versions go back below the informer's, so its
/// watch is answered with nothing (kube-apiserver 1.36, `watch-future-resourceversion*`).
/// The silent watch leads to a probe of the server's version, and a consistent list brings
/// the cache and every handler to the restored state: what was created after the backup is
/// deleted, what was deleted comes back, what changed goes back, and later writes arrive.
#[test]
fn after_a_restore_from_a_backup_the_informer_lists_the_restored_state() {
    let server = ApiServer::builder()
        .resource(&pods())
        .bookmark_interval(Duration::from_millis(200))
        .start();
    for name in ["pod-a", "pod-b", "pod-c"] {
        server.create(&pods(), pod("lab", name, "Pending")).unwrap();
    }
    let config = InformerConfig::new()
        .reflector(fast_reflector().watch_idle_timeout(Duration::from_secs(1)));
    let inf = pods_informer(&server, config);
    let (seen, fns) = recorder();
    let reg = inf.add_event_handler(fns).unwrap();
    inf.start().unwrap();
    assert!(reg.wait_for_sync(PATIENCE));
    let backup = server.backup();

    // After the backup: six writes the informer sees, then the restore takes them back.
    let tier = |t: &str| json!({"metadata": {"labels": {"tier": t}}});
    server
        .create(&pods(), pod("lab", "pod-d", "Pending"))
        .unwrap();
    server
        .patch(&pods(), Some("lab"), "pod-b", &tier("front"))
        .unwrap();
    server.delete(&pods(), Some("lab"), "pod-c").unwrap();
    for t in ["x", "y", "z"] {
        server
            .patch(&pods(), Some("lab"), "pod-a", &tier(t))
            .unwrap();
    }
    let lister = inf.lister();
    let cached = || {
        let mut cached: Vec<(String, String)> = lister
            .list_all()
            .iter()
            .map(|o| {
                (
                    format!("lab/{}", o.metadata.name()),
                    o.metadata.resource_version().to_owned(),
                )
            })
            .collect();
        cached.sort();
        cached
    };
    wait_until("the cache has the writes", || {
        cached() == server.keys_and_versions(&pods())
    });
    let ahead = server.resource_version();
    let heard_before = seen.lock().len();
    server.restore(&backup).unwrap();
    assert!(server.resource_version() < ahead);
    // One write after the restore, still below the informer's version.
    server
        .create(&pods(), pod("lab", "pod-e", "Pending"))
        .unwrap();
    assert!(server.resource_version() < ahead);

    wait_until("the cache holds the restored state", || {
        cached() == server.keys_and_versions(&pods())
    });
    let expected = [
        Seen::Delete("pod-d".into()),
        Seen::Add("pod-c".into()),
        Seen::Update("pod-b".into(), String::new()),
        Seen::Update("pod-a".into(), String::new()),
        Seen::Add("pod-e".into()),
    ];
    wait_until("the handler heard of every difference", || {
        let seen = seen.lock();
        expected.iter().all(|e| seen[heard_before..].contains(e))
    });
    let health = inf.health();
    inf.stop();
    assert_eq!(
        health.reflector.relists.get(&RelistCause::ServerBehind),
        Some(&1),
        "{health:?}"
    );
    let error = health.last_error.expect("the health view says why");
    assert!(
        error.message.contains("restored from a backup"),
        "{}",
        error.message
    );
}
