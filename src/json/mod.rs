//! The decoding engine: how API text becomes objects, fast.
//!
//! Kept apart from the object model ([`api`](crate::api)) because it is a different concern:
//! the model says what an object is; this room says how its bytes are read. It holds:
//! - `json_scan`: a validating JSON scanner that hands back slices of the input instead of
//!   building a tree;
//! - `known_ends`: the container ends a list page's early check recorded, so later passes jump
//!   over whole objects instead of rescanning them;
//! - `meta_scan`: `ObjectMeta` decoded with the scanner (its serde derive stays for every
//!   other source);
//! - `raw_json`: [`RawJson`](crate::api::RawJson), a value kept as checked text;
//! - `string_map`: [`StringMap`](crate::api::StringMap), the compact map labels and
//!   annotations decode into.

pub(crate) mod deserializer;
pub(crate) mod json_scan;
pub(crate) mod known_ends;
pub(crate) mod lent_str;
mod meta_scan;
pub(crate) mod raw_json;
pub(crate) mod string_map;
