//! `RawJson`: a JSON value kept as the text it arrived as, checked but not decoded.
//!
//! The fields of an object that the library never reads (`spec`, `status`, `managedFields`)
//! stay text: they cost their bytes and nothing more, decode on demand, and survive a round
//! trip unchanged. Unlike serde_json's `RawValue`, a `RawJson` can be made from text the
//! library's own scanner has already checked, without a second pass over it.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Range;
use std::sync::Arc;

use serde::de::{self, DeserializeOwned, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use super::json_scan::Scanner;
use super::lent_str::LentStr;

/// The name serde_json's `RawValue` asks `deserialize_newtype_struct` for; [`RawJson`] asks
/// for it too, and the library's deserializer answers it with the value's text.
pub(crate) const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// One JSON value as text; always valid JSON. Cloning is cheap: the text is shared. The raw
/// parts of one decoded object share one buffer (one allocation instead of one per part);
/// see [`DynamicObject::compact`](crate::api::DynamicObject::compact).
#[derive(Clone)]
pub struct RawJson {
    buffer: Arc<str>,
    range: Range<usize>,
}

impl RawJson {
    /// Checks `text` and keeps it; an error says where it is not one valid JSON value.
    pub fn from_string(text: String) -> serde_json::Result<RawJson> {
        let mut scanner = Scanner::new(&text);
        scanner.value()?;
        scanner.end()?;
        Ok(RawJson::from_checked(&text))
    }

    /// Keeps text the scanner has already checked, in a buffer of its own.
    pub(crate) fn from_checked(text: &str) -> RawJson {
        RawJson {
            buffer: Arc::from(text),
            range: 0..text.len(),
        }
    }

    /// The checked value at `range` of a shared buffer (`range` ends on the value's bounds,
    /// so it lies on character boundaries).
    pub(crate) fn shared(buffer: &Arc<str>, range: Range<usize>) -> RawJson {
        debug_assert!(buffer.get(range.clone()).is_some());
        RawJson {
            buffer: Arc::clone(buffer),
            range,
        }
    }

    /// The buffer this value's text is in (possibly shared with other values).
    pub(crate) fn buffer(&self) -> &Arc<str> {
        &self.buffer
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        self.buffer.get(self.range.clone()).unwrap_or_default()
    }

    /// Decodes the value into `T`.
    pub fn decode<T: DeserializeOwned>(&self) -> serde_json::Result<T> {
        serde_json::from_str(self.get())
    }
}

impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Eq for RawJson {}

impl Hash for RawJson {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.get().hash(state)
    }
}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl fmt::Display for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl Serialize for RawJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw: &RawValue = serde_json::from_str(self.get()).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RawJson {
    /// Asks for the value's text as serde_json's `RawValue` does (serde_json and the library's
    /// deserializer both answer), and copies it once, lent from the input when it can be.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct RawVisitor;
        impl<'de> Visitor<'de> for RawVisitor {
            type Value = RawJson;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any valid JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawJson, A::Error> {
                if map.next_key::<RawMarker>()?.is_none() {
                    return Err(de::Error::invalid_type(de::Unexpected::Map, &self));
                }
                let text: LentStr<'de> = map.next_value()?;
                Ok(RawJson::from_checked(&text.0))
            }
        }
        deserializer.deserialize_newtype_struct(RAW_VALUE_TOKEN, RawVisitor)
    }
}

/// The one key of the map a raw value arrives as: serde_json's marker, nothing else.
struct RawMarker;

impl<'de> Deserialize<'de> for RawMarker {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MarkerVisitor;
        impl Visitor<'_> for MarkerVisitor {
            type Value = RawMarker;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a raw value")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawMarker, E> {
                if v == RAW_VALUE_TOKEN {
                    Ok(RawMarker)
                } else {
                    Err(E::custom("unexpected raw value"))
                }
            }
        }
        deserializer.deserialize_identifier(MarkerVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_checks() {
        let raw = RawJson::from_string(r#"{"a": [1, 2.5, "x"]}"#.into()).unwrap();
        assert_eq!(raw.get(), r#"{"a": [1, 2.5, "x"]}"#);
        assert_eq!(
            serde_json::to_string(&raw).unwrap(),
            r#"{"a": [1, 2.5, "x"]}"#
        );
        let v: serde_json::Value = raw.decode().unwrap();
        assert_eq!(v["a"][1], 2.5);
        let back: RawJson = serde_json::from_str(r#" {"b":true} "#).unwrap();
        assert_eq!(back.get(), r#"{"b":true}"#);
        // serde_json still calls its raw value what the decoder expects.
        let inside: Vec<RawJson> = serde_json::from_str(r#"[ 1 , "\u00e9" ,{}]"#).unwrap();
        let texts: Vec<&str> = inside.iter().map(RawJson::get).collect();
        assert_eq!(texts, ["1", r#""\u00e9""#, "{}"]);
        assert!(serde_json::from_str::<RawJson>("[1,]").is_err());
        assert!(serde_yaml::from_str::<RawJson>("a: 1").is_err());
        let err = RawJson::from_string("{\"a\": }".into()).unwrap_err();
        assert!(err.to_string().contains("expected a JSON value"), "{err}");
        assert!(RawJson::from_string("1 2".into()).is_err());
    }
}
