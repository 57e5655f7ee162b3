//! `DynamicObject`: any object, for resources known only at run time (custom resources).
//!
//! Metadata is typed, because the cache keys, indexes and selectors read it. Everything else
//! stays the raw JSON text it arrived as ([`RawJson`]), decoded only when asked. Measured on a
//! realistic 5.3 KB pod, a `serde_json::Value` tree keeps ~57 KB and parses at ~22 MB/s; typed
//! metadata plus raw text keeps ~4.7 KB. Lists and watch events decode it with the library's
//! scanner ([`Object::from_json_prefix`]), which checks and keeps the raw parts in one tight
//! pass instead of serde's generic skipping.

use std::fmt;
use std::sync::Arc;

use crate::json::deserializer::from_prefix;
use crate::json::json_scan::Scanner;
use crate::json::raw_json::RawJson;
use crate::json::scratch::Scratch;
use serde::de::{self, DeserializeOwned, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::meta::ObjectMeta;
use super::resource::Object;
use super::SharedStr;

/// An object of any kind: typed metadata, the other top-level fields as raw JSON.
#[derive(Clone, Debug, Default)]
pub struct DynamicObject {
    /// `apiVersion`, when the server sent it (list items of core kinds omit it).
    pub api_version: Option<SharedStr>,
    /// `kind`, when the server sent it.
    pub kind: Option<SharedStr>,
    /// Typed metadata.
    pub metadata: ObjectMeta,
    /// Every other top-level field (`spec`, `status`, `data`, ...), in arrival order.
    pub fields: Vec<(SharedStr, RawJson)>,
}

impl DynamicObject {
    /// The raw JSON of one top-level field, e.g. `"spec"`.
    pub fn field(&self, name: &str) -> Option<&RawJson> {
        self.fields
            .iter()
            .find(|(k, _)| *k == *name)
            .map(|(_, v)| v)
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
    type Meta = ObjectMeta;
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
    const SCANNED: bool = true;

    fn from_json_prefix(json: &str) -> serde_json::Result<(Self, usize)> {
        let mut s = Scanner::new(json);
        let obj = DynamicObject::scan(json, &mut s)?;
        Ok((obj, s.pos()))
    }

    fn compact(&mut self) {
        DynamicObject::compact(self)
    }
}

impl DynamicObject {
    /// Decodes the object at the scanner's cursor (over `text`): the same result as the
    /// `Deserialize` impl. The raw parts (`managedFields` and the top-level fields) are copied
    /// into one shared buffer when they lie close together, as they do in what servers send.
    fn scan<'a>(text: &'a str, s: &mut Scanner<'a>) -> serde_json::Result<DynamicObject> {
        let mut obj = DynamicObject::default();
        let mut seen_metadata = false;
        let mut managed = None;
        // The other members, until the buffer they will share is made (on the stack: an
        // object has few).
        let mut fields: Scratch<(SharedStr, &'a str), 8> = Scratch::new();
        s.begin_object()?;
        let mut first = true;
        while let Some(key) = s.next_key(first)? {
            first = false;
            let key = key.text()?;
            match &*key {
                "apiVersion" => obj.api_version = s.opt_shared_string()?,
                "kind" => obj.kind = s.opt_shared_string()?,
                "metadata" => {
                    if seen_metadata {
                        return Err(de::Error::duplicate_field("metadata"));
                    }
                    seen_metadata = true;
                    if s.peek() == Some(b'{') {
                        (obj.metadata, managed) = ObjectMeta::scan_parts(s)?;
                    } else {
                        // serde reads a struct from an array too (as `Deserialize` does).
                        let (meta, used) = from_prefix::<ObjectMeta>(s.rest())?;
                        s.advance(used);
                        obj.metadata = meta;
                    }
                }
                _ => fields.push((SharedStr::shared(&key), s.value()?)),
            }
        }
        let mut parts = RawParts::new(
            text,
            managed
                .iter()
                .chain(fields.as_slice().iter().map(|(_, v)| v)),
        );
        if let Some(m) = managed {
            obj.metadata.managed_fields = Some(parts.keep(m));
        }
        obj.fields = Vec::with_capacity(fields.len());
        obj.fields
            .extend(fields.drain().map(|(key, value)| (key, parts.keep(value))));
        Ok(obj)
    }

    /// Gives the raw parts one buffer of exactly their size when the buffers they are in hold
    /// much more than they use: after a transform dropped `managedFields` (as
    /// [`strip_managed_fields`](crate::cache::strip_managed_fields) does), say, whose text
    /// would otherwise stay in memory with the rest.
    pub fn compact(&mut self) {
        let mut used = 0;
        let mut held = 0;
        let mut buffers: Vec<*const u8> = Vec::new();
        for raw in self.raw_parts_mut() {
            used += raw.get().len();
            let buffer = raw.buffer();
            if !buffers.contains(&buffer.as_ptr()) {
                buffers.push(buffer.as_ptr());
                held += buffer.len();
            }
        }
        if held <= slack(used) {
            return;
        }
        let mut joined = String::with_capacity(used);
        let mut ranges = Vec::new();
        for raw in self.raw_parts_mut() {
            let start = joined.len();
            joined.push_str(raw.get());
            ranges.push(start..joined.len());
        }
        let buffer: Arc<str> = Arc::from(joined);
        for (raw, range) in self.raw_parts_mut().zip(ranges) {
            *raw = RawJson::shared(&buffer, range);
        }
    }

    /// `managedFields` and the top-level raw fields.
    fn raw_parts_mut(&mut self) -> impl Iterator<Item = &mut RawJson> {
        self.metadata
            .managed_fields
            .iter_mut()
            .chain(self.fields.iter_mut().map(|(_, v)| v))
    }
}

/// How many bytes a shared buffer may hold for parts using `used` bytes: the separators
/// between the parts of an object, and a little more.
fn slack(used: usize) -> usize {
    used + used / 8 + 256
}

/// Copies checked parts of one text into one shared buffer, when they lie close together;
/// otherwise each into a buffer of its own.
struct RawParts<'t> {
    text: &'t str,
    /// The shared buffer and where in `text` it starts.
    shared: Option<(Arc<str>, usize)>,
}

impl<'t> RawParts<'t> {
    fn new<'p>(text: &'t str, parts: impl Iterator<Item = &'p &'t str>) -> RawParts<'t>
    where
        't: 'p,
    {
        let mut span: Option<(usize, usize)> = None;
        let mut used = 0;
        for part in parts {
            let Some(start) = offset_in(text, part) else {
                return RawParts { text, shared: None };
            };
            used += part.len();
            let end = start + part.len();
            span = Some(match span {
                Some((a, b)) => (a.min(start), b.max(end)),
                None => (start, end),
            });
        }
        let shared = span
            .filter(|&(a, b)| b - a <= slack(used))
            .and_then(|(a, b)| Some((Arc::from(text.get(a..b)?), a)));
        RawParts { text, shared }
    }

    /// Keeps one part (a slice of the text).
    fn keep(&mut self, part: &str) -> RawJson {
        if let (Some((buffer, at)), Some(start)) = (&self.shared, offset_in(self.text, part)) {
            if let Some(offset) = start.checked_sub(*at) {
                let range = offset..offset + part.len();
                if range.end <= buffer.len() {
                    return RawJson::shared(buffer, range);
                }
            }
        }
        RawJson::from_checked(part)
    }
}

/// Where `part`, a slice of `text`, starts in it; `None` if it is not a slice of it.
fn offset_in(text: &str, part: &str) -> Option<usize> {
    let start = (part.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    (start + part.len() <= text.len()).then_some(start)
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
                    obj.fields.push((SharedStr::shared(&key), raw));
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

#[cfg(test)]
mod tests {
    use super::*;

    const POD: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"shop",
        "labels":{"app":"web"},"managedFields":[{"manager":"kubelet","fieldsV1":{"f:status":{"f:phase":{}}}}]},
        "spec":{"containers":[{"name":"app","image":"registry.example.com/web:1"}]},
        "status":{"phase":"Running","podIP":"10.0.0.7"}}"#;

    fn decode(text: &str) -> DynamicObject {
        DynamicObject::from_json_prefix(text).unwrap().0
    }

    fn held(obj: &DynamicObject) -> usize {
        let mut buffers: Vec<Arc<str>> = Vec::new();
        let raws = obj.metadata.managed_fields.iter();
        for raw in raws.chain(obj.fields.iter().map(|(_, v)| v)) {
            if !buffers.iter().any(|b| Arc::ptr_eq(b, raw.buffer())) {
                buffers.push(Arc::clone(raw.buffer()));
            }
        }
        buffers.iter().map(|b| b.len()).sum()
    }

    #[test]
    fn the_raw_parts_of_an_object_share_one_buffer_and_read_as_serde_reads_them() {
        let fast = decode(POD);
        let slow: DynamicObject = serde_json::from_str(POD).unwrap();
        assert_eq!(
            serde_json::to_string(&fast).unwrap(),
            serde_json::to_string(&slow).unwrap()
        );
        let managed = fast.metadata.managed_fields.as_ref().unwrap();
        let spec = fast.field("spec").unwrap();
        let status = fast.field("status").unwrap();
        assert!(Arc::ptr_eq(managed.buffer(), spec.buffer()));
        assert!(Arc::ptr_eq(spec.buffer(), status.buffer()));
        assert_eq!(status.get(), r#"{"phase":"Running","podIP":"10.0.0.7"}"#);
        let used = managed.get().len() + spec.get().len() + status.get().len();
        assert!(held(&fast) < used + 40, "only separators in between");
    }

    #[test]
    fn objects_with_many_members_keep_them_all_in_order() {
        for n in [0, 1, 8, 9, 20] {
            let members: String = (0..n).map(|i| format!(r#","m{i}":{{"v":{i}}}"#)).collect();
            let text = format!(r#"{{"kind":"K","metadata":{{"name":"x"}}{members}}}"#);
            let fast = decode(&text);
            let slow: DynamicObject = serde_json::from_str(&text).unwrap();
            assert_eq!(fast.fields.len(), n);
            assert_eq!(fast.fields.capacity(), n, "no spare slots");
            assert_eq!(
                serde_json::to_string(&fast).unwrap(),
                serde_json::to_string(&slow).unwrap()
            );
        }
    }

    #[test]
    fn metadata_as_an_array_reads_as_serde_reads_it() {
        for text in [
            r#"{"metadata":["a",null,"ns"],"spec":{"x":1}}"#,
            r#"{"metadata":["a",null,null,null,null,null,null,null,null,null,null,null,null,null,[{"m":1}]]}"#,
            r#"{"metadata":[1]}"#,
            r#"{"metadata":"x"}"#,
        ] {
            let fast = DynamicObject::from_json_prefix(text)
                .map(|(o, _)| serde_json::to_string(&o).unwrap());
            let slow = serde_json::from_str::<DynamicObject>(text)
                .map(|o| serde_json::to_string(&o).unwrap());
            assert_eq!(fast.ok(), slow.ok(), "{text}");
        }
    }

    #[test]
    fn parts_far_apart_get_buffers_of_their_own() {
        let filler = "x".repeat(2000);
        let text = format!(
            r#"{{"spec":{{"a":1}},"metadata":{{"name":"n","annotations":{{"big":"{filler}"}}}},"status":{{"b":2}}}}"#
        );
        let obj = decode(&text);
        assert_eq!(obj.field("spec").unwrap().get(), r#"{"a":1}"#);
        assert_eq!(obj.field("status").unwrap().get(), r#"{"b":2}"#);
        assert!(
            held(&obj) < 100,
            "the annotation between them is not kept twice"
        );
    }

    #[test]
    fn compact_releases_what_a_transform_dropped() {
        // managedFields are usually a large share of an object.
        let many: String = (0..60).map(|i| format!(r#","f:x{i}":{{}}"#)).collect();
        let long = POD.replace(r#""f:phase":{}"#, &format!(r#""f:phase":{{}}{many}"#));
        let mut obj = decode(&long);
        let before = held(&obj);
        obj.metadata.strip_managed_fields();
        obj.compact();
        let used =
            obj.field("spec").unwrap().get().len() + obj.field("status").unwrap().get().len();
        assert_eq!(held(&obj), used);
        assert!(held(&obj) < before);
        let slow: DynamicObject = serde_json::from_str(&long).unwrap();
        assert_eq!(obj.field("spec"), slow.field("spec"));
        assert_eq!(obj.field("status"), slow.field("status"));
        // Compacting a compact object changes nothing.
        let buffer = Arc::clone(obj.field("spec").unwrap().buffer());
        obj.compact();
        assert!(Arc::ptr_eq(&buffer, obj.field("spec").unwrap().buffer()));
    }
}
