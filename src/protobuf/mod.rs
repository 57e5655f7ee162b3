//! Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`) for built-in types,
//! without protoc and without generated structs.
//!
//! kube-apiserver answers built-in types in protobuf in about 0.6x the time of JSON, with a
//! quarter fewer bytes. This module turns those bytes into the types users already hold
//! (k8s-openapi's, our metadata-only objects, `serde_json::Value`, their own `Deserialize`
//! types) and back, giving exactly what the same object's JSON would give. It holds:
//! - `wire`: varints, tags and length-checked slices (a hostile length is an error, never an
//!   allocation);
//! - `envelope`: the `k8s\0` + `runtime.Unknown` envelope, watch events, list items;
//! - `error`: [`ProtobufError`], which names offsets and field paths, never payload bytes;
//! - `tables`: every built-in message's field numbers, types, JSON names and Go tag flags,
//!   generated from the Kubernetes 1.36 sources by `.ci/protobuf/generate.py` (committed:
//!   no protoc, no build script); `descriptor` says what they mean, `message` finds one
//!   ([`message_for`], [`message_by_name`]);
//! - `de`: [`decode`], a serde `Deserializer` driven by a descriptor over the bytes (no
//!   intermediate tree), rendering Kubernetes' special shapes as Go's JSON does;
//! - `ser`: [`encode`], any `Serialize` value written as Go's marshaller writes it, and
//!   [`encode_exact`] for request bodies (an error, never a skip, for what it cannot carry);
//! - `time`: Time, MicroTime and Duration as Go's JSON text.
//!
//! Why tables and not generated structs (prost and protoc): users already hold their types
//! (k8s-openapi's, their own); decoding straight into them through serde skips a second
//! struct and a conversion, and adds no dependency. The tables are facts (names and
//! numbers), 240 KB of source for all 1,200 messages.

mod de;
mod descriptor;
mod envelope;
mod error;
mod message;
mod nesting;
mod raw_text;
mod rope;
mod ser;
#[cfg(test)]
mod ser_oracle;
#[rustfmt::skip]
mod tables;
mod time;
mod transcode;
pub(crate) mod wire;
mod zero;

pub use de::MAX_DEPTH;
pub use envelope::{
    read_envelope, read_watch_event, split_list, write_envelope, write_watch_event, Envelope,
    ListParts, WatchEventFrame, MAGIC,
};
pub use error::ProtobufError;
pub use message::{message_by_name, message_for, Message};

/// The media type of a protobuf body (request or answer).
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// The media type of a protobuf watch: frames of a 4-byte big-endian length and a bare
/// `WatchEvent` (see [`read_watch_event`]).
pub const WATCH_CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// Decodes a message into any `Deserialize` type, giving exactly what `T` would get from
/// the server's JSON for the same object: `omitempty` zeros dropped, Time as RFC 3339,
/// IntOrString, Quantity, FieldsV1 and RawExtension as JSON values, `bytes` as base64, maps
/// as objects, unknown fields skipped. The message's bytes are `raw` of its envelope (or an
/// item of [`split_list`]); `apiVersion` and `kind` are not in them (see
/// [`decode_envelope`]).
///
/// ```
/// # #[cfg(feature = "protobuf")] {
/// use kube_informer::protobuf::{decode, encode, message_for};
/// let config_map = message_for("v1", "ConfigMap").unwrap();
/// let json = serde_json::json!({"metadata": {"name": "settings", "namespace": "lab"}, "data": {"mode": "fast"}});
/// let bytes = encode(config_map, &json).unwrap();
/// let back: serde_json::Value = decode(config_map, &bytes).unwrap();
/// assert_eq!(back["metadata"]["name"], "settings");
/// assert_eq!(back["data"]["mode"], "fast");
/// # }
/// ```
pub fn decode<T: serde::de::DeserializeOwned>(
    message: Message,
    raw: &[u8],
) -> Result<T, ProtobufError> {
    de::decode_message(message, raw, None)
}

/// Decodes a whole envelope (a body's, or a watch event's object) into `T`, with the
/// envelope's `apiVersion` and `kind` given first, as a JSON body has them. Fails for a
/// type the tables do not hold.
pub fn decode_envelope<T: serde::de::DeserializeOwned>(
    envelope: &Envelope<'_>,
) -> Result<T, ProtobufError> {
    let message = message_for(envelope.api_version, envelope.kind).ok_or_else(|| {
        ProtobufError::new("no built-in message for the envelope's apiVersion and kind")
    })?;
    de::decode_message(
        message,
        envelope.raw,
        Some((envelope.api_version, envelope.kind)),
    )
}

/// Encodes any `Serialize` value (a k8s-openapi type, or a `serde_json::Value` of the JSON
/// form) as Go's marshaller writes that message: field-number order, every non-pointer
/// field written, map keys sorted. `apiVersion` and `kind` are ignored (they go in the
/// envelope: [`write_envelope`]).
pub fn encode<T: serde::Serialize + ?Sized>(
    message: Message,
    value: &T,
) -> Result<Vec<u8>, ProtobufError> {
    ser::encode_message(message, value)
}

/// As [`encode`] (lenient), from JSON text, read as it is parsed: no `serde_json::Value` is
/// built. The test server encodes its stored objects this way.
///
/// ```
/// use kube_informer::protobuf::{encode, encode_json, message_for};
///
/// let config_map = message_for("v1", "ConfigMap").unwrap();
/// let text = r#"{"metadata":{"name":"settings"},"data":{"mode":"fast"}}"#;
/// let tree: serde_json::Value = serde_json::from_str(text).unwrap();
/// assert_eq!(encode_json(config_map, text).unwrap(), encode(config_map, &tree).unwrap());
/// assert!(encode_json(config_map, "{not json").is_err());
/// ```
pub fn encode_json(message: Message, text: &str) -> Result<Vec<u8>, ProtobufError> {
    ser::encode_json_text(message, text)
}

/// Encodes a request body's message *exactly*: as [`encode`], but anything the tables
/// cannot carry exactly is an error instead of being skipped, so a write can never lose a
/// field silently (a member the message does not declare, as a newer k8s-openapi or a
/// user's own type may have, even `null`; a float where Go wants an integer; a time, a
/// duration or a quantity in a form Go's JSON would read differently). At the top,
/// `apiVersion` and `kind` may be present only with `type_meta`'s values. On an error, send
/// the JSON instead: that is what [`Api`](crate::Api)'s writes do.
///
/// ```
/// # #[cfg(feature = "protobuf")] {
/// use kube_informer::protobuf::{encode_exact, message_for};
/// let config_map = message_for("v1", "ConfigMap").unwrap();
/// let known = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
///     "metadata": {"name": "settings"}, "data": {"mode": "fast"}});
/// assert!(encode_exact(config_map, ("v1", "ConfigMap"), &known).is_ok());
/// // A member the 1.36 tables do not declare: refused, never dropped.
/// let newer = serde_json::json!({"metadata": {"name": "settings"}, "newField": true});
/// assert!(encode_exact(config_map, ("v1", "ConfigMap"), &newer).is_err());
/// # }
/// ```
pub fn encode_exact<T: serde::Serialize + ?Sized>(
    message: Message,
    type_meta: (&str, &str),
    value: &T,
) -> Result<Vec<u8>, ProtobufError> {
    ser::encode_message_exact(message, type_meta, value)
}
