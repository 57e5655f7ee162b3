//! The WebSocket upgrade of exec, attach and port-forward, on the client's own connection
//! settings.
//!
//! ureq 3 gives no access to a connection after a `101 Switching Protocols`, so the upgrade
//! opens its connection here, from the same [`ClientConfig`](super::ClientConfig) the client
//! was built from, with nothing of its own to configure: the server URL (with a path
//! prefix), `tls-server-name` (SNI and verification name, the TCP connection to the URL's
//! host), the CA, `insecure-skip-tls-verify`, the client certificate (an exec plugin's
//! current one included), the proxy (`proxy-url`, else `HTTPS_PROXY`/`NO_PROXY` by the same
//! rules), the connect and request timeouts, the user agent. Credentials and `Impersonate-*`
//! headers come from the same function as every other request's
//! ([`Client::credential_headers`]), a 401 refreshes a refreshable credential once, and the
//! upgrade takes a token from the client's rate limiter like any request.
//!
//! What is answered before the upgrade is an ordinary error: a JSON `Status` (pod or
//! container not found, `400` for a pod with no node), or an empty `403` (no offered
//! subprotocol is known), as [`Error::Api`]. A `101` must name one of the offered
//! subprotocols and carry the right `Sec-WebSocket-Accept`; anything else is refused.
//!
//! Limits: `http://` proxies only (CONNECT); `https://` and SOCKS proxies, which ordinary
//! requests support through ureq, are refused here with a clear error.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use ureq::http::Method;

use super::client::{describe, status_from_body, UpgradeSettings};
use super::duplex::Duplex;
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
            Some(rustls_config(&settings)?)
        } else {
            None
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
            let sock = connect(&settings, url.bare_host(), port).map_err(transport)?;
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
                    let mut stream = rustls::StreamOwned::new(conn, sock);
                    let answer = exchange(&mut stream, head.as_bytes()).map_err(transport)?;
                    let rustls::StreamOwned { conn, sock } = stream;
                    (answer, (sock, Some(rustls::Connection::Client(conn))))
                }
                None => {
                    let mut sock = sock;
                    let answer = exchange(&mut sock, head.as_bytes()).map_err(transport)?;
                    (answer, (sock, None))
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
            let (sock, conn) = duplex_parts;
            let _ = sock.set_read_timeout(None);
            let (duplex, read, write) = Duplex::split(sock, conn, Vec::new()).map_err(transport)?;
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

/// TCP to the server, or through an `http://` proxy's CONNECT; bounded by the connect
/// timeout, then by the request timeout per read and write until the upgrade.
fn connect(s: &UpgradeSettings<'_>, host: &str, port: u16) -> io::Result<TcpStream> {
    let cfg = s.config;
    let proxy = match cfg.proxy.as_deref().filter(|p| !p.is_empty()) {
        Some(p) => Some(p.to_owned()),
        None => crate::config::proxy_from_env(&cfg.server).map(|(p, _)| p),
    };
    let tcp = |host: &str, port: u16| -> io::Result<TcpStream> {
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
    };
    let Some(proxy) = proxy else {
        return tcp(host, port);
    };
    let (scheme, rest) = proxy.split_once("://").unwrap_or(("http", proxy.as_str()));
    if !scheme.eq_ignore_ascii_case("http") {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("a {scheme}:// proxy is not supported for exec, attach and port-forward (http:// proxies are)"),
        ));
    }
    let url = ServerUrl::parse(&proxy)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "bad proxy URL"))?;
    let proxy_port: u16 = url.port.and_then(|p| p.parse().ok()).unwrap_or(80);
    let mut sock = tcp(url.bare_host(), proxy_port)?;
    let target = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let mut connect = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n");
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if let Some((userinfo, _)) = authority.rsplit_once('@') {
        let user = crate::client::percent_decode(userinfo);
        connect.push_str(&format!(
            "Proxy-Authorization: Basic {}\r\n",
            base64::engine::general_purpose::STANDARD.encode(user)
        ));
    }
    connect.push_str("\r\n");
    let answer = exchange(&mut sock, connect.as_bytes())?;
    if answer.code != 200 {
        return Err(io::Error::other(format!(
            "the proxy answered CONNECT with HTTP {}",
            answer.code
        )));
    }
    Ok(sock)
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
/// switch and client certificate.
fn rustls_config(s: &UpgradeSettings<'_>) -> Result<Arc<rustls::ClientConfig>> {
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
    let mut config = match &s.identity {
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
