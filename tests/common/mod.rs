//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod capture;
pub mod controllers;
pub mod e2e;
pub mod proxies;
pub mod raw_request;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use kube_informer::api::ApiResource;

/// Generous bound for anything the tests wait on (never a timing assertion).
pub const PATIENCE: Duration = Duration::from_secs(30);

pub fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

pub fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(fixture_path(name)).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

/// Names of the fixtures matching a predicate, sorted.
pub fn fixtures_where(pred: impl Fn(&str) -> bool) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(fixture_path(""))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| pred(n))
        .collect();
    v.sort();
    v
}

/// The HTTP status code of a captured response (`HTTP/2 410` in `NAME.headers`).
pub fn fixture_code(name: &str) -> u16 {
    let headers = String::from_utf8(fixture(&format!("{name}.headers"))).unwrap();
    headers
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("status line")
}

pub fn pods() -> ApiResource {
    ApiResource::new("", "v1", "Pod", "pods", true)
}

pub fn widgets() -> ApiResource {
    ApiResource::new("lab.example.com", "v1", "Widget", "widgets", true)
}

/// A pod body shaped like the captures (labels, a container, a status phase).
pub fn pod(ns: &str, name: &str, phase: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": "lab", "idx": name}},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
        "status": {"phase": phase}
    })
}

/// A one-shot HTTP server that answers every request with a captured body and status code
/// (chunked for `.jsonl` watch captures), to run captures through the real client.
pub struct Replay {
    pub url: String,
    stop: Option<mpsc::Sender<()>>,
}

impl Drop for Replay {
    fn drop(&mut self) {
        self.stop.take();
        // Wake the accept loop so it sees the closed channel and ends.
        let _ = std::net::TcpStream::connect(self.url.trim_start_matches("http://"));
    }
}

pub fn replay(name: &str) -> Replay {
    let body = fixture(name);
    let code = fixture_code(name);
    let chunked = name.ends_with(".jsonl");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel::<()>();
    std::thread::Builder::new()
        .name("test/replay".into())
        .spawn(move || {
            for stream in listener.incoming() {
                if matches!(rx.try_recv(), Err(mpsc::TryRecvError::Disconnected)) {
                    return;
                }
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                while reader.read_line(&mut line).unwrap_or(0) > 2 {
                    line.clear();
                }
                let head = if chunked {
                    format!("HTTP/1.1 {code} X\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n")
                } else {
                    format!("HTTP/1.1 {code} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len())
                };
                let _ = stream.write_all(head.as_bytes());
                if chunked {
                    for l in body.split_inclusive(|&b| b == b'\n') {
                        let _ = write!(stream, "{:x}\r\n", l.len());
                        let _ = stream.write_all(l);
                        let _ = stream.write_all(b"\r\n");
                    }
                    let _ = stream.write_all(b"0\r\n\r\n");
                } else {
                    let _ = stream.write_all(&body);
                }
            }
        })
        .unwrap();
    Replay {
        url,
        stop: Some(tx),
    }
}

/// A raw GET (status code and body text), to compare the test server's bytes with captures.
pub fn raw_get(url: &str, token: Option<&str>) -> (u16, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut req = agent.get(url);
    if let Some(t) = token {
        req = req.header("authorization", &format!("Bearer {t}"));
    }
    let mut res = req.call().unwrap();
    let code = res.status().as_u16();
    (code, res.body_mut().read_to_string().unwrap())
}

/// A handler that rebuilds the server's state from its notifications and records anything
/// inconsistent (an add for a key it already has, an update or delete for one it lacks).
pub mod view {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use kube_informer::api::DynamicObject;
    use kube_informer::cache::{DeletedObject, EventHandler};
    use parking_lot::Mutex;

    #[derive(Default)]
    pub struct ViewState {
        pub objects: BTreeMap<String, String>,
        pub violations: Vec<String>,
        pub adds: usize,
        pub initial_adds: usize,
        pub updates: usize,
        pub resyncs: usize,
        pub deletes: usize,
        pub tombstones: usize,
    }

    #[derive(Clone, Default)]
    pub struct View(pub Arc<Mutex<ViewState>>);

    impl View {
        pub fn snapshot(&self) -> Vec<(String, String)> {
            self.0
                .lock()
                .objects
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        }
        pub fn violations(&self) -> Vec<String> {
            self.0.lock().violations.clone()
        }
    }

    impl EventHandler<DynamicObject> for View {
        fn on_add(&mut self, obj: Arc<DynamicObject>, initial: bool) {
            let mut s = self.0.lock();
            let key = obj.metadata.key();
            s.adds += 1;
            if initial {
                s.initial_adds += 1;
            }
            if s.objects.contains_key(&key) {
                s.violations.push(format!("duplicate add of {key}"));
            }
            s.objects
                .insert(key, obj.metadata.resource_version().to_owned());
        }
        fn on_update(&mut self, old: Arc<DynamicObject>, new: Arc<DynamicObject>) {
            let mut s = self.0.lock();
            let key = new.metadata.key();
            s.updates += 1;
            if Arc::ptr_eq(&old, &new) {
                s.resyncs += 1;
            }
            if !s.objects.contains_key(&key) {
                s.violations.push(format!("update of unknown {key}"));
            }
            s.objects
                .insert(key, new.metadata.resource_version().to_owned());
        }
        fn on_delete(&mut self, obj: DeletedObject<DynamicObject>) {
            let mut s = self.0.lock();
            let key = obj.object().metadata.key();
            s.deletes += 1;
            if obj.is_tombstone() {
                s.tombstones += 1;
            }
            if s.objects.remove(&key).is_none() {
                s.violations.push(format!("delete of unknown {key}"));
            }
        }
    }
}

/// Waits (bounded by PATIENCE) for a condition; panics with `what` when it never holds.
pub fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + PATIENCE;
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Creates, updates and deletes pods on the server (round `round`, `n` pods).
pub fn churn(server: &kube_informer::testing::ApiServer, round: usize, n: usize) {
    for i in 0..n {
        let name = format!("churn-{round}-{i}");
        server
            .create(&pods(), pod("lab", &name, "Pending"))
            .unwrap();
        if i % 2 == 0 {
            server
                .patch(
                    &pods(),
                    Some("lab"),
                    &name,
                    &serde_json::json!({"status": {"phase": "Running"}}),
                )
                .unwrap();
        }
        if i % 3 == 0 {
            server.delete(&pods(), Some("lab"), &name).unwrap();
        }
    }
}

/// Names of this process's threads, leaving out those already exiting: a joined thread has
/// finished, but the kernel may list it for a moment longer while it tears it down. Empty
/// where there is no /proc.
pub fn thread_names() -> Vec<String> {
    const PF_EXITING: u64 = 0x4;
    let mut names: Vec<String> = std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("stat")).ok())
                .filter_map(|stat| {
                    // `pid (comm) state ppid pgrp session tty tpgid flags ...`
                    let (head, rest) = stat.rsplit_once(')')?;
                    let name = head.split_once('(')?.1.to_owned();
                    let flags: u64 = rest.split_whitespace().nth(6)?.parse().ok()?;
                    (flags & PF_EXITING == 0).then_some(name)
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// A number that differs from run to run (seeds, unique names); not for cryptography.
pub fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish()
}

/// An informer on the test server's pods.
pub fn pods_informer(
    server: &kube_informer::testing::ApiServer,
    config: kube_informer::cache::InformerConfig<kube_informer::api::DynamicObject>,
) -> kube_informer::cache::SharedIndexInformer<kube_informer::api::DynamicObject> {
    let client = kube_informer::Client::new(server.client_config()).unwrap();
    kube_informer::cache::SharedIndexInformer::new(
        kube_informer::Api::all_with(client, &pods()),
        config,
    )
}

/// Informer settings with back-off short enough for tests (50 ms doubling to 400 ms).
pub fn fast_config() -> kube_informer::cache::InformerConfig<kube_informer::api::DynamicObject> {
    kube_informer::cache::InformerConfig::new().reflector(fast_reflector())
}

/// Reflector settings with back-off short enough for tests (50 ms doubling to 400 ms).
pub fn fast_reflector() -> kube_informer::cache::ReflectorConfig {
    kube_informer::cache::ReflectorConfig::new()
        .backoff(Duration::from_millis(50), Duration::from_millis(400))
}

/// Copies bytes both ways between a proxy's client and the server it tunnels to, until
/// both sides are done (a CONNECT tunnel's body).
pub fn splice(client: std::net::TcpStream, server: std::net::TcpStream) {
    let (mut c2, mut s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut c2, &mut s2);
        let _ = s2.shutdown(std::net::Shutdown::Write);
    });
    let (mut client, mut server) = (client, server);
    let _ = std::io::copy(&mut server, &mut client);
    let _ = client.shutdown(std::net::Shutdown::Write);
}

/// The cluster the kubeconfig names, for the opt-in end-to-end tests: `None` (after saying
/// why) unless `KUBE_E2E=1` is set and a kubeconfig is found as kubectl finds one (or this is
/// a pod); a kubeconfig that cannot be loaded fails the test.
#[allow(dead_code)]
pub fn real_cluster() -> Option<kube_informer::config::Config> {
    use kube_informer::config::{Config, KubeconfigOptions};
    if std::env::var("KUBE_E2E").as_deref() != Ok("1") {
        println!("skipped: set KUBE_E2E=1 to run the end-to-end suite against a real cluster");
        return None;
    }
    match Config::infer_if_configured(&KubeconfigOptions::default()) {
        Ok(Some(config)) => {
            println!("e2e: against {}", config.source);
            Some(config)
        }
        Ok(None) => {
            println!("skipped: KUBE_E2E=1 but no kubeconfig was found (KUBECONFIG, ~/.kube/config) and this is not a pod");
            None
        }
        Err(e) => panic!("KUBE_E2E=1 but the kubeconfig cannot be loaded: {e}"),
    }
}

/// `apiextensions.k8s.io/v1` CustomResourceDefinitions.
pub fn crds() -> ApiResource {
    ApiResource::new(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
    )
}
