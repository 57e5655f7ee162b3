//! The test server's protobuf (feature `protobuf`), as kube-apiserver 1.36 answers it
//! (`fixtures/apiserver/protobuf/`).
//!
//! Why a file of its own: the handlers build every answer as JSON; when the request's
//! `Accept` picks protobuf for a built-in type, the same JSON is encoded here with the codec
//! (`encode` of the message its `apiVersion`/`kind` name, inside `k8s\0` +
//! `runtime.Unknown`), so the two encodings can never disagree about content. Stored objects
//! sent as they are stored (gets, list items, watch events; not defaulted or converted on
//! read) are encoded once per stored version and kept with it (`storage/encoded.rs`); a
//! [`Shape`] assembles the envelope, the list (ListMeta, then each item as field 2) or the
//! watch frame around those bytes, byte for byte what encoding the whole JSON answer gives
//! (`tests/protobuf_served.rs` compares them), so a protobuf answer costs the server about
//! what a JSON one does. What the captures show, and this imitates:
//!
//! - `Accept`'s media ranges are tried in kube-apiserver's order ([`by_preference`]: by
//!   q-value, then a concrete type before a wildcard) and the first acceptable one wins;
//!   bare protobuf is acceptable for built-in types only,
//!   `as=PartialObjectMetadata(List)` in protobuf for every resource,
//!   `as=Table` never in protobuf; a custom resource asked in protobuf only gets a 406
//!   `Status` in protobuf, with JSON also accepted it gets JSON;
//! - once protobuf is chosen, every answer of that request is protobuf: objects, lists,
//!   `Status` errors, watch frames (4-byte length + bare `WatchEvent` whose object is again
//!   a whole envelope), with HTTP chunks that cut frames in the middle as the streaming
//!   list's do;
//! - request bodies in protobuf: a PATCH is 415; a POST/PUT of a built-in is decoded (400
//!   with the captured texts for a message without the envelope or of another kind); one of
//!   a custom resource gets no answer at all (kube-apiserver's CRD handler panics and drops
//!   the connection: `crd-create-protobuf-body-no-response.json`).
//!
//! The choice is per request and held in a thread-local for the request's duration (the
//! handlers answer a request on one thread), so the many error paths that end in
//! `write_status` need no parameter of their own.

use std::borrow::Cow;
use std::cell::Cell;

use serde_json::Value;

use super::http::Request;
use super::metadata;
use super::store::{Stored, StoredObject};
use crate::api::{ListMeta, Status};
use crate::protobuf::{self as pb, wire, Message};

thread_local! {
    static ANSWERING: Cell<bool> = const { Cell::new(false) };
}

/// While alive, the request being answered on this thread is answered in protobuf.
pub(crate) struct Answering(());

impl Drop for Answering {
    fn drop(&mut self) {
        ANSWERING.with(|a| a.set(false));
    }
}

/// Starts answering in protobuf on this thread.
pub(crate) fn begin() -> Answering {
    ANSWERING.with(|a| a.set(true));
    Answering(())
}

/// True while the request being answered chose protobuf.
#[inline]
pub(crate) fn active() -> bool {
    ANSWERING.with(Cell::get)
}

/// What `Accept` chose.
pub(crate) enum Choice {
    /// Protobuf; `Some(version)`: the metadata-only form in `meta.k8s.io/<version>`.
    Protobuf(Option<String>),
    /// Not protobuf: JSON negotiation decides (and may answer 406 itself).
    Other,
    /// Protobuf only, and not for this resource: 406, in protobuf.
    NotAcceptable,
}

const UNKNOWN_MEDIA: &str = "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf";

/// Picks protobuf or not from `Accept`, for a built-in resource or not. `list`: a list (not
/// a watch or a get), which takes `as=PartialObjectMetadataList`.
pub(crate) fn choose(accept: Option<&str>, list: bool, builtin: bool) -> Choice {
    let Some(accept) = accept else {
        return Choice::Other;
    };
    let mut asked = false;
    for range in by_preference(accept) {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        if media != pb::CONTENT_TYPE {
            if matches!(
                media.as_str(),
                "application/json" | "application/*" | "*/*" | "application/yaml"
            ) {
                return Choice::Other;
            }
            continue;
        }
        asked = true;
        let (mut as_, mut g, mut v) = (None, None, None);
        for p in parts {
            if let Some((k, val)) = p.split_once('=') {
                let val = val.trim().trim_matches('"');
                match k.trim() {
                    "as" => as_ = Some(val),
                    "g" => g = Some(val),
                    "v" => v = Some(val),
                    _ => {}
                }
            }
        }
        match (as_, g, v) {
            (None, _, _) if builtin => return Choice::Protobuf(None),
            (None, _, _) => {}
            (Some(a), Some("meta.k8s.io"), Some(v @ ("v1" | "v1beta1")))
                if (a == "PartialObjectMetadataList") == list
                    && a.starts_with("PartialObjectMetadata") =>
            {
                return Choice::Protobuf(Some(v.to_owned()));
            }
            // `as=Table` (or another form) in protobuf: kube-apiserver answers that one
            // with its JSON 406 (`list-pods-table-protobuf.json`), left to the JSON side.
            (Some(_), _, _) => return Choice::Other,
        }
    }
    if asked {
        Choice::NotAcceptable
    } else {
        Choice::Other
    }
}

/// `Accept`'s media ranges in the order kube-apiserver tries them: its negotiation
/// (github.com/munnerz/goautoneg's `ParseAccept`) sorts them by q-value, highest first, and
/// puts a concrete type or subtype before a wildcard one (so `*/*,
/// application/vnd.kubernetes.protobuf` picks protobuf); a q of 0 is not dropped, a q that
/// does not parse counts as 0, and of two q's the last counts. Its comparison is not a
/// total order, so its result is reproduced as Go's sort gets it for a header's few ranges
/// (an insertion sort up to 12); past that, a stable sort on the same keys (bounded time
/// for a hostile header).
fn by_preference(accept: &str) -> Vec<&str> {
    struct Range<'a> {
        q: f64,
        any_type: bool,
        any_subtype: bool,
        text: &'a str,
    }
    let mut ranges: Vec<Range<'_>> = accept
        .split(',')
        .map(|text| {
            let mut parts = text.split(';');
            let media = parts.next().unwrap_or("").trim();
            let (t, sub) = media.split_once('/').unwrap_or((media, "*"));
            let q = parts
                .filter_map(|p| p.split_once('='))
                .rfind(|(k, _)| k.trim() == "q")
                .map_or(1.0, |(_, v)| v.parse::<f64>().unwrap_or(0.0));
            Range {
                q,
                any_type: t.trim() == "*",
                any_subtype: sub.trim() == "*",
                text,
            }
        })
        .collect();
    let before = |a: &Range<'_>, b: &Range<'_>| {
        a.q > b.q || (!a.any_type && b.any_type) || (!a.any_subtype && b.any_subtype)
    };
    if ranges.len() <= 12 {
        for i in 1..ranges.len() {
            let mut j = i;
            while j > 0 && before(&ranges[j], &ranges[j - 1]) {
                ranges.swap(j, j - 1);
                j -= 1;
            }
        }
    } else {
        ranges.sort_by(|a, b| {
            b.q.total_cmp(&a.q)
                .then(a.any_type.cmp(&b.any_type))
                .then(a.any_subtype.cmp(&b.any_subtype))
        });
    }
    ranges.into_iter().map(|r| r.text).collect()
}

/// The 406 of a custom resource asked for in protobuf only.
pub(crate) fn not_acceptable() -> Status {
    Status::failure(406, "NotAcceptable", UNKNOWN_MEDIA)
}

/// `k8s\0` + `runtime.Unknown` around the protobuf of a JSON answer that names its
/// `apiVersion` and `kind`; `None` when it does not, or the codec has no such message (the
/// answer then goes out as JSON, and the client reads its `Content-Type`).
pub(crate) fn envelope_of(json: &[u8]) -> Option<Vec<u8>> {
    let value: Value = serde_json::from_slice(json).ok()?;
    envelope_of_value(&value)
}

fn envelope_of_value(value: &Value) -> Option<Vec<u8>> {
    let api_version = value.get("apiVersion")?.as_str()?;
    let kind = value.get("kind")?.as_str()?;
    let message = pb::message_for(api_version, kind)?;
    let raw = pb::encode(message, value).ok()?;
    let mut out = Vec::with_capacity(raw.len() + 32);
    pb::write_envelope(api_version, kind, &raw, &mut out);
    Some(out)
}

/// A `Status` in protobuf, as every error of a protobuf request is sent.
pub(crate) fn status(st: &Status) -> Option<Vec<u8>> {
    envelope_of(super::answers::status_json(st).as_bytes())
}

/// One watch frame (length + bare `WatchEvent`) for an event whose object is `object`
/// (JSON with its `kind` and `apiVersion`), appended to `out`; false if it cannot be encoded.
pub(crate) fn frame(event_type: &str, object: &[u8], out: &mut Vec<u8>) -> bool {
    let Some(envelope) = envelope_of(object) else {
        return false;
    };
    let mut event = Vec::with_capacity(envelope.len() + 16);
    pb::write_watch_event(event_type, &envelope, &mut event);
    let Ok(len) = u32::try_from(event.len()) else {
        return false;
    };
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&event);
    true
}

/// How the stored objects of one answer go out in protobuf, with their bytes encoded once
/// per stored version (`storage/encoded.rs`) and the answer assembled around them: the
/// envelope of a get, the items of a list page (field 2 of the `*List` message, after its
/// `ListMeta`), the object of each watch frame. Byte for byte what encoding the same
/// answer's JSON gives ([`envelope_of`], [`frame`]), which the tests compare.
pub(crate) struct Shape {
    api_version: String,
    kind: String,
    /// The item message: the resource's own, or `PartialObjectMetadata`.
    message: Message,
    metadata: bool,
}

impl Shape {
    /// The shape of objects of `kind` in `api_version` answered in `form`, when this request
    /// is answered in protobuf and the codec knows the message; `None` otherwise (the answer
    /// is then built from JSON, as before). Only for stored JSON served as it is: a caller
    /// whose objects are defaulted or converted on read must not ask.
    pub(crate) fn new(api_version: &str, kind: &str, form: &metadata::Form) -> Option<Shape> {
        if !active() {
            return None;
        }
        let (api_version, kind, metadata) = match form {
            metadata::Form::Full => (api_version.to_owned(), kind.to_owned(), false),
            metadata::Form::Metadata { version } => (
                format!("meta.k8s.io/{version}"),
                "PartialObjectMetadata".to_owned(),
                true,
            ),
        };
        let message = pb::message_for(&api_version, &kind)?;
        Some(Shape {
            api_version,
            kind,
            message,
            metadata,
        })
    }

    /// [`Shape::new`] from the JSON string literals a watch keeps (`"Pod"`, `"v1"`).
    pub(crate) fn quoted(api_version: &str, kind: &str, form: &metadata::Form) -> Option<Shape> {
        let api_version: String = serde_json::from_str(api_version).ok()?;
        let kind: String = serde_json::from_str(kind).ok()?;
        Shape::new(&api_version, &kind, form)
    }

    /// The message bytes of one stored object (a list item; `raw` of an envelope).
    fn item<'a>(&self, o: &'a StoredObject) -> Option<Cow<'a, [u8]>> {
        match self.metadata {
            false => o.encoded.full(&o.json, self.message),
            true => o.encoded.metadata(&o.json, self.message),
        }
    }

    /// A get's answer: the object in its envelope.
    pub(crate) fn object(&self, o: &StoredObject) -> Option<Vec<u8>> {
        let raw = self.item(o)?;
        let mut out = Vec::with_capacity(envelope_len(&self.api_version, &self.kind, raw.len()));
        put_envelope(&self.api_version, &self.kind, &raw, &mut out);
        Some(out)
    }

    /// A list page: the `*List` message of `meta` and the page's objects, in its envelope.
    /// `None` when the list's message is not `{1: ListMeta, 2: repeated items}` or an item
    /// cannot be encoded.
    pub(crate) fn list(&self, meta: &ListMeta, page: &[Stored]) -> Option<Vec<u8>> {
        let list_kind = format!("{}List", self.kind);
        let list = pb::message_for(&self.api_version, &list_kind)?;
        // Items are appended after the rest of the message: right only when the message is
        // exactly ListMeta (1) then the items (2), as every Kubernetes list is.
        let numbers = list.desc().fields.iter().map(|f| f.0);
        if list.list_item() != Some(self.message) || !numbers.eq([1, 2]) {
            return None;
        }
        let head = pb::encode(list, &serde_json::json!({ "metadata": meta })).ok()?;
        let items: Vec<Cow<'_, [u8]>> = page.iter().map(|o| self.item(o)).collect::<Option<_>>()?;
        let raw_len = head.len()
            + items
                .iter()
                .map(|i| 1 + wire::varint_len(i.len() as u64) + i.len())
                .sum::<usize>();
        let mut out = Vec::with_capacity(envelope_len(&self.api_version, &list_kind, raw_len));
        put_envelope_head(&self.api_version, &list_kind, raw_len, &mut out);
        out.extend_from_slice(&head);
        for item in &items {
            wire::put_bytes(&mut out, 2, item);
        }
        out.extend_from_slice(ENVELOPE_TAIL);
        Some(out)
    }

    /// One watch frame (length + bare `WatchEvent`) for a stored object, appended to `out`;
    /// false (nothing appended) if it cannot be encoded.
    pub(crate) fn frame(&self, event_type: &str, o: &StoredObject, out: &mut Vec<u8>) -> bool {
        let Some(raw) = self.item(o) else {
            return false;
        };
        let envelope = envelope_len(&self.api_version, &self.kind, raw.len());
        let extension = 1 + wire::varint_len(envelope as u64) + envelope;
        let event = 1
            + wire::varint_len(event_type.len() as u64)
            + event_type.len()
            + 1
            + wire::varint_len(extension as u64)
            + extension;
        let Ok(len) = u32::try_from(event) else {
            return false;
        };
        out.reserve(4 + event);
        out.extend_from_slice(&len.to_be_bytes());
        wire::put_bytes(out, 1, event_type.as_bytes());
        wire::put_tag(out, 2, wire::LEN);
        wire::put_varint(out, extension as u64);
        wire::put_tag(out, 1, wire::LEN);
        wire::put_varint(out, envelope as u64);
        put_envelope(&self.api_version, &self.kind, &raw, out);
        true
    }
}

/// What follows `raw` in an envelope: empty `contentEncoding` (3) and `contentType` (4), as
/// [`pb::write_envelope`] writes them.
const ENVELOPE_TAIL: &[u8] = b"\x1a\x00\x22\x00";

fn type_meta_len(api_version: &str, kind: &str) -> usize {
    2 + wire::varint_len(api_version.len() as u64)
        + api_version.len()
        + wire::varint_len(kind.len() as u64)
        + kind.len()
}

/// The length of [`pb::write_envelope`]'s output for a `raw` of `raw_len` bytes.
fn envelope_len(api_version: &str, kind: &str, raw_len: usize) -> usize {
    let type_meta = type_meta_len(api_version, kind);
    pb::MAGIC.len()
        + 1
        + wire::varint_len(type_meta as u64)
        + type_meta
        + 1
        + wire::varint_len(raw_len as u64)
        + raw_len
        + ENVELOPE_TAIL.len()
}

/// [`pb::write_envelope`] up to the bytes of `raw` (which the caller writes, then
/// [`ENVELOPE_TAIL`]).
fn put_envelope_head(api_version: &str, kind: &str, raw_len: usize, out: &mut Vec<u8>) {
    out.extend_from_slice(pb::MAGIC);
    wire::put_tag(out, 1, wire::LEN);
    wire::put_varint(out, type_meta_len(api_version, kind) as u64);
    wire::put_bytes(out, 1, api_version.as_bytes());
    wire::put_bytes(out, 2, kind.as_bytes());
    wire::put_tag(out, 2, wire::LEN);
    wire::put_varint(out, raw_len as u64);
}

/// [`pb::write_envelope`], written as [`put_envelope_head`] + `raw` + [`ENVELOPE_TAIL`].
fn put_envelope(api_version: &str, kind: &str, raw: &[u8], out: &mut Vec<u8>) {
    put_envelope_head(api_version, kind, raw.len(), out);
    out.extend_from_slice(raw);
    out.extend_from_slice(ENVELOPE_TAIL);
}

/// Chunks of a protobuf watch are at most this long: frames of a few kilobytes are cut
/// across chunks, as kube-apiserver's streaming list cuts them.
pub(crate) const CHUNK: usize = 2048;

/// Whether a request's body is protobuf.
pub(crate) fn has_protobuf_body(req: &Request) -> bool {
    req.header("content-type")
        .and_then(|t| t.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case(pb::CONTENT_TYPE))
}

/// What to do with a write whose body is protobuf.
pub(crate) enum BodyOutcome {
    /// The same request with the body as JSON.
    Json(Request),
    /// Answer this Status.
    Refuse(Status),
    /// No answer: the connection drops (a custom resource's handler panics).
    Drop,
}

/// The protobuf body of a write to a resource of `kind` in `api_version` (`builtin` or
/// not), turned into the JSON request the handlers know.
pub(crate) fn body_as_json(
    req: &Request,
    kind: &str,
    api_version: &str,
    builtin: bool,
) -> BodyOutcome {
    if req.method == "PATCH" {
        let mut st = Status::failure(415, "UnsupportedMediaType", "415: Unsupported Media Type");
        st.details = Some(Default::default());
        return BodyOutcome::Refuse(st);
    }
    if !builtin {
        return BodyOutcome::Drop;
    }
    let env = match pb::read_envelope(&req.body) {
        Ok(env) => env,
        Err(_) => {
            let start: String = req
                .body
                .iter()
                .take(32)
                .map(|b| format!("{b:02x}"))
                .collect();
            return BodyOutcome::Refuse(Status::failure(
                400,
                "BadRequest",
                format!("the object provided is unrecognized (must be of type {kind}): provided data does not appear to be a protobuf message, expected prefix [107 56 115 0] ({start})"),
            ));
        }
    };
    if env.kind != kind || env.api_version != api_version {
        let (group, version) = env
            .api_version
            .rsplit_once('/')
            .unwrap_or(("", env.api_version));
        let _ = group;
        return BodyOutcome::Refuse(Status::failure(
            400,
            "BadRequest",
            format!(
                "{} in version {version:?} cannot be handled as a {kind}: converting ({version}.{}) to (core.{kind}): unknown conversion",
                env.kind, env.kind
            ),
        ));
    }
    let decoded = pb::message_for(env.api_version, env.kind)
        .and_then(|m| pb::decode::<Value>(m, env.raw).ok());
    let Some(mut value) = decoded else {
        return BodyOutcome::Refuse(Status::failure(
            400,
            "BadRequest",
            format!("the object provided is unrecognized (must be of type {kind}): the protobuf message could not be decoded"),
        ));
    };
    if let Some(map) = value.as_object_mut() {
        map.insert("apiVersion".into(), Value::from(env.api_version));
        map.insert("kind".into(), Value::from(env.kind));
    }
    let body = serde_json::to_vec(&value).unwrap_or_default();
    let mut headers = req.headers.clone();
    headers.insert("content-type".into(), "application/json".into());
    headers.insert("content-length".into(), body.len().to_string());
    let header_list = req
        .header_list
        .iter()
        .map(|(k, v)| match k.as_str() {
            "content-type" => (k.clone(), "application/json".to_owned()),
            "content-length" => (k.clone(), body.len().to_string()),
            _ => (k.clone(), v.clone()),
        })
        .collect();
    BodyOutcome::Json(Request {
        method: req.method.clone(),
        path: req.path.clone(),
        query: req.query.clone(),
        query_pairs: req.query_pairs.clone(),
        headers,
        header_list,
        body,
    })
}
