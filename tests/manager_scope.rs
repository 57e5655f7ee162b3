//! Issue 32: a Manager over informers of their own scope, resources that go away and come
//! back, and checks the application adds. A CRD deleted while its informer runs is *gone*
//! (not failing): liveness stays green, and when the CRD is created again the informer
//! lists again and its handlers hear of the new objects. Over loopback HTTP against
//! `testing::ApiServer` (its `remove_resource` answers 404 NotFound for the resource, as
//! for any path it does not serve).

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::view::View;
use common::*;
use kube_informer::api::ApiResource;
use kube_informer::cache::{
    FactoryOptions, InformerConfig, InformerScope, ReflectorConfig, SharedIndexInformer,
};
use kube_informer::manager::{Manager, ManagerBuilder};
use kube_informer::testing::ApiServer;
use kube_informer::{Api, Client};

fn widget(ns: &str, name: &str) -> serde_json::Value {
    serde_json::json!({"apiVersion": "lab.example.com/v1", "kind": "Widget",
        "metadata": {"name": name, "namespace": ns}, "spec": {"size": 1}})
}

fn fast_options() -> FactoryOptions {
    FactoryOptions::new().reflector(
        ReflectorConfig::new()
            .backoff(Duration::from_millis(20), Duration::from_millis(50))
            .gone_backoff_max(Duration::from_millis(200)),
    )
}

fn builder(server: &ApiServer) -> ManagerBuilder {
    Manager::builder_with_options(Client::new(server.client_config()).unwrap(), fast_options())
        .grace_period(Duration::from_secs(10))
        // Strict: any failing informer fails both probes at once.
        .unready_after(Duration::ZERO)
        .unhealthy_after(Duration::ZERO)
}

fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap();
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

#[test]
fn a_deleted_crd_is_gone_not_failing_and_its_informer_comes_back_with_the_crd() {
    let server = ApiServer::builder()
        .resource(&widgets())
        .bookmark_interval(Duration::from_millis(100))
        .start();
    server.create(&widgets(), widget("lab", "w1")).unwrap();
    server.create(&widgets(), widget("lab", "w2")).unwrap();
    let builder = builder(&server);
    let informer = builder.factory().dynamic_informer(&widgets());
    let view = View::default();
    informer.add_event_handler(view.clone()).unwrap();
    let manager = builder.start().unwrap();
    wait_until("the manager ready", || manager.readiness().passed());
    assert_eq!(view.snapshot().len(), 2);

    // The CRD is deleted: its objects go (DELETED events), its watch ends, and every list
    // and watch answers 404 from then on.
    server.remove_resource(&widgets());
    wait_until("the informer says gone", || informer.health().is_gone());
    let health = informer.health();
    assert!(
        health.failing_for.is_none(),
        "gone is not failing: {health}"
    );
    assert!(health.to_string().contains("gone"), "{health}");
    assert_eq!(
        health
            .last_error
            .as_ref()
            .and_then(|e| e.status.as_ref())
            .map(|s| s.code),
        Some(404)
    );
    let gone = manager.factory().health();
    assert!(gone.iter().all(|h| h.is_gone()), "{gone:?}");
    // Neither probe counts it (bounds of zero: anything failing would fail them).
    let errors_then = informer
        .health()
        .reflector
        .errors
        .get("api_404")
        .copied()
        .unwrap_or(0);
    wait_until("a few more 404s, on the slow back-off", || {
        informer
            .health()
            .reflector
            .errors
            .get("api_404")
            .copied()
            .unwrap_or(0)
            >= errors_then + 2
    });
    assert!(manager.liveness().passed(), "{}", manager.liveness());
    assert!(manager.readiness().passed(), "{}", manager.readiness());
    wait_until("the handler heard of the deletions", || {
        view.snapshot().is_empty()
    });

    // The CRD comes back with new objects: the informer lists again by itself.
    server.serve_resource(&widgets());
    server.create(&widgets(), widget("lab", "w3")).unwrap();
    wait_until("the handler hears of the new object", || {
        view.snapshot().iter().any(|(k, _)| k == "lab/w3")
    });
    wait_until("no longer gone", || !informer.health().is_gone());
    server.create(&widgets(), widget("lab", "w4")).unwrap();
    wait_until("and watches again", || view.snapshot().len() == 2);
    assert!(view.violations().is_empty(), "{:?}", view.violations());
    assert!(informer.has_synced());
    assert!(manager.liveness().passed());
    manager.stop().unwrap();
}

#[test]
fn a_gone_resource_fails_the_probes_when_the_manager_is_told_it_is_a_failure() {
    let server = ApiServer::builder().resource(&widgets()).start();
    let builder = builder(&server).gone_is_failure(true);
    let informer = builder.factory().dynamic_informer(&widgets());
    let manager = builder.start().unwrap();
    wait_until("the manager ready", || manager.readiness().passed());
    server.remove_resource(&widgets());
    wait_until("gone", || informer.health().is_gone());
    wait_until("liveness fails", || !manager.liveness().passed());
    let report = manager.liveness().to_string();
    assert!(report.contains("[-]watches failed"), "{report}");
    assert!(!manager.readiness().passed());
    manager.stop().unwrap();
}

#[test]
fn the_managers_checks_cover_every_informer_of_its_own_scope_and_those_given_to_it() {
    let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    let server = ApiServer::builder()
        .resource(&cms)
        .resource(&pods())
        .start();
    for ns in ["a", "b", "c"] {
        server
            .create(
                &cms,
                serde_json::json!({"metadata": {"name": "x", "namespace": ns}}),
            )
            .unwrap();
    }
    server.create(&pods(), pod("a", "p", "Running")).unwrap();
    let builder = builder(&server)
        .scope(&cms, InformerScope::new().namespaces(["a", "b"]))
        .scope(&pods(), InformerScope::new().namespace("a"));
    let cm_informer = builder.factory().dynamic_informer(&cms);
    let pod_informer = builder.factory().dynamic_informer(&pods());
    // An informer made outside the factory, not started yet: the manager's sync and checks
    // count it all the same.
    let outside: SharedIndexInformer<kube_informer::api::DynamicObject> = SharedIndexInformer::new(
        Api::all_with(Client::new(server.client_config()).unwrap(), &widgets()),
        InformerConfig::default(),
    );
    let manager = builder.informer(&outside).start().unwrap();
    assert!(cm_informer.wait_for_cache_sync(PATIENCE));
    assert!(pod_informer.wait_for_cache_sync(PATIENCE));
    let mut keys = cm_informer.store().list_keys();
    keys.sort();
    assert_eq!(keys, ["a/x", "b/x"]);
    assert_eq!(pod_informer.store().list_keys(), ["a/p"]);
    let report = manager.readiness();
    let sync = report.only("informer-sync").unwrap();
    assert!(
        !sync.passed(),
        "the outside informer is not started: {report}"
    );
    assert!(sync.to_string().contains("widgets not synced"), "{report}");
    outside.start().unwrap();
    wait_until("ready once the outside informer synced", || {
        manager.readiness().passed()
    });
    manager.stop().unwrap();
    outside.stop();
}

#[test]
fn application_checks_are_reported_by_name_on_the_probe_endpoint() {
    let server = ApiServer::builder().resource(&pods()).start();
    let warm = Arc::new(AtomicBool::new(false));
    let w = Arc::clone(&warm);
    let manager = builder(&server)
        .probe_addr("127.0.0.1:0")
        .readyz_check("cache-warm", move || {
            if w.load(Ordering::SeqCst) {
                Ok(())
            } else {
                Err("still warming".into())
            }
        })
        .healthz_check("worker-alive", || Ok(()))
        .healthz_check("panics", || panic!("boom"))
        .start()
        .unwrap();
    let addr = manager.probe_addr().unwrap();
    wait_until("informers synced", || {
        manager.readiness().only("controllers").unwrap().passed()
    });
    let (code, body) = get(addr, "/readyz?verbose");
    assert_eq!(code, 500, "{body}");
    assert!(
        body.contains("[-]cache-warm failed: still warming"),
        "{body}"
    );
    assert!(body.contains("[+]informer-sync ok"), "{body}");
    let (code, body) = get(addr, "/readyz/cache-warm");
    assert_eq!(code, 500, "{body}");
    warm.store(true, Ordering::SeqCst);
    let (code, body) = get(addr, "/readyz?verbose");
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("[+]cache-warm ok"), "{body}");
    // A panicking check fails, with the reason; the endpoint keeps answering.
    let (code, body) = get(addr, "/healthz?verbose");
    assert_eq!(code, 500, "{body}");
    assert!(body.contains("[+]worker-alive ok"), "{body}");
    assert!(
        body.contains("[-]panics failed: the check panicked: boom"),
        "{body}"
    );
    let (code, _) = get(addr, "/livez/worker-alive");
    assert_eq!(code, 200);
    manager.stop().unwrap();

    // Names must be new and usable as a path segment.
    for name in ["ping", "a/b", "", "twice"] {
        let mut b = builder(&server).readyz_check(name, || Ok(()));
        if name == "twice" {
            b = b.readyz_check("twice", || Ok(()));
        }
        assert!(b.start().is_err(), "{name:?} accepted");
    }
}
