//! An outsider's attacks on `serve` (probes, `/metrics`, webhooks) over real loopback
//! sockets: framing a proxy in front could read differently, a close that loses the answer,
//! access control that lets someone in. No timing is asserted; every wait is bounded by
//! `PATIENCE`.

mod common;
#[allow(dead_code)] // only the retained bytes are measured here
#[path = "common/counting_allocator.rs"]
mod counting_allocator;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use common::PATIENCE;
use kube_informer::serve::{Limits, Request, Response, Router, Server};

/// One test at a time in this binary: one of them counts the bytes the process holds.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn router() -> Router {
    Router::new()
        .route("/healthz", |_: &Request| Response::text(200, "ok\n"))
        .route("/echo", |r: &Request| {
            Response::new(200).with_body(r.body.clone())
        })
}

fn serve(limits: Limits) -> Server {
    Server::builder("attack")
        .limits(limits)
        .grace(Duration::from_secs(1))
        .bind("127.0.0.1:0", router())
        .unwrap()
}

/// Writes `raw` from a thread of its own (it may be more than the socket buffers hold),
/// then reads everything the server sends until it closes. `Err` when the connection was
/// reset before the client read what the server had sent.
fn send_all_then_read(addr: SocketAddr, raw: Vec<u8>) -> std::io::Result<Vec<u8>> {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.set_write_timeout(Some(PATIENCE)).unwrap();
    let mut w = s.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = w.write_all(&raw);
    });
    // Let the server answer and close before a byte is read, as a client busy elsewhere
    // would: the answers wait in this socket's buffer.
    std::thread::sleep(Duration::from_millis(300));
    let mut all = Vec::new();
    let mut r = s;
    let got = r.read_to_end(&mut all).map(|_| all);
    let _ = writer.join();
    got
}

/// RFC 9112 §9.6: a server that closes while the client's bytes are still unread resets
/// the connection, and the client's TCP may drop the answer that was already sent. A
/// client pipelining past `max_requests_per_connection` must still get every answer the
/// server wrote, the last one saying `Connection: close`.
#[test]
fn pipelining_past_the_cap_gets_every_answer_before_the_close() {
    let _one = one_at_a_time();
    let server = serve(Limits::new().max_requests_per_connection(2));
    let one = b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";
    let raw: Vec<u8> = one
        .iter()
        .copied()
        .cycle()
        .take(one.len() * 20_000)
        .collect();
    for round in 0..2 {
        let all = send_all_then_read(server.addr(), raw.clone())
            .unwrap_or_else(|e| panic!("round {round}: the answers were lost to a reset: {e}"));
        let text = String::from_utf8_lossy(&all);
        assert_eq!(
            text.matches("HTTP/1.1 200 OK\r\n").count(),
            2,
            "round {round}: {text}"
        );
        assert!(text.ends_with("Connection: close\r\n\r\nok\n"), "{text}");
    }
    server.stop();
}

/// The same for a client that says `Connection: close` and sends more behind it (a body
/// longer than its `Content-Length`, or requests the server will not read).
#[test]
fn a_connection_close_request_with_bytes_behind_it_gets_its_answer() {
    let _one = one_at_a_time();
    let server = serve(Limits::new());
    let mut raw =
        b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
            .to_vec();
    raw.extend(std::iter::repeat_n(b'x', 1 << 20));
    for round in 0..2 {
        let all = send_all_then_read(server.addr(), raw.clone())
            .unwrap_or_else(|e| panic!("round {round}: the answer was lost to a reset: {e}"));
        let text = String::from_utf8_lossy(&all);
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.ends_with("\r\n\r\nhello"), "{text}");
    }
    server.stop();
}

/// An unauthenticated client sends `/metrics` (behind `RequireAccess`) thousands of
/// different garbage bearer tokens of nearly the whole head's bound each. Each is refused
/// (401) and remembered as invalid for a while; what is remembered must not be the token
/// itself, or the client pins `CACHE_ENTRIES` times 16 KiB (64 MiB) of the server's memory
/// for as long as it keeps sending.
#[test]
fn garbage_tokens_do_not_pin_their_bytes_in_the_access_cache() {
    use kube_informer::serve::RequireAccess;
    use kube_informer::testing::ApiServer;
    use kube_informer::Client;
    let _one = one_at_a_time();
    let api = ApiServer::start();
    let client = Client::new(api.client_config()).unwrap();
    let metrics = RequireAccess::new(client, |_: &Request| Response::text(200, "up 1\n"));
    let server = Server::builder("metrics")
        .bind("127.0.0.1:0", Router::new().route("/metrics", metrics))
        .unwrap();
    const TOKENS: usize = 250;
    const TOKEN_BYTES: usize = 15_000;
    let ((), retained) = counting_allocator::retained_bytes_of(|| {
        let mut sent = 0;
        while sent < TOKENS {
            // Keep-alive connections of a few hundred requests each.
            let mut s = TcpStream::connect(server.addr()).unwrap();
            s.set_read_timeout(Some(PATIENCE)).unwrap();
            let mut reader = std::io::BufReader::new(s.try_clone().unwrap());
            for _ in 0..200 {
                let token = format!("{sent:08}{}", "g".repeat(TOKEN_BYTES - 8));
                // One write: a request in pieces would wait on delayed acknowledgements.
                s.write_all(
                    format!(
                        "GET /metrics HTTP/1.1\r\nHost: m\r\nAuthorization: Bearer {token}\r\n\r\n"
                    )
                    .as_bytes(),
                )
                .unwrap();
                let mut head = String::new();
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    std::io::BufRead::read_line(&mut reader, &mut line).unwrap();
                    if let Some(v) = line.strip_prefix("Content-Length: ") {
                        length = v.trim().parse().unwrap();
                    }
                    if line == "\r\n" || line.is_empty() {
                        break;
                    }
                    head.push_str(&line);
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                assert!(head.starts_with("HTTP/1.1 401 "), "{head}");
                sent += 1;
            }
        }
    });
    let pinned = TOKENS * TOKEN_BYTES;
    assert!(
        retained < (pinned / 3) as i64,
        "{TOKENS} garbage tokens of {TOKEN_BYTES} bytes left {retained} bytes held (all of them: {pinned})"
    );
    server.stop();
}

/// A connection to `addr` from the loopback address `from` (Linux answers the whole of
/// 127.0.0.0/8): another peer for the server.
#[cfg(target_os = "linux")]
fn connect_from(from: std::net::Ipv4Addr, addr: SocketAddr) -> TcpStream {
    use rustix::net::{AddressFamily, SocketType};
    let fd = rustix::net::socket(AddressFamily::INET, SocketType::STREAM, None).unwrap();
    rustix::net::bind(&fd, &SocketAddr::new(from.into(), 0)).unwrap();
    rustix::net::connect(&fd, &addr).unwrap();
    let s = TcpStream::from(fd);
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s
}

/// One peer that keeps every one of its connections busy (here: requests whose handler
/// has not answered; a head sent a byte at a time holds a slot the same way) takes at most
/// `max_connections_per_peer` slots: its next connection is refused, and another peer's
/// probe is answered. Before the bound, such a peer left every other client a 503.
#[cfg(target_os = "linux")]
#[test]
fn one_peer_keeping_its_connections_busy_never_takes_every_slot() {
    use std::net::Ipv4Addr;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let _one = one_at_a_time();
    let held = Arc::new(AtomicUsize::new(0));
    let (release, released) = crossbeam_channel::bounded::<()>(0);
    let h = Arc::clone(&held);
    let router = router().route("/hold", move |_: &Request| {
        h.fetch_add(1, Ordering::SeqCst);
        let _ = released.recv_timeout(PATIENCE);
        Response::text(200, "held\n")
    });
    let limits = Limits::new().max_connections(8);
    let server = Server::builder("attack")
        .limits(limits)
        .grace(Duration::from_secs(1))
        .bind("127.0.0.1:0", router)
        .unwrap();
    let addr = server.addr();
    let hostile = Ipv4Addr::new(127, 0, 0, 1);
    let get = |s: &mut TcpStream, path: &str| {
        s.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .unwrap();
    };
    let answer = |mut s: TcpStream| {
        let mut all = String::new();
        let _ = s.read_to_string(&mut all);
        all
    };
    // Three quarters of 8: six busy connections from the one peer.
    let mut busy = Vec::new();
    for i in 1..=6 {
        let mut s = connect_from(hostile, addr);
        get(&mut s, "/hold");
        busy.push(s);
        common::wait_until("the handler holding the request", || {
            held.load(Ordering::SeqCst) == i
        });
    }
    // Its seventh is refused at once, though two slots are free.
    let mut s = connect_from(hostile, addr);
    get(&mut s, "/healthz");
    let refused = answer(s);
    assert!(refused.starts_with("HTTP/1.1 503 "), "{refused:?}");
    assert_eq!(held.load(Ordering::SeqCst), 6);
    // Another peer's probes are answered, two at once.
    let mut a = connect_from(Ipv4Addr::new(127, 0, 0, 2), addr);
    let mut b = connect_from(Ipv4Addr::new(127, 0, 0, 3), addr);
    get(&mut a, "/healthz");
    get(&mut b, "/healthz");
    for s in [a, b] {
        let got = answer(s);
        assert!(
            got.starts_with("HTTP/1.1 200 ") && got.ends_with("ok\n"),
            "{got:?}"
        );
    }
    // The held requests are answered when their handler returns.
    for _ in 0..6 {
        release.send_timeout((), PATIENCE).unwrap();
    }
    for s in busy {
        let got = answer(s);
        assert!(
            got.starts_with("HTTP/1.1 200 ") && got.ends_with("held\n"),
            "{got:?}"
        );
    }
    server.stop();
}

/// A peer's connections that end in the middle of a request (a head cut short, a body
/// cut short, a head sent and the socket shut for writing) give their slots back: with a
/// bound of two per peer, that peer's next connection is answered, again and again. A
/// slot kept by a connection that is gone would leave the peer refused for good.
#[cfg(target_os = "linux")]
#[test]
fn connections_cut_in_the_middle_of_a_request_give_their_slots_back() {
    use std::net::{Ipv4Addr, Shutdown};
    let _one = one_at_a_time();
    let server = serve(Limits::new().max_connections(8).max_connections_per_peer(2));
    let addr = server.addr();
    let peer = Ipv4Addr::new(127, 0, 0, 9);
    let probe = || {
        let mut s = connect_from(peer, addr);
        let sent = s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let mut all = String::new();
        let _ = s.read_to_string(&mut all);
        sent.is_ok() && all.starts_with("HTTP/1.1 200 ")
    };
    let cuts: [&[u8]; 4] = [
        b"GET /healthz HTTP/1.1\r\nHo",
        b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nten bytes.",
        b"POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 100\r\n\r\n",
        b"G",
    ];
    for round in 0..5 {
        for cut in cuts {
            // Two at once: the peer's whole bound, each busy (a byte of a request came).
            // (The server may still be ending the last round's connections, and turn one of
            // these away: a write or shutdown that fails then is no matter.)
            let mut a = connect_from(peer, addr);
            let mut b = connect_from(peer, addr);
            let _ = a.write_all(cut);
            let _ = b.write_all(cut);
            if round % 2 == 0 {
                drop((a, b));
            } else {
                let _ = a.shutdown(Shutdown::Write);
                let _ = b.shutdown(Shutdown::Write);
            }
            common::wait_until("the peer answered again after its cut requests", probe);
        }
    }
    server.stop();
}

/// On a dual-stack listener (`[::]`) every IPv4 client arrives as an IPv4-mapped IPv6
/// address (`::ffff:a.b.c.d`), whose first 64 bits are all zero: counted by IPv6 /64,
/// every IPv4 client would be one peer, and one of them keeping its connections busy would
/// lock out the kubelet's probes. Each is its own IPv4 address instead, and `::1` another.
#[cfg(target_os = "linux")]
#[test]
fn ipv4_clients_of_a_dual_stack_listener_are_each_their_own_peer() {
    use std::net::Ipv4Addr;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let _one = one_at_a_time();
    let held = Arc::new(AtomicUsize::new(0));
    let (release, released) = crossbeam_channel::bounded::<()>(0);
    let h = Arc::clone(&held);
    let router = router().route("/hold", move |_: &Request| {
        h.fetch_add(1, Ordering::SeqCst);
        let _ = released.recv_timeout(PATIENCE);
        Response::text(200, "held\n")
    });
    let server = match Server::builder("attack")
        .limits(Limits::new().max_connections(8).max_connections_per_peer(1))
        .grace(Duration::from_secs(1))
        .bind("[::]:0", router)
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("skipped: no IPv6 listener here ({e})");
            return;
        }
    };
    let port = server.addr().port();
    let v4 = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let get = |s: &mut TcpStream, path: &str| {
        s.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .unwrap();
    };
    let answer = |mut s: TcpStream| {
        let mut all = String::new();
        let _ = s.read_to_string(&mut all);
        all
    };
    let hostile = Ipv4Addr::new(127, 0, 0, 5);
    let mut busy = connect_from(hostile, v4);
    get(&mut busy, "/hold");
    common::wait_until("the handler holding the request", || {
        held.load(Ordering::SeqCst) == 1
    });
    // Its second is over its bound of one ...
    let mut s = connect_from(hostile, v4);
    get(&mut s, "/healthz");
    let refused = answer(s);
    assert!(refused.starts_with("HTTP/1.1 503 "), "{refused:?}");
    // ... and another IPv4 client, and an IPv6 one, are answered.
    let mut other = connect_from(Ipv4Addr::new(127, 0, 0, 6), v4);
    get(&mut other, "/healthz");
    let got = answer(other);
    assert!(
        got.starts_with("HTTP/1.1 200 "),
        "another IPv4 client: {got:?}"
    );
    if let Ok(mut s) = TcpStream::connect(("::1", port)) {
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        get(&mut s, "/healthz");
        let got = answer(s);
        assert!(got.starts_with("HTTP/1.1 200 "), "an IPv6 client: {got:?}");
    }
    release.send_timeout((), PATIENCE).unwrap();
    let got = answer(busy);
    assert!(got.starts_with("HTTP/1.1 200 "), "{got:?}");
    server.stop();
}
