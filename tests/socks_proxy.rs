//! SOCKS5 proxies (`proxy-url: socks5://…` and `socks5h://…`), through a small SOCKS5
//! server written here (RFC 1928 with RFC 1929 username/password, loopback only) in front
//! of the test API server over TLS: the request arrives with its credentials, the proxy is
//! given an address (`socks5`) or the name (`socks5h`), and a proxy that refuses gives an
//! error naming the proxy (without its password) and the refusal.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use common::*;
use kube_informer::api::DynamicObject;
use kube_informer::config::Config;
use kube_informer::testing::{self, ApiServer};
use kube_informer::{Api, Error, ListParams};

const PROXY_USER: &str = "sockuser";
const PROXY_PASSWORD: &str = "sock-PW-77";

/// What the proxy saw: the user it authenticated and each target it was asked for.
#[derive(Default, Debug)]
struct Seen {
    users: Vec<String>,
    targets: Vec<String>,
}

/// A SOCKS5 proxy on loopback. With `refuse`, every CONNECT is answered "connection not
/// allowed by ruleset" (reply 2).
fn socks5_proxy(refuse: bool) -> (SocketAddr, Arc<Mutex<Seen>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let seen2 = seen.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { continue };
            let seen = seen2.clone();
            std::thread::spawn(move || {
                let _ = handle(client, refuse, &seen);
            });
        }
    });
    (addr, seen)
}

fn read_n(s: &mut TcpStream, n: usize) -> std::io::Result<Vec<u8>> {
    let mut b = vec![0; n];
    s.read_exact(&mut b)?;
    Ok(b)
}

fn handle(mut c: TcpStream, refuse: bool, seen: &Mutex<Seen>) -> std::io::Result<()> {
    // Greeting: version 5, the offered methods; username/password (2) is required.
    let head = read_n(&mut c, 2)?;
    assert_eq!(head[0], 5);
    let methods = read_n(&mut c, head[1] as usize)?;
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
    if user != PROXY_USER || password != PROXY_PASSWORD {
        return c.write_all(&[1, 1]);
    }
    c.write_all(&[1, 0])?;
    seen.lock().unwrap().users.push(user);
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
    let (mut up_r, mut up_w) = (upstream.try_clone()?, upstream);
    let (mut c_r, mut c_w) = (c.try_clone()?, c);
    let pump = std::thread::spawn(move || {
        let _ = std::io::copy(&mut c_r, &mut up_w);
        let _ = up_w.shutdown(Shutdown::Write);
    });
    let _ = std::io::copy(&mut up_r, &mut c_w);
    let _ = c_w.shutdown(Shutdown::Both);
    let _ = pump.join();
    Ok(())
}

fn config(server: &str, proxy_url: &str) -> Config {
    let yaml = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: lab\nclusters:\n- name: lab\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\n    proxy-url: {proxy_url}\ncontexts:\n- name: lab\n  context:\n    cluster: lab\n    user: me\nusers:\n- name: me\n  user:\n    token: t0k3n\n",
        ca = base64::engine::general_purpose::STANDARD.encode(testing::CA_PEM)
    );
    Config::from_kubeconfig_str(&yaml, &Default::default()).unwrap()
}

fn list(config: &Config) -> kube_informer::Result<usize> {
    let api: Api<DynamicObject> = Api::all_with(config.client()?, &pods());
    Ok(api.list(&ListParams::default())?.items.len())
}

fn api_server() -> ApiServer {
    let s = ApiServer::builder()
        .tls()
        .token("t0k3n")
        .resource(&pods())
        .start();
    s.create(&pods(), pod("team-a", "p", "Pending")).unwrap();
    s
}

#[test]
fn socks5_proxies_carry_the_tls_connection_and_its_credentials() {
    let server = api_server();
    let (proxy, seen) = socks5_proxy(false);
    let port = server.addr().port();

    // socks5: the address is resolved here and the proxy is given it.
    let proxy_url = format!("socks5://{PROXY_USER}:{PROXY_PASSWORD}@{proxy}");
    assert_eq!(list(&config(&server.url(), &proxy_url)).unwrap(), 1);
    // socks5h: the proxy is given the name and resolves it (the certificate is for
    // localhost too).
    let proxy_url = format!("socks5h://{PROXY_USER}:{PROXY_PASSWORD}@{proxy}");
    let by_name = format!("https://localhost:{port}");
    assert_eq!(list(&config(&by_name, &proxy_url)).unwrap(), 1);

    let seen = seen.lock().unwrap();
    assert_eq!(seen.users, [PROXY_USER, PROXY_USER]);
    assert_eq!(
        seen.targets,
        [format!("127.0.0.1:{port}"), format!("localhost:{port}")]
    );
    // Both requests arrived with the bearer token.
    let headers = server.request_headers();
    assert_eq!(headers.len(), 2);
    for r in headers {
        assert_eq!(r.values("authorization"), ["Bearer t0k3n"]);
    }
}

#[test]
fn a_refusing_socks5_proxy_is_a_clear_error_and_nothing_reaches_the_server() {
    let server = api_server();
    let (proxy, seen) = socks5_proxy(true);
    let proxy_url = format!("socks5://{PROXY_USER}:{PROXY_PASSWORD}@{proxy}");
    let err = list(&config(&server.url(), &proxy_url)).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    assert!(text.contains("not allowed by ruleset"), "{text}");
    assert!(
        text.contains(&format!("through proxy socks5://<redacted>@{proxy}")),
        "{text}"
    );
    assert!(!text.contains(PROXY_PASSWORD), "{text}");
    assert_eq!(seen.lock().unwrap().targets.len(), 1);
    assert!(server.requests().is_empty());

    // Wrong proxy credentials.
    let proxy_url = format!("socks5://{PROXY_USER}:wrong@{proxy}");
    let err = list(&config(&server.url(), &proxy_url)).unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    assert!(server.requests().is_empty());
}

#[test]
fn proxy_schemes_client_go_does_not_accept_are_refused() {
    for scheme in ["socks4", "socks4a", "ftp"] {
        let c = config(
            "https://127.0.0.1:6443",
            &format!("{scheme}://127.0.0.1:1080"),
        );
        match c.client() {
            Err(Error::Config(m)) => assert!(m.contains("unsupported proxy scheme"), "{m}"),
            other => panic!("{scheme}: {other:?}"),
        }
    }
}
