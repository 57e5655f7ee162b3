//! Decoding: a serde `Deserializer` driven by the descriptor tables over the wire bytes.
//!
//! No intermediate tree: each message is a serde map whose keys are the Go JSON names and
//! whose values are read from the bytes as the visitor asks (a skipped field costs a
//! skip). What a type gets is what the server's JSON would have given it:
//! - a non-pointer `omitempty` scalar that is zero is absent, as `encoding/json` drops it
//!   (Go's marshaller writes every non-pointer field, so it is on the wire); a pointer is
//!   present whatever its value; a non-`omitempty` list, map or pointer absent from the wire
//!   is `null` (Go's JSON of a nil slice);
//! - `json:",inline"` messages (`Volume`'s `VolumeSource`, `Probe`'s handler) are flattened;
//! - a repeated field is one list even when its elements are not contiguous; packed and
//!   unpacked scalars are both read; a map is its repeated `{1: key, 2: value}` entries;
//! - the special messages render as their Go `MarshalJSON` does: Time and MicroTime as
//!   RFC 3339 (a zero Time as `null`, or absent under `omitzero`), Duration as Go's text,
//!   Quantity as its string, IntOrString as a number or a string, FieldsV1, RawExtension and
//!   apiextensions' JSON as the JSON value of their raw text, JSONSchemaPropsOr* as one of
//!   their forms; `bytes` as base64;
//! - unknown fields (a newer server's) are skipped by wire type.
//!
//! Hostile input: every length is checked before slicing (nothing is allocated from a
//! length read from the input), nesting is bounded at [`MAX_DEPTH`] messages and raw JSON
//! counts its enclosing messages against serde_json's limit (`nesting`), so no input recurses
//! deeper than its JSON form could, and every error names an offset and the field path.

use base64::Engine;
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde::forward_to_deserialize_any;

use super::descriptor::{
    Field, Kind, MessageDesc, Special, INLINE, MAP, MESSAGES, NOJSON, OMITEMPTY, OMITZERO, POINTER,
    REPEATED,
};
use super::time::{format_duration, format_time_into};
use super::wire::{Reader, Value, FIXED64, LEN, VARINT};
use super::{Message, ProtobufError};

/// Messages nested deeper than this are an error. Lower than serde_json's 128: each level
/// of a message costs more stack than a level of JSON text (a k8s-openapi
/// `JSONSchemaProps` about 17 KiB in a debug build), and 128 of them overflowed a thread's
/// 2 MiB. Raw JSON inside a message counts its enclosing messages against serde_json's 128,
/// as the object's JSON form would.
pub const MAX_DEPTH: usize = 100;

type Result<T> = std::result::Result<T, ProtobufError>;

/// Decodes `raw` as `message` into `T`; `type_meta` adds `apiVersion` and `kind` first.
pub(crate) fn decode_message<T: de::DeserializeOwned>(
    message: Message,
    raw: &[u8],
    type_meta: Option<(&str, &str)>,
) -> Result<T> {
    T::deserialize(MessageDe {
        desc: message.desc(),
        buf: raw,
        base: 0,
        depth: 0,
        type_meta,
    })
}

/// A whole message (the top level, or a field's value).
struct MessageDe<'a, 't> {
    desc: &'static MessageDesc,
    buf: &'a [u8],
    base: usize,
    depth: usize,
    type_meta: Option<(&'t str, &'t str)>,
}

impl<'de> de::Deserializer<'de> for MessageDe<'de, '_> {
    type Error = ProtobufError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if self.depth >= MAX_DEPTH {
            return Err(ProtobufError::at("messages nested too deeply", self.base));
        }
        let mut map = MessageMap::new(self.desc, self.buf, self.base, self.depth + 1);
        // As the JSON path: with `strip_managed_fields` on this thread, a `metadata`'s
        // `managedFields` is jumped over (its lengths checked), never decoded then dropped.
        map.skip_managed_fields =
            self.desc.name == "ObjectMeta" && crate::json::decode_options::strip_managed_fields();
        if let Some((api_version, kind)) = self.type_meta {
            map.type_meta = [
                Some(("apiVersion", api_version.to_owned())),
                Some(("kind", kind.to_owned())),
            ];
        }
        visitor.visit_map(map)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        if name == RAW_VALUE_TOKEN {
            return visit_raw(self, visitor);
        }
        visitor.visit_newtype_struct(self)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

/// One level of fields being read: the message itself or an inline one within it.
struct Frame<'a> {
    desc: &'static MessageDesc,
    reader: Reader<'a>,
    /// Field numbers seen (for the `null` of absent lists) and repeated ones already given.
    seen: u64,
    /// The next field to consider for a trailing `null`, once the bytes are read.
    null_cursor: usize,
}

enum Pending<'a> {
    None,
    Single(&'static Field, Value<'a>, usize),
    Repeated(&'static Field, Reader<'a>),
    Null,
    Text(String),
}

const MAX_INLINE: usize = 4;

struct MessageMap<'a> {
    frames: [Option<Frame<'a>>; MAX_INLINE],
    len: usize,
    depth: usize,
    pending: Pending<'a>,
    type_meta: [Option<(&'static str, String)>; 2],
    /// This is an `ObjectMeta` whose `managedFields` the thread skips.
    skip_managed_fields: bool,
}

impl<'a> MessageMap<'a> {
    fn new(desc: &'static MessageDesc, buf: &'a [u8], base: usize, depth: usize) -> Self {
        let frame = Frame {
            desc,
            reader: Reader::new(buf, base),
            seen: 0,
            null_cursor: 0,
        };
        MessageMap {
            frames: [Some(frame), None, None, None],
            len: 1,
            depth,
            pending: Pending::None,
            type_meta: [None, None],
            skip_managed_fields: false,
        }
    }

    fn name_error(&self, e: ProtobufError) -> ProtobufError {
        let top = self.frames[self.len - 1].as_ref().expect("a frame");
        e.in_field(top.desc.name)
    }
}

/// Whether a scalar on the wire is Go's zero value.
fn is_zero(kind: Kind, value: &Value<'_>) -> bool {
    match (kind, value) {
        (Kind::S | Kind::B, Value::Len(b)) => b.is_empty(),
        (Kind::I32 | Kind::I64 | Kind::Bool, Value::Varint(v)) => *v == 0,
        (Kind::F64, Value::Fixed64(v)) => f64::from_bits(*v) == 0.0,
        _ => false,
    }
}

fn expected_wire_type(kind: Kind) -> u8 {
    match kind {
        Kind::S | Kind::B | Kind::M(_) => LEN,
        Kind::I32 | Kind::I64 | Kind::Bool => VARINT,
        Kind::F64 => FIXED64,
    }
}

impl<'de> MapAccess<'de> for MessageMap<'de> {
    type Error = ProtobufError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        for slot in &mut self.type_meta {
            if let Some((key, value)) = slot.take() {
                self.pending = Pending::Text(value);
                return seed.deserialize(key.into_deserializer()).map(Some);
            }
        }
        loop {
            if self.len == 0 {
                return Ok(None);
            }
            let depth = self.depth;
            let frame = self.frames[self.len - 1].as_mut().expect("a frame");
            if frame.reader.is_empty() {
                // The bytes are read: Go's JSON has `null` for the lists, maps and pointers
                // that are not `omitempty` and were not sent.
                while let Some(field) = frame.desc.fields.get(frame.null_cursor) {
                    frame.null_cursor += 1;
                    let absent_null = !field.has(OMITEMPTY | NOJSON | INLINE)
                        && field.has(REPEATED | MAP | POINTER)
                        && frame.seen & (1 << field.0) == 0;
                    if absent_null {
                        self.pending = Pending::Null;
                        return seed.deserialize(field.1.into_deserializer()).map(Some);
                    }
                }
                self.frames[self.len - 1] = None;
                self.len -= 1;
                continue;
            }
            let before = frame.reader.clone();
            let (number, at, value) = match frame.reader.field() {
                Ok(Some(f)) => f,
                Ok(None) => continue,
                Err(e) => return Err(self.name_error(e)),
            };
            let Some(field) = frame.desc.field(number) else {
                continue; // unknown: a newer server's field
            };
            let bit = 1u64 << number;
            let repeated = field.has(REPEATED | MAP);
            if repeated && frame.seen & bit != 0 {
                continue; // given with the first occurrence
            }
            let wire_ok = value.wire_type() == expected_wire_type(field.2)
                || (field.has(REPEATED) && value.wire_type() == LEN);
            if !wire_ok {
                return Err(ProtobufError::at("wrong wire type", at)
                    .in_field(field.1)
                    .in_field(frame.desc.name));
            }
            frame.seen |= bit;
            if field.has(NOJSON) || (self.skip_managed_fields && field.1 == "managedFields") {
                continue;
            }
            if field.has(INLINE) {
                let (Kind::M(index), Value::Len(bytes)) = (field.2, value) else {
                    return Err(ProtobufError::at("inline field is not a message", at));
                };
                if self.len == MAX_INLINE || depth + self.len >= MAX_DEPTH {
                    return Err(ProtobufError::at("inline messages nested too deeply", at));
                }
                let desc = &MESSAGES[index as usize];
                self.frames[self.len] = Some(Frame {
                    desc,
                    reader: Reader::new(bytes, at),
                    seen: 0,
                    null_cursor: 0,
                });
                self.len += 1;
                continue;
            }
            if repeated {
                self.pending = Pending::Repeated(field, before);
            } else {
                if !field.has(POINTER) && field.has(OMITEMPTY) && is_zero(field.2, &value) {
                    continue;
                }
                if field.has(OMITZERO) && matches!(value, Value::Len(b) if b.is_empty()) {
                    continue; // a zero Time under `omitzero`
                }
                self.pending = Pending::Single(field, value, at);
            }
            return seed.deserialize(field.1.into_deserializer()).map(Some);
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        let depth = self.depth;
        match std::mem::replace(&mut self.pending, Pending::None) {
            Pending::Single(field, value, at) => seed
                .deserialize(ValueDe {
                    kind: field.2,
                    value,
                    at,
                    depth,
                })
                .map_err(|e| e.in_field(field.1)),
            Pending::Repeated(field, reader) => {
                let name = field.1;
                seed.deserialize(SeqOrMap {
                    field,
                    reader,
                    depth,
                    map: field.has(MAP),
                })
                .map_err(|e| e.in_field(name))
            }
            Pending::Null => seed.deserialize(NullDe),
            Pending::Text(text) => seed.deserialize(TextDe(text)),
            Pending::None => Err(ProtobufError::new("value asked for before its key")),
        }
    }
}

/// serde_json's name for a raw value (`RawValue`, and the library's `RawJson`): the caller
/// wants the value's JSON text. It gets the text of what this decoder renders.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

fn visit_raw<'de, D, V>(de: D, visitor: V) -> Result<V::Value>
where
    D: de::Deserializer<'de, Error = ProtobufError>,
    V: Visitor<'de>,
{
    let value: serde_json::Value = serde::Deserialize::deserialize(de)?;
    let text = serde_json::to_string(&value).map_err(|_| ProtobufError::new("unwritable JSON"))?;
    visitor.visit_map(de::value::MapDeserializer::new(std::iter::once((
        RAW_VALUE_TOKEN,
        text,
    ))))
}

/// `apiVersion` or `kind` from the envelope.
struct TextDe(String);

impl<'de> de::Deserializer<'de> for TextDe {
    type Error = ProtobufError;
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_string(self.0)
    }
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_some(self)
    }
    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

/// `null`.
struct NullDe;

impl<'de> de::Deserializer<'de> for NullDe {
    type Error = ProtobufError;
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_unit()
    }
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_none()
    }
    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

/// A repeated field (all its occurrences, from the first on) or a map's entries.
struct SeqOrMap<'a> {
    field: &'static Field,
    reader: Reader<'a>,
    depth: usize,
    map: bool,
}

impl<'de> de::Deserializer<'de> for SeqOrMap<'de> {
    type Error = ProtobufError;
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if self.map {
            visitor.visit_map(Entries {
                field: self.field,
                reader: self.reader,
                depth: self.depth,
                value: None,
            })
        } else {
            visitor.visit_seq(Elements {
                field: self.field,
                reader: self.reader,
                depth: self.depth,
                packed: None,
            })
        }
    }
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_some(self)
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        if name == RAW_VALUE_TOKEN {
            return visit_raw(self, visitor);
        }
        visitor.visit_newtype_struct(self)
    }
    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

struct Elements<'a> {
    field: &'static Field,
    reader: Reader<'a>,
    depth: usize,
    /// The rest of a packed run of scalars.
    packed: Option<Reader<'a>>,
}

impl<'de> SeqAccess<'de> for Elements<'de> {
    type Error = ProtobufError;

    /// How many elements are left, by a walk over the tags (no value is decoded), so that a
    /// `Vec` is allocated once at its size instead of doubled as it fills, as the JSON path
    /// gives serde exact sizes. The count is bounded by the bytes (an element takes at least
    /// one), and serde caps what it allocates from a hint anyway.
    fn size_hint(&self) -> Option<usize> {
        let mut count = 0;
        if let Some(packed) = &self.packed {
            count += packed.varints_left();
        }
        // The run of elements from here: Go's marshaller writes a repeated field's elements
        // together, so this is exact for a server's bytes (elements elsewhere in the
        // message, which protobuf allows, only make the `Vec` grow once more).
        let mut reader = self.reader.clone();
        let mut started = false;
        while let Ok(Some((number, _, value))) = reader.field() {
            if number != self.field.0 {
                if started {
                    break;
                }
                continue;
            }
            started = true;
            count += match (self.field.2, value) {
                (Kind::I32 | Kind::I64 | Kind::Bool, Value::Len(bytes)) => {
                    bytes.iter().filter(|b| **b < 0x80).count()
                }
                _ => 1,
            };
        }
        Some(count)
    }
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        loop {
            if let Some(packed) = &mut self.packed {
                if !packed.is_empty() {
                    let at = packed.offset();
                    let value = match self.field.2 {
                        Kind::F64 => {
                            return Err(ProtobufError::at(
                                "packed doubles are not used by Kubernetes",
                                at,
                            ))
                        }
                        _ => Value::Varint(packed.varint()?),
                    };
                    let de = ValueDe {
                        kind: self.field.2,
                        value,
                        at,
                        depth: self.depth,
                    };
                    return seed.deserialize(de).map(Some);
                }
                self.packed = None;
            }
            let Some((number, at, value)) = self.reader.field()? else {
                return Ok(None);
            };
            if number != self.field.0 {
                continue;
            }
            match (self.field.2, value) {
                (Kind::I32 | Kind::I64 | Kind::Bool, Value::Len(bytes)) => {
                    self.packed = Some(Reader::new(bytes, at));
                    continue;
                }
                _ if value.wire_type() != expected_wire_type(self.field.2) => {
                    return Err(ProtobufError::at("wrong wire type", at));
                }
                _ => {}
            }
            return seed
                .deserialize(ValueDe {
                    kind: self.field.2,
                    value,
                    at,
                    depth: self.depth,
                })
                .map(Some);
        }
    }
}

/// A map's entries: `{1: key, 2: value}` messages, keys always strings in Kubernetes.
struct Entries<'a> {
    field: &'static Field,
    reader: Reader<'a>,
    depth: usize,
    value: Option<(Value<'a>, usize)>,
}

impl<'de> MapAccess<'de> for Entries<'de> {
    type Error = ProtobufError;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        loop {
            let Some((number, at, value)) = self.reader.field()? else {
                return Ok(None);
            };
            if number != self.field.0 {
                continue;
            }
            let Value::Len(entry) = value else {
                return Err(ProtobufError::at("map entry is not a message", at));
            };
            let mut entry_reader = Reader::new(entry, at);
            let mut key: Option<(&[u8], usize)> = None;
            let mut val: Option<(Value<'de>, usize)> = None;
            while let Some((n, at, v)) = entry_reader.field()? {
                match (n, v) {
                    (1, Value::Len(k)) => key = Some((k, at)),
                    (1, _) => return Err(ProtobufError::at("map key is not a string", at)),
                    (2, v) if v.wire_type() == expected_wire_type(self.field.2) => {
                        val = Some((v, at))
                    }
                    (2, _) => return Err(ProtobufError::at("wrong wire type of a map value", at)),
                    _ => {}
                }
            }
            self.value = Some(val.unwrap_or((Value::Len(&[]), at)));
            let (key, _) = key.unwrap_or((&[], at));
            return seed.deserialize(StrDe(key)).map(Some);
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        let (value, at) = self
            .value
            .take()
            .ok_or_else(|| ProtobufError::new("value asked for before its key"))?;
        let value = match (self.field.2, value) {
            // A missing value is the zero of its type.
            (Kind::I32 | Kind::I64 | Kind::Bool, Value::Len(_)) => Value::Varint(0),
            (Kind::F64, Value::Len(_)) => Value::Fixed64(0),
            (_, v) => v,
        };
        seed.deserialize(ValueDe {
            kind: self.field.2,
            value,
            at,
            depth: self.depth,
        })
    }
}

/// A string from the wire, borrowed when it is UTF-8 (Go's JSON writes U+FFFD for the rest).
struct StrDe<'a>(&'a [u8]);

impl<'de> de::Deserializer<'de> for StrDe<'de> {
    type Error = ProtobufError;
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match std::str::from_utf8(self.0) {
            Ok(s) => visitor.visit_borrowed_str(s),
            Err(_) => visitor.visit_string(String::from_utf8_lossy(self.0).into_owned()),
        }
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        let s: String = String::from_utf8_lossy(self.0).into_owned();
        visitor.visit_enum(s.into_deserializer())
    }
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_some(self)
    }
    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct identifier ignored_any
    }
}

/// One field value.
struct ValueDe<'a> {
    kind: Kind,
    value: Value<'a>,
    at: usize,
    depth: usize,
}

/// The fields of a small special message, by number (the last occurrence wins, as in Go).
fn small_fields<'a>(bytes: &'a [u8], at: usize) -> Result<[Option<Value<'a>>; 3]> {
    let mut out = [None; 3];
    let mut reader = Reader::new(bytes, at);
    while let Some((n, _, v)) = reader.field()? {
        if (1..=3).contains(&n) {
            out[n as usize - 1] = Some(v);
        }
    }
    Ok(out)
}

fn varint_of(v: Option<Value<'_>>, at: usize) -> Result<u64> {
    match v {
        None => Ok(0),
        Some(Value::Varint(v)) => Ok(v),
        Some(_) => Err(ProtobufError::at("wrong wire type", at)),
    }
}

fn bytes_of<'a>(v: Option<Value<'a>>, at: usize) -> Result<&'a [u8]> {
    match v {
        None => Ok(&[]),
        Some(Value::Len(b)) => Ok(b),
        Some(_) => Err(ProtobufError::at("wrong wire type", at)),
    }
}

impl<'de> ValueDe<'de> {
    /// Whether this value is JSON's `null` (a zero Time, an empty raw JSON).
    fn is_null(&self) -> bool {
        let Kind::M(index) = self.kind else {
            return false;
        };
        let Value::Len(bytes) = self.value else {
            return false;
        };
        match MESSAGES[index as usize].special {
            Special::Time | Special::MicroTime => bytes.is_empty(),
            Special::RawJson => match small_fields(bytes, self.at) {
                Ok([None, ..]) => true,
                Ok([Some(Value::Len(b)), ..]) => b.is_empty(),
                _ => false,
            },
            _ => false,
        }
    }

    fn special<V: Visitor<'de>>(
        self,
        desc: &'static MessageDesc,
        bytes: &'de [u8],
        visitor: V,
    ) -> Result<V::Value> {
        let at = self.at;
        match desc.special {
            Special::None => MessageDe {
                desc,
                buf: bytes,
                base: at,
                depth: self.depth,
                type_meta: None,
            }
            .deserialize_any_public(visitor),
            Special::Time | Special::MicroTime => {
                if bytes.is_empty() {
                    return visitor.visit_unit();
                }
                let [s, n, _] = small_fields(bytes, at)?;
                let seconds = varint_of(s, at)? as i64;
                let nanos = varint_of(n, at)? as i64 as i32;
                let (buf, len) =
                    format_time_into(seconds, nanos, desc.special == Special::MicroTime)
                        .ok_or_else(|| ProtobufError::at("time out of range", at))?;
                let text = std::str::from_utf8(&buf[..len])
                    .map_err(|_| ProtobufError::at("time out of range", at))?;
                visitor.visit_str(text)
            }
            Special::Duration => {
                let [d, ..] = small_fields(bytes, at)?;
                visitor.visit_string(format_duration(varint_of(d, at)? as i64))
            }
            Special::Quantity => {
                let [s, ..] = small_fields(bytes, at)?;
                let s = bytes_of(s, at)?;
                if s.is_empty() {
                    return visitor.visit_borrowed_str("0");
                }
                StrDe(s).deserialize_any_public(visitor)
            }
            Special::IntOrString => {
                let [t, i, s] = small_fields(bytes, at)?;
                if varint_of(t, at)? == 1 {
                    StrDe(bytes_of(s, at)?).deserialize_any_public(visitor)
                } else {
                    visitor.visit_i64(i64::from(varint_of(i, at)? as i64 as i32))
                }
            }
            Special::RawJson => {
                let [raw, ..] = small_fields(bytes, at)?;
                let raw = bytes_of(raw, at)?;
                if raw.is_empty() {
                    return visitor.visit_unit();
                }
                if super::nesting::json_deeper_than(
                    raw,
                    super::nesting::JSON_LIMIT.saturating_sub(self.depth),
                ) {
                    return Err(ProtobufError::at("raw JSON nested too deeply", at));
                }
                // One UTF-8 check of the whole text, then the library's JSON deserializer,
                // the one the JSON path reads the same member with (a FieldsV1 holds hundreds
                // of keys; serde_json's own reader took a fifth more instructions on it), with
                // the nesting left to this text as its limit.
                let raw = std::str::from_utf8(raw)
                    .map_err(|_| ProtobufError::at("raw JSON: not UTF-8", at))?;
                let room = super::nesting::JSON_LIMIT.saturating_sub(self.depth);
                crate::json::deserializer::deserialize_embedded(raw, room, visitor)
                    .map_err(|e| ProtobufError::at(format!("raw JSON: {}", e.classify_text()), at))
            }
            Special::Items => {
                let field = desc
                    .field(1)
                    .ok_or_else(|| ProtobufError::at("no items field", at))?;
                visitor.visit_seq(Elements {
                    field,
                    reader: Reader::new(bytes, at),
                    depth: self.depth,
                    packed: None,
                })
            }
            Special::SchemaOrArray | Special::SchemaOrBool | Special::SchemaOrStrings => {
                self.schema_or(desc, bytes, visitor)
            }
        }
    }

    fn schema_or<V: Visitor<'de>>(
        self,
        desc: &'static MessageDesc,
        bytes: &'de [u8],
        visitor: V,
    ) -> Result<V::Value> {
        let at = self.at;
        let fields = small_fields(bytes, at)?;
        let (schema_number, list_number) = match desc.special {
            Special::SchemaOrBool => (2, 0),
            _ => (1, 2),
        };
        let has_list = list_number != 0 && {
            let mut reader = Reader::new(bytes, at);
            let mut found = false;
            while let Some((n, _, _)) = reader.field()? {
                found |= n == list_number;
            }
            found
        };
        if has_list {
            let field = desc.field(list_number).expect("the list field");
            return visitor.visit_seq(Elements {
                field,
                reader: Reader::new(bytes, at),
                depth: self.depth,
                packed: None,
            });
        }
        match (
            fields[schema_number as usize - 1],
            desc.field(schema_number),
        ) {
            (Some(value @ Value::Len(_)), Some(field)) => ValueDe {
                kind: field.2,
                value,
                at,
                depth: self.depth,
            }
            .deserialize_any_public(visitor),
            _ if desc.special == Special::SchemaOrBool => {
                visitor.visit_bool(varint_of(fields[0], at)? != 0)
            }
            _ => visitor.visit_unit(),
        }
    }
}

/// `deserialize_any` without importing the trait at each call site.
trait AnyPublic<'de>: de::Deserializer<'de, Error = ProtobufError> + Sized {
    fn deserialize_any_public<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_any(visitor)
    }
}
impl<'de, D: de::Deserializer<'de, Error = ProtobufError>> AnyPublic<'de> for D {}

impl<'de> de::Deserializer<'de> for ValueDe<'de> {
    type Error = ProtobufError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let at = self.at;
        match (self.kind, self.value) {
            (Kind::S, Value::Len(b)) => StrDe(b).deserialize_any(visitor),
            (Kind::B, Value::Len(b)) => {
                visitor.visit_string(base64::engine::general_purpose::STANDARD.encode(b))
            }
            (Kind::I32, Value::Varint(v)) => visitor.visit_i64(i64::from(v as i64 as i32)),
            (Kind::I64, Value::Varint(v)) => visitor.visit_i64(v as i64),
            (Kind::Bool, Value::Varint(v)) => visitor.visit_bool(v != 0),
            (Kind::F64, Value::Fixed64(bits)) => {
                let f = f64::from_bits(bits);
                if !f.is_finite() {
                    return Err(ProtobufError::at("a double that JSON cannot hold", at));
                }
                // Go's JSON writes integral doubles without a fraction: JSON readers see an integer.
                if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 {
                    if f >= 0.0 {
                        visitor.visit_u64(f as u64)
                    } else {
                        visitor.visit_i64(f as i64)
                    }
                } else {
                    visitor.visit_f64(f)
                }
            }
            (Kind::M(index), Value::Len(bytes)) => {
                self.special(&MESSAGES[index as usize], bytes, visitor)
            }
            _ => Err(ProtobufError::at("wrong wire type", at)),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if self.is_null() {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        match (self.kind, self.value) {
            (Kind::S, Value::Len(b)) => StrDe(b).deserialize_enum(name, variants, visitor),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_unit()
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct identifier
    }
}

trait ClassifyText {
    fn classify_text(&self) -> &'static str;
}

impl ClassifyText for serde_json::Error {
    fn classify_text(&self) -> &'static str {
        match self.classify() {
            serde_json::error::Category::Io => "I/O error",
            serde_json::error::Category::Syntax => "syntax error",
            serde_json::error::Category::Data => "unexpected value",
            serde_json::error::Category::Eof => "truncated",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::wire::{put_bytes, put_varint};
    use super::super::{decode, encode, message_by_name, message_for};
    use serde_json::{json, Value as Json};

    fn schema_nested(levels: usize) -> Vec<u8> {
        // JSONSchemaProps.not (field 28): a pointer to another JSONSchemaProps.
        let mut bytes = Vec::new();
        for _ in 0..levels {
            let mut outer = Vec::new();
            put_bytes(&mut outer, 28, &bytes);
            bytes = outer;
        }
        bytes
    }

    #[test]
    fn nesting_is_bounded_as_the_json_path() {
        let props = message_by_name(
            "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps",
        )
        .unwrap();
        let ok: Json = decode(props, &schema_nested(60)).unwrap();
        assert!(ok["not"]["not"].is_object());
        let err = decode::<Json>(props, &schema_nested(1_000)).unwrap_err();
        assert!(err.to_string().contains("nested too deeply"), "{err}");
        let mut deep = json!({});
        for _ in 0..300 {
            deep = json!({ "not": deep });
        }
        assert!(encode(props, &deep)
            .unwrap_err()
            .to_string()
            .contains("nested too deeply"));
    }

    #[test]
    fn hostile_bytes_are_errors_not_panics_or_allocations() {
        let pod = message_for("v1", "Pod").unwrap();
        let mut huge = vec![0x0a]; // metadata, with a length of 2^60
        put_varint(&mut huge, 1 << 60);
        let err = decode::<Json>(pod, &huge).unwrap_err();
        assert_eq!(err.what(), "length beyond the end of the input");
        assert!(decode::<Json>(pod, &[0x08, 0x01]).is_err()); // metadata as a varint
        assert_eq!(decode::<Json>(pod, &[0xf8, 0x07, 0x01]).unwrap(), json!({})); // unknown field 127
        assert!(decode::<Json>(pod, &[0x0b]).is_err()); // a group
        let value = json!({"metadata": {"name": "web", "labels": {"a": "b"}, "creationTimestamp": "2026-11-28T11:31:33Z"},
            "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}]}]}});
        let bytes = encode(pod, &value).unwrap();
        for i in 0..bytes.len() {
            for b in [0x00, 0x01, 0x02, 0x07, 0x0a, 0x7f, 0x80, 0xff] {
                let mut mutated = bytes.clone();
                mutated[i] = b;
                let _ = decode::<Json>(pod, &mutated);
                let _ = decode::<Json>(pod, &mutated[..i]);
            }
        }
    }

    #[test]
    fn a_repeated_field_fills_a_vec_allocated_once_at_its_size() {
        #[derive(serde::Deserialize)]
        struct Spec {
            containers: Vec<Json>,
            #[serde(rename = "restartPolicy")]
            _restart_policy: String,
        }
        #[derive(serde::Deserialize)]
        struct Pod {
            spec: Spec,
        }
        let pod = message_for("v1", "Pod").unwrap();
        for n in [1, 3, 5, 9] {
            let mut spec = Vec::new();
            for i in 0..n {
                let mut c = Vec::new();
                put_bytes(&mut c, 1, format!("c{i}").as_bytes());
                put_bytes(&mut spec, 2, &c);
            }
            put_bytes(&mut spec, 3, b"Always");
            let mut body = Vec::new();
            put_bytes(&mut body, 2, &spec);
            let decoded: Pod = decode(pod, &body).unwrap();
            assert_eq!(decoded.spec.containers.len(), n);
            assert_eq!(decoded.spec.containers.capacity(), n, "{n} containers");
        }
        // Elements apart from the run still join the list (the Vec grows for them).
        let mut spec = Vec::new();
        for name in ["a", "b"] {
            let mut c = Vec::new();
            put_bytes(&mut c, 1, name.as_bytes());
            put_bytes(&mut spec, 2, &c);
            if name == "a" {
                put_bytes(&mut spec, 3, b"Always");
            }
        }
        let mut body = Vec::new();
        put_bytes(&mut body, 2, &spec);
        let decoded: Pod = decode(pod, &body).unwrap();
        assert_eq!(decoded.spec.containers.len(), 2);
    }

    #[test]
    fn stripping_managed_fields_jumps_over_them_undecoded() {
        let pod = message_for("v1", "Pod").unwrap();
        // A managedFields entry whose fieldsV1 is not JSON: decoding it fails, skipping it
        // does not.
        let mut fields_v1 = Vec::new();
        put_bytes(&mut fields_v1, 1, b"{not json");
        let mut entry = Vec::new();
        put_bytes(&mut entry, 1, b"kubectl");
        put_bytes(&mut entry, 7, &fields_v1);
        let mut meta = Vec::new();
        put_bytes(&mut meta, 1, b"web");
        put_bytes(&mut meta, 17, &entry);
        let mut body = Vec::new();
        put_bytes(&mut body, 1, &meta);
        assert!(decode::<Json>(pod, &body).is_err());
        let _stripping = crate::api::strip_managed_fields_on_this_thread(true);
        let value: Json = decode(pod, &body).unwrap();
        assert_eq!(value, json!({"metadata": {"name": "web"}}));
        // Skipped bytes still have their lengths checked.
        let mut cut = body.clone();
        cut.truncate(body.len() - 3);
        assert!(decode::<Json>(pod, &cut).is_err());
    }

    #[test]
    fn raw_json_that_is_not_utf8_is_an_error() {
        let entry =
            message_by_name("k8s.io.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry").unwrap();
        let mut fields_v1 = Vec::new();
        put_bytes(&mut fields_v1, 1, b"{\"f:a\xff\":{}}");
        let mut body = Vec::new();
        put_bytes(&mut body, 7, &fields_v1);
        let err = decode::<Json>(entry, &body).unwrap_err();
        assert!(err.to_string().contains("raw JSON"), "{err}");
        let mut fields_v1 = Vec::new();
        put_bytes(
            &mut fields_v1,
            1,
            br#"{"f:metadata":{"f:labels":{".":{}}}}"#,
        );
        let mut body = Vec::new();
        put_bytes(&mut body, 7, &fields_v1);
        let ok: Json = decode(entry, &body).unwrap();
        assert_eq!(
            ok["fieldsV1"],
            json!({"f:metadata": {"f:labels": {".": {}}}})
        );
    }

    #[test]
    fn go_json_shapes() {
        let pod = message_for("v1", "Pod").unwrap();
        // A repeated field whose elements are not contiguous is one list.
        let container = |name: &str| {
            let mut c = Vec::new();
            put_bytes(&mut c, 1, name.as_bytes());
            c
        };
        let mut spec = Vec::new();
        put_bytes(&mut spec, 2, &container("a"));
        put_bytes(&mut spec, 3, b"Always");
        put_bytes(&mut spec, 2, &container("b"));
        let mut body = Vec::new();
        put_bytes(&mut body, 2, &spec);
        let value: Json = decode(pod, &body).unwrap();
        assert_eq!(
            value["spec"]["containers"],
            json!([{"name": "a"}, {"name": "b"}])
        );
        assert_eq!(value["spec"]["restartPolicy"], "Always");
        // A zero Time under omitzero is absent, a zero pointer is present, a zero omitempty
        // string is absent, absent lists that are not omitempty are null.
        let meta = message_by_name("k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta").unwrap();
        let mut m = Vec::new();
        put_bytes(&mut m, 1, b"");
        put_bytes(&mut m, 8, b"");
        m.extend_from_slice(&[0x50, 0x00]); // deletionGracePeriodSeconds = 0
        let value: Json = decode(meta, &m).unwrap();
        assert_eq!(value, json!({"deletionGracePeriodSeconds": 0}));
        let spec_only: Json = decode(pod, &[0x12, 0x00]).unwrap();
        assert_eq!(spec_only, json!({"spec": {"containers": null}}));
        // Packed and unpacked repeated ints (a supplemental group list).
        let security = message_by_name("k8s.io.api.core.v1.PodSecurityContext").unwrap();
        let unpacked = [0x20, 0x01, 0x20, 0x02];
        let packed = [0x22, 0x02, 0x01, 0x02];
        for bytes in [&unpacked[..], &packed[..]] {
            let value: Json = decode(security, bytes).unwrap();
            assert_eq!(value["supplementalGroups"], json!([1, 2]));
        }
        // IntOrString, both ways.
        for target in [json!(8080), json!("http")] {
            let pod_json = json!({"spec": {"containers": [{"name": "c", "readinessProbe": {"httpGet": {"port": target}}}]}});
            let bytes = encode(pod, &pod_json).unwrap();
            let back: Json = decode(pod, &bytes).unwrap();
            assert_eq!(
                back["spec"]["containers"][0]["readinessProbe"]["httpGet"]["port"],
                target
            );
        }
    }
}
