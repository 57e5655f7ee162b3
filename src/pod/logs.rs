//! A pod's logs: `GET /api/v1/namespaces/{ns}/pods/{name}/log`, typed.
//!
//! [`LogParams`] holds kubectl's choices (container, follow, previous, since, tail,
//! timestamps, limit); [`Api::logs`] reads a whole log into a `String`, [`Api::log_stream`]
//! hands it out line by line as it comes ([`LogStream`]), and with `follow` it **resumes**
//! where a dropped stream stopped (see [`LogStream`] for exactly what is guaranteed).
//!
//! What the wire does (captured from kube-apiserver 1.36.2, `tests/fixtures/pod-io/`):
//! `200 text/plain`, chunked as the kubelet flushes (not at line ends); a pod with no node
//! answers `204 No Content` with no body; the container choices are `400` Status messages,
//! read into [`PodError`](super::PodError)s; `sinceTime` is accepted with nanoseconds but
//! reaches the kubelet at whole seconds.

use std::time::SystemTime;

use ureq::http::Method;

use super::error::PodError;
use super::log_stream::LogStream;
use super::timestamp::LogTime;
use crate::api::Object;
use crate::client::{Api, Client, Streamed};
use crate::error::{Error, Result};

/// What to read of a pod's log (the query of `pods/{name}/log`, kubectl's `logs` flags).
///
/// ```
/// use kube_informer::pod::LogParams;
/// let p = LogParams::default().container("app").tail_lines(10).timestamps();
/// assert_eq!(p.query(), "?container=app&tailLines=10&timestamps=true");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogParams {
    /// The container (required when the pod has several).
    pub container: Option<String>,
    /// Keep the stream open and send lines as they are written ([`Api::log_stream`] only:
    /// [`Api::logs`] ignores it, a whole log needs an end).
    pub follow: bool,
    /// The previous (terminated) instance of the container. Its log cannot grow: a follow
    /// of it ends at its end.
    pub previous: bool,
    /// Only lines written in the last this many seconds (at least 1; not with
    /// `since_time`: the server refuses both).
    pub since_seconds: Option<u64>,
    /// Only lines written at or after this time (the kubelet sees it at whole seconds).
    pub since_time: Option<SystemTime>,
    /// Only the last this many lines.
    pub tail_lines: Option<u64>,
    /// Each line starts with its RFC 3339 time with nanoseconds and a space.
    pub timestamps: bool,
    /// At most this many bytes (the cut may fall mid-line; at least 1).
    pub limit_bytes: Option<u64>,
    /// Let kube-apiserver skip verifying the kubelet's serving certificate.
    pub insecure_skip_tls_verify_backend: bool,
    /// With `follow`: do not reconnect when the stream drops, end there as kubectl does
    /// (default `false`: a follow resumes after a drop, see [`LogStream`]).
    pub no_resume: bool,
    /// [`Api::log_stream`] only: lines longer than this many bytes are split into pieces
    /// (default [`DEFAULT_MAX_LINE`]; 0 counts as 1); each piece is a [`LogLine`] marked
    /// `partial` but the last. The bytes counted are the ones handed out: the time in
    /// front when [`timestamps`](Self::timestamps) was asked for, never the time a resuming
    /// follow asks for for itself. [`Api::logs`] returns the whole text.
    pub max_line: Option<usize>,
}

/// The longest line handed out whole: longer ones are split (see [`LogLine::partial`]).
pub const DEFAULT_MAX_LINE: usize = 1 << 20;

impl LogParams {
    /// Sets the container.
    pub fn container(mut self, name: &str) -> Self {
        self.container = Some(name.to_owned());
        self
    }
    /// Follows the log.
    pub fn follow(mut self) -> Self {
        self.follow = true;
        self
    }
    /// Reads the previous instance's log.
    pub fn previous(mut self) -> Self {
        self.previous = true;
        self
    }
    /// Lines of the last `seconds` only.
    pub fn since_seconds(mut self, seconds: u64) -> Self {
        self.since_seconds = Some(seconds);
        self
    }
    /// Lines from `time` on.
    pub fn since_time(mut self, time: SystemTime) -> Self {
        self.since_time = Some(time);
        self
    }
    /// The last `n` lines only.
    pub fn tail_lines(mut self, n: u64) -> Self {
        self.tail_lines = Some(n);
        self
    }
    /// Prefixes each line with its time.
    pub fn timestamps(mut self) -> Self {
        self.timestamps = true;
        self
    }
    /// At most `n` bytes.
    pub fn limit_bytes(mut self, n: u64) -> Self {
        self.limit_bytes = Some(n);
        self
    }
    /// With `follow`, ends at the first drop instead of resuming (kubectl's behaviour).
    pub fn no_resume(mut self) -> Self {
        self.no_resume = true;
        self
    }
    /// Splits lines longer than `bytes` (at least 1).
    pub fn max_line(mut self, bytes: usize) -> Self {
        self.max_line = Some(bytes.max(1));
        self
    }

    /// The query string (`?container=app&follow=true...`, empty when nothing is set), in
    /// the order kubectl sends the parameters.
    pub fn query(&self) -> String {
        let mut pairs: Vec<(&str, String)> = Vec::new();
        if let Some(c) = &self.container {
            pairs.push(("container", c.clone()));
        }
        if self.follow {
            pairs.push(("follow", "true".into()));
        }
        if self.insecure_skip_tls_verify_backend {
            pairs.push(("insecureSkipTLSVerifyBackend", "true".into()));
        }
        if let Some(n) = self.limit_bytes {
            pairs.push(("limitBytes", n.to_string()));
        }
        if self.previous {
            pairs.push(("previous", "true".into()));
        }
        if let Some(s) = self.since_seconds {
            pairs.push(("sinceSeconds", s.to_string()));
        }
        if let Some(t) = self.since_time {
            let t = LogTime::from_system_time(t);
            let text = if t.nanos == 0 {
                t.to_rfc3339_secs()
            } else {
                t.to_rfc3339_nanos()
            };
            pairs.push(("sinceTime", text));
        }
        if let Some(n) = self.tail_lines {
            pairs.push(("tailLines", n.to_string()));
        }
        if self.timestamps {
            pairs.push(("timestamps", "true".into()));
        }
        let mut q = String::new();
        for (k, v) in pairs {
            q.push(if q.is_empty() { '?' } else { '&' });
            q.push_str(k);
            q.push('=');
            crate::api::url_encoding::percent_encode(&v, &mut q);
        }
        q
    }
}

/// One line of a log (without its newline), or one piece of a line longer than the bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogLine {
    /// The line's time, when it was read with timestamps (asked for, or used inside a
    /// resuming follow).
    pub timestamp: Option<LogTime>,
    /// The bytes, as the container wrote them (with the time and its space in front when
    /// [`LogParams::timestamps`] was asked for, as kubectl prints them).
    pub bytes: Vec<u8>,
    /// True for a piece of a longer line that goes on in the next item.
    pub partial: bool,
    /// True when no newline followed these bytes in the log and nothing follows them: the
    /// log's last line, which the container wrote without one (`printf done`), or a line
    /// `limit_bytes` cut. kubectl prints such a line as it is; a program writing the log
    /// out byte for byte adds a newline after every item that is neither `partial` nor
    /// `unterminated`, and after these none.
    pub unterminated: bool,
}

impl LogLine {
    /// The bytes as text (invalid UTF-8 replaced).
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.bytes)
    }
}

/// The path of a pod's log.
pub(crate) fn log_path<K: Object>(api: &Api<K>, name: &str) -> Result<String> {
    let ns = api.namespace().ok_or_else(|| {
        Error::InvalidInput("pod logs need a namespace: use Api::namespaced".into())
    })?;
    pod_path(api.client(), ns, name).map(|p| format!("{p}/log"))
}

/// `/api/v1/namespaces/{ns}/pods/{name}`, each segment checked.
pub(crate) fn pod_path(_client: &Client, ns: &str, name: &str) -> Result<String> {
    for (what, v) in [("namespace", ns), ("pod name", name)] {
        if v.is_empty() || v.contains('/') || v == "." || v == ".." || v.contains('?') {
            return Err(Error::InvalidInput(format!("{what} {v:?} is not a name")));
        }
    }
    Ok(format!("/api/v1/namespaces/{ns}/pods/{name}"))
}

/// Sends one log request; a 204 is the typed "not scheduled", a Status naming a choice a
/// [`PodError`].
pub(crate) fn open(client: &Client, path: &str, query: &str, pod: &str) -> Result<Streamed> {
    let res = client
        .request(Method::GET, &format!("{path}{query}"))
        .accept("*/*")
        .stream()
        .map_err(|e| typed(e, pod))?;
    if res.status == 204 {
        res.canceller.cancel();
        return Err(Error::Pod {
            request: res.request,
            error: PodError::NotScheduled {
                pod: pod.to_owned(),
            },
            status: None,
        });
    }
    Ok(res)
}

/// An API failure naming a choice, as [`Error::Pod`].
pub(crate) fn typed(e: Error, pod: &str) -> Error {
    match e {
        Error::Api { request, status } => match PodError::from_status(pod, &status) {
            Some(error) => Error::Pod {
                request,
                error,
                status: Some(status),
            },
            None => Error::Api { request, status },
        },
        e => e,
    }
}

impl<K: Object> Api<K> {
    /// A pod's whole log as text (invalid UTF-8 replaced), as `kubectl logs` prints it.
    /// `follow` is ignored (a whole log needs an end). A pod with no node is
    /// [`PodError::NotScheduled`]; the container choices are the other [`PodError`]s.
    ///
    /// ```
    /// use kube_informer::api::{ApiResource, DynamicObject};
    /// use kube_informer::pod::{LogParams, PodError};
    /// use kube_informer::testing::ApiServer;
    /// use kube_informer::{Api, Client};
    ///
    /// let server = ApiServer::start();
    /// server.add_pod("lab", "web", &["app", "sidecar"]).unwrap();
    /// server.append_log("lab", "web", "app", "hello");
    /// let pods: Api<DynamicObject> = Api::namespaced_with(
    ///     Client::new(server.client_config())?, "lab", &ApiResource::new("", "v1", "Pod", "pods", true));
    /// assert_eq!(pods.logs("web", &LogParams::default().container("app"))?, "hello\n");
    /// let err = pods.logs("web", &LogParams::default()).unwrap_err();
    /// assert!(matches!(err.pod_error(), Some(PodError::ContainerRequired { containers, .. }) if containers.len() == 2));
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn logs(&self, name: &str, params: &LogParams) -> Result<String> {
        let mut p = params.clone();
        p.follow = false;
        let path = log_path(self, name)?;
        let res = open(self.client(), &path, &p.query(), name)?;
        let mut body = Vec::new();
        let mut reader = res.body;
        std::io::Read::read_to_end(&mut reader, &mut body).map_err(|source| {
            if res.canceller.is_cancelled() {
                Error::Cancelled {
                    request: res.request.clone(),
                }
            } else {
                Error::Io {
                    request: res.request.clone(),
                    source,
                }
            }
        })?;
        Ok(String::from_utf8_lossy(&body).into_owned())
    }

    /// A pod's log line by line as it comes: a blocking iterator (see [`LogStream`]). With
    /// `follow` it stays open while the container runs and resumes after a dropped
    /// connection. The first request is made here, so a container choice or a missing pod
    /// is this call's error.
    pub fn log_stream(&self, name: &str, params: &LogParams) -> Result<LogStream> {
        let path = log_path(self, name)?;
        LogStream::start(self.client().clone(), path, name.to_owned(), params.clone())
    }
}
