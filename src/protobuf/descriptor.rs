//! What the generated tables say about a message: its fields' numbers, wire types, JSON
//! names, and how Go's JSON would render them (the flags of the struct tags).
//!
//! The tables themselves (`tables.rs`) are generated from the Kubernetes sources by
//! `.ci/protobuf/generate.py` and committed, so a build needs neither protoc nor network.

/// A field's protobuf type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `string`
    S,
    /// `bytes` (base64 in JSON)
    B,
    I32,
    I64,
    Bool,
    /// `double`
    F64,
    /// A message: an index into `MESSAGES`.
    M(u16),
}

/// `(number, JSON name, type, flags)`; a message's fields are sorted by number.
#[derive(Debug)]
pub(crate) struct Field(pub u32, pub &'static str, pub Kind, pub u8);

/// `repeated` in the .proto.
pub(crate) const REPEATED: u8 = 1;
/// `map<string, V>`: repeated entries `{1: key, 2: value}`; the kind is V's.
pub(crate) const MAP: u8 = 2;
/// A Go pointer: written only when set, rendered in JSON whatever its value.
pub(crate) const POINTER: u8 = 4;
/// `omitempty`: a zero scalar (or empty list/map) is absent from the JSON.
pub(crate) const OMITEMPTY: u8 = 8;
/// `json:",inline"`: the message's fields are the parent's in JSON.
pub(crate) const INLINE: u8 = 16;
/// `omitzero`: a zero value (a zero Time) is absent from the JSON.
pub(crate) const OMITZERO: u8 = 32;
/// No JSON name (`json:"-"`): never rendered.
pub(crate) const NOJSON: u8 = 64;

impl Field {
    pub(crate) fn has(&self, flag: u8) -> bool {
        self.3 & flag != 0
    }
}

/// Messages whose JSON is not an object of their fields (a Go `MarshalJSON` of their own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Special {
    None,
    /// `{seconds, nanos}` → RFC 3339 (seconds); empty → `null`.
    Time,
    /// `{seconds, nanos}` → RFC 3339 with microseconds; empty → `null`.
    MicroTime,
    /// `{duration: ns}` → Go's `time.Duration` text (`1h0m0s`).
    Duration,
    /// `{string}` → the string.
    Quantity,
    /// `{type, intVal, strVal}` → a number or a string.
    IntOrString,
    /// `{raw: JSON text}` → that JSON value (FieldsV1, RawExtension, apiextensions JSON).
    RawJson,
    /// `JSONSchemaPropsOrArray{schema 1, jSONSchemas 2}` → an array, or a schema.
    SchemaOrArray,
    /// `JSONSchemaPropsOrBool{allows 1, schema 2}` → a schema, or a bool.
    SchemaOrBool,
    /// `JSONSchemaPropsOrStringArray{schema 1, property 2}` → an array of strings, or a schema.
    SchemaOrStrings,
    /// A Go slice type (`Verbs`, `ExtraValue`): `{repeated items = 1}` → an array.
    Items,
}

/// One message of the tables.
#[derive(Debug)]
pub(crate) struct MessageDesc {
    /// An index into `PACKAGES`.
    pub package: u16,
    pub name: &'static str,
    pub special: Special,
    pub fields: &'static [Field],
}

impl MessageDesc {
    pub(crate) fn field(&self, number: u32) -> Option<&'static Field> {
        self.fields
            .binary_search_by_key(&number, |f| f.0)
            .ok()
            .map(|i| &self.fields[i])
    }
}

pub(crate) use super::tables::{MESSAGES, PACKAGES};
