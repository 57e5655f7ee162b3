//! `Client`: sends requests to one API server and turns every failure into an [`Error`].
//!
//! One ureq agent (with its connection pool) serves ordinary requests, each bounded by the
//! request timeout. Lists are not: a large list may take minutes, so a list is bounded per
//! read instead ([`ClientConfig::list_read_timeout`]): a connection that stops delivering is
//! dead, one that keeps delivering is never cut. Watches get an agent of their own with no
//! overall timeout, so a long watch is never cut by the request timeout and can be shut down
//! from another thread (see [`WatchCanceller`](super::WatchCanceller)) without touching other
//! requests.
//!
//! The proxy is the configuration's (kubeconfig `proxy-url`), else the environment's
//! `HTTPS_PROXY` / `HTTP_PROXY` / `NO_PROXY` by client-go's rules (see
//! [`config`](crate::config#proxies)). `Debug` shows the server and the kind of credential,
//! never a credential or a URL's `user:password@`.
//!
//! A client made with [`Client::with_cancel`] gives every request it makes to a
//! [`Cancel`] token: rate-limit and `Retry-After` waits sleep on it, credential plugins
//! watch it, and its own agent (and every watch agent) is registered with it before
//! connecting, so cancelling ends whatever the request was waiting for within moments.

use std::io::Read as _;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;

use serde::de::DeserializeOwned;
use ureq::http::{self, Method};
use ureq::tls::{Certificate, ClientCert, PemItem, PrivateKey, RootCerts, TlsConfig, TlsProvider};
use ureq::{Agent, Body};

use super::auth::Auth;
use super::cancel::{Attached, Cancel};
use super::config::ClientConfig;
use super::rate_limit::{RateLimiter, RateLimiterStats};
use super::server_name::PinnedResolver;
use super::warning::WarningSink;
use crate::api::Status;
use crate::config::server_url::ServerUrl;
use crate::error::{Error, Result};

/// At most this much is reserved ahead from a response's `Content-Length` (a server's claim,
/// not yet data); a larger body grows the buffer as it arrives.
const MAX_RESERVED_BODY: u64 = 64 << 20;

/// Largest error body read to find a `Status` in it.
const MAX_ERROR_BODY: u64 = 1 << 20;

/// A handle to one API server. Cheap to clone; clones share connections and the rate limit.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
    /// Set by [`Client::with_cancel`].
    scope: Option<Arc<Scope>>,
}

/// What a client made by [`Client::with_cancel`] adds: the token, and the agent its
/// ordinary requests share (registered with the token, so cancelling shuts it down).
struct Scope {
    cancel: Cancel,
    agent: parking_lot::Mutex<Option<ScopedAgent>>,
}

/// A scope's agent for one client identity generation.
struct ScopedAgent {
    identity_generation: u64,
    agent: Agent,
    _attached: Attached,
}

/// How a request is bounded in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bound {
    /// The whole request within the request timeout.
    Request,
    /// Each read within the list read timeout, however long the whole takes.
    List,
    /// As `List`, for a page after the first of one list: it takes no rate-limit token (the
    /// first page paid for the list; a 100,000-object list is 200 pages, which even
    /// kubectl's burst would otherwise pace).
    ListContinuation,
    /// As the agent (a watch agent) was configured.
    Agent,
}

struct Inner {
    /// Where connection errors say they were going: scheme, host and port, and where the
    /// settings came from (never credentials).
    origin: String,
    base: String,
    agents: RwLock<Agents>,
    /// The configuration the client was built from, to rebuild TLS for a new identity.
    config: ClientConfig,
    auth: Auth,
    /// The `Impersonate-*` headers every request carries.
    impersonation: Vec<(String, String)>,
    limiter: Option<RateLimiter>,
    max_retries: u32,
    max_retry_after: Duration,
    default_namespace: String,
    warnings: WarningSink,
    /// Told about every request (the `metrics` feature; installed once).
    #[cfg(feature = "metrics")]
    observer: std::sync::OnceLock<Arc<dyn super::observer::RequestObserver>>,
    /// The types whose bodies go as JSON after a 415 to a protobuf body.
    #[cfg(feature = "protobuf")]
    json_bodies: super::protobuf_body::JsonBodies,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server", &crate::config::redact_url(&self.inner.base))
            .field("auth", &self.inner.auth)
            .finish_non_exhaustive()
    }
}

/// The agent for ordinary requests and the settings watch agents are made from, for the
/// client identity of generation `identity_generation` (0: the configured one).
struct Agents {
    identity_generation: u64,
    settings: AgentSettings,
    agent: Agent,
}

/// What every agent of a client shares.
struct AgentSettings {
    tls: TlsConfig,
    user_agent: String,
    connect_timeout: Duration,
    request_timeout: Duration,
    watch_read_margin: Duration,
    proxy: Option<ureq::Proxy>,
    /// Sends the `tls-server-name` host to the real server.
    resolver: Option<Arc<PinnedResolver>>,
}

impl AgentSettings {
    /// An agent for ordinary requests (bounded by the request timeout) or for one watch (no
    /// overall bound; the response headers must still come within the request timeout).
    fn agent(&self, watch: bool, read_timeout: Option<Duration>) -> Agent {
        let b = Agent::config_builder()
            .http_status_as_error(false)
            .tls_config(self.tls.clone())
            .user_agent(self.user_agent.as_str())
            .timeout_connect(Some(self.connect_timeout))
            .proxy(self.proxy.clone())
            .max_redirects(0);
        let b = if watch {
            b.timeout_global(None)
                .timeout_recv_response(Some(self.request_timeout))
                .timeout_per_read(read_timeout)
        } else {
            b.timeout_global(Some(self.request_timeout))
        };
        match &self.resolver {
            Some(r) => Agent::with_parts(
                b.build(),
                ureq::unversioned::transport::DefaultConnector::new(),
                SharedResolver(Arc::clone(r)),
            ),
            None => Agent::new_with_config(b.build()),
        }
    }
}

/// One resolver shared by a client's agents.
#[derive(Debug)]
struct SharedResolver(Arc<PinnedResolver>);

impl ureq::unversioned::resolver::Resolver for SharedResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: ureq::unversioned::transport::NextTimeout,
    ) -> Result<ureq::unversioned::resolver::ResolvedSocketAddrs, ureq::Error> {
        self.0.resolve(uri, config, timeout)
    }
}

/// A request body and its content type.
pub(crate) struct SendBody<'a> {
    pub bytes: &'a [u8],
    pub content_type: &'a str,
}

/// The media type every request accepts unless it asks for another.
pub(crate) const JSON: &str = "application/json";

/// One request as the transport sends it: everything but the credentials, which
/// [`Client::send`] adds to every attempt.
pub(crate) struct Outgoing<'a> {
    pub method: Method,
    pub path_and_query: &'a str,
    pub body: Option<SendBody<'a>>,
    /// The `Accept` header.
    pub accept: &'a str,
    /// Further headers, as given (the request builder's).
    pub headers: &'a [(String, String)],
    pub bound: Bound,
}

impl<'a> Outgoing<'a> {
    /// A GET accepting JSON, with no body and no further header.
    pub(crate) fn get(path_and_query: &'a str, bound: Bound) -> Self {
        Outgoing {
            method: Method::GET,
            path_and_query,
            body: None,
            accept: JSON,
            headers: &[],
            bound,
        }
    }
}

impl Client {
    /// A client for the server described by `config`.
    pub fn new(config: ClientConfig) -> Result<Client> {
        Self::new_from(config, None)
    }

    /// [`new`](Self::new), saying in connection errors where the settings came from
    /// (`kubeconfig /home/me/.kube/config context "prod"`, `in-cluster`).
    pub(crate) fn new_from(config: ClientConfig, source: Option<&str>) -> Result<Client> {
        let origin = match source {
            Some(s) => format!("{} ({s})", server_origin(&config.server)),
            None => server_origin(&config.server),
        };
        // How messages name the server: never with its `user:password@`.
        let shown = crate::config::redact_url(&config.server);
        let mut base = config.server.trim_end_matches('/').to_owned();
        if !(base.starts_with("https://") || base.starts_with("http://")) {
            return Err(Error::Config(format!(
                "server {shown:?} must be an http:// or https:// URL"
            )));
        }
        if let Auth::Provider(p) = &config.auth {
            p.check()?;
        }
        let mut resolver = None;
        // The configured proxy, else the environment's (client-go's rules; see
        // `config::proxy`), with where it came from for messages.
        let proxy = match config.proxy.as_deref().filter(|p| !p.is_empty()) {
            Some(p) => Some((p.to_owned(), "proxy-url")),
            None => crate::config::proxy_from_env(&config.server),
        };
        if let Some(name) = config.tls_server_name.as_deref().filter(|n| !n.is_empty()) {
            if let Some((_, from)) = &proxy {
                return Err(Error::Config(format!(
                    "tls-server-name together with a proxy ({from}) is not supported{}",
                    if *from == "proxy-url" {
                        ""
                    } else {
                        "; add the server's host to NO_PROXY"
                    }
                )));
            }
            let url = ServerUrl::parse(&base)
                .ok_or_else(|| Error::Config(format!("server {shown:?}: cannot find its host")))?;
            if !url.scheme.eq_ignore_ascii_case("https") {
                return Err(Error::Config(format!(
                    "tls-server-name {name:?} needs an https:// server, not {shown:?}"
                )));
            }
            resolver = Some(PinnedResolver::new(name, url.host));
            let port = url.port.map(|p| format!(":{p}")).unwrap_or_default();
            base = format!("https://{name}{port}{}", url.path);
        }
        let agent_settings = AgentSettings {
            tls: tls_config(&config)?,
            user_agent: config.user_agent.clone(),
            connect_timeout: config.connect_timeout,
            request_timeout: config.request_timeout,
            watch_read_margin: config.watch_read_margin,
            resolver: resolver.map(Arc::new),
            proxy: proxy
                .as_ref()
                .map(|(p, from)| {
                    // The URL may carry credentials: never quoted with them.
                    let shown = crate::config::redact_url(p);
                    check_proxy_scheme(p)
                        .map_err(|m| Error::Config(format!("{from} {shown:?}: {m}")))?;
                    ureq::Proxy::new(p).map_err(|e| Error::Config(format!("{from} {shown:?}: {e}")))
                })
                .transpose()?,
        };
        // Connection errors say which proxy they went through (a SOCKS refusal does not).
        let origin = match &proxy {
            Some((p, _)) => format!("{origin} through proxy {}", crate::config::redact_url(p)),
            None => origin,
        };
        let limiter = (config.qps > 0.0).then(|| RateLimiter::new(config.qps.into(), config.burst));
        Ok(Client {
            inner: Arc::new(Inner {
                base,
                origin,
                agents: RwLock::new(Agents {
                    identity_generation: 0,
                    agent: agent_settings.agent(false, None),
                    settings: agent_settings,
                }),
                auth: config.auth.clone(),
                impersonation: super::impersonate::headers(
                    config.impersonate_user.as_deref(),
                    config.impersonate_uid.as_deref(),
                    &config.impersonate_groups,
                    &config.impersonate_extra,
                ),
                limiter,
                max_retries: config.max_retries,
                max_retry_after: config.max_retry_after,
                default_namespace: config.default_namespace.clone(),
                warnings: WarningSink::new(config.warning_handler.clone()),
                #[cfg(feature = "metrics")]
                observer: std::sync::OnceLock::new(),
                #[cfg(feature = "protobuf")]
                json_bodies: Default::default(),
                config,
            }),
            scope: None,
        })
    }

    /// Whether creates and updates may go in protobuf (the setting), and the types a 415
    /// moved back to JSON.
    #[cfg(feature = "protobuf")]
    pub(crate) fn protobuf_bodies(&self) -> Option<&super::protobuf_body::JsonBodies> {
        self.inner
            .config
            .protobuf_bodies
            .then_some(&self.inner.json_bodies)
    }

    /// A clone of this client whose requests give up when `cancel` fires: waits for the rate
    /// limit, for `Retry-After` and for credential plugins end, and the connections of its
    /// requests (lists, watches, ...) are shut down, so every call returns at once with
    /// [`Error::Cancelled`]. It shares this client's settings and rate limit, but not its
    /// connection pool: its ordinary requests use one pool of their own.
    pub fn with_cancel(&self, cancel: Cancel) -> Client {
        Client {
            inner: Arc::clone(&self.inner),
            scope: Some(Arc::new(Scope {
                cancel,
                agent: parking_lot::Mutex::new(None),
            })),
        }
    }

    /// The token given to [`with_cancel`](Self::with_cancel), if any.
    pub fn cancel_token(&self) -> Option<&Cancel> {
        self.scope.as_ref().map(|s| &s.cancel)
    }

    fn cancelled(&self) -> bool {
        self.scope.as_ref().is_some_and(|s| s.cancel.is_cancelled())
    }

    /// Registers a watch agent with this client's token (if any) before it connects;
    /// `Err(Cancelled)` when the token already fired.
    pub(crate) fn attach_agent(&self, agent: &Agent, request: &str) -> Result<Option<Attached>> {
        match &self.scope {
            None => Ok(None),
            Some(s) => s
                .cancel
                .attach(agent)
                .map(Some)
                .ok_or_else(|| Error::Cancelled {
                    request: request.to_owned(),
                }),
        }
    }

    /// The agent for ordinary requests: the client's, or this scope's own.
    fn ordinary_agent(&self, request: &str) -> Result<Agent> {
        let agents = self.inner.agents.read();
        let Some(scope) = &self.scope else {
            return Ok(agents.agent.clone());
        };
        let mut slot = scope.agent.lock();
        if let Some(a) = &*slot {
            if a.identity_generation == agents.identity_generation {
                return Ok(a.agent.clone());
            }
        }
        let agent = agents.settings.agent(false, None);
        let attached = scope
            .cancel
            .attach(&agent)
            .ok_or_else(|| Error::Cancelled {
                request: request.to_owned(),
            })?;
        *slot = Some(ScopedAgent {
            identity_generation: agents.identity_generation,
            agent: agent.clone(),
            _attached: attached,
        });
        Ok(agent)
    }

    /// Closes the connections this client's cancel scope keeps open for reuse (see
    /// [`Api::with_cancel`](super::Api::with_cancel)); the next request opens a new one. A
    /// reflector calls it after each list: lists are rare once an informer watches, and
    /// otherwise every informer would hold an idle connection beside its watch. Without a
    /// scope (the client's shared agent, whose idle connections serve every request) it
    /// does nothing.
    pub(crate) fn release_idle_connections(&self) {
        if let Some(scope) = &self.scope {
            *scope.agent.lock() = None;
        }
    }

    /// The client-side rate limiter's counters (`None` when the limit is off): how many
    /// requests took a token, how many waited and for how long.
    pub fn rate_limiter_stats(&self) -> Option<RateLimiterStats> {
        self.inner.limiter.as_ref().map(RateLimiter::stats)
    }

    /// The namespace used when a namespaced request names none.
    pub fn default_namespace(&self) -> &str {
        &self.inner.default_namespace
    }

    /// Reports every request of this client and its clones to `observer` (the first one
    /// installed stays; false when one already was).
    #[cfg(feature = "metrics")]
    pub(crate) fn set_observer(&self, observer: Arc<dyn super::observer::RequestObserver>) -> bool {
        self.inner.observer.set(observer).is_ok()
    }

    /// The base URL requests are addressed to (with `tls_server_name`, that name is its host
    /// and resolves to the configured server).
    pub fn server(&self) -> &str {
        &self.inner.base
    }

    /// Sends a request for any path (with its query) and decodes the JSON answer: a
    /// shortcut for [`request`](Self::request)`(method, path_and_query)` with the body as
    /// [`json`](super::Request::json), then [`send_json`](super::Request::send_json).
    ///
    /// `client.request_json::<serde_json::Value>(Method::GET, "/version", None)`.
    pub fn request_json<T: DeserializeOwned>(
        &self,
        method: Method,
        path_and_query: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<T> {
        let mut request = self.request(method, path_and_query);
        if let Some(b) = body {
            request = request.json(b);
        }
        request.send_json()
    }

    /// A list page's raw bytes, into a buffer given back from an earlier call (emptied
    /// first): a pager reuses a few page buffers instead of asking the allocator, and the
    /// kernel to clear, megabytes of fresh memory per page. Bounded per read. `continued`:
    /// a page after the first (see [`Bound::ListContinuation`]). The flag says whether the
    /// answer is protobuf (its `Content-Type`), JSON otherwise.
    pub(crate) fn list_raw_into(
        &self,
        path_and_query: &str,
        continued: bool,
        accept: &str,
        bytes: Vec<u8>,
    ) -> Result<(Vec<u8>, bool)> {
        let mut out = Outgoing::get(path_and_query, list_bound(continued));
        out.accept = accept;
        let (parts, bytes) = self.fetch(&out, bytes)?;
        Ok((bytes, is_protobuf(&parts.headers)))
    }

    /// Sends a request and returns a 2xx answer's status line and headers, and its body
    /// undecoded, in `bytes`.
    pub(crate) fn fetch(
        &self,
        out: &Outgoing<'_>,
        mut bytes: Vec<u8>,
    ) -> Result<(http::response::Parts, Vec<u8>)> {
        let request = describe(&out.method, out.path_and_query);
        self.prepare_credentials(&request)?;
        self.refresh_identity()?;
        let agent = self.ordinary_agent(&request)?;
        let res = self.send(&agent, out)?;
        // Sized from Content-Length (list pages are megabytes): one allocation, no regrowth.
        let expected = res
            .body()
            .content_length()
            .unwrap_or(0)
            .min(MAX_RESERVED_BODY) as usize;
        bytes.clear();
        bytes.reserve(expected);
        let (parts, body) = res.into_parts();
        body.into_with_config()
            .limit(u64::MAX)
            .reader()
            .read_to_end(&mut bytes)
            .map_err(|e| {
                if self.cancelled() {
                    Error::Cancelled {
                        request: request.clone(),
                    }
                } else {
                    Error::Transport {
                        request: format!("{request} to {}", self.inner.origin),
                        source: e.into(),
                    }
                }
            })?;
        Ok((parts, bytes))
    }

    /// With a cancellation token, brings a changing credential (an exec plugin) up to date
    /// while watching the token, so the calls that read it later find it ready.
    pub(crate) fn prepare_credentials(&self, request: &str) -> Result<()> {
        let (Some(scope), Auth::Provider(p)) = (&self.scope, &self.inner.auth) else {
            return Ok(());
        };
        p.prepare(&scope.cancel).map_err(|e| {
            if scope.cancel.is_cancelled() {
                Error::Cancelled {
                    request: request.to_owned(),
                }
            } else {
                e
            }
        })
    }

    /// A fresh agent for one watch: no overall timeout. With a server-side timeout, reads
    /// time out after it plus the configured margin: the connection is dead by then. With
    /// `idle`, a read times out after that at the latest (a watch with bookmarks hears from
    /// the server about once a minute, so silence much longer than that means a dead peer).
    pub(crate) fn watch_agent(
        &self,
        timeout_seconds: Option<u32>,
        idle: Option<Duration>,
        request: &str,
    ) -> Result<Agent> {
        self.prepare_credentials(request)?;
        self.refresh_identity()?;
        let agents = self.inner.agents.read();
        let by_server = timeout_seconds.map(|s| {
            Duration::from_secs(s.into()).saturating_add(agents.settings.watch_read_margin)
        });
        let read_timeout = match (by_server, idle.filter(|d| !d.is_zero())) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Ok(agents.settings.agent(true, read_timeout))
    }

    /// Rebuilds the TLS configuration when the credential source hands out a new client
    /// certificate (exec plugins).
    fn refresh_identity(&self) -> Result<()> {
        let Auth::Provider(p) = &self.inner.auth else {
            return Ok(());
        };
        let Some((generation, identity)) = p.client_identity()? else {
            return Ok(());
        };
        if self.inner.agents.read().identity_generation == generation {
            return Ok(());
        }
        let mut config = self.inner.config.clone();
        config.identity = Some(identity);
        let tls = tls_config(&config)?;
        let mut agents = self.inner.agents.write();
        if agents.identity_generation != generation {
            agents.settings.tls = tls;
            agents.agent = agents.settings.agent(false, None);
            agents.identity_generation = generation;
        }
        Ok(())
    }

    /// Sends one request on `agent`, retrying 429/5xx answers that carry `Retry-After` and
    /// retrying once after a 401 when the credential can be refreshed. Returns a 2xx response
    /// with its body unread; every other answer becomes [`Error::Api`].
    ///
    /// Every request of the client goes through here (the request builder's, the typed
    /// API's, lists, watches): one place for credentials, impersonation, the rate limit,
    /// retries, warnings and `Status` decoding.
    pub(crate) fn send(&self, agent: &Agent, out: &Outgoing<'_>) -> Result<http::Response<Body>> {
        let (method, bound) = (&out.method, out.bound);
        let request = describe(method, out.path_and_query);
        let uri = format!("{}{}", self.inner.base, out.path_and_query);
        let cancelled = || Error::Cancelled {
            request: request.clone(),
        };
        let cancel = self.scope.as_ref().map(|s| &s.cancel);
        // Sleeps unless cancelled first; true when cancelled.
        let pause = |d: Duration| match cancel {
            Some(c) => c.sleep(d),
            None => {
                std::thread::sleep(d);
                false
            }
        };
        let mut attempt = 0;
        let mut reauthenticated = false;
        let mut prepare_again = false;
        loop {
            if self.cancelled() {
                return Err(cancelled());
            }
            // The callers prepared the credential for the first attempt; after a 401 it is
            // fetched anew.
            if std::mem::take(&mut prepare_again) {
                self.prepare_credentials(&request)?;
            }
            let paced = !matches!(bound, Bound::ListContinuation);
            if paced && self.pace(method, &pause) {
                return Err(cancelled());
            }
            let mut rb = http::Request::builder()
                .method(method.clone())
                .uri(&uri)
                .header("accept", out.accept);
            for (name, value) in self.credential_headers()? {
                rb = rb.header(name, value.expose());
            }
            for (name, value) in out.headers {
                rb = rb.header(name.as_str(), value.as_str());
            }
            let bad_request = |e: http::Error| Error::InvalidInput(format!("{request}: {e}"));
            let list_read_timeout = self.inner.config.list_read_timeout;
            #[cfg(feature = "metrics")]
            let sending = std::time::Instant::now();
            let sent = match &out.body {
                Some(b) => agent.run(bounded(
                    agent,
                    rb.header("content-type", b.content_type)
                        .body(b.bytes.to_vec())
                        .map_err(bad_request)?,
                    bound,
                    list_read_timeout,
                )),
                None => agent.run(bounded(
                    agent,
                    rb.body(()).map_err(bad_request)?,
                    bound,
                    list_read_timeout,
                )),
            };
            #[cfg(feature = "metrics")]
            if let Some(o) = self.inner.observer.get() {
                let code = sent.as_ref().ok().map(|r| r.status().as_u16());
                o.answered(method.as_str(), code, sending.elapsed());
            }
            let res = sent.map_err(|source| {
                if self.cancelled() {
                    cancelled()
                } else {
                    Error::Transport {
                        request: format!("{request} to {}", self.inner.origin),
                        source,
                    }
                }
            })?;
            self.inner.warnings.handle(&request, res.headers());
            let code = res.status().as_u16();
            if (200..300).contains(&code) {
                return Ok(res);
            }
            let content_type = res
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let retry_after = res
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok());
            let text = res
                .into_body()
                .into_with_config()
                .limit(MAX_ERROR_BODY)
                .read_to_vec()
                .unwrap_or_default();
            let status = status_from_body(code, &text, content_type.as_deref());
            if let Some(secs) = retry_after {
                if (code == 429 || code >= 500) && attempt < self.inner.max_retries {
                    attempt += 1;
                    let wait = Duration::from_secs(secs).min(self.inner.max_retry_after);
                    log::debug!("{request}: {code}, retry {attempt} after {wait:?}");
                    if pause(wait) {
                        return Err(cancelled());
                    }
                    continue;
                }
            }
            if code == 401 && !reauthenticated && self.invalidate_credentials() {
                reauthenticated = true;
                prepare_again = true;
                continue;
            }
            return Err(Error::Api {
                request,
                status: Box::new(status),
            });
        }
    }
}

impl Client {
    /// Takes a rate-limit token, sleeping with `pause` as long as the limiter says; true when
    /// `pause` was cancelled. Every request, the WebSocket upgrades included, goes through here.
    pub(crate) fn pace(&self, method: &Method, pause: &dyn Fn(Duration) -> bool) -> bool {
        let Some(l) = self.inner.limiter.as_ref() else {
            return false;
        };
        let delay = l.reserve();
        #[cfg(feature = "metrics")]
        if let Some(o) = self.inner.observer.get() {
            o.throttled(method.as_str(), delay);
        }
        #[cfg(not(feature = "metrics"))]
        let _ = method;
        !delay.is_zero() && pause(delay)
    }

    /// The `Authorization` and `Impersonate-*` headers of the next request (the credential
    /// as it is now: a plugin's token is fetched or refreshed as needed). Every request, the
    /// WebSocket upgrades included, takes its credentials from here.
    pub(crate) fn credential_headers(&self) -> Result<Vec<(&str, super::Secret)>> {
        let mut headers = Vec::with_capacity(1 + self.inner.impersonation.len());
        if let Some(h) = self.inner.auth.header()? {
            headers.push(("authorization", h));
        }
        for (name, value) in &self.inner.impersonation {
            headers.push((name.as_str(), super::Secret::new(value.as_str())));
        }
        Ok(headers)
    }

    /// A failed request's credential was refused (401): true when a fresh one can be had
    /// (the next [`credential_headers`](Self::credential_headers) fetches it).
    pub(crate) fn invalidate_credentials(&self) -> bool {
        self.inner.auth.invalidate()
    }

    /// What the WebSocket upgrade connects with: the client's configuration, and the client
    /// certificate of the current identity (an exec plugin's) if it has one.
    #[cfg(feature = "ws")]
    pub(crate) fn upgrade_settings(&self, request: &str) -> Result<UpgradeSettings<'_>> {
        if self.cancelled() {
            return Err(Error::Cancelled {
                request: request.to_owned(),
            });
        }
        self.prepare_credentials(request)?;
        let mut identity = self.inner.config.identity.clone();
        if let Auth::Provider(p) = &self.inner.auth {
            if let Some((_, id)) = p.client_identity()? {
                identity = Some(id);
            }
        }
        Ok(UpgradeSettings {
            config: &self.inner.config,
            identity,
            origin: &self.inner.origin,
            cancel: self.scope.as_ref().map(|s| &s.cancel),
        })
    }
}

/// See [`Client::upgrade_settings`].
#[cfg(feature = "ws")]
pub(crate) struct UpgradeSettings<'a> {
    pub config: &'a ClientConfig,
    pub identity: Option<super::Identity>,
    pub origin: &'a str,
    pub cancel: Option<&'a Cancel>,
}

/// A request with the timeouts of its kind: a list is bounded per read, not as a whole.
fn bounded<S: ureq::AsSendBody>(
    agent: &Agent,
    req: http::Request<S>,
    bound: Bound,
    list_read_timeout: Duration,
) -> http::Request<S> {
    match bound {
        Bound::List | Bound::ListContinuation => agent
            .configure_request(req)
            .timeout_global(None)
            .timeout_per_read(Some(list_read_timeout))
            .build(),
        Bound::Request | Bound::Agent => req,
    }
}

/// Decodes a response body, naming the request in the error.
pub(crate) fn decode_json<T: DeserializeOwned>(
    request: &str,
    bytes: &[u8],
    what: &str,
) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|e| Error::Decode {
        request: request.to_owned(),
        // Kind and position only: serde's messages can quote values from the body.
        message: format!(
            "decoding the {what} ({} bytes): {}",
            bytes.len(),
            crate::error::json_error_summary(&e)
        ),
    })
}

/// Whether an answer's `Content-Type` is kube-apiserver's protobuf (its media type, any
/// parameters: `;stream=watch`, `;as=...`). Always false without the `protobuf` feature,
/// whose requests never ask for it.
#[inline]
pub(crate) fn is_protobuf(headers: &ureq::http::HeaderMap) -> bool {
    #[cfg(feature = "protobuf")]
    return headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .and_then(|t| t.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case(crate::protobuf::CONTENT_TYPE));
    #[cfg(not(feature = "protobuf"))]
    {
        let _ = headers;
        false
    }
}

/// `GET /api/v1/pods?limit=500`: how errors name a request (never with credentials).
pub(crate) fn describe(method: &Method, path_and_query: &str) -> String {
    format!("{method} {path_and_query}")
}

/// The `Status` in an error body, or one made from the HTTP code when the body is not one.
///
/// A body that is not a `Status` is never quoted (it may be anything, object data
/// included): the message gives its length and content type. The one exception is the
/// exact plain-text `404 page not found` of a path the API server does not serve (a
/// deleted CRD's resource): a `NotFound` that says so.
pub(crate) fn status_from_body(code: u16, body: &[u8], content_type: Option<&str>) -> Status {
    // kube-apiserver sends its errors in protobuf whenever protobuf was accepted.
    #[cfg(feature = "protobuf")]
    let decoded = match body.starts_with(b"k8s\0") {
        true => crate::api::protobuf_answers::status(body).ok_or(()),
        false => serde_json::from_slice::<Status>(body).map_err(drop),
    };
    #[cfg(not(feature = "protobuf"))]
    let decoded = serde_json::from_slice::<Status>(body);
    if let Ok(mut st) = decoded {
        if st.code != 0 || !st.reason.is_empty() || !st.message.is_empty() {
            if st.code == 0 {
                st.code = code;
            }
            return st;
        }
    }
    let reason = match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        409 => "Conflict",
        410 => "Gone",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "Unknown",
    };
    let message = if body.iter().all(u8::is_ascii_whitespace) {
        format!("HTTP {code} with no Status body")
    } else if code == 404 && body.trim_ascii() == b"404 page not found" {
        // The Go mux's answer: kube-apiserver serves nothing at this path. It is what a
        // custom resource whose CRD was deleted answers (and its group's discovery), so
        // it is a NotFound like any other, with a message that says which kind.
        "the server serves nothing at this path (404 page not found): the resource is not \
         served, or its CustomResourceDefinition was deleted"
            .to_owned()
    } else {
        // The content type is the server's (or a proxy's) word: shown only when it is short
        // and plain.
        let content_type = content_type
            .filter(|t| t.len() <= 100 && t.bytes().all(|b| b.is_ascii_graphic() || b == b' '))
            .unwrap_or("unknown");
        format!(
            "HTTP {code} with a {}-byte body that is not a Status (content type {content_type}; not quoted)",
            body.len()
        )
    };
    Status::failure(code, reason, message)
}

fn tls_config(config: &ClientConfig) -> Result<TlsConfig> {
    let mut b = TlsConfig::builder().provider(TlsProvider::Rustls);
    if let Some(ca) = &config.ca_pem {
        let certs = pem_certificates(ca, "certificate authority")?;
        b = b.root_certs(RootCerts::new_with_certs(&certs));
    }
    if config.insecure_skip_tls_verify {
        b = b.disable_verification(true);
    }
    if let Some(id) = &config.identity {
        let certs = pem_certificates(&id.cert_pem, "client certificate")?;
        let key = pem_private_key(id.key_pem.expose().as_bytes(), "client key")?;
        b = b.client_cert(Some(ClientCert::new_with_certs(&certs, key)));
    }
    Ok(b.build())
}

/// Every certificate in a PEM bundle; an error when there is none or the PEM is broken.
pub(crate) fn pem_certificates(pem: &[u8], what: &str) -> Result<Vec<Certificate<'static>>> {
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(pem) {
        match item {
            Ok(PemItem::Certificate(c)) => certs.push(c),
            Ok(_) => {}
            Err(e) => return Err(Error::Config(format!("{what}: bad PEM: {e}"))),
        }
    }
    if certs.is_empty() {
        return Err(Error::Config(format!(
            "{what}: no certificate found in PEM"
        )));
    }
    Ok(certs)
}

/// The first private key in a PEM document.
pub(crate) fn pem_private_key(pem: &[u8], what: &str) -> Result<PrivateKey<'static>> {
    for item in ureq::tls::parse_pem(pem) {
        match item {
            Ok(PemItem::PrivateKey(k)) => return Ok(k),
            Ok(_) => {}
            // Never echo the PEM: it is a secret.
            Err(_) => return Err(Error::Config(format!("{what}: bad PEM"))),
        }
    }
    Err(Error::Config(format!(
        "{what}: no private key found in PEM"
    )))
}

/// `scheme://host:port` of a server URL, the port spelled out (443 or 80 when the URL has
/// none) and any `user:password@` left out: how connection errors name the server.
fn server_origin(server: &str) -> String {
    match ServerUrl::parse(server) {
        Some(u) => format!("{}://{}:{}", u.scheme, u.host, u.port_or_default()),
        None => "<server with no scheme>".into(),
    }
}

/// The proxy schemes client-go accepts: `http`, `https`, `socks5` (the proxy is given an
/// address resolved here) and `socks5h` (the proxy resolves the name); a URL without a
/// scheme is `http`. SOCKS4 and others are refused rather than tried.
fn check_proxy_scheme(proxy: &str) -> std::result::Result<(), String> {
    let Some((scheme, _)) = proxy.split_once("://") else {
        return Ok(());
    };
    match scheme.to_ascii_lowercase().as_str() {
        "http" | "https" | "socks5" | "socks5h" => Ok(()),
        other => Err(format!(
            "unsupported proxy scheme {other:?} (http, https, socks5 and socks5h are)"
        )),
    }
}

/// How a list page is bounded: the pages after the first take no rate-limit token.
fn list_bound(continued: bool) -> Bound {
    if continued {
        Bound::ListContinuation
    } else {
        Bound::List
    }
}

#[cfg(test)]
mod origin_tests {
    use super::server_origin;

    #[test]
    fn names_scheme_host_and_port_without_credentials() {
        assert_eq!(
            server_origin("https://10.0.0.1:6443"),
            "https://10.0.0.1:6443"
        );
        assert_eq!(
            server_origin("https://k8s.example.com/prefix"),
            "https://k8s.example.com:443"
        );
        assert_eq!(server_origin("http://u:p@host"), "http://host:80");
        assert_eq!(server_origin("https://[::1]"), "https://[::1]:443");
        assert_eq!(server_origin("https://[::1]:6443/x"), "https://[::1]:6443");
    }
}
