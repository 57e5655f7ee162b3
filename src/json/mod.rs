//! The decoding engine: how API text becomes objects, fast.
//!
//! Kept apart from the object model ([`api`](crate::api)) because it is a different concern:
//! the model says what an object is; this room says how its bytes are read. It holds:
//! - `json_scan`: a validating JSON scanner that hands back slices of the input instead of
//!   building a tree;
//! - `count_ahead`: how many elements an array holds, read ahead so that a `Vec` gets exactly
//!   its room;
//! - `known_ends`: the container ends a list page's early check recorded, so later passes jump
//!   over whole objects instead of rescanning them;
//! - `deserializer`: a serde `Deserializer` driven by the scanner. Every `Deserialize` type
//!   decodes with it through the default `Object::from_json_prefix` (slim user types,
//!   `PartialObjectMetadata`, k8s-openapi's types): serde_json's results call for call, with
//!   the members a type does not declare skipped by the scanner's loop (jumped over in a
//!   checked list page) and strings lent from the input; its module docs list which serde
//!   requests it answers itself and which it hands to serde_json (numbers, booleans, chars,
//!   bytes, values of the wrong type);
//! - `decode_options`: what the decoding thread leaves out (`managedFields`, for caches
//!   that never read them), skipped while decoding;
//! - `lent_str`: strings lent from the input while decoding, where `Cow`'s own impl copies;
//! - `meta_scan`: `ObjectMeta` decoded with the scanner for `DynamicObject`, whose raw parts
//!   share one buffer (its serde derive, through `deserializer`, serves every other type);
//! - `raw_json`: [`RawJson`](crate::api::RawJson), a value kept as checked text;
//! - `scratch`: short temporary lists of one decoded object, on the stack;
//! - `shared`: values that repeat across objects (namespaces, owners, labels), decoded once
//!   per thread and shared;
//! - `shared_str`: [`SharedStr`](crate::api::SharedStr), the string type of those values;
//! - `string_map`: [`StringMap`](crate::api::StringMap), the compact map labels and
//!   annotations decode into.

mod count_ahead;
pub(crate) mod decode_options;
pub(crate) mod deserializer;
pub(crate) mod json_scan;
pub(crate) mod known_ends;
pub(crate) mod lent_str;
mod meta_scan;
pub(crate) mod raw_json;
pub(crate) mod scratch;
pub(crate) mod shared;
pub(crate) mod shared_str;
pub(crate) mod string_map;
