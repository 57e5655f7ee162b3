//! Encoding: a serde `Serializer` that writes any `Serialize` value (k8s-openapi types, a
//! `DynamicObject`, a `serde_json::Value`, JSON text) as Go's generated marshaller writes the
//! message, driven by the generated tables.
//!
//! The value is read in its JSON shape (what `serde_json` would send), straight from its
//! `Serialize` calls: no `serde_json::Value` in between. Members arrive in serde's order and
//! Go writes by field number, so bytes go into a [`Rope`] that puts each message in field
//! order when it closes and writes every byte once at the end (see `rope.rs` for why not
//! copy nested messages into their parents). Go's rules: every non-pointer field is
//! written, zero or not (a field absent from the JSON is written as its zero: `""`, `0`,
//! `false`, a message's zero, a zero `Time` as an empty message); a pointer, a list or a map
//! only when set; map entries sorted by key; an inlined message's members read from its
//! parent's object; a member given twice: the last one counts, as in a JSON object.
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
//!
//! Both modes refuse what `serde_json` itself would refuse (a map key that is not a string,
//! an integer past 64 bits, a `RawValue` that is not JSON) and anything a `Serialize`
//! implementation gets wrong (a value without its key, a map left open, an error it
//! swallowed): once a value has failed, the whole encoding fails.
//!
//! Where a tree may still be built: a `RawExtension`/`FieldsV1`/`JSON` member, whose bytes
//! are its JSON text, must be the text `serde_json` writes for it as a `serde_json::Value`
//! (keys in `Value`'s order), as before; `raw_text.rs` writes it directly when that is the
//! same text (a k8s-openapi `FieldsV1`) and through the tree otherwise (a `RawValue`).
//!
//! One difference from the tree encoder it replaced: a member given twice whose *earlier*
//! value cannot be encoded is refused (the tree kept only the last value and never saw the
//! earlier one). A refusal sends the write as JSON: never data loss.

use base64::Engine;
use serde::ser::{
    self, Impossible, Serialize, SerializeMap, SerializeSeq, SerializeStruct,
    SerializeStructVariant, SerializeTuple, SerializeTupleStruct, SerializeTupleVariant,
};

use super::descriptor::{
    Field, Kind, MessageDesc, Special, INLINE, MAP, MESSAGES, NOJSON, POINTER, REPEATED,
};
use super::raw_text::raw_json_text;
use super::rope::{route_key, zero_value, Rope, LEVELS};
use super::time::{format_duration, format_time_into, parse_time};
use super::transcode::transcode;
use super::wire::{put_bytes, put_tag, put_varint, FIXED64, LEN, VARINT};
use super::{de::MAX_DEPTH, Message, ProtobufError};
use crate::civil_time::parse_go_duration as parse_duration;

type Result<T> = std::result::Result<T, ProtobufError>;

/// serde_json's name for a `RawValue` (its text is the JSON to encode).
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// A slot's flags beyond the table's: the value is a message's member (Go's pointer and
/// bytes rules apply to its `null`), not an element of a list or a map.
const FIELD: u8 = 128;

/// Lenient: members the message does not declare are skipped (see the module docs).
pub(crate) fn encode_message<T: Serialize + ?Sized>(
    message: Message,
    value: &T,
) -> Result<Vec<u8>> {
    encode(message, Mode::Lenient, ("", ""), Input::Value(value))
}

/// As [`encode_message`], from JSON text (the test server's stored objects).
pub(crate) fn encode_json_text(message: Message, text: &str) -> Result<Vec<u8>> {
    encode::<()>(message, Mode::Lenient, ("", ""), Input::Text(text))
}

/// Exact: anything the tables cannot carry exactly is an error (see the module docs).
/// `type_meta`: the `apiVersion` and `kind` the top-level object may name (its own).
pub(crate) fn encode_message_exact<T: Serialize + ?Sized>(
    message: Message,
    type_meta: (&str, &str),
    value: &T,
) -> Result<Vec<u8>> {
    encode(message, Mode::Exact, type_meta, Input::Value(value))
}

enum Input<'a, T: ?Sized> {
    Value(&'a T),
    Text(&'a str),
}

fn encode<T: Serialize + ?Sized>(
    message: Message,
    mode: Mode,
    type_meta: (&str, &str),
    input: Input<'_, T>,
) -> Result<Vec<u8>> {
    let mut enc = Encoder {
        mode,
        type_meta,
        rope: Rope::with_capacity(4096),
        members: 0,
        key: String::new(),
        scratch: Vec::new(),
        raw: Vec::new(),
        transcoding: 0,
        open: 0,
        failed: false,
    };
    let top = Target::Slot(Slot {
        number: 0,
        kind: Kind::M(message.0),
        flags: 0,
        key: 0,
        member: 0,
        depth: 0,
    });
    match input {
        Input::Value(value) => enc.put(top, value)?,
        Input::Text(text) => {
            enc.transcoding += 1;
            transcode(
                text,
                ValueSer {
                    enc: &mut enc,
                    target: top,
                },
            )?;
        }
    }
    if enc.failed || enc.open != 0 {
        return Err(ProtobufError::new("the value failed to serialize"));
    }
    enc.rope.finish()
}

fn serializing(e: serde_json::Error) -> ProtobufError {
    // serde's message names what failed (a map key that is not a string, a custom
    // Serialize's own text), not a field's value.
    ProtobufError::new(format!("serializing: {e}"))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Lenient,
    Exact,
}

/// Where a value goes.
#[derive(Clone, Copy)]
enum Target {
    Slot(Slot),
    /// A top-level `apiVersion` (0) or `kind` (1) the message does not declare (exact
    /// mode): must name the message's own type; not written (it goes in the envelope).
    TypeMeta(usize),
    /// A member the message does not declare (lenient mode): read, checked, not written.
    Skip,
}

/// A value written as field `number` of kind `kind`: a message's member (flags with
/// [`FIELD`]), or one element of a list or a map (flags 0); number 0: the top message.
#[derive(Clone, Copy)]
struct Slot {
    number: u32,
    kind: Kind,
    flags: u8,
    /// The member's route in the open message, and which occurrence of it this is.
    key: u64,
    member: u32,
    /// The depth a message written here has.
    depth: usize,
}

#[derive(Clone, Copy)]
enum Num {
    I(i64),
    U(u64),
    F(f64),
}

impl Num {
    fn as_i64(self) -> Option<i64> {
        match self {
            Num::I(v) => Some(v),
            Num::U(v) => i64::try_from(v).ok(),
            Num::F(_) => None,
        }
    }

    fn as_f64(self) -> f64 {
        match self {
            Num::I(v) => v as f64,
            Num::U(v) => v as f64,
            Num::F(v) => v,
        }
    }
}

#[derive(Clone, Copy)]
enum Scalar<'a> {
    Bool(bool),
    Num(Num),
    Str(&'a str),
}

/// A message written to its end: how its node joins the message around it.
#[derive(Clone, Copy)]
struct Attach {
    mark: usize,
    number: u32,
    key: u64,
    member: u32,
}

enum Obj {
    Message {
        desc: &'static MessageDesc,
        depth: usize,
        at: Attach,
    },
    /// A map field's entries, from `mark`.
    Map {
        slot: Slot,
        mark: usize,
    },
    Skip,
}

struct ObjState {
    obj: Obj,
    /// A `JSONSchemaPropsOrArray`/`OrBool` around the message, closed after it.
    wrapper: Option<Attach>,
    /// The member whose key came and whose value is awaited.
    next: Option<Next>,
}

#[derive(Clone, Copy)]
struct Next {
    target: Target,
    /// A map entry open from this mark (closed after its value).
    entry: Option<usize>,
    /// The member's field, for errors.
    name: Option<(&'static str, &'static str)>,
}

struct Seq {
    elem: Target,
    wrapper: Option<Attach>,
}

struct Encoder<'t> {
    mode: Mode,
    type_meta: (&'t str, &'t str),
    rope: Rope,
    members: u32,
    /// The map key being read (reused).
    key: String,
    /// A small message's bytes before its length is known (reused).
    scratch: Vec<u8>,
    /// A raw JSON member's text (reused).
    raw: Vec<u8>,
    /// Values are being read from JSON text as it is parsed (each can be read once).
    transcoding: usize,
    /// Objects and arrays begun and not yet ended.
    open: usize,
    /// A value failed (even if its caller carried on).
    failed: bool,
}

fn too_deep() -> ProtobufError {
    ProtobufError::new("messages nested too deeply")
}

fn raw_json(slot: &Slot) -> bool {
    match slot.kind {
        Kind::M(index) => {
            slot.flags & (MAP | REPEATED) == 0
                && MESSAGES[index as usize].special == Special::RawJson
        }
        _ => false,
    }
}

/// Where member `name` of `desc` goes: its field, its route, and how many inlined messages
/// lie on the way.
fn resolve(
    desc: &'static MessageDesc,
    name: &str,
    level: u32,
) -> Option<(&'static Field, u64, usize)> {
    if level >= LEVELS {
        return None;
    }
    for field in desc.fields {
        if field.has(NOJSON) {
            continue;
        }
        if field.has(INLINE) {
            if let Kind::M(index) = field.2 {
                if let Some((f, key, extra)) = resolve(&MESSAGES[index as usize], name, level + 1) {
                    return Some((f, route_key(level, field.0) | key, extra + 1));
                }
            }
        } else if field.1 == name {
            return Some((field, route_key(level, field.0), 0));
        }
    }
    None
}

impl Encoder<'_> {
    /// Writes `value` to `target`; the entry point of every value, nested or not.
    fn put<T: Serialize + ?Sized>(&mut self, target: Target, value: &T) -> Result<()> {
        let open = self.open;
        let result = match target {
            Target::Slot(slot) if raw_json(&slot) => self.raw_json(slot, value),
            _ => value.serialize(ValueSer { enc: self, target }),
        };
        let result = result.and_then(|()| {
            if self.open == open {
                Ok(())
            } else {
                Err(ProtobufError::new("an object or array left unfinished"))
            }
        });
        if result.is_err() {
            self.failed = true;
        }
        result
    }

    /// A `RawExtension`, `FieldsV1` or `JSON`: its JSON text (see `raw_text.rs`).
    fn raw_json<T: Serialize + ?Sized>(&mut self, slot: Slot, value: &T) -> Result<()> {
        let mut text = std::mem::take(&mut self.raw);
        let result = self.raw_json_with(slot, value, &mut text);
        self.raw = text;
        result
    }

    fn raw_json_with<T: Serialize + ?Sized>(
        &mut self,
        slot: Slot,
        value: &T,
        text: &mut Vec<u8>,
    ) -> Result<()> {
        raw_json_text(value, text, self.transcoding > 0).map_err(serializing)?;
        if text == b"null" {
            return self.null(Target::Slot(slot));
        }
        if slot.depth >= MAX_DEPTH {
            return Err(too_deep());
        }
        self.message_leaf(&slot, |out| put_bytes(out, 1, text));
        Ok(())
    }

    /// A small message written whole: its content (by `write`), with tag and length.
    fn message_leaf(&mut self, slot: &Slot, write: impl FnOnce(&mut Vec<u8>)) {
        let scratch = &mut self.scratch;
        scratch.clear();
        write(scratch);
        let number = slot.number;
        self.rope.leaf(slot.key, slot.member, |out| {
            if number != 0 {
                put_tag(out, number, LEN);
                put_varint(out, scratch.len() as u64);
            }
            out.extend_from_slice(scratch);
        });
    }

    fn null(&mut self, target: Target) -> Result<()> {
        let slot = match target {
            Target::Skip => return Ok(()),
            Target::TypeMeta(_) => return Err(type_meta_error()),
            Target::Slot(slot) => slot,
        };
        let field = slot.flags & FIELD != 0;
        if slot.flags & (MAP | REPEATED) != 0
            || (field && (slot.flags & POINTER != 0 || slot.kind == Kind::B))
        {
            self.rope.marker(slot.key, slot.member);
            return Ok(());
        }
        if slot.number == 0 && self.mode == Mode::Exact {
            return Err(ProtobufError::new("expected an object"));
        }
        self.rope.leaf_try(slot.key, slot.member, |out| {
            zero_value(out, slot.number, slot.kind, slot.depth)
        })?;
        Ok(())
    }

    fn integer(&self, n: Num) -> Result<i64> {
        if let Some(v) = n.as_i64() {
            return Ok(v);
        }
        if self.mode == Mode::Exact {
            // `1.0`, `1e3` or a u64 past i64: Go's JSON refuses them for an integer field.
            return Err(ProtobufError::new("expected an integer (not a float)"));
        }
        let f = n.as_f64();
        if f.fract() == 0.0 && f.abs() < 9.2e18 {
            Ok(f as i64)
        } else {
            Err(ProtobufError::new("expected an integer"))
        }
    }

    fn scalar(&mut self, target: Target, value: Scalar<'_>) -> Result<()> {
        let slot = match target {
            Target::Skip => return Ok(()),
            Target::TypeMeta(which) => {
                let expected = if which == 0 {
                    self.type_meta.0
                } else {
                    self.type_meta.1
                };
                return match value {
                    Scalar::Str(s) if s == expected => Ok(()),
                    _ => Err(type_meta_error()),
                };
            }
            Target::Slot(slot) => slot,
        };
        if slot.flags & MAP != 0 {
            return Err(ProtobufError::new("expected an object"));
        }
        if slot.flags & REPEATED != 0 {
            return Err(ProtobufError::new("expected an array"));
        }
        let (number, key, member) = (slot.number, slot.key, slot.member);
        match (slot.kind, value) {
            (Kind::S, Scalar::Str(s)) => {
                self.rope
                    .leaf(key, member, |out| put_bytes(out, number, s.as_bytes()));
            }
            (Kind::S, _) => return Err(ProtobufError::new("expected a string")),
            (Kind::B, Scalar::Str(s)) => {
                self.scratch.clear();
                base64::engine::general_purpose::STANDARD
                    .decode_vec(s, &mut self.scratch)
                    .map_err(|_| ProtobufError::new("expected base64"))?;
                let bytes = &self.scratch;
                self.rope
                    .leaf(key, member, |out| put_bytes(out, number, bytes));
            }
            (Kind::B, _) => return Err(ProtobufError::new("expected base64")),
            (kind @ (Kind::I32 | Kind::I64), Scalar::Num(n)) => {
                let v = self.integer(n)?;
                if kind == Kind::I32 && i32::try_from(v).is_err() {
                    return Err(ProtobufError::new("a number out of int32's range"));
                }
                self.rope.leaf(key, member, |out| put_int(out, number, v));
            }
            (Kind::I32 | Kind::I64, _) => return Err(ProtobufError::new("expected an integer")),
            (Kind::Bool, Scalar::Bool(b)) => {
                self.rope
                    .leaf(key, member, |out| put_int(out, number, i64::from(b)));
            }
            (Kind::Bool, _) => return Err(ProtobufError::new("expected a boolean")),
            (Kind::F64, Scalar::Num(n)) => {
                let v = n.as_f64();
                self.rope.leaf(key, member, |out| {
                    put_tag(out, number, FIXED64);
                    out.extend_from_slice(&v.to_bits().to_le_bytes());
                });
            }
            (Kind::F64, _) => return Err(ProtobufError::new("expected a number")),
            (Kind::M(index), value) => {
                if slot.depth >= MAX_DEPTH {
                    return Err(too_deep());
                }
                self.special_scalar(&slot, &MESSAGES[index as usize], value)?;
            }
        }
        Ok(())
    }

    /// A message whose JSON is a string, a number or a boolean.
    fn special_scalar(
        &mut self,
        slot: &Slot,
        desc: &'static MessageDesc,
        value: Scalar<'_>,
    ) -> Result<()> {
        let exact = self.mode == Mode::Exact;
        match (desc.special, value) {
            (Special::Time | Special::MicroTime, Scalar::Str(text)) => {
                let (seconds, nanos) =
                    parse_time(text).ok_or_else(|| ProtobufError::new("not an RFC 3339 time"))?;
                let micros = desc.special == Special::MicroTime;
                let nanos = if micros { nanos / 1000 * 1000 } else { 0 };
                let canonical = format_time_into(seconds, nanos, micros)
                    .is_some_and(|(buf, len)| buf[..len] == *text.as_bytes());
                if exact && !canonical {
                    return Err(ProtobufError::new("a time not in Go's own form"));
                }
                self.message_leaf(slot, |out| {
                    put_int(out, 1, seconds);
                    put_int(out, 2, i64::from(nanos));
                });
            }
            (Special::Time | Special::MicroTime, _) => {
                return Err(ProtobufError::new("expected a time"))
            }
            (Special::Duration, Scalar::Str(s)) => {
                let nanos =
                    parse_duration(s).ok_or_else(|| ProtobufError::new("not a duration"))?;
                if exact && format_duration(nanos) != s {
                    return Err(ProtobufError::new("a duration not in Go's own form"));
                }
                self.message_leaf(slot, |out| put_int(out, 1, nanos));
            }
            (Special::Duration, _) => return Err(ProtobufError::new("expected a duration")),
            (Special::Quantity, Scalar::Str(s)) => {
                if exact && s.trim() != s {
                    return Err(ProtobufError::new("a quantity with spaces around it"));
                }
                self.message_leaf(slot, |out| put_bytes(out, 1, s.as_bytes()));
            }
            (Special::Quantity, Scalar::Num(n)) => {
                let text = match n {
                    Num::I(v) => v.to_string(),
                    Num::U(v) => v.to_string(),
                    Num::F(_) if exact => {
                        return Err(ProtobufError::new("a quantity as a non-integer number"))
                    }
                    Num::F(f) => serde_json::Number::from_f64(f)
                        .map(|n| n.to_string())
                        .ok_or_else(|| ProtobufError::new("expected a quantity"))?,
                };
                self.message_leaf(slot, |out| put_bytes(out, 1, text.as_bytes()));
            }
            (Special::Quantity, _) => return Err(ProtobufError::new("expected a quantity")),
            (Special::IntOrString, Scalar::Str(s)) => self.message_leaf(slot, |out| {
                put_int(out, 1, 1);
                put_int(out, 2, 0);
                put_bytes(out, 3, s.as_bytes());
            }),
            (Special::IntOrString, Scalar::Num(n)) => {
                let v = self.integer(n)?;
                let v = i32::try_from(v).map_err(|_| ProtobufError::new("out of int32's range"))?;
                self.message_leaf(slot, |out| {
                    put_int(out, 1, 0);
                    put_int(out, 2, i64::from(v));
                    put_bytes(out, 3, b"");
                });
            }
            (Special::IntOrString, _) => {
                return Err(ProtobufError::new("expected an int or a string"))
            }
            (Special::SchemaOrBool, Scalar::Bool(b)) => {
                self.message_leaf(slot, |out| put_int(out, 1, i64::from(b)));
            }
            (Special::SchemaOrBool, _) => {
                return Err(ProtobufError::new("expected a schema or a boolean"))
            }
            (Special::Items | Special::SchemaOrArray | Special::SchemaOrStrings, _) => {
                return Err(ProtobufError::new("expected a schema or an array"))
            }
            (Special::None | Special::RawJson, _) => {
                return Err(ProtobufError::new("expected an object").in_field(desc.name))
            }
        }
        Ok(())
    }

    fn begin_seq(&mut self, target: Target) -> Result<Seq> {
        let seq = self.open_seq(target)?;
        self.open += 1;
        Ok(seq)
    }

    fn open_seq(&mut self, target: Target) -> Result<Seq> {
        let slot = match target {
            Target::Skip => {
                return Ok(Seq {
                    elem: Target::Skip,
                    wrapper: None,
                })
            }
            Target::TypeMeta(_) => return Err(type_meta_error()),
            Target::Slot(slot) => slot,
        };
        if slot.flags & REPEATED != 0 {
            self.rope.marker(slot.key, slot.member);
            let elem = Slot { flags: 0, ..slot };
            return Ok(Seq {
                elem: Target::Slot(elem),
                wrapper: None,
            });
        }
        if slot.flags & MAP != 0 {
            return Err(ProtobufError::new("expected an object"));
        }
        let Kind::M(index) = slot.kind else {
            return Err(ProtobufError::new("expected a scalar, not an array"));
        };
        if slot.depth >= MAX_DEPTH {
            return Err(too_deep());
        }
        let desc = &MESSAGES[index as usize];
        let list = match desc.special {
            Special::Items => desc.field(1),
            Special::SchemaOrArray | Special::SchemaOrStrings => desc.field(2),
            _ => return Err(ProtobufError::new("expected an object").in_field(desc.name)),
        }
        .ok_or_else(|| ProtobufError::new("no list field"))?;
        let mark = self.rope.pending.len();
        let inner = Slot {
            number: list.0,
            kind: list.2,
            flags: list.3 | FIELD,
            key: 0,
            member: 0,
            depth: slot.depth + 1,
        };
        let seq = self.open_seq(Target::Slot(inner))?;
        Ok(Seq {
            elem: seq.elem,
            wrapper: Some(Attach {
                mark,
                number: slot.number,
                key: slot.key,
                member: slot.member,
            }),
        })
    }

    fn end_seq(&mut self, seq: Seq) -> Result<()> {
        if let Some(w) = seq.wrapper {
            self.rope.close_in_order(w.mark, w.number, w.key, w.member);
        }
        self.open = self.open.saturating_sub(1);
        Ok(())
    }

    fn begin_obj(&mut self, target: Target) -> Result<ObjState> {
        let state = self.open_obj(target)?;
        self.open += 1;
        Ok(state)
    }

    fn open_obj(&mut self, target: Target) -> Result<ObjState> {
        let state = |obj| ObjState {
            obj,
            wrapper: None,
            next: None,
        };
        let slot = match target {
            Target::Skip => return Ok(state(Obj::Skip)),
            Target::TypeMeta(_) => return Err(type_meta_error()),
            Target::Slot(slot) => slot,
        };
        if slot.flags & MAP != 0 {
            self.rope.marker(slot.key, slot.member);
            let mark = self.rope.pending.len();
            return Ok(state(Obj::Map { slot, mark }));
        }
        if slot.flags & REPEATED != 0 {
            return Err(ProtobufError::new("expected an array"));
        }
        let Kind::M(index) = slot.kind else {
            return Err(ProtobufError::new("expected a scalar, not an object"));
        };
        if slot.depth >= MAX_DEPTH {
            return Err(too_deep());
        }
        let desc = &MESSAGES[index as usize];
        let at = Attach {
            mark: self.rope.pending.len(),
            number: slot.number,
            key: slot.key,
            member: slot.member,
        };
        let schema = match desc.special {
            Special::None => {
                return Ok(state(Obj::Message {
                    desc,
                    depth: slot.depth,
                    at,
                }))
            }
            Special::SchemaOrArray | Special::SchemaOrStrings => desc.field(1).map(|f| (1, f)),
            Special::SchemaOrBool => {
                self.rope.leaf(0, 0, |out| put_int(out, 1, 1));
                desc.field(2).map(|f| (2, f))
            }
            Special::Time | Special::MicroTime => {
                return Err(ProtobufError::new("expected a time"))
            }
            _ => {
                return Err(
                    ProtobufError::new("expected a scalar, not an object").in_field(desc.name)
                )
            }
        };
        let (number, schema) = schema.ok_or_else(|| ProtobufError::new("no schema field"))?;
        let inner = Slot {
            number,
            kind: schema.2,
            flags: 0,
            key: 0,
            member: 0,
            depth: slot.depth + 1,
        };
        let mut inner = self.open_obj(Target::Slot(inner))?;
        inner.wrapper = Some(at);
        Ok(inner)
    }

    /// The key of the next member: where its value will go.
    fn key(&mut self, state: &mut ObjState, name: &str) -> Result<()> {
        if state.next.is_some() {
            return Err(ProtobufError::new("a map key without its value"));
        }
        let next = match state.obj {
            Obj::Skip => Next {
                target: Target::Skip,
                entry: None,
                name: None,
            },
            Obj::Message { desc, depth, at } => match resolve(desc, name, 0) {
                Some((field, key, extra)) => {
                    self.members = self.members.wrapping_add(1);
                    Next {
                        target: Target::Slot(Slot {
                            number: field.0,
                            kind: field.2,
                            flags: field.3 | FIELD,
                            key,
                            member: self.members,
                            depth: depth + 1 + extra,
                        }),
                        entry: None,
                        name: Some((field.1, desc.name)),
                    }
                }
                None => {
                    let top = at.number == 0 && depth == 0;
                    let which = match name {
                        "apiVersion" if top => Some(0),
                        "kind" if top => Some(1),
                        _ => None,
                    };
                    let target = match (which, self.mode) {
                        (_, Mode::Lenient) => Target::Skip,
                        (Some(which), Mode::Exact) => Target::TypeMeta(which),
                        // Never the member's name in the error: in a map mistaken for a
                        // message, keys are data.
                        (None, Mode::Exact) => {
                            return Err(ProtobufError::new(
                                "a member the protobuf tables do not know (it would be lost)",
                            )
                            .in_field(desc.name))
                        }
                    };
                    Next {
                        target,
                        entry: None,
                        name: None,
                    }
                }
            },
            Obj::Map { slot, .. } => {
                let mark = self.rope.pending.len();
                self.rope
                    .leaf(0, 0, |out| put_bytes(out, 1, name.as_bytes()));
                Next {
                    target: Target::Slot(Slot {
                        number: 2,
                        kind: slot.kind,
                        flags: 0,
                        key: 0,
                        member: 0,
                        depth: slot.depth,
                    }),
                    entry: Some(mark),
                    name: None,
                }
            }
        };
        state.next = Some(next);
        Ok(())
    }

    fn take_next(&mut self, state: &mut ObjState) -> Result<Next> {
        state
            .next
            .take()
            .ok_or_else(|| ProtobufError::new("a map value without its key"))
    }

    fn done_value(&mut self, state: &ObjState, next: &Next) {
        if let (Some(mark), Obj::Map { slot, .. }) = (next.entry, &state.obj) {
            self.rope
                .close_in_order(mark, slot.number, slot.key, slot.member);
        }
    }

    fn value<T: Serialize + ?Sized>(&mut self, state: &mut ObjState, value: &T) -> Result<()> {
        let next = self.take_next(state)?;
        let result = self.put(next.target, value);
        if let (Err(e), Some((field, message))) = (&result, next.name) {
            return Err(e.clone().in_field(field).in_field(message));
        }
        result?;
        self.done_value(state, &next);
        Ok(())
    }

    fn end_obj(&mut self, state: ObjState) -> Result<()> {
        if state.next.is_some() {
            return Err(ProtobufError::new("a map key without its value"));
        }
        match state.obj {
            Obj::Message { desc, depth, at } => {
                self.rope
                    .close_message(at.mark, desc, depth, at.number, at.key, at.member)?;
            }
            Obj::Map { mark, .. } => self.rope.sort_entries(mark),
            Obj::Skip => {}
        }
        if let Some(w) = state.wrapper {
            self.rope.close_in_order(w.mark, w.number, w.key, w.member);
        }
        self.open = self.open.saturating_sub(1);
        Ok(())
    }
}

fn type_meta_error() -> ProtobufError {
    ProtobufError::new("apiVersion or kind does not name the message's own type")
}

fn put_int(out: &mut Vec<u8>, number: u32, v: i64) {
    put_tag(out, number, VARINT);
    put_varint(out, v as u64);
}

/// The serializer of one value, headed for `target`.
struct ValueSer<'e, 't> {
    enc: &'e mut Encoder<'t>,
    target: Target,
}

impl<'e, 't> ser::Serializer for ValueSer<'e, 't> {
    type Ok = ();
    type Error = ProtobufError;
    type SerializeSeq = SeqSer<'e, 't>;
    type SerializeTuple = SeqSer<'e, 't>;
    type SerializeTupleStruct = SeqSer<'e, 't>;
    type SerializeTupleVariant = VariantSeq<'e, 't>;
    type SerializeMap = MapSer<'e, 't>;
    type SerializeStruct = StructSer<'e, 't>;
    type SerializeStructVariant = VariantMap<'e, 't>;

    fn serialize_bool(self, v: bool) -> Result<()> {
        self.enc.scalar(self.target, Scalar::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> Result<()> {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i16(self, v: i16) -> Result<()> {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i32(self, v: i32) -> Result<()> {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i64(self, v: i64) -> Result<()> {
        self.enc.scalar(self.target, Scalar::Num(Num::I(v)))
    }
    fn serialize_i128(self, v: i128) -> Result<()> {
        // As serde_json: a 64-bit integer or an error.
        if let Ok(v) = u64::try_from(v) {
            self.serialize_u64(v)
        } else if let Ok(v) = i64::try_from(v) {
            self.serialize_i64(v)
        } else {
            Err(ProtobufError::new("a number out of range"))
        }
    }
    fn serialize_u8(self, v: u8) -> Result<()> {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u16(self, v: u16) -> Result<()> {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u32(self, v: u32) -> Result<()> {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u64(self, v: u64) -> Result<()> {
        self.enc.scalar(self.target, Scalar::Num(Num::U(v)))
    }
    fn serialize_u128(self, v: u128) -> Result<()> {
        match u64::try_from(v) {
            Ok(v) => self.serialize_u64(v),
            Err(_) => Err(ProtobufError::new("a number out of range")),
        }
    }
    fn serialize_f32(self, v: f32) -> Result<()> {
        self.serialize_f64(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result<()> {
        if v.is_finite() {
            self.enc.scalar(self.target, Scalar::Num(Num::F(v)))
        } else {
            // serde_json writes NaN and the infinities as `null`.
            self.enc.null(self.target)
        }
    }
    fn serialize_char(self, v: char) -> Result<()> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<()> {
        self.enc.scalar(self.target, Scalar::Str(v))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<()> {
        // As serde_json: an array of numbers.
        let mut seq = self.serialize_seq(Some(v.len()))?;
        for b in v {
            SerializeSeq::serialize_element(&mut seq, b)?;
        }
        SerializeSeq::end(seq)
    }
    fn serialize_none(self) -> Result<()> {
        self.enc.null(self.target)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<()> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<()> {
        self.enc.null(self.target)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<()> {
        self.enc.null(self.target)
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<()> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<()> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<()> {
        let mut map = self.serialize_map(Some(1))?;
        map.serialize_entry(variant, value)?;
        SerializeMap::end(map)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<SeqSer<'e, 't>> {
        let seq = self.enc.begin_seq(self.target)?;
        Ok(SeqSer { enc: self.enc, seq })
    }
    fn serialize_tuple(self, len: usize) -> Result<SeqSer<'e, 't>> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<SeqSer<'e, 't>> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<VariantSeq<'e, 't>> {
        let mut outer = self.enc.begin_obj(self.target)?;
        self.enc.key(&mut outer, variant)?;
        let next = self.enc.take_next(&mut outer)?;
        let seq = self.enc.begin_seq(next.target)?;
        Ok(VariantSeq {
            enc: self.enc,
            outer,
            next,
            seq,
        })
    }
    fn serialize_map(self, _: Option<usize>) -> Result<MapSer<'e, 't>> {
        let state = self.enc.begin_obj(self.target)?;
        Ok(MapSer {
            enc: self.enc,
            state,
        })
    }
    fn serialize_struct(self, name: &'static str, len: usize) -> Result<StructSer<'e, 't>> {
        if name == RAW_VALUE_TOKEN {
            return Ok(StructSer::Raw {
                enc: self.enc,
                target: self.target,
                done: false,
            });
        }
        self.serialize_map(Some(len)).map(StructSer::Object)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<VariantMap<'e, 't>> {
        let mut outer = self.enc.begin_obj(self.target)?;
        self.enc.key(&mut outer, variant)?;
        let next = self.enc.take_next(&mut outer)?;
        let inner = self.enc.begin_obj(next.target)?;
        Ok(VariantMap {
            enc: self.enc,
            outer,
            next,
            inner,
        })
    }
}

struct SeqSer<'e, 't> {
    enc: &'e mut Encoder<'t>,
    seq: Seq,
}

impl SerializeSeq for SeqSer<'_, '_> {
    type Ok = ();
    type Error = ProtobufError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.enc.put(self.seq.elem, value)
    }
    fn end(self) -> Result<()> {
        self.enc.end_seq(self.seq)
    }
}

impl SerializeTuple for SeqSer<'_, '_> {
    type Ok = ();
    type Error = ProtobufError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        SerializeSeq::serialize_element(self, value)
    }
    fn end(self) -> Result<()> {
        SerializeSeq::end(self)
    }
}

impl SerializeTupleStruct for SeqSer<'_, '_> {
    type Ok = ();
    type Error = ProtobufError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        SerializeSeq::serialize_element(self, value)
    }
    fn end(self) -> Result<()> {
        SerializeSeq::end(self)
    }
}

struct MapSer<'e, 't> {
    enc: &'e mut Encoder<'t>,
    state: ObjState,
}

impl SerializeMap for MapSer<'_, '_> {
    type Ok = ();
    type Error = ProtobufError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<()> {
        let mut name = std::mem::take(&mut self.enc.key);
        name.clear();
        let result = read_key(&mut name, key).and_then(|()| self.enc.key(&mut self.state, &name));
        self.enc.key = name;
        if result.is_err() {
            self.enc.failed = true;
        }
        result
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.enc.value(&mut self.state, value)
    }
    fn end(self) -> Result<()> {
        self.enc.end_obj(self.state)
    }
}

enum StructSer<'e, 't> {
    Object(MapSer<'e, 't>),
    /// A `RawValue`: its one field is its JSON text.
    Raw {
        enc: &'e mut Encoder<'t>,
        target: Target,
        done: bool,
    },
}

impl SerializeStruct for StructSer<'_, '_> {
    type Ok = ();
    type Error = ProtobufError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        name: &'static str,
        value: &T,
    ) -> Result<()> {
        match self {
            StructSer::Object(map) => {
                let result = map.enc.key(&mut map.state, name);
                if result.is_err() {
                    map.enc.failed = true;
                }
                result?;
                map.enc.value(&mut map.state, value)
            }
            StructSer::Raw { enc, target, done } => {
                if std::mem::replace(done, true) {
                    return Err(ProtobufError::new("a raw JSON value given twice"));
                }
                value.serialize(RawText {
                    enc,
                    target: *target,
                })
            }
        }
    }
    fn end(self) -> Result<()> {
        match self {
            StructSer::Object(map) => SerializeMap::end(map),
            StructSer::Raw { done: true, .. } => Ok(()),
            StructSer::Raw { .. } => Err(ProtobufError::new("a raw JSON value without its text")),
        }
    }
}

struct VariantSeq<'e, 't> {
    enc: &'e mut Encoder<'t>,
    outer: ObjState,
    next: Next,
    seq: Seq,
}

impl SerializeTupleVariant for VariantSeq<'_, '_> {
    type Ok = ();
    type Error = ProtobufError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.enc.put(self.seq.elem, value)
    }
    fn end(self) -> Result<()> {
        self.enc.end_seq(self.seq)?;
        self.enc.done_value(&self.outer, &self.next);
        self.enc.end_obj(self.outer)
    }
}

struct VariantMap<'e, 't> {
    enc: &'e mut Encoder<'t>,
    outer: ObjState,
    next: Next,
    inner: ObjState,
}

impl SerializeStructVariant for VariantMap<'_, '_> {
    type Ok = ();
    type Error = ProtobufError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        name: &'static str,
        value: &T,
    ) -> Result<()> {
        self.enc.key(&mut self.inner, name)?;
        self.enc.value(&mut self.inner, value)
    }
    fn end(self) -> Result<()> {
        self.enc.end_obj(self.inner)?;
        self.enc.done_value(&self.outer, &self.next);
        self.enc.end_obj(self.outer)
    }
}

/// Reads a map key as serde_json would make it a string.
fn read_key<T: Serialize + ?Sized>(out: &mut String, key: &T) -> Result<()> {
    let mut other = false;
    match key.serialize(KeyText {
        out,
        other: &mut other,
    }) {
        Ok(()) => Ok(()),
        Err(e) if !other => Err(e),
        Err(_) => {
            // Not a plain string: serde_json's own rules (numbers, booleans, chars, unit
            // variants as text; anything else an error), through a one-entry map.
            out.clear();
            struct OneKey<'a, T: ?Sized>(&'a T);
            impl<T: Serialize + ?Sized> Serialize for OneKey<'_, T> {
                fn serialize<S: ser::Serializer>(
                    &self,
                    s: S,
                ) -> std::result::Result<S::Ok, S::Error> {
                    let mut map = s.serialize_map(Some(1))?;
                    map.serialize_entry(self.0, &())?;
                    map.end()
                }
            }
            match serde_json::to_value(OneKey(key)).map_err(serializing)? {
                serde_json::Value::Object(map) => {
                    out.push_str(map.keys().next().map(String::as_str).unwrap_or(""));
                    Ok(())
                }
                _ => Err(ProtobufError::new("a map key that is not a string")),
            }
        }
    }
}

/// A map key given as a string (or a newtype around one); anything else sets `other`.
struct KeyText<'a> {
    out: &'a mut String,
    other: &'a mut bool,
}

impl KeyText<'_> {
    fn other<T>(self) -> Result<T> {
        *self.other = true;
        Err(ProtobufError::new("a map key that is not a string"))
    }
}

macro_rules! key_other {
    ($($f:ident($($t:ty),*);)*) => {
        $(fn $f(self, $(_: $t),*) -> Result<()> { self.other() })*
    };
}

impl ser::Serializer for KeyText<'_> {
    type Ok = ();
    type Error = ProtobufError;
    type SerializeSeq = Impossible<(), ProtobufError>;
    type SerializeTuple = Impossible<(), ProtobufError>;
    type SerializeTupleStruct = Impossible<(), ProtobufError>;
    type SerializeTupleVariant = Impossible<(), ProtobufError>;
    type SerializeMap = Impossible<(), ProtobufError>;
    type SerializeStruct = Impossible<(), ProtobufError>;
    type SerializeStructVariant = Impossible<(), ProtobufError>;

    fn serialize_str(self, v: &str) -> Result<()> {
        self.out.push_str(v);
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> Result<()> {
        v.serialize(self)
    }
    key_other! {
        serialize_bool(bool); serialize_i8(i8); serialize_i16(i16); serialize_i32(i32);
        serialize_i64(i64); serialize_i128(i128); serialize_u8(u8); serialize_u16(u16);
        serialize_u32(u32); serialize_u64(u64); serialize_u128(u128); serialize_f32(f32);
        serialize_f64(f64); serialize_char(char); serialize_bytes(&[u8]); serialize_none();
        serialize_unit(); serialize_unit_struct(&'static str);
        serialize_unit_variant(&'static str, u32, &'static str);
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<()> {
        self.other()
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<()> {
        self.other()
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq> {
        self.other()
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple> {
        self.other()
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        self.other()
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        self.other()
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> {
        self.other()
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> {
        self.other()
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant> {
        self.other()
    }
}

/// A `RawValue`'s text: parsed and fed to the target as it is read.
struct RawText<'a, 'e, 't> {
    enc: &'a mut &'e mut Encoder<'t>,
    target: Target,
}

impl RawText<'_, '_, '_> {
    fn not_text(self) -> Result<()> {
        Err(ProtobufError::new("a raw JSON value that is not text"))
    }
}

macro_rules! raw_other {
    ($($f:ident($($t:ty),*);)*) => {
        $(fn $f(self, $(_: $t),*) -> Result<()> { self.not_text() })*
    };
}

impl ser::Serializer for RawText<'_, '_, '_> {
    type Ok = ();
    type Error = ProtobufError;
    type SerializeSeq = Impossible<(), ProtobufError>;
    type SerializeTuple = Impossible<(), ProtobufError>;
    type SerializeTupleStruct = Impossible<(), ProtobufError>;
    type SerializeTupleVariant = Impossible<(), ProtobufError>;
    type SerializeMap = Impossible<(), ProtobufError>;
    type SerializeStruct = Impossible<(), ProtobufError>;
    type SerializeStructVariant = Impossible<(), ProtobufError>;

    fn serialize_str(self, text: &str) -> Result<()> {
        let enc: &mut Encoder<'_> = self.enc;
        let open = enc.open;
        enc.transcoding += 1;
        let result = transcode(
            text,
            ValueSer {
                enc: &mut *enc,
                target: self.target,
            },
        );
        enc.transcoding -= 1;
        result?;
        if enc.open != open {
            return Err(ProtobufError::new("an object or array left unfinished"));
        }
        Ok(())
    }
    raw_other! {
        serialize_bool(bool); serialize_i8(i8); serialize_i16(i16); serialize_i32(i32);
        serialize_i64(i64); serialize_i128(i128); serialize_u8(u8); serialize_u16(u16);
        serialize_u32(u32); serialize_u64(u64); serialize_u128(u128); serialize_f32(f32);
        serialize_f64(f64); serialize_char(char); serialize_bytes(&[u8]); serialize_none();
        serialize_unit(); serialize_unit_struct(&'static str);
        serialize_unit_variant(&'static str, u32, &'static str);
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<()> {
        self.not_text()
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, _: &T) -> Result<()> {
        self.not_text()
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<()> {
        self.not_text()
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq> {
        Err(ProtobufError::new("a raw JSON value that is not text"))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple> {
        Err(ProtobufError::new("a raw JSON value that is not text"))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Err(ProtobufError::new("a raw JSON value that is not text"))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(ProtobufError::new("a raw JSON value that is not text"))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> {
        Err(ProtobufError::new("a raw JSON value that is not text"))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> {
        Err(ProtobufError::new("a raw JSON value that is not text"))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(ProtobufError::new("a raw JSON value that is not text"))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::ser::{Error as _, SerializeMap as _};
    use serde_json::{json, Value as Json};

    use super::*;
    use crate::protobuf::descriptor::MESSAGES;
    use crate::protobuf::message_for;

    fn exact<T: Serialize + ?Sized>(kind: &str, value: &T) -> Result<Vec<u8>> {
        let m = message_for("v1", kind).unwrap();
        encode_message_exact(m, ("v1", kind), value)
    }

    fn lenient<T: Serialize + ?Sized>(kind: &str, value: &T) -> Result<Vec<u8>> {
        encode_message(message_for("v1", kind).unwrap(), value)
    }

    #[test]
    fn the_tables_fit_the_sort_keys_and_inlined_members_are_unambiguous() {
        // A route level holds a field number in 16 bits, and inlined messages nest less
        // than LEVELS deep; a JSON name reaches one field only (else a member would have
        // to be written twice).
        fn names(desc: &'static MessageDesc, level: u32, out: &mut Vec<&'static str>) {
            assert!(level < LEVELS, "{}", desc.name);
            assert!(
                desc.fields.windows(2).all(|w| w[0].0 < w[1].0),
                "{}",
                desc.name
            );
            for field in desc.fields {
                assert!(field.0 < 1 << 16, "{}", desc.name);
                if field.has(NOJSON) {
                    continue;
                }
                match (field.has(INLINE), field.2) {
                    (true, Kind::M(index)) => {
                        let inner = &MESSAGES[index as usize];
                        assert_eq!(inner.special, Special::None, "{}", desc.name);
                        names(inner, level + 1, out);
                    }
                    (true, _) => {}
                    (false, _) => out.push(field.1),
                }
            }
        }
        for desc in MESSAGES {
            let mut all = Vec::new();
            names(desc, 0, &mut all);
            let count = all.len();
            all.sort_unstable();
            all.dedup();
            assert_eq!(all.len(), count, "{}", desc.name);
        }
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
        assert_eq!(exact("Pod", &pod).unwrap(), lenient("Pod", &pod).unwrap());
        let cm =
            json!({"metadata": {"name": "c"}, "binaryData": {"b": "AAH/"}, "immutable": false});
        assert_eq!(
            exact("ConfigMap", &cm).unwrap(),
            lenient("ConfigMap", &cm).unwrap()
        );
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
            json!(null),
        ] {
            let err = exact("Pod", &pod).unwrap_err();
            // The error never quotes a member's name or value.
            for secret in ["futureField", "newThing", "extra", "Secret", "v2", "Labels"] {
                assert!(!err.to_string().contains(secret), "{err}");
            }
        }
        // The lenient mode (the test server's answers) skips them.
        assert!(lenient("Pod", &json!({"futureField": "x"})).is_ok());
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

    #[test]
    fn members_in_any_order_and_given_twice_encode_as_go_and_json_read_them() {
        let sorted = json!({"metadata": {"name": "c", "labels": {"a": "1", "b": "2"}},
            "data": {"x": "y"}});
        let expected = exact("ConfigMap", &sorted).unwrap();
        for text in [
            r#"{"data":{"x":"y"},"metadata":{"labels":{"b":"2","a":"1"},"name":"c"}}"#,
            r#"{"metadata":{"name":"zzz","labels":{"a":"0"}},"data":{"x":"y"},
                "metadata":{"labels":{"b":"2","a":"1","a":"1"},"name":"c"}}"#,
            r#"{"data":null,"data":{"x":"y"},"metadata":{"name":"c","labels":{"b":"2","a":"1"}}}"#,
        ] {
            assert_eq!(
                encode_json_text(message_for("v1", "ConfigMap").unwrap(), text).unwrap(),
                expected,
                "{text}"
            );
        }
        // The last one wins, even when it is `null` or empty.
        let m = message_for("v1", "ConfigMap").unwrap();
        let bare = encode_json_text(m, r#"{"metadata":{"name":"c"}}"#).unwrap();
        for text in [
            r#"{"metadata":{"name":"c"},"data":{"x":"y"},"data":null}"#,
            r#"{"metadata":{"name":"c"},"data":{"x":"y"},"data":{}}"#,
        ] {
            assert_eq!(encode_json_text(m, text).unwrap(), bare, "{text}");
        }
    }

    /// A hostile or careless `Serialize`: never a panic, never a value silently lost.
    struct Hostile(u8);

    impl Serialize for Hostile {
        fn serialize<S: ser::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
            match self.0 {
                // A value without its key (serde_json's own serializer panics here).
                0 => {
                    let mut m = s.serialize_map(None)?;
                    m.serialize_value("x")?;
                    m.end()
                }
                // A key without its value.
                1 => {
                    let mut m = s.serialize_map(None)?;
                    m.serialize_key("metadata")?;
                    m.end()
                }
                // An error swallowed: the member is lost, so the whole value must fail.
                2 => {
                    let mut m = s.serialize_map(None)?;
                    let _ = m.serialize_entry("metadata", &Hostile(3));
                    m.serialize_entry("data", &json!({"a": "b"}))?;
                    m.end()
                }
                // Fails half-way through an object.
                3 => {
                    let mut m = s.serialize_map(None)?;
                    m.serialize_entry("name", "half")?;
                    Err(S::Error::custom("gave up"))
                }
                // Keys that are not strings, and a 128-bit number.
                4 => {
                    let mut m = s.serialize_map(None)?;
                    let mut labels = BTreeMap::new();
                    labels.insert(7u8, Some(Some("seven")));
                    m.serialize_entry("metadata", &json!({"name": "n"}))?;
                    m.serialize_entry("data", &labels)?;
                    m.end()
                }
                5 => {
                    let mut m = s.serialize_map(None)?;
                    m.serialize_entry(&(), &1)?;
                    m.end()
                }
                6 => {
                    let mut m = s.serialize_map(None)?;
                    m.serialize_entry("metadata", &json!({"name": "n", "generation": 1}))?;
                    m.end()
                }
                7 => {
                    let mut m = s.serialize_map(None)?;
                    m.serialize_entry("metadata", &BTreeMap::from([("generation", u128::MAX)]))?;
                    m.end()
                }
                _ => s.serialize_str("not an object"),
            }
        }
    }

    #[test]
    fn a_broken_serialize_is_an_error_never_a_panic_nor_a_loss() {
        for case in [0, 1, 2, 3, 5, 7, 8] {
            assert!(lenient("ConfigMap", &Hostile(case)).is_err(), "{case}");
            assert!(exact("ConfigMap", &Hostile(case)).is_err(), "{case}");
        }
        // An integer key is a string to serde_json ("7"), and so here.
        let with_int_key = exact("ConfigMap", &Hostile(4)).unwrap();
        let as_json = exact(
            "ConfigMap",
            &json!({"metadata": {"name": "n"}, "data": {"7": "seven"}}),
        );
        assert_eq!(with_int_key, as_json.unwrap());
        assert!(exact("ConfigMap", &Hostile(6)).is_ok());
    }

    #[test]
    fn nesting_past_the_limit_is_an_error_not_a_stack_overflow() {
        let crd = message_for("apiextensions.k8s.io/v1", "CustomResourceDefinition").unwrap();
        let mut schema = json!({"type": "string"});
        for _ in 0..200 {
            schema = json!({"type": "object", "properties": {"a": schema}});
        }
        let value = json!({"spec": {"versions": [{"name": "v1",
            "schema": {"openAPIV3Schema": schema}}]}});
        assert!(encode_message(crd, &value).is_err());
        let text = value.to_string();
        assert!(encode_json_text(crd, &text).is_err());
    }

    #[test]
    fn raw_json_text_is_read_as_it_is_parsed() {
        let m = message_for("v1", "ConfigMap").unwrap();
        let raw = serde_json::value::RawValue::from_string(
            r#"{"metadata":{"name":"c"},"data":{"b":"2","a":"1"}}"#.to_owned(),
        )
        .unwrap();
        let tree = json!({"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}});
        assert_eq!(
            encode_message_exact(m, ("v1", "ConfigMap"), &raw).unwrap(),
            exact("ConfigMap", &tree).unwrap()
        );
        for bad in [
            r#"{"metadata":"#,
            r#"{"metadata":{}} x"#,
            r#"{"data":{"a":1}}"#,
        ] {
            assert!(encode_json_text(m, bad).is_err(), "{bad}");
        }
    }
}
