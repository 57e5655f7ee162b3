//! `DynamicObject`: any object, for resources known only at run time (custom resources).
//!
//! Metadata is typed, because the cache keys, indexes and selectors read it. Everything else
//! stays the raw JSON text it arrived as ([`RawJson`]), decoded only when asked. Measured on a
//! realistic 5.3 KB pod, a `serde_json::Value` tree keeps ~57 KB and parses at ~22 MB/s; typed
//! metadata plus raw text keeps ~4.7 KB. Lists and watch events decode it with the library's
//! scanner ([`Object::from_json_prefix`]), which checks and keeps the raw parts in one tight
//! pass instead of serde's generic skipping.

use std::fmt;

use super::json_scan::Scanner;
use super::raw_json::RawJson;
use serde::de::{self, DeserializeOwned, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::meta::ObjectMeta;
use super::resource::Object;

/// An object of any kind: typed metadata, the other top-level fields as raw JSON.
#[derive(Clone, Debug, Default)]
pub struct DynamicObject {
    /// `apiVersion`, when the server sent it (list items of core kinds omit it).
    pub api_version: Option<String>,
    /// `kind`, when the server sent it.
    pub kind: Option<String>,
    /// Typed metadata.
    pub metadata: ObjectMeta,
    /// Every other top-level field (`spec`, `status`, `data`, ...), in arrival order.
    pub fields: Vec<(String, RawJson)>,
}

impl DynamicObject {
    /// The raw JSON of one top-level field, e.g. `"spec"`.
    pub fn field(&self, name: &str) -> Option<&RawJson> {
        self.fields.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    /// Decodes one top-level field into `T`; `Ok(None)` when the field is absent.
    pub fn decode_field<T: DeserializeOwned>(&self, name: &str) -> serde_json::Result<Option<T>> {
        self.field(name)
            .map(|raw| serde_json::from_str(raw.get()))
            .transpose()
    }

    /// Decodes the whole object into a typed struct.
    pub fn decode<T: DeserializeOwned>(&self) -> serde_json::Result<T> {
        serde_json::from_str(&serde_json::to_string(self)?)
    }
}

impl Object for DynamicObject {
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
    const SCANNED: bool = true;

    fn from_json_prefix(json: &str) -> serde_json::Result<(Self, usize)> {
        let mut s = Scanner::new(json);
        let obj = DynamicObject::scan(&mut s)?;
        Ok((obj, s.pos()))
    }
}

impl DynamicObject {
    /// Decodes the object at the scanner's cursor: the same result as the `Deserialize` impl.
    fn scan(s: &mut Scanner<'_>) -> serde_json::Result<DynamicObject> {
        let mut obj = DynamicObject::default();
        let mut seen_metadata = false;
        s.begin_object()?;
        let mut first = true;
        while let Some(key) = s.next_key(first)? {
            first = false;
            let key = key.text()?;
            match &*key {
                "apiVersion" => obj.api_version = s.opt_string()?,
                "kind" => obj.kind = s.opt_string()?,
                "metadata" => {
                    if seen_metadata {
                        return Err(de::Error::duplicate_field("metadata"));
                    }
                    seen_metadata = true;
                    obj.metadata = ObjectMeta::scan(s)?;
                }
                _ => {
                    let raw = RawJson::from_checked(s.value()?);
                    obj.fields.push((key.into_owned(), raw));
                }
            }
        }
        Ok(obj)
    }
}

impl<'de> Deserialize<'de> for DynamicObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(DynamicVisitor)
    }
}

struct DynamicVisitor;

impl<'de> Visitor<'de> for DynamicVisitor {
    type Value = DynamicObject;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Kubernetes object (a JSON map)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<DynamicObject, A::Error> {
        let mut obj = DynamicObject::default();
        let mut seen_metadata = false;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match &*key {
                "apiVersion" => obj.api_version = map.next_value()?,
                "kind" => obj.kind = map.next_value()?,
                "metadata" => {
                    if seen_metadata {
                        return Err(de::Error::duplicate_field("metadata"));
                    }
                    seen_metadata = true;
                    obj.metadata = map.next_value()?;
                }
                _ => {
                    let raw: RawJson = map.next_value()?;
                    obj.fields.push((key.into_owned(), raw));
                }
            }
        }
        Ok(obj)
    }
}

impl Serialize for DynamicObject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        if let Some(v) = &self.api_version {
            map.serialize_entry("apiVersion", v)?;
        }
        if let Some(k) = &self.kind {
            map.serialize_entry("kind", k)?;
        }
        map.serialize_entry("metadata", &self.metadata)?;
        for (k, v) in &self.fields {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}
