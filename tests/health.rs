//! Failures that speak: an informer that cannot sync says why (its health view, the
//! factory's sync report), counts what it does, and logs each error once at the level a
//! user expects. Over loopback HTTP against `testing::ApiServer`.

mod common;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use common::view::View;
use common::*;
use kube_informer::api::DynamicObject;
use kube_informer::cache::{
    FactoryOptions, InformerConfig, ReflectorConfig, RelistCause, SharedInformerFactory,
};
use kube_informer::testing::{ApiServer, Fault, Target};
use kube_informer::Client;
use parking_lot::Mutex;

/// Every log record of this test binary: (level, target, message).
type Records = Mutex<Vec<(log::Level, String, String)>>;

struct Capture(&'static Records);

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, r: &log::Record) {
        self.0
            .lock()
            .push((r.level(), r.target().to_owned(), r.args().to_string()));
    }
    fn flush(&self) {}
}

fn records() -> &'static Records {
    static RECORDS: OnceLock<&'static Records> = OnceLock::new();
    RECORDS.get_or_init(|| {
        let records: &'static Records = Box::leak(Box::default());
        log::set_logger(Box::leak(Box::new(Capture(records)))).unwrap();
        log::set_max_level(log::LevelFilter::Trace);
        records
    })
}

/// The records that mention `name` (each test names its informer uniquely).
fn logged(name: &str, level: log::Level) -> Vec<String> {
    records()
        .lock()
        .iter()
        .filter(|(l, _, m)| *l == level && m.contains(&format!("kube-informer/{name}:")))
        .map(|(_, _, m)| m.clone())
        .collect()
}

fn server() -> ApiServer {
    let server = ApiServer::builder()
        .resource(&pods())
        .bookmark_interval(Duration::from_millis(100))
        .start();
    for i in 0..5 {
        server
            .create(&pods(), pod("lab", &format!("pod-{i}"), "Pending"))
            .unwrap();
    }
    server
}

fn config(name: &str) -> InformerConfig<DynamicObject> {
    InformerConfig::new().reflector(
        ReflectorConfig::new()
            .name(name)
            .backoff(Duration::from_millis(20), Duration::from_millis(100)),
    )
}

#[test]
fn a_forbidden_list_shows_in_the_health_view_with_its_status() {
    records();
    let server = server();
    for _ in 0..3 {
        server.inject(Target::List, Fault::status(403));
    }
    let inf = pods_informer(&server, config("health-403"));
    inf.start().unwrap();
    wait_until("three failures", || inf.health().consecutive_failures >= 3);
    let h = inf.health();
    assert!(!h.synced && h.running && !h.watching, "{h}");
    let last = h.last_error.clone().expect("the last error");
    assert_eq!(last.status.as_ref().map(|s| s.code), Some(403), "{last:?}");
    assert_eq!(last.kind, "api_403");
    assert_eq!(h.reflector.errors.get("api_403"), Some(&3));
    assert_eq!(h.reflector.list_failures, 3);
    let line = h.to_string();
    assert!(
        line.contains("health-403: not synced") && line.contains("403"),
        "{line}"
    );
    // It recovers by itself; the run of failures ends, the last error stays visible.
    assert!(inf.wait_for_cache_sync(PATIENCE), "{}", inf.health());
    wait_until("watching", || inf.is_watching());
    let h = inf.health();
    assert!(
        h.synced && h.consecutive_failures == 0 && h.is_healthy(),
        "{h}"
    );
    assert_eq!(h.reflector.lists, 1);
    assert!(h.last_error.is_some());
    assert_eq!(h.cached, 5);
    // No callback: each error is logged once, at warn.
    assert_eq!(logged("health-403", log::Level::Warn).len(), 3);
    wait_until("the sync logged at info", || {
        logged("health-403", log::Level::Info)
            .iter()
            .any(|m| m.contains("synced 5 objects in"))
    });
    inf.stop();
    assert!(!inf.health().running);
}

#[test]
fn a_factory_says_which_informer_did_not_sync_and_why() {
    records();
    let server = server();
    // A client with the wrong token: every request is refused with 401.
    let secure = ApiServer::builder()
        .resource(&pods())
        .token("right-token")
        .start();
    let mut cfg = secure.client_config();
    cfg.auth =
        kube_informer::client::Auth::Bearer(kube_informer::client::Secret::new("wrong-token"));
    let refused = SharedInformerFactory::new(Client::new(cfg).unwrap());
    let fine = SharedInformerFactory::with_options(
        Client::new(server.client_config()).unwrap(),
        FactoryOptions::default(),
    );
    refused.dynamic_informer(&pods());
    fine.dynamic_informer(&pods());
    refused.start().unwrap();
    fine.start().unwrap();
    let ok = fine.wait_for_cache_sync(PATIENCE);
    assert!(ok.all_synced(), "{ok}");
    assert_eq!(ok.synced("pods.v1 (DynamicObject)"), Some(true), "{ok}");
    let report = refused.wait_for_cache_sync(Duration::from_millis(1500));
    assert!(!report.all_synced());
    let bad: Vec<_> = report.not_synced().collect();
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].name, "pods.v1 (DynamicObject)");
    let text = report.to_string();
    assert!(text.starts_with("0 of 1 informers synced"), "{text}");
    assert!(text.contains("401"), "{text}");
    assert!(!text.contains("wrong-token"), "{text}");
    refused.shutdown();
    fine.shutdown();
}

#[test]
fn counters_count_lists_events_bookmarks_relists_and_handler_work() {
    records();
    let server = server();
    let errors = Arc::new(Mutex::new(0));
    let seen = errors.clone();
    let inf = pods_informer(
        &server,
        config("health-counters").on_watch_error(move |_| *seen.lock() += 1),
    );
    let view = View::default();
    let reg = inf.add_event_handler(view.clone()).unwrap();
    inf.start().unwrap();
    assert!(reg.wait_for_sync(PATIENCE));
    wait_until("watching", || inf.is_watching());
    for i in 0..4 {
        server
            .create(&pods(), pod("lab", &format!("new-{i}"), "Pending"))
            .unwrap();
    }
    wait_until("the handler has the new pods", || {
        view.snapshot() == server.keys_and_versions(&pods())
    });
    wait_until("a bookmark", || inf.health().reflector.bookmarks > 0);
    // A 410 on the next watch: relist from the last version. A real server says 410 only
    // once it has moved past that version (a write elsewhere stands for it): otherwise a
    // list at least as fresh answers the same version and a consistent list follows.
    let cms = kube_informer::api::ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    server
        .create(
            &cms,
            serde_json::json!({"metadata": {"name": "elsewhere", "namespace": "lab"}}),
        )
        .unwrap();
    server.inject(Target::Watch, Fault::status(410));
    server.disconnect_all();
    wait_until("a relist", || {
        inf.health().reflector.relists.get(&RelistCause::Expired) == Some(&1)
    });
    wait_until("watching again", || inf.is_watching());
    let h = inf.health();
    assert_eq!(h.reflector.events, 4, "{:?}", h.reflector);
    assert_eq!(h.reflector.lists, 2, "{:?}", h.reflector);
    assert!(h.reflector.watch_restarts >= 2, "{:?}", h.reflector);
    assert!(!h.reflector.last_resource_version.is_empty());
    assert_eq!(h.handlers.len(), 1);
    // 5 listed, 4 added, then all 9 again (as updates) from the relist.
    wait_until("the relist delivered", || reg.stats().delivered == 18);
    let stats = reg.stats();
    assert_eq!((stats.backlog, stats.coalesced, stats.panics), (0, 0, 0));
    assert_eq!(inf.health().handlers, vec![stats]);
    let relist = logged("health-counters", log::Level::Info);
    assert!(
        relist.iter().any(|m| m.contains("relisting (expired")),
        "{relist:?}"
    );
    // With a callback, the errors went to it and to the log at debug only.
    assert!(*errors.lock() >= 1);
    assert!(logged("health-counters", log::Level::Warn).is_empty());
    assert!(!logged("health-counters", log::Level::Debug).is_empty());
    inf.stop();
}
