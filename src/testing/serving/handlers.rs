//! Request routing and the answers of the test API server: get, list (paged, at a version),
//! watch (from a version, with bookmarks, streaming lists), and writes.
//!
//! Answers follow the captures of a real kube-apiserver: list bodies, continue tokens,
//! `Status` bodies, and watch lines, down to the order of the fields. The helpers the other
//! rooms answer with too (`Status` bodies, continue tokens) are in `answers.rs`.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::answers::{
    continue_expired, decode_continue, encode_continue, outcome, status_json, write_status, Outcome,
};
use super::faults::{Fault, Target};
use super::http::{self, ChunkedWriter, Request};
use super::metadata;
use super::peer::Peer;
#[cfg(feature = "protobuf")]
use super::protobuf_answers::Shape;
use super::read_versions::{self, ListAt};
use super::server::Shared;
use super::store::{EventType, Filter, StoredObject, TypeKey};
use super::writes;
use crate::api::{ListMeta, Status};

fn reason_for(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        409 => "Conflict",
        410 => "Expired",
        422 => "Invalid",
        429 => "TooManyRequests",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "InternalError",
    }
}

/// Where a request path points.
struct Route {
    tk: TypeKey,
    namespace: Option<String>,
    name: Option<String>,
    /// `status`, `scale`, ... after the name.
    subresource: Option<String>,
}

impl Route {
    fn address(&self) -> writes::Address<'_> {
        writes::Address {
            tk: &self.tk,
            namespace: self.namespace.as_deref(),
            name: self.name.as_deref(),
            subresource: self.subresource.as_deref(),
        }
    }
}

fn parse_route(path: &str) -> Option<Route> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some(ns.to_string()), rest),
        _ => (None, rest),
    };
    let (plural, name, subresource) = match rest {
        [plural] => (*plural, None, None),
        [plural, name] => (*plural, Some(name.to_string()), None),
        [plural, name, sub] if !sub.is_empty() => {
            (*plural, Some(name.to_string()), Some(sub.to_string()))
        }
        _ => return None,
    };
    if plural.is_empty() || version.is_empty() {
        return None;
    }
    Some(Route {
        tk: TypeKey {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
        },
        namespace,
        name,
        subresource,
    })
}

/// Answers one request.
pub(crate) fn handle<S: Peer>(req: &Request, peer: &mut S, shared: &Shared) -> Outcome {
    if req.path == "/version" {
        // The captured fields (`version-v1.36.2.json`), pretty-printed like the real server.
        let body = format!(
            "{{\n  \"major\": \"1\",\n  \"minor\": \"36\",\n  \"emulationMajor\": \"1\",\n  \"emulationMinor\": \"36\",\n  \"minCompatibilityMajor\": \"1\",\n  \"minCompatibilityMinor\": \"35\",\n  \"gitVersion\": \"v1.36.2-kube-informer-testing\",\n  \"gitCommit\": \"0000000000000000000000000000000000000000\",\n  \"gitTreeState\": \"clean\",\n  \"buildDate\": \"2026-01-01T00:00:00Z\",\n  \"goVersion\": \"go1.25.0\",\n  \"compiler\": \"gc\",\n  \"platform\": \"{}/{}\"\n}}",
            std::env::consts::OS,
            std::env::consts::ARCH
        );
        return outcome(http::write_response(peer, 200, &[], body.as_bytes()));
    }
    if let Some(outcome) = super::reviews::handle(req, peer, shared, &shared.identities) {
        return outcome;
    }
    if let Some(outcome) = super::discovery::handle(req, peer, shared) {
        return outcome;
    }
    let Some(route) = parse_route(&req.path) else {
        let st = Status::failure(
            404,
            "NotFound",
            "the server could not find the requested resource",
        );
        return outcome(write_status(peer, &st, &[]));
    };
    // A resource whose CRD was deleted: the Go mux's plain-text 404, whatever the verb
    // (see `crd_lifecycle.rs`).
    if shared.store.lock().serving.is_removed(&route.tk) {
        return outcome(http::write_page_not_found(peer));
    }
    // Pod subresources that are not objects: logs and evictions (their own files).
    if let (true, Some(ns), Some(name)) = (
        route.tk.group.is_empty() && route.tk.plural == "pods",
        route.namespace.as_deref(),
        route.name.as_deref(),
    ) {
        match (req.method.as_str(), route.subresource.as_deref()) {
            ("GET", Some("log")) => return super::pod_logs::serve(req, ns, name, peer, shared),
            ("POST", Some("eviction")) => {
                return super::eviction::serve(req, ns, name, peer, shared)
            }
            _ => {}
        }
    }
    if let Some(outcome) = super::conversion::handle(
        req,
        &route.tk,
        route.namespace.as_deref(),
        route.name.as_deref(),
        route.subresource.as_deref(),
        peer,
        shared,
    ) {
        return outcome;
    }
    let kind = match (req.method.as_str(), &route.name) {
        ("GET", Some(_)) => Target::Get,
        ("GET", None) if req.flag("watch") => Target::Watch,
        ("GET", None) => Target::List,
        _ => Target::Write,
    };
    // Protobuf (feature `protobuf`): chosen from `Accept` before anything else, as the JSON
    // forms below; from here on every answer of this request is protobuf when it is.
    #[cfg(feature = "protobuf")]
    let (_protobuf, protobuf_form, converted) = 'protobuf: {
        use super::protobuf_answers as pa;
        let asks = req
            .header("accept")
            .is_some_and(|a| a.contains(crate::protobuf::CONTENT_TYPE));
        if !asks && !pa::has_protobuf_body(req) {
            // Nothing about protobuf: the request is answered exactly as without the feature.
            break 'protobuf (None, None, None);
        }
        let (builtin, type_kind, api_version) = {
            let mut store = shared.store.lock();
            let c = store.collection(&route.tk);
            (c.info.builtin, c.kind.clone(), c.api_version.clone())
        };
        let list = matches!(kind, Target::List);
        let reads = matches!(kind, Target::Get | Target::List | Target::Watch);
        let choice = pa::choose(req.header("accept"), list, builtin);
        // A subresource other than status is not the resource's own type (a Scale): JSON.
        let sub_ok = matches!(route.subresource.as_deref(), None | Some("status"));
        let (guard, form) = match choice {
            pa::Choice::Protobuf(version) if sub_ok || !reads => {
                let form = match version {
                    Some(version) if reads => Some(metadata::Form::Metadata { version }),
                    _ if reads => Some(metadata::Form::Full),
                    _ => None,
                };
                (Some(pa::begin()), form)
            }
            pa::Choice::NotAcceptable if reads => {
                let _g = pa::begin();
                return fail(peer, &pa::not_acceptable());
            }
            _ => (None, None),
        };
        let mut converted = None;
        if kind == Target::Write && pa::has_protobuf_body(req) {
            match pa::body_as_json(req, &type_kind, &api_version, builtin) {
                pa::BodyOutcome::Json(json) => converted = Some(json),
                pa::BodyOutcome::Refuse(st) => return fail(peer, &st),
                pa::BodyOutcome::Drop => {
                    peer.drop_connection();
                    return Outcome::Close;
                }
            }
        }
        (guard, form, converted)
    };
    // A protobuf body from here on is its JSON.
    #[cfg(feature = "protobuf")]
    let req = converted.as_ref().unwrap_or(req);
    // The media type first: a 406 is the server's answer before anything else happens.
    let form = match kind {
        #[cfg(feature = "protobuf")]
        _ if protobuf_form.is_some() => protobuf_form.unwrap_or(metadata::Form::Full),
        Target::Get if route.subresource.is_some() => metadata::Form::Full,
        Target::Get | Target::List | Target::Watch => {
            let go_type = {
                let mut store = shared.store.lock();
                let c = store.collection(&route.tk);
                metadata::go_type(&c.kind, c.info.builtin)
            };
            let list = matches!(kind, Target::List);
            match metadata::negotiate(req.header("accept"), list, &go_type) {
                Ok(form) => form,
                Err(e) => {
                    let body = e.body();
                    return outcome(http::write_response_as_is(peer, 406, &[], body.as_bytes()));
                }
            }
        }
        _ => metadata::Form::Full,
    };
    // A re-created CRD's resource: its first list is refused while its cache initialises.
    if matches!(kind, Target::List) && shared.store.lock().serving.take_initializing(&route.tk) {
        return fail(peer, &super::crd_lifecycle::initializing());
    }
    let mut fault = shared.take_fault(kind, req.param("continue").is_some());
    if let Some(Fault::Stall(d)) = fault {
        // Ends early when the server stops, so a long stall never holds up `stop`.
        let deadline = Instant::now() + d;
        let mut store = shared.store.lock();
        while !shared.stopped.load(Ordering::SeqCst) {
            if shared.changed.wait_until(&mut store, deadline).timed_out() {
                break;
            }
        }
        drop(store);
        fault = None;
    }
    if matches!(fault, Some(Fault::TooLargeResourceVersion)) && kind != Target::Watch {
        let current = shared.store.lock().rv;
        let st = read_versions::too_large(current + 1, current);
        return outcome(write_status(peer, &st, &[]));
    }
    if let Some(Fault::Status { code, retry_after }) = fault {
        let st = Status::failure(
            code,
            reason_for(code),
            format!("injected fault: HTTP {code}"),
        );
        let extra: Vec<(&str, String)> = retry_after
            .map(|s| vec![("retry-after", s.to_string())])
            .unwrap_or_default();
        return outcome(write_status(peer, &st, &extra));
    }
    match kind {
        Target::Get if route.subresource.is_some() => {
            get_subresource(&route, peer, shared, fault.as_ref())
        }
        Target::Get => get(&route, peer, shared, fault.as_ref(), &form),
        Target::List => list(req, &route, peer, shared, fault.as_ref(), &form),
        Target::Watch => watch(req, &route, peer, shared, fault.as_ref(), &form, None),
        _ => write(req, &route, peer, shared, fault.as_ref()),
    }
}

/// Sends a whole answer, or (with `CloseAfterBytes`) only its start and then drops the line.
fn send<S: Peer>(peer: &mut S, code: u16, body: &[u8], fault: Option<&Fault>) -> Outcome {
    send_with(peer, code, &[], body, fault)
}

/// [`send`] with extra headers.
fn send_with<S: Peer>(
    peer: &mut S,
    code: u16,
    extra: &[(&str, String)],
    body: &[u8],
    fault: Option<&Fault>,
) -> Outcome {
    #[cfg(feature = "protobuf")]
    if super::protobuf_answers::active() {
        if let Some(pb) = super::protobuf_answers::envelope_of(body) {
            return send_as(
                peer,
                code,
                Some(crate::protobuf::CONTENT_TYPE),
                extra,
                &pb,
                fault,
            );
        }
    }
    send_as(peer, code, None, extra, body, fault)
}

/// The media type of a protobuf answer (`crate::protobuf::CONTENT_TYPE`, which exists only
/// with the feature).
const PROTOBUF_ANSWER: &str = "application/vnd.kubernetes.protobuf";

/// A get answered from the object's protobuf encoded once (`storage/encoded.rs`); `None`
/// when the request is not protobuf, the object is missing (the JSON path answers) or the
/// codec cannot encode it.
#[cfg(feature = "protobuf")]
fn protobuf_get(r: &Route, shared: &Shared, form: &metadata::Form) -> Option<Vec<u8>> {
    let (o, shape) = {
        let mut store = shared.store.lock();
        let o = store
            .get(&r.tk, r.namespace.as_deref(), r.name.as_deref()?)
            .ok()?;
        let c = store.collection(&r.tk);
        let shape = c
            .info
            .schema
            .is_none()
            .then(|| Shape::new(&c.api_version, &c.kind, form));
        (o, shape.flatten()?)
    };
    shape.object(&o)
}

/// [`send_with`] of a body already in its media type (`None`: JSON).
fn send_as<S: Peer>(
    peer: &mut S,
    code: u16,
    typed: Option<&str>,
    extra: &[(&str, String)],
    body: &[u8],
    fault: Option<&Fault>,
) -> Outcome {
    let content_type = typed.unwrap_or("application/json");
    if let Some(Fault::CloseAfterBytes(n)) = fault {
        let cut = (*n).min(body.len().saturating_sub(1));
        let head = format!(
            "HTTP/1.1 {code} OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        let _ = peer
            .write_all(head.as_bytes())
            .and_then(|_| peer.write_all(&body[..cut]))
            .and_then(|_| peer.flush());
        peer.drop_connection();
        return Outcome::Close;
    }
    if typed.is_some() {
        return outcome(http::write_response_typed(
            peer,
            code,
            content_type,
            extra,
            body,
        ));
    }
    outcome(http::write_response(peer, code, extra, body))
}

/// A failure Status; one that says when to retry carries it as `Retry-After` too, as
/// kube-apiserver's error writer does.
fn fail<S: Peer>(peer: &mut S, st: &Status) -> Outcome {
    let retry_after = st
        .details
        .as_ref()
        .and_then(|d| d.retry_after_seconds)
        .filter(|s| *s > 0)
        .map(|s| ("retry-after", s.to_string()));
    outcome(write_status(peer, st, retry_after.as_slice()))
}

fn get<S: Peer>(
    r: &Route,
    peer: &mut S,
    shared: &Shared,
    fault: Option<&Fault>,
    form: &metadata::Form,
) -> Outcome {
    let name = r.name.as_deref().unwrap_or("");
    #[cfg(feature = "protobuf")]
    if let Some(pb) = protobuf_get(r, shared, form) {
        return send_as(peer, 200, Some(PROTOBUF_ANSWER), &[], &pb, fault);
    }
    let answer = {
        let mut store = shared.store.lock();
        store
            .get(&r.tk, r.namespace.as_deref(), name)
            .map(|o| match form {
                metadata::Form::Full => store.collection(&r.tk).with_type_meta(&o.json),
                metadata::Form::Metadata { version } => metadata::partial_object(&o.json, version),
            })
    };
    match answer {
        Ok(body) => send(peer, 200, body.as_bytes(), fault),
        Err(st) => fail(peer, &st),
    }
}

/// GET of `/status` (the whole object) or `/scale` (a `Scale`); 404 for a subresource the
/// resource does not serve.
fn get_subresource<S: Peer>(
    r: &Route,
    peer: &mut S,
    shared: &Shared,
    fault: Option<&Fault>,
) -> Outcome {
    let info = shared.store.lock().collection(&r.tk).info.clone();
    let answer = match r.subresource.as_deref() {
        Some("status") if info.subresources.status => {
            return get(r, peer, shared, fault, &metadata::Form::Full)
        }
        Some("scale") => writes::scale_get(&r.address(), shared),
        _ => Err(Status::failure(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )),
    };
    match answer {
        Ok(body) => send(peer, 200, body.as_bytes(), fault),
        Err(st) => fail(peer, &st),
    }
}

fn parse_rv(v: Option<&str>) -> Result<Option<u64>, Status> {
    match v {
        None | Some("") => Ok(None),
        Some(s) => s.parse::<u64>().map(Some).map_err(|e| {
            Status::failure(
                400,
                "BadRequest",
                format!("invalid resource version: resourceVersion: Invalid value: {s:?}: strconv.ParseUint: parsing {s:?}: {e}"),
            )
        }),
    }
}

fn list<S: Peer>(
    req: &Request,
    r: &Route,
    peer: &mut S,
    shared: &Shared,
    fault: Option<&Fault>,
    form: &metadata::Form,
) -> Outcome {
    // Pages are megabytes: each connection thread reuses one buffer for them, so serving a
    // page is a copy into memory already mapped (a fresh buffer per page cost more in page
    // faults than the copy).
    thread_local! {
        static PAGE: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
    }
    PAGE.with_borrow_mut(|buf| {
        buf.clear();
        let outcome = match list_body(req, r, shared, buf, form) {
            Ok(None) => send(peer, 200, buf.as_bytes(), fault),
            Ok(Some(pb)) => send_as(peer, 200, Some(PROTOBUF_ANSWER), &[], &pb, fault),
            Err(st) => fail(peer, &st),
        };
        if buf.capacity() > 64 << 20 {
            *buf = String::new();
        }
        outcome
    })
}

/// Writes a list page into `out`, or returns it already in protobuf.
fn list_body(
    req: &Request,
    r: &Route,
    shared: &Shared,
    out: &mut String,
    form: &metadata::Form,
) -> Result<Option<Vec<u8>>, Status> {
    let rv_text = req.param("resourceVersion").unwrap_or("");
    let rv_match = req.param("resourceVersionMatch").unwrap_or("");
    let token = req.param("continue").filter(|t| !t.is_empty());
    read_versions::validate_list(
        rv_text,
        rv_match,
        token.is_some(),
        req.param("sendInitialEvents").is_some(),
    )?;
    let filter = Filter::parse(req.param("labelSelector"), req.param("fieldSelector"))?;
    let rv = parse_rv(req.param("resourceVersion"))?;
    let limit: Option<usize> = match req.param("limit") {
        None | Some("") | Some("0") => None,
        Some(l) => Some(
            l.parse()
                .map_err(|_| Status::failure(400, "BadRequest", format!("invalid limit {l:?}")))?,
        ),
    };
    let ns = r.namespace.as_deref();
    let mut store = shared.store.lock();
    if let Some(rv) = rv.filter(|rv| token.is_none() && *rv > store.rv) {
        // kube-apiserver waits up to three seconds for its cache to reach a version it has
        // not seen, then answers 504 (`list_at`); a write that gets there ends the wait.
        let wait = Duration::from_millis(shared.too_large_wait_ms.load(Ordering::SeqCst));
        let deadline = Instant::now() + wait;
        while store.rv < rv && Instant::now() < deadline && !shared.stopped.load(Ordering::SeqCst) {
            shared.changed.wait_until(&mut store, deadline);
        }
    }
    let current = store.rv;
    let c = store.collection(&r.tk);
    let (at, after, limit) = if let Some(token) = token {
        let tok = decode_continue(token)?;
        read_versions::check_continue_version(rv_text)?;
        let after = tok.start.trim_end_matches('\0').to_owned();
        if tok.rv < 0 || (tok.rv as u64) < c.compacted {
            return Err(continue_expired(&tok));
        }
        (tok.rv as u64, Some(after), limit)
    } else {
        match read_versions::list_at(rv, rv_match, limit.is_some(), current)? {
            ListAt::Present { paged: true } => (current, None, limit),
            ListAt::Present { paged: false } => (current, None, None),
            ListAt::Exact(at) => (at, None, limit),
        }
    };
    let keep = |o: &StoredObject| filter.matches(o);
    let count_rest = filter.is_empty();
    let Some((page, remaining)) = c.list_page(at, after.as_deref(), ns, &keep, limit, count_rest)
    else {
        return Err(read_versions::list_expired());
    };
    let last_key = page.last().filter(|_| remaining > 0).map(|o| key_of(o));
    let mut meta = ListMeta {
        resource_version: Some(at.to_string()),
        ..Default::default()
    };
    if remaining > 0 {
        let start = format!("{}\0", last_key.unwrap_or_default());
        meta.continue_token = Some(encode_continue(at as i64, &start));
        if filter.is_empty() {
            meta.remaining_item_count = Some(remaining as i64);
        }
    }
    let (list_kind, list_api_version) = match form {
        metadata::Form::Full => (
            Value::from(format!("{}List", c.kind)).to_string(),
            Value::from(c.api_version.as_str()).to_string(),
        ),
        metadata::Form::Metadata { version } => (
            "\"PartialObjectMetadataList\"".to_owned(),
            metadata::Form::api_version(version),
        ),
    };
    let head = format!(
        "{{\"kind\":{list_kind},\"apiVersion\":{list_api_version},\"metadata\":{},\"items\":[",
        serde_json::to_string(&meta).unwrap_or_else(|_| "{}".into()),
    );
    let (builtin, with_type_meta) = (c.info.builtin, |json: &str| c.with_type_meta(json));
    let typed: Vec<String> = match form {
        metadata::Form::Metadata { version } => page
            .iter()
            .map(|o| metadata::partial_object(&o.json, version))
            .collect(),
        metadata::Form::Full if builtin => Vec::new(),
        metadata::Form::Full => page.iter().map(|o| with_type_meta(&o.json)).collect(),
    };
    #[cfg(feature = "protobuf")]
    let shape = c
        .info
        .schema
        .is_none()
        .then(|| Shape::new(&c.api_version, &c.kind, form));
    drop(store);
    #[cfg(feature = "protobuf")]
    if let Some(pb) = shape.flatten().and_then(|s| s.list(&meta, &page)) {
        return Ok(Some(pb));
    }
    out.reserve(head.len() + page.iter().map(|o| o.json.len() + 65).sum::<usize>() + 2);
    out.push_str(&head);
    for (i, o) in page.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(typed.get(i).map_or(&*o.json, String::as_str));
    }
    out.push_str("]}");
    Ok(None)
}

fn key_of(o: &StoredObject) -> String {
    if o.namespace.is_empty() {
        o.name.clone()
    } else {
        format!("{}/{}", o.namespace, o.name)
    }
}

fn write<S: Peer>(
    req: &Request,
    r: &Route,
    peer: &mut S,
    shared: &Shared,
    fault: Option<&Fault>,
) -> Outcome {
    match writes::write(req, &r.address(), shared) {
        Ok(answer) => {
            shared.notify();
            let warnings: Vec<(&str, String)> = answer
                .warnings
                .iter()
                .map(|w| ("warning", format!("299 - {}", Value::from(w.as_str()))))
                .collect();
            send_with(peer, answer.code, &warnings, answer.body.as_bytes(), fault)
        }
        Err(st) => fail(peer, &st),
    }
}

/// Event lines with the fault a watch was given.
struct EventSink<'a, S: Peer> {
    out: ChunkedWriter<'a, S>,
    kind: String,
    api_version: String,
    events: usize,
    close_after_events: Option<usize>,
    close_after_bytes: Option<usize>,
    silence_after_events: Option<usize>,
    /// After this many events, one ERROR event with this code, then the body ends properly.
    error_after_events: Option<(usize, u16)>,
    /// The stream ended with an injected ERROR event: its body ends properly.
    ended_by_error: bool,
    /// Lines not yet sent: events of one wake-up go out as one chunk.
    pending: Vec<u8>,
    /// Metadata only: each object is cut to its `metadata` (`kind`/`apiVersion` say so).
    metadata_only: bool,
    /// A custom resource's schema with defaults: each object is defaulted as a read from
    /// etcd is (see `crd_defaults.rs`).
    defaults: Option<Value>,
    /// Protobuf frames instead of JSON lines (feature `protobuf`).
    #[cfg_attr(not(feature = "protobuf"), allow(dead_code))]
    protobuf: bool,
    /// How stored objects go out in protobuf from their kept bytes (feature `protobuf`).
    #[cfg(feature = "protobuf")]
    shape: Option<Shape>,
    /// A watch in another version of a CRD converted by webhook (`conversion.rs`): each
    /// stored object (without `kind`/`apiVersion`) becomes the converted one; `None` when it
    /// cannot be converted, which ends the stream.
    convert: Option<Converter<'a>>,
}

/// Turns one stored object of a watch into the version watched (see [`watch_converted`]).
pub(crate) type Converter<'a> = &'a dyn Fn(&str) -> Option<String>;

/// A write fails: the client is gone or the fault cut the line.
struct Dropped;

impl<S: Peer> EventSink<'_, S> {
    fn line(&mut self, line: &str) -> Result<(), Dropped> {
        self.bytes(line.as_bytes())
    }

    /// Sends one event's bytes (a JSON line or a protobuf frame).
    fn bytes(&mut self, line: &[u8]) -> Result<(), Dropped> {
        if let Some(n) = self.close_after_bytes {
            let left = n.saturating_sub(self.out.bytes_sent);
            if line.len() > left {
                let _ = self.out.chunk(&line[..left]);
                return Err(Dropped);
            }
            return self.out.chunk(line).map_err(|_| Dropped);
        }
        self.pending.extend_from_slice(line);
        if self.pending.len() >= 256 * 1024 {
            self.flush()?;
        }
        Ok(())
    }

    /// Sends the pending lines as one chunk.
    fn flush(&mut self) -> Result<(), Dropped> {
        if self.pending.is_empty() {
            return Ok(());
        }
        #[cfg(feature = "protobuf")]
        if self.protobuf {
            // Chunks that cut frames, as the real server's streaming list sends them.
            let r = self
                .pending
                .chunks(super::protobuf_answers::CHUNK)
                .try_for_each(|c| self.out.chunk(c))
                .map_err(|_| Dropped);
            self.pending.clear();
            return r;
        }
        let r = self.out.chunk(&self.pending).map_err(|_| Dropped);
        self.pending.clear();
        r
    }

    fn event(&mut self, ty: &str, object: &StoredObject) -> Result<(), Dropped> {
        #[cfg(feature = "protobuf")]
        let frame = self.kept_frame(ty, object);
        #[cfg(not(feature = "protobuf"))]
        let frame: Option<Vec<u8>> = None;
        match frame {
            Some(frame) => self.bytes(&frame)?,
            None => self.encode(ty, &object.json)?,
        }
        self.events += 1;
        if let Some((n, code)) = self.error_after_events.filter(|(n, _)| self.events >= *n) {
            let reason = match code {
                410 => "Expired",
                504 => "Timeout",
                _ => "InternalError",
            };
            let st = Status::failure(code, reason, format!("injected fault after {n} events"));
            self.error(&st)?;
            self.ended_by_error = true;
            return Err(Dropped);
        }
        let close = self.close_after_events.is_some_and(|n| self.events >= n);
        if close || self.silence_after_events.is_some_and(|n| self.events >= n) {
            // What was sent so far goes out; then the connection drops or goes quiet.
            self.flush()?;
            return Err(Dropped);
        }
        Ok(())
    }

    /// The protobuf frame of a stored object sent as it is (not defaulted, not converted),
    /// from its bytes kept by the store (`storage/encoded.rs`).
    #[cfg(feature = "protobuf")]
    fn kept_frame(&self, ty: &str, object: &StoredObject) -> Option<Vec<u8>> {
        let shape = self.shape.as_ref()?;
        if self.defaults.is_some() || self.convert.is_some() {
            return None;
        }
        let mut frame = Vec::new();
        shape.frame(ty, object, &mut frame).then_some(frame)
    }

    /// One event from the stored JSON: a JSON line, or its protobuf frame made from it.
    fn encode(&mut self, ty: &str, json: &str) -> Result<(), Dropped> {
        // Defaulted as read (none in the metadata form), converted, then cut to metadata.
        let mut owned = self
            .defaults
            .as_ref()
            .and_then(|s| super::crd_defaults::on_read(s, json));
        if let Some(convert) = self.convert {
            match convert(owned.as_deref().unwrap_or(json)) {
                Some(c) => owned = Some(c),
                None => {
                    // The watch cache of this version cannot decode the object: the real
                    // server ends its watchers (see `conversion.rs`); what came before it
                    // goes out and the body ends properly.
                    self.ended_by_error = true;
                    return Err(Dropped);
                }
            }
        }
        if self.metadata_only {
            owned = Some(metadata::metadata_only(owned.as_deref().unwrap_or(json)));
        }
        let json = owned.as_deref().unwrap_or(json);
        let rest = json.strip_prefix('{').unwrap_or(json);
        let mut line = String::with_capacity(json.len() + self.kind.len() + 64);
        line.push_str("{\"type\":\"");
        line.push_str(ty);
        line.push_str("\",\"object\":{\"kind\":");
        line.push_str(&self.kind);
        line.push_str(",\"apiVersion\":");
        line.push_str(&self.api_version);
        if rest != "}" {
            line.push(',');
        }
        line.push_str(rest);
        line.push_str("}\n");
        #[cfg(feature = "protobuf")]
        if self.protobuf {
            // The object is the line's `object` member: the frame carries it in protobuf.
            let object = &line[line.find("\"object\":").map_or(0, |i| i + 9)..line.len() - 2];
            let mut frame = Vec::new();
            if super::protobuf_answers::frame(ty, object.as_bytes(), &mut frame) {
                line.clear();
                self.bytes(&frame)?;
            }
        }
        if !line.is_empty() {
            self.line(&line)?;
        }
        Ok(())
    }

    fn bookmark(&mut self, rv: u64, initial_events_end: bool) -> Result<(), Dropped> {
        let annotations = if initial_events_end {
            ",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}"
        } else {
            ""
        };
        let line = format!(
            "{{\"type\":\"BOOKMARK\",\"object\":{{\"kind\":{},\"apiVersion\":{},\"metadata\":{{\"resourceVersion\":\"{rv}\"{annotations}}}}}}}\n",
            self.kind, self.api_version
        );
        #[cfg(feature = "protobuf")]
        if self.protobuf {
            let object = &line[28..line.len() - 2];
            let mut frame = Vec::new();
            if super::protobuf_answers::frame("BOOKMARK", object.as_bytes(), &mut frame) {
                return self.bytes(&frame);
            }
        }
        self.line(&line)
    }

    fn error(&mut self, st: &Status) -> Result<(), Dropped> {
        #[cfg(feature = "protobuf")]
        if self.protobuf {
            let mut frame = Vec::new();
            if super::protobuf_answers::frame("ERROR", status_json(st).as_bytes(), &mut frame) {
                self.bytes(&frame)?;
                return self.flush();
            }
        }
        self.line(&format!(
            "{{\"type\":\"ERROR\",\"object\":{}}}\n",
            status_json(st)
        ))?;
        self.flush()
    }
}

/// When a watch sends its next bookmark, as kube-apiserver's watch cache decides it: every
/// `interval`, and once two seconds before the watch's deadline so that the client resumes
/// from the newest version; never when that moment has already passed (a watch of a second
/// or two gets no bookmark at all, as the captured table shows), and none at the deadline.
fn next_bookmark_time(now: Instant, interval: Duration, deadline: Instant) -> Option<Instant> {
    let periodic = now + interval;
    let before_deadline = deadline.checked_sub(Duration::from_secs(2))?;
    let next = periodic.min(before_deadline);
    (next >= now).then_some(next)
}

enum Wake {
    Events(Vec<std::sync::Arc<super::store::Event>>),
    Expired(u64),
    Bookmark(u64),
    Timeout,
    Stopped,
}

/// A watch of the stored version `stored` of a CRD served as `api_version`, each object
/// converted by `convert` (`conversion.rs`): the same events, bookmarks and versions as a
/// watch of the stored version, the objects in the version watched.
pub(crate) fn watch_converted<S: Peer>(
    req: &Request,
    stored: &TypeKey,
    namespace: Option<&str>,
    api_version: &str,
    convert: Converter<'_>,
    peer: &mut S,
    shared: &Shared,
) -> Outcome {
    let route = Route {
        tk: stored.clone(),
        namespace: namespace.map(str::to_owned),
        name: None,
        subresource: None,
    };
    let go_type = {
        let mut store = shared.store.lock();
        let c = store.collection(stored);
        metadata::go_type(&c.kind, c.info.builtin)
    };
    let form = match metadata::negotiate(req.header("accept"), false, &go_type) {
        Ok(form) => form,
        Err(e) => {
            let body = e.body();
            return outcome(http::write_response_as_is(peer, 406, &[], body.as_bytes()));
        }
    };
    let converting = Some((api_version, convert));
    watch(req, &route, peer, shared, None, &form, converting)
}

fn watch<S: Peer>(
    req: &Request,
    r: &Route,
    peer: &mut S,
    shared: &Shared,
    fault: Option<&Fault>,
    form: &metadata::Form,
    converting: Option<(&str, Converter<'_>)>,
) -> Outcome {
    let filter = match Filter::parse(req.param("labelSelector"), req.param("fieldSelector")) {
        Ok(f) => f,
        Err(st) => return fail(peer, &st),
    };
    let rv = match parse_rv(req.param("resourceVersion")) {
        Ok(rv) => rv,
        Err(st) => return fail(peer, &st),
    };
    let bookmarks = req.flag("allowWatchBookmarks");
    // Given at all (`Some`), `sendInitialEvents` turns the version into a lower bound.
    let send_initial_events = req.param("sendInitialEvents").map(|v| v == "true");
    if let Err(st) = read_versions::validate_watch(
        req.param("resourceVersionMatch").unwrap_or(""),
        send_initial_events,
    ) {
        return fail(peer, &st);
    }
    let initial_events = send_initial_events == Some(true);
    let timeout = req
        .param("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(Duration::from_secs(1800));
    let deadline = Instant::now() + timeout;
    let ns = r.namespace.clone();
    let in_scope =
        |o: &StoredObject| ns.as_deref().is_none_or(|n| o.namespace == n) && filter.matches(o);

    // Where the watch starts, and the synthetic ADDED events it opens with.
    let (mut cursor, initial, kind, api_version, refused, epoch, defaults) = {
        let mut store = shared.store.lock();
        let current = store.rv;
        // A removal of the resource (its CRD deleted) after this ends the watch.
        let epoch = store.serving.epoch(&r.tk);
        let watch_cache_start = store.watch_cache_start;
        let c = store.collection(&r.tk);
        let (kind, api_version) = match form {
            metadata::Form::Full => (
                Value::from(c.kind.as_str()).to_string(),
                Value::from(converting.map_or(c.api_version.as_str(), |(v, _)| v)).to_string(),
            ),
            metadata::Form::Metadata { version } => (
                "\"PartialObjectMetadata\"".to_owned(),
                metadata::Form::api_version(version),
            ),
        };
        let mut initial = Vec::new();
        let mut refused = None;
        let mut cursor = current;
        let from_present = matches!(rv, None | Some(0));
        if initial_events && rv.is_some_and(|rv| rv > current) {
            // The version is a lower bound the server has not reached.
            refused = rv.map(|rv| read_versions::too_large(rv, current));
        } else if initial_events || (from_present && send_initial_events.is_none()) {
            initial = c.snapshot(current, None, ns.as_deref()).unwrap_or_default();
        } else if let Some(rv) = rv.filter(|rv| *rv > 0) {
            // The message names the oldest version the window serves, as the real one does.
            let window_start = watch_cache_start.max(c.compacted);
            match c.events_after(rv) {
                Ok(_) if rv >= watch_cache_start => cursor = rv,
                Ok(_) | Err(_) => {
                    refused = Some(read_versions::watch_too_old(rv, window_start));
                }
            }
        }
        if matches!(fault, Some(Fault::TooLargeResourceVersion)) {
            initial.clear();
            refused = Some(read_versions::too_large(
                rv.unwrap_or(0).max(current + 1),
                current,
            ));
        }
        let defaults = match form {
            metadata::Form::Full => c
                .info
                .schema
                .clone()
                .filter(super::crd_defaults::has_defaults),
            metadata::Form::Metadata { .. } => None,
        };
        (cursor, initial, kind, api_version, refused, epoch, defaults)
    };
    #[cfg(feature = "protobuf")]
    let protobuf = super::protobuf_answers::active();
    #[cfg(not(feature = "protobuf"))]
    let protobuf = false;
    #[cfg(feature = "protobuf")]
    let shape = Shape::quoted(&api_version, &kind, form);
    let started = match protobuf {
        #[cfg(feature = "protobuf")]
        true => ChunkedWriter::start_typed(peer, 200, crate::protobuf::WATCH_CONTENT_TYPE),
        _ => ChunkedWriter::start(peer, 200),
    };
    let out = match started {
        Ok(o) => o,
        Err(_) => return Outcome::Close,
    };
    let mut sink = EventSink {
        out,
        kind,
        api_version,
        events: 0,
        close_after_events: match fault {
            Some(Fault::CloseAfterEvents(n)) => Some(*n),
            _ => None,
        },
        close_after_bytes: match fault {
            Some(Fault::CloseAfterBytes(n)) => Some(*n),
            _ => None,
        },
        silence_after_events: match fault {
            Some(Fault::SilenceAfterEvents(n)) => Some(*n),
            _ => None,
        },
        error_after_events: match fault {
            Some(Fault::ErrorEventAfter(n, code)) => Some((*n, *code)),
            _ => None,
        },
        ended_by_error: false,
        pending: Vec::new(),
        metadata_only: matches!(form, metadata::Form::Metadata { .. }),
        defaults,
        protobuf,
        #[cfg(feature = "protobuf")]
        shape,
        convert: converting.map(|(_, c)| c),
    };
    let result = (|| -> Result<(), Dropped> {
        if initial_events && !shared.streaming_list_supported.load(Ordering::SeqCst) {
            let st = Status::failure(
                500,
                "InternalError",
                "a watch stream was requested by the client but the required storage feature RequestWatchProgress is disabled",
            );
            return sink.error(&st);
        }
        if let Some(st) = refused {
            return sink.error(&st);
        }
        if sink.close_after_events == Some(0) || sink.silence_after_events == Some(0) {
            return Err(Dropped);
        }
        if let Some(Fault::GarbageLine) = fault {
            sink.line("this is not JSON {\n")?;
        }
        for o in initial.iter().filter(|o| in_scope(o)) {
            sink.event("ADDED", o)?;
        }
        // The initial events (asked for, or those of a watch from the present) end with the
        // annotated bookmark, when bookmarks are allowed.
        let opened_with_state =
            initial_events || (matches!(rv, None | Some(0)) && send_initial_events.is_none());
        if opened_with_state
            && bookmarks
            && shared.initial_events_end_bookmark.load(Ordering::SeqCst)
        {
            sink.bookmark(cursor, true)?;
        }
        let mut next_bookmark =
            next_bookmark_time(Instant::now(), shared.bookmark_interval, deadline);
        loop {
            sink.flush()?;
            let wake = {
                let mut store = shared.store.lock();
                loop {
                    if shared.stopped.load(Ordering::SeqCst) {
                        break Wake::Stopped;
                    }
                    let current = store.rv;
                    // The resource was taken away (its CRD deleted) since the watch opened:
                    // the events up to its removal (its objects' deletions) go out, then the
                    // stream ends cleanly, as kube-apiserver ends it (no ERROR, no BOOKMARK),
                    // even if the resource is served again by now.
                    let ended = store.serving.ended(&r.tk, epoch);
                    match store.collection(&r.tk).events_after(cursor) {
                        Err(oldest) => break Wake::Expired(oldest),
                        Ok(mut evs) => {
                            if let Some(end) = ended {
                                evs.retain(|e| e.rv <= end);
                            }
                            if !evs.is_empty() {
                                break Wake::Events(evs);
                            }
                            if ended.is_some() {
                                break Wake::Timeout;
                            }
                            cursor = cursor.max(current);
                        }
                    }
                    let now = Instant::now();
                    // A bookmark that fell due goes out even when this thread wakes after
                    // the deadline (a loaded machine); none at a version the server has not
                    // reached (a watch from the future waits for it).
                    if bookmarks && next_bookmark.is_some_and(|t| now >= t) && cursor <= current {
                        break Wake::Bookmark(cursor);
                    }
                    if now >= deadline {
                        break Wake::Timeout;
                    }
                    let until = match next_bookmark {
                        Some(t) if bookmarks => deadline.min(t),
                        _ => deadline,
                    };
                    shared.changed.wait_until(&mut store, until);
                }
            };
            match wake {
                Wake::Stopped => return Err(Dropped),
                Wake::Expired(oldest) => {
                    let st = Status::failure(
                        410,
                        "Expired",
                        format!("too old resource version: {cursor} ({oldest})"),
                    );
                    return sink.error(&st);
                }
                Wake::Timeout => return Ok(()),
                Wake::Bookmark(rv) => {
                    sink.bookmark(rv, false)?;
                    next_bookmark =
                        next_bookmark_time(Instant::now(), shared.bookmark_interval, deadline);
                }
                Wake::Events(evs) => {
                    for ev in evs {
                        cursor = ev.rv;
                        let now_in = in_scope(&ev.object);
                        let was_in = ev.prev.as_ref().is_some_and(|p| in_scope(p));
                        let ty = match ev.ty {
                            EventType::Added if now_in => "ADDED",
                            EventType::Modified if now_in && was_in => "MODIFIED",
                            EventType::Modified if now_in => "ADDED",
                            EventType::Modified if was_in => "DELETED",
                            EventType::Deleted if now_in => "DELETED",
                            _ => continue,
                        };
                        sink.event(ty, &ev.object)?;
                    }
                }
            }
        }
    })();
    if result.is_err() && sink.silence_after_events.is_some() {
        // Hold the connection open, sending nothing, until the client gives up (its read
        // timeout closes the socket, which the next probe write notices) or the server stops.
        let peer = sink.out.into_inner();
        let mut store = shared.store.lock();
        while !shared.stopped.load(Ordering::SeqCst) {
            shared
                .changed
                .wait_for(&mut store, Duration::from_millis(200));
            if peer.peer_closed() {
                break;
            }
        }
        drop(store);
        peer.drop_connection();
        return Outcome::Close;
    }
    let result = if sink.ended_by_error { Ok(()) } else { result };
    match result.and_then(|()| sink.flush()) {
        Ok(()) => outcome(sink.out.finish()),
        Err(Dropped) => {
            sink.out.into_inner().drop_connection();
            Outcome::Close
        }
    }
}
