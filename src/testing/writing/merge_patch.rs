//! RFC 7386 JSON merge patch, as kube-apiserver applies `application/merge-patch+json`
//! (and as the store merges a write's options into an object). A leaf: the store and the
//! patch room both use it.

use serde_json::{Map, Value};

/// RFC 7386 JSON merge patch: objects merge key by key, `null` deletes, anything else
/// (lists included) replaces.
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(t) = target else { return };
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}
