//! Decoding `ObjectMeta` with the scanner instead of serde.
//!
//! Why: in a realistic pod, `metadata` is half of the text and `managedFields` (hundreds of
//! short keys) most of that. serde_json's derive spends most of its time skipping those
//! keys; the scanner checks them in a tight loop and keeps their text. The result is the same
//! `ObjectMeta` serde's derive makes (same fields, `null` read as absent, unknown members
//! checked and ignored); serde's own `Deserialize` stays for every other source.
//!
//! `ObjectMeta`'s `Deserialize` lives here too, so that every type holding an `ObjectMeta`
//! (slim user types, `PartialObjectMetadata`) gets the fast path when the library's own
//! deserializer ([`deserializer`](super::deserializer)) reads it: the impl asks for a newtype
//! struct with a private marker name; the library's deserializer answers by scanning the
//! metadata object and handing the result over through a thread-local slot (serde has no way
//! to pass a concrete value through a generic visitor), every other decoder answers with the
//! newtype itself and gets serde's derive (`ObjectMetaDef`, a `remote` mirror that fails to
//! compile if it and `ObjectMeta` ever disagree). An array where the object should be (serde
//! accepts a struct as one) also goes the derive's way.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, DeserializeOwned, MapAccess, SeqAccess, Unexpected, Visitor};
use serde::{Deserialize, Deserializer};

use super::decode_options::strip_managed_fields;
use super::json_scan::{Result as ScanResult, Scanner};
use super::raw_json::RawJson;
use super::scratch::Scratch;
use super::shared_str::SharedStr;
use super::string_map::StringMap;
use crate::api::{ObjectMeta, OwnerReference};

/// The members `ObjectMeta` decodes, in the order `scan` matches them by position.
const FIELDS: [&str; 15] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "generation",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

impl ObjectMeta {
    /// Decodes the metadata object at the scanner's cursor.
    pub(crate) fn scan(s: &mut Scanner<'_>) -> serde_json::Result<ObjectMeta> {
        let (mut m, managed) = ObjectMeta::scan_parts(s)?;
        m.managed_fields = managed.map(RawJson::from_checked);
        Ok(m)
    }

    /// Decodes the metadata object at the scanner's cursor, all but `managedFields`, whose
    /// checked text (unless absent or `null`) is handed back for the caller to keep.
    pub(crate) fn scan_parts<'a>(
        s: &mut Scanner<'a>,
    ) -> serde_json::Result<(ObjectMeta, Option<&'a str>)> {
        let mut m = ObjectMeta::default();
        let mut managed = None;
        s.begin_object()?;
        let mut first = true;
        let mut seen = 0u32;
        while let Some(key) = s.next_key(first)? {
            first = false;
            let key = key.text()?;
            let Some(field) = FIELDS.iter().position(|f| *f == key) else {
                s.value()?; // unknown members are checked and ignored
                continue;
            };
            // serde's derive refuses a field given twice; so does this.
            if seen & (1 << field) != 0 {
                return Err(serde::de::Error::duplicate_field(FIELDS[field]));
            }
            seen |= 1 << field;
            match field {
                0 => m.name = s.opt_string()?,
                1 => m.generate_name = s.opt_shared_string()?,
                2 => m.namespace = s.opt_shared_string()?,
                3 => m.self_link = s.opt_string()?,
                4 => m.uid = s.opt_string()?,
                5 => m.resource_version = s.opt_string()?,
                6 => m.creation_timestamp = s.opt_string()?,
                7 => m.deletion_timestamp = s.opt_string()?,
                8 => m.generation = serde_value(s)?,
                9 => m.deletion_grace_period_seconds = serde_value(s)?,
                10 => m.labels = opt_string_map(s)?,
                11 => m.annotations = opt_string_map(s)?,
                12 => m.owner_references = exact_vec(s)?,
                13 => m.finalizers = exact_vec(s)?,
                _ => {
                    managed = if s.take_null()? {
                        None
                    } else {
                        let text = s.value()?;
                        // Checked and jumped over: not kept when the thread strips them.
                        (!strip_managed_fields()).then_some(text)
                    }
                }
            }
        }
        Ok((m, managed))
    }
}

/// A map of strings to strings, or `null`.
fn opt_string_map(s: &mut Scanner<'_>) -> ScanResult<Option<StringMap>> {
    if s.take_null()? {
        return Ok(None);
    }
    // Label and annotation maps are short: their entries gather on the stack.
    let mut entries: Scratch<(Cow<'_, str>, Cow<'_, str>), 16> = Scratch::new();
    s.begin_object()?;
    let mut first = true;
    while let Some(key) = s.next_key(first)? {
        first = false;
        entries.push((key.text()?, s.string()?));
    }
    Ok(Some(StringMap::from_entries(entries.as_mut_slice())))
}

/// A list (or `null`), decoded by serde from its checked text into a `Vec` of exactly its
/// length: serde's own `Vec` grows to four slots for the usual one owner reference or
/// finalizer, and every cached object would keep the three empty ones.
fn exact_vec<T: DeserializeOwned + Default>(
    s: &mut Scanner<'_>,
) -> serde_json::Result<Option<Vec<T>>> {
    Ok(serde_value::<Option<ExactVec<T>>>(s)?.map(|v| v.0))
}

struct ExactVec<T>(Vec<T>);

impl<'de, T: Deserialize<'de> + Default> Deserialize<'de> for ExactVec<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SeqVisitor<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de> + Default> Visitor<'de> for SeqVisitor<T> {
            type Value = ExactVec<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                // What serde's `Vec` says.
                f.write_str("a sequence")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ExactVec<T>, A::Error> {
                let mut items: Scratch<T, 4> = Scratch::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                let mut exact = Vec::with_capacity(items.len());
                exact.extend(items.drain());
                Ok(ExactVec(exact))
            }
        }
        deserializer.deserialize_seq(SeqVisitor(std::marker::PhantomData))
    }
}

/// A small value of any other type, decoded by serde from its checked text.
fn serde_value<T: DeserializeOwned>(s: &mut Scanner<'_>) -> serde_json::Result<T> {
    serde_json::from_str(s.value()?)
}

/// The name `ObjectMeta`'s `Deserialize` asks `deserialize_newtype_struct` for.
pub(crate) const META_TOKEN: &str = "$kube_informer::private::ObjectMeta";

thread_local! {
    /// An `ObjectMeta` the library's deserializer scanned, on its way to the visitor.
    static HANDED_OVER: RefCell<Option<ObjectMeta>> = const { RefCell::new(None) };
}

/// For the library's deserializer: hands `meta` to `ObjectMeta`'s visitor through
/// `visit_unit`. The slot is emptied afterwards whatever the visitor did.
pub(crate) fn hand_over<'de, V: Visitor<'de>>(
    meta: ObjectMeta,
    visitor: V,
) -> serde_json::Result<V::Value> {
    HANDED_OVER.with(|slot| *slot.borrow_mut() = Some(meta));
    let result = visitor.visit_unit();
    HANDED_OVER.with(|slot| slot.borrow_mut().take());
    result
}

impl<'de> Deserialize<'de> for ObjectMeta {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_newtype_struct(META_TOKEN, MetaVisitor)
    }
}

struct MetaVisitor;

impl<'de> Visitor<'de> for MetaVisitor {
    type Value = ObjectMeta;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("struct ObjectMeta")
    }

    /// Every decoder but the library's: serde's derive.
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<ObjectMeta, D::Error> {
        ObjectMetaDef::deserialize(d)
    }

    /// The library's deserializer, which scanned the object already.
    fn visit_unit<E: de::Error>(self) -> Result<ObjectMeta, E> {
        HANDED_OVER
            .with(|slot| slot.borrow_mut().take())
            .ok_or_else(|| E::invalid_type(Unexpected::Unit, &self))
    }

    /// Decoders that answer any request with what they hold (serde's `value` module).
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ObjectMeta, A::Error> {
        ObjectMetaDef::deserialize(MapAccessDeserializer::new(map))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<ObjectMeta, A::Error> {
        ObjectMetaDef::deserialize(SeqAccessDeserializer::new(seq))
    }
}

/// serde's derive for `ObjectMeta`, field for field (a `remote` mirror: if the two ever
/// differ, this does not compile).
#[derive(Deserialize)]
#[serde(remote = "ObjectMeta", rename_all = "camelCase")]
struct ObjectMetaDef {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    generate_name: Option<SharedStr>,
    #[serde(default)]
    namespace: Option<SharedStr>,
    #[serde(default)]
    self_link: Option<String>,
    #[serde(default)]
    uid: Option<String>,
    #[serde(default)]
    resource_version: Option<String>,
    #[serde(default)]
    generation: Option<i64>,
    #[serde(default)]
    creation_timestamp: Option<String>,
    #[serde(default)]
    deletion_timestamp: Option<String>,
    #[serde(default)]
    deletion_grace_period_seconds: Option<i64>,
    #[serde(default)]
    labels: Option<StringMap>,
    #[serde(default)]
    annotations: Option<StringMap>,
    #[serde(default)]
    owner_references: Option<Vec<OwnerReference>>,
    #[serde(default)]
    finalizers: Option<Vec<String>>,
    #[serde(default)]
    managed_fields: Option<RawJson>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both(
        text: &str,
    ) -> (
        serde_json::Result<ObjectMeta>,
        serde_json::Result<ObjectMeta>,
    ) {
        let by_serde = serde_json::from_str::<ObjectMeta>(text);
        let mut s = Scanner::new(text);
        let by_scan = ObjectMeta::scan(&mut s).and_then(|m| {
            s.end()?;
            Ok(m)
        });
        (by_serde, by_scan)
    }

    #[test]
    fn decodes_like_serde() {
        let text = r#"{"name":"web-1","generateName":"web-","namespace":"shop","selfLink":null,
            "uid":"0f3c","resourceVersion":"42","generation":3,"creationTimestamp":"2026-11-20T10:00:00Z",
            "deletionTimestamp":null,"deletionGracePeriodSeconds":30,
            "labels":{"app":"web","a\"b":"c\u00e9"},"annotations":null,
            "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","uid":"u","controller":true}],
            "finalizers":["x/y"],"managedFields":[{"manager":"m","fieldsV1":{"f:a":{}}}],
            "unknown":{"nested":[1,2,{"x":null}]}}"#;
        let (a, b) = both(text);
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(
            serde_json::to_value(&a).unwrap(),
            serde_json::to_value(&b).unwrap()
        );
        assert_eq!(b.label("a\"b"), Some("cé"));
        assert_eq!(b.generation, Some(3));
        assert_eq!(
            b.managed_fields.as_ref().map(RawJson::get),
            Some(r#"[{"manager":"m","fieldsV1":{"f:a":{}}}]"#)
        );
    }

    /// Lists and maps past the room their decoding keeps on the stack, unsorted maps with a
    /// key given twice, and lists of every short length decode as serde decodes them; lists
    /// hold no spare slots.
    #[test]
    fn long_and_short_lists_and_maps_decode_like_serde_and_exactly() {
        let owner = |i: usize| {
            format!(
                r#"{{"apiVersion":"v1","kind":"K","name":"o{i}","uid":"u{i}","blockOwnerDeletion":null}}"#
            )
        };
        for n in [0, 1, 2, 4, 5, 9] {
            let owners: Vec<String> = (0..n).map(owner).collect();
            let finalizers: Vec<String> = (0..n).map(|i| format!(r#""f/{i}""#)).collect();
            // Keys given out of order, one of them twice (the last value wins).
            let mut labels: Vec<String> = (0..n * 5)
                .rev()
                .map(|i| format!(r#""k{i:02}":"v{i}""#))
                .collect();
            labels.push(r#""k00":"last""#.to_owned());
            let text = format!(
                r#"{{"ownerReferences":[{}],"finalizers":[{}],"labels":{{{}}},"annotations":{{{}}}}}"#,
                owners.join(","),
                finalizers.join(","),
                labels.join(","),
                labels[..n].join(",")
            );
            let (a, b) = both(&text);
            let (a, b) = (a.unwrap(), b.unwrap());
            assert_eq!(
                serde_json::to_value(&a).unwrap(),
                serde_json::to_value(&b).unwrap(),
                "{text}"
            );
            assert_eq!(b.label("k00"), Some("last"));
            let refs = b.owner_references.as_ref().unwrap();
            assert_eq!((refs.len(), refs.capacity()), (n, n), "no spare slots");
            let fins = b.finalizers.as_ref().unwrap();
            assert_eq!((fins.len(), fins.capacity()), (n, n), "no spare slots");
        }
        for bad in [
            r#"{"ownerReferences":{}}"#,
            r#"{"ownerReferences":[{"kind":"K"}]}"#,
            r#"{"finalizers":"x"}"#,
            r#"{"finalizers":[1]}"#,
        ] {
            // The same error (its position is within the list's own text, as before).
            let what = |r: serde_json::Result<ObjectMeta>| {
                let e = r.err().map(|e| e.to_string()).unwrap_or_default();
                e.split(" at line").next().unwrap_or_default().to_owned()
            };
            let (a, b) = both(bad);
            let (a, b) = (what(a), what(b));
            assert!(!a.is_empty(), "serde accepted {bad}");
            assert_eq!(a, b, "{bad}");
        }
    }

    #[test]
    fn rejects_what_serde_rejects() {
        for bad in [
            r#"{"name":1}"#,
            r#"{"labels":{"a":null}}"#,
            r#"{"labels":[]}"#,
            r#"{"generation":"x"}"#,
            r#"{"managedFields":[1,]}"#,
            r#"{"name":"a""#,
            r#"{"unknown":tru}"#,
            r#"{"name":"a","name":"b"}"#,
            r#"{"labels":{"\ud800":"x"}}"#,
        ] {
            let (a, b) = both(bad);
            assert!(a.is_err(), "serde accepted {bad}");
            assert!(b.is_err(), "the scanner accepted {bad}");
        }
    }
}
