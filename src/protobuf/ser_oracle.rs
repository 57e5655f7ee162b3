//! The first encoder, kept for tests only: the oracle of the differential test against
//! `ser.rs` (same bytes or both refuse). It goes through a `serde_json::Value` and copies
//! each nested message into its parent: simple to read, slow. Not compiled in the library.
//!
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

/// The differential test: for the captured objects (as `serde_json::Value`, as JSON text in
/// another key order, as `DynamicObject`, as k8s-openapi types) and for hostile variants of
/// them, the oracle and the encoder give the same bytes or both refuse, in both modes.
#[cfg(test)]
mod differential {
    use base64::Engine;
    use serde::Serialize;
    use serde_json::{json, Value as Json};

    use crate::api::DynamicObject;
    use crate::protobuf::{decode, message_for, read_envelope, ser, split_list, Message};

    const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/protobuf");

    /// Every object in the captured protobuf bodies and request bodies (lists split).
    fn captured() -> Vec<(String, Message, Json)> {
        let mut names: Vec<_> = std::fs::read_dir(DIR)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".json"))
            .collect();
        names.sort();
        let mut out = Vec::new();
        for name in names {
            let capture: Json =
                serde_json::from_str(&std::fs::read_to_string(format!("{DIR}/{name}")).unwrap())
                    .unwrap();
            let bodies = [
                capture["response"]["bodyBase64"].as_str(),
                capture["request"]["body"]["bodyBase64"].as_str(),
            ];
            for text in bodies.into_iter().flatten() {
                let body = base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .unwrap();
                let Ok(envelope) = read_envelope(&body) else {
                    continue;
                };
                let Some(message) = message_for(envelope.api_version, envelope.kind) else {
                    continue;
                };
                let Ok(mut value) = decode::<Json>(message, envelope.raw) else {
                    continue;
                };
                if let Json::Object(map) = &mut value {
                    map.insert("apiVersion".into(), envelope.api_version.into());
                    map.insert("kind".into(), envelope.kind.into());
                }
                out.push((name.clone(), message, value));
                if let Some(item) = message.list_item() {
                    for raw in split_list(envelope.raw).unwrap().items {
                        out.push((format!("{name} item"), item, decode(item, raw).unwrap()));
                    }
                }
            }
        }
        out
    }

    fn type_meta(value: &Json) -> (String, String) {
        let s = |k: &str| value[k].as_str().unwrap_or("").to_owned();
        (s("apiVersion"), s("kind"))
    }

    /// Same bytes or both refuse, in both modes; returns whether the exact mode took it.
    fn same<T: Serialize + ?Sized>(m: Message, tm: (&str, &str), v: &T, what: &str) -> bool {
        let old = super::encode_message(m, v).ok();
        let new = ser::encode_message(m, v).ok();
        assert!(
            old == new,
            "lenient, {what}: {:?} / {:?}",
            old.is_some(),
            new.is_some()
        );
        let old = super::encode_message_exact(m, tm, v).ok();
        let new = ser::encode_message_exact(m, tm, v).ok();
        assert!(
            old == new,
            "exact, {what}: {:?} / {:?}",
            old.is_some(),
            new.is_some()
        );
        new.is_some()
    }

    /// `value` as JSON text with every object's keys in reverse order, and (with `dup`) each
    /// object's first key given first as `null` and its last key given twice (a JSON object:
    /// the last one wins).
    fn text(value: &Json, dup: bool, out: &mut String) {
        match value {
            Json::Object(map) => {
                out.push('{');
                let mut first = true;
                if dup {
                    if let Some((k, v)) = map.iter().next() {
                        out.push_str(&serde_json::to_string(k).unwrap());
                        out.push_str(":null");
                        if map.len() > 1 {
                            out.push(',');
                            out.push_str(&serde_json::to_string(k).unwrap());
                            out.push(':');
                            text(v, dup, out);
                        }
                        first = false;
                    }
                }
                for (k, v) in map.iter().rev() {
                    if !first {
                        out.push(',');
                    }
                    first = false;
                    out.push_str(&serde_json::to_string(k).unwrap());
                    out.push(':');
                    text(v, dup, out);
                }
                out.push('}');
            }
            Json::Array(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    text(v, dup, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }

    /// Every form of one value: the tree, the text in other orders, a `DynamicObject`.
    fn every_form(m: Message, value: &Json, what: &str) -> bool {
        forms(m, value, what, true)
    }

    fn forms(m: Message, value: &Json, what: &str, all: bool) -> bool {
        let (api_version, kind) = type_meta(value);
        let tm = (api_version.as_str(), kind.as_str());
        let took = same(m, tm, value, what);
        let old = super::encode_message(m, value).ok();
        for dup in [false, true] {
            let mut t = String::new();
            text(value, dup, &mut t);
            let new = ser::encode_json_text(m, &t).ok();
            assert!(old == new, "text (dup {dup}), {what}");
            if !all {
                break;
            }
            if let Ok(dynamic) = serde_json::from_str::<DynamicObject>(&t) {
                same(
                    m,
                    tm,
                    &dynamic,
                    &format!("DynamicObject (dup {dup}), {what}"),
                );
            }
        }
        took
    }

    #[test]
    fn the_captured_objects_in_every_form() {
        let objects = captured();
        assert!(objects.len() > 100, "{}", objects.len());
        let mut exact = 0;
        for (name, m, value) in &objects {
            exact += usize::from(every_form(*m, value, name));
        }
        // Most captured objects are known to the tables member for member.
        assert!(exact * 2 > objects.len(), "{exact} of {}", objects.len());
    }

    /// Every node of `value`, as a path of keys and indexes.
    fn paths(value: &Json, at: &mut Vec<Json>, out: &mut Vec<Vec<Json>>) {
        out.push(at.clone());
        match value {
            Json::Object(map) => {
                for (k, v) in map {
                    at.push(Json::String(k.clone()));
                    paths(v, at, out);
                    at.pop();
                }
            }
            Json::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    at.push(json!(i));
                    paths(v, at, out);
                    at.pop();
                }
            }
            _ => {}
        }
    }

    fn at_mut<'a>(value: &'a mut Json, path: &[Json]) -> &'a mut Json {
        path.iter().fold(value, |v, step| match step {
            Json::String(k) => &mut v[k.as_str()],
            _ => &mut v[step.as_u64().unwrap() as usize],
        })
    }

    #[test]
    fn hostile_variants_of_a_realistic_pod_and_a_crd() {
        let replacements = [
            json!(null),
            json!(true),
            json!(0),
            json!(-1),
            json!(30.0),
            json!(1.5),
            json!(u64::MAX),
            json!(4_294_967_296_i64),
            json!(""),
            json!(" 1"),
            json!("AAH/"),
            json!("2026-11-28T11:31:33Z"),
            json!("2026-11-28T11:31:33.5+01:00"),
            json!("1m30s"),
            json!([]),
            json!([null, 1, "x", {}]),
            json!({}),
            json!({"name": "x", "futureField": null}),
            json!({"type": "object", "properties": {"a": {"type": "string"}}}),
        ];
        let objects = captured();
        let mut bases: Vec<&(String, Message, Json)> = Vec::new();
        for want in [
            "get-pod-running.json",
            "crd-get-apiextensions-protobuf.json",
        ] {
            bases.extend(objects.iter().find(|(n, ..)| n == want));
        }
        assert_eq!(bases.len(), 2);
        let mut variants = 0;
        for (name, m, base) in &bases {
            let mut all = Vec::new();
            paths(base, &mut Vec::new(), &mut all);
            for (i, path) in all.iter().enumerate() {
                // Every node gets some of the replacements (all of them over the nodes).
                for (j, replacement) in replacements.iter().enumerate() {
                    if (i + j) % 5 != 0 {
                        continue;
                    }
                    let mut variant = base.clone();
                    *at_mut(&mut variant, path) = replacement.clone();
                    forms(
                        *m,
                        &variant,
                        &format!("{name} at {path:?} = {replacement}"),
                        false,
                    );
                    variants += 1;
                }
                let mut variant = base.clone();
                if let Json::Object(map) = at_mut(&mut variant, path) {
                    map.insert("futureField".into(), json!(null));
                    forms(
                        *m,
                        &variant,
                        &format!("{name}: a new member at {path:?}"),
                        false,
                    );
                    let mut variant = base.clone();
                    if let Json::Object(map) = at_mut(&mut variant, path) {
                        if let Some(k) = map.keys().next().cloned() {
                            map.remove(&k);
                        }
                    }
                    forms(
                        *m,
                        &variant,
                        &format!("{name}: a member gone at {path:?}"),
                        false,
                    );
                    variants += 2;
                }
            }
        }
        assert!(variants > 1000, "{variants}");
    }

    #[cfg(feature = "k8s-openapi")]
    #[test]
    fn the_captured_objects_as_k8s_openapi_types() {
        use k8s_openapi::api::core::v1::{ConfigMap, Pod};
        use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
        let mut typed = 0;
        for (name, m, value) in captured() {
            let (api_version, kind) = type_meta(&value);
            let tm = (api_version.as_str(), kind.as_str());
            let what = format!("typed {name}");
            match kind.as_str() {
                "Pod" => {
                    if let Ok(v) = serde_json::from_value::<Pod>(value.clone()) {
                        same(m, tm, &v, &what);
                        typed += 1;
                    }
                }
                "ConfigMap" => {
                    if let Ok(v) = serde_json::from_value::<ConfigMap>(value.clone()) {
                        same(m, tm, &v, &what);
                        typed += 1;
                    }
                }
                "CustomResourceDefinition" => {
                    if let Ok(v) = serde_json::from_value::<CustomResourceDefinition>(value.clone())
                    {
                        same(m, tm, &v, &what);
                        typed += 1;
                    }
                }
                _ => {}
            }
        }
        assert!(typed >= 5, "{typed}");
    }
}
