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

use base64::Engine;
use serde_json::{Map, Value as Json};

use super::descriptor::{
    Field, Kind, MessageDesc, Special, INLINE, MAP, MESSAGES, NOJSON, POINTER, REPEATED,
};
use super::time::{parse_duration, parse_time};
use super::wire::{put_bytes, put_tag, put_varint, FIXED64, LEN, VARINT};
use super::{de::MAX_DEPTH, Message, ProtobufError};

type Result<T> = std::result::Result<T, ProtobufError>;

pub(crate) fn encode_message<T: serde::Serialize + ?Sized>(
    message: Message,
    value: &T,
) -> Result<Vec<u8>> {
    let json =
        serde_json::to_value(value).map_err(|e| ProtobufError::new(format!("serializing: {e}")))?;
    let mut out = Vec::new();
    write_message(message.desc(), &json, &mut out, 0)?;
    Ok(out)
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
) -> Result<()> {
    if depth >= MAX_DEPTH {
        return Err(ProtobufError::new("messages nested too deeply"));
    }
    if desc.special != Special::None {
        return write_special(desc, json, out, depth);
    }
    let map = object(json, desc)?;
    for field in desc.fields {
        if field.has(NOJSON) {
            continue;
        }
        if field.has(INLINE) {
            let Kind::M(index) = field.2 else { continue };
            let mut inner = Vec::new();
            write_message(&MESSAGES[index as usize], json, &mut inner, depth + 1)?;
            put_bytes(out, field.0, &inner);
            continue;
        }
        let value = map.and_then(|m| m.get(field.1)).unwrap_or(&EMPTY);
        write_field(field, value, out, depth)
            .map_err(|e| e.in_field(field.1).in_field(desc.name))?;
    }
    Ok(())
}

fn write_field(field: &'static Field, value: &Json, out: &mut Vec<u8>, depth: usize) -> Result<()> {
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
            write_value(field.0, 2, field.2, &map[key.as_str()], &mut entry, depth)?;
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
            write_value(field.0, field.0, field.2, item, out, depth)?;
        }
        return Ok(());
    }
    if value.is_null() {
        if field.has(POINTER) || field.2 == Kind::B {
            return Ok(()); // nil: not written
        }
    }
    write_value(field.0, field.0, field.2, value, out, depth)
}

/// Writes one value as field `number` (`_outer` is the field of the list or map it is in).
fn write_value(
    _outer: u32,
    number: u32,
    kind: Kind,
    value: &Json,
    out: &mut Vec<u8>,
    depth: usize,
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
            let v = if null { 0 } else { integer(value)? };
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
            write_message(&MESSAGES[index as usize], value, &mut inner, depth + 1)?;
            put_tag(out, number, LEN);
            put_varint(out, inner.len() as u64);
            out.extend_from_slice(&inner);
        }
    }
    Ok(())
}

fn integer(value: &Json) -> Result<i64> {
    if let Some(v) = value.as_i64() {
        return Ok(v);
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
) -> Result<()> {
    match desc.special {
        Special::None => unreachable!("handled by write_message"),
        Special::Time | Special::MicroTime => {
            if let Some(text) = json.as_str() {
                let (seconds, nanos) =
                    parse_time(text).ok_or_else(|| ProtobufError::new("not an RFC 3339 time"))?;
                let nanos = if desc.special == Special::Time {
                    0
                } else {
                    nanos / 1000 * 1000
                };
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
                    parse_duration(s).ok_or_else(|| ProtobufError::new("not a duration"))?
                }
                _ => return Err(ProtobufError::new("expected a duration")),
            };
            put_int(out, 1, nanos);
        }
        Special::Quantity => {
            let text = match json {
                Json::Null => "0".to_owned(),
                Json::String(s) => s.clone(),
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
                    let v = integer(n)?;
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
            write_field(field, json, out, depth)?;
        }
        Special::SchemaOrArray | Special::SchemaOrStrings => {
            let (schema, list) = (desc.field(1), desc.field(2));
            match (json, schema, list) {
                (Json::Array(_), _, Some(list)) => write_field(list, json, out, depth)?,
                (Json::Object(_), Some(schema), _) => {
                    write_value(1, 1, schema.2, json, out, depth)?
                }
                (Json::Null, ..) => {}
                _ => return Err(ProtobufError::new("expected a schema or an array")),
            }
        }
        Special::SchemaOrBool => match (json, desc.field(2)) {
            (Json::Bool(b), _) => put_int(out, 1, i64::from(*b)),
            (Json::Object(_), Some(schema)) => {
                put_int(out, 1, 1);
                write_value(2, 2, schema.2, json, out, depth)?;
            }
            (Json::Null, _) => put_int(out, 1, 0),
            _ => return Err(ProtobufError::new("expected a schema or a boolean")),
        },
    }
    Ok(())
}
