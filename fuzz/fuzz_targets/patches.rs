//! The test API server's patch engines never panic, whatever the object and the patch:
//! JSON patch (RFC 6902), strategic merge patch, and the managed-fields bookkeeping of a
//! write. The input is a JSON array `[object, patch]`; anything else is skipped.
//!
//! Also checked: a JSON patch that succeeded leaves a document that passes a `test` of the
//! whole of it; an empty strategic merge patch changes nothing; the field sets a write
//! records survive their `fieldsV1` encoding.
#![no_main]
#![allow(dead_code)]

#[path = "../../src/testing/writing/json_patch.rs"]
mod json_patch;
#[path = "../../src/testing/writing/managed_fields.rs"]
mod managed_fields;
#[path = "../../src/testing/writing/strategic_merge.rs"]
mod strategic_merge;

use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

fuzz_target!(|data: &[u8]| {
    let Ok(Value::Array(pair)) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let [doc, patch] = <[Value; 2]>::try_from(pair).unwrap_or([Value::Null, Value::Null]);
    if let Ok(out) = json_patch::apply(&doc, &patch) {
        let whole = json!([{"op": "test", "path": "", "value": out.clone()}]);
        assert!(
            json_patch::apply(&out, &whole).is_ok(),
            "test of the result failed"
        );
    }
    if let Ok(out) = strategic_merge::apply(&doc, &patch) {
        assert!(out.is_object());
    }
    if doc.is_object() {
        assert_eq!(
            strategic_merge::apply(&doc, &json!({})).ok(),
            Some(doc.clone())
        );
    }
    for builtin in [true, false] {
        let schema = managed_fields::Schema { builtin };
        let d = managed_fields::diff(schema, Some(&doc), &patch);
        for set in [&d.changed, &d.removed] {
            let back = managed_fields::FieldSet::from_fields_v1(&set.to_fields_v1());
            assert_eq!(&back, set, "fieldsV1 round trip");
        }
        let w = managed_fields::Writer {
            manager: "fuzz".into(),
            subresource: String::new(),
            api_version: "v1".into(),
            schema,
            time: "2026-01-01T00:00:00Z".into(),
        };
        let mut new = patch.clone();
        managed_fields::record_update(Some(&doc), &mut new, &w);
        let mut again = new.clone();
        managed_fields::record_update(Some(&new), &mut again, &w);
    }
});
