//! Decoding `ObjectMeta` with the scanner instead of serde.
//!
//! Why: in a realistic pod, `metadata` is half of the text and `managedFields` (hundreds of
//! short keys) most of that. serde_json's derive spends most of its time skipping those
//! keys; the scanner checks them in a tight loop and keeps their text. The result is the same
//! `ObjectMeta` serde's derive makes (same fields, `null` read as absent, unknown members
//! checked and ignored); serde's own `Deserialize` stays for every other source.

use serde::de::DeserializeOwned;

use super::json_scan::{Result as ScanResult, Scanner};
#[cfg(test)]
use super::raw_json::RawJson;
use super::string_map::StringMap;
use crate::api::ObjectMeta;

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
    #[cfg(test)]
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
                1 => m.generate_name = s.opt_string()?,
                2 => m.namespace = s.opt_string()?,
                3 => m.self_link = s.opt_string()?,
                4 => m.uid = s.opt_string()?,
                5 => m.resource_version = s.opt_string()?,
                6 => m.creation_timestamp = s.opt_string()?,
                7 => m.deletion_timestamp = s.opt_string()?,
                8 => m.generation = serde_value(s)?,
                9 => m.deletion_grace_period_seconds = serde_value(s)?,
                10 => m.labels = opt_string_map(s)?,
                11 => m.annotations = opt_string_map(s)?,
                12 => m.owner_references = serde_value(s)?,
                13 => m.finalizers = serde_value(s)?,
                _ => {
                    managed = if s.take_null()? {
                        None
                    } else {
                        Some(s.value()?)
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
    let mut entries = Vec::with_capacity(8);
    s.begin_object()?;
    let mut first = true;
    while let Some(key) = s.next_key(first)? {
        first = false;
        entries.push((key.text()?, s.string()?));
    }
    Ok(Some(StringMap::from_entries(entries)))
}

/// A small value of any other type, decoded by serde from its checked text.
fn serde_value<T: DeserializeOwned>(s: &mut Scanner<'_>) -> serde_json::Result<T> {
    serde_json::from_str(s.value()?)
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
