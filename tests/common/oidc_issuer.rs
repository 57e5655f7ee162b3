//! A fake OpenID Connect issuer on loopback HTTPS (the test server certificate), for the
//! `auth-provider: oidc` tests: it serves the discovery document and a token endpoint that
//! accepts one refresh token and answers a new id-token (or, [`Issuer::start_rotating`],
//! one that rotates refresh tokens as Dex, Okta and Keycloak do), and counts what it was
//! asked.
//! Included with `#[path]` by the tests that need it.
#![allow(dead_code)]

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// An unsigned JWT (`alg: none`) whose `exp` is `secs_from_now` seconds from now (negative:
/// in the past), with `tag` in its `sub` so tokens are told apart.
pub fn jwt(tag: &str, secs_from_now: i64) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let e = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
    format!(
        "{}.{}.c2lnbmF0dXJl",
        e(r#"{"alg":"none","typ":"JWT"}"#),
        e(&format!(
            r#"{{"iss":"test","sub":"{tag}","exp":{}}}"#,
            now + secs_from_now
        ))
    )
}

/// What the token endpoint does.
#[derive(Clone)]
pub struct Behaviour {
    /// The refresh token it accepts.
    pub refresh_token: String,
    /// The client id and secret it expects (HTTP basic or form).
    pub client_id: String,
    pub client_secret: String,
    /// The id-token it answers with.
    pub new_id_token: String,
    /// The refresh token it answers with (`None`: none in the answer).
    pub new_refresh_token: Option<String>,
    /// How long it takes to answer a token request.
    pub delay: Duration,
}

/// What [`Issuer::start_rotating`] does.
pub struct Rotating {
    /// The client id and secret it expects (HTTP basic or form).
    pub client_id: String,
    pub client_secret: String,
    /// The refresh tokens good for one refresh at first.
    pub refresh_tokens: Vec<String>,
    /// The id-token every refresh answers with.
    pub new_id_token: String,
    /// Token answers wait until this many token requests have arrived (at most 20 s).
    pub gather: usize,
    /// Token answers wait until this gate opens (at most 20 s).
    pub gate: Option<Arc<Gate>>,
}

/// Holds the issuer's token answers until the test opens it.
#[derive(Default)]
pub struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    pub fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.cv.notify_all();
    }

    fn pass(&self) {
        let open = self.open.lock().unwrap();
        drop(
            self.cv
                .wait_timeout_while(open, Duration::from_secs(20), |open| !*open)
                .unwrap(),
        );
    }
}

/// Answers a token request (form body, `Authorization` header) with a status and a body.
type TokenAnswer = dyn Fn(&str, Option<&str>) -> (u16, String) + Send + Sync;

/// A token request: its form body and its `Authorization` header.
pub type TokenRequest = (String, Option<String>);

pub struct Issuer {
    pub addr: SocketAddr,
    pub discovery_hits: Arc<AtomicUsize>,
    pub token_hits: Arc<AtomicUsize>,
    /// The form bodies and `Authorization` headers of token requests.
    pub token_requests: Arc<Mutex<Vec<TokenRequest>>>,
}

impl Issuer {
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// Starts the issuer; it runs until the test process ends.
    pub fn start(behaviour: Behaviour) -> Issuer {
        let delay = behaviour.delay;
        Self::start_with(Arc::new(move |form: &str, auth: Option<&str>| {
            std::thread::sleep(delay);
            token_answer(&behaviour, form, auth)
        }))
    }

    /// Starts an issuer that rotates refresh tokens: each of `rotating.refresh_tokens` is
    /// good for one refresh, whose answer carries `new_id_token` and the next refresh token
    /// (the old one with `+` appended), good for one refresh in turn; a spent or unknown
    /// one is refused with `invalid_grant`.
    pub fn start_rotating(rotating: Rotating) -> Issuer {
        let valid: Mutex<HashSet<String>> =
            Mutex::new(rotating.refresh_tokens.iter().cloned().collect());
        let gathered = Arc::new((Mutex::new(0usize), Condvar::new()));
        Self::start_with(Arc::new(move |form: &str, auth: Option<&str>| {
            // Hold answers until `gather` requests arrived (bounded), so their
            // write-backs come together.
            let (arrived, cv) = &*gathered;
            let mut n = arrived.lock().unwrap();
            *n += 1;
            cv.notify_all();
            drop(
                cv.wait_timeout_while(n, Duration::from_secs(20), |n| *n < rotating.gather)
                    .unwrap(),
            );
            if let Some(gate) = &rotating.gate {
                gate.pass();
            }
            let fixed = Behaviour {
                refresh_token: String::new(),
                client_id: rotating.client_id.clone(),
                client_secret: rotating.client_secret.clone(),
                new_id_token: rotating.new_id_token.clone(),
                new_refresh_token: None,
                delay: Duration::ZERO,
            };
            let Some(old) = form_value(form, "refresh_token") else {
                return (400, r#"{"error":"invalid_request"}"#.into());
            };
            if !valid.lock().unwrap().remove(&old) {
                // Checks the client first, as the fixed issuer does.
                return token_answer(&fixed, form, auth);
            }
            let next = format!("{old}+");
            let answer = token_answer(
                &Behaviour {
                    refresh_token: old,
                    new_refresh_token: Some(next.clone()),
                    ..fixed
                },
                form,
                auth,
            );
            if answer.0 == 200 {
                valid.lock().unwrap().insert(next);
            }
            answer
        }))
    }

    fn start_with(answer: Arc<TokenAnswer>) -> Issuer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let issuer = Issuer {
            addr,
            discovery_hits: Arc::default(),
            token_hits: Arc::default(),
            token_requests: Arc::default(),
        };
        let config = server_config();
        let (d, t, r) = (
            issuer.discovery_hits.clone(),
            issuer.token_hits.clone(),
            issuer.token_requests.clone(),
        );
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let (config, b, d, t, r) = (
                    config.clone(),
                    answer.clone(),
                    d.clone(),
                    t.clone(),
                    r.clone(),
                );
                std::thread::spawn(move || {
                    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
                    let Ok(tls) = rustls::ServerConnection::new(config) else {
                        return;
                    };
                    let mut stream = rustls::StreamOwned::new(tls, conn);
                    let _ = serve(&mut stream, addr, &*b, &d, &t, &r);
                });
            }
        });
        issuer
    }
}

fn server_config() -> Arc<rustls::ServerConfig> {
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(kube_informer::testing::SERVER_CERT_PEM.as_bytes())
            .collect::<Result<_, _>>()
            .unwrap();
    let key =
        PrivateKeyDer::from_pem_slice(kube_informer::testing::SERVER_KEY_PEM.as_bytes()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Arc::new(
        rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap(),
    )
}

fn serve(
    stream: &mut (impl Read + Write),
    addr: SocketAddr,
    answer: &TokenAnswer,
    discovery_hits: &AtomicUsize,
    token_hits: &AtomicUsize,
    token_requests: &Mutex<Vec<TokenRequest>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let target = line.split_whitespace().nth(1).unwrap_or("").to_owned();
    let (mut len, mut auth) = (0usize, None);
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            match k.trim().to_ascii_lowercase().as_str() {
                "content-length" => len = v.trim().parse().unwrap_or(0),
                "authorization" => auth = Some(v.trim().to_owned()),
                _ => {}
            }
        }
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body)?;
    let body = String::from_utf8_lossy(&body).into_owned();
    let (code, answer) = match target.as_str() {
        "/.well-known/openid-configuration" => {
            discovery_hits.fetch_add(1, Ordering::SeqCst);
            (
                200,
                format!(r#"{{"issuer":"https://{addr}","token_endpoint":"https://{addr}/token"}}"#),
            )
        }
        "/token" => {
            token_hits.fetch_add(1, Ordering::SeqCst);
            token_requests
                .lock()
                .unwrap()
                .push((body.clone(), auth.clone()));
            answer(&body, auth.as_deref())
        }
        _ => (404, r#"{"error":"not_found"}"#.to_owned()),
    };
    let stream = reader.get_mut();
    write!(
        stream,
        "HTTP/1.1 {code} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
        answer.len()
    )?;
    stream.flush()
}

fn form_value(form: &str, key: &str) -> Option<String> {
    form.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == key).then(|| kube_informer::client::percent_decode(v))
    })
}

fn token_answer(b: &Behaviour, form: &str, auth: Option<&str>) -> (u16, String) {
    let basic = base64::engine::general_purpose::STANDARD
        .encode(format!("{}:{}", b.client_id, b.client_secret));
    let client_ok = auth == Some(format!("Basic {basic}").as_str())
        || (form_value(form, "client_id").as_deref() == Some(b.client_id.as_str())
            && form_value(form, "client_secret").as_deref() == Some(b.client_secret.as_str()));
    if !client_ok {
        return (401, r#"{"error":"invalid_client"}"#.into());
    }
    if form_value(form, "grant_type").as_deref() != Some("refresh_token")
        || form_value(form, "refresh_token").as_deref() != Some(b.refresh_token.as_str())
    {
        return (400, r#"{"error":"invalid_grant"}"#.into());
    }
    let refresh = b
        .new_refresh_token
        .as_ref()
        .map(|r| format!(r#","refresh_token":"{r}""#))
        .unwrap_or_default();
    (
        200,
        format!(
            r#"{{"access_token":"unused","token_type":"Bearer","expires_in":3600,"id_token":"{}"{refresh}}}"#,
            b.new_id_token
        ),
    )
}
