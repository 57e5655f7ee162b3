//! Request bodies in protobuf (feature `protobuf`): when a create or an update of a built-in
//! type goes as `application/vnd.kubernetes.protobuf`, and when it stays JSON.
//!
//! Why a file of its own: the rule is the whole point. kube-apiserver decodes a protobuf body
//! faster than JSON, but a body must never carry less than its JSON would. So protobuf is
//! sent only when every one of these holds, and JSON otherwise, for that write alone:
//!
//! - the client allows it ([`ClientConfig::protobuf_bodies`](super::ClientConfig), default
//!   on), and no 415 has moved this type back to JSON on this client;
//! - `K` is a full object type with a built-in message (`protobuf_message()`), and the
//!   `Api`'s resource is that very type (never a custom resource: kube-apiserver's CRD
//!   handler crashes on a protobuf body and never answers; never a metadata-only type, whose
//!   writes send whatever body the caller gives);
//! - the write does not ask for `fieldValidation=Strict`: the server finds unknown fields
//!   only in JSON, so protobuf would turn its 400 into a silent drop;
//! - the codec encodes the body *exactly* ([`encode_exact`](crate::protobuf::encode_exact)):
//!   a member the tables do not know (a newer k8s-openapi's field, a user type's extra
//!   field), a value Go's JSON would read differently, or `apiVersion`/`kind` naming another
//!   type make it JSON. Nothing is remembered from such a refusal: the next object of the
//!   same type may encode fine;
//! - the codec is given the JSON *text* the write would send, read back ([`as_sent`]), not
//!   the body's `Serialize` straight (except for a `serde_json::Value` and k8s-openapi's
//!   own types, whose text is their value): a body type may write what no JSON value holds, and
//!   kube-apiserver stores what Go reads from the text. A member named twice in one object
//!   (a `#[serde(flatten)]` beside a field of the same name) is merged by Go into one
//!   struct, but a value keeps one of the two: such a body goes as JSON. An `f32` is
//!   written as its own shortest digits (`0.1`), which Go keeps (in a `RawExtension` as
//!   text); through a value it would widen to `0.10000000149011612` first. Integers past
//!   64 bits (a `u128`'s digits) would come back as floats: such a body goes as JSON.
//!
//! Patches are never protobuf (kube-apiserver answers 415). A 415 to a protobuf body (an
//! aggregated API, an older server) is answered by the `Api` with the same write in JSON,
//! once, and the type is remembered here so its writes go JSON from then on.

use std::collections::HashSet;

use serde::Serialize;

use super::write_params::{FieldValidation, PostParams};
use super::Client;
use crate::api::{ApiResource, Object};
use crate::protobuf as pb;

/// The types (`apiVersion`, `kind`) a 415 moved back to JSON, per client. Only types with a
/// built-in message get here, so it holds at most the tables' few hundred kinds.
#[derive(Default)]
pub(crate) struct JsonBodies(parking_lot::Mutex<HashSet<(String, String)>>);

impl JsonBodies {
    fn has(&self, resource: &ApiResource) -> bool {
        self.0
            .lock()
            .contains(&(resource.api_version(), resource.kind.clone()))
    }
}

/// The protobuf body (`k8s\0` envelope) of a create or update of `object` to `resource`,
/// or `None` when this write must go as JSON (see the module docs).
pub(crate) fn encode<K: Object, B: Serialize + ?Sized>(
    client: &Client,
    resource: &ApiResource,
    params: &PostParams,
    object: &B,
) -> Option<Vec<u8>> {
    let json_bodies = client.protobuf_bodies()?;
    if K::ACCEPT != "application/json" || params.field_validation == Some(FieldValidation::Strict) {
        return None;
    }
    let message = K::protobuf_message()?;
    let api_version = resource.api_version();
    if pb::message_for(&api_version, &resource.kind) != Some(message) || json_bodies.has(resource) {
        return None;
    }
    let type_meta = (api_version.as_str(), resource.kind.as_str());
    let encoded = if text_is_value::<B>() {
        pb::encode_exact(message, type_meta, object)
    } else {
        let Some(json) = as_sent(object) else {
            log::debug!(
                "{} {}: sent as JSON, its JSON text does not read back as one value (a member named twice, a number past 64 bits, or nested past serde_json's limit)",
                api_version,
                resource.kind
            );
            return None;
        };
        pb::encode_exact(message, type_meta, &json)
    };
    match encoded {
        Ok(raw) => {
            let mut body =
                Vec::with_capacity(raw.len() + 16 + api_version.len() + resource.kind.len());
            pb::write_envelope(&api_version, &resource.kind, &raw, &mut body);
            Some(body)
        }
        Err(e) => {
            // The error names a field path, never a value.
            log::debug!(
                "{} {}: sent as JSON, protobuf cannot carry it exactly: {e}",
                api_version,
                resource.kind
            );
            None
        }
    }
}

/// Whether `B`'s JSON text is known to read back as exactly its `serde_json::Value`, so
/// [`as_sent`]'s detour (which costs about twice the encoding) can be skipped: a
/// `serde_json::Value` itself, or a k8s-openapi type that is not generic (its fields are
/// written once each, with no `f32` and no integer past 64 bits; a generic one may hold a
/// user's type). Known by the type's name: if that name ever reads otherwise, the write
/// only takes the detour, never less care.
fn text_is_value<B: ?Sized>() -> bool {
    let name = std::any::type_name::<B>();
    name == std::any::type_name::<serde_json::Value>()
        || (name.starts_with("k8s_openapi::") && !name.contains('<'))
}

/// The JSON value of `object` as its JSON body's text holds it: written as the JSON write
/// would send it, then read back. `None` when it cannot be written, names a member twice
/// in one object (which no value can hold as Go reads it), holds a number of 2^63 or more
/// in magnitude that is not a 64-bit integer (its text would not survive), or nests past
/// serde_json's recursion limit (128).
fn as_sent<B: Serialize + ?Sized>(object: &B) -> Option<serde_json::Value> {
    use serde::de::DeserializeSeed;
    let text = serde_json::to_vec(object).ok()?;
    let mut reader = serde_json::Deserializer::from_slice(&text);
    let value = UniqueMembers.deserialize(&mut reader).ok()?;
    reader.end().ok()?;
    Some(value)
}

/// Reads a JSON value, refusing an object that names a member twice.
#[derive(Clone, Copy)]
struct UniqueMembers;

impl<'de> serde::de::DeserializeSeed<'de> for UniqueMembers {
    type Value = serde_json::Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for UniqueMembers {
    type Value = serde_json::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
        // serde_json reads an integer past 64 bits (a `u128`'s digits) as a float: as a value
        // it would be written back as other text (`1.8446744073709552e19`, in a
        // `RawExtension` stored as text). Refused at that magnitude, floats' too (JSON then).
        if v.abs() >= 9_223_372_036_854_775_808.0 {
            return Err(E::custom("a number past 64 bits"));
        }
        Ok(v.into())
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(serde_json::Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members = serde_json::Map::new();
        while let Some(name) = map.next_key::<String>()? {
            let value = map.next_value_seed(self)?;
            if members.insert(name, value).is_some() {
                // Never the member's name: in a map, names are data.
                return Err(serde::de::Error::custom("a member named twice"));
            }
        }
        Ok(serde_json::Value::Object(members))
    }
}

/// Remembers that `resource`'s server refused a protobuf body (415): JSON from now on.
pub(crate) fn refused(client: &Client, resource: &ApiResource) {
    if let Some(json_bodies) = client.protobuf_bodies() {
        json_bodies
            .0
            .lock()
            .insert((resource.api_version(), resource.kind.clone()));
    }
}
