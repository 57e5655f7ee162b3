//! Issue 33: the serving stack's bounds over real sockets. Each bad client misbehaves while
//! other clients are served; no timing is asserted (the bounds are made small so that the
//! tests end soon, and every wait is bounded by `PATIENCE`).

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use common::{wait_until, PATIENCE};
use kube_informer::serve::{Limits, Request, Response, Router, Server, TlsFiles};
use kube_informer::testing::{
    ADMIN_CERT_PEM, ADMIN_KEY_PEM, CA_PEM, SERVER_CERT_PEM, SERVER_KEY_PEM,
};

fn router() -> Router {
    Router::new()
        .route("/healthz", |_: &Request| Response::text(200, "ok\n"))
        .route("/echo", |r: &Request| {
            Response::new(200).with_body(r.body.clone())
        })
        .route("/big", |_: &Request| {
            Response::new(200).with_body(vec![b'x'; 256 << 10])
        })
        .route("/panic", |_: &Request| -> Response {
            panic!("a handler's bug")
        })
}

fn small_limits() -> Limits {
    Limits::new()
        .max_request_line(1024)
        .max_head_bytes(4096)
        .max_headers(16)
        .max_body_bytes(1 << 20)
        .max_connections(32)
        // Every client here is 127.0.0.1, one peer: these tests are about the bound on all
        // connections (one peer's is `attack_serve.rs`'s).
        .max_connections_per_peer(usize::MAX)
        .header_timeout(Duration::from_secs(2))
        .body_timeout(Duration::from_secs(2))
        .write_timeout(Duration::from_secs(2))
        .idle_timeout(Duration::from_secs(5))
}

fn serve(limits: Limits) -> Server {
    Server::builder("test")
        .limits(limits)
        .grace(Duration::from_secs(1))
        .bind("127.0.0.1:0", router())
        .unwrap()
}

/// Sends `raw`, reads until the server closes; (status, head, body).
fn exchange(addr: SocketAddr, raw: &[u8]) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    let _ = s.write_all(raw);
    let mut all = Vec::new();
    let _ = s.read_to_end(&mut all);
    split(&all)
}

fn split(all: &[u8]) -> (u16, String, Vec<u8>) {
    let text = String::from_utf8_lossy(all);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let end = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    (status, text[..end].to_string(), all[end..].to_vec())
}

fn healthz(addr: SocketAddr) -> u16 {
    exchange(
        addr,
        b"GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    )
    .0
}

#[test]
fn answers_keeps_alive_and_closes_at_the_cap() {
    let server = serve(small_limits().max_requests_per_connection(3));
    let mut s = TcpStream::connect(server.addr()).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    // Three pipelined requests, one with a body, on one connection: the third answer
    // closes it.
    s.write_all(
        b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n\
          POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello\
          HEAD /healthz HTTP/1.1\r\nHost: t\r\n\r\n",
    )
    .unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let text = String::from_utf8_lossy(&all);
    assert_eq!(text.matches("HTTP/1.1 200 OK\r\n").count(), 3, "{text}");
    assert!(text.contains("\r\n\r\nok\n"), "{text}");
    assert!(text.contains("\r\n\r\nhello"), "{text}");
    assert!(
        text.ends_with("Content-Length: 3\r\nConnection: close\r\n\r\n"),
        "HEAD has no body and the third answer closes: {text}"
    );
    let (status, _, body) = exchange(
        server.addr(),
        b"GET /panic HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    assert_eq!((status, body.as_slice()), (500, &b"handler panicked\n"[..]));
    let (status, _, body) = exchange(
        server.addr(),
        b"GET /nope HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 404);
    assert!(String::from_utf8_lossy(&body).contains("/healthz"));
    server.stop();
}

#[test]
fn a_request_line_or_header_that_never_ends_costs_at_most_the_bound() {
    let server = serve(small_limits());
    let addr = server.addr();
    // The client would send 10 MiB of one line; the server answers once it has read the
    // bound and closes. The writer stops at the first refused write.
    for (start, want) in [
        (&b"GET /"[..], 414),
        (&b"GET / HTTP/1.1\r\nX-Long: "[..], 431),
    ] {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        s.write_all(start).unwrap();
        let mut w = s.try_clone().unwrap();
        let writer = std::thread::spawn(move || {
            let chunk = [b'a'; 8192];
            let mut sent = 0usize;
            while sent < 10 << 20 && w.write_all(&chunk).is_ok() {
                sent += chunk.len();
            }
            sent
        });
        let mut all = Vec::new();
        let _ = s.read_to_end(&mut all);
        let _ = s.shutdown(std::net::Shutdown::Both);
        let sent = writer.join().unwrap();
        let (status, _, _) = split(&all);
        assert_eq!(status, want, "{}", String::from_utf8_lossy(&all));
        assert!(
            sent < 10 << 20,
            "the server stopped reading: {sent} bytes sent"
        );
        assert_eq!(healthz(addr), 200);
    }
    // A request line over the bound that arrives whole, its end included.
    let (status, _, _) = exchange(
        addr,
        format!("GET /{} HTTP/1.1\r\nHost: t\r\n\r\n", "a".repeat(2000)).as_bytes(),
    );
    assert_eq!(status, 414);
    let many: String = (0..40).map(|i| format!("X-{i}: v\r\n")).collect();
    let (status, _, _) = exchange(
        addr,
        format!("GET /healthz HTTP/1.1\r\nHost: t\r\n{many}\r\n").as_bytes(),
    );
    assert_eq!(status, 431, "too many header fields");
    let (status, _, _) = exchange(addr, b"NOT HTTP AT ALL\r\n\r\n");
    assert_eq!(status, 400);
    server.stop();
}

#[test]
fn a_body_over_the_bound_is_refused_before_it_is_read() {
    let server = serve(small_limits());
    let (status, _, body) = exchange(
        server.addr(),
        b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1073741824\r\n\r\nabc",
    );
    assert_eq!(status, 413);
    assert!(
        String::from_utf8_lossy(&body).contains("larger than the bound of 1048576 bytes"),
        "{}",
        String::from_utf8_lossy(&body)
    );
    let (status, _, _) = exchange(
        server.addr(),
        b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    );
    assert_eq!(status, 411);
    // A body within the bound, behind `Expect: 100-continue`.
    let mut s = TcpStream::connect(server.addr()).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.write_all(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut interim = [0u8; 25];
    s.read_exact(&mut interim).unwrap();
    assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    s.write_all(b"body").unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    assert_eq!(split(&all).2, b"body");
    server.stop();
}

#[test]
fn a_byte_at_a_time_client_is_cut_off_and_others_are_served() {
    let server = serve(small_limits());
    let addr = server.addr();
    let slow = std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        // A byte every 300 ms: each read is within any per-read timeout, the head never
        // completes within the header bound (2 s).
        for b in b"GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow: "
            .iter()
            .cycle()
        {
            if s.write_all(&[*b]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(300));
            if s.peek(&mut [0u8; 1]).is_ok_and(|n| n > 0) {
                break;
            }
        }
        let mut all = Vec::new();
        let _ = s.read_to_end(&mut all);
        split(&all).0
    });
    while !slow.is_finished() {
        assert_eq!(healthz(addr), 200, "served while the slow client dribbles");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(slow.join().unwrap(), 408);
    server.stop();
}

#[test]
fn a_client_that_pipelines_and_never_reads_holds_only_itself() {
    let server = serve(small_limits());
    let addr = server.addr();
    // Asks for 256 KiB answers, hundreds of times, and reads none: its socket fills, its
    // thread's write times out (2 s), and its connection is closed.
    let mut greedy = TcpStream::connect(addr).unwrap();
    let request = b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n";
    greedy
        .set_write_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    for _ in 0..200 {
        if greedy.write_all(request).is_err() {
            break;
        }
    }
    wait_until("the greedy connection is counted", || {
        server.connections() >= 1
    });
    for _ in 0..20 {
        assert_eq!(healthz(addr), 200, "served while a client does not read");
    }
    wait_until("the greedy connection is closed by the write bound", || {
        server.connections() == 0
    });
    drop(greedy);
    server.stop();
}

#[test]
fn thousands_of_idle_connections_are_bounded_and_the_oldest_make_room() {
    let server = serve(
        small_limits()
            .max_connections(50)
            .idle_timeout(Duration::from_secs(60))
            .header_timeout(Duration::from_secs(60)),
    );
    let addr = server.addr();
    let mut idle = Vec::new();
    for _ in 0..2000 {
        let s = TcpStream::connect(addr).unwrap();
        idle.push(s);
    }
    // Past the bound, each new one closes the one idle longest (or, if it comes while
    // threads of closed ones are still ending, is answered 503): nothing queued.
    for s in &idle {
        s.set_read_timeout(Some(Duration::from_millis(1))).unwrap();
    }
    wait_until("the server counts its bound", || server.connections() == 50);
    wait_until("the excess ones are closed", || {
        let mut refused = 0;
        for s in &idle {
            let mut b = [0u8; 64];
            match s.peek(&mut b) {
                Ok(0) => refused += 1,
                Ok(_) if b.starts_with(b"HTTP/1.1 503") => refused += 1,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => refused += 1,
                Err(_) => {}
            }
        }
        refused >= 2000 - 50
    });
    assert!(server.connections() <= 50);
    // Its bound reached, the server still answers once a slot frees.
    drop(idle);
    wait_until("slots free again", || server.connections() == 0);
    assert_eq!(healthz(addr), 200);
    server.stop();
}

#[test]
fn an_idle_keep_alive_connection_is_closed_at_the_idle_bound_and_stop_joins_everything() {
    let server = serve(small_limits().idle_timeout(Duration::from_millis(300)));
    let addr = server.addr();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let mut all = Vec::new();
    let _ = s.read_to_end(&mut all); // the server closes it once idle
    assert!(String::from_utf8_lossy(&all).contains("Connection: keep-alive"));
    wait_until("closed", || server.connections() == 0);

    // Stop with an idle connection, a half-sent request and a never-reading client: it
    // returns, and each of them sees its connection closed.
    let server = serve(small_limits());
    let addr = server.addr();
    let mut idle = TcpStream::connect(addr).unwrap();
    let mut half = TcpStream::connect(addr).unwrap();
    half.write_all(b"GET /healthz HTTP/1.1\r\nHo").unwrap();
    wait_until("both counted", || server.connections() == 2);
    server.stop();
    for s in [&mut idle, &mut half] {
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest); // ends: closed (EOF or reset), not timed out
    }
    assert!(TcpStream::connect(addr).is_err(), "the listener is closed");
}

// --- TLS (feature `webhook`) ---------------------------------------------------------

fn tls_client() -> Arc<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    use rustls::pki_types::pem::PemObject;
    for c in rustls::pki_types::CertificateDer::pem_slice_iter(CA_PEM.as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    Arc::new(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

type TlsStream = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

fn tls_connect(addr: SocketAddr) -> std::io::Result<TlsStream> {
    let sock = TcpStream::connect(addr)?;
    sock.set_read_timeout(Some(PATIENCE))?;
    let conn = rustls::ClientConnection::new(tls_client(), "localhost".try_into().unwrap())
        .map_err(std::io::Error::other)?;
    let mut s = rustls::StreamOwned::new(conn, sock);
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock)?;
    }
    Ok(s)
}

/// One keep-alive request over TLS; the status.
fn tls_get(s: &mut TlsStream, path: &str) -> std::io::Result<u16> {
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes())?;
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if s.read(&mut b)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        head.push(b[0]);
    }
    let text = String::from_utf8_lossy(&head).to_string();
    let len: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .unwrap()
        .parse()
        .unwrap();
    let mut body = vec![0u8; len];
    s.read_exact(&mut body)?;
    Ok(split(&head).0)
}

fn write_pair(dir: &std::path::Path, cert: &[u8], key: &[u8]) {
    // As a Secret update does: new files renamed into place.
    for (name, bytes) in [("tls.crt", cert), ("tls.key", key)] {
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, bytes).unwrap();
        std::fs::rename(&tmp, dir.join(name)).unwrap();
    }
}

fn tls_server(dir: &std::path::Path) -> Server {
    Server::builder("tls")
        .limits(small_limits())
        .grace(Duration::from_secs(1))
        .tls(TlsFiles::new(dir).check_every(Duration::ZERO))
        .bind("127.0.0.1:0", router())
        .unwrap()
}

#[test]
fn a_tls_handshake_of_garbage_is_dropped_and_others_are_served() {
    let dir = tempfile::tempdir().unwrap();
    write_pair(
        dir.path(),
        SERVER_CERT_PEM.as_bytes(),
        SERVER_KEY_PEM.as_bytes(),
    );
    let server = tls_server(dir.path());
    let addr = server.addr();
    let mut good = tls_connect(addr).unwrap();
    assert_eq!(tls_get(&mut good, "/healthz").unwrap(), 200);
    for garbage in [
        &b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"[..],
        &[0x16, 0x03, 0x01, 0xff, 0xff, 1, 2, 3, 4][..],
        &[0u8; 4096][..],
    ] {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        let _ = s.write_all(garbage);
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest); // an alert at most, then closed
        assert!(!String::from_utf8_lossy(&rest).contains("HTTP/1.1"));
        assert_eq!(tls_get(&mut good, "/healthz").unwrap(), 200);
    }
    // A handshake that stops half way is cut off at the header bound; others go on.
    let mut silent = TcpStream::connect(addr).unwrap();
    silent.write_all(&[0x16, 0x03, 0x01]).unwrap();
    assert_eq!(
        tls_get(&mut tls_connect(addr).unwrap(), "/healthz").unwrap(),
        200
    );
    silent.set_read_timeout(Some(PATIENCE)).unwrap();
    let _ = silent.read_to_end(&mut Vec::new());
    wait_until("only the good connection left", || {
        server.connections() == 1
    });
    server.stop();
}

#[test]
fn certificates_rotate_without_dropping_connections_and_garbage_keeps_the_old_pair() {
    let dir = tempfile::tempdir().unwrap();
    // First a certificate not valid for `localhost` (the admin client certificate): the
    // client refuses it.
    write_pair(
        dir.path(),
        ADMIN_CERT_PEM.as_bytes(),
        ADMIN_KEY_PEM.as_bytes(),
    );
    let server = tls_server(dir.path());
    let addr = server.addr();
    assert!(tls_connect(addr).is_err(), "not valid for localhost");
    assert_eq!(server.tls_status().unwrap().loads, 1);

    // Rotated to the server certificate: new handshakes use it.
    write_pair(
        dir.path(),
        SERVER_CERT_PEM.as_bytes(),
        SERVER_KEY_PEM.as_bytes(),
    );
    wait_until("the new pair serves", || tls_connect(addr).is_ok());
    assert_eq!(server.tls_status().unwrap().loads, 2);
    let mut open = tls_connect(addr).unwrap();
    assert_eq!(tls_get(&mut open, "/healthz").unwrap(), 200);

    // Replaced by garbage: the old pair keeps serving, the status says why.
    std::fs::write(dir.path().join("tls.crt"), b"not a certificate").unwrap();
    wait_until("the broken pair is noticed", || {
        let _ = tls_connect(addr);
        server.tls_status().unwrap().last_error.is_some()
    });
    let why = server.tls_status().unwrap().last_error.unwrap();
    assert!(why.contains("no CERTIFICATE"), "{why}");
    assert_eq!(
        tls_get(&mut tls_connect(addr).unwrap(), "/healthz").unwrap(),
        200
    );
    // A key that does not match the certificate: refused too.
    write_pair(
        dir.path(),
        SERVER_CERT_PEM.as_bytes(),
        ADMIN_KEY_PEM.as_bytes(),
    );
    wait_until("the mismatch is noticed", || {
        let _ = tls_connect(addr);
        server
            .tls_status()
            .unwrap()
            .last_error
            .is_some_and(|e| e.contains("does not match"))
    });
    assert_eq!(
        tls_get(&mut tls_connect(addr).unwrap(), "/healthz").unwrap(),
        200
    );
    // The connection opened before all this still answers.
    assert_eq!(tls_get(&mut open, "/healthz").unwrap(), 200);
    assert_eq!(server.tls_status().unwrap().loads, 2);
    server.stop();
}

// --- Issue 38: deadlines no client can stretch, one framing, no reused decision, room ---

/// Sends `bytes` one at a time, 200 ms apart, on a raw socket, until the server closes it
/// (or all are sent); how many were sent. Whatever the server sends meanwhile (a TLS alert,
/// a close_notify) is read and dropped; its close is what counts.
fn trickle(sock: TcpStream, bytes: &[u8]) -> usize {
    use std::sync::atomic::{AtomicBool, Ordering};
    let closed = Arc::new(AtomicBool::new(false));
    let mut reader = sock.try_clone().unwrap();
    let flag = Arc::clone(&closed);
    let drain = std::thread::spawn(move || {
        let _ = reader.read_to_end(&mut Vec::new());
        flag.store(true, Ordering::SeqCst);
    });
    let mut sent = 0;
    let mut w = &sock;
    for b in bytes {
        if closed.load(Ordering::SeqCst) || w.write_all(&[*b]).is_err() {
            break;
        }
        sent += 1;
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = sock.shutdown(std::net::Shutdown::Both);
    drain.join().unwrap();
    sent
}

#[test]
fn a_tls_client_trickling_its_handshake_or_its_head_is_cut_off_at_the_header_bound() {
    let dir = tempfile::tempdir().unwrap();
    write_pair(
        dir.path(),
        SERVER_CERT_PEM.as_bytes(),
        SERVER_KEY_PEM.as_bytes(),
    );
    let server = tls_server(dir.path()); // header_timeout 2 s
    let addr = server.addr();

    // A ClientHello, a byte every 200 ms: each byte arrives well within any per-read
    // timeout; the whole takes a minute.
    let mut client =
        rustls::ClientConnection::new(tls_client(), "localhost".try_into().unwrap()).unwrap();
    let mut hello = Vec::new();
    while client.wants_write() {
        client.write_tls(&mut hello).unwrap();
    }
    assert!(hello.len() > 100, "{} bytes", hello.len());
    let handshake = std::thread::spawn(move || {
        let sent = trickle(TcpStream::connect(addr).unwrap(), &hello);
        (sent, hello.len())
    });

    // After a good handshake, one record holding a request head, its bytes 200 ms apart:
    // no byte of the head is decrypted until the record is whole.
    let mut s = tls_connect(addr).unwrap();
    s.conn
        .writer()
        .write_all(
            format!(
                "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow: {}\r\n\r\n",
                "a".repeat(200)
            )
            .as_bytes(),
        )
        .unwrap();
    let mut record = Vec::new();
    while s.conn.wants_write() {
        s.conn.write_tls(&mut record).unwrap();
    }
    let head = std::thread::spawn(move || {
        let sent = trickle(s.sock.try_clone().unwrap(), &record);
        (sent, record.len())
    });

    // Others are served meanwhile.
    let mut good = tls_connect(addr).unwrap();
    while !handshake.is_finished() || !head.is_finished() {
        assert_eq!(tls_get(&mut good, "/healthz").unwrap(), 200);
        std::thread::sleep(Duration::from_millis(50));
    }
    let (sent, all) = handshake.join().unwrap();
    assert!(sent < all, "the handshake went on for all its {all} bytes");
    let (sent, all) = head.join().unwrap();
    assert!(sent < all, "the record went on for all its {all} bytes");
    wait_until("only the good connection left", || {
        server.connections() == 1
    });
    server.stop();
}

#[test]
fn a_content_length_that_is_not_only_digits_is_refused_and_closes() {
    let server = serve(small_limits());
    for value in [
        "+5",
        "+0",
        " +5",
        "5 5",
        "0x5",
        "5;",
        "",
        "5\u{85}",
        "18446744073709551616",
    ] {
        let (status, head, body) = exchange(
            server.addr(),
            format!("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {value}\r\n\r\nhello")
                .as_bytes(),
        );
        assert_eq!(
            status,
            400,
            "Content-Length {value:?}: {head}{}",
            String::from_utf8_lossy(&body)
        );
        assert!(head.contains("Connection: close\r\n"), "{head}");
    }
    // Digits (with the blanks around a field value) are a length.
    let (status, _, body) = exchange(
        server.addr(),
        b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length:  005 \r\nConnection: close\r\n\r\nhello",
    );
    assert_eq!((status, body.as_slice()), (200, &b"hello"[..]));
    server.stop();
}

#[test]
fn a_head_with_a_bare_lf_is_refused_and_nothing_behind_it_is_skipped() {
    let server = serve(small_limits());
    // The first head ends with a bare-LF blank line; the framing used to look on to the
    // next CRLF CRLF while the parser stopped at the LF LF, and the request between was
    // dropped unseen.
    for raw in [
        &b"GET /healthz HTTP/1.1\nHost: t\n\nPOST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello"[..],
        &b"GET /healthz HTTP/1.1\r\nHost: t\r\n\nPOST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello"[..],
        &b"GET /healthz HTTP/1.1\r\nHost: t\nX-A: b\r\n\r\n"[..],
        &b"GET /healthz HTTP/1.1\nHost: t\n\n"[..],
    ] {
        let mut s = TcpStream::connect(server.addr()).unwrap();
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        s.write_all(raw).unwrap();
        let mut all = Vec::new();
        let _ = s.read_to_end(&mut all);
        let text = String::from_utf8_lossy(&all);
        assert!(text.starts_with("HTTP/1.1 400 "), "{raw:?}: {text}");
        assert_eq!(text.matches("HTTP/1.1 ").count(), 1, "{text}");
        assert!(text.contains("bare LF"), "{text}");
    }
    // A body is bytes: an LF in it, and a pipelined request after it, are fine.
    let mut s = TcpStream::connect(server.addr()).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.write_all(
        b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\na\nb\
          GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut all = Vec::new();
    let _ = s.read_to_end(&mut all);
    let text = String::from_utf8_lossy(&all);
    assert_eq!(text.matches("HTTP/1.1 200 OK\r\n").count(), 2, "{text}");
    assert!(text.contains("\r\n\r\na\nbHTTP/1.1 200"), "{text}");
    // Blank lines before a request stay allowed, bare LF or not (RFC 9112 §2.2).
    let (status, _, _) = exchange(
        server.addr(),
        b"\n\r\n\nGET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200);
    server.stop();
}

#[test]
fn every_slot_held_by_silent_sockets_still_lets_a_probe_in() {
    let server = serve(
        small_limits()
            .max_connections(8)
            .header_timeout(Duration::from_secs(60))
            .idle_timeout(Duration::from_secs(60)),
    );
    let addr = server.addr();
    let silent: Vec<TcpStream> = (0..8).map(|_| TcpStream::connect(addr).unwrap()).collect();
    wait_until("every slot taken", || server.connections() == 8);
    // Each probe closes the connection quiet longest to make room, and keeps its own open
    // (keep-alive): the silent ones go first, then the probes answered longest ago.
    let mut probes = Vec::new();
    for _ in 0..12 {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        s.write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let mut answer = Vec::new();
        let mut b = [0u8; 256];
        while !answer.ends_with(b"\r\n\r\nok\n") {
            let n = s.read(&mut b).unwrap();
            assert!(n > 0, "closed: {}", String::from_utf8_lossy(&answer));
            answer.extend_from_slice(&b[..n]);
        }
        assert!(answer.starts_with(b"HTTP/1.1 200 OK\r\n"));
        probes.push(s);
    }
    assert!(server.connections() <= 8);
    for mut s in silent {
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest); // EOF or reset: closed by the server
        assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest));
    }
    // Four probes answered earlier made room for the last four (which ones depends on when
    // each thread went back to waiting); the other eight still answer.
    let (mut closed, mut answered) = (0, 0);
    for s in probes.iter_mut() {
        let mut all = Vec::new();
        let _ = s.write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        let _ = s.read_to_end(&mut all);
        if all.is_empty() {
            closed += 1;
        } else {
            assert_eq!(split(&all).0, 200);
            answered += 1;
        }
    }
    assert_eq!((closed, answered), (4, 8));
    server.stop();
}

#[test]
fn room_is_made_only_from_idle_connections_never_from_a_request_on_its_way() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let entered = Arc::new(AtomicUsize::new(0));
    let (release, gate) = crossbeam_channel::bounded::<()>(0);
    let count = Arc::clone(&entered);
    let router = router().route("/block", move |_: &Request| {
        count.fetch_add(1, Ordering::SeqCst);
        let _ = gate.recv();
        Response::text(200, "released\n")
    });
    let server = Server::builder("test")
        .limits(
            small_limits()
                .max_connections(8)
                .header_timeout(Duration::from_secs(60))
                .idle_timeout(Duration::from_secs(60)),
        )
        .grace(Duration::from_secs(1))
        .bind("127.0.0.1:0", router)
        .unwrap();
    let addr = server.addr();
    let open = |raw: &[u8]| {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        s.write_all(raw).unwrap();
        s
    };
    // Every slot in a handler: a new connection is refused, none of them is closed.
    let busy: Vec<TcpStream> = (0..8)
        .map(|_| open(b"GET /block HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"))
        .collect();
    wait_until("every handler entered", || {
        entered.load(Ordering::SeqCst) == 8
    });
    assert_eq!(healthz(addr), 503);
    for _ in 0..8 {
        release.send(()).unwrap();
    }
    for mut s in busy {
        let mut all = Vec::new();
        let _ = s.read_to_end(&mut all);
        assert!(String::from_utf8_lossy(&all).ends_with("\r\n\r\nreleased\n"));
    }
    wait_until("all closed", || server.connections() == 0);

    // One silent socket, then seven with half a head: the silent one makes room; each
    // half-sent request then completes and is answered.
    let mut silent = TcpStream::connect(addr).unwrap();
    wait_until("the silent one counted", || server.connections() == 1);
    let halves: Vec<TcpStream> = (0..7)
        .map(|_| open(b"GET /healthz HTTP/1.1\r\nHo"))
        .collect();
    wait_until("every slot taken", || server.connections() == 8);
    assert_eq!(healthz(addr), 200);
    silent.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut rest = Vec::new();
    let _ = silent.read_to_end(&mut rest);
    assert!(rest.is_empty());
    for mut s in halves {
        s.write_all(b"st: t\r\nConnection: close\r\n\r\n").unwrap();
        let mut all = Vec::new();
        let _ = s.read_to_end(&mut all);
        assert_eq!(split(&all).0, 200);
    }
    server.stop();
}

#[test]
fn an_allowed_decision_is_not_reused_for_a_review_with_other_extra() {
    use kube_informer::api::UserInfo;
    use kube_informer::serve::RequireAccess;
    use kube_informer::testing::ApiServer;
    use kube_informer::Client;
    // One user, uid and groups; two tokens: the full one and one scoped down (OpenShift's
    // scoped tokens carry their scopes in `extra`).
    let user = |scopes: &[&str]| UserInfo {
        username: "alice".into(),
        uid: "a1".into(),
        groups: vec!["team".into(), "system:authenticated".into()],
        extra: [(
            "scopes.authorization.openshift.io".to_string(),
            scopes.iter().map(|s| s.to_string()).collect(),
        )]
        .into_iter()
        .collect(),
    };
    let api = ApiServer::builder()
        .user_info_token("full-token", user(&["user:full"]))
        .user_info_token("scoped-token", user(&["user:info"]))
        .start();
    api.set_authorizer(|spec| {
        spec.extra
            .get("scopes.authorization.openshift.io")
            .is_some_and(|s| s.iter().any(|s| s == "user:full"))
            && spec
                .non_resource_attributes
                .as_ref()
                .is_some_and(|a| a.path == "/metrics" && a.verb == "get")
    });
    let client = Client::new(api.client_config()).unwrap();
    let metrics = RequireAccess::new(client, |_: &Request| Response::text(200, "up 1\n"));
    let server = Server::builder("metrics")
        .bind("127.0.0.1:0", Router::new().route("/metrics", metrics))
        .unwrap();
    let ask = |token: &str| {
        exchange(
            server.addr(),
            format!("GET /metrics HTTP/1.1\r\nHost: m\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .0
    };
    let reviews = || {
        api.requests()
            .iter()
            .filter(|r| r.contains("subjectaccessreviews"))
            .count()
    };
    assert_eq!(ask("full-token"), 200);
    assert_eq!(
        ask("scoped-token"),
        403,
        "the full token's allow was reused"
    );
    // Each answer is still cached for its own review.
    assert_eq!(ask("full-token"), 200);
    assert_eq!(ask("scoped-token"), 403);
    assert_eq!(reviews(), 2);
    server.stop();
}
