//! [`LogStream`]: a pod's log as a blocking iterator of lines, and the follow that resumes.
//!
//! kubectl's `logs -f` ends when its one HTTP response ends: a kube-apiserver restart, an
//! idle proxy or load balancer, a kubelet restart all end it, silently or with an error. A
//! [`LogStream`] made with `follow` (and not [`no_resume`](super::LogParams::no_resume))
//! reconnects instead, from the last line's time, and delivers neither a line twice nor a
//! line less — see *Guarantee* on [`LogStream`].
//!
//! Memory is bounded: a line longer than [`LogParams::max_line`](super::LogParams::max_line)
//! comes out in pieces (each a [`LogLine`] with `partial`), never buffered whole (the
//! cutting is `log_lines.rs`'s; which lines were already delivered, `log_resume.rs`'s).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;
use ureq::http::Method;
use ureq::BodyReader;

use super::log_lines::{LineReader, Piece, Stamp};
use super::log_resume::ResumeCursor;
use super::logs::{open, LogLine, LogParams, DEFAULT_MAX_LINE};
use super::timestamp::LogTime;
use crate::cache::Backoff;
use crate::client::{Client, WatchCanceller};
use crate::error::{Error, Result};

/// A pod's log, line by line as the server sends it: from
/// [`Api::log_stream`](crate::Api::log_stream).
///
/// Each item is one line without its newline (blank lines included), or an error. The
/// iterator blocks while the server is quiet; it ends (`None`) when the log ends, when
/// [`LogStopper::stop`] is called from another thread, or when the client's
/// [`Cancel`](crate::client::Cancel) token fires.
///
/// A line is handed out when its newline arrives (or, piece by piece, when it reaches
/// [`LogParams::max_line`]). The log's last line may have no newline (`printf done`): it is
/// handed out when the log ends, as kubectl prints it. While a follow waits, text without a
/// newline yet is not handed out.
///
/// # Following, and resuming
///
/// With [`LogParams::follow`] the stream stays open while the container runs. When the
/// response ends cleanly, the stream reads the pod: if the container terminated (its status
/// in `containerStatuses`, `initContainerStatuses` or, for `kubectl debug`'s,
/// `ephemeralContainerStatuses`), or the pod finished, one last plain read from the last
/// delivered line catches what was written meanwhile, and the iteration ends; a pod that is
/// gone ends it too. A drop during that last read reads again (it never ends the stream
/// quietly). With [`LogParams::previous`] the log is the old instance's, which cannot grow:
/// its clean end is the end. Otherwise, and after every drop, it reconnects after a
/// back-off with jitter (100 ms doubling to 5 s), asking
/// with `timestamps=true` (stripped again unless you asked for them) and `sinceTime` = the
/// last delivered line's time. Transient failures (5xx, 429, connection errors) are retried
/// the same way, for as long as it takes: stop it with [`LogStopper`] or the client's token.
///
/// **Guarantee.** The kubelet applies `sinceTime` at whole seconds, so the new stream repeats
/// the start of that second. Lines timed before the last delivered line's exact
/// (nanosecond) time are skipped; at that exact time, as many lines are skipped as were
/// delivered with it, each checked by its content — identical lines with identical
/// nanosecond times are told apart by their count. Everything after is delivered. This holds
/// while the container's log is append-only with non-decreasing times, as the kubelet writes
/// it. It cannot hold, and is not claimed, when the log rotated away lines the stream had
/// not read yet before the reconnect, when the container restarted meanwhile (the lines its
/// old instance wrote after the drop are in `previous`), or for a line cut by the drop (it
/// is read again whole from the new stream).
///
/// Before the first line is delivered there is no time to resume from: with `tailLines=0`
/// the stream resumes from the whole second (client clock) it first connected at; with
/// `sinceSeconds=N`, from the time of its first request minus N (client clock; the kubelet
/// rounds it down to the second), so an outage longer than N seconds loses nothing;
/// otherwise it repeats its first request without `tailLines` (nothing was delivered, so
/// nothing is repeated). `limitBytes` is applied by the stream itself while resuming (to the
/// bytes it delivers, newlines counted, as the kubelet counts them), and so is `max_line`:
/// the time the stream asks for for itself is neither counted nor handed out.
///
/// ```
/// use kube_informer::api::{ApiResource, DynamicObject};
/// use kube_informer::pod::LogParams;
/// use kube_informer::testing::ApiServer;
/// use kube_informer::{Api, Client};
///
/// let server = ApiServer::start();
/// server.add_pod("lab", "web", &["app"]).unwrap();
/// server.append_log("lab", "web", "app", "one");
/// let pods: Api<DynamicObject> = Api::namespaced_with(
///     Client::new(server.client_config())?, "lab", &ApiResource::new("", "v1", "Pod", "pods", true));
/// let mut lines = pods.log_stream("web", &LogParams::default().follow())?;
/// assert_eq!(lines.next().unwrap()?.text(), "one");
/// server.drop_log_streams(); // a kubelet restart: the stream drops...
/// server.append_log("lab", "web", "app", "two");
/// assert_eq!(lines.next().unwrap()?.text(), "two"); // ...and resumes, "one" not repeated
/// server.terminate_container("lab", "web", "app", 0);
/// assert!(lines.next().is_none()); // the container ended: so does the stream
/// # Ok::<(), kube_informer::Error>(())
/// ```
pub struct LogStream {
    client: Client,
    path: String,
    pod: String,
    params: LogParams,
    resume: bool,
    max_line: usize,
    reader: Option<LineReader<BodyReader<'static>>>,
    request: String,
    stop: Arc<StopState>,
    cursor: ResumeCursor,
    /// The time of the line whose pieces are being read (after a `partial` piece).
    continuing: Option<Option<LogTime>>,
    /// Bytes delivered, for a `limitBytes` the stream applies itself.
    delivered: u64,
    started_at: LogTime,
    backoff: Backoff,
    done: bool,
    /// Set when the next connection is a reconnect (wait first).
    reconnecting: bool,
    /// The container is over: the next read is the last, without `follow`.
    final_pass: bool,
    /// The next connection is a reconnect after a drop or an early end (counted in
    /// `reconnects`; the last read after the container ended is not).
    after_drop: bool,
}

impl std::fmt::Debug for LogStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogStream")
            .field("request", &self.request)
            .field("resume", &self.resume)
            .field("reconnects", &self.reconnects())
            .field("done", &self.done)
            .finish()
    }
}

#[derive(Debug, Default)]
struct StopState {
    stopped: AtomicBool,
    current: Mutex<Option<WatchCanceller>>,
    reconnects: AtomicU64,
}

/// Ends a [`LogStream`] from another thread (cheap to clone).
#[derive(Clone, Debug)]
pub struct LogStopper {
    state: Arc<StopState>,
}

impl LogStopper {
    /// Ends the stream: a blocked `next` returns `None` promptly, and no reconnect follows.
    pub fn stop(&self) {
        self.state.stopped.store(true, Ordering::SeqCst);
        if let Some(c) = self.state.current.lock().as_ref() {
            c.cancel();
        }
    }
}

impl LogStream {
    pub(crate) fn start(
        client: Client,
        path: String,
        pod: String,
        params: LogParams,
    ) -> Result<LogStream> {
        let resume = params.follow && !params.no_resume;
        let mut s = LogStream {
            max_line: params.max_line.unwrap_or(DEFAULT_MAX_LINE).max(1),
            client,
            path,
            pod,
            params,
            resume,
            reader: None,
            request: String::new(),
            stop: Arc::default(),
            cursor: ResumeCursor::default(),
            continuing: None,
            delivered: 0,
            started_at: LogTime::from_system_time(std::time::SystemTime::now()),
            backoff: Backoff::new(
                Duration::from_millis(100),
                Duration::from_secs(5),
                Duration::from_secs(60),
            ),
            done: false,
            reconnecting: false,
            final_pass: false,
            after_drop: false,
        };
        s.connect()?;
        Ok(s)
    }

    /// A handle that ends this stream from another thread.
    pub fn stopper(&self) -> LogStopper {
        LogStopper {
            state: self.stop.clone(),
        }
    }

    /// How many times the stream reconnected after a drop (the last read after the
    /// container ended is not counted).
    pub fn reconnects(&self) -> u64 {
        self.stop.reconnects.load(Ordering::SeqCst)
    }

    /// The request of the current (or last) connection, e.g.
    /// `GET /api/v1/namespaces/lab/pods/web/log?follow=true&timestamps=true`.
    pub fn request(&self) -> &str {
        &self.request
    }

    fn stopped(&self) -> bool {
        self.stop.stopped.load(Ordering::SeqCst)
            || self.client.cancel_token().is_some_and(|c| c.is_cancelled())
    }

    /// The query of the next request: the caller's at first; when resuming, from the last
    /// delivered line's second.
    fn query(&self) -> String {
        let mut p = self.params.clone();
        if !self.resume {
            return p.query();
        }
        p.timestamps = true;
        p.limit_bytes = None;
        p.follow = !self.final_pass;
        if self.reconnecting {
            if let Some(last) = self.cursor.last() {
                p.tail_lines = None;
                p.since_seconds = None;
                p.since_time = Some(last.whole_second().to_system_time());
            } else if p.tail_lines == Some(0) {
                p.tail_lines = None;
                p.since_seconds = None;
                p.since_time = Some(self.started_at.whole_second().to_system_time());
            } else {
                p.tail_lines = None;
                if let Some(secs) = p.since_seconds.take() {
                    // The first request's window, not one that moves with each reconnect.
                    let from = self
                        .started_at
                        .to_system_time()
                        .checked_sub(Duration::from_secs(secs))
                        .unwrap_or(std::time::UNIX_EPOCH);
                    p.since_time = Some(from);
                }
            }
        }
        p.query()
    }

    fn connect(&mut self) -> Result<()> {
        let query = self.query();
        let res = open(&self.client, &self.path, &query, &self.pod)?;
        self.request = res.request;
        *self.stop.current.lock() = Some(res.canceller.clone());
        if self.stopped() {
            res.canceller.cancel();
        }
        self.reader = Some(LineReader::new(res.body));
        self.continuing = None;
        if self.reconnecting {
            self.cursor.reconnected();
            if std::mem::take(&mut self.after_drop) {
                self.stop.reconnects.fetch_add(1, Ordering::SeqCst);
            }
        }
        Ok(())
    }

    /// Waits `d` unless stopped first; true when stopped.
    fn pause(&self, d: Duration) -> bool {
        let deadline = std::time::Instant::now() + d;
        loop {
            if self.stopped() {
                return true;
            }
            let now = std::time::Instant::now();
            if now >= deadline {
                return false;
            }
            std::thread::sleep((deadline - now).min(Duration::from_millis(50)));
        }
    }

    /// Whether the followed container is over (terminated, the pod finished or gone): then
    /// a stream that ended is the log's end.
    fn container_done(&self) -> bool {
        let pod: Value = match self
            .client
            .request(Method::GET, &self.path[..self.path.len() - "/log".len()])
            .send_json()
        {
            Ok(v) => v,
            Err(e) => return e.is_not_found(),
        };
        if matches!(
            pod.pointer("/status/phase").and_then(Value::as_str),
            Some("Succeeded" | "Failed")
        ) {
            return true;
        }
        let name = match &self.params.container {
            Some(c) => c.clone(),
            None => match pod
                .pointer("/spec/containers/0/name")
                .and_then(Value::as_str)
            {
                Some(n) => n.to_owned(),
                None => return false,
            },
        };
        [
            "containerStatuses",
            "initContainerStatuses",
            "ephemeralContainerStatuses",
        ]
        .iter()
        .filter_map(|k| pod.pointer(&format!("/status/{k}")))
        .filter_map(Value::as_array)
        .flatten()
        .filter(|s| s.get("name").and_then(Value::as_str) == Some(name.as_str()))
        .any(|s| s.pointer("/state/terminated").is_some())
    }

    /// Whether a clean end of the current body is the log's end: the last read after the
    /// container ended, or the previous instance's log (it cannot grow).
    fn clean_end_is_final(&self) -> bool {
        self.final_pass || self.params.previous
    }

    /// The connection ended (cleanly or not): end, or get ready to reconnect.
    ///
    /// Only a clean end can be the log's end: of the last read, of the previous instance's
    /// log, or of a follow once the pod says the container terminated; in that last case
    /// one last read (not a follow) from the last delivered line picks up what the container
    /// wrote between the two. A drop always reconnects, the last read's too: the rest of
    /// the log is still to be read.
    fn ended(&mut self, error: Option<Error>) -> Option<Result<LogLine>> {
        self.reader = None;
        *self.stop.current.lock() = None;
        if self.stopped() {
            self.done = true;
            return None;
        }
        if !self.resume {
            self.done = true;
            return error.map(Err);
        }
        if error.is_none() {
            if self.clean_end_is_final() {
                self.done = true;
                return None;
            }
            if self.container_done() {
                self.final_pass = true;
            } else {
                self.after_drop = true;
            }
        } else {
            self.after_drop = true;
        }
        self.reconnecting = true;
        None
    }

    /// Turns one piece (with the time read in front of it, for a line's first piece) into
    /// the caller's line, or `None` when it was delivered before.
    fn deliver(
        &mut self,
        mut bytes: Vec<u8>,
        partial: bool,
        unterminated: bool,
        stamp: Stamp,
    ) -> Option<LogLine> {
        let (time, body_start) = match self.continuing {
            None => stamp.map_or((None, 0), |(t, len)| (Some(t), len)),
            Some(time) => (time, 0),
        };
        self.continuing = partial.then_some(time);
        if self.resume {
            if let Some(t) = time {
                if !self.cursor.admit(t, &bytes) {
                    return None;
                }
            }
        }
        if !self.params.timestamps && body_start > 0 {
            bytes.drain(..body_start);
        }
        let mut partial = partial;
        let mut unterminated = unterminated;
        if let (true, Some(limit)) = (self.resume, self.params.limit_bytes) {
            let left = limit.saturating_sub(self.delivered);
            let cost = bytes.len() as u64 + u64::from(!partial);
            if cost >= left {
                // Its newline is within the limit only if the whole line and it fit.
                unterminated |= partial || cost > left;
                bytes.truncate(left.min(bytes.len() as u64) as usize);
                self.done = true;
                partial = false;
                if let Some(c) = self.stop.current.lock().take() {
                    c.cancel();
                }
                self.reader = None;
                // Nothing of it fits. (An empty line whose newline fits exactly is
                // delivered: that newline is the last byte within the limit.)
                if bytes.is_empty() && unterminated {
                    return None;
                }
            }
            self.delivered += cost;
        }
        Some(LogLine {
            timestamp: time,
            bytes,
            partial,
            unterminated,
        })
    }
}

impl Iterator for LogStream {
    type Item = Result<LogLine>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut buf = Vec::new();
        loop {
            if self.done {
                return None;
            }
            if self.stopped() {
                self.done = true;
                return None;
            }
            if self.reader.is_none() {
                let delay = self.backoff.next_delay();
                if self.pause(delay) {
                    self.done = true;
                    return None;
                }
                match self.connect() {
                    Ok(()) => {}
                    Err(e) if self.stopped() || e.is_cancelled() => {
                        self.done = true;
                        return None;
                    }
                    Err(e) if e.is_not_found() => {
                        // The pod is gone: its log ended.
                        self.done = true;
                        return None;
                    }
                    Err(e) if e.is_transient() => continue,
                    Err(e) => {
                        self.done = true;
                        return Some(Err(e));
                    }
                }
            }
            let Some(reader) = self.reader.as_mut() else {
                continue;
            };
            // With timestamps (the caller's or the resume's own) a line's first piece starts
            // with its time; only the caller's counts against `max_line`.
            let timed = (self.resume || self.params.timestamps) && self.continuing.is_none();
            let free_prefix = self.resume && !self.params.timestamps;
            match reader.read_piece(&mut buf, self.max_line, timed, free_prefix) {
                Ok((Piece::Line, stamp)) => {
                    if let Some(line) = self.deliver(std::mem::take(&mut buf), false, false, stamp)
                    {
                        self.backoff.reset();
                        return Some(Ok(line));
                    }
                }
                Ok((Piece::Partial, stamp)) => {
                    if let Some(line) = self.deliver(std::mem::take(&mut buf), true, false, stamp) {
                        self.backoff.reset();
                        return Some(Ok(line));
                    }
                }
                Ok((Piece::Unterminated, stamp)) if !self.resume || self.clean_end_is_final() => {
                    // The body ended cleanly inside a line: the log's last line, written
                    // without a newline (`printf done`; or `limitBytes` cut it). kubectl
                    // prints it, and it is the end of what the server sends.
                    let line = self.deliver(std::mem::take(&mut buf), false, true, stamp);
                    self.reader = None;
                    *self.stop.current.lock() = None;
                    self.done = true;
                    return line.filter(|l| !l.bytes.is_empty()).map(Ok);
                }
                Ok((Piece::Unterminated, _)) => {
                    // A follow that ended inside a line: the line is read again whole (by
                    // the last read if the container is over, by the next follow if not).
                    if let Some(r) = self.ended(None) {
                        return Some(r);
                    }
                }
                Ok((Piece::End, _)) => {
                    if let Some(r) = self.ended(None) {
                        return Some(r);
                    }
                }
                Err(source) => {
                    let e = Error::Io {
                        request: self.request.clone(),
                        source,
                    };
                    if let Some(r) = self.ended(Some(e)) {
                        return Some(r);
                    }
                }
            }
        }
    }
}
