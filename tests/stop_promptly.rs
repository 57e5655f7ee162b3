//! "Stopping returns within a second", whatever the reflector is waiting for: a server's
//! `Retry-After`, the client-side rate limit, a list the server is slow to answer, a watch
//! whose headers have not come, an exec credential plugin; and a factory stops its informers
//! together. In each test the server (or plugin) would hold the reflector for a minute or
//! more; stop must return within 5 s — a bound far from the normal case (milliseconds) and
//! far below what the old code took.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use kube_informer::api::{ApiResource, DynamicObject};
use kube_informer::cache::{DeltaFifo, Reflector, ReflectorConfig, SharedInformerFactory};
use kube_informer::client::Auth;
use kube_informer::config::{ExecConfig, ExecProvider};
use kube_informer::testing::{ApiServer, Fault, Target};
use kube_informer::{Api, Client, ClientConfig};

/// Generous upper bound for a stop that is promised within a second.
const STOP_BOUND: Duration = Duration::from_secs(5);

fn seeded() -> ApiServer {
    let server = ApiServer::builder().resource(&pods()).start();
    for i in 0..5 {
        server
            .create(&pods(), pod("lab", &format!("pod-{i}"), "Pending"))
            .unwrap();
    }
    server
}

fn start(config: ClientConfig) -> (Reflector, Arc<DeltaFifo<DynamicObject>>) {
    let api: Api<DynamicObject> = Api::all_with(Client::new(config).unwrap(), &pods());
    let fifo = Arc::new(DeltaFifo::new(None));
    let r = Reflector::start(api, fifo.clone(), ReflectorConfig::default()).unwrap();
    (r, fifo)
}

fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn requests_where(server: &ApiServer, pred: impl Fn(&str) -> bool) -> usize {
    server.requests().iter().filter(|r| pred(r)).count()
}

fn is_list(r: &str) -> bool {
    r.starts_with("GET /api/v1/pods") && !r.contains("watch=")
}

/// Runs `stop` on a thread and asserts it returned within [`STOP_BOUND`].
fn assert_stops_promptly(what: &str, stop: impl FnOnce() + Send + 'static) {
    let (tx, rx) = std::sync::mpsc::channel();
    let t = std::thread::spawn(move || {
        stop();
        let _ = tx.send(());
    });
    assert!(
        rx.recv_timeout(STOP_BOUND).is_ok(),
        "stop did not return within {STOP_BOUND:?} {what}"
    );
    t.join().unwrap();
}

#[test]
fn stop_returns_promptly_during_a_retry_after_wait() {
    let server = seeded();
    for _ in 0..5 {
        server.inject(Target::List, Fault::too_many_requests(10));
    }
    let (r, _fifo) = start(server.client_config());
    wait_until("the first 429", || requests_where(&server, is_list) >= 1);
    assert_stops_promptly("while waiting out Retry-After: 10", move || r.stop());
}

#[test]
fn stop_returns_promptly_during_the_rate_limit_wait() {
    let server = seeded();
    let mut config = server.client_config();
    // One request free, then one per 100 s: the watch after the list waits for a token.
    config.qps = 0.01;
    config.burst = 1;
    let (r, _fifo) = start(config);
    wait_until("the list", || !r.last_sync_resource_version().is_empty());
    assert_stops_promptly("while waiting for the rate limit", move || r.stop());
}

#[test]
fn stop_returns_promptly_during_a_list_the_server_is_slow_to_answer() {
    let server = seeded();
    server.inject(Target::List, Fault::Stall(Duration::from_secs(120)));
    let (r, _fifo) = start(server.client_config());
    wait_until("the list request", || requests_where(&server, is_list) >= 1);
    assert_stops_promptly("while a list is in flight", move || r.stop());
}

#[test]
fn stop_returns_promptly_while_a_watch_is_connecting() {
    let server = seeded();
    server.inject(Target::Watch, Fault::Stall(Duration::from_secs(120)));
    let (r, _fifo) = start(server.client_config());
    wait_until("the watch request", || {
        requests_where(&server, |r| r.contains("watch=1")) >= 1
    });
    assert_stops_promptly("before the watch's headers came", move || r.stop());
}

#[cfg(unix)]
#[test]
fn stop_returns_promptly_while_an_exec_plugin_runs() {
    let server = seeded();
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    let plugin = dir.path().join("slow-login");
    std::fs::write(
        &plugin,
        format!("#!/bin/sh\ntouch '{}'\nexec sleep 120\n", started.display()),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let exec = ExecConfig {
        api_version: Some("client.authentication.k8s.io/v1".into()),
        command: plugin.display().to_string(),
        interactive_mode: Some("Never".into()),
        ..Default::default()
    };
    let mut config = server.client_config();
    config.auth = Auth::Provider(Arc::new(ExecProvider::new(exec, None).unwrap()));
    let (r, _fifo) = start(config);
    wait_until("the plugin running", || started.exists());
    assert_stops_promptly("while the credential plugin runs", move || r.stop());
}

#[test]
fn factory_shutdown_stops_its_informers_together() {
    let server = seeded();
    let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    let secrets = ApiResource::new("", "v1", "Secret", "secrets", true);
    for _ in 0..15 {
        server.inject(Target::List, Fault::too_many_requests(10));
    }
    let factory = SharedInformerFactory::new(Client::new(server.client_config()).unwrap());
    factory.dynamic_informer(&pods());
    factory.dynamic_informer(&cms);
    factory.dynamic_informer(&secrets);
    factory.start().unwrap();
    wait_until("every informer's first 429", || {
        requests_where(&server, |r| !r.contains("watch=")) >= 3
    });
    assert_stops_promptly("with three informers in Retry-After waits", move || {
        factory.shutdown()
    });
}
