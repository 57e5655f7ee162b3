//! Reading kube-apiserver's protobuf answers into the types users hold (feature `protobuf`).
//!
//! Why a file of its own: the JSON paths stay untouched (and as fast); these functions are
//! what the client calls when an answer's `Content-Type` says protobuf. The codec
//! ([`crate::protobuf`]) knows messages and bytes; this file knows the shapes of answers:
//!
//! - an object or a `Status`: `k8s\0` + `runtime.Unknown{typeMeta, raw}`, `raw` being the
//!   message the envelope's `apiVersion` and `kind` name;
//! - a list: the same envelope around a `*List` message whose items are bare messages of the
//!   list's item type (no envelope, no `kind` per item);
//! - a watch frame: a bare `WatchEvent{type, object: RawExtension{raw}}` whose `raw` is again
//!   a whole envelope (the object, a bookmark's object, or an `ERROR`'s `Status`).
//!
//! Errors say what and where, never the bytes (an object may be a Secret); the envelope's
//! `apiVersion`/`kind` are the server's words and are quoted short and escaped.

use super::list::ObjectList;
use super::meta::ListMeta;
use super::resource::Object;
use super::status::Status;
use super::watch_event::{BookmarkObject, WatchEvent};
use crate::protobuf::{self as pb, Envelope, Message};

/// The message of `meta.v1.ListMeta`.
const LIST_META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.ListMeta";
/// The message of `meta.v1.Status`.
const STATUS: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.Status";

/// A name from the server, fit for an error message: at most 80 characters, escaped.
fn quoted(s: &str) -> String {
    let short: String = s.chars().take(80).collect();
    format!("{short:?}")
}

/// `K` from a message's bytes, without `managedFields` when this thread's decoding skips
/// them (the reflector's `strip_managed_fields`): the JSON decoder never reads them, the
/// codec reads them and they are dropped here, so the cache holds the same either way.
fn decoded<K: Object>(message: Message, raw: &[u8]) -> Result<K, pb::ProtobufError> {
    let mut object = K::from_protobuf(message, raw)?;
    if crate::json::decode_options::strip_managed_fields() {
        crate::api::Meta::strip_managed_fields(object.metadata_mut());
    }
    Ok(object)
}

/// The envelope of `body` and the message its type names.
fn open(body: &[u8]) -> Result<(Envelope<'_>, Message), String> {
    let env = pb::read_envelope(body).map_err(|e| format!("the protobuf envelope: {e}"))?;
    let message = pb::message_for(env.api_version, env.kind).ok_or_else(|| {
        format!(
            "no protobuf message is known for apiVersion {} kind {}",
            quoted(env.api_version),
            quoted(env.kind)
        )
    })?;
    Ok((env, message))
}

/// The message of `meta.v1.PartialObjectMetadata`.
const PARTIAL_OBJECT_METADATA: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.PartialObjectMetadata";

/// Refuses an object whose envelope names another type than `K`'s: `K`'s JSON decoding
/// refuses another `apiVersion` or `kind` (k8s-openapi's types check both), and decoding one
/// message's bytes as another's would hand the caller a wrong object (a ConfigMap's name and
/// data as a Pod). A metadata-only `K` reads any object's metadata, as its JSON does, and a
/// `K` without a message (never asked for protobuf) is left to its decoding.
fn expect<K: Object>(env: &Envelope<'_>, message: Message) -> Result<(), String> {
    match K::protobuf_message() {
        Some(own)
            if own != message && Some(own) != pb::message_by_name(PARTIAL_OBJECT_METADATA) =>
        {
            Err(format!(
                "the answer is apiVersion {} kind {}, not {}",
                quoted(env.api_version),
                quoted(env.kind),
                own.proto_name()
            ))
        }
        _ => Ok(()),
    }
}

/// One object answered in protobuf (a get, a write's answer).
pub(crate) fn object<K: Object>(body: &[u8]) -> Result<K, String> {
    let (env, message) = open(body)?;
    expect::<K>(&env, message)?;
    decoded::<K>(message, env.raw).map_err(|e| {
        format!(
            "decoding the {} from protobuf: {e}",
            quoted(env.kind).trim_matches('"')
        )
    })
}

/// A DELETE's answer in protobuf: the object (still being deleted), or the `Status` saying
/// it is gone.
pub(crate) fn object_or_status<K: Object>(body: &[u8]) -> Result<Result<K, Box<Status>>, String> {
    let (env, message) = open(body)?;
    // By its kind, whatever the group its apiVersion names (`v1`, `meta.k8s.io/v1`), as the
    // JSON path tells a Status from the object.
    if env.kind == "Status" {
        let st = pb::decode(message, env.raw).map_err(|e| format!("decoding the Status: {e}"))?;
        return Ok(Err(Box::new(st)));
    }
    object(body).map(Ok)
}

/// A `Status` in protobuf (an error's body, a DELETE's answer); `None` when `body` is not
/// one.
pub(crate) fn status(body: &[u8]) -> Option<Status> {
    let env = pb::read_envelope(body).ok()?;
    if env.kind != "Status" {
        return None;
    }
    pb::decode(pb::message_by_name(STATUS)?, env.raw).ok()
}

/// The list metadata of a list's message bytes (`raw` of the envelope).
fn list_meta(raw: &[u8]) -> Result<(ListMeta, pb::ListParts<'_>), String> {
    let parts = pb::split_list(raw).map_err(|e| format!("the list: {e}"))?;
    let meta = pb::message_by_name(LIST_META).ok_or("the codec has no ListMeta")?;
    let metadata =
        pb::decode(meta, parts.metadata).map_err(|e| format!("the list's metadata: {e}"))?;
    Ok((metadata, parts))
}

/// A list (or one page of it) answered in protobuf.
pub(crate) fn list<K: Object>(body: &[u8]) -> Result<ObjectList<K>, String> {
    let (env, message) = open(body)?;
    let item = message
        .list_item()
        .ok_or_else(|| format!("{} is not a list", quoted(env.kind)))?;
    expect::<K>(&env, item)?;
    let (metadata, parts) = list_meta(env.raw)?;
    let mut items = Vec::with_capacity(parts.items.len());
    for (i, raw) in parts.items.iter().enumerate() {
        items.push(decoded::<K>(item, raw).map_err(|e| format!("item {i}: {e}"))?);
    }
    Ok(ObjectList {
        kind: Some(env.kind.to_owned()),
        api_version: Some(env.api_version.to_owned()),
        metadata,
        items,
    })
}

/// The continue token of a protobuf list page, read before its items are decoded.
pub(crate) fn peek_continue(body: &[u8]) -> Option<String> {
    let env = pb::read_envelope(body).ok()?;
    let (metadata, _) = list_meta(env.raw).ok()?;
    metadata.continue_token.filter(|c| !c.is_empty())
}

/// One frame of a protobuf watch (its payload, without the 4-byte length).
pub(crate) fn watch_event<K: Object>(frame: &[u8]) -> Result<WatchEvent<K>, String> {
    let event = pb::read_watch_event(frame).map_err(|e| format!("the watch event: {e}"))?;
    let (env, message) = open(event.object).map_err(|e| format!("the event's object: {e}"))?;
    let object = || {
        expect::<K>(&env, message).map_err(|e| format!("the event's object: {e}"))?;
        decoded::<K>(message, env.raw).map_err(|e| format!("the event's object: {e}"))
    };
    Ok(match event.event_type {
        "ADDED" => WatchEvent::Added(object()?),
        "MODIFIED" => WatchEvent::Modified(object()?),
        "DELETED" => WatchEvent::Deleted(object()?),
        "BOOKMARK" => WatchEvent::Bookmark(
            pb::decode::<BookmarkObject>(message, env.raw)
                .map_err(|e| format!("the bookmark's object: {e}"))?
                .into(),
        ),
        "ERROR" => WatchEvent::Error(Box::new(
            pb::decode::<Status>(message, env.raw)
                .map_err(|e| format!("the error's Status: {e}"))?,
        )),
        other => return Err(format!("unknown watch event type {}", quoted(other))),
    })
}
