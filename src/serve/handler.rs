//! What the server hands a handler and what a handler hands back: plain values, no streams.
//!
//! A [`Handler`] sees a whole [`Request`] (its body already read, within the server's
//! bound) and returns a whole [`Response`]. Nothing in it can block the server or another
//! client: the server reads and writes the socket, with its timeouts, on the connection's own
//! thread; a handler only computes. Probes, `/metrics` and admission and conversion webhooks
//! are each a handler mounted on a path of a [`Router`](super::Router).
//!
//! A handler that panics is answered for: the server catches the panic and sends `500` with
//! `handler panicked` (a webhook that must answer with a denial instead catches its own
//! panics, as the webhook handlers do).

use std::net::SocketAddr;

/// One HTTP request, read whole.
///
/// Header names are lower-cased (HTTP names are case-insensitive); their order and
/// repetitions are kept. `path` is the request target before `?`, as sent (not
/// percent-decoded); `query` what follows `?` (empty when there is none).
#[derive(Clone, PartialEq, Eq)]
pub struct Request {
    /// `GET`, `POST`, ... as sent.
    pub method: String,
    /// The path, e.g. `/readyz/informer-sync`, without the query.
    pub path: String,
    /// The query without `?`, e.g. `verbose` or `timeout=10s`; empty when none.
    pub query: String,
    /// The headers, names lower-cased, in the order sent.
    pub headers: Vec<(String, String)>,
    /// The body (empty without one); at most the server's `max_body_bytes`.
    pub body: Vec<u8>,
    /// The client's address.
    pub peer: SocketAddr,
    /// Whether the request came over TLS.
    pub tls: bool,
}

impl Request {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The bearer token of an `Authorization: Bearer <token>` header, if any.
    pub fn bearer_token(&self) -> Option<&str> {
        let value = self.header("authorization")?;
        let (scheme, token) = value.split_once(' ')?;
        let token = token.trim();
        (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
    }

    /// Whether the query has `key` (as `key` or `key=...`).
    pub fn has_query(&self, key: &str) -> bool {
        self.query_value(key).is_some()
    }

    /// The value of `key` in the query (`""` for a bare `key`), not percent-decoded.
    pub fn query_value(&self, key: &str) -> Option<&str> {
        self.query.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (k == key).then_some(v)
        })
    }
}

// The body may hold secrets (an admission review of a Secret) and the headers a bearer
// token: Debug shows neither.
impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("method", &self.method)
            .field("path", &self.path)
            .field("query", &self.query)
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("body_bytes", &self.body.len())
            .field("peer", &self.peer)
            .field("tls", &self.tls)
            .finish()
    }
}

/// One HTTP response.
///
/// The server adds `Content-Length`, `Date`-less framing and `Connection` itself; a handler
/// sets the status, its own headers and the body. For a `HEAD` request the server sends the
/// headers and drops the body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// The status code, e.g. 200.
    pub status: u16,
    /// Headers besides `Content-Length` and `Connection` (the server sets those).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// An empty response with `status`.
    pub fn new(status: u16) -> Self {
        Response {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// A `text/plain; charset=utf-8` response.
    pub fn text(status: u16, body: impl Into<String>) -> Self {
        Response::new(status)
            .with_header("Content-Type", "text/plain; charset=utf-8")
            .with_body(body.into().into_bytes())
    }

    /// An `application/json` response of `value` (500 with the reason if it does not
    /// serialise).
    pub fn json<T: serde::Serialize + ?Sized>(status: u16, value: &T) -> Self {
        match serde_json::to_vec(value) {
            Ok(body) => Response::new(status)
                .with_header("Content-Type", "application/json")
                .with_body(body),
            Err(e) => Response::text(500, format!("cannot encode the answer as JSON: {e}\n")),
        }
    }

    /// Adds a header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the body.
    pub fn with_body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Answers requests. Called on the connection's thread, possibly from several connections
/// at once; it should compute and return, not wait on a client.
///
/// Any `Fn(&Request) -> Response + Send + Sync` is a handler:
///
/// ```
/// use kube_informer::serve::{Handler, Request, Response};
///
/// let hello = |_: &Request| Response::text(200, "hello\n");
/// fn takes(_: impl Handler) {}
/// takes(hello);
/// ```
pub trait Handler: Send + Sync + 'static {
    /// The answer to `request`.
    fn handle(&self, request: &Request) -> Response;
}

impl<F> Handler for F
where
    F: Fn(&Request) -> Response + Send + Sync + 'static,
{
    fn handle(&self, request: &Request) -> Response {
        self(request)
    }
}
