//! `managedFields` kept, in a fraction of the memory, for k8s-openapi's types (feature
//! `k8s-openapi`).
//!
//! Why: k8s-openapi's `FieldsV1` is a `serde_json::Value`, and serde_json's `Map` is a
//! `BTreeMap` whose smallest allocation is a whole leaf node of eleven slots (632 bytes). A
//! field set is a tree of small maps, most of one to five members, so a pod's two or three
//! `fieldsV1` documents of 1–4 KB of JSON become 15–40 KB of heap: more than the rest of the
//! typed pod (`cargo bench --bench typed_memory --features k8s-openapi,k8s-openapi/v1_35`
//! shows it field by field). client-go keeps those documents as raw bytes. No way of
//! building the same `Value` allocates less (a `BTreeMap` cannot shrink its nodes), so the
//! tree itself has to go: [`compact_managed_fields`] keeps each `fieldsV1` as its JSON text,
//! a `Value::String`, allocated at its length. Everything else in the object, and every other
//! member of each `managedFields` entry (manager, operation, time, subresource), is unchanged.
//!
//! The price is the shape of one field: code that reads `fieldsV1` of a cached object finds
//! a string where the server sent an object. [`fields_v1_tree`] gives the tree back from
//! either form, and [`expand_managed_fields`] puts the trees back in a copy of an object
//! (before sending it to the server, say: kube-apiserver expects an object there).

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    FieldsV1, ManagedFieldsEntry, ObjectMeta as K8sObjectMeta,
};
use serde_json::Value;

use super::catch::Transform;
use crate::api::Object;

/// A ready [`Transform`] for k8s-openapi objects: keeps `metadata.managedFields`, each
/// `fieldsV1` as its JSON text (a `Value::String`) instead of a tree of maps.
///
/// Why: k8s-openapi's `FieldsV1` is a `serde_json::Value` whose maps are `BTreeMap`s, each
/// allocating a whole node of eleven slots, so a pod's field sets take more heap than the
/// rest of the pod; client-go keeps them as raw bytes. For a realistic pod with two managers
/// the text is ~2.7 KB instead of ~17 KB (`cargo bench --bench typed_memory --features
/// k8s-openapi,k8s-openapi/v1_35`). What changes: code that reads a cached `fieldsV1` finds
/// a string where the server sent an object ([`fields_v1_tree`] reads either), and an object
/// from the cache must get its trees back ([`expand_managed_fields`]) before it is sent to
/// the server, which expects an object there. Every other field is unchanged. Objects without
/// `managedFields` (stripped, say, with
/// [`ReflectorConfig::strip_managed_fields`](super::ReflectorConfig::strip_managed_fields))
/// are left as they are.
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kube_informer::cache::{compact_managed_fields, fields_v1_tree, InformerConfig};
///
/// let config = InformerConfig::<Pod>::new().transform(compact_managed_fields());
/// # drop(config);
///
/// // What the transform does to one pod.
/// let mut pod: Pod = serde_json::from_value(serde_json::json!({
///     "metadata": {"name": "web", "managedFields": [{
///         "manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1",
///         "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}}]}
/// }))?;
/// let tree = pod.metadata.managed_fields.as_ref().unwrap()[0].fields_v1.clone().unwrap().0;
/// (compact_managed_fields::<Pod>())(&mut pod);
/// let entry = &pod.metadata.managed_fields.as_ref().unwrap()[0];
/// assert_eq!(entry.manager.as_deref(), Some("kubectl"));
/// assert!(entry.fields_v1.as_ref().unwrap().0.is_string());
/// assert_eq!(fields_v1_tree(entry), Some(tree));
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn compact_managed_fields<K>() -> Transform<K>
where
    K: Object<Meta = K8sObjectMeta>,
{
    Arc::new(|o: &mut K| compact_fields_v1(o.metadata_mut()))
}

/// Replaces every `fieldsV1` tree of `meta` by its JSON text (what
/// [`compact_managed_fields`] does to each object).
pub fn compact_fields_v1(meta: &mut K8sObjectMeta) {
    for entry in meta.managed_fields.iter_mut().flatten() {
        if let Some(FieldsV1(fields)) = entry.fields_v1.as_mut() {
            // Only trees: a string is already compact (and a server never sends one).
            if fields.is_object() || fields.is_array() {
                let mut text = fields.to_string();
                text.shrink_to_fit();
                *fields = Value::String(text);
            }
        }
    }
}

/// Puts back the trees that [`compact_fields_v1`] turned into text, so that the object is
/// again as the server sent it (do it on your copy before writing the object back). A text
/// that is not a JSON object or array is left as it is.
pub fn expand_managed_fields(meta: &mut K8sObjectMeta) {
    for entry in meta.managed_fields.iter_mut().flatten() {
        if let Some(FieldsV1(fields)) = entry.fields_v1.as_mut() {
            if let Some(tree) = tree_of_text(fields) {
                *fields = tree;
            }
        }
    }
}

/// The field set of one `managedFields` entry as a tree, whether it is held as one (as the
/// server sent it) or as text (after [`compact_managed_fields`]). `None` when the entry has
/// no `fieldsV1`.
pub fn fields_v1_tree(entry: &ManagedFieldsEntry) -> Option<Value> {
    let FieldsV1(fields) = entry.fields_v1.as_ref()?;
    Some(tree_of_text(fields).unwrap_or_else(|| fields.clone()))
}

/// The tree a compacted `fieldsV1` holds as text; `None` for anything else.
fn tree_of_text(fields: &Value) -> Option<Value> {
    let text = fields.as_str()?;
    match serde_json::from_str::<Value>(text) {
        Ok(tree) if tree.is_object() || tree.is_array() => Some(tree),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    fn pod(fields: Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "web", "managedFields": [
            {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
             "time": "2026-11-20T10:00:01Z", "fieldsType": "FieldsV1", "fieldsV1": fields},
            {"manager": "kubelet", "operation": "Update", "subresource": "status"}
        ]}}))
        .unwrap()
    }

    #[test]
    fn compacting_then_expanding_gives_back_the_object_the_server_sent() {
        let fields = json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}, "f:a\"b\\c": {}}},
                            "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}}}}});
        let original = pod(fields.clone());
        let mut p = original.clone();
        compact_managed_fields::<Pod>()(&mut p);
        let entries = p.metadata.managed_fields.as_ref().unwrap();
        match &entries[0].fields_v1.as_ref().unwrap().0 {
            Value::String(text) => assert_eq!(text.len(), text.capacity(), "at its length"),
            other => panic!("not compacted: {other}"),
        }
        assert_eq!(fields_v1_tree(&entries[0]), Some(fields));
        assert_eq!(fields_v1_tree(&entries[1]), None);
        assert_eq!(
            entries[0].manager.as_deref(),
            Some("kube-controller-manager")
        );
        assert_eq!(entries[1].subresource.as_deref(), Some("status"));
        assert_ne!(p, original);

        // Twice is once.
        let once = p.clone();
        compact_fields_v1(&mut p.metadata);
        assert_eq!(p, once);

        expand_managed_fields(&mut p.metadata);
        assert_eq!(p, original);
        expand_managed_fields(&mut p.metadata);
        assert_eq!(p, original);
    }

    #[test]
    fn strings_that_hold_no_tree_are_left_alone() {
        for odd in [
            json!("not json"),
            json!("\"a string\""),
            json!("7"),
            json!(""),
        ] {
            let original = pod(odd);
            let mut p = original.clone();
            compact_fields_v1(&mut p.metadata);
            expand_managed_fields(&mut p.metadata);
            assert_eq!(p, original);
            let entry = &p.metadata.managed_fields.as_ref().unwrap()[0];
            assert_eq!(
                fields_v1_tree(entry),
                entry.fields_v1.as_ref().map(|f| f.0.clone())
            );
        }
        // A tree deeper than serde_json reads back stays text rather than being lost.
        let mut deep = Value::Object(Default::default());
        for _ in 0..200 {
            deep = json!({ "f:x": deep });
        }
        let mut p = Pod::default();
        p.metadata.managed_fields = Some(vec![ManagedFieldsEntry {
            fields_v1: Some(FieldsV1(Value::String(deep.to_string()))),
            ..Default::default()
        }]);
        let before = p.clone();
        expand_managed_fields(&mut p.metadata);
        assert_eq!(p, before);
    }

    #[test]
    fn objects_without_managed_fields_are_unchanged() {
        let mut p = Pod::default();
        compact_managed_fields::<Pod>()(&mut p);
        assert_eq!(p, Pod::default());
        p.metadata.managed_fields = Some(vec![ManagedFieldsEntry::default()]);
        let before = p.clone();
        compact_managed_fields::<Pod>()(&mut p);
        assert_eq!(p, before);
    }
}
