//! Encoding: any `Serialize` value, through its JSON form, as Go's generated marshaller
//! writes the message.
//!
//! The value is first turned into a `serde_json::Value` (what the JSON path would send), then
//! written field by field in the message's field-number order, with Go's rules: every
//! non-pointer field is written, zero or not (so a field absent from the JSON is written as
//! its zero: `""`, `0`, `false`, an empty message, a zero Time as an empty message); a
//! pointer, a list or a map only when set; map entries sorted by key; inline messages built
//! from the same JSON object. The detour through a tree is deliberate: encoding is for
//! requests and the test server, not the hot path, and a tree makes inline messages and
//! Go's order simple to get right.
//!
//! Two modes. The lenient one (`encode_message`) skips the members a message does not
//! declare, as a Go struct would when decoding the same JSON: right for the test server's
//! answers, which are re-encodings of objects it already holds. The exact one
//! (`encode_message_exact`) is for request bodies: a body must carry to kube-apiserver
//! exactly what its JSON would, so anything the tables cannot carry *exactly* is an error,
//! never a silent skip, and the caller sends that write as JSON instead. It refuses:
//! - a member the message's table does not declare (a field of a newer k8s-openapi or a
//!   newer server; a misspelt name, which JSON would answer with a warning or, with
//!   `fieldValidation=Strict`, a 400), whatever its value, `null` included; at the top, only
//!   `apiVersion` and `kind` naming the message's own type are allowed (they go in the
//!   envelope);
//! - a number that is not an integer where Go wants one (`1.0` for an `int32`: Go's JSON
//!   refuses it, a varint would not), or out of the field's range;
//! - a `Time`/`MicroTime` not in the canonical form Go writes (an offset, a fraction a
//!   `Time` would drop), a `Duration` not in Go's own form, a `Quantity` with spaces around
//!   it (Go's JSON trims them, its protobuf does not) or given as a non-integer number.

use base64::Engine;
use serde_json::{Map, Value as Json};

use super::descriptor::{
    Field, Kind, MessageDesc, Special, INLINE, MAP, MESSAGES, NOJSON, POINTER, REPEATED,
};
use super::time::{format_duration, format_time_into, parse_time};
use super::wire::{put_bytes, put_tag, put_varint, FIXED64, LEN, VARINT};
use super::{de::MAX_DEPTH, Message, ProtobufError};
use crate::civil_time::parse_go_duration as parse_duration;

type Result<T> = std::result::Result<T, ProtobufError>;

/// Lenient: members the message does not declare are skipped (see the module docs).
pub(crate) fn encode_message<T: serde::Serialize + ?Sized>(
    message: Message,
    value: &T,
) -> Result<Vec<u8>> {
    let json = to_json(value)?;
    let mut out = Vec::new();
    write_message(message.desc(), &json, &mut out, 0, Mode::Lenient)?;
    Ok(out)
}

/// Exact: anything the tables cannot carry exactly is an error (see the module docs).
/// `type_meta`: the `apiVersion` and `kind` the top-level object may name (its own).
pub(crate) fn encode_message_exact<T: serde::Serialize + ?Sized>(
    message: Message,
    type_meta: (&str, &str),
    value: &T,
) -> Result<Vec<u8>> {
    let json = to_json(value)?;
    let Json::Object(map) = &json else {
        return Err(ProtobufError::new("expected an object").in_field(message.desc().name));
    };
    let desc = message.desc();
    for (name, expected) in [("apiVersion", type_meta.0), ("kind", type_meta.1)] {
        if knows(desc, name, 0) {
            continue;
        }
        match map.get(name) {
            None => {}
            Some(Json::String(s)) if s == expected => {}
            Some(_) => {
                return Err(ProtobufError::new(
                    "apiVersion or kind does not name the message's own type",
                )
                .in_field(desc.name))
            }
        }
    }
    let mut out = Vec::new();
    write_message(desc, &json, &mut out, 0, Mode::Exact)?;
    Ok(out)
}

fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> Result<Json> {
    // serde's message names what failed (a map key that is not a string, a custom
    // Serialize's own text), not a field's value.
    serde_json::to_value(value).map_err(|e| ProtobufError::new(format!("serializing: {e}")))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Lenient,
    Exact,
}

/// Whether `name` is a member of `desc`'s JSON: one of its fields, or of a message inlined
/// in it.
fn knows(desc: &'static MessageDesc, name: &str, depth: usize) -> bool {
    if depth >= MAX_DEPTH {
        return false;
    }
    desc.fields.iter().any(|field| {
        if field.has(NOJSON) {
            false
        } else if field.has(INLINE) {
            matches!(field.2, Kind::M(index) if knows(&MESSAGES[index as usize], name, depth + 1))
        } else {
            field.1 == name
        }
    })
}

static EMPTY: Json = Json::Null;

fn object<'a>(json: &'a Json, desc: &'static MessageDesc) -> Result<Option<&'a Map<String, Json>>> {
    match json {
        Json::Object(map) => Ok(Some(map)),
        Json::Null => Ok(None),
        _ => Err(ProtobufError::new("expected an object").in_field(desc.name)),
    }
}

/// Writes the fields of `desc` from `json` (an object, or null for the zero message).
fn write_message(
    desc: &'static MessageDesc,
    json: &Json,
    out: &mut Vec<u8>,
    depth: usize,
    mode: Mode,
) -> Result<()> {
    write_object(desc, json, out, depth, mode, true)
}

/// As [`write_message`]; `own_members`: the object's members are this message's own (not
/// an inlined message's, whose members are its parent's and were checked there).
fn write_object(
    desc: &'static MessageDesc,
    json: &Json,
    out: &mut Vec<u8>,
    depth: usize,
    mode: Mode,
    own_members: bool,
) -> Result<()> {
    if depth >= MAX_DEPTH {
        return Err(ProtobufError::new("messages nested too deeply"));
    }
    if desc.special != Special::None {
        return write_special(desc, json, out, depth, mode);
    }
    let map = object(json, desc)?;
    if let (Mode::Exact, true, Some(map)) = (mode, own_members, map) {
        // Never the member's name in the error: in a map mistaken for a message, keys are
        // data. At the top, `apiVersion` and `kind` were checked by the caller.
        let top = |name: &str| depth == 0 && (name == "apiVersion" || name == "kind");
        if map.keys().any(|name| !top(name) && !knows(desc, name, 0)) {
            return Err(ProtobufError::new(
                "a member the protobuf tables do not know (it would be lost)",
            )
            .in_field(desc.name));
        }
    }
    for field in desc.fields {
        if field.has(NOJSON) {
            continue;
        }
        if field.has(INLINE) {
            let Kind::M(index) = field.2 else { continue };
            let mut inner = Vec::new();
            write_object(
                &MESSAGES[index as usize],
                json,
                &mut inner,
                depth + 1,
                mode,
                false,
            )?;
            put_bytes(out, field.0, &inner);
            continue;
        }
        let value = map.and_then(|m| m.get(field.1)).unwrap_or(&EMPTY);
        write_field(field, value, out, depth, mode)
            .map_err(|e| e.in_field(field.1).in_field(desc.name))?;
    }
    Ok(())
}

fn write_field(
    field: &'static Field,
    value: &Json,
    out: &mut Vec<u8>,
    depth: usize,
    mode: Mode,
) -> Result<()> {
    if field.has(MAP) {
        let Some(map) = value.as_object() else {
            return if value.is_null() {
                Ok(())
            } else {
                Err(ProtobufError::new("expected an object"))
            };
        };
        let mut keys: Vec<&String> = map.keys().collect();
        keys.sort();
        for key in keys {
            let mut entry = Vec::new();
            put_bytes(&mut entry, 1, key.as_bytes());
            write_value(2, field.2, &map[key.as_str()], &mut entry, depth, mode)?;
            put_bytes(out, field.0, &entry);
        }
        return Ok(());
    }
    if field.has(REPEATED) {
        let Some(items) = value.as_array() else {
            return if value.is_null() {
                Ok(())
            } else {
                Err(ProtobufError::new("expected an array"))
            };
        };
        for item in items {
            write_value(field.0, field.2, item, out, depth, mode)?;
        }
        return Ok(());
    }
    if value.is_null() && (field.has(POINTER) || field.2 == Kind::B) {
        return Ok(()); // nil: not written
    }
    write_value(field.0, field.2, value, out, depth, mode)
}

/// Writes one value as field `number`.
fn write_value(
    number: u32,
    kind: Kind,
    value: &Json,
    out: &mut Vec<u8>,
    depth: usize,
    mode: Mode,
) -> Result<()> {
    let null = value.is_null();
    match kind {
        Kind::S => {
            let s = if null {
                ""
            } else {
                value
                    .as_str()
                    .ok_or_else(|| ProtobufError::new("expected a string"))?
            };
            put_bytes(out, number, s.as_bytes());
        }
        Kind::B => {
            let s = if null {
                ""
            } else {
                value
                    .as_str()
                    .ok_or_else(|| ProtobufError::new("expected base64"))?
            };
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|_| ProtobufError::new("expected base64"))?;
            put_bytes(out, number, &bytes);
        }
        Kind::I32 | Kind::I64 => {
            let v = if null { 0 } else { integer(value, mode)? };
            if kind == Kind::I32 && i32::try_from(v).is_err() {
                return Err(ProtobufError::new("a number out of int32's range"));
            }
            put_tag(out, number, VARINT);
            put_varint(out, v as u64);
        }
        Kind::Bool => {
            let v = if null {
                false
            } else {
                value
                    .as_bool()
                    .ok_or_else(|| ProtobufError::new("expected a boolean"))?
            };
            put_tag(out, number, VARINT);
            put_varint(out, u64::from(v));
        }
        Kind::F64 => {
            let v = if null {
                0.0
            } else {
                value
                    .as_f64()
                    .ok_or_else(|| ProtobufError::new("expected a number"))?
            };
            put_tag(out, number, FIXED64);
            out.extend_from_slice(&v.to_bits().to_le_bytes());
        }
        Kind::M(index) => {
            let mut inner = Vec::new();
            write_message(
                &MESSAGES[index as usize],
                value,
                &mut inner,
                depth + 1,
                mode,
            )?;
            put_tag(out, number, LEN);
            put_varint(out, inner.len() as u64);
            out.extend_from_slice(&inner);
        }
    }
    Ok(())
}

fn integer(value: &Json, mode: Mode) -> Result<i64> {
    if let Some(v) = value.as_i64() {
        return Ok(v);
    }
    if mode == Mode::Exact {
        // `1.0`, `1e3` or a u64 past i64: Go's JSON refuses them for an integer field.
        return Err(ProtobufError::new("expected an integer (not a float)"));
    }
    match value.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Ok(f as i64),
        _ => Err(ProtobufError::new("expected an integer")),
    }
}

fn put_int(out: &mut Vec<u8>, number: u32, v: i64) {
    put_tag(out, number, VARINT);
    put_varint(out, v as u64);
}

fn write_special(
    desc: &'static MessageDesc,
    json: &Json,
    out: &mut Vec<u8>,
    depth: usize,
    mode: Mode,
) -> Result<()> {
    let exact = mode == Mode::Exact;
    match desc.special {
        Special::None => unreachable!("handled by write_message"),
        Special::Time | Special::MicroTime => {
            if let Some(text) = json.as_str() {
                let (seconds, nanos) =
                    parse_time(text).ok_or_else(|| ProtobufError::new("not an RFC 3339 time"))?;
                let micros = desc.special == Special::MicroTime;
                let nanos = if micros { nanos / 1000 * 1000 } else { 0 };
                let canonical = format_time_into(seconds, nanos, micros)
                    .is_some_and(|(buf, len)| buf[..len] == *text.as_bytes());
                if exact && !canonical {
                    return Err(ProtobufError::new("a time not in Go's own form"));
                }
                put_int(out, 1, seconds);
                put_int(out, 2, i64::from(nanos));
            } else if !json.is_null() {
                return Err(ProtobufError::new("expected a time"));
            }
        }
        Special::Duration => {
            let nanos = match json {
                Json::Null => 0,
                Json::String(s) => {
                    let nanos =
                        parse_duration(s).ok_or_else(|| ProtobufError::new("not a duration"))?;
                    if exact && format_duration(nanos) != *s {
                        return Err(ProtobufError::new("a duration not in Go's own form"));
                    }
                    nanos
                }
                _ => return Err(ProtobufError::new("expected a duration")),
            };
            put_int(out, 1, nanos);
        }
        Special::Quantity => {
            let text = match json {
                Json::Null => "0".to_owned(),
                Json::String(s) if exact && s.trim() != s => {
                    return Err(ProtobufError::new("a quantity with spaces around it"))
                }
                Json::String(s) => s.clone(),
                Json::Number(n) if exact && !(n.is_i64() || n.is_u64()) => {
                    return Err(ProtobufError::new("a quantity as a non-integer number"))
                }
                Json::Number(n) => n.to_string(),
                _ => return Err(ProtobufError::new("expected a quantity")),
            };
            put_bytes(out, 1, text.as_bytes());
        }
        Special::IntOrString => {
            let (kind, int, text) = match json {
                Json::Null => (0, 0, ""),
                Json::String(s) => (1, 0, s.as_str()),
                n @ Json::Number(_) => {
                    let v = integer(n, mode)?;
                    (
                        0,
                        i32::try_from(v).map_err(|_| ProtobufError::new("out of int32's range"))?,
                        "",
                    )
                }
                _ => return Err(ProtobufError::new("expected an int or a string")),
            };
            put_int(out, 1, kind);
            put_int(out, 2, i64::from(int));
            put_bytes(out, 3, text.as_bytes());
        }
        Special::RawJson => {
            if !json.is_null() {
                let text =
                    serde_json::to_vec(json).map_err(|_| ProtobufError::new("unwritable JSON"))?;
                put_bytes(out, 1, &text);
            }
        }
        Special::Items => {
            let field = desc
                .field(1)
                .ok_or_else(|| ProtobufError::new("no items field"))?;
            if !json.is_null() && !json.is_array() {
                return Err(ProtobufError::new("expected an array"));
            }
            write_field(field, json, out, depth, mode)?;
        }
        Special::SchemaOrArray | Special::SchemaOrStrings => {
            let (schema, list) = (desc.field(1), desc.field(2));
            match (json, schema, list) {
                (Json::Array(_), _, Some(list)) => write_field(list, json, out, depth, mode)?,
                (Json::Object(_), Some(schema), _) => {
                    write_value(1, schema.2, json, out, depth, mode)?
                }
                (Json::Null, ..) => {}
                _ => return Err(ProtobufError::new("expected a schema or an array")),
            }
        }
        Special::SchemaOrBool => match (json, desc.field(2)) {
            (Json::Bool(b), _) => put_int(out, 1, i64::from(*b)),
            (Json::Object(_), Some(schema)) => {
                put_int(out, 1, 1);
                write_value(2, schema.2, json, out, depth, mode)?;
            }
            (Json::Null, _) => put_int(out, 1, 0),
            _ => return Err(ProtobufError::new("expected a schema or a boolean")),
        },
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protobuf::message_for;

    fn exact(kind: &str, value: &Json) -> Result<Vec<u8>> {
        let m = message_for("v1", kind).unwrap();
        encode_message_exact(m, ("v1", kind), value)
    }

    fn lenient(kind: &str, value: &Json) -> Vec<u8> {
        encode_message(message_for("v1", kind).unwrap(), value).unwrap()
    }

    #[test]
    fn what_the_tables_know_encodes_exactly_as_the_lenient_mode_does() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "labels": {"app": "web"}, "creationTimestamp": "2026-11-28T11:31:33Z",
                "managedFields": [{"manager": "m", "time": "2026-11-28T11:31:33Z", "fieldsV1": {"f:spec": {}}}]},
            "spec": {"containers": [{"name": "app", "image": "nginx",
                "env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}],
                "resources": {"requests": {"cpu": "250m", "memory": 64}},
                "readinessProbe": {"httpGet": {"port": "http"}, "periodSeconds": 0}}],
                "terminationGracePeriodSeconds": 30, "hostNetwork": false},
            "status": {"conditions": [{"type": "Ready", "status": "True", "lastProbeTime": null}]}});
        // `configMapKeyRef.name` is a member of an inlined LocalObjectReference.
        assert_eq!(exact("Pod", &pod).unwrap(), lenient("Pod", &pod));
        let cm =
            json!({"metadata": {"name": "c"}, "binaryData": {"b": "AAH/"}, "immutable": false});
        assert_eq!(exact("ConfigMap", &cm).unwrap(), lenient("ConfigMap", &cm));
    }

    #[test]
    fn a_member_the_tables_do_not_know_is_refused_even_null_and_deep_down() {
        for pod in [
            json!({"metadata": {"name": "w"}, "futureField": "x"}),
            json!({"metadata": {"name": "w"}, "futureField": null}),
            json!({"metadata": {"name": "w", "Labels": {}}}),
            json!({"spec": {"containers": [{"name": "a", "newThing": {"on": true}}]}}),
            json!({"spec": {"containers": [{"name": "a", "env": [{"name": "A",
                "valueFrom": {"configMapKeyRef": {"name": "cm", "extra": 1}}}]}]}}),
            json!({"metadata": {"name": "w"}, "apiVersion": "v2"}),
            json!({"metadata": {"name": "w"}, "kind": "Secret"}),
            json!({"metadata": {"name": "w"}, "kind": null}),
            json!([]),
        ] {
            let err = exact("Pod", &pod).unwrap_err();
            // The error never quotes a member's name or value.
            for secret in ["futureField", "newThing", "extra", "Secret", "v2", "Labels"] {
                assert!(!err.to_string().contains(secret), "{err}");
            }
        }
        // The lenient mode (the test server's answers) skips them.
        assert!(encode_message(
            message_for("v1", "Pod").unwrap(),
            &json!({"futureField": "x"})
        )
        .is_ok());
    }

    #[test]
    fn a_value_go_would_read_differently_is_refused() {
        for pod in [
            json!({"spec": {"terminationGracePeriodSeconds": 30.0}}),
            json!({"spec": {"terminationGracePeriodSeconds": 1e3}}),
            json!({"spec": {"terminationGracePeriodSeconds": u64::MAX}}),
            json!({"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 4_294_967_296_i64}]}]}}),
            json!({"metadata": {"creationTimestamp": "2026-11-28T11:31:33.5Z"}}),
            json!({"metadata": {"creationTimestamp": "2026-11-28T12:31:33+01:00"}}),
            json!({"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": " 1"}}}]}}),
            json!({"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": 0.5}}}]}}),
            json!({"spec": {"containers": [{"name": "a", "readinessProbe": {"httpGet": {"port": 80.0}}}]}}),
        ] {
            assert!(exact("Pod", &pod).is_err(), "{pod}");
        }
        // Go's own forms pass.
        for pod in [
            json!({"metadata": {"creationTimestamp": "2026-11-28T11:31:33Z"}}),
            json!({"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": 2}}}]}}),
            json!({"spec": {"containers": [{"name": "a", "readinessProbe": {"httpGet": {"port": 80}}}]}}),
        ] {
            assert!(exact("Pod", &pod).is_ok(), "{pod}");
        }
        let event = |t: &str| json!({"metadata": {"name": "e"}, "eventTime": t});
        let m = message_for("events.k8s.io/v1", "Event").unwrap();
        let ok = |v: &Json| encode_message_exact(m, ("events.k8s.io/v1", "Event"), v).is_ok();
        assert!(ok(&event("2026-11-28T11:31:33.123456Z")));
        assert!(!ok(&event("2026-11-28T11:31:33.1234567Z")));
        assert!(!ok(&event("2026-11-28T11:31:33Z")));
    }
}
