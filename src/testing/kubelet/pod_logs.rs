//! Pod logs as kube-apiserver 1.36 serves them from the kubelet, with a container log the
//! test writes to.
//!
//! `GET .../pods/{name}/log` answers as captured (`tests/fixtures/pod-io/logs-*.json`):
//! `200 text/plain`, chunked; validation first (`422 Invalid`, `PodLogOptions "p" is
//! invalid: ...`: `tailLines` < 0, `limitBytes` or `sinceSeconds` < 1, both `sinceSeconds`
//! and `sinceTime`, any `stream`); then the pod (`404`), the container choice (`400` "a
//! container name must be specified for pod p2, choose one of: [a b]", "container nope is
//! not valid for pod p"), a pod with no node (`204 No Content`, no body, no content type),
//! `previous` without a previous container (`400` "previous terminated container \"main\" in
//! pod \"p\" not found"). Lines are filtered by `sinceTime` **at whole seconds** (what the
//! kubelet receives from kube-apiserver, whatever fraction was sent) or `sinceSeconds`,
//! then `tailLines`; `timestamps` prefixes the fixed-width RFC 3339 time with nanoseconds;
//! `limitBytes` cuts mid-line. `follow` sends lines as they are appended and ends cleanly
//! when the container terminates.
//!
//! The test controls the container: [`ApiServer::append_log`] (now) and
//! [`ApiServer::append_log_at`] (a given time: several lines in one second, identical
//! lines), [`ApiServer::write_log`] (text without a newline at its end, as `printf done`
//! leaves it: the kubelet sends it without one, and the next write goes on in the same
//! line with no time of its own), [`ApiServer::set_previous_log`],
//! [`ApiServer::terminate_container`] (the status, in `containerStatuses`,
//! `initContainerStatuses` or `ephemeralContainerStatuses` as the spec lists the container,
//! says terminated; follows end), and [`ApiServer::drop_log_streams`]: a kubelet restart,
//! every follow cut without the end of its chunked body.
//!
//! Not modelled: stdout/stderr are one log (as the captured output interleaves them, no
//! stream marker); the kubelet's log rotation; a kubelet that is down (`500`, see
//! `down-logs.json`; inject a `Fault::Status` instead).

use std::collections::HashMap;
use std::io;
use std::time::{Duration, SystemTime};

use parking_lot::{Condvar, Mutex};
use serde_json::{json, Value};

use super::answers::{write_status, Outcome};
use super::db::Db;
use super::http::Request;
use super::peer::Peer;
use super::store::{not_found, TypeKey};
use crate::api::{Status, StatusCause, StatusDetails};
use crate::pod::LogTime;

/// Every container's log (see the [module docs](self)).
#[derive(Debug, Default)]
pub(crate) struct PodLogs {
    state: Mutex<LogsState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct LogsState {
    containers: HashMap<(String, String, String), ContainerLog>,
    /// Bumped by `drop_log_streams`: every open follow with an older value drops.
    drops: u64,
    /// Follow streams being served now.
    open: usize,
    /// Set by `cut_next_log`: the next answer's body is cut after this many bytes.
    cut_next: Option<usize>,
}

/// One write to the log: its time, its text, and whether a newline ends it (the kubelet's
/// CRI "full" or "partial" record).
type Entry = (LogTime, String, bool);

#[derive(Debug, Default)]
struct ContainerLog {
    lines: Vec<Entry>,
    previous: Option<Vec<Entry>>,
    terminated: bool,
}

/// What serving logs needs of the server beside the store: the logs. The server
/// implements it.
pub(crate) trait LogsHost: std::ops::Deref<Target = Db> {
    fn pod_logs(&self) -> &PodLogs;
}

fn key(ns: &str, pod: &str, container: &str) -> (String, String, String) {
    (ns.to_owned(), pod.to_owned(), container.to_owned())
}

/// The log side of `ApiServer`'s log methods (`serving/kubelet_api.rs` holds the public
/// ones and their docs); each wakes the follows it concerns.
impl PodLogs {
    /// Appends lines (one per `\n`-separated part) timed `time`.
    pub(crate) fn append_at(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        time: LogTime,
        text: &str,
    ) {
        let mut st = self.state.lock();
        let c = st
            .containers
            .entry(key(namespace, pod, container))
            .or_default();
        for line in text.split('\n') {
            c.lines.push((time, line.to_owned(), true));
        }
        drop(st);
        self.changed.notify_all();
    }

    /// Writes `text` timed now as a container's stdout does (the last part stays open).
    pub(crate) fn write(&self, namespace: &str, pod: &str, container: &str, text: &str) {
        let now = LogTime::from_system_time(SystemTime::now());
        let mut st = self.state.lock();
        let c = st
            .containers
            .entry(key(namespace, pod, container))
            .or_default();
        let mut parts = text.split('\n').peekable();
        while let Some(part) = parts.next() {
            let ended = parts.peek().is_some();
            if !ended && part.is_empty() {
                break;
            }
            c.lines.push((now, part.to_owned(), ended));
        }
        drop(st);
        self.changed.notify_all();
    }

    /// Sets the log of the container's previous instance.
    pub(crate) fn set_previous(&self, namespace: &str, pod: &str, container: &str, lines: &[&str]) {
        let now = LogTime::from_system_time(SystemTime::now());
        let mut st = self.state.lock();
        st.containers
            .entry(key(namespace, pod, container))
            .or_default()
            .previous = Some(lines.iter().map(|l| (now, (*l).to_owned(), true)).collect());
    }

    /// The container's log ends: every follow of it ends cleanly after the last line.
    pub(crate) fn terminate(&self, namespace: &str, pod: &str, container: &str) {
        self.state
            .lock()
            .containers
            .entry(key(namespace, pod, container))
            .or_default()
            .terminated = true;
        self.changed.notify_all();
    }

    /// Every follow being served drops at once.
    pub(crate) fn drop_streams(&self) {
        self.state.lock().drops += 1;
        self.changed.notify_all();
    }

    /// The next log answer is cut after `bytes` bytes of its body.
    pub(crate) fn cut_next(&self, bytes: usize) {
        self.state.lock().cut_next = Some(bytes);
    }

    /// How many follows are being served now.
    pub(crate) fn streams_open(&self) -> usize {
        self.state.lock().open
    }
}

/// Marks `container` terminated with `exit_code` in a pod's status (in the status list of
/// the spec list that names it; `containerStatuses` when none does), as the kubelet does.
pub(crate) fn terminated_status(p: &mut Value, container: &str, exit_code: i32) {
    let reason = if exit_code == 0 { "Completed" } else { "Error" };
    let state = json!({"terminated": {"exitCode": exit_code, "reason": reason,
        "finishedAt": super::store::rfc3339_now()}});
    let mut found = false;
    for list in STATUS_LISTS {
        if let Some(list) = p
            .pointer_mut(&format!("/status/{list}"))
            .and_then(Value::as_array_mut)
        {
            for s in list.iter_mut() {
                if s.get("name").and_then(Value::as_str) == Some(container) {
                    s["state"] = state.clone();
                    s["ready"] = json!(false);
                    found = true;
                }
            }
        }
    }
    if !found {
        if !p["status"].is_object() {
            p["status"] = json!({});
        }
        // The status list of the spec list that names the container.
        let list_name = [
            ("initContainers", "initContainerStatuses"),
            ("ephemeralContainers", "ephemeralContainerStatuses"),
        ]
        .into_iter()
        .find(|(spec, _)| names(p, spec).iter().any(|n| n == container))
        .map_or("containerStatuses", |(_, status)| status);
        let list = p["status"][list_name].take();
        let mut list = list.as_array().cloned().unwrap_or_default();
        list.push(json!({"name": container, "ready": false, "restartCount": 0, "state": state}));
        p["status"][list_name] = Value::Array(list);
    }
}

/// Where a pod's status lists its containers, by kind.
const STATUS_LISTS: [&str; 3] = [
    "containerStatuses",
    "initContainerStatuses",
    "ephemeralContainerStatuses",
];

fn invalid(pod: &str, causes: Vec<(&str, &str, String)>) -> Status {
    let parts: Vec<String> = causes
        .iter()
        .map(|(field, _, m)| format!("{field}: {m}"))
        .collect();
    let joined = if parts.len() == 1 {
        parts[0].clone()
    } else {
        format!("[{}]", parts.join(", "))
    };
    let mut st = Status::failure(
        422,
        "Invalid",
        format!("PodLogOptions {pod:?} is invalid: {joined}"),
    );
    st.details = Some(StatusDetails {
        name: Some(pod.to_owned()),
        kind: Some("PodLogOptions".into()),
        causes: causes
            .into_iter()
            .map(|(field, reason, message)| StatusCause {
                reason: reason.into(),
                message,
                field: field.into(),
            })
            .collect(),
        ..Default::default()
    });
    st
}

fn bad_request(message: String) -> Status {
    Status::failure(400, "BadRequest", message)
}

/// The query, checked as kube-apiserver validates `PodLogOptions`.
struct Options {
    container: Option<String>,
    follow: bool,
    previous: bool,
    since: Option<LogTime>,
    tail: Option<usize>,
    timestamps: bool,
    limit: Option<u64>,
}

fn options(req: &Request, pod: &str) -> Result<Options, Status> {
    let int = |name: &str| -> Result<Option<i64>, Status> {
        match req.param(name) {
            None => Ok(None),
            Some(v) => v
                .parse::<i64>()
                .map(Some)
                .map_err(|_| bad_request(format!("invalid {name}: {v:?} is not an integer"))),
        }
    };
    let (tail, limit, since_seconds) =
        (int("tailLines")?, int("limitBytes")?, int("sinceSeconds")?);
    let since_time = match req.param("sinceTime") {
        None => None,
        Some(v) => Some(LogTime::parse(v).ok_or_else(|| {
            bad_request(format!("invalid sinceTime: {v:?} is not an RFC 3339 time"))
        })?),
    };
    let mut causes = Vec::new();
    if let Some(t) = tail.filter(|t| *t < 0) {
        causes.push((
            "tailLines",
            "FieldValueInvalid",
            format!("Invalid value: {t}: must be greater than or equal to 0"),
        ));
    }
    if let Some(l) = limit.filter(|l| *l < 1) {
        causes.push((
            "limitBytes",
            "FieldValueInvalid",
            format!("Invalid value: {l}: must be greater than 0"),
        ));
    }
    if since_seconds.is_some() && since_time.is_some() {
        causes.push((
            "[]",
            "FieldValueForbidden",
            "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified".into(),
        ));
    } else if let Some(s) = since_seconds.filter(|s| *s < 1) {
        causes.push((
            "sinceSeconds",
            "FieldValueInvalid",
            format!("Invalid value: {s}: must be greater than 0"),
        ));
    }
    if req.param("stream").is_some() {
        causes.push((
            "stream",
            "FieldValueForbidden",
            "Forbidden: may not be specified".into(),
        ));
    }
    if !causes.is_empty() {
        return Err(invalid(pod, causes));
    }
    let since = match (since_time, since_seconds) {
        // The kubelet gets `sinceTime` at whole seconds.
        (Some(t), _) => Some(t.whole_second()),
        (None, Some(s)) => Some(LogTime::from_system_time(
            SystemTime::now() - Duration::from_secs(s as u64),
        )),
        _ => None,
    };
    Ok(Options {
        container: req.param("container").map(str::to_owned),
        follow: req.flag("follow"),
        previous: req.flag("previous"),
        since,
        tail: tail.map(|t| t as usize),
        timestamps: req.flag("timestamps"),
        limit: limit.map(|l| l as u64),
    })
}

fn names(pod: &Value, list: &str) -> Vec<String> {
    pod.pointer(&format!("/spec/{list}"))
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The container to read, as kube-apiserver chooses it.
fn choose(pod: &Value, name: &str, given: Option<&str>) -> Result<String, Status> {
    let containers = names(pod, "containers");
    let init = names(pod, "initContainers");
    let ephemeral = names(pod, "ephemeralContainers");
    match given {
        Some(c)
            if containers
                .iter()
                .chain(&init)
                .chain(&ephemeral)
                .any(|n| n == c) =>
        {
            Ok(c.to_owned())
        }
        Some(c) => Err(bad_request(format!(
            "container {c} is not valid for pod {name}"
        ))),
        None if containers.len() == 1 => Ok(containers[0].clone()),
        None => {
            let mut m = format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                containers.join(" ")
            );
            if !init.is_empty() {
                m.push_str(&format!(
                    " or one of the init containers: [{}]",
                    init.join(" ")
                ));
            }
            Err(bad_request(m))
        }
    }
}

fn fail<S: Peer>(peer: &mut S, st: &Status) -> Outcome {
    match write_status(peer, st, &[]) {
        Ok(()) => Outcome::KeepAlive,
        Err(_) => Outcome::Close,
    }
}

/// Writes `lines` as the kubelet does; `open` says the line before them was left without its
/// newline (then the first one continues it: no time in front).
fn render(lines: &[Entry], mut open: bool, timestamps: bool, out: &mut Vec<u8>) {
    for (t, l, ended) in lines {
        if timestamps && !open {
            out.extend_from_slice(t.to_rfc3339_nanos().as_bytes());
            out.push(b' ');
        }
        out.extend_from_slice(l.as_bytes());
        if *ended {
            out.push(b'\n');
        }
        open = !ended;
    }
}

fn chunk<S: Peer>(peer: &mut S, data: &[u8]) -> io::Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    write!(peer, "{:x}\r\n", data.len())?;
    peer.write_all(data)?;
    peer.write_all(b"\r\n")?;
    peer.flush()
}

/// `GET /api/v1/namespaces/{ns}/pods/{name}/log`.
pub(crate) fn serve<S: Peer>(
    req: &Request,
    ns: &str,
    name: &str,
    peer: &mut S,
    shared: &impl LogsHost,
) -> Outcome {
    let o = match options(req, name) {
        Ok(o) => o,
        Err(st) => return fail(peer, &st),
    };
    let tk = TypeKey {
        group: String::new(),
        version: "v1".into(),
        plural: "pods".into(),
    };
    let pod: Value = {
        let mut store = shared.store.lock();
        match store.get(&tk, Some(ns), name) {
            Ok(stored) => serde_json::from_str(&stored.json).unwrap_or(Value::Null),
            Err(_) => return fail(peer, &not_found(&tk, name)),
        }
    };
    let container = match choose(&pod, name, o.container.as_deref()) {
        Ok(c) => c,
        Err(st) => return fail(peer, &st),
    };
    if pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        // As captured: no body, no content type.
        let r = peer
            .write_all(b"HTTP/1.1 204 No Content\r\ncache-control: no-cache, private\r\n\r\n")
            .and_then(|_| peer.flush());
        return if r.is_ok() {
            Outcome::KeepAlive
        } else {
            Outcome::Close
        };
    }
    let logs = shared.pod_logs();
    let k = key(ns, name, &container);
    let (lines, mut sent, drops, terminated) = {
        let st = logs.state.lock();
        let c = st.containers.get(&k);
        let source = if o.previous {
            match c.and_then(|c| c.previous.as_ref()) {
                Some(p) => p.clone(),
                None => {
                    drop(st);
                    return fail(
                        peer,
                        &bad_request(format!(
                            "previous terminated container {container:?} in pod {name:?} not found"
                        )),
                    );
                }
            }
        } else {
            c.map(|c| c.lines.clone()).unwrap_or_default()
        };
        let sent = source.len();
        let mut chosen: Vec<Entry> = source
            .into_iter()
            .filter(|(t, _, _)| o.since.is_none_or(|s| *t >= s))
            .collect();
        if let Some(n) = o.tail {
            let skip = chosen.len().saturating_sub(n);
            chosen.drain(..skip);
        }
        (chosen, sent, st.drops, c.is_some_and(|c| c.terminated))
    };
    let mut cut = logs.state.lock().cut_next.take();
    let head = "HTTP/1.1 200 OK\r\ncache-control: no-cache, private\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n";
    if peer
        .write_all(head.as_bytes())
        .and_then(|_| peer.flush())
        .is_err()
    {
        return Outcome::Close;
    }
    let mut left = o.limit.unwrap_or(u64::MAX);
    // Sends `data` within the limit; false once the limit is reached (the body then ends).
    let mut send = |peer: &mut S, data: &mut Vec<u8>| -> io::Result<bool> {
        let room = usize::try_from(left).unwrap_or(usize::MAX);
        let full = data.len() < room;
        data.truncate(room);
        left -= data.len() as u64;
        if let Some(c) = cut.as_mut() {
            if data.len() >= *c {
                data.truncate(*c);
                chunk(peer, data)?;
                peer.drop_connection();
                return Err(io::Error::new(io::ErrorKind::ConnectionAborted, "cut"));
            }
            *c -= data.len();
        }
        chunk(peer, data)?;
        Ok(full && left > 0)
    };
    let mut out = Vec::new();
    render(&lines, false, o.timestamps, &mut out);
    let more = match send(peer, &mut out) {
        Ok(more) => more,
        Err(_) => return Outcome::Close,
    };
    if !more || !o.follow || o.previous || terminated {
        return finish(peer);
    }
    logs.state.lock().open += 1;
    let outcome = follow(peer, shared, &k, &mut sent, drops, o.timestamps, &mut send);
    logs.state.lock().open -= 1;
    outcome
}

fn finish<S: Peer>(peer: &mut S) -> Outcome {
    match peer.write_all(b"0\r\n\r\n").and_then(|_| peer.flush()) {
        Ok(()) => Outcome::KeepAlive,
        Err(_) => Outcome::Close,
    }
}

/// Sends lines as they are appended until the container terminates (clean end), the
/// kubelet "restarts" (cut), the client leaves or the server stops.
fn follow<S: Peer>(
    peer: &mut S,
    shared: &impl LogsHost,
    k: &(String, String, String),
    sent: &mut usize,
    drops: u64,
    timestamps: bool,
    send: &mut impl FnMut(&mut S, &mut Vec<u8>) -> io::Result<bool>,
) -> Outcome {
    let logs = shared.pod_logs();
    loop {
        let new = {
            let mut st = logs.state.lock();
            loop {
                if shared.stopping() || st.drops != drops {
                    drop(st);
                    peer.drop_connection();
                    return Outcome::Close;
                }
                let c = st.containers.get(k);
                let len = c.map_or(0, |c| c.lines.len());
                if len > *sent {
                    let open = c.is_some_and(|c| *sent > 0 && !c.lines[*sent - 1].2);
                    let new = c.map(|c| c.lines[*sent..].to_vec()).unwrap_or_default();
                    *sent = len;
                    break (open, new);
                }
                if c.is_some_and(|c| c.terminated) {
                    drop(st);
                    return finish(peer);
                }
                if logs
                    .changed
                    .wait_for(&mut st, Duration::from_millis(100))
                    .timed_out()
                    && peer.peer_closed()
                {
                    return Outcome::Close;
                }
            }
        };
        let (open, new) = new;
        let mut out = Vec::new();
        render(&new, open, timestamps, &mut out);
        match send(peer, &mut out) {
            Ok(true) => {}
            Ok(false) => return finish(peer),
            Err(_) => return Outcome::Close,
        }
    }
}
