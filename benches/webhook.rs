//! Admission reviews per second on loopback: a mutating hook (the example's: one label
//! added, the JSON patch computed) served by `serve::Server` over TLS, called by clients on
//! keep-alive connections, each sending a review of a small ConfigMap and reading the
//! answer before the next.
//!
//! ```text
//! cargo bench --features webhook --bench webhook
//! ```
//!
//! Prints one line per client count: `webhook: N clients: R reviews/s (M reviews in S s)`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube_informer::serve::{Router, Server, TlsFiles};
use kube_informer::testing::{CA_PEM, SERVER_CERT_PEM, SERVER_KEY_PEM};
use kube_informer::webhook::{AdmissionHook, Verdict};
use rustls::pki_types::pem::PemObject;
use serde_json::{json, Value};

const RUN: Duration = Duration::from_secs(3);

fn client_config() -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls::pki_types::CertificateDer::pem_slice_iter(CA_PEM.as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth(),
    )
}

type Tls = BufReader<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>;

fn connect(addr: std::net::SocketAddr, config: &Arc<rustls::ClientConfig>) -> Tls {
    let conn =
        rustls::ClientConnection::new(Arc::clone(config), "127.0.0.1".try_into().unwrap()).unwrap();
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_nodelay(true).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    BufReader::new(rustls::StreamOwned::new(conn, tcp))
}

/// Reviews sent on keep-alive connections until `until` (a new connection, with a new TLS
/// handshake, each time the server ends one: at its requests-per-connection bound).
fn client(addr: std::net::SocketAddr, until: Instant) -> u64 {
    let config = client_config();
    let mut tls = connect(addr, &config);
    let body = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
        "resource": {"group": "", "version": "v1", "resource": "configmaps"},
        "namespace": "lab", "name": "settings", "operation": "CREATE",
        "userInfo": {"username": "system:admin", "groups": ["system:masters"]},
        "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings",
            "namespace": "lab", "labels": {"app": "web"}}, "data": {"mode": "bench"}}}})
    .to_string();
    let request = format!(
        "POST /mutate?timeout=10s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut n = 0;
    let mut line = String::new();
    let mut answer = Vec::new();
    while Instant::now() < until {
        tls.get_mut().write_all(request.as_bytes()).unwrap();
        let (mut length, mut close) = (0, false);
        loop {
            line.clear();
            assert!(tls.read_line(&mut line).unwrap() > 0, "the server hung up");
            if line == "\r\n" {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap();
                }
                if k.eq_ignore_ascii_case("connection") && v.trim().eq_ignore_ascii_case("close") {
                    close = true;
                }
            }
        }
        answer.resize(length, 0);
        tls.read_exact(&mut answer).unwrap();
        n += 1;
        if close {
            tls = connect(addr, &config);
        }
    }
    let v: Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(v["response"]["patchType"], "JSONPatch");
    n
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tls.crt"), SERVER_CERT_PEM).unwrap();
    std::fs::write(dir.path().join("tls.key"), SERVER_KEY_PEM).unwrap();
    let router = Router::new().route(
        "/mutate",
        AdmissionHook::mutating(|_req, obj: &mut Value| {
            obj["metadata"]["labels"]["mutated-by"] = json!("kube-informer");
            Verdict::allow()
        }),
    );
    let server = Server::builder("bench")
        .tls(TlsFiles::new(dir.path()))
        .bind("127.0.0.1:0", router)
        .unwrap();
    let addr = server.addr();
    for clients in [1, 4] {
        let start = Instant::now();
        let until = start + RUN;
        let threads: Vec<_> = (0..clients)
            .map(|_| std::thread::spawn(move || client(addr, until)))
            .collect();
        let total: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
        let secs = start.elapsed().as_secs_f64();
        println!(
            "webhook: {clients} clients: {:.0} reviews/s ({total} reviews in {secs:.1} s)",
            total as f64 / secs
        );
    }
    server.stop();
}
