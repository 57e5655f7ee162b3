//! Issue 31: exec and port-forward upgrades through every proxy ordinary requests take —
//! SOCKS5 (`socks5://`, `socks5h://`, with and without username/password), HTTP CONNECT
//! over `http://` and over `https://` — against the test server over TLS with a token; and
//! refusals, failed proxy authentication and malformed proxy answers as clear errors that
//! never show the proxy's password.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};

use common::proxies::{connect_proxy, socks5_proxy};
use kube_informer::pod::{ExecParams, PortMapping};
use kube_informer::testing::{ApiServer, Runtime};
use kube_informer::{Client, Error};

const USER: &str = "proxy-user";
const PASSWORD: &str = "pr0xy-S3cret+x";

/// A TLS test server with a token, a pod with a command and an echo port.
fn server() -> ApiServer {
    let s = ApiServer::builder().tls().token("t0k3n").start();
    s.create_pod("lab", "p", &[]).unwrap();
    s.runtime()
        .command(&["id"], Runtime::output(b"admin\n", b"", 0));
    s.runtime().port("lab", "p", 5432, echo_listener());
    s
}

/// Every connection gets back what it sends, uppercased.
fn echo_listener() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 || s.write_all(&buf[..n].to_ascii_uppercase()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// A client of `server` (at `url`, the server's own when `None`) through `proxy`.
fn client(server: &ApiServer, url: Option<String>, proxy: String) -> Client {
    let mut cfg = server.client_config();
    if let Some(u) = url {
        cfg.server = u;
    }
    cfg.proxy = Some(proxy);
    Client::new(cfg).unwrap()
}

/// An exec and a forwarded connection through the client's proxy.
fn exec_and_forward(c: &Client) {
    let out = c
        .exec_output("lab", "p", &ExecParams::new(["id"]), b"")
        .unwrap();
    assert_eq!(out.stdout, b"admin\n");
    assert!(out.status.success());
    let f = c
        .port_forward("lab", "p", &[":5432".parse::<PortMapping>().unwrap()])
        .unwrap();
    let mut s = TcpStream::connect(f.ports()[0].local).unwrap();
    s.set_read_timeout(Some(common::PATIENCE)).unwrap();
    s.write_all(b"through").unwrap();
    let mut got = [0u8; 7];
    s.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"THROUGH");
    drop(s);
    f.stop();
}

#[test]
fn exec_and_port_forward_through_socks5_proxies() {
    let server = server();
    let port = server.addr().port();
    // socks5 with username/password: the address is resolved here.
    let (proxy, seen) = socks5_proxy(Some((USER, PASSWORD)), false);
    let url = format!("socks5://{USER}:{}@{proxy}", PASSWORD.replace('+', "%2B"));
    exec_and_forward(&client(&server, None, url));
    {
        let seen = seen.lock().unwrap();
        // The exec's upgrade, the port-forward's GET of the pod, its upgrade.
        assert_eq!(seen.users, [USER, USER, USER]);
        assert_eq!(seen.targets, vec![format!("127.0.0.1:{port}"); 3]);
    }
    // socks5h without authentication: the proxy is given the name.
    let (proxy, seen) = socks5_proxy(None, false);
    let by_name = format!("https://localhost:{port}");
    exec_and_forward(&client(
        &server,
        Some(by_name),
        format!("socks5h://{proxy}"),
    ));
    assert_eq!(
        seen.lock().unwrap().targets,
        vec![format!("localhost:{port}"); 3]
    );
    // The token reached the server on both upgrades.
    let upgrades: Vec<_> = server
        .request_headers()
        .into_iter()
        .filter(|r| r.request.contains("/exec") || r.request.contains("/portforward"))
        .collect();
    assert_eq!(upgrades.len(), 4);
    for r in upgrades {
        assert_eq!(r.values("authorization"), ["Bearer t0k3n"]);
    }
}

#[test]
fn exec_and_port_forward_through_http_and_https_connect_proxies() {
    let server = server();
    let port = server.addr().port();
    for tls in [false, true] {
        let (proxy, seen) = connect_proxy(tls, Some((USER, PASSWORD)));
        let scheme = if tls { "https" } else { "http" };
        // The certificate of the TLS proxy is for localhost, signed by the client's CA.
        let host = if tls {
            format!("localhost:{}", proxy.port())
        } else {
            proxy.to_string()
        };
        let url = format!("{scheme}://{USER}:{}@{host}", PASSWORD.replace('+', "%2B"));
        exec_and_forward(&client(&server, None, url));
        let seen = seen.lock().unwrap();
        assert_eq!(seen.users, [USER, USER, USER], "{scheme}");
        assert_eq!(
            seen.targets,
            vec![format!("127.0.0.1:{port}"); 3],
            "{scheme}"
        );
    }
}

#[test]
fn failed_proxy_authentication_is_a_clear_error_without_the_password() {
    let server = server();
    let wrong = "wr0ng-PW";
    let (socks, _) = socks5_proxy(Some((USER, PASSWORD)), false);
    let (http, _) = connect_proxy(false, Some((USER, PASSWORD)));
    let (https, _) = connect_proxy(true, Some((USER, PASSWORD)));
    let cases = [
        (
            format!("socks5://{USER}:{wrong}@{socks}"),
            "SOCKS5 proxy refused the user and password",
        ),
        (
            format!("http://{USER}:{wrong}@{http}"),
            "proxy refused the user and password",
        ),
        (
            format!("https://{USER}:{wrong}@localhost:{}", https.port()),
            "proxy refused the user and password",
        ),
        (
            format!("http://{http}"),
            "the proxy wants authentication (HTTP 407)",
        ),
    ];
    for (url, want) in cases {
        let c = client(&server, None, url.clone());
        let e = c
            .exec_output("lab", "p", &ExecParams::new(["id"]), b"")
            .unwrap_err();
        let text = e.to_string();
        assert!(text.contains(want), "{url}: {text}");
        assert!(text.contains("through proxy"), "{url}: {text}");
        assert!(!text.contains(wrong), "{text}");
        assert!(!format!("{e:?}").contains(wrong), "{e:?}");
        // A port-forward gets the pod first, as kubectl does: the proxy refuses that.
        let e = c
            .port_forward("lab", "p", &[":5432".parse::<PortMapping>().unwrap()])
            .unwrap_err();
        let text = e.to_string();
        assert!(text.contains("through proxy"), "{url}: {text}");
        assert!(!text.contains(wrong), "{text}");
        assert!(!format!("{e:?}").contains(wrong), "{e:?}");
    }
    // A refusing SOCKS5 proxy: its reason, and nothing reached the server.
    let (refusing, _) = socks5_proxy(None, true);
    let before = server.requests().len();
    let e = client(&server, None, format!("socks5://{refusing}"))
        .exec_output("lab", "p", &ExecParams::new(["id"]), b"")
        .unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e:?}");
    assert!(
        e.to_string().contains("connection not allowed by ruleset"),
        "{e}"
    );
    assert_eq!(server.requests().len(), before);
}

/// A "SOCKS5 proxy" that reads the greeting (and what follows), then answers `reply`.
fn raw_proxy(reply: &'static [u8]) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            std::thread::spawn(move || {
                let mut buf = [0u8; 512];
                let _ = s.read(&mut buf);
                let _ = s.write_all(reply);
                // Read whatever comes next, then close.
                let _ = s.set_read_timeout(Some(std::time::Duration::from_millis(200)));
                let _ = s.read(&mut buf);
            });
        }
    });
    addr
}

#[test]
fn malformed_socks5_answers_are_errors_not_panics() {
    let server = server();
    let cases: [(&'static [u8], &str); 6] = [
        (b"HTTP/1.1 400 Bad Request\r\n\r\n", "malformed: version 72"),
        (
            &[5],
            "malformed: the proxy closed the connection in the middle of it",
        ),
        (&[5, 9], "malformed: authentication method 9"),
        (&[5, 0xff], "none of the offered authentication methods"),
        // Accepted, then a reply with an unknown address type.
        (&[5, 0, 5, 0, 0, 9], "malformed: address type 9"),
        // Accepted, then a truncated bound address.
        (
            &[5, 0, 5, 0, 0, 1, 127],
            "malformed: the proxy closed the connection in the middle of it",
        ),
    ];
    for (reply, want) in cases {
        let proxy = raw_proxy(reply);
        let e = client(&server, None, format!("socks5h://{proxy}"))
            .exec_output("lab", "p", &ExecParams::new(["id"]), b"")
            .unwrap_err();
        let text = e.to_string();
        assert!(text.contains(want), "{reply:?}: {text}");
    }
}
