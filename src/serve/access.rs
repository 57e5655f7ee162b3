//! Authentication and authorisation of callers through kube-apiserver, as
//! controller-runtime's `WithAuthenticationAndAuthorization` does for secure metrics (feature
//! `webhook`).
//!
//! [`RequireAccess`] wraps a handler: a request reaches it only when its bearer token is
//! valid (a `TokenReview`) and its user may do the request's verb (the HTTP method in lower
//! case: `get` for GET and HEAD) on its path as a non-resource URL (a `SubjectAccessReview`
//! of, e.g., `get` `/metrics`). Otherwise: 401 without a valid token, 403 when not allowed,
//! 500 when kube-apiserver could not be asked (the reason is logged, not sent). The program
//! needs the `system:auth-delegator` ClusterRole (create `tokenreviews` and
//! `subjectaccessreviews`); a scraper needs `get` on the `/metrics` non-resource URL.
//!
//! Answers are cached briefly, so that a scrape every few seconds costs no API calls: a
//! valid token for [`AUTHENTICATED_TTL`], an invalid one for [`DENIED_TTL`], an allowed
//! request for [`AUTHENTICATED_TTL`], a denied one for [`DENIED_TTL`]; each cache holds at
//! most [`CACHE_ENTRIES`] answers (full: the expired ones go, then all of them). A decision is
//! reused only for the very review it answered (user, uid, groups, `extra`, verb and path:
//! the whole spec, as kube-apiserver keys its own cache), so a scoped token of an allowed
//! user is asked about anew. An error is never cached. Tokens are neither kept (the cache
//! holds their SHA-256) nor logged.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::handler::{Handler, Request, Response};
use crate::api::{SubjectAccessReviewSpec, UserInfo};
use crate::client::Client;

/// How long a valid token, or an allowed request, is remembered.
pub const AUTHENTICATED_TTL: Duration = Duration::from_secs(60);
/// How long an invalid token, or a denied request, is remembered.
pub const DENIED_TTL: Duration = Duration::from_secs(10);
/// The most answers each cache (tokens; decisions) holds.
pub const CACHE_ENTRIES: usize = 4096;

/// A handler that only callers kube-apiserver authenticates and authorises reach.
///
/// ```
/// use kube_informer::serve::{Request, RequireAccess, Response, Router, Server};
/// use kube_informer::{testing::ApiServer, Client};
///
/// let api = ApiServer::start();
/// let client = Client::new(api.client_config())?;
/// let metrics = |_: &Request| Response::text(200, "up 1\n");
/// let router = Router::new().route("/metrics", RequireAccess::new(client, metrics));
/// let server = Server::builder("metrics").bind("127.0.0.1:0", router)?;
/// // A scraper's token: a service account the rule allows.
/// api.set_authorizer(|spec| spec.user == "system:serviceaccount:monitoring:prometheus");
/// let token = api.issue_token("monitoring", "prometheus", &[]);
/// # use std::io::{Read, Write};
/// # let ask = |token: Option<&str>| {
/// #     let mut s = std::net::TcpStream::connect(server.addr()).unwrap();
/// #     let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
/// #     write!(s, "GET /metrics HTTP/1.1\r\nHost: m\r\n{auth}Connection: close\r\n\r\n").unwrap();
/// #     let mut answer = String::new();
/// #     s.read_to_string(&mut answer).unwrap();
/// #     answer[9..12].parse::<u16>().unwrap()
/// # };
/// assert_eq!(ask(Some(&token)), 200);
/// assert_eq!(ask(None), 401);
/// assert_eq!(ask(Some(&api.issue_token("lab", "someone", &[]))), 403);
/// # Ok::<(), kube_informer::Error>(())
/// ```
pub struct RequireAccess<H> {
    client: Client,
    inner: H,
    /// Keyed by the token's SHA-256 ([`token_key`]), not the token.
    tokens: Cache<[u8; 32], Option<UserInfo>>,
    /// Keyed by the whole `SubjectAccessReview` spec that was sent (its JSON), as
    /// kube-apiserver's webhook authoriser keys its cache: an answer is reused only for a
    /// review that would carry exactly the same question. `extra` matters: a token scoped
    /// down (OpenShift's `scopes`, a credential-id rule) is the same user, uid and groups
    /// as the full one, and an authoriser may deny it what it allows the full one.
    decisions: Cache<String, bool>,
}

impl<H: Handler> RequireAccess<H> {
    /// Wraps `inner`; `client` asks kube-apiserver.
    pub fn new(client: Client, inner: H) -> Self {
        RequireAccess {
            client,
            inner,
            tokens: Cache::default(),
            decisions: Cache::default(),
        }
    }

    fn authenticate(&self, token: &str) -> Result<Option<UserInfo>, String> {
        let key = token_key(token);
        if let Some(known) = self.tokens.get(&key) {
            return Ok(known);
        }
        let review = self
            .client
            .token_review(token, &[])
            .map_err(|e| format!("TokenReview: {e}"))?;
        let user = review.status.authenticated.then_some(review.status.user);
        let ttl = if user.is_some() {
            AUTHENTICATED_TTL
        } else {
            DENIED_TTL
        };
        self.tokens.put(key, user.clone(), ttl);
        Ok(user)
    }

    fn authorize(&self, user: &UserInfo, verb: &str, path: &str) -> Result<bool, String> {
        let spec = SubjectAccessReviewSpec::non_resource(user, verb, path);
        let key = serde_json::to_string(&spec)
            .map_err(|e| format!("SubjectAccessReview: encoding its spec: {e}"))?;
        if let Some(allowed) = self.decisions.get(&key) {
            return Ok(allowed);
        }
        let review = self
            .client
            .subject_access_review(spec)
            .map_err(|e| format!("SubjectAccessReview: {e}"))?;
        let allowed = review.status.allowed;
        let ttl = if allowed {
            AUTHENTICATED_TTL
        } else {
            DENIED_TTL
        };
        self.decisions.put(key, allowed, ttl);
        Ok(allowed)
    }
}

/// The key a token's answer is cached under: its SHA-256, as kube-apiserver's token cache
/// keys by a hash. An entry then costs the same whatever the token's length: a client
/// sending thousands of different 16 KiB garbage tokens (each remembered as invalid for
/// [`DENIED_TTL`]) would otherwise pin [`CACHE_ENTRIES`] times 16 KiB, 64 MiB; and no
/// token stays in memory after its request.
fn token_key(token: &str) -> [u8; 32] {
    let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
    let mut key = [0u8; 32];
    key.copy_from_slice(digest.as_ref());
    key
}

impl<H: Handler> Handler for RequireAccess<H> {
    fn handle(&self, request: &Request) -> Response {
        let Some(token) = request.bearer_token() else {
            return Response::text(401, "Unauthorized: a bearer token is required\n")
                .with_header("WWW-Authenticate", "Bearer");
        };
        let user = match self.authenticate(token) {
            Ok(Some(user)) => user,
            Ok(None) => return Response::text(401, "Unauthorized\n"),
            Err(why) => {
                log::warn!("authenticating a request for {}: {why}", request.path);
                return Response::text(500, "Authentication failed\n");
            }
        };
        let verb = match request.method.as_str() {
            "HEAD" => "get".to_string(),
            m => m.to_ascii_lowercase(),
        };
        match self.authorize(&user, &verb, &request.path) {
            Ok(true) => self.inner.handle(request),
            Ok(false) => Response::text(
                403,
                format!(
                    "Forbidden: user {:?} may not {verb} {}\n",
                    user.username, request.path
                ),
            ),
            Err(why) => {
                log::warn!(
                    "authorizing {verb} {} for {:?}: {why}",
                    request.path,
                    user.username
                );
                Response::text(500, "Authorization failed\n")
            }
        }
    }
}

impl<H> std::fmt::Debug for RequireAccess<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequireAccess").finish_non_exhaustive()
    }
}

/// A small map whose entries expire, bounded by [`CACHE_ENTRIES`].
struct Cache<K, V> {
    map: Mutex<HashMap<K, (V, Instant)>>,
}

impl<K, V> Default for Cache<K, V> {
    fn default() -> Self {
        Cache {
            map: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Hash + Eq, V: Clone> Cache<K, V> {
    fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let map = self.map.lock();
        map.get(key)
            .filter(|(_, until)| Instant::now() < *until)
            .map(|(v, _)| v.clone())
    }

    fn put(&self, key: K, value: V, ttl: Duration) {
        let mut map = self.map.lock();
        if map.len() >= CACHE_ENTRIES {
            let now = Instant::now();
            map.retain(|_, (_, until)| now < *until);
            if map.len() >= CACHE_ENTRIES {
                map.clear();
            }
        }
        map.insert(key, (value, Instant::now() + ttl));
    }
}
