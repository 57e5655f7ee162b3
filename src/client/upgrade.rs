//! The WebSocket upgrade of exec, attach and port-forward, on the client's own connection
//! settings.
//!
//! ureq 3 gives no access to a connection after a `101 Switching Protocols`, so the upgrade
//! opens its connection here, from the same [`ClientConfig`](super::ClientConfig) the client
//! was built from, with nothing of its own to configure: the server URL (with a path
//! prefix), `tls-server-name` (SNI and verification name, the TCP connection to the URL's
//! host), the CA, `insecure-skip-tls-verify`, the client certificate (an exec plugin's
//! current one included), the proxy (`proxy-url`, else `HTTPS_PROXY`/`NO_PROXY` by the same
//! rules), the connect and request timeouts (the request timeout bounds the handshake
//! only: an upgraded session has no deadline of its own), the user agent. Credentials and `Impersonate-*`
//! headers come from the same function as every other request's
//! ([`Client::credential_headers`]), a 401 refreshes a refreshable credential once, and the
//! upgrade takes a token from the client's rate limiter like any request.
//!
//! What is answered before the upgrade is an ordinary error: a JSON `Status` (pod or
//! container not found, `400` for a pod with no node), or an empty `403` (no offered
//! subprotocol is known), as [`Error::Api`]. A `101` must name one of the offered
//! subprotocols and carry the right `Sec-WebSocket-Accept`; anything else is refused.
//!
//! # Proxies
//!
//! Every proxy an ordinary request can take, chosen by the same rules (`proxy-url`, else
//! `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY`), and treated as ureq treats it for ordinary
//! requests:
//!
//! - `http://`: a `CONNECT host:port` (with `Proxy-Authorization: Basic` from the URL's
//!   `user:password@`), then the server's TLS inside the tunnel;
//! - `https://`: TLS to the proxy first, verified against the client's roots (its
//!   certificate authority, else the webpki roots; `insecure-skip-tls-verify` applies too)
//!   with the proxy's host as the name, then the `CONNECT` inside it, then the server's TLS
//!   inside that. The client certificate is not presented to the proxy: it is the cluster's
//!   credential, and the proxy has no use for it;
//! - `socks5://`: the server's name is resolved here and the proxy is given the first
//!   address; `socks5h://`: the proxy is given the name (an IP address as an address) and
//!   resolves it. No authentication is offered, and username/password (RFC 1929) too when
//!   the URL has a user. Credentials are percent-decoded once (`+` stays a plus), as ureq
//!   decodes them.
//!
//! The proxy's answers are read with fixed-size reads under the request timeout; a refusal
//! (CONNECT's status, SOCKS5's reply code, failed proxy authentication) or a malformed answer
//! is an error naming the proxy without its `user:password@`, never a panic.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use ureq::http::Method;

use super::client::{describe, status_from_body, UpgradeSettings};
use super::duplex::{Carrier, Duplex};
use super::Client;
use crate::config::server_url::ServerUrl;
use crate::error::{Error, Result};
use crate::pod::websocket::{self, WsReader, WsWriter};

const MAX_HEAD: usize = 64 * 1024;
const MAX_ERROR_BODY: u64 = 1 << 20;

/// An upgraded connection.
pub(crate) struct Upgraded {
    /// The subprotocol the server chose (one of those offered).
    pub protocol: String,
    /// Ends the connection from any thread.
    pub duplex: Duplex,
    pub reader: WsReader,
    pub writer: WsWriter,
    /// `GET /api/v1/...`: how errors name the session.
    pub request: String,
}

impl Client {
    /// Opens `path_and_query` as a WebSocket offering `protocols` (in order of preference).
    pub(crate) fn upgrade(&self, path_and_query: &str, protocols: &[&str]) -> Result<Upgraded> {
        let request = describe(&Method::GET, path_and_query);
        let settings = self.upgrade_settings(&request)?;
        let cancelled = || Error::Cancelled {
            request: request.clone(),
        };
        let pause = |d: Duration| match settings.cancel {
            Some(c) => c.sleep(d),
            None => {
                std::thread::sleep(d);
                false
            }
        };
        if self.pace(&Method::GET, &pause) {
            return Err(cancelled());
        }
        let cfg = settings.config;
        let url = ServerUrl::parse(&cfg.server)
            .ok_or_else(|| Error::Config("server URL has no scheme".into()))?;
        let tls = url.scheme.eq_ignore_ascii_case("https");
        let port: u16 = url
            .port_or_default()
            .parse()
            .map_err(|_| Error::Config("server URL: bad port".into()))?;
        let tls_config = if tls {
            Some(rustls_config(&settings, true)?)
        } else {
            None
        };
        let proxy = Proxy::of(cfg)?;
        let proxy_tls = match &proxy {
            Some(p) if p.scheme == ProxyScheme::Https => Some(rustls_config(&settings, false)?),
            _ => None,
        };
        let prefix = url
            .path
            .split(['?', '#'])
            .next()
            .unwrap_or("")
            .trim_end_matches('/');
        let mut reauthenticated = false;
        loop {
            let transport = |e: io::Error| Error::Io {
                request: format!("{request} to {}", settings.origin),
                source: e,
            };
            let carrier = connect(
                &settings,
                proxy.as_ref(),
                proxy_tls.as_ref(),
                url.bare_host(),
                port,
            )
            .map_err(transport)?;
            // The client's token ends the handshake too (a server that never answers the
            // upgrade); from the 101 on, the connection itself is registered.
            let handshake_cancel = settings.cancel.and_then(|token| {
                let sock = carrier.tcp().try_clone().ok()?;
                token.on_cancel(move || {
                    let _ = sock.shutdown(std::net::Shutdown::Both);
                })
            });
            let cancelled_or = |e: Error| match settings.cancel {
                Some(token) if token.is_cancelled() => cancelled(),
                _ => e,
            };
            let mut head = format!(
                "GET {prefix}{path_and_query} HTTP/1.1\r\nHost: {}\r\nUser-Agent: {}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n",
                host_header(&settings, &url),
                cfg.user_agent
            );
            let key = base64::engine::general_purpose::STANDARD.encode(random16());
            head.push_str(&format!(
                "Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Protocol: {}\r\n",
                protocols.join(", ")
            ));
            for (name, value) in self.credential_headers()? {
                head.push_str(&format!("{name}: {}\r\n", value.expose()));
            }
            head.push_str("\r\n");
            let (answer, duplex_parts) = match &tls_config {
                Some(config) => {
                    let name = rustls::pki_types::ServerName::try_from(tls_name(&settings, &url))
                        .map_err(|e| Error::Config(format!("TLS server name: {e}")))?;
                    let conn = rustls::ClientConnection::new(Arc::clone(config), name)
                        .map_err(|e| transport(io::Error::other(e)))?;
                    let mut stream = rustls::StreamOwned::new(conn, carrier);
                    let answer = exchange(&mut stream, head.as_bytes())
                        .map_err(|e| cancelled_or(transport(e)))?;
                    let rustls::StreamOwned { conn, sock } = stream;
                    (answer, (sock, Some(rustls::Connection::Client(conn))))
                }
                None => {
                    let mut carrier = carrier;
                    let answer = exchange(&mut carrier, head.as_bytes())
                        .map_err(|e| cancelled_or(transport(e)))?;
                    (answer, (carrier, None))
                }
            };
            let Answer {
                code,
                headers,
                body,
            } = answer;
            let header = |n: &str| {
                headers
                    .iter()
                    .find(|(k, _)| k == n)
                    .map(|(_, v)| v.as_str())
            };
            if code != 101 {
                if code == 401 && !reauthenticated && self.invalidate_credentials() {
                    reauthenticated = true;
                    continue;
                }
                let status = status_from_body(code, &body, header("content-type"));
                return Err(Error::Api {
                    request,
                    status: Box::new(status),
                });
            }
            let protocol_error = |message: String| Error::Decode {
                request: request.clone(),
                message,
            };
            if header("sec-websocket-accept") != Some(websocket::accept_key(&key).as_str()) {
                return Err(protocol_error(
                    "the 101 answer's Sec-WebSocket-Accept does not match the key sent".into(),
                ));
            }
            let chosen = header("sec-websocket-protocol").unwrap_or("").trim();
            if !protocols.contains(&chosen) {
                let shown: String = chosen.chars().take(64).collect();
                return Err(protocol_error(if chosen.is_empty() {
                    format!("the server upgraded with no subprotocol (offered {protocols:?})")
                } else {
                    format!("the server chose subprotocol {shown:?}, which was not offered ({protocols:?})")
                }));
            }
            let (carrier, conn) = duplex_parts;
            // The request timeout bounds the upgrade only, as kubectl's: after it, a session
            // waits as long as its data takes (an upload to a silent `tar -x`, a quiet
            // forwarded connection). What ends it is the session's own idle timeout, a
            // cancel or a stop.
            let _ = carrier.tcp().set_read_timeout(None);
            let _ = carrier.tcp().set_write_timeout(None);
            let (duplex, read, write) =
                Duplex::split_carrier(carrier, conn, Vec::new()).map_err(transport)?;
            if let Some(token) = settings.cancel {
                duplex.end_on_cancel(token);
                drop(handshake_cancel);
                if token.is_cancelled() {
                    return Err(cancelled());
                }
            }
            let (reader, writer) = websocket::split(read, write, false);
            return Ok(Upgraded {
                protocol: chosen.to_owned(),
                duplex,
                reader,
                writer,
                request,
            });
        }
    }
}

/// The name TLS verifies (and sends as SNI): `tls-server-name`, else the URL's host.
fn tls_name(s: &UpgradeSettings<'_>, url: &ServerUrl<'_>) -> String {
    s.config
        .tls_server_name
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| url.bare_host().to_owned())
}

/// `Host`: as ureq sends it (with `tls-server-name`, that name).
fn host_header(s: &UpgradeSettings<'_>, url: &ServerUrl<'_>) -> String {
    let host = match s
        .config
        .tls_server_name
        .as_deref()
        .filter(|n| !n.is_empty())
    {
        Some(n) => n.to_owned(),
        None => url.host.to_owned(),
    };
    match url.port {
        Some(p) => format!("{host}:{p}"),
        None => host,
    }
}

fn random16() -> [u8; 16] {
    use ring::rand::SecureRandom as _;
    let mut b = [0u8; 16];
    // The key only has to differ between handshakes; a failure of the system's generator
    // (never seen) leaves zeros, which the server accepts just the same.
    let _ = ring::rand::SystemRandom::new().fill(&mut b);
    b
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ProxyScheme {
    Http,
    Https,
    Socks5,
    /// The proxy resolves the name.
    Socks5h,
}

/// The proxy an upgrade goes through (see the [module docs](self)).
struct Proxy {
    scheme: ProxyScheme,
    /// Without brackets.
    host: String,
    port: u16,
    /// Decoded `user` and `password` (empty when the URL has none).
    credentials: Option<(String, String)>,
}

impl Proxy {
    /// `proxy-url`, else the environment's proxy for the server, if any.
    fn of(cfg: &super::ClientConfig) -> Result<Option<Proxy>> {
        let url = match cfg.proxy.as_deref().filter(|p| !p.is_empty()) {
            Some(p) => p.to_owned(),
            None => match crate::config::proxy_from_env(&cfg.server) {
                Some((p, _)) => p,
                None => return Ok(None),
            },
        };
        Proxy::parse(&url).map(Some)
    }

    fn parse(url: &str) -> Result<Proxy> {
        // Never quoted with its credentials.
        let bad =
            |m: &str| Error::Config(format!("proxy {:?}: {m}", crate::config::redact_url(url)));
        let full = if url.contains("://") {
            url.to_owned()
        } else {
            format!("http://{url}")
        };
        let parts = ServerUrl::parse(&full).ok_or_else(|| bad("not a URL"))?;
        let scheme = match parts.scheme.to_ascii_lowercase().as_str() {
            "http" => ProxyScheme::Http,
            "https" => ProxyScheme::Https,
            "socks5" => ProxyScheme::Socks5,
            "socks5h" => ProxyScheme::Socks5h,
            other => {
                return Err(bad(&format!(
                    "unsupported proxy scheme {other:?} (http, https, socks5 and socks5h are)"
                )))
            }
        };
        let port = match parts.port {
            Some(p) => p.parse().map_err(|_| bad("bad port"))?,
            None => match scheme {
                ProxyScheme::Http => 80,
                ProxyScheme::Https => 443,
                ProxyScheme::Socks5 | ProxyScheme::Socks5h => 1080,
            },
        };
        let rest = &full[full.find("://").map_or(0, |i| i + 3)..];
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        let credentials = match authority.rsplit_once('@') {
            Some((userinfo, _)) => {
                let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
                let decode = |v: &str| {
                    decode_userinfo(v).ok_or_else(|| bad("the user or password is not UTF-8"))
                };
                Some((decode(user)?, decode(password)?))
            }
            None => None,
        };
        Ok(Proxy {
            scheme,
            host: parts.bare_host().to_owned(),
            port,
            credentials,
        })
    }
}

/// `%XX` escapes decoded once; everything else (`+` included) as it is. `None` when the
/// result is not UTF-8.
fn decode_userinfo(v: &str) -> Option<String> {
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = (b[i] == b'%')
            .then(|| b.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match hex {
            Some(x) => {
                out.push(x);
                i += 3;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// TCP to `host:port` within the connect timeout (each address in turn), then bounded by
/// the request timeout per read and write until the upgrade.
fn tcp(cfg: &super::ClientConfig, host: &str, port: u16) -> io::Result<TcpStream> {
    let mut last = None;
    for addr in (host, port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&addr, cfg.connect_timeout) {
            Ok(s) => {
                s.set_nodelay(true)?;
                s.set_read_timeout(Some(cfg.request_timeout))?;
                s.set_write_timeout(Some(cfg.request_timeout))?;
                return Ok(s);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address")))
}

/// The connection to the server: direct, or through the proxy's tunnel.
fn connect(
    s: &UpgradeSettings<'_>,
    proxy: Option<&Proxy>,
    proxy_tls: Option<&Arc<rustls::ClientConfig>>,
    host: &str,
    port: u16,
) -> io::Result<Carrier> {
    let cfg = s.config;
    let Some(proxy) = proxy else {
        return tcp(cfg, host, port).map(Carrier::Tcp);
    };
    let mut sock = tcp(cfg, &proxy.host, proxy.port)?;
    match proxy.scheme {
        ProxyScheme::Socks5 | ProxyScheme::Socks5h => {
            socks5(&mut sock, proxy, host, port)?;
            Ok(Carrier::Tcp(sock))
        }
        ProxyScheme::Http => {
            let mut carrier = Carrier::Tcp(sock);
            http_connect(&mut carrier, proxy, host, port, &cfg.user_agent)?;
            Ok(carrier)
        }
        ProxyScheme::Https => {
            let config =
                proxy_tls.ok_or_else(|| io::Error::other("no TLS configuration for the proxy"))?;
            let name =
                rustls::pki_types::ServerName::try_from(proxy.host.clone()).map_err(|e| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("the proxy's TLS name: {e}"),
                    )
                })?;
            let conn = rustls::ClientConnection::new(Arc::clone(config), name)
                .map_err(io::Error::other)?;
            let mut stream = rustls::StreamOwned::new(conn, sock);
            http_connect(&mut stream, proxy, host, port, &cfg.user_agent)?;
            let rustls::StreamOwned { conn, sock } = stream;
            let tcp = sock.try_clone()?;
            // The tunnel's own duplex: ended with the TCP connection.
            let (_, read, write) =
                Duplex::split(sock, Some(rustls::Connection::Client(conn)), Vec::new())?;
            Ok(Carrier::Tunnel {
                sock: tcp,
                read,
                write,
            })
        }
    }
}

/// `host:port` as a CONNECT target or `Host` (an IPv6 address in brackets).
fn authority(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// An HTTP CONNECT to `host:port` on `stream` (the proxy's connection, TLS or not).
fn http_connect<S: Read + Write>(
    stream: &mut S,
    proxy: &Proxy,
    host: &str,
    port: u16,
    user_agent: &str,
) -> io::Result<()> {
    let target = authority(host, port);
    let mut connect =
        format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\nUser-Agent: {user_agent}\r\n");
    if let Some((user, password)) = &proxy.credentials {
        connect.push_str(&format!(
            "Proxy-Authorization: Basic {}\r\n",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
        ));
    }
    connect.push_str("\r\n");
    let answer = exchange(stream, connect.as_bytes())?;
    match answer.code {
        200 => Ok(()),
        407 => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            if proxy.credentials.is_some() {
                "the proxy refused the user and password of the proxy URL (HTTP 407)"
            } else {
                "the proxy wants authentication (HTTP 407) and the proxy URL has no user"
            },
        )),
        code => Err(io::Error::other(format!(
            "the proxy answered CONNECT with HTTP {code}"
        ))),
    }
}

fn malformed(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("the SOCKS5 proxy's answer is malformed: {what}"),
    )
}

/// Exactly `buf.len()` bytes of the proxy's answer; an early end is a malformed answer.
fn read_answer(sock: &mut TcpStream, buf: &mut [u8]) -> io::Result<()> {
    sock.read_exact(buf).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            malformed("the proxy closed the connection in the middle of it")
        } else {
            e
        }
    })
}

/// A SOCKS5 CONNECT to `host:port` (RFC 1928), with username/password authentication (RFC
/// 1929) when the proxy URL has a user.
fn socks5(sock: &mut TcpStream, proxy: &Proxy, host: &str, port: u16) -> io::Result<()> {
    // The address type and address: an IP as one; a name resolved here (socks5) or given
    // to the proxy (socks5h).
    let ip = match host.parse::<std::net::IpAddr>() {
        Ok(ip) => Some(ip),
        Err(_) if proxy.scheme == ProxyScheme::Socks5 => Some(
            (host, port)
                .to_socket_addrs()?
                .next()
                .ok_or_else(|| {
                    io::Error::new(io::ErrorKind::NotFound, format!("{host} has no address"))
                })?
                .ip(),
        ),
        Err(_) => None,
    };
    let mut request = vec![5, 1, 0];
    match ip {
        Some(std::net::IpAddr::V4(a)) => {
            request.push(1);
            request.extend_from_slice(&a.octets());
        }
        Some(std::net::IpAddr::V6(a)) => {
            request.push(4);
            request.extend_from_slice(&a.octets());
        }
        None => {
            let len = u8::try_from(host.len()).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "the server's name is longer than SOCKS5's 255 bytes",
                )
            })?;
            request.push(3);
            request.push(len);
            request.extend_from_slice(host.as_bytes());
        }
    }
    request.extend_from_slice(&port.to_be_bytes());

    // Greeting: no authentication, and username/password when there is a user.
    let greeting: &[u8] = if proxy.credentials.is_some() {
        &[5, 2, 2, 0]
    } else {
        &[5, 1, 0]
    };
    sock.write_all(greeting)?;
    let mut reply = [0u8; 2];
    read_answer(sock, &mut reply)?;
    if reply[0] != 5 {
        return Err(malformed(&format!("version {}, not 5", reply[0])));
    }
    match (reply[1], &proxy.credentials) {
        (0, _) => {}
        (2, Some((user, password))) => {
            // RFC 1929: each 1 to 255 bytes. Never quoted.
            let fits = |v: &str| (1..=255).contains(&v.len());
            if !fits(user) || !fits(password) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "SOCKS5 authentication needs a user and a password of 1 to 255 bytes each",
                ));
            }
            let mut auth = Vec::with_capacity(3 + user.len() + password.len());
            auth.push(1);
            auth.push(user.len() as u8);
            auth.extend_from_slice(user.as_bytes());
            auth.push(password.len() as u8);
            auth.extend_from_slice(password.as_bytes());
            sock.write_all(&auth)?;
            read_answer(sock, &mut reply)?;
            if reply[0] != 1 {
                return Err(malformed(&format!(
                    "authentication version {}, not 1",
                    reply[0]
                )));
            }
            if reply[1] != 0 {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    "the SOCKS5 proxy refused the user and password of the proxy URL",
                ));
            }
        }
        (0xff, _) => {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                if proxy.credentials.is_some() {
                    "the SOCKS5 proxy accepts none of the offered authentication methods"
                } else {
                    "the SOCKS5 proxy accepts none of the offered authentication methods (the proxy URL has no user)"
                },
            ))
        }
        (m, _) => {
            return Err(malformed(&format!(
                "authentication method {m}, not offered"
            )))
        }
    }

    sock.write_all(&request)?;
    let mut head = [0u8; 4];
    read_answer(sock, &mut head)?;
    if head[0] != 5 {
        return Err(malformed(&format!("version {}, not 5", head[0])));
    }
    if head[1] != 0 {
        let reason = match head[1] {
            1 => "general SOCKS server failure",
            2 => "connection not allowed by ruleset",
            3 => "network unreachable",
            4 => "host unreachable",
            5 => "connection refused",
            6 => "TTL expired",
            7 => "command not supported",
            8 => "address type not supported",
            _ => "an unknown reply code",
        };
        return Err(io::Error::new(
            io::ErrorKind::ConnectionRefused,
            format!("the SOCKS5 proxy answered {reason} ({})", head[1]),
        ));
    }
    // The bound address, not needed for CONNECT, but read past.
    let len = match head[3] {
        1 => 4,
        4 => 16,
        3 => {
            let mut n = [0u8; 1];
            read_answer(sock, &mut n)?;
            usize::from(n[0])
        }
        t => return Err(malformed(&format!("address type {t}"))),
    };
    let mut bound = [0u8; 255 + 2];
    read_answer(sock, &mut bound[..len + 2])?;
    Ok(())
}

/// An HTTP answer's head, and its body when it is not a `101`.
struct Answer {
    code: u16,
    /// Names in lower case.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// Sends `head`, reads the answer's head byte by byte (nothing after it is consumed: the
/// WebSocket frames that may follow a `101` stay in the stream), then a non-101 body.
fn exchange<S: Read + Write>(stream: &mut S, head: &[u8]) -> io::Result<Answer> {
    stream.write_all(head)?;
    stream.flush()?;
    let mut raw = Vec::with_capacity(256);
    let mut byte = [0u8; 1];
    while !raw.ends_with(b"\r\n\r\n") {
        if raw.len() > MAX_HEAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "answer head too large",
            ));
        }
        if stream.read(&mut byte)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the connection closed before an answer",
            ));
        }
        raw.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&raw);
    let mut lines = text.split("\r\n");
    let code = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse::<u16>().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not an HTTP answer"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut body = Vec::new();
    if code != 101 && code != 200 {
        let length = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse::<u64>().ok());
        let limit = length.unwrap_or(MAX_ERROR_BODY).min(MAX_ERROR_BODY);
        // Best effort: the body only explains the error.
        let _ = Read::take(&mut *stream, limit).read_to_end(&mut body);
    }
    Ok(Answer {
        code,
        headers,
        body,
    })
}

/// The rustls configuration the client's ureq agents are built from, for a connection of
/// our own: the same CA (or the webpki roots ureq uses when none is set), verification
/// switch and (with `identity`; not to a proxy) client certificate.
fn rustls_config(s: &UpgradeSettings<'_>, identity: bool) -> Result<Arc<rustls::ClientConfig>> {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Config(format!("TLS: {e}")))?;
    let builder = if s.config.insecure_skip_tls_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerification(provider)))
    } else {
        let mut roots = rustls::RootCertStore::empty();
        match &s.config.ca_pem {
            Some(ca) => {
                for c in super::pem_certificates(ca, "certificate authority")? {
                    roots
                        .add(CertificateDer::from(c.der().to_vec()))
                        .map_err(|e| Error::Config(format!("certificate authority: {e}")))?;
                }
            }
            None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        }
        builder.with_root_certificates(roots)
    };
    let mut config = match s.identity.as_ref().filter(|_| identity) {
        Some(id) => {
            let chain = super::pem_certificates(&id.cert_pem, "client certificate")?
                .iter()
                .map(|c| CertificateDer::from(c.der().to_vec()))
                .collect();
            use rustls::pki_types::pem::PemObject as _;
            // Never echo the PEM: it is a secret.
            let key = PrivateKeyDer::from_pem_slice(id.key_pem.expose().as_bytes())
                .map_err(|_| Error::Config("client key: no usable private key in PEM".into()))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| Error::Config(format!("client certificate: {e}")))?
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// `insecure-skip-tls-verify`: any certificate (signatures still checked), as ureq's
/// `disable_verification`.
#[derive(Debug)]
struct NoVerification(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> std::result::Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
