//! Issue 31: port-forward through the test server, plain and TLS: several ports, a random
//! local port, many concurrent connections, a refused connection reported without ending the
//! forwarder, a clean stop.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use kube_informer::pod::PortMapping;
use kube_informer::testing::ApiServer;
use kube_informer::{Client, Error};

/// An echo server in "the pod": every connection gets back what it sends, uppercased.
fn echo_listener() -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                loop {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            let up: Vec<u8> = buf[..n].to_ascii_uppercase();
                            if s.write_all(&up).is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    addr
}

fn roundtrip(addr: std::net::SocketAddr, text: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(common::PATIENCE)).unwrap();
    s.write_all(text.as_bytes()).unwrap();
    let mut got = vec![0u8; text.len()];
    s.read_exact(&mut got).unwrap();
    String::from_utf8(got).unwrap()
}

#[test]
fn forwards_several_ports_and_many_connections_plain_and_tls() {
    for server in [ApiServer::start(), ApiServer::builder().tls().start()] {
        server.create_pod("lab", "db", &[]).unwrap();
        server.runtime().port("lab", "db", 5432, echo_listener());
        server.runtime().port("lab", "db", 80, echo_listener());
        let c = Client::new(server.client_config()).unwrap();
        let maps: Vec<PortMapping> = [":5432", ":80"]
            .iter()
            .map(|m| m.parse().unwrap())
            .collect();
        let f = c.port_forward("lab", "db", &maps).unwrap();
        assert_eq!(f.ports().len(), 2);
        assert_ne!(f.ports()[0].local.port(), 0);
        assert_eq!(roundtrip(f.ports()[1].local, "get /"), "GET /");
        let local = f.ports()[0].local;
        let threads: Vec<_> = (0..16)
            .map(|i| std::thread::spawn(move || roundtrip(local, &format!("hello {i}"))))
            .collect();
        for (i, t) in threads.into_iter().enumerate() {
            assert_eq!(t.join().unwrap(), format!("HELLO {i}"));
        }
        // A connection left open is closed by the stop, which joins every thread.
        let open = TcpStream::connect(local).unwrap();
        open.set_read_timeout(Some(common::PATIENCE)).unwrap();
        common::wait_until("the open connection is forwarded", || f.connections() >= 1);
        f.stop();
        let mut b = [0u8; 1];
        assert!(matches!((&open).read(&mut b), Ok(0) | Err(_)));
    }
}

/// What the library logged (level, message), from every test of this file.
fn logged() -> Vec<(log::Level, String)> {
    LOGGER.0.lock().unwrap().clone()
}

struct Capture(std::sync::Mutex<Vec<(log::Level, String)>>);

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        if record.target().starts_with("kube_informer") {
            let mut lines = self.0.lock().unwrap();
            if lines.len() < 10_000 {
                lines.push((record.level(), record.args().to_string()));
            }
        }
    }
    fn flush(&self) {}
}

static LOGGER: Capture = Capture(std::sync::Mutex::new(Vec::new()));

fn capture_logs() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        log::set_logger(&LOGGER).unwrap();
        log::set_max_level(log::LevelFilter::Info);
    });
}

#[test]
fn a_refused_connection_is_reported_and_the_forwarder_goes_on() {
    capture_logs();
    let server = ApiServer::start();
    server.create_pod("lab", "web", &[]).unwrap();
    let c = Client::new(server.client_config()).unwrap();
    let f = c
        .port_forward("lab", "web", &[":8089".parse().unwrap()])
        .unwrap();
    let local = f.ports()[0].local;
    let mut s = TcpStream::connect(local).unwrap();
    s.set_read_timeout(Some(common::PATIENCE)).unwrap();
    let _ = s.write_all(b"x");
    let mut b = [0u8; 1];
    assert!(matches!(s.read(&mut b), Ok(0) | Err(_)));
    let e = f.errors().recv_timeout(common::PATIENCE).unwrap();
    assert!(e.message.contains("connection refused"), "{}", e.message);
    assert_eq!(e.remote, 8089);
    // And in the log, at error level, as kubectl prints it.
    let line = format!(
        "an error occurred forwarding {} -> 8089: error forwarding port 8089 to pod web_lab",
        local.port()
    );
    common::wait_until("the error is logged as kubectl prints it", || {
        logged()
            .iter()
            .any(|(level, m)| *level == log::Level::Error && m.starts_with(&line))
    });
    // The pod's port comes up: the same forwarder serves it.
    server.runtime().port("lab", "web", 8089, echo_listener());
    assert_eq!(roundtrip(local, "again"), "AGAIN");
    f.stop();
}

/// Issue 38: kubectl gets the pod first and refuses, before it listens, one that does not
/// exist (the server's 404) or is not running; before, every connection got an empty answer.
#[test]
fn a_missing_or_not_running_pod_is_refused_up_front() {
    let server = ApiServer::start();
    let c = Client::new(server.client_config()).unwrap();
    let e = c
        .port_forward("lab", "nosuchpod", &[":80".parse().unwrap()])
        .unwrap_err();
    assert!(
        matches!(&e, Error::Api { status, .. } if status.code == 404),
        "{e:?}"
    );
    assert!(e.to_string().contains("not found"), "{e}");
    for phase in ["Pending", "Succeeded", "Failed"] {
        let name = phase.to_ascii_lowercase();
        server
            .create(&common::pods(), common::pod("lab", &name, phase))
            .unwrap();
        let e = c
            .port_forward("lab", &name, &[":80".parse().unwrap()])
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("invalid input: unable to forward port because pod is not running. Current status={phase}"),
        );
    }
}

/// A "pod" port that counts what it receives, answers the count (8 bytes, big-endian)
/// once the client has sent `want` bytes, then echoes nothing more.
fn counting_listener(want: u64) -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 64 * 1024];
                let (mut got, mut sum) = (0u64, 0u64);
                while got < want {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            got += n as u64;
                            sum = buf[..n]
                                .iter()
                                .fold(sum, |a, &b| a.wrapping_mul(31).wrapping_add(u64::from(b)));
                        }
                    }
                }
                let _ = s.write_all(&sum.to_be_bytes());
            });
        }
    });
    addr
}

#[test]
fn bulk_data_arrives_whole_and_in_order_both_ways() {
    // Large enough for every frame length form (7-bit, 16-bit and 64-bit lengths).
    const SIZE: usize = 8 << 20;
    let data: Vec<u8> = (0..SIZE).map(|i| (i * 7 % 253) as u8).collect();
    let want = data
        .iter()
        .fold(0u64, |a, &b| a.wrapping_mul(31).wrapping_add(u64::from(b)));
    for server in [ApiServer::start(), ApiServer::builder().tls().start()] {
        server.create_pod("lab", "db", &[]).unwrap();
        server
            .runtime()
            .port("lab", "db", 9000, counting_listener(SIZE as u64));
        server.runtime().port("lab", "db", 80, echo_listener());
        let c = Client::new(server.client_config()).unwrap();
        let f = c
            .port_forward(
                "lab",
                "db",
                &[":9000".parse().unwrap(), ":80".parse().unwrap()],
            )
            .unwrap();
        // Up: every byte reaches the pod, in order.
        let mut s = TcpStream::connect(f.ports()[0].local).unwrap();
        s.set_read_timeout(Some(common::PATIENCE)).unwrap();
        // Small writes first (short frames), then large ones.
        for chunk in data[..1000].chunks(7) {
            s.write_all(chunk).unwrap();
        }
        if let Err(e) = s.write_all(&data[1000..]) {
            panic!("{e}: {:?}", f.errors().recv_timeout(common::PATIENCE));
        }
        let mut sum = [0u8; 8];
        s.read_exact(&mut sum).unwrap();
        assert_eq!(u64::from_be_bytes(sum), want);
        // Both ways through the echo: what comes back is what went, uppercased.
        let mut e = TcpStream::connect(f.ports()[1].local).unwrap();
        e.set_read_timeout(Some(common::PATIENCE)).unwrap();
        let e2 = e.try_clone().unwrap();
        let sent = data.clone();
        let writer = std::thread::spawn(move || {
            let mut e2 = e2;
            e2.write_all(&sent).unwrap();
        });
        let mut back = vec![0u8; SIZE];
        e.read_exact(&mut back).unwrap();
        writer.join().unwrap();
        assert!(back == data.to_ascii_uppercase());
        f.stop();
    }
}

/// A plain-HTTP relay to `upstream` that passes ordinary requests and holds every
/// port-forward upgrade unanswered (a server slow to answer the handshake). Counts the
/// upgrades it holds.
fn stalling_relay(upstream: std::net::SocketAddr) -> (String, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let held = Arc::new(AtomicUsize::new(0));
    let h = Arc::clone(&held);
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { return };
            let h = Arc::clone(&h);
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut b = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    match c.read(&mut b) {
                        Ok(1) => head.push(b[0]),
                        _ => return,
                    }
                }
                if String::from_utf8_lossy(&head).contains("/portforward") {
                    h.fetch_add(1, Ordering::SeqCst);
                    // Never answered; read until the client goes.
                    let mut sink = [0u8; 1024];
                    while matches!(c.read(&mut sink), Ok(n) if n > 0) {}
                    return;
                }
                let mut up = TcpStream::connect(upstream).unwrap();
                up.write_all(&head).unwrap();
                let (mut c2, mut up2) = (c.try_clone().unwrap(), up.try_clone().unwrap());
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut up2, &mut c2);
                    let _ = c2.shutdown(std::net::Shutdown::Both);
                });
                let _ = std::io::copy(&mut c, &mut up);
                let _ = up.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    (url, held)
}

/// Issue 38: `stop` ends a connection still in its WebSocket handshake at once, instead of
/// waiting for the server's answer up to the request timeout.
#[test]
fn stop_ends_a_connection_still_in_its_upgrade_handshake() {
    let server = ApiServer::start();
    server.create_pod("lab", "db", &[]).unwrap();
    let (url, held) = stalling_relay(server.addr());
    let mut cfg = server.client_config();
    cfg.server = url;
    // Far beyond the wait below: only the stop can end the handshake in time.
    cfg.request_timeout = 4 * common::PATIENCE;
    let c = Client::new(cfg).unwrap();
    let f = c
        .port_forward("lab", "db", &[":80".parse().unwrap()])
        .unwrap();
    let _local = TcpStream::connect(f.ports()[0].local).unwrap();
    common::wait_until("the upgrade is held", || held.load(Ordering::SeqCst) == 1);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        f.stop();
        let _ = tx.send(());
    });
    rx.recv_timeout(common::PATIENCE)
        .expect("stop returns while a handshake is under way");
}

/// The same through the caller's own token: a client made with `with_cancel` ends the
/// forwarder's handshakes when its token is cancelled.
#[test]
fn the_callers_token_ends_a_handshake_under_way() {
    let server = ApiServer::start();
    server.create_pod("lab", "db", &[]).unwrap();
    let (url, held) = stalling_relay(server.addr());
    let mut cfg = server.client_config();
    cfg.server = url;
    cfg.request_timeout = 4 * common::PATIENCE;
    let token = kube_informer::client::Cancel::new();
    let c = Client::new(cfg).unwrap().with_cancel(token.clone());
    let f = c
        .port_forward("lab", "db", &[":80".parse().unwrap()])
        .unwrap();
    let mut local = TcpStream::connect(f.ports()[0].local).unwrap();
    local.set_read_timeout(Some(common::PATIENCE)).unwrap();
    common::wait_until("the upgrade is held", || held.load(Ordering::SeqCst) == 1);
    token.cancel();
    // The local connection is closed when its handshake ends.
    let mut b = [0u8; 1];
    assert!(matches!(local.read(&mut b), Ok(0)), "closed, not timed out");
    common::wait_until("no connection left", || f.connections() == 0);
    f.stop();
}

/// The forwarder's listening socket on `port`, found through /proc (Linux), shut for
/// reading: from then on every `accept` on it fails at once with `EINVAL`, a failure that
/// lasts, as running out of file descriptors does.
#[cfg(target_os = "linux")]
fn break_listener(port: u16) {
    use std::os::fd::{AsRawFd, BorrowedFd};
    let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let inode = tcp
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f[1].ends_with(&format!(":{port:04X}")) && f[3] == "0A")
        .map(|f| f[9].to_owned())
        .expect("the listener is in /proc/net/tcp");
    let want = format!("socket:[{inode}]");
    for entry in std::fs::read_dir("/proc/self/fd").unwrap() {
        let entry = entry.unwrap();
        if std::fs::read_link(entry.path()).is_ok_and(|t| t.to_string_lossy() == want) {
            let fd: i32 = entry.file_name().to_string_lossy().parse().unwrap();
            // SAFETY: the descriptor is open (just listed) and only duplicated here; the
            // duplicate is closed on drop, the forwarder's own stays open.
            let owned = unsafe { BorrowedFd::borrow_raw(fd) }
                .try_clone_to_owned()
                .unwrap();
            let sock = TcpStream::from(owned);
            assert_ne!(sock.as_raw_fd(), fd);
            sock.shutdown(std::net::Shutdown::Read).unwrap();
            return;
        }
    }
    panic!("no descriptor for {want}");
}

/// Issue 38: a listener whose `accept` keeps failing (out of file descriptors; here a
/// listening socket shut under it, which fails the same way every time) does not spin: it
/// backs off, says so on `errors()` and in the log, and closes, as kubectl's does. The
/// other ports go on.
#[cfg(target_os = "linux")]
#[test]
fn a_listener_whose_accept_keeps_failing_reports_and_stops() {
    capture_logs();
    let server = ApiServer::start();
    server.create_pod("lab", "web", &[]).unwrap();
    server.runtime().port("lab", "web", 80, echo_listener());
    let c = Client::new(server.client_config()).unwrap();
    let f = c
        .port_forward(
            "lab",
            "web",
            &[":80".parse().unwrap(), ":81".parse().unwrap()],
        )
        .unwrap();
    let (first, second) = (f.ports()[0].local, f.ports()[1].local);
    break_listener(second.port());
    let e = f
        .errors()
        .recv_timeout(common::PATIENCE)
        .expect("the failing listener is reported");
    assert_eq!(e.remote, 81);
    assert_eq!(
        e.message,
        format!(
            "error accepting connection on port {}: Invalid argument (os error 22)",
            second.port()
        )
    );
    common::wait_until("the failure is logged", || {
        logged().iter().any(|(level, m)| {
            *level == log::Level::Error
                && m.contains(&e.message)
                && m.contains("no longer listening")
        })
    });
    assert_eq!(roundtrip(first, "still here"), "STILL HERE");
    f.stop();
}

/// A raw server for one pod: `GET` of the pod answers it Running; a port-forward upgrade is
/// answered with the pod's error `error_text` on channel 1, then a close.
fn raw_pod_server(error_text: &'static [u8]) -> String {
    use std::io::BufRead;
    fn frame(payload: &[u8]) -> Vec<u8> {
        let mut f = vec![0x82, payload.len() as u8];
        f.extend_from_slice(payload);
        f
    }
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(c) = c else { return };
            std::thread::spawn(move || {
                let mut r = std::io::BufReader::new(c);
                loop {
                    let (mut first, mut key) = (String::new(), String::new());
                    loop {
                        let mut line = String::new();
                        if r.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if first.is_empty() {
                            first = line.clone();
                        }
                        if let Some(k) = line.strip_prefix("Sec-WebSocket-Key: ") {
                            key = k.trim().to_owned();
                        }
                    }
                    let s = r.get_mut();
                    if !first.contains("/portforward") {
                        let body = r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"lab"},"status":{"phase":"Running"}}"#;
                        let _ = write!(s, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len());
                        continue;
                    }
                    use base64::Engine as _;
                    let mut input = key.into_bytes();
                    input.extend_from_slice(b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
                    let d = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, &input);
                    let accept = base64::engine::general_purpose::STANDARD.encode(d.as_ref());
                    let mut out = format!("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\nSec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n").into_bytes();
                    out.extend(frame(&[0, 80, 0]));
                    out.extend(frame(&[1, 80, 0]));
                    let mut error = vec![1];
                    error.extend_from_slice(error_text);
                    out.extend(frame(&error));
                    out.extend([0x88, 2, 0x03, 0xe8]);
                    let _ = s.write_all(&out);
                    let mut sink = [0u8; 1024];
                    while matches!(r.get_mut().read(&mut sink), Ok(n) if n > 0) {}
                    return;
                }
            });
        }
    });
    url
}

/// What the pod says is logged and handed on, but none of its control characters: a
/// hostile kubelet cannot forge a log line or drive the terminal kubectl's log goes to.
#[test]
fn the_pods_error_text_cannot_forge_log_lines() {
    let c = Client::new(kube_informer::ClientConfig::new(raw_pod_server(
        b"connect: connection refused\nE0101 00:00:00 forged line \x1b[2J",
    )))
    .unwrap();
    let f = c
        .port_forward("lab", "p", &[":80".parse().unwrap()])
        .unwrap();
    let _s = TcpStream::connect(f.ports()[0].local).unwrap();
    let e = f.errors().recv_timeout(common::PATIENCE).unwrap();
    assert!(e.message.contains("forged line"), "{:?}", e.message);
    assert!(!e.message.chars().any(char::is_control), "{:?}", e.message);
    f.stop();
}
