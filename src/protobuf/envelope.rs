//! The frames around every protobuf object: kube-apiserver's `k8s\0` envelope, a watch
//! event, and the items of a list.
//!
//! These are read without the descriptor tables: each is a fixed, tiny message
//! (`runtime.Unknown`, `meta.v1.WatchEvent`, any `*List`), and the HTTP layer needs them
//! before it knows what type the object is. Everything is borrowed from the input.

use super::wire::{self, put_bytes, put_tag, put_varint, Reader, Value};
use super::ProtobufError;

/// The four bytes in front of every protobuf body kube-apiserver sends or accepts.
pub const MAGIC: &[u8; 4] = b"k8s\0";

/// A body's envelope: `k8s\0` + `runtime.Unknown{typeMeta{apiVersion, kind}, raw,
/// contentEncoding, contentType}`, borrowed from the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope<'a> {
    /// `typeMeta.apiVersion`: `v1`, `apps/v1`, `meta.k8s.io/v1` (`""` for some discovery).
    pub api_version: &'a str,
    /// `typeMeta.kind`: `Pod`, `PodList`, `Status`, `PartialObjectMetadataList`, ...
    pub kind: &'a str,
    /// The object's own message bytes (a bare `v1.Pod`, ...).
    pub raw: &'a [u8],
}

fn utf8<'a>(bytes: &'a [u8], at: usize, what: &'static str) -> Result<&'a str, ProtobufError> {
    std::str::from_utf8(bytes).map_err(|_| ProtobufError::at(what, at))
}

/// Reads a body's envelope.
///
/// Fails when the body does not start with `k8s\0`, when the `Unknown` message is not well
/// formed, or when its `contentEncoding` is set (kube-apiserver never sets it; a compressed
/// or otherwise encoded `raw` is not something we can read). Unknown fields are skipped.
///
/// ```
/// # #[cfg(feature = "protobuf")] {
/// use kube_informer::protobuf::{read_envelope, write_envelope};
/// let mut body = Vec::new();
/// write_envelope("v1", "ConfigMap", b"\x0a\x00", &mut body);
/// let envelope = read_envelope(&body).unwrap();
/// assert_eq!((envelope.api_version, envelope.kind, envelope.raw), ("v1", "ConfigMap", &b"\x0a\x00"[..]));
/// # }
/// ```
pub fn read_envelope(body: &[u8]) -> Result<Envelope<'_>, ProtobufError> {
    if body.len() < 4 || &body[..4] != MAGIC {
        return Err(ProtobufError::at(
            "not a protobuf body: it does not start with k8s\\0",
            0,
        ));
    }
    let mut reader = Reader::new(&body[4..], 4);
    let mut envelope = Envelope {
        api_version: "",
        kind: "",
        raw: &[],
    };
    while let Some((field, at, value)) = reader.field()? {
        match (field, value) {
            (1, Value::Len(type_meta)) => {
                let mut inner = Reader::new(type_meta, at);
                while let Some((field, at, value)) = inner.field()? {
                    match (field, value) {
                        (1, Value::Len(s)) => {
                            envelope.api_version = utf8(s, at, "apiVersion is not UTF-8")?
                        }
                        (2, Value::Len(s)) => envelope.kind = utf8(s, at, "kind is not UTF-8")?,
                        (1 | 2, _) => {
                            return Err(ProtobufError::at("wrong wire type in typeMeta", at))
                        }
                        _ => {}
                    }
                }
            }
            (2, Value::Len(raw)) => envelope.raw = raw,
            (3, Value::Len(encoding)) if !encoding.is_empty() => {
                return Err(ProtobufError::at(
                    "unsupported contentEncoding in the envelope",
                    at,
                ));
            }
            (3, Value::Len(_)) => {}
            (4, Value::Len(_)) => {}
            (1..=4, _) => return Err(ProtobufError::at("wrong wire type in the envelope", at)),
            _ => {}
        }
    }
    Ok(envelope)
}

/// Writes `k8s\0` and the `Unknown` around `raw`, with all four fields as kube-apiserver
/// writes them (`contentEncoding` and `contentType` empty).
pub fn write_envelope(api_version: &str, kind: &str, raw: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(MAGIC);
    let type_meta_len = 2
        + api_version.len()
        + wire::varint_len(api_version.len() as u64)
        + kind.len()
        + wire::varint_len(kind.len() as u64);
    put_tag(out, 1, wire::LEN);
    put_varint(out, type_meta_len as u64);
    put_bytes(out, 1, api_version.as_bytes());
    put_bytes(out, 2, kind.as_bytes());
    put_bytes(out, 2, raw);
    put_bytes(out, 3, b"");
    put_bytes(out, 4, b"");
}

/// One watch frame's payload (after its 4-byte big-endian length): a bare
/// `meta.v1.WatchEvent{1: type, 2: RawExtension{1: raw}}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchEventFrame<'a> {
    /// `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR` (not checked here).
    pub event_type: &'a str,
    /// The object: a full `k8s\0` envelope (read it with [`read_envelope`]).
    pub object: &'a [u8],
}

/// Reads one watch event (the frame without its length prefix).
pub fn read_watch_event(frame: &[u8]) -> Result<WatchEventFrame<'_>, ProtobufError> {
    let mut reader = Reader::new(frame, 0);
    let mut event = WatchEventFrame {
        event_type: "",
        object: &[],
    };
    while let Some((field, at, value)) = reader.field()? {
        match (field, value) {
            (1, Value::Len(s)) => event.event_type = utf8(s, at, "watch event type is not UTF-8")?,
            (2, Value::Len(raw_extension)) => {
                let mut inner = Reader::new(raw_extension, at);
                while let Some((field, at, value)) = inner.field()? {
                    match (field, value) {
                        (1, Value::Len(raw)) => event.object = raw,
                        (1, _) => {
                            return Err(ProtobufError::at(
                                "wrong wire type in the watch object",
                                at,
                            ))
                        }
                        _ => {}
                    }
                }
            }
            (1 | 2, _) => return Err(ProtobufError::at("wrong wire type in the watch event", at)),
            _ => {}
        }
    }
    Ok(event)
}

/// Writes one watch event (without the frame's length prefix; the caller writes
/// `(len as u32).to_be_bytes()` first). `object_envelope` is a full `k8s\0` body.
pub fn write_watch_event(event_type: &str, object_envelope: &[u8], out: &mut Vec<u8>) {
    put_bytes(out, 1, event_type.as_bytes());
    let inner = 1 + wire::varint_len(object_envelope.len() as u64) + object_envelope.len();
    put_tag(out, 2, wire::LEN);
    put_varint(out, inner as u64);
    put_bytes(out, 1, object_envelope);
}

/// The parts of any `*List` message: field 1 is its `ListMeta`, field 2 its items (bare
/// messages of the item type, no envelope, no per-item kind).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListParts<'a> {
    /// The `ListMeta` message's bytes (empty when absent).
    pub metadata: &'a [u8],
    /// Each item's message bytes, in order.
    pub items: Vec<&'a [u8]>,
}

/// Splits a list message into its metadata and items. The item vector grows with items
/// found (each costs at least two bytes of input), never with a length read from the input.
pub fn split_list(raw: &[u8]) -> Result<ListParts<'_>, ProtobufError> {
    let mut reader = Reader::new(raw, 0);
    let mut parts = ListParts::default();
    while let Some((field, at, value)) = reader.field()? {
        match (field, value) {
            (1, Value::Len(meta)) => parts.metadata = meta,
            (2, Value::Len(item)) => parts.items.push(item),
            (1 | 2, _) => return Err(ProtobufError::at("wrong wire type in the list", at)),
            _ => {}
        }
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_captured_list_reads_and_writes_back() {
        // list-pods-empty.json: 39 bytes
        let body: &[u8] = b"k8s\0\x0a\x0d\x0a\x02v1\x12\x07PodList\x12\x0e\x0a\x0c\x0a\x00\x12\x06184691\x1a\x00\x1a\x00\x22\x00";
        let envelope = read_envelope(body).unwrap();
        assert_eq!(envelope.api_version, "v1");
        assert_eq!(envelope.kind, "PodList");
        let list = split_list(envelope.raw).unwrap();
        assert_eq!(list.metadata, b"\x0a\x00\x12\x06184691\x1a\x00");
        assert!(list.items.is_empty());
        let mut out = Vec::new();
        write_envelope("v1", "PodList", envelope.raw, &mut out);
        assert_eq!(out, body);
    }

    #[test]
    fn bad_envelopes_are_errors() {
        assert!(read_envelope(b"").is_err());
        assert!(read_envelope(b"k8s").is_err());
        assert!(read_envelope(b"\x0a\x09\x0a\x07cm-bare").is_err());
        assert!(read_envelope(b"k8s\0\x12\x05abc").is_err()); // truncated raw
        assert!(read_envelope(b"k8s\0\x1a\x04gzip").is_err()); // an encoding we cannot read
        assert!(read_envelope(b"k8s\0\x10\x01").is_err()); // raw as a varint
    }

    #[test]
    fn watch_events_round_trip() {
        let mut envelope = Vec::new();
        write_envelope("v1", "Pod", b"\x0a\x00", &mut envelope);
        let mut frame = Vec::new();
        write_watch_event("ADDED", &envelope, &mut frame);
        let event = read_watch_event(&frame).unwrap();
        assert_eq!(event.event_type, "ADDED");
        assert_eq!(event.object, &envelope[..]);
    }
}
