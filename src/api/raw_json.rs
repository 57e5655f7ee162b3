//! `RawJson`: a JSON value kept as the text it arrived as, checked but not decoded.
//!
//! The fields of an object that the library never reads (`spec`, `status`, `managedFields`)
//! stay text: they cost their bytes and nothing more, decode on demand, and survive a round
//! trip unchanged. Unlike serde_json's `RawValue`, a `RawJson` can be made from text the
//! library's own scanner has already checked, without a second pass over it.

use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use super::json_scan::Scanner;

/// One JSON value as text; always valid JSON.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RawJson(Box<str>);

impl RawJson {
    /// Checks `text` and keeps it; an error says where it is not one valid JSON value.
    pub fn from_string(text: String) -> serde_json::Result<RawJson> {
        let mut scanner = Scanner::new(&text);
        scanner.value()?;
        scanner.end()?;
        Ok(RawJson(text.into_boxed_str()))
    }

    /// Keeps text the scanner has already checked.
    pub(crate) fn from_checked(text: &str) -> RawJson {
        RawJson(text.into())
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        &self.0
    }

    /// Decodes the value into `T`.
    pub fn decode<T: DeserializeOwned>(&self) -> serde_json::Result<T> {
        serde_json::from_str(&self.0)
    }
}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for RawJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw: &RawValue = serde_json::from_str(&self.0).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        Ok(RawJson(raw.into()))
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
        let err = RawJson::from_string("{\"a\": }".into()).unwrap_err();
        assert!(err.to_string().contains("expected a JSON value"), "{err}");
        assert!(RawJson::from_string("1 2".into()).is_err());
    }
}
