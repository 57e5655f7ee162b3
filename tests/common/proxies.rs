//! Small proxies on loopback for the tests: SOCKS5 (RFC 1928, with RFC 1929
//! username/password) and HTTP CONNECT, plain or over TLS (the test server's certificate),
//! each recording the users it authenticated and the targets it was asked for.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What a proxy saw: the users it authenticated and each target it was asked for.
#[derive(Default, Debug)]
pub struct Seen {
    pub users: Vec<String>,
    pub targets: Vec<String>,
}

/// Required credentials, if any.
pub type Credentials = Option<(&'static str, &'static str)>;

fn serve(
    handle: impl Fn(TcpStream, &Mutex<Seen>) -> std::io::Result<()> + Send + Sync + 'static,
) -> (SocketAddr, Arc<Mutex<Seen>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let seen2 = seen.clone();
    let handle = Arc::new(handle);
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { continue };
            let (seen, handle) = (seen2.clone(), handle.clone());
            std::thread::spawn(move || {
                let _ = handle(client, &seen);
            });
        }
    });
    (addr, seen)
}

fn read_n(s: &mut impl Read, n: usize) -> std::io::Result<Vec<u8>> {
    let mut b = vec![0; n];
    s.read_exact(&mut b)?;
    Ok(b)
}

/// Copies both ways between two TCP connections until both sides are done.
fn pump(c: TcpStream, upstream: TcpStream) -> std::io::Result<()> {
    let (mut up_r, mut up_w) = (upstream.try_clone()?, upstream);
    let (mut c_r, mut c_w) = (c.try_clone()?, c);
    let t = std::thread::spawn(move || {
        let _ = std::io::copy(&mut c_r, &mut up_w);
        let _ = up_w.shutdown(Shutdown::Write);
    });
    let _ = std::io::copy(&mut up_r, &mut c_w);
    let _ = c_w.shutdown(Shutdown::Both);
    let _ = t.join();
    Ok(())
}

/// A SOCKS5 proxy. With `auth`, only username/password (method 2) with those credentials
/// is accepted; without, only "no authentication" (method 0). With `refuse`, every CONNECT
/// is answered "connection not allowed by ruleset" (reply 2).
pub fn socks5_proxy(auth: Credentials, refuse: bool) -> (SocketAddr, Arc<Mutex<Seen>>) {
    serve(move |c, seen| socks5_session(c, auth, refuse, seen))
}

fn socks5_session(
    mut c: TcpStream,
    auth: Credentials,
    refuse: bool,
    seen: &Mutex<Seen>,
) -> std::io::Result<()> {
    let head = read_n(&mut c, 2)?;
    assert_eq!(head[0], 5);
    let methods = read_n(&mut c, head[1] as usize)?;
    match auth {
        Some((want_user, want_password)) => {
            if !methods.contains(&2) {
                return c.write_all(&[5, 0xff]);
            }
            c.write_all(&[5, 2])?;
            // RFC 1929: version 1, user, password.
            let v = read_n(&mut c, 2)?;
            assert_eq!(v[0], 1);
            let user = String::from_utf8(read_n(&mut c, v[1] as usize)?).unwrap();
            let plen = read_n(&mut c, 1)?[0] as usize;
            let password = String::from_utf8(read_n(&mut c, plen)?).unwrap();
            if user != want_user || password != want_password {
                return c.write_all(&[1, 1]);
            }
            c.write_all(&[1, 0])?;
            seen.lock().unwrap().users.push(user);
        }
        None => {
            if !methods.contains(&0) {
                return c.write_all(&[5, 0xff]);
            }
            c.write_all(&[5, 0])?;
        }
    }
    // CONNECT: version, command 1, reserved, address type, address, port.
    let req = read_n(&mut c, 4)?;
    assert_eq!(&req[..3], &[5, 1, 0]);
    let host = match req[3] {
        1 => {
            let a = read_n(&mut c, 4)?;
            format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3])
        }
        3 => {
            let n = read_n(&mut c, 1)?[0] as usize;
            String::from_utf8(read_n(&mut c, n)?).unwrap()
        }
        4 => {
            let a: [u8; 16] = read_n(&mut c, 16)?.try_into().unwrap();
            format!("[{}]", std::net::Ipv6Addr::from(a))
        }
        _ => return Ok(()),
    };
    let p = read_n(&mut c, 2)?;
    let target = format!("{host}:{}", u16::from_be_bytes([p[0], p[1]]));
    seen.lock().unwrap().targets.push(target.clone());
    if refuse {
        return c.write_all(&[5, 2, 0, 1, 0, 0, 0, 0, 0, 0]);
    }
    let upstream_addr = target.to_socket_addrs()?.next().unwrap();
    let upstream = TcpStream::connect(upstream_addr)?;
    c.write_all(&[5, 0, 0, 1, 127, 0, 0, 1, 0, 0])?;
    pump(c, upstream)
}

/// An HTTP CONNECT proxy, over TLS with the test server's certificate (signed by
/// `testing::CA_PEM`, for `localhost` and `127.0.0.1`) when `tls`. With `auth`, a CONNECT
/// without those credentials (`Proxy-Authorization: Basic`) gets `407`.
pub fn connect_proxy(tls: bool, auth: Credentials) -> (SocketAddr, Arc<Mutex<Seen>>) {
    serve(move |c, seen| {
        if tls {
            let conn = rustls::ServerConnection::new(tls_config()).unwrap();
            let stream = rustls::StreamOwned::new(conn, c);
            connect_session(stream, auth, seen, |stream, upstream| {
                pump_tls(stream, upstream)
            })
        } else {
            connect_session(c, auth, seen, pump)
        }
    })
}

fn tls_config() -> Arc<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_slice_iter(kube_informer::testing::SERVER_CERT_PEM.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key =
        PrivateKeyDer::from_pem_slice(kube_informer::testing::SERVER_KEY_PEM.as_bytes()).unwrap();
    Arc::new(
        rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap(),
    )
}

fn connect_session<S: Read + Write>(
    c: S,
    auth: Credentials,
    seen: &Mutex<Seen>,
    pump: impl FnOnce(S, TcpStream) -> std::io::Result<()>,
) -> std::io::Result<()> {
    use base64::Engine as _;
    let mut r = BufReader::new(c);
    let mut first = String::new();
    r.read_line(&mut first)?;
    let target = first.split_whitespace().nth(1).unwrap_or("").to_owned();
    let mut authorization = None;
    loop {
        let mut l = String::new();
        if r.read_line(&mut l)? == 0 || l == "\r\n" {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            if k.eq_ignore_ascii_case("proxy-authorization") {
                authorization = Some(v.trim().to_owned());
            }
        }
    }
    // Nothing is sent before the answer, so nothing is left in the reader's buffer.
    let mut c = r.into_inner();
    if let Some((user, password)) = auth {
        let want = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
        );
        if authorization.as_deref() != Some(want.as_str()) {
            c.write_all(b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\n\r\n")?;
            c.flush()?;
            return Ok(());
        }
        seen.lock().unwrap().users.push(user.to_owned());
    }
    seen.lock().unwrap().targets.push(target.clone());
    let upstream = TcpStream::connect(target.to_socket_addrs()?.next().unwrap())?;
    c.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?;
    c.flush()?;
    pump(c, upstream)
}

/// [`pump`] for a TLS client connection, on one thread: rustls keeps one state for both
/// directions, so each side is polled with a short read timeout in turn.
fn pump_tls(
    mut c: rustls::StreamOwned<rustls::ServerConnection, TcpStream>,
    mut upstream: TcpStream,
) -> std::io::Result<()> {
    let poll = Some(Duration::from_millis(2));
    c.sock.set_read_timeout(poll)?;
    upstream.set_read_timeout(poll)?;
    let mut buf = vec![0u8; 64 * 1024];
    let timed_out = |e: &std::io::Error| {
        matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        )
    };
    loop {
        match c.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => upstream.write_all(&buf[..n])?,
            Err(e) if timed_out(&e) => {}
            Err(_) => break,
        }
        match upstream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                c.write_all(&buf[..n])?;
                c.flush()?;
            }
            Err(e) if timed_out(&e) => {}
            Err(_) => break,
        }
    }
    let _ = upstream.shutdown(Shutdown::Both);
    let _ = c.sock.shutdown(Shutdown::Both);
    Ok(())
}
