//! `ClientConfig`: everything needed to reach one API server, as plain data.
//!
//! Kubeconfig and in-cluster loading (the `config` module) fill this struct; tests and
//! `testing::ApiServer` build it directly. Secrets inside are [`Secret`]s, so the derived
//! `Debug` is safe to log.

use std::collections::BTreeMap;
use std::time::Duration;

use super::auth::{Auth, Secret};
use super::warning::WarningHandler;

/// Connection settings for a [`Client`](super::Client).
///
/// `Debug` is safe to log: credentials are [`Secret`]s, and `user:password@` in `server` and
/// `proxy` is shown as `<redacted>@`.
#[derive(Clone)]
pub struct ClientConfig {
    /// Base URL of the API server, e.g. `https://10.0.0.1:6443` (a path prefix is kept).
    pub server: String,
    /// PEM bundle of CAs to trust; `None` trusts the public web PKI roots.
    pub ca_pem: Option<Vec<u8>>,
    /// TLS client certificate and key for mutual TLS.
    pub identity: Option<Identity>,
    /// Authentication header source.
    pub auth: Auth,
    /// Skip TLS server verification (only for throwaway clusters).
    pub insecure_skip_tls_verify: bool,
    /// Namespace for namespaced requests that do not name one.
    pub default_namespace: String,
    /// Client-side rate limit: requests per second (0 or less turns it off). Default 50,
    /// kubectl's.
    ///
    /// The limit is a safety net against a program that loops on requests by mistake;
    /// kube-apiserver protects itself with API Priority and Fairness, which is why kubectl
    /// raised its defaults to 50 and 300 and controller-runtime turns the client-side limit
    /// off altogether. With client-go's historical 5 and 10 and every page taking a token,
    /// the 200 pages of a 100,000-pod list (pages of 500) waited about 38 s. Here the pages
    /// of one list are one read: the first page takes a token, the pages after it (those
    /// carrying a `continue` token) take none, so no list of any size is paced page by page.
    /// Shared by every request of a client, so a factory's informers starting together share
    /// the burst.
    pub qps: f32,
    /// Client-side rate limit: how many requests may go at once before `qps` paces them.
    /// Default 300, kubectl's (see `qps`).
    pub burst: u32,
    /// Limit for one ordinary request (a get, a write), from connect to the end of the body.
    /// Lists and watches are not subject to it: their size or length has no bound the
    /// client could know. Default 30 s.
    pub request_timeout: Duration,
    /// A list request whose connection delivers no byte for this long is dead (per read, so a
    /// large list that keeps arriving is never cut; kube-apiserver itself gives up on a list
    /// after 60 s with a 504). Default 90 s.
    pub list_read_timeout: Duration,
    /// A watch that sends nothing for its `timeoutSeconds` plus this margin is dead: its
    /// read fails and the caller reconnects. Default 30 s.
    pub watch_read_margin: Duration,
    /// Limit for connecting. Default 10 s.
    pub connect_timeout: Duration,
    /// How many times a 429 or 5xx answer carrying `Retry-After` is retried. Default 5.
    pub max_retries: u32,
    /// The longest `Retry-After` wait honoured; longer ones are cut to this. Default 10 s.
    pub max_retry_after: Duration,
    /// `User-Agent` header.
    pub user_agent: String,
    /// Proxy URL (`http://`, `https://`, `socks5://` or `socks5h://host:port`;
    /// `user:password@` allowed; other schemes are refused) for every request. `None`:
    /// the environment's `HTTPS_PROXY` / `HTTP_PROXY` / `NO_PROXY`, by client-go's rules
    /// (see [`config`](crate::config#proxies)).
    pub proxy: Option<String>,
    /// Verify the server certificate against this name instead of the server URL's host
    /// (kubeconfig `tls-server-name`).
    pub tls_server_name: Option<String>,
    /// Act as this user (`Impersonate-User` header).
    pub impersonate_user: Option<String>,
    /// Act with these groups (`Impersonate-Group` headers).
    pub impersonate_groups: Vec<String>,
    /// Act as the user with this UID (`Impersonate-Uid`; kubeconfig `as-uid`).
    pub impersonate_uid: Option<String>,
    /// Act with these extra user fields (`Impersonate-Extra-<key>` headers, one per value,
    /// the key percent-escaped as client-go does; kubeconfig `as-user-extra`).
    pub impersonate_extra: BTreeMap<String, Vec<String>>,
    /// What to do with the server's `Warning:` headers (client-go's `WarningHandler`).
    /// Default [`WarningHandler::LogOnce`]: each distinct text logged once per client at
    /// `warn` level. See [`Warning`](super::Warning).
    pub warning_handler: WarningHandler,
    /// (Feature `protobuf`.) Send the bodies of creates and updates (`create`, `replace`,
    /// `replace_status`) of built-in types in protobuf, which kube-apiserver decodes faster
    /// than JSON. Default `true`; `false` keeps every body JSON. Without the feature, bodies
    /// are always JSON and this does nothing.
    ///
    /// Even when `true`, a write goes as JSON when protobuf could not carry it exactly (a
    /// field the library's protobuf tables do not know, from a newer k8s-openapi or your own
    /// type: see `protobuf::encode_exact`), for custom resources,
    /// metadata-only types and patches (kube-apiserver cannot take those in protobuf), and
    /// with [`FieldValidation::Strict`](super::FieldValidation) (protobuf has no unknown
    /// fields to report). A server that answers a protobuf body with 415 (an aggregated API,
    /// an old server) gets the write again in JSON, and JSON for that type from then on.
    pub protobuf_bodies: bool,
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Destructured, so a new field cannot be left out of Debug by accident.
        let ClientConfig {
            server,
            ca_pem,
            identity,
            auth,
            insecure_skip_tls_verify,
            default_namespace,
            qps,
            burst,
            request_timeout,
            list_read_timeout,
            watch_read_margin,
            connect_timeout,
            max_retries,
            max_retry_after,
            user_agent,
            proxy,
            tls_server_name,
            impersonate_user,
            impersonate_groups,
            impersonate_uid,
            impersonate_extra,
            warning_handler,
            protobuf_bodies,
        } = self;
        let redact = crate::config::redact_url;
        f.debug_struct("ClientConfig")
            .field("server", &redact(server))
            .field(
                "ca_pem",
                &ca_pem.as_ref().map(|p| format!("<{} bytes>", p.len())),
            )
            .field("identity", identity)
            .field("auth", auth)
            .field("insecure_skip_tls_verify", insecure_skip_tls_verify)
            .field("default_namespace", default_namespace)
            .field("qps", qps)
            .field("burst", burst)
            .field("request_timeout", request_timeout)
            .field("list_read_timeout", list_read_timeout)
            .field("watch_read_margin", watch_read_margin)
            .field("connect_timeout", connect_timeout)
            .field("max_retries", max_retries)
            .field("max_retry_after", max_retry_after)
            .field("user_agent", user_agent)
            .field("proxy", &proxy.as_deref().map(redact))
            .field("tls_server_name", tls_server_name)
            .field("impersonate_user", impersonate_user)
            .field("impersonate_groups", impersonate_groups)
            .field("impersonate_uid", impersonate_uid)
            .field("impersonate_extra", impersonate_extra)
            .field("warning_handler", warning_handler)
            .field("protobuf_bodies", protobuf_bodies)
            .finish()
    }
}

/// A TLS client certificate chain and its private key, both PEM.
#[derive(Clone)]
pub struct Identity {
    /// PEM certificate chain, leaf first.
    pub cert_pem: Vec<u8>,
    /// PEM private key (PKCS#8, PKCS#1 RSA or SEC1 EC).
    pub key_pem: Secret,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity")
            .field("cert_pem", &format_args!("{} bytes", self.cert_pem.len()))
            .field("key_pem", &self.key_pem)
            .finish()
    }
}

impl ClientConfig {
    /// Settings for `server` with the defaults above.
    pub fn new(server: impl Into<String>) -> Self {
        ClientConfig {
            server: server.into(),
            ca_pem: None,
            identity: None,
            auth: Auth::None,
            insecure_skip_tls_verify: false,
            default_namespace: "default".into(),
            qps: 50.0,
            burst: 300,
            request_timeout: Duration::from_secs(30),
            list_read_timeout: Duration::from_secs(90),
            watch_read_margin: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            max_retries: 5,
            max_retry_after: Duration::from_secs(10),
            user_agent: concat!("kube-informer/", env!("CARGO_PKG_VERSION")).into(),
            proxy: None,
            tls_server_name: None,
            impersonate_user: None,
            impersonate_groups: Vec::new(),
            impersonate_uid: None,
            impersonate_extra: BTreeMap::new(),
            warning_handler: WarningHandler::default(),
            protobuf_bodies: true,
        }
    }
}
