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
    /// The raw JSON of one top-level field, e.g. `"spec"`. Not `apiVersion`, `kind` or
    /// `metadata`: those are typed (the struct's fields), and this gives `None` for them;
    /// [`get`](Self::get) reads any of them by path.
    ///
    /// ```
    /// let obj: kube_informer::api::DynamicObject = serde_json::from_str(
    ///     r#"{"kind":"ConfigMap","metadata":{"name":"a"},"data":{"k": "v"}}"#)?;
    /// assert_eq!(obj.field("data").map(|d| d.get()), Some(r#"{"k": "v"}"#)); // as it came
    /// assert!(obj.field("metadata").is_none() && obj.field("kind").is_none());
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn field(&self, name: &str) -> Option<&RawJson> {
        self.fields
            .iter()
            .find(|(k, _)| *k == *name)
            .map(|(_, v)| v)
    }

    /// Decodes one top-level raw field into `T`; `Ok(None)` when the field is absent (and
    /// for `apiVersion`, `kind` and `metadata`, as [`field`](Self::field) says).
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

/// Reading and changing fields by path.
///
/// The object stays raw text: a read decodes only the top-level field its path starts in,
/// and a change re-encodes only that field, and only when its value changed (with
/// `serde_json`'s key order; `metadata` goes through its typed form, `apiVersion` and `kind`
/// are strings). A path is a list of keys, so a key may hold dots
/// and slashes (`["metadata", "labels", "app.kubernetes.io/name"]`); a segment that reaches
/// an array is an index (`["spec", "containers", "0", "image"]`).
///
/// ```
/// use kube_informer::api::{ApiResource, DynamicObject};
///
/// let deploys = ApiResource::new("apps", "v1", "Deployment", "deployments", true);
/// let mut web = DynamicObject::new("web", &deploys);
/// web.set(&["spec", "replicas"], 3)?;                                   // by path
/// web.set(&["metadata", "labels", "app.kubernetes.io/name"], "web")?;
/// web.edit(&["spec", "template"], |t| t["spec"]["containers"] =         // by closure
///     serde_json::json!([{"name": "app", "image": "nginx:1.27"}]))?;
/// assert_eq!(web.get::<i64>(&["spec", "replicas"])?, Some(3));         // typed by serde
/// assert_eq!(web.get::<String>(&["spec", "template", "spec", "containers", "0", "image"])?,
///            Some("nginx:1.27".to_owned()));
/// assert_eq!(web.metadata.labels.as_ref().unwrap().get("app.kubernetes.io/name"), Some("web"));
/// assert_eq!(web.get::<i64>(&["spec", "paused"])?, None);               // absent
/// assert!(web.get::<String>(&["spec", "replicas"]).is_err());           // not a string
/// assert!(web.remove(&["spec", "replicas"])?);
/// assert_eq!(serde_json::to_string(&web)?, r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app.kubernetes.io/name":"web"}},"spec":{"template":{"spec":{"containers":[{"image":"nginx:1.27","name":"app"}]}}}}"#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl DynamicObject {
    /// An object of `resource`'s kind named `name` (`apiVersion`, `kind` and
    /// `metadata.name` set): the starting point of a create, or of
    /// [`CreateOrPatch::run`](crate::controller::CreateOrPatch::run).
    pub fn new(name: &str, resource: &super::ApiResource) -> DynamicObject {
        let mut obj = DynamicObject {
            api_version: Some(SharedStr::from(resource.api_version().as_str())),
            kind: Some(SharedStr::from(resource.kind.as_str())),
            ..Default::default()
        };
        obj.metadata.name = Some(name.to_owned());
        obj
    }

    /// The value at `path`, decoded into `T`; `Ok(None)` when absent (or `null`).
    ///
    /// Errors: [`Error::Decode`](crate::Error::Decode) when the value is not a `T`;
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) for an empty path.
    pub fn get<T: DeserializeOwned>(&self, path: &[&str]) -> crate::Result<Option<T>> {
        let (first, rest) = split(path)?;
        let decoded = if rest.is_empty() && !matches!(*first, "apiVersion" | "kind" | "metadata") {
            // One raw field: straight from its text.
            match self.field(first) {
                None => return Ok(None),
                Some(raw) => serde_json::from_str::<Option<T>>(raw.get()),
            }
        } else {
            let Some(top) = self.top_value(first)? else {
                return Ok(None);
            };
            match walk(&top, rest) {
                None => return Ok(None),
                Some(v) => Option::<T>::deserialize(v),
            }
        };
        decoded.map_err(|e| crate::Error::Decode {
            request: format!("field {}", path.join(".")),
            message: e.to_string(),
        })
    }

    /// Sets the value at `path` to `value` (anything serde serializes), making the objects
    /// on the way as needed, as `obj["spec"]["replicas"] = json!(3)` does on a
    /// `serde_json::Value`.
    ///
    /// Errors ([`Error::InvalidInput`](crate::Error::InvalidInput)): an empty path, a
    /// segment under a value that is neither an object nor `null` (a string, a number), an
    /// array index past its end, a `value` serde cannot write as JSON, or a change that
    /// leaves `metadata` not an ObjectMeta, `apiVersion` or `kind` not a string.
    pub fn set(&mut self, path: &[&str], value: impl Serialize) -> crate::Result<()> {
        let value = serde_json::to_value(value).map_err(invalid)?;
        self.edit(path, move |slot| *slot = value)
    }

    /// Runs `change` on the value at `path` (`Value::Null` when absent) and stores what it
    /// leaves there; `Null` left at the path removes the field. Returns what `change`
    /// returned. The same errors as [`set`](Self::set).
    pub fn edit<R>(
        &mut self,
        path: &[&str],
        change: impl FnOnce(&mut serde_json::Value) -> R,
    ) -> crate::Result<R> {
        let (first, rest) = split(path)?;
        let before = self.top_value(first)?;
        let had_top = before.is_some();
        let mut top = before.unwrap_or(serde_json::Value::Null);
        if rest.is_empty() {
            let out = change(&mut top);
            self.put_top(first, top)?;
            return Ok(out);
        }
        // How many segments of the path were there before (those made on the way are
        // taken away again when the change leaves nothing there).
        let existing = (1..=rest.len())
            .take_while(|&n| walk(&top, &rest[..n]).is_some())
            .count();
        let slot = walk_mut(&mut top, rest, path)?;
        let out = change(slot);
        if slot.is_null() {
            if existing == rest.len() {
                remove_at(&mut top, rest);
            } else if existing == 0 && !had_top {
                top = serde_json::Value::Null;
            } else {
                remove_at(&mut top, &rest[..existing + 1]);
            }
        }
        self.put_top(first, top)?;
        Ok(out)
    }

    /// Removes the value at `path`; whether there was one. Removing a field that is not
    /// there is not an error (nor is a path through a string: there is nothing under it).
    pub fn remove(&mut self, path: &[&str]) -> crate::Result<bool> {
        let (first, rest) = split(path)?;
        let Some(mut top) = self.top_value(first)? else {
            return Ok(false);
        };
        let removed = if rest.is_empty() {
            true
        } else {
            remove_at(&mut top, rest)
        };
        if removed {
            let top = if rest.is_empty() {
                serde_json::Value::Null
            } else {
                top
            };
            self.put_top(first, top)?;
        }
        Ok(removed)
    }

    /// One top-level member as a `Value` (`None` when absent).
    fn top_value(&self, name: &str) -> crate::Result<Option<serde_json::Value>> {
        let text = |s: &Option<SharedStr>| s.as_ref().map(|s| serde_json::Value::from(&**s));
        Ok(match name {
            "apiVersion" => text(&self.api_version),
            "kind" => text(&self.kind),
            "metadata" => Some(serde_json::to_value(&self.metadata).map_err(invalid)?),
            _ => match self.field(name) {
                None => None,
                Some(raw) => Some(serde_json::from_str(raw.get()).map_err(invalid)?),
            },
        })
    }

    /// Stores one top-level member (`Null`: removed), checked before anything changes.
    fn put_top(&mut self, name: &str, value: serde_json::Value) -> crate::Result<()> {
        let text = |v: serde_json::Value| match v {
            serde_json::Value::Null => Ok(None),
            serde_json::Value::String(s) => Ok(Some(SharedStr::from(s.as_str()))),
            other => Err(crate::Error::InvalidInput(format!(
                "{name} must be a string, not {other}"
            ))),
        };
        match name {
            "apiVersion" => self.api_version = text(value)?,
            "kind" => self.kind = text(value)?,
            "metadata" => {
                self.metadata = match value {
                    serde_json::Value::Null => ObjectMeta::default(),
                    v => serde_json::from_value(v)
                        .map_err(|e| crate::Error::InvalidInput(format!("metadata: {e}")))?,
                }
            }
            _ => {
                let at = self.fields.iter().position(|(k, _)| *k == *name);
                match (value, at) {
                    (serde_json::Value::Null, Some(i)) => {
                        self.fields.remove(i);
                    }
                    (serde_json::Value::Null, None) => {}
                    // Equal to what is there: the text that arrived stays as it was.
                    (v, Some(i))
                        if serde_json::from_str::<serde_json::Value>(self.fields[i].1.get())
                            .is_ok_and(|old| old == v) => {}
                    (v, at) => {
                        let raw = RawJson::from_checked(&v.to_string());
                        match at {
                            Some(i) => self.fields[i].1 = raw,
                            None => self.fields.push((SharedStr::from(name), raw)),
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

fn invalid(e: serde_json::Error) -> crate::Error {
    crate::Error::InvalidInput(e.to_string())
}

fn split<'p>(path: &'p [&'p str]) -> crate::Result<(&'p &'p str, &'p [&'p str])> {
    path.split_first()
        .ok_or_else(|| crate::Error::InvalidInput("an empty field path".into()))
}

/// The value under `v` at `path`, if there is one.
fn walk<'v>(v: &'v serde_json::Value, path: &[&str]) -> Option<&'v serde_json::Value> {
    path.iter().try_fold(v, |v, seg| match v {
        serde_json::Value::Object(m) => m.get(*seg),
        serde_json::Value::Array(a) => a.get(seg.parse::<usize>().ok()?),
        _ => None,
    })
}

/// The slot at `path` under `v`, made (as `null`, in new objects) where missing.
fn walk_mut<'v>(
    mut v: &'v mut serde_json::Value,
    path: &[&str],
    whole: &[&str],
) -> crate::Result<&'v mut serde_json::Value> {
    for (depth, seg) in path.iter().enumerate() {
        if v.is_null() {
            *v = serde_json::Value::Object(serde_json::Map::new());
        }
        let here = || whole[..whole.len() - path.len() + depth].join(".");
        v = match v {
            serde_json::Value::Object(m) => m.entry(*seg).or_insert(serde_json::Value::Null),
            serde_json::Value::Array(a) => {
                let len = a.len();
                match seg.parse::<usize>().ok().and_then(|i| a.get_mut(i)) {
                    Some(slot) => slot,
                    None => {
                        return Err(crate::Error::InvalidInput(format!(
                            "{}: {seg:?} is not an index of this array of {len}",
                            here()
                        )))
                    }
                }
            }
            other => {
                return Err(crate::Error::InvalidInput(format!(
                    "{}: {} has no field {seg:?}",
                    here(),
                    kind_of(other)
                )))
            }
        };
    }
    Ok(v)
}

fn kind_of(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Removes the value at `path` (non-empty) under `v`; whether it was there.
fn remove_at(v: &mut serde_json::Value, path: &[&str]) -> bool {
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let mut v = v;
    for seg in parents {
        v = match v {
            serde_json::Value::Object(m) => match m.get_mut(*seg) {
                Some(next) => next,
                None => return false,
            },
            serde_json::Value::Array(a) => {
                match seg.parse::<usize>().ok().and_then(|i| a.get_mut(i)) {
                    Some(next) => next,
                    None => return false,
                }
            }
            _ => return false,
        };
    }
    match v {
        serde_json::Value::Object(m) => m.remove(*last).is_some(),
        serde_json::Value::Array(a) => match last.parse::<usize>() {
            Ok(i) if i < a.len() => {
                a.remove(i);
                true
            }
            _ => false,
        },
        _ => false,
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
    fn a_change_by_path_re_encodes_only_its_own_field() {
        let mut pod = decode(POD);
        let status_before = Arc::clone(pod.field("status").unwrap().buffer());
        pod.set(
            &["spec", "containers", "0", "image"],
            "registry.example.com/web:2",
        )
        .unwrap();
        pod.set(&["spec", "nodeName"], "node-1").unwrap();
        // The other raw fields are the very text that arrived, untouched.
        let status = pod.field("status").unwrap();
        assert!(Arc::ptr_eq(status.buffer(), &status_before));
        assert_eq!(
            pod.get::<String>(&["spec", "containers", "0", "image"])
                .unwrap()
                .as_deref(),
            Some("registry.example.com/web:2")
        );
        // Order kept: spec is still where it was, before status.
        let keys: Vec<&str> = pod.fields.iter().map(|(k, _)| &**k).collect();
        assert_eq!(keys, ["spec", "status"]);
        assert_eq!(
            pod.get::<String>(&["spec", "nodeName"]).unwrap().as_deref(),
            Some("node-1")
        );
        // Metadata through its typed form; keys with dots and slashes are one segment.
        pod.set(&["metadata", "labels", "app.kubernetes.io/name"], "web")
            .unwrap();
        let labels = pod.metadata.labels.as_ref().unwrap();
        assert_eq!(labels.get("app.kubernetes.io/name"), Some("web"));
        assert_eq!(labels.get("app"), Some("web"));
        assert!(pod.metadata.managed_fields.is_some(), "metadata kept whole");
    }

    #[test]
    fn an_edit_that_changes_nothing_leaves_the_object_as_it_was() {
        let mut pod = decode(POD);
        let before = serde_json::to_string(&pod).unwrap();
        // A closure that leaves nothing at an absent path makes nothing on the way.
        pod.edit(&["spec", "template", "spec"], |_| ()).unwrap();
        pod.edit(&["data"], |_| ()).unwrap();
        pod.edit(&["status", "conditions"], |_| ()).unwrap();
        assert_eq!(serde_json::to_string(&pod).unwrap(), before);
        assert!(!pod.remove(&["spec", "nope", "deeper"]).unwrap());
        assert!(!pod.remove(&["status", "phase", "deeper"]).unwrap());
        assert!(!pod.remove(&["data"]).unwrap());
        assert_eq!(serde_json::to_string(&pod).unwrap(), before);
        // Null left at a path that was there removes it.
        let old = pod.edit(&["status", "podIP"], std::mem::take).unwrap();
        assert_eq!(old, "10.0.0.7");
        assert_eq!(pod.field("status").unwrap().get(), r#"{"phase":"Running"}"#);
        assert!(pod.remove(&["status"]).unwrap());
        assert!(pod.field("status").is_none());
    }

    #[test]
    fn impossible_changes_are_refused_and_change_nothing() {
        let mut pod = decode(POD);
        let before = serde_json::to_string(&pod).unwrap();
        let refused = [
            pod.set(&[], 1),
            pod.set(&["status", "phase", "x"], 1),
            pod.set(&["spec", "containers", "7", "image"], "x"),
            pod.set(&["spec", "containers", "first"], "x"),
            pod.set(&["kind"], 3),
            pod.set(&["metadata", "name"], 3),
            pod.set(&["metadata"], "a string"),
        ];
        for r in refused {
            assert!(matches!(r, Err(crate::Error::InvalidInput(_))), "{r:?}");
        }
        assert_eq!(serde_json::to_string(&pod).unwrap(), before);
        // A value of another type is a decode error naming the path; absent is None.
        let e = pod.get::<i64>(&["status", "phase"]).unwrap_err();
        assert!(e.to_string().contains("status.phase"), "{e}");
        assert_eq!(pod.get::<i64>(&["status", "nope"]).unwrap(), None);
        assert_eq!(pod.get::<i64>(&["spec", "containers", "9"]).unwrap(), None);
        assert_eq!(
            pod.get::<String>(&["kind"]).unwrap().as_deref(),
            Some("Pod")
        );
        // Under the typed parts too.
        pod.set(&["kind"], "Other").unwrap();
        pod.set(&["apiVersion"], serde_json::Value::Null).unwrap();
        assert_eq!(
            (pod.kind.as_deref(), pod.api_version.as_deref()),
            (Some("Other"), None)
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
