//! Serving benchmark (issue 33): prints figures, asserts nothing.
//!
//! 1. Requests per second for `/healthz` on a manager's probe endpoint over loopback: C
//!    client threads, each on one keep-alive connection, for a few seconds; then the same
//!    with a new connection per request (what the kubelet does).
//! 2. Memory per idle connection: the process's resident memory before and after N plain
//!    connections that have sent nothing (each holds a server thread), then N TLS
//!    connections that shook hands and went quiet.
//!
//! `cargo bench --bench serve` (C = 4, N = 1000); `cargo bench --bench serve -- --hold 30`
//! keeps the probe endpoint up 30 s and prints its address, for `wrk -t2 -c16 -d10s
//! http://ADDR/healthz`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube_informer::manager::Manager;
use kube_informer::serve::{Limits, Request, Response, Router, Server, TlsFiles};
use kube_informer::testing::{ApiServer, SERVER_CERT_PEM, SERVER_KEY_PEM};
use kube_informer::Client;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Reads one answer (head and a Content-Length body).
fn read_answer(r: &mut BufReader<TcpStream>) -> bool {
    let mut len = 0usize;
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return false;
        }
        if line == "\r\n" {
            break;
        }
        if let Some(v) = line.strip_prefix("Content-Length: ") {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).is_ok()
}

fn keep_alive(addr: SocketAddr, threads: usize, for_: Duration) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (stop, count) = (Arc::clone(&stop), Arc::clone(&count));
            std::thread::spawn(move || {
                let s = TcpStream::connect(addr).unwrap();
                s.set_nodelay(true).unwrap();
                let mut w = s.try_clone().unwrap();
                let mut r = BufReader::new(s);
                while !stop.load(Ordering::Relaxed) {
                    w.write_all(b"GET /healthz HTTP/1.1\r\nHost: b\r\n\r\n")
                        .unwrap();
                    if !read_answer(&mut r) {
                        // The per-connection cap: a new connection.
                        let s = TcpStream::connect(addr).unwrap();
                        s.set_nodelay(true).unwrap();
                        w = s.try_clone().unwrap();
                        r = BufReader::new(s);
                        continue;
                    }
                    count.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let t0 = Instant::now();
    std::thread::sleep(for_);
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().unwrap();
    }
    count.load(Ordering::Relaxed) as f64 / t0.elapsed().as_secs_f64()
}

fn new_connections(addr: SocketAddr, threads: usize, for_: Duration) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (stop, count) = (Arc::clone(&stop), Arc::clone(&count));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let mut s = TcpStream::connect(addr).unwrap();
                    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n")
                        .unwrap();
                    let mut all = Vec::new();
                    let _ = s.read_to_end(&mut all);
                    if all.starts_with(b"HTTP/1.1 200") {
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    let t0 = Instant::now();
    std::thread::sleep(for_);
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().unwrap();
    }
    count.load(Ordering::Relaxed) as f64 / t0.elapsed().as_secs_f64()
}

fn wait_for(server: &Server, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.connections() < n && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let api = ApiServer::start();
    let manager = Manager::builder(Client::new(api.client_config()).unwrap())
        .probe_addr("127.0.0.1:0")
        .start()
        .unwrap();
    let addr = manager.probe_addr().unwrap();
    if let Some(i) = args.iter().position(|a| a == "--hold") {
        let secs: u64 = args.get(i + 1).and_then(|s| s.parse().ok()).unwrap_or(30);
        println!("probe endpoint on http://{addr}/healthz for {secs} s");
        std::thread::sleep(Duration::from_secs(secs));
        manager.stop().unwrap();
        return;
    }
    let threads = 4;
    let run = Duration::from_secs(3);
    println!(
        "/healthz, probe endpoint, {threads} client threads on loopback ({} cores):",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "  keep-alive:          {:>8.0} requests/s",
        keep_alive(addr, threads, run)
    );
    println!(
        "  a connection each:   {:>8.0} requests/s",
        new_connections(addr, threads, run)
    );
    manager.stop().unwrap();

    let n = 1000;
    // The default stack, named here to print it.
    let stack_size = 512 << 10;
    let limits = Limits::new()
        .max_connections(2 * n)
        .header_timeout(Duration::from_secs(120))
        .idle_timeout(Duration::from_secs(120))
        .stack_size(stack_size);
    let router = Router::new().route("/healthz", |_: &Request| Response::text(200, "ok\n"));
    let server = Server::builder("bench")
        .limits(limits.clone())
        .bind("127.0.0.1:0", router.clone())
        .unwrap();
    let before = rss_kib();
    let idle: Vec<TcpStream> = (0..n)
        .map(|_| TcpStream::connect(server.addr()).unwrap())
        .collect();
    wait_for(&server, n);
    let after = rss_kib();
    println!(
        "idle plain connections: {n} open, resident memory {before} KiB -> {after} KiB: {:.1} KiB each (a thread with a {} KiB stack reserved)",
        (after.saturating_sub(before)) as f64 / n as f64,
        stack_size >> 10
    );
    drop(idle);
    server.stop();

    let dir = std::env::temp_dir().join(format!("ki-serve-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("tls.crt"), SERVER_CERT_PEM).unwrap();
    std::fs::write(dir.join("tls.key"), SERVER_KEY_PEM).unwrap();
    let server = Server::builder("bench")
        .limits(limits)
        .tls(TlsFiles::new(&dir))
        .bind("127.0.0.1:0", router)
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    use rustls::pki_types::pem::PemObject;
    for c in
        rustls::pki_types::CertificateDer::pem_slice_iter(kube_informer::testing::CA_PEM.as_bytes())
    {
        roots.add(c.unwrap()).unwrap();
    }
    let config = Arc::new(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    );
    let m = 300;
    // The clients' own TLS state lives in this process too: measured apart and taken off.
    let before = rss_kib();
    let mut clients = Vec::new();
    for _ in 0..m {
        let sock = TcpStream::connect(server.addr()).unwrap();
        let conn =
            rustls::ClientConnection::new(Arc::clone(&config), "localhost".try_into().unwrap())
                .unwrap();
        let mut s = rustls::StreamOwned::new(conn, sock);
        while s.conn.is_handshaking() {
            s.conn.complete_io(&mut s.sock).unwrap();
        }
        clients.push(s);
    }
    wait_for(&server, m);
    let after = rss_kib();
    println!(
        "idle TLS connections: {m} after their handshake, resident memory {before} KiB -> {after} KiB: {:.1} KiB each, both ends in this process",
        (after.saturating_sub(before)) as f64 / m as f64
    );
    drop(clients);
    server.stop();
    let _ = std::fs::remove_dir_all(&dir);
}
