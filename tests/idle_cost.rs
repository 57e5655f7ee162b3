//! What an idle informer holds: once synced and watching, an informer with one handler (no
//! resync) holds one connection (its watch; the list's connection is closed, not kept idle
//! beside it until the next relist) and three threads (`refl`, `inf`, `lis0`). A binary of
//! its own, with one test: thread counts from /proc must not see other tests' threads.

mod common;

use std::sync::Arc;

use common::*;
use kube_informer::api::DynamicObject;
use kube_informer::cache::{HandlerFns, InformerConfig, ReflectorConfig};
use kube_informer::testing::ApiServer;

#[test]
fn an_idle_informer_holds_one_connection_and_three_threads() {
    let server = ApiServer::builder().resource(&pods()).start();
    for i in 0..5 {
        server
            .create(&pods(), pod("lab", &format!("p{i}"), "Pending"))
            .unwrap();
    }
    let before = thread_names();
    // A paged list of several pages, on connections kept for reuse between its pages.
    let config = InformerConfig::new().reflector(ReflectorConfig::new().page_size(2));
    let inf = pods_informer(&server, config);
    inf.add_event_handler(HandlerFns::new().on_add(|_: Arc<DynamicObject>, _| {}))
        .unwrap();
    inf.start().unwrap();
    assert!(inf.wait_for_cache_sync(PATIENCE));
    wait_until("watching", || inf.is_watching());
    wait_until("one connection: the watch's", || {
        server.open_connections() == 1
    });
    if std::path::Path::new("/proc/self/task").exists() {
        let ours: Vec<String> = thread_names()
            .into_iter()
            .filter(|n| n.starts_with("ki/") && !before.contains(n))
            .collect();
        let mut roles: Vec<&str> = ours.iter().map(|n| n.rsplit('/').next().unwrap()).collect();
        roles.sort();
        assert_eq!(roles, ["inf", "lis0", "refl"], "{ours:?}");
    }
    inf.stop();
}
