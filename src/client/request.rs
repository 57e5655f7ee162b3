//! The request builder (client-go's RESTClient): any request to the API server, for what
//! the typed [`Api`](super::Api) does not cover.
//!
//! Everything goes through the one transport path of the typed API (auth, TLS, rate limit,
//! retries, warnings, Status errors); see [`Request`] for examples and limits.

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use ureq::http::{self, Method};

use super::client::{decode_json, describe, Bound, Client, Outgoing, SendBody, JSON};
use super::lines::Lines;
use super::warning::{warnings_of, Warning};
use super::watch::WatchCanceller;
use crate::api::url_encoding::percent_encode;
use crate::error::{Error, Result};

/// Headers the HTTP stack sets from the body and the connection: a request may not set them.
const FRAMING: [&str; 5] = [
    "content-length",
    "transfer-encoding",
    "host",
    "connection",
    "user-agent",
];

/// A request under construction, made by [`Client::request`]; nothing is sent until
/// [`send`](Self::send), [`send_json`](Self::send_json) or [`lines`](Self::lines). For
/// what the typed [`Api`](super::Api) does not cover (client-go's RESTClient).
///
/// ```
/// use kube_informer::{Client, Method};
/// # let server = kube_informer::testing::ApiServer::start();
/// let client = Client::new(server.client_config())?;
/// // A POST with a body of your choosing; the raw answer with its status and warnings.
/// let res = client
///     .request(Method::POST, "/api/v1/namespaces/lab/configmaps")
///     .content_type("application/json")
///     .body(br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","labels":{"app":"web"}}}"#.to_vec())
///     .send()?;
/// assert_eq!(res.status(), 201);
/// assert!(res.warnings().is_empty());
/// // A GET with a query parameter (percent-encoded by the builder), decoded.
/// let list: serde_json::Value = client
///     .request(Method::GET, "/api/v1/namespaces/lab/configmaps")
///     .query("labelSelector", "app in (web,db)")
///     .send_json()?;
/// assert_eq!(list["items"][0]["metadata"]["name"], "web");
/// # Ok::<(), kube_informer::Error>(())
/// ```
///
/// A watch of anything, line by line (`no_run`: it runs until the server ends it):
///
/// ```no_run
/// # use kube_informer::{Client, ClientConfig, Method};
/// # let client = Client::new(ClientConfig::new("https://127.0.0.1:6443"))?;
/// for line in client.request(Method::GET, "/api/v1/namespaces/lab/events").query("watch", "1").lines()? {
///     println!("{}", String::from_utf8_lossy(&line?));
/// }
/// # Ok::<(), kube_informer::Error>(())
/// ```
///
/// Every request built here goes through the same transport as the typed API, lists and
/// watches: credentials (and their refresh after a 401), impersonation, TLS, the client-side
/// rate limit, `Retry-After` retries of 429/5xx, the server's warnings (see
/// [`Warning`](super::Warning)), and a failure answer decoded as [`Error::Api`] with its
/// `Status`: [`Request::send`](Request::send) returns only 2xx answers as a [`Response`].
///
/// Limits: [`send`](Request::send) is bounded as a whole by the client's request timeout
/// and reads the whole body into memory (use [`lines`](Request::lines) for a stream); a
/// header may not be set twice by the builder except by calling [`header`](Request::header)
/// twice; `Authorization`, `Impersonate-*` and `User-Agent` come from the client's
/// configuration only, and the framing headers from the HTTP stack.
#[must_use = "a request does nothing until it is sent"]
pub struct Request {
    client: Client,
    method: Method,
    path_and_query: String,
    headers: Vec<(String, String)>,
    content_type: Option<String>,
    accept: Option<String>,
    body: Option<Vec<u8>>,
    /// A mistake found while building (an unencodable body), reported by `send`.
    invalid: Option<String>,
    idle: Option<Duration>,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the body or the header values: either may be a secret.
        f.debug_struct("Request")
            .field("method", &self.method)
            .field("path_and_query", &self.path_and_query)
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("body", &self.body.as_ref().map(Vec::len))
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Starts a request: `method` on `path`, an absolute path on the server
    /// (`/api/v1/namespaces/lab/pods`; the client's base URL, path prefix included, goes in
    /// front). `path` is sent as given: percent-encode its segments yourself if they may hold
    /// reserved characters; a query already in it is kept, and [`Request::query`] adds to
    /// it. See the [`request` module](super::Request).
    pub fn request(&self, method: Method, path: &str) -> Request {
        Request {
            client: self.clone(),
            method,
            path_and_query: path.to_owned(),
            headers: Vec::new(),
            content_type: None,
            accept: None,
            body: None,
            invalid: None,
            idle: None,
        }
    }
}

impl Request {
    /// Adds a query parameter; the name and the value are percent-encoded.
    pub fn query(mut self, name: &str, value: &str) -> Self {
        self.path_and_query
            .push(if self.path_and_query.contains('?') {
                '&'
            } else {
                '?'
            });
        percent_encode(name, &mut self.path_and_query);
        self.path_and_query.push('=');
        percent_encode(value, &mut self.path_and_query);
        self
    }

    /// Adds a header (`Content-Type` and `Accept` set those; calling it twice with one name
    /// sends the header twice). `Authorization`, `Impersonate-*`, `User-Agent` and the
    /// framing headers (`Content-Length`, `Transfer-Encoding`, `Host`, `Connection`) are
    /// refused at send time: they come from the client's configuration or the HTTP stack.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        match name.to_ascii_lowercase().as_str() {
            "content-type" => self.content_type = Some(value.to_owned()),
            "accept" => self.accept = Some(value.to_owned()),
            _ => self.headers.push((name.to_owned(), value.to_owned())),
        }
        self
    }

    /// Sets the body's `Content-Type` (default with a body: `application/json`).
    pub fn content_type(mut self, media_type: &str) -> Self {
        self.content_type = Some(media_type.to_owned());
        self
    }

    /// Sets `Accept` (default `application/json`), e.g.
    /// `application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1`.
    pub fn accept(mut self, media_type: &str) -> Self {
        self.accept = Some(media_type.to_owned());
        self
    }

    /// Sets the body's bytes.
    pub fn body(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.body = Some(bytes.into());
        self
    }

    /// Sets the body to `value` as JSON (and the content type to `application/json` unless
    /// one was set). A value that cannot be encoded fails the send with
    /// [`Error::InvalidInput`].
    pub fn json<T: Serialize + ?Sized>(mut self, value: &T) -> Self {
        match serde_json::to_vec(value) {
            Ok(bytes) => self.body = Some(bytes),
            Err(e) => self.invalid = Some(format!("encoding the body: {e}")),
        }
        self
    }

    /// For [`lines`](Self::lines): the stream counts as dead after this long without a byte
    /// from the server (default: no bound but the client's cancellation token). Meant for
    /// watches with bookmarks, which hear from the server about once a minute.
    pub fn idle_timeout(mut self, idle: Duration) -> Self {
        self.idle = Some(idle);
        self
    }

    /// `GET /api/v1/pods`: how errors name this request.
    fn describe(&self) -> String {
        describe(&self.method, &self.path_and_query)
    }

    fn check(&self) -> Result<()> {
        let problem = if let Some(p) = &self.invalid {
            Some(p.clone())
        } else if !self.path_and_query.starts_with('/') {
            Some("the path must start with '/'".to_owned())
        } else if let Some((n, _)) = self.headers.iter().find(|(n, _)| {
            let n = n.to_ascii_lowercase();
            n == "authorization" || n.starts_with("impersonate-") || FRAMING.contains(&n.as_str())
        }) {
            Some(format!(
                "header {n:?} is set by the client (its configuration or the HTTP framing), not by a request"
            ))
        } else {
            None
        };
        match problem {
            Some(p) => Err(Error::InvalidInput(format!("{}: {p}", self.describe()))),
            None => Ok(()),
        }
    }

    fn outgoing(&self, bound: Bound) -> Outgoing<'_> {
        Outgoing {
            method: self.method.clone(),
            path_and_query: &self.path_and_query,
            body: self.body.as_deref().map(|bytes| SendBody {
                bytes,
                content_type: self.content_type.as_deref().unwrap_or(JSON),
            }),
            accept: self.accept.as_deref().unwrap_or(JSON),
            headers: &self.headers,
            bound,
        }
    }

    /// Sends the request and reads the whole answer. A 2xx answer is returned; any other
    /// is [`Error::Api`] with the server's `Status` (after the client's retries).
    pub fn send(self) -> Result<Response> {
        self.check()?;
        let (parts, body) = self
            .client
            .fetch(&self.outgoing(Bound::Request), Vec::new())?;
        Ok(Response {
            request: self.describe(),
            warnings: warnings_of(&parts.headers),
            status: parts.status.as_u16(),
            headers: parts.headers,
            body,
        })
    }

    /// Sends the request and decodes a 2xx answer's JSON body as `T`.
    pub fn send_json<T: DeserializeOwned>(self) -> Result<T> {
        self.send()?.json()
    }

    /// Sends the request and streams the answer line by line (a watch of anything). The
    /// request has its own connection, no overall timeout (see
    /// [`idle_timeout`](Self::idle_timeout)) and ends when the client's
    /// [`Cancel`](super::Cancel) fires or [`Lines::canceller`] is used.
    pub fn lines(self) -> Result<Lines> {
        self.check()?;
        let request = self.describe();
        let agent = self.client.watch_agent(None, self.idle, &request)?;
        // Registered before connecting: cancelling ends the wait for the headers too.
        let attached = self.client.attach_agent(&agent, &request)?;
        let res = self.client.send(&agent, &self.outgoing(Bound::Agent))?;
        let canceller = WatchCanceller::new(agent, attached, self.client.cancel_token().cloned());
        Ok(Lines::new(
            res.into_body().into_reader(),
            request,
            canceller,
        ))
    }
}

/// A 2xx answer whose body is read as it comes, on a connection of its own (pod logs).
pub(crate) struct Streamed {
    pub(crate) status: u16,
    pub(crate) body: ureq::BodyReader<'static>,
    pub(crate) canceller: WatchCanceller,
    pub(crate) request: String,
}

impl Request {
    /// Sends the request and hands back a 2xx answer's status and its body unread, as
    /// [`lines`](Self::lines) does but without the line framing (a pod's log has lines of
    /// its own rules: blank ones count, long ones are split).
    pub(crate) fn stream(self) -> Result<Streamed> {
        self.check()?;
        let request = self.describe();
        let agent = self.client.watch_agent(None, self.idle, &request)?;
        let attached = self.client.attach_agent(&agent, &request)?;
        let res = self.client.send(&agent, &self.outgoing(Bound::Agent))?;
        let canceller = WatchCanceller::new(agent, attached, self.client.cancel_token().cloned());
        Ok(Streamed {
            status: res.status().as_u16(),
            body: res.into_body().into_reader(),
            canceller,
            request,
        })
    }
}

/// A 2xx answer read whole: status, headers, body bytes and the server's warnings.
#[derive(Clone)]
pub struct Response {
    request: String,
    status: u16,
    headers: http::HeaderMap,
    body: Vec<u8>,
    warnings: Vec<Warning>,
}

impl std::fmt::Debug for Response {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The body may be a Secret: its length only.
        f.debug_struct("Response")
            .field("request", &self.request)
            .field("status", &self.status)
            .field("body", &format_args!("{} bytes", self.body.len()))
            .field("warnings", &self.warnings)
            .finish()
    }
}

impl Response {
    /// The HTTP status code (2xx).
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The response headers.
    pub fn headers(&self) -> &http::HeaderMap {
        &self.headers
    }

    /// The first value of a header, if it is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The body's bytes.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// The body's bytes, taken.
    pub fn into_body(self) -> Vec<u8> {
        self.body
    }

    /// The warnings of the `Warning:` headers, in order (see [`Warning`]).
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// The request this answers, e.g. `POST /api/v1/namespaces/lab/configmaps`.
    pub fn request(&self) -> &str {
        &self.request
    }

    /// Decodes the body as JSON (an error names the request, never quotes the body).
    pub fn json<T: DeserializeOwned>(&self) -> Result<T> {
        decode_json(&self.request, &self.body, "response")
    }
}
