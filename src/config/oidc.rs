//! Kubeconfig `auth-provider: oidc`, as client-go's oidc plugin does it; the semantics are
//! documented on [`OidcProvider`] (this module is private), the write-back in `persist.rs`.
//! Why a lock held across the refresh: a refresh may rotate the refresh token, so two
//! concurrent refreshes with the same one would see the second fail at most issuers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use parking_lot::Mutex;
use serde::Deserialize;
use ureq::tls::{RootCerts, TlsConfig, TlsProvider};
use ureq::Agent;

use super::file_lock::PATIENCE;
use super::persist;
use crate::api::url_encoding::percent_encode;
use crate::client::{AuthProvider, Cancel, Secret};
use crate::error::{Error, Result};

/// The bound on each request to the issuer (discovery, token refresh).
pub const OIDC_TIMEOUT: Duration = Duration::from_secs(30);

/// An id-token expiring sooner than this counts as expired (client-go's `expiryDelta`).
const EXPIRY_MARGIN: Duration = Duration::from_secs(10);

/// Largest issuer answer read.
const MAX_ISSUER_BODY: u64 = 1 << 20;

/// Kubeconfig `auth-provider: oidc`, as client-go's oidc plugin does it: the `id-token` is
/// the bearer token, and once it has expired it is refreshed with the `refresh-token` at the
/// issuer, and the new tokens are written back to the kubeconfig file.
///
/// - **Expiry** is the id-token's JWT `exp` claim, less client-go's margin of ten seconds.
///   The signature is not checked (the API server does that; the client only needs to know
///   when to refresh). An id-token that is not a JWT is an error, as in client-go.
/// - **Refresh**: the issuer's token endpoint comes from
///   `<idp-issuer-url>/.well-known/openid-configuration` (`token_endpoint`); it is sent
///   `grant_type=refresh_token` with the refresh token, authenticated as `client-id` with
///   `client-secret` (HTTP basic first, then in the form — what Go's oauth2 package tries).
///   The issuer's TLS is verified against `idp-certificate-authority` (a file, relative to
///   the working directory as in client-go) or `idp-certificate-authority-data` (base64
///   PEM), else the public web roots. An `https` issuer whose discovery names a plain
///   `http` token endpoint is refused (the refresh token and secret would travel in clear).
///   Each issuer request is bounded by [`OIDC_TIMEOUT`].
/// - **Write-back**: the new `id-token` (and `refresh-token`, when the issuer sent a new
///   one) replace the old ones in the file the user's entry came from, so the next run
///   does not refresh again. The write holds kubectl's lock `<file>.lock` (waiting a few
///   seconds for another writer, removing a lock a dead program left), and under it the
///   file is read again and only those keys of that user's `auth-provider.config` change,
///   so everything else in it stays, other users' new tokens included; it is
///   replaced atomically (a temporary file in the same folder, created owner-only, given
///   the file's permissions, renamed over it; a symbolic link is followed). The file is
///   parsed and re-encoded as YAML values, so its comments and formatting are not kept —
///   kubectl rewrites it the same way. A kubeconfig given as a string has no file: the tokens live
///   in memory only. A failed write is logged (path and reason, never a token) and the new
///   tokens are used anyway — unlike client-go, which fails the request; a read-only
///   kubeconfig (a mounted ConfigMap or Secret) should not make every refresh fail. The
///   tokens in memory stay the newest: the file's older ones are not taken back (below).
/// - **Other programs' refreshes**: before refreshing, the user's entry in the file is read
///   again. When its tokens changed since this provider last read or wrote them, another
///   program (kubectl, another process or configuration of this one) refreshed or logged
///   in: its valid id-token is taken instead of refreshing, and its refresh token is used
///   (the issuer may have rotated the one we hold). Tokens the file has held all along are
///   never taken over newer ones in memory: with an issuer that rotates refresh tokens
///   (Dex, Okta, Keycloak), the file's old one was spent at our last refresh. When the
///   issuer refuses a refresh, the file is read once more in case another program
///   refreshed at the same moment.
/// - **One refresh at a time**: the tokens sit behind one lock held during the refresh, so
///   threads that find the token expired together cause one refresh; the others wait
///   (bounded: each issuer request by [`OIDC_TIMEOUT`], at most three per attempt and two
///   attempts, and the wait for the file's lock by ten seconds; a client with a [`Cancel`]
///   token stops waiting when it fires) and take the new token. Other processes, or other
///   configurations loaded from the same file, refresh on their own; the file's lock
///   orders only their writes (as kubectl's does), and the rules above let each take what
///   another wrote.
/// - **Never unauthenticated**: with no usable id-token and no refresh token, or when the
///   issuer fails, the request fails with [`Error::Config`] and is not sent.
/// - **Secrets**: `Debug` shows the issuer, the client id and whether each token is
///   present; never a token or the client secret. Errors quote the issuer's OAuth `error`
///   code, never its body.
pub struct OidcProvider {
    /// How errors name the user (`kubeconfig <file>: user "me"`).
    what: String,
    issuer_url: String,
    client_id: String,
    client_secret: Option<Secret>,
    /// The file and user entry refreshed tokens are written back to.
    persist_to: Option<(PathBuf, String)>,
    /// The settings of the agent each refresh makes (its own, so a [`Cancel`] can shut it
    /// down without touching other requests).
    agent_config: ureq::config::Config,
    tokens: Mutex<Tokens>,
    refreshes: AtomicU64,
}

struct Tokens {
    id_token: Option<Secret>,
    refresh_token: Option<Secret>,
    /// The user's tokens as the file held them when this provider last read or wrote it:
    /// the file's tokens are taken only when they differ from these.
    in_file: FileTokens,
}

/// A user's `id-token` and `refresh-token` in the kubeconfig file (empty ones are none).
#[derive(PartialEq, Eq)]
struct FileTokens {
    id_token: Option<String>,
    refresh_token: Option<String>,
}

impl FileTokens {
    fn of(config: &BTreeMap<String, String>) -> FileTokens {
        FileTokens {
            id_token: setting(config, "id-token").map(str::to_owned),
            refresh_token: setting(config, "refresh-token").map(str::to_owned),
        }
    }
}

impl std::fmt::Debug for OidcProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tokens = self.tokens.try_lock();
        let present = |pick: fn(&Tokens) -> bool| match &tokens {
            Some(t) => format!("{}", pick(t)),
            None => "<refreshing>".into(),
        };
        f.debug_struct("OidcProvider")
            .field("issuer_url", &self.issuer_url)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field("has_id_token", &present(|t| t.id_token.is_some()))
            .field("has_refresh_token", &present(|t| t.refresh_token.is_some()))
            .field("writes_back_to", &self.persist_to.as_ref().map(|(p, _)| p))
            .field("refreshes", &self.refreshes)
            .finish()
    }
}

#[derive(Deserialize)]
struct Discovery {
    #[serde(default)]
    token_endpoint: String,
}

#[derive(Deserialize)]
struct TokenAnswer {
    id_token: Option<Secret>,
    refresh_token: Option<Secret>,
}

#[derive(Deserialize)]
struct OAuthError {
    error: Option<String>,
}

/// A non-empty setting.
fn setting<'a>(config: &'a BTreeMap<String, String>, key: &str) -> Option<&'a str> {
    config.get(key).map(|v| v.trim()).filter(|v| !v.is_empty())
}

impl OidcProvider {
    /// A provider for an `oidc` block's `config` of user `user_name` read from `source`;
    /// `what` names the user in errors. `Err` says what is missing or malformed.
    pub(crate) fn from_config(
        config: &BTreeMap<String, String>,
        user_name: &str,
        source: Option<&Path>,
        what: &str,
    ) -> std::result::Result<OidcProvider, String> {
        let issuer_url = setting(config, "idp-issuer-url")
            .ok_or("auth-provider oidc: idp-issuer-url is not set")?
            .to_owned();
        if !(issuer_url.starts_with("https://") || issuer_url.starts_with("http://")) {
            return Err(format!(
                "auth-provider oidc: idp-issuer-url {:?} is not an http(s) URL",
                super::redact_url(&issuer_url)
            ));
        }
        let client_id = setting(config, "client-id")
            .ok_or("auth-provider oidc: client-id is not set")?
            .to_owned();
        let ca = match (
            setting(config, "idp-certificate-authority-data"),
            setting(config, "idp-certificate-authority"),
        ) {
            (Some(data), _) => Some(
                base64::engine::general_purpose::STANDARD
                    .decode(data)
                    .map_err(|e| {
                        format!(
                            "auth-provider oidc: idp-certificate-authority-data: bad base64: {e}"
                        )
                    })?,
            ),
            (None, Some(path)) => Some(std::fs::read(path).map_err(|e| {
                format!("auth-provider oidc: idp-certificate-authority: cannot read {path}: {e}")
            })?),
            (None, None) => None,
        };
        let mut tls = TlsConfig::builder().provider(TlsProvider::Rustls);
        if let Some(ca) = &ca {
            let certs = crate::client::pem_certificates(
                ca,
                "auth-provider oidc: idp certificate authority",
            )
            .map_err(|e| match e {
                Error::Config(m) => m,
                other => other.to_string(),
            })?;
            tls = tls.root_certs(RootCerts::new_with_certs(&certs));
        }
        let proxy = match super::proxy_from_env(&issuer_url) {
            Some((p, var)) => Some(ureq::Proxy::new(&p).map_err(|e| {
                format!(
                    "auth-provider oidc: proxy {var} {:?}: {e}",
                    super::redact_url(&p)
                )
            })?),
            None => None,
        };
        let agent_config = Agent::config_builder()
            .http_status_as_error(false)
            .tls_config(tls.build())
            .proxy(proxy)
            .timeout_global(Some(OIDC_TIMEOUT))
            .max_redirects(5)
            .user_agent(concat!("kube-informer/", env!("CARGO_PKG_VERSION")))
            .build();
        Ok(OidcProvider {
            what: what.to_owned(),
            issuer_url,
            client_id,
            client_secret: setting(config, "client-secret").map(Secret::from),
            persist_to: source.map(|p| (p.to_path_buf(), user_name.to_owned())),
            agent_config,
            tokens: Mutex::new(Tokens {
                id_token: setting(config, "id-token").map(Secret::from),
                refresh_token: setting(config, "refresh-token").map(Secret::from),
                in_file: FileTokens::of(config),
            }),
            refreshes: AtomicU64::new(0),
        })
    }

    /// How many times the tokens were refreshed at the issuer.
    pub fn refreshes(&self) -> u64 {
        self.refreshes.load(Ordering::SeqCst)
    }

    fn fail(&self, m: impl std::fmt::Display) -> Error {
        Error::Config(format!("{}: auth-provider oidc: {m}", self.what))
    }

    /// A valid id-token, refreshed first if it has expired. Waits for a refresh running on
    /// another thread (giving up when `cancel` fires).
    fn id_token(&self, cancel: Option<&Cancel>) -> Result<Secret> {
        let mut tokens = match cancel {
            None => self.tokens.lock(),
            Some(c) => loop {
                if let Some(g) = self.tokens.try_lock_for(Duration::from_millis(20)) {
                    break g;
                }
                if c.is_cancelled() {
                    return Err(self.fail("cancelled while another thread refreshed the token"));
                }
            },
        };
        if let Some(t) = &tokens.id_token {
            let expires =
                jwt_expiry(t.expose()).map_err(|m| self.fail(format!("id-token: {m}")))?;
            if SystemTime::now() + EXPIRY_MARGIN < expires {
                return Ok(t.clone());
            }
        }
        // Another program (kubectl, another process of this one) may have refreshed since
        // the file was last read or written, and the issuer may have rotated the refresh
        // token then: take the file's tokens when they changed.
        if let Some(t) = self.adopt_from_file(&mut tokens) {
            return Ok(t);
        }
        let mut retried = false;
        let (id_token, new_refresh, refresh_token) = loop {
            let Some(refresh_token) = tokens.refresh_token.clone() else {
                return Err(self.fail(match tokens.id_token {
                    Some(_) => "the id-token has expired and there is no refresh-token to renew it (log in again)",
                    None => "no id-token, and no refresh-token to get one (log in again)",
                }));
            };
            if cancel.is_some_and(Cancel::is_cancelled) {
                return Err(self.fail("cancelled"));
            }
            match self.refresh(&refresh_token, cancel) {
                Ok((id, r)) => break (id, r, refresh_token),
                // Another program may have refreshed with the same refresh token a moment
                // before us, and the issuer rotated it: what it wrote is the way on.
                Err(e) if !retried && !e.is_cancelled() => {
                    retried = true;
                    if let Some(t) = self.adopt_from_file(&mut tokens) {
                        return Ok(t);
                    }
                    let changed = tokens
                        .refresh_token
                        .as_ref()
                        .is_some_and(|r| r.expose() != refresh_token.expose());
                    if !changed {
                        return Err(e);
                    }
                }
                Err(e) => return Err(e),
            }
        };
        self.refreshes.fetch_add(1, Ordering::SeqCst);
        let new_refresh = new_refresh.filter(|r| r.expose() != refresh_token.expose());
        if let Some((path, user)) = &self.persist_to {
            let mut changes = vec![("id-token", id_token.expose())];
            if let Some(r) = &new_refresh {
                changes.push(("refresh-token", r.expose()));
            }
            match persist::write_auth_provider_config(path, user, &changes, PATIENCE, cancel) {
                Ok(written) => tokens.in_file = FileTokens::of(&written),
                // The file keeps its old tokens, which stay `in_file`: they are not taken
                // back at the next refresh.
                Err(e) => log::warn!(
                    "{}: auth-provider oidc: the refreshed tokens could not be written back ({e}); they are used in memory only",
                    self.what
                ),
            }
        }
        tokens.id_token = Some(id_token.clone());
        if let Some(r) = new_refresh {
            tokens.refresh_token = Some(r);
        }
        Ok(id_token)
    }

    /// Takes the tokens of the user's entry in the file when they changed since this
    /// provider last read or wrote them: the file's refresh token, and its id-token when it
    /// is valid (returned). A file that cannot be read, no longer has the user, or holds
    /// what it held before changes nothing.
    fn adopt_from_file(&self, tokens: &mut Tokens) -> Option<Secret> {
        let (path, user) = self.persist_to.as_ref()?;
        let config = persist::read_auth_provider_config(path, user)?;
        let now = FileTokens::of(&config);
        if now == tokens.in_file {
            // Unchanged: ours are as new or newer (a write-back may have failed).
            return None;
        }
        let differs = |ours: &Option<Secret>, theirs: &str| {
            ours.as_ref().is_none_or(|o| o.expose() != theirs)
        };
        if let Some(r) = &now.refresh_token {
            if differs(&tokens.refresh_token, r) {
                tokens.refresh_token = Some(Secret::new(r.as_str()));
            }
        }
        tokens.in_file = now;
        let id = tokens.in_file.id_token.as_deref()?;
        if !differs(&tokens.id_token, id) {
            return None;
        }
        let valid = jwt_expiry(id).is_ok_and(|e| SystemTime::now() + EXPIRY_MARGIN < e);
        if !valid {
            return None;
        }
        tokens.id_token = Some(Secret::new(id));
        tokens.id_token.clone()
    }

    /// Asks the issuer for new tokens: the new id-token, and a new refresh token if it
    /// sent one.
    /// With `cancel`, its requests are cut short when it fires.
    fn refresh(
        &self,
        refresh_token: &Secret,
        cancel: Option<&Cancel>,
    ) -> Result<(Secret, Option<Secret>)> {
        let agent = Agent::new_with_config(self.agent_config.clone());
        let _attached = match cancel {
            Some(c) => Some(c.attach(&agent).ok_or_else(|| self.fail("cancelled"))?),
            None => None,
        };
        let endpoint = self.token_endpoint(&agent)?;
        let mut form = String::from("grant_type=refresh_token&refresh_token=");
        percent_encode(refresh_token.expose(), &mut form);
        let in_params = |form: &str| {
            let mut f = form.to_owned();
            f.push_str("&client_id=");
            percent_encode(&self.client_id, &mut f);
            if let Some(s) = &self.client_secret {
                f.push_str("&client_secret=");
                percent_encode(s.expose(), &mut f);
            }
            f
        };
        // Go's oauth2 (client-go's refresher) tries the client's credentials as HTTP basic
        // auth first and, when the issuer refuses that, in the form.
        let (code, body) = match &self.client_secret {
            Some(secret) => {
                let (mut id, mut pw) = (String::new(), String::new());
                percent_encode(&self.client_id, &mut id);
                percent_encode(secret.expose(), &mut pw);
                let basic = base64::engine::general_purpose::STANDARD.encode(format!("{id}:{pw}"));
                let first = self.post(
                    &agent,
                    &endpoint,
                    &form,
                    Some(&Secret::new(format!("Basic {basic}"))),
                )?;
                if matches!(first.0, 400 | 401) {
                    self.post(&agent, &endpoint, &in_params(&form), None)?
                } else {
                    first
                }
            }
            None => self.post(&agent, &endpoint, &in_params(&form), None)?,
        };
        if code != 200 {
            let oauth = serde_json::from_slice::<OAuthError>(&body)
                .ok()
                .and_then(|e| e.error)
                .filter(|e| e.len() <= 64 && e.bytes().all(|b| b.is_ascii_graphic()))
                .map(|e| format!(" ({e})"))
                .unwrap_or_default();
            return Err(self.fail(format!(
                "refreshing the token at {}: HTTP {code}{oauth}",
                super::redact_url(&endpoint)
            )));
        }
        let answer: TokenAnswer = serde_json::from_slice(&body).map_err(|e| {
            self.fail(format!(
                "the token endpoint's answer is not a token response ({})",
                crate::error::json_error_summary(&e)
            ))
        })?;
        let id_token = answer.id_token.filter(|t| !t.expose().is_empty()).ok_or_else(|| {
            self.fail("the token response has no id_token (was the scope \"openid\" requested at login? does the issuer return id tokens on refresh?)")
        })?;
        jwt_expiry(id_token.expose())
            .map_err(|m| self.fail(format!("the issuer's new id_token: {m}")))?;
        Ok((
            id_token,
            answer.refresh_token.filter(|t| !t.expose().is_empty()),
        ))
    }

    /// The issuer's token endpoint, from its discovery document.
    fn token_endpoint(&self, agent: &Agent) -> Result<String> {
        let url = format!(
            "{}/.well-known/openid-configuration",
            self.issuer_url.trim_end_matches('/')
        );
        let shown = super::redact_url(&url);
        let res = agent
            .get(&url)
            .header("accept", "application/json")
            .call()
            .map_err(|e| self.fail(format!("discovery at {shown}: {e}")))?;
        let code = res.status().as_u16();
        let body = res
            .into_body()
            .into_with_config()
            .limit(MAX_ISSUER_BODY)
            .read_to_vec()
            .map_err(|e| self.fail(format!("discovery at {shown}: {e}")))?;
        if code != 200 {
            return Err(self.fail(format!("discovery at {shown}: HTTP {code}")));
        }
        let d: Discovery = serde_json::from_slice(&body).map_err(|e| {
            self.fail(format!(
                "discovery at {shown}: not a discovery document ({})",
                crate::error::json_error_summary(&e)
            ))
        })?;
        let endpoint = d.token_endpoint;
        if endpoint.is_empty() {
            return Err(self.fail(format!("discovery at {shown} names no token_endpoint")));
        }
        let https = |u: &str| {
            u.get(..8)
                .is_some_and(|s| s.eq_ignore_ascii_case("https://"))
        };
        if !(https(&endpoint) || (!https(&self.issuer_url) && endpoint.starts_with("http://"))) {
            return Err(self.fail(format!(
                "discovery at {shown} names token_endpoint {:?}, which is not https",
                super::redact_url(&endpoint)
            )));
        }
        Ok(endpoint)
    }

    /// One form POST to the token endpoint: the status and the body.
    fn post(
        &self,
        agent: &Agent,
        endpoint: &str,
        form: &str,
        auth: Option<&Secret>,
    ) -> Result<(u16, Vec<u8>)> {
        let shown = super::redact_url(endpoint);
        let mut req = agent
            .post(endpoint)
            .header("accept", "application/json")
            .header("content-type", "application/x-www-form-urlencoded");
        if let Some(a) = auth {
            req = req.header("authorization", a.expose());
        }
        let res = req
            .send(form.as_bytes())
            .map_err(|e| self.fail(format!("refreshing the token at {shown}: {e}")))?;
        let code = res.status().as_u16();
        let body = res
            .into_body()
            .into_with_config()
            .limit(MAX_ISSUER_BODY)
            .read_to_vec()
            .map_err(|e| self.fail(format!("refreshing the token at {shown}: {e}")))?;
        Ok((code, body))
    }
}

/// When a JWT expires: its `exp` claim (seconds since the epoch; a JWT without one has
/// expired, as in client-go). The signature is not checked.
fn jwt_expiry(token: &str) -> std::result::Result<SystemTime, String> {
    let mut parts = token.split('.');
    let (Some(_), Some(payload), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("not a JWT (three dot-separated parts)".into());
    };
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .map_err(|_| "not a JWT (its claims are not base64url)".to_owned())?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|_| "not a JWT (its claims are not JSON)".to_owned())?;
    let exp = match claims.get("exp") {
        None | Some(serde_json::Value::Null) => 0,
        Some(v) => v
            .as_i64()
            .or_else(|| v.as_f64().filter(|f| f.is_finite()).map(|f| f as i64))
            .ok_or_else(|| "its exp claim is not a number".to_owned())?,
    };
    let exp = u64::try_from(exp).unwrap_or(0);
    Ok(UNIX_EPOCH
        .checked_add(Duration::from_secs(exp))
        .unwrap_or(UNIX_EPOCH))
}

impl AuthProvider for OidcProvider {
    fn authorization(&self) -> Result<Option<Secret>> {
        let t = self.id_token(None)?;
        Ok(Some(Secret::new(format!("Bearer {}", t.expose()))))
    }

    fn prepare(&self, cancel: &Cancel) -> Result<()> {
        self.id_token(Some(cancel)).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: &str) -> String {
        let e = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        format!("{}.{}.sig", e(r#"{"alg":"none"}"#), e(claims))
    }

    #[test]
    fn expiry_is_the_exp_claim() {
        let at = |s| UNIX_EPOCH + Duration::from_secs(s);
        assert_eq!(
            jwt_expiry(&jwt(r#"{"exp":1700000000}"#)),
            Ok(at(1700000000))
        );
        assert_eq!(
            jwt_expiry(&jwt(r#"{"exp":1700000000.7}"#)),
            Ok(at(1700000000))
        );
        assert_eq!(jwt_expiry(&jwt(r#"{"sub":"x"}"#)), Ok(UNIX_EPOCH));
        assert_eq!(jwt_expiry(&jwt(r#"{"exp":-5}"#)), Ok(UNIX_EPOCH));
        assert!(jwt_expiry(&jwt(r#"{"exp":"soon"}"#)).is_err());
        assert!(jwt_expiry("abc").is_err());
        assert!(jwt_expiry("a.b.c.d").is_err());
        assert!(jwt_expiry("a.!!!.c").is_err());
        assert!(jwt_expiry(&jwt("not json")).is_err());
    }
}
