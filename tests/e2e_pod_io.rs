//! Exec and port-forward against a real cluster, opt-in (feature `ws`):
//!
//! ```text
//! KUBE_E2E=1 cargo test --features ws --test e2e_pod_io -- --ignored --nocapture
//! ```
//!
//! The `real_*` tests are ignored by default, and even when run they only print `skipped: ...`
//! unless `KUBE_E2E=1` is set and a kubeconfig is found as kubectl finds one. They create a
//! namespace `kube-informer-e2e-io-<random>` with one busybox pod (pulled by the cluster;
//! `KUBE_E2E_BUSYBOX` names another image) and delete the namespace at the end, also when a
//! test fails. The same bodies run in `cargo test` against `testing::ApiServer` over TLS
//! (the `fake_*` tests), whose runtime plays the pod.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use kube_informer::pod::{CopyOptions, ExecParams, ExitStatus};
use kube_informer::testing::{ApiServer, CommandOutput, ContainerFiles};
use kube_informer::{Client, Method};
use serde_json::{json, Value};

const PATIENCE: Duration = Duration::from_secs(120);

/// The pod: `sh -c 'cat; exit 3'` works in it, it has `tar`, and its port 8080 answers
/// HTTP.
struct Env {
    client: Client,
    namespace: String,
    pod: String,
    _fake: Option<ApiServer>,
}

impl Drop for Env {
    fn drop(&mut self) {
        if self._fake.is_none() {
            let path = format!("/api/v1/namespaces/{}", self.namespace);
            let _ = self
                .client
                .request_json::<Value>(Method::DELETE, &path, None);
        }
    }
}

fn real() -> Option<Env> {
    let config = common::real_cluster()?;
    let client = config.client().expect("a client");
    let namespace = format!("kube-informer-e2e-io-{:08x}", common::random_u64() as u32);
    client
        .request_json::<Value>(
            Method::POST,
            "/api/v1/namespaces",
            Some(&json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":namespace}})),
        )
        .expect("create the namespace");
    let env = Env {
        client,
        namespace,
        pod: "io".into(),
        _fake: None,
    };
    let image = std::env::var("KUBE_E2E_BUSYBOX").unwrap_or_else(|_| "busybox:1.36".into());
    let pod = json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":env.pod},
        "spec":{"containers":[{"name":"main","image":image,
            "command":["sh","-c","mkdir -p /www && echo hello > /www/index.html && exec httpd -f -p 8080 -h /www"],
            "ports":[{"containerPort":8080}]}]}});
    let path = format!("/api/v1/namespaces/{}/pods", env.namespace);
    env.client
        .request_json::<Value>(Method::POST, &path, Some(&pod))
        .expect("create the pod");
    let deadline = Instant::now() + PATIENCE;
    loop {
        let p: Value = env
            .client
            .request_json(Method::GET, &format!("{path}/{}", env.pod), None)
            .unwrap();
        if p["status"]["phase"] == "Running" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the pod did not start: {}",
            p["status"]
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    Some(env)
}

fn fake() -> Env {
    let server = ApiServer::builder().tls().start();
    server.create_pod("e2e", "io", &["main"]).unwrap();
    // A container with tar and a /tmp, as busybox's (served first: a command registered
    // later is matched before its catch-all `sh`).
    let files = ContainerFiles::new();
    files.create_dir("/tmp", 0o1777);
    files.serve(server.runtime());
    server
        .runtime()
        .command(&["sh", "-c", "cat; exit 3"], |i| CommandOutput {
            stdout: i.stdin.clone(),
            stderr: Vec::new(),
            exit_code: 3,
        });
    let http = TcpListener::bind("127.0.0.1:0").unwrap();
    server
        .runtime()
        .port("e2e", "io", 8080, http.local_addr().unwrap());
    std::thread::spawn(move || {
        for s in http.incoming().flatten() {
            let mut s = s;
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            let _ = s.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 6\r\n\r\nhello\n");
        }
    });
    Env {
        client: Client::new(server.client_config()).unwrap(),
        namespace: "e2e".into(),
        pod: "io".into(),
        _fake: Some(server),
    }
}

fn exec_with_stdin_and_exit_code(env: &Env) {
    let out = env
        .client
        .exec_output(
            &env.namespace,
            &env.pod,
            &ExecParams::new(["sh", "-c", "cat; exit 3"]).idle_timeout(PATIENCE),
            b"hello through stdin\n",
        )
        .unwrap();
    assert_eq!(out.stdout, b"hello through stdin\n");
    assert_eq!(out.status, ExitStatus::Code(3));
}

fn port_forward(env: &Env) {
    let f = env
        .client
        .port_forward(&env.namespace, &env.pod, &[":8080".parse().unwrap()])
        .unwrap();
    let mut s = TcpStream::connect(f.ports()[0].local).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.write_all(b"GET /index.html HTTP/1.0\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1."), "{answer:?}");
    assert!(answer.ends_with("hello\n"), "{answer:?}");
    f.stop();
}

/// `kubectl cp` both ways: a local tree into the container, and back out into another
/// local directory, byte for byte.
fn copy_round_trip(env: &Env) {
    let local = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(local.path().join("tree/sub")).unwrap();
    std::fs::write(local.path().join("tree/a.txt"), b"alpha\n").unwrap();
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(local.path().join("tree/sub/big.bin"), &big).unwrap();
    let options = CopyOptions::new();
    env.client
        .copy_to_pod(
            &env.namespace,
            &env.pod,
            local.path().join("tree"),
            "/tmp/kit",
            &options,
        )
        .unwrap();
    let back = tempfile::tempdir().unwrap();
    let report = env
        .client
        .copy_from_pod(
            &env.namespace,
            &env.pod,
            "/tmp/kit",
            back.path().join("kit"),
            &options,
        )
        .unwrap();
    assert_eq!(
        std::fs::read(back.path().join("kit/a.txt")).unwrap(),
        b"alpha\n"
    );
    assert_eq!(
        std::fs::read(back.path().join("kit/sub/big.bin")).unwrap(),
        big
    );
    assert!(format!("{report:?}").contains("files"), "{report:?}");
}

#[test]
fn fake_exec_with_stdin_and_exit_code() {
    exec_with_stdin_and_exit_code(&fake());
}

#[test]
fn fake_port_forward() {
    port_forward(&fake());
}

#[test]
#[ignore = "needs a cluster: KUBE_E2E=1 cargo test --features ws --test e2e_pod_io -- --ignored"]
fn real_exec_with_stdin_and_exit_code() {
    if let Some(env) = real() {
        exec_with_stdin_and_exit_code(&env);
    }
}

#[test]
fn fake_copy_round_trip() {
    copy_round_trip(&fake());
}

#[test]
#[ignore = "needs a cluster: KUBE_E2E=1 cargo test --features ws --test e2e_pod_io -- --ignored"]
fn real_copy_round_trip() {
    if let Some(env) = real() {
        copy_round_trip(&env);
    }
}

#[test]
#[ignore = "needs a cluster: KUBE_E2E=1 cargo test --features ws --test e2e_pod_io -- --ignored"]
fn real_port_forward() {
    if let Some(env) = real() {
        port_forward(&env);
    }
}
