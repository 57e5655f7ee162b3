//! [`LogStream`]: a pod's log as a blocking iterator of lines, and the follow that resumes.
//!
//! kubectl's `logs -f` ends when its one HTTP response ends: a kube-apiserver restart, an
//! idle proxy or load balancer, a kubelet restart all end it, silently or with an error. A
//! [`LogStream`] made with `follow` (and not [`no_resume`](super::LogParams::no_resume))
//! reconnects instead, from the last line's time, and delivers neither a line twice nor a
//! line less — see *Guarantee* on [`LogStream`].
//!
//! Memory is bounded: a line longer than [`LogParams::max_line`](super::LogParams::max_line)
//! comes out in pieces (each a [`LogLine`] with `partial`), never buffered whole.

use std::io::{BufRead, BufReader};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;
use ureq::http::Method;
use ureq::BodyReader;

use super::log_resume::ResumeCursor;
use super::logs::{open, LogLine, LogParams, DEFAULT_MAX_LINE};
use super::timestamp::{split_timestamp, LogTime};
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
/// # Following, and resuming
///
/// With [`LogParams::follow`] the stream stays open while the container runs. When the
/// response ends cleanly, the stream reads the pod: if the container terminated (or the pod
/// finished), one last plain read from the last delivered line catches what was written
/// meanwhile, and the iteration ends; a pod that is gone ends it too. Otherwise, and after
/// every drop, it reconnects after a back-off with jitter (100 ms doubling to 5 s), asking
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
/// the stream resumes from the whole second (client clock) it first connected at; otherwise
/// it repeats its first request without `tailLines` (nothing was delivered, so nothing is
/// repeated). `limitBytes` is applied by the stream itself while resuming (to the bytes it
/// delivers, newlines counted, as the kubelet counts them).
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
    reader: Option<BufReader<BodyReader<'static>>>,
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

/// How reading one piece ended.
enum Piece {
    /// A whole line (or the last piece of one) is in the buffer.
    Line,
    /// The bound was reached: the line goes on.
    Partial,
    /// The body ended cleanly with nothing pending.
    End,
    /// The body ended in the middle of a line (what came is in the buffer).
    Truncated,
}

fn read_piece(
    r: &mut BufReader<BodyReader<'static>>,
    out: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Piece> {
    out.clear();
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(if out.is_empty() {
                Piece::End
            } else {
                Piece::Truncated
            });
        }
        let room = max - out.len();
        let window = &buf[..buf.len().min(room)];
        if let Some(i) = window.iter().position(|&b| b == b'\n') {
            out.extend_from_slice(&window[..i]);
            r.consume(i + 1);
            return Ok(Piece::Line);
        }
        let n = window.len();
        out.extend_from_slice(window);
        r.consume(n);
        if out.len() >= max {
            // A line of exactly `max` bytes is whole if its newline comes next.
            let next = r.fill_buf()?;
            if next.first() == Some(&b'\n') {
                r.consume(1);
                return Ok(Piece::Line);
            }
            return Ok(Piece::Partial);
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
        self.reader = Some(BufReader::with_capacity(64 * 1024, res.body));
        self.continuing = None;
        if self.reconnecting {
            self.cursor.reconnected();
            if !self.final_pass {
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
        ["containerStatuses", "initContainerStatuses"]
            .iter()
            .filter_map(|k| pod.pointer(&format!("/status/{k}")))
            .filter_map(Value::as_array)
            .flatten()
            .filter(|s| s.get("name").and_then(Value::as_str) == Some(name.as_str()))
            .any(|s| s.pointer("/state/terminated").is_some())
    }

    /// The connection ended (cleanly or not): end, or get ready to reconnect.
    ///
    /// Only a clean end can be the log's end, and only once the pod says the container
    /// terminated; even then one last read (not a follow) from the last delivered line picks
    /// up what the container wrote between the two. A drop always reconnects: the
    /// container may have written more before it ended.
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
        if self.final_pass {
            self.done = true;
            return None;
        }
        if error.is_none() && self.container_done() {
            self.final_pass = true;
        }
        self.reconnecting = true;
        None
    }

    /// Turns one piece into the caller's line, or `None` when it was delivered before.
    fn deliver(&mut self, mut bytes: Vec<u8>, partial: bool) -> Option<LogLine> {
        let first_piece = self.continuing.is_none();
        let timed = self.resume || self.params.timestamps;
        let (time, body_start) = if !timed {
            (None, 0)
        } else if first_piece {
            match split_timestamp(&bytes) {
                Some((t, rest)) => (Some(t), bytes.len() - rest.len()),
                None => (None, 0),
            }
        } else {
            (self.continuing.flatten(), 0)
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
        if let (true, Some(limit)) = (self.resume, self.params.limit_bytes) {
            let left = limit.saturating_sub(self.delivered);
            let cost = bytes.len() as u64 + u64::from(!partial);
            if cost >= left {
                bytes.truncate(left.min(bytes.len() as u64) as usize);
                self.done = true;
                partial = false;
                if let Some(c) = self.stop.current.lock().take() {
                    c.cancel();
                }
                self.reader = None;
                if bytes.is_empty() {
                    return None;
                }
            }
            self.delivered += cost;
        }
        Some(LogLine {
            timestamp: time,
            bytes,
            partial,
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
            match read_piece(reader, &mut buf, self.max_line) {
                Ok(Piece::Line) => {
                    if let Some(line) = self.deliver(std::mem::take(&mut buf), false) {
                        self.backoff.reset();
                        return Some(Ok(line));
                    }
                }
                Ok(Piece::Partial) => {
                    if let Some(line) = self.deliver(std::mem::take(&mut buf), true) {
                        self.backoff.reset();
                        return Some(Ok(line));
                    }
                }
                Ok(Piece::Truncated) if !self.resume => {
                    // A last line without a newline (`limitBytes` cuts mid-line): it is
                    // the end of what the server sends.
                    let line = self.deliver(std::mem::take(&mut buf), false);
                    self.reader = None;
                    self.done = true;
                    return line.map(Ok);
                }
                Ok(Piece::Truncated) => {
                    // Cut by a drop: read again whole after the reconnect.
                    if let Some(r) = self.ended(None) {
                        return Some(r);
                    }
                }
                Ok(Piece::End) => {
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
