//! Exec round trip and port-forward throughput through the test API server on loopback
//! (feature `ws`). Prints figures; asserts nothing about time.
//!
//! Run: `cargo bench --features ws --bench pod_io`.
//!
//! - exec round trip: a whole `exec_output` of a registered command (connect, upgrade,
//!   output, status, close), and one line through an open `cat` session (stdin to stdout);
//! - port-forward: bytes from "the pod" to the local client, and back, through a forwarded
//!   connection (client forwarder, WebSocket, the test server's relay) against a direct
//!   loopback connection to the same server. The test server's relay is in the path, as the
//!   kubelet is in a cluster's. On Linux each transfer also prints the CPU time spent per
//!   MB by the client's forwarder threads (`ki/...`), by the test server's threads
//!   (`kiapi/...`, kube-apiserver's and the kubelet's part in a cluster) and by the two ends
//!   (the bench and "the pod"), from `/proc/self/task/*/schedstat`: the throughput ratio is
//!   bounded by the whole chain on a shared machine, the client's own cost is its line.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use kube_informer::pod::ExecParams;
use kube_informer::testing::{ApiServer, Runtime};
use kube_informer::Client;

const BYTES: usize = 256 << 20;

/// A "pod" port: sends BYTES to each connection that writes `d`, reads BYTES from one that
/// writes `u`, then closes.
fn pod_port() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut s = s;
                let mut mode = [0u8; 1];
                if s.read_exact(&mut mode).is_err() {
                    return;
                }
                let chunk = vec![7u8; 64 * 1024];
                let mut buf = vec![0u8; 64 * 1024];
                if mode[0] == b'd' {
                    let mut left = BYTES;
                    while left > 0 {
                        let n = left.min(chunk.len());
                        if s.write_all(&chunk[..n]).is_err() {
                            return;
                        }
                        left -= n;
                    }
                } else {
                    let mut got = 0;
                    while got < BYTES {
                        match s.read(&mut buf) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => got += n,
                        }
                    }
                    let _ = s.write_all(b"k");
                }
                // Open until the bench closes (its CPU figures are taken before).
                while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
            });
        }
    });
    addr
}

/// CPU nanoseconds so far of each live thread of this process, by thread id, with its
/// name (Linux; empty elsewhere).
fn thread_cpu() -> HashMap<String, (String, u64)> {
    let mut out = HashMap::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for t in tasks.flatten() {
        let p = t.path();
        let name = std::fs::read_to_string(p.join("comm")).unwrap_or_default();
        let ns = std::fs::read_to_string(p.join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse().ok())
            .unwrap_or(0);
        out.insert(
            t.file_name().to_string_lossy().into_owned(),
            (name.trim().to_owned(), ns),
        );
    }
    out
}

/// CPU milliseconds per MB moved, between two [`thread_cpu`] samples: (client forwarder,
/// test server, ends).
fn cpu_per_mb(
    before: &HashMap<String, (String, u64)>,
    after: &HashMap<String, (String, u64)>,
) -> [f64; 3] {
    let mut ns = [0u64; 3];
    for (tid, (name, t)) in after {
        let was = before.get(tid).map_or(0, |(_, b)| *b);
        let k = if name.starts_with("kiapi") {
            1
        } else if name.starts_with("ki/") {
            0
        } else {
            2
        };
        ns[k] += t.saturating_sub(was);
    }
    let mb = BYTES as f64 / 1e6;
    ns.map(|n| n as f64 / 1e6 / mb)
}

/// MB/s of one transfer of BYTES in the direction `mode` over a connection to `addr`, and
/// the CPU it cost ([`cpu_per_mb`]).
fn transfer(addr: SocketAddr, mode: u8) -> (f64, [f64; 3]) {
    let cpu = thread_cpu();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    let start = Instant::now();
    s.write_all(&[mode]).unwrap();
    let mut buf = vec![0u8; 64 * 1024];
    if mode == b'd' {
        let mut got = 0;
        while got < BYTES {
            let n = s.read(&mut buf).unwrap();
            assert!(n > 0, "ended after {got} bytes");
            got += n;
        }
    } else {
        let chunk = vec![7u8; 64 * 1024];
        let mut left = BYTES;
        while left > 0 {
            let n = left.min(chunk.len());
            s.write_all(&chunk[..n]).unwrap();
            left -= n;
        }
        let mut ack = [0u8; 1];
        s.read_exact(&mut ack).unwrap();
    }
    let rate = BYTES as f64 / 1e6 / start.elapsed().as_secs_f64();
    (rate, cpu_per_mb(&cpu, &thread_cpu()))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    for tls in [false, true] {
        let server = if tls {
            ApiServer::builder().tls().start()
        } else {
            ApiServer::start()
        };
        let label = if tls { "TLS" } else { "plain" };
        server.create_pod("bench", "p", &[]).unwrap();
        server
            .runtime()
            .command(&["true"], Runtime::output(b"", b"", 0));
        server.runtime().echo("cat");
        let client = Client::new(server.client_config()).unwrap();

        let runs: Vec<Duration> = (0..200)
            .map(|_| {
                let t = Instant::now();
                let out = client
                    .exec_output("bench", "p", &ExecParams::new(["true"]), b"")
                    .unwrap();
                assert!(out.status.success());
                t.elapsed()
            })
            .collect();
        println!(
            "exec round trip ({label}, whole exec_output, median of 200): {:.2} ms",
            median(runs).as_secs_f64() * 1e3
        );

        let mut p = client
            .exec("bench", "p", &ExecParams::new(["cat"]).stdin(true))
            .unwrap();
        let mut stdin = p.stdin().unwrap();
        let mut stdout = BufReader::new(p.stdout().unwrap());
        let mut line = String::new();
        let runs: Vec<Duration> = (0..2000)
            .map(|_| {
                let t = Instant::now();
                stdin.write_all(b"ping\n").unwrap();
                line.clear();
                stdout.read_line(&mut line).unwrap();
                t.elapsed()
            })
            .collect();
        println!(
            "exec stdin->stdout round trip ({label}, open session, median of 2000): {:.3} ms",
            median(runs).as_secs_f64() * 1e3
        );
        stdin.close().unwrap();
        drop(stdout);
        p.wait().unwrap();

        let target = pod_port();
        server.runtime().port("bench", "p", 9000, target);
        let f = client
            .port_forward("bench", "p", &[":9000".parse().unwrap()])
            .unwrap();
        let local = f.ports()[0].local;
        for (mode, dir) in [(b'd', "pod -> local"), (b'u', "local -> pod")] {
            // Alternating, so that a burst of load elsewhere hits both alike.
            let (mut direct, mut forwarded) = ((0.0, [0.0; 3]), (0.0, [0.0; 3]));
            for _ in 0..3 {
                let d = transfer(target, mode);
                if d.0 > direct.0 {
                    direct = d;
                }
                let f = transfer(local, mode);
                if f.0 > forwarded.0 {
                    forwarded = f;
                }
            }
            println!(
                "port-forward {dir} ({label}, {} MiB, best of 3): direct {:.0} MB/s, forwarded {:.0} MB/s ({:.0}% of direct)",
                BYTES >> 20,
                direct.0,
                forwarded.0,
                forwarded.0 / direct.0 * 100.0
            );
            let [c, srv, ends] = forwarded.1;
            if c + srv + ends > 0.0 {
                println!(
                    "    CPU ms per MB: forwarded: client forwarder {c:.2}, test server {srv:.2}, ends {ends:.2}; direct: ends {:.2}",
                    direct.1[2]
                );
            }
        }
        f.stop();
    }
}
