//! A serde `Deserializer` driven by the library's scanner: every `#[derive(Deserialize)]` type
//! decodes with it, giving what serde_json gives, faster on API objects.
//!
//! Why: a type that declares a few fields of a pod (a "slim" type) spends most of its decoding
//! in the members it does not declare (`spec`, most of `status`, `managedFields`). serde's
//! derive hands each of those to `IgnoredAny`; serde_json walks them token by token. Here the
//! skip is the scanner's tight loop, and a container whose end the list page's early check
//! recorded ([`known_ends`](super::known_ends)) is jumped over in one step. `RawValue` (and so
//! [`RawJson`](crate::api::RawJson)) is taken as a slice the same way. Strings without escapes
//! are lent from the input, as serde_json lends them.
//!
//! The contract is serde_json's, call for call: the same visitor methods with the same
//! arguments, the same acceptance of every input, the same recursion limit (128 nested
//! containers). Only error *messages* differ (they say what and the byte offset), and two
//! things serde allows a deserializer to choose, chosen to save memory and allocations:
//! - An array near the top says how many elements it holds (`SeqAccess::size_hint`; serde_json
//!   says nothing), counted ahead, so a `Vec` is allocated once with exactly the room it
//!   keeps. serde_json's `Vec`s grow (room for 4 when one element comes, for 8 at the fifth)
//!   and keep the spare room: 17% of the heap of a cached k8s-openapi `Pod` (36.4 KB ->
//!   30.3 KB). The count reads the array once more, by byte class without checking the
//!   grammar ([`count_ahead`](super::count_ahead); decoding checks it), containers with a
//!   known end in one step, at most 64 KiB ahead and only 16 arrays deep.
//! - A string or member name with escapes is unescaped once into its own `String` and handed
//!   over with `visit_string` (serde_json: `visit_str` on its scratch buffer, which the
//!   visitor then copies). A visitor without its own `visit_string` sees `visit_str`.
//!
//! - Handled here: structs (from objects, and from arrays as serde_json allows), maps,
//!   sequences, tuples, `Option` (`null` is `None`), newtype structs, enums (a string for a
//!   unit variant, a one-member object otherwise), `deserialize_any` on containers and strings
//!   (so `flatten`, untagged and internally tagged enums, which buffer through it, run here
//!   too), `IgnoredAny`, strings, map keys (also numeric and boolean ones), serde_json's
//!   `RawValue` (so [`RawJson`](crate::api::RawJson)), and our
//!   [`ObjectMeta`](crate::api::ObjectMeta), read by the scanner's own decoder
//!   ([`meta_scan`](super::meta_scan)) when it is an object.
//! - Booleans, and integers of up to 18 digits asked for as an integer type, visited here as
//!   serde_json visits them (`visit_bool`; `visit_u64`, or `visit_i64` when negative).
//! - Handed to serde_json, on the exact text of the one value (checked first by the scanner):
//!   other numbers, numbers asked for by `deserialize_any`, `null` as unit, chars, bytes, and
//!   any value of the wrong type (so the error is serde_json's own). Numbers keep serde_json's
//!   precision rules exactly: `u64`, `i64`, `f64`, their overflow errors, and `i128`/`u128`.
//!
//! Limits: a value handed to serde_json starts its own nesting count; only bytes read from an
//! array and values of the wrong type are handed over in a container, so the 128 limit could
//! differ only for a byte array nested 128 deep; likewise `ObjectMeta`'s `ownerReferences`
//! (read by serde_json inside `meta_scan`) for a metadata object nested ~125 deep. `RawValue`
//! is recognised by serde_json's private marker name; a test fails if serde_json ever
//! changes it. Error messages are the scanner's or serde_json's, with byte offsets, not
//! serde_json's line and column.

use std::borrow::Cow;

use serde::de::value::{BorrowedStrDeserializer, StrDeserializer};
use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, Unexpected, Visitor};
use serde::forward_to_deserialize_any;
use serde_json::Error;

use super::decode_options::strip_managed_fields;
use super::json_scan::{Key, Scanner};
use super::meta_scan::{hand_over, META_TOKEN};
use super::raw_json::RAW_VALUE_TOKEN;
use crate::api::ObjectMeta;

type Result<T> = std::result::Result<T, Error>;

/// The member stripped while decoding, and the member whose object holds it.
const MANAGED_FIELDS: &str = "managedFields";
const METADATA: &str = "metadata";

/// serde_json's nesting limit: the 128th nested container is an error.
const RECURSION_LIMIT: u8 = 128;

/// Decodes a `T` from the start of `json`; gives it and how many bytes it took. What follows
/// the value is left to the caller.
pub(crate) fn from_prefix<T: DeserializeOwned>(json: &str) -> Result<(T, usize)> {
    let mut de = Deserializer::new(json);
    let value = T::deserialize(&mut de)?;
    Ok((value, de.s.pos()))
}

/// Decodes a `T` from the whole of `json` (whitespace may follow the value).
#[cfg(test)]
pub(crate) fn from_str<'de, T: de::Deserialize<'de>>(json: &'de str) -> Result<T> {
    let mut de = Deserializer::new(json);
    let value = T::deserialize(&mut de)?;
    de.s.end()?;
    Ok(value)
}

/// Decodes the whole JSON `text` embedded in another encoding (a protobuf message's
/// FieldsV1 or RawExtension) with `visitor`, as `deserialize_any` on it; at most `room`
/// containers deep (and never deeper than serde_json's own limit), so the enclosing
/// messages count against the same limit as the object's JSON form. Whitespace may follow
/// the value, nothing else.
#[cfg(feature = "protobuf")]
pub(crate) fn deserialize_embedded<'de, V: Visitor<'de>>(
    text: &'de str,
    room: usize,
    visitor: V,
) -> Result<V::Value> {
    let mut de = Deserializer::new(text);
    // `enter` fails when the budget reaches 0: `room` containers pass, the next does not.
    de.remaining_depth = u8::try_from(room.saturating_add(1))
        .unwrap_or(RECURSION_LIMIT)
        .clamp(1, RECURSION_LIMIT);
    let value = de::Deserializer::deserialize_any(&mut de, visitor)?;
    de.s.end()?;
    Ok(value)
}

/// The deserializer: a scanner and the nesting budget left.
pub(crate) struct Deserializer<'de> {
    s: Scanner<'de>,
    remaining_depth: u8,
    /// This thread skips `metadata.managedFields` (see `decode_options`).
    strip_managed_fields: bool,
    /// The value about to be read is a `metadata` member's: an object read now skips its
    /// `managedFields` member (when stripping).
    metadata_next: bool,
}

impl<'de> Deserializer<'de> {
    pub(crate) fn new(text: &'de str) -> Self {
        Deserializer {
            s: Scanner::new(text),
            remaining_depth: RECURSION_LIMIT,
            strip_managed_fields: strip_managed_fields(),
            metadata_next: false,
        }
    }

    /// Enters a container: serde_json's `check_recursion`.
    fn enter(&mut self) -> Result<()> {
        self.remaining_depth -= 1;
        if self.remaining_depth == 0 {
            // Restored, so that a visitor that swallows the error cannot underflow it.
            self.remaining_depth += 1;
            return Err(de::Error::custom(format_args!(
                "recursion limit exceeded at byte {}",
                self.s.pos()
            )));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.remaining_depth += 1;
    }

    /// The next value's text, checked (a recorded container is jumped over).
    fn value_text(&mut self) -> Result<&'de str> {
        Ok(self.s.value()?)
    }

    /// Visits the members of the object at the cursor, then requires its end.
    fn visit_object<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value> {
        self.enter()?;
        self.s.begin_object()?;
        let in_metadata = std::mem::take(&mut self.metadata_next);
        let mut access = MapAcc {
            de: self,
            first: true,
            pending: false,
            done: false,
            pending_is_metadata: false,
            in_metadata,
        };
        let ret = visitor.visit_map(&mut access);
        let end = access.end();
        self.leave();
        let value = ret?;
        end?;
        Ok(value)
    }

    /// Visits the elements of the array at the cursor, then requires its end.
    fn visit_array<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value> {
        self.enter()?;
        self.s.begin_array()?;
        let mut access = SeqAcc {
            de: self,
            first: true,
            done: false,
        };
        let ret = visitor.visit_seq(&mut access);
        let end = access.end();
        self.leave();
        let value = ret?;
        end?;
        Ok(value)
    }

    /// Visits the string at the cursor: lent when it has no escapes, as serde_json does.
    fn visit_string<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value> {
        match self.s.string()? {
            Cow::Borrowed(s) => visitor.visit_borrowed_str(s),
            Cow::Owned(s) => visitor.visit_string(s),
        }
    }
}

/// Hands `text` (one whole value) to serde_json for one call, which must use all of it (a
/// call for an `i128` reads the `1` of `1.5` and stops; in a document that is an error).
fn serde_json_reads<'de, T>(
    text: &'de str,
    call: impl FnOnce(&mut serde_json::Deserializer<serde_json::de::StrRead<'de>>) -> Result<T>,
) -> Result<T> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = call(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Hands the next value's checked text to serde_json for the same call.
macro_rules! to_serde_json {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
            let text = self.value_text()?;
            serde_json_reads(text, |de| de::Deserializer::$method(de, visitor))
        }
    )*};
}

/// An integer that fits a `u64` (or, negative, an `i64`), as serde_json hands it over: at
/// most 18 digits, so it cannot overflow; `-0` is left to serde_json (which makes it a float).
enum Integer {
    Unsigned(u64),
    Negative(i64),
}

/// The integer `text` (one value the scanner checked) is, when it is a short one.
#[inline]
fn short_integer(text: &str) -> Option<Integer> {
    let (negative, digits) = match text.as_bytes() {
        [b'-', digits @ ..] => (true, digits),
        digits => (false, digits),
    };
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    let mut n: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n * 10 + u64::from(d - b'0');
    }
    match (negative, n) {
        (false, n) => Some(Integer::Unsigned(n)),
        (true, 0) => None,
        // At most 18 digits: below 10^18, so the negation is exact.
        (true, n) => Some(Integer::Negative(-(n as i64))),
    }
}

/// Integer requests: a short integer is visited here exactly as serde_json visits it
/// (`visit_u64`, or `visit_i64` when negative); anything else (floats, long or `-0`
/// integers, values of the wrong type) is handed to serde_json.
macro_rules! integers {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
            let text = self.value_text()?;
            match short_integer(text) {
                Some(Integer::Unsigned(n)) => visitor.visit_u64(n),
                Some(Integer::Negative(n)) => visitor.visit_i64(n),
                None => serde_json_reads(text, |de| de::Deserializer::$method(de, visitor)),
            }
        }
    )*};
}

impl<'de> de::Deserializer<'de> for &mut Deserializer<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.s.peek() {
            Some(b'{') => self.visit_object(visitor),
            Some(b'[') => self.visit_array(visitor),
            Some(b'"') => self.visit_string(visitor),
            _ => {
                let text = self.value_text()?;
                serde_json_reads(text, |de| de::Deserializer::deserialize_any(de, visitor))
            }
        }
    }

    integers! {
        deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_u8
        deserialize_u16 deserialize_u32 deserialize_u64
    }

    to_serde_json! {
        deserialize_i128 deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char
        deserialize_bytes deserialize_byte_buf deserialize_unit
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let text = self.value_text()?;
        match text {
            "true" => visitor.visit_bool(true),
            "false" => visitor.visit_bool(false),
            _ => serde_json_reads(text, |de| de::Deserializer::deserialize_bool(de, visitor)),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if self.s.peek() == Some(b'"') {
            return self.visit_string(visitor);
        }
        let text = self.value_text()?;
        serde_json_reads(text, |de| de::Deserializer::deserialize_str(de, visitor))
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if self.s.take_null()? {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        if name == RAW_VALUE_TOKEN {
            let raw = self.value_text()?;
            return visitor.visit_map(RawMap { raw: Some(raw) });
        }
        if name == META_TOKEN && self.s.peek() == Some(b'{') {
            // serde_json counts the metadata object against its nesting limit; nothing inside
            // it is decoded deeper than its members, so only the object itself is counted.
            self.enter()?;
            let meta = ObjectMeta::scan(&mut self.s);
            self.leave();
            return hand_over(meta?, visitor);
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if self.s.peek() == Some(b'[') {
            return self.visit_array(visitor);
        }
        let text = self.value_text()?;
        serde_json_reads(text, |de| de::Deserializer::deserialize_seq(de, visitor))
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if self.s.peek() == Some(b'{') {
            return self.visit_object(visitor);
        }
        let text = self.value_text()?;
        serde_json_reads(text, |de| de::Deserializer::deserialize_map(de, visitor))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        match self.s.peek() {
            Some(b'{') => self.visit_object(visitor),
            Some(b'[') => self.visit_array(visitor),
            _ => {
                let text = self.value_text()?;
                serde_json_reads(text, |de| {
                    de::Deserializer::deserialize_struct(de, name, fields, visitor)
                })
            }
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        match self.s.peek() {
            Some(b'{') => {
                self.enter()?;
                self.s.begin_object()?;
                let ret = visitor.visit_enum(VariantAcc { de: &mut *self });
                self.leave();
                let value = ret?;
                self.s
                    .expect(b'}', "expected '}' after the one member of an enum")?;
                Ok(value)
            }
            Some(b'"') => visitor.visit_enum(UnitVariant(self)),
            Some(_) => Err(de::Error::custom(format_args!(
                "expected an enum (a string or an object) at byte {}",
                self.s.pos()
            ))),
            None => Err(de::Error::custom("unexpected end of input")),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.value_text()?;
        visitor.visit_unit()
    }
}

/// The members of an object, for a visitor.
struct MapAcc<'a, 'de> {
    de: &'a mut Deserializer<'de>,
    first: bool,
    /// A key was handed out and its value not yet.
    pending: bool,
    /// The closing `}` was consumed.
    done: bool,
    /// The pending key is `metadata` (read only when stripping `managedFields`).
    pending_is_metadata: bool,
    /// This object is a `metadata` member's value and its `managedFields` are skipped.
    in_metadata: bool,
}

impl MapAcc<'_, '_> {
    /// After the visitor: the object must be over (serde_json's `end_map`).
    fn end(&mut self) -> Result<()> {
        if self.done {
            return Ok(());
        }
        if !self.pending && self.de.s.peek() == Some(b'}') {
            self.de.s.advance(1);
            return Ok(());
        }
        Err(de::Error::custom(format_args!(
            "trailing members in an object at byte {}",
            self.de.s.pos()
        )))
    }
}

impl<'de> de::MapAccess<'de> for MapAcc<'_, 'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        if self.pending {
            return Err(de::Error::custom("a member's name was read twice"));
        }
        if self.done {
            return Ok(None);
        }
        loop {
            let Some(key) = self.de.s.next_key(self.first)? else {
                self.done = true;
                return Ok(None);
            };
            self.first = false;
            if self.de.strip_managed_fields {
                if self.in_metadata && key.is(MANAGED_FIELDS) {
                    // Stripped while decoding: checked and jumped over, never decoded.
                    self.de.s.value()?;
                    continue;
                }
                self.pending_is_metadata = key.is(METADATA);
            }
            self.pending = true;
            let text = self.de.s.text();
            return seed.deserialize(KeyDe { key, text }).map(Some);
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        if !self.pending {
            return Err(de::Error::custom(
                "a member's value was read before its name",
            ));
        }
        self.pending = false;
        if std::mem::take(&mut self.pending_is_metadata) {
            self.de.metadata_next = true;
            let value = seed.deserialize(&mut *self.de);
            // Taken by the object read for it; not an object (`null`): dropped here.
            self.de.metadata_next = false;
            return value;
        }
        seed.deserialize(&mut *self.de)
    }
}

/// The elements of an array, for a visitor.
struct SeqAcc<'a, 'de> {
    de: &'a mut Deserializer<'de>,
    first: bool,
    /// The closing `]` was consumed.
    done: bool,
}

impl SeqAcc<'_, '_> {
    /// After the visitor: the array must be over (serde_json's `end_seq`).
    fn end(&mut self) -> Result<()> {
        if self.done {
            return Ok(());
        }
        if self.de.s.peek() == Some(b']') {
            self.de.s.advance(1);
            return Ok(());
        }
        Err(de::Error::custom(format_args!(
            "trailing elements in an array at byte {}",
            self.de.s.pos()
        )))
    }
}

impl<'de> de::SeqAccess<'de> for SeqAcc<'_, 'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        if self.done {
            return Ok(None);
        }
        if !self.de.s.next_element(self.first)? {
            self.done = true;
            return Ok(None);
        }
        self.first = false;
        seed.deserialize(&mut *self.de).map(Some)
    }

    /// The exact number of elements left, when the array is near the top and not long (see
    /// [`HINT_DEPTH`] and [`HINT_BUDGET`]): a `Vec` then allocates exactly what it keeps,
    /// once, instead of growing (1 -> 4 -> 8 ...) and keeping the spare capacity, which was
    /// 15% of a cached k8s-openapi `Pod` (serde_json gives no hint, so its `Vec`s grow).
    /// Asked before the first element (as serde's visitors do), the array is counted ahead;
    /// later, it says nothing. serde's own visitors cap what they reserve by a hint.
    fn size_hint(&self) -> Option<usize> {
        if !self.first || self.done || RECURSION_LIMIT - self.de.remaining_depth > HINT_DEPTH {
            return None;
        }
        self.de.s.count_elements(HINT_BUDGET)
    }
}

/// Arrays nested deeper than this (in the text being decoded) give no size hint: counting
/// ahead reads an array's text once more at every level of nesting, so this bounds it.
const HINT_DEPTH: u8 = 16;

/// An array is counted ahead only as far as this many bytes (jumped containers included).
const HINT_BUDGET: usize = 64 * 1024;

/// A member name, deserialized as serde_json deserializes map keys: a string for most
/// requests, a number written inside the quotes for numeric types, `true`/`false` for bool.
struct KeyDe<'de> {
    key: Key<'de>,
    /// The whole text (for the name with its quotes).
    text: &'de str,
}

impl<'de> KeyDe<'de> {
    /// The name with its quotes.
    fn quoted(&self) -> &'de str {
        let start = self.key.pos();
        self.text
            .get(start..start + self.key.raw().len() + 2)
            .unwrap_or_default()
    }

    /// The text between the quotes, for a numeric key (escapes are not undone, as in
    /// serde_json, so an escape in a number is an error).
    fn number_text(&self) -> Result<&'de str> {
        let raw = self.key.raw();
        let starts_ok = matches!(raw.as_bytes().first(), Some(b'0'..=b'9' | b'-'));
        let ends_ok = !matches!(
            raw.as_bytes().last(),
            Some(b' ' | b'\n' | b'\r' | b'\t') | None
        );
        if starts_ok && ends_ok {
            Ok(raw)
        } else {
            Err(de::Error::custom(format_args!(
                "expected a number in the member name at byte {}",
                self.key.pos()
            )))
        }
    }
}

/// A numeric key: the number between the quotes, read by serde_json, nothing else after it.
macro_rules! numeric_key {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
            serde_json_reads(self.number_text()?, |de| de::Deserializer::$method(de, visitor))
        }
    )*};
}

impl<'de> de::Deserializer<'de> for KeyDe<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.key.text()? {
            Cow::Borrowed(s) => visitor.visit_borrowed_str(s),
            Cow::Owned(s) => visitor.visit_string(s),
        }
    }

    numeric_key! {
        deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_i128
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_u128
        deserialize_f32 deserialize_f64
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.key.raw() {
            "true" => visitor.visit_bool(true),
            "false" => visitor.visit_bool(false),
            _ => {
                let text = self.key.text()?;
                Err(de::Error::invalid_type(Unexpected::Str(&text), &visitor))
            }
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
            return visitor.visit_map(RawMap {
                raw: Some(self.quoted()),
            });
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_enum(UnitVariant(self))
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        serde_json_reads(self.quoted(), |de| {
            de::Deserializer::deserialize_bytes(de, visitor)
        })
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_bytes(visitor)
    }

    forward_to_deserialize_any! {
        char str string unit unit_struct seq tuple tuple_struct map struct identifier
        ignored_any
    }
}

/// An enum written as a one-member object: the member's name picks the variant.
struct VariantAcc<'a, 'de> {
    de: &'a mut Deserializer<'de>,
}

impl<'de, 'a> de::EnumAccess<'de> for VariantAcc<'a, 'de> {
    type Error = Error;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self)> {
        let value = seed.deserialize(&mut *self.de)?;
        self.de.s.expect(b':', "expected ':' after a member name")?;
        Ok((value, self))
    }
}

impl<'de> de::VariantAccess<'de> for VariantAcc<'_, 'de> {
    type Error = Error;

    fn unit_variant(self) -> Result<()> {
        de::Deserialize::deserialize(self.de)
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value> {
        seed.deserialize(self.de)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value> {
        de::Deserializer::deserialize_seq(self.de, visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        de::Deserializer::deserialize_struct(self.de, "", fields, visitor)
    }
}

/// An enum written as a string: a unit variant.
struct UnitVariant<D>(D);

impl<'de, D: de::Deserializer<'de, Error = Error>> de::EnumAccess<'de> for UnitVariant<D> {
    type Error = Error;
    type Variant = UnitOnly;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, UnitOnly)> {
        Ok((seed.deserialize(self.0)?, UnitOnly))
    }
}

/// The variant of an enum written as a string: only a unit variant fits.
struct UnitOnly;

impl<'de> de::VariantAccess<'de> for UnitOnly {
    type Error = Error;

    fn unit_variant(self) -> Result<()> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, _seed: T) -> Result<T::Value> {
        Err(de::Error::invalid_type(
            Unexpected::UnitVariant,
            &"newtype variant",
        ))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, _visitor: V) -> Result<V::Value> {
        Err(de::Error::invalid_type(
            Unexpected::UnitVariant,
            &"tuple variant",
        ))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value> {
        Err(de::Error::invalid_type(
            Unexpected::UnitVariant,
            &"struct variant",
        ))
    }
}

/// What serde_json hands `RawValue`'s visitor: a one-member map from its marker to the text.
struct RawMap<'de> {
    raw: Option<&'de str>,
}

impl<'de> de::MapAccess<'de> for RawMap<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        if self.raw.is_none() {
            return Ok(None);
        }
        let key: StrDeserializer<'_, Error> = RAW_VALUE_TOKEN.into_deserializer();
        seed.deserialize(key).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        let raw = self.raw.take().unwrap_or_default();
        seed.deserialize(BorrowedStrDeserializer::new(raw))
    }
}

#[cfg(test)]
mod tests;
