//! Shutdown joins every thread: counted from /proc in a test binary of its own, so no other
//! test's threads come and go meanwhile.

mod common;

use std::time::Duration;

use common::view::View;
use common::*;
use kube_informer::cache::{FactoryOptions, SharedInformerFactory};
use kube_informer::testing::ApiServer;
use kube_informer::Client;

#[test]
fn shutdown_joins_every_thread() {
    if !std::path::Path::new("/proc/self/task").exists() {
        eprintln!("no /proc: thread counting skipped");
        return;
    }
    let server = ApiServer::builder()
        .resource(&pods())
        .bookmark_interval(Duration::from_millis(100))
        .start();
    for i in 0..50 {
        server
            .create(&pods(), pod("lab", &format!("p{i}"), "Pending"))
            .unwrap();
    }
    let before = thread_names();
    let options = FactoryOptions::new().default_resync(Duration::from_millis(200));
    let factory =
        SharedInformerFactory::with_options(Client::new(server.client_config()).unwrap(), options);
    let pods_informer = factory.dynamic_informer(&pods());
    let widgets_informer = factory.dynamic_informer(&widgets());
    let views: Vec<View> = (0..4).map(|_| View::default()).collect();
    for v in &views {
        pods_informer.add_event_handler(v.clone()).unwrap();
    }
    widgets_informer.add_event_handler(View::default()).unwrap();
    factory.start().unwrap();
    assert!(factory.wait_for_cache_sync(PATIENCE).all_synced());
    wait_until("watching", || {
        pods_informer.is_watching() && widgets_informer.is_watching()
    });
    // The library's threads are `ki/<resource>/<role>`, 15 bytes at most, so /proc shows
    // them whole (the test API server's are `kiapi/...`).
    let informer_threads = |names: &[String]| names.iter().filter(|n| n.starts_with("ki/")).count();
    let during = thread_names();
    let ours = informer_threads(&during) - informer_threads(&before);
    for (name, count) in [("ki/pods/refl", 1), ("ki/pods/inf", 1), ("ki/pods/rsyn", 1)] {
        assert_eq!(
            during.iter().filter(|n| *n == name).count(),
            count,
            "{name}: {during:?}"
        );
    }
    for i in 0..4 {
        let name = format!("ki/pods/lis{i}");
        assert!(during.contains(&name), "{name}: {during:?}");
    }
    assert!(during.contains(&"ki/widgets/lis0".to_owned()), "{during:?}");
    // Per informer: reflector, process, resync, one per handler.
    assert_eq!(ours, 2 * 3 + 5, "{during:?}");
    drop(pods_informer);
    drop(widgets_informer);
    factory.shutdown();
    // Joined means gone at once: no waiting here.
    assert_eq!(
        informer_threads(&thread_names()),
        informer_threads(&before),
        "{:?}",
        thread_names()
    );
    drop(server);
}
