//! Defaults of custom resources: the `default` values of a CRD's structural schema, filled in
//! as kube-apiserver fills them.
//!
//! kube-apiserver defaults a custom resource while decoding it, whether it comes from a
//! request body or from etcd. Decoding first prunes unknown fields, then drops every `null`
//! whose field is neither `nullable` nor defaulted, then defaults. So:
//! - defaults show in the answers of creates, updates, patches (merge, JSON, apply), `/status`
//!   writes and dry runs, since each of them decodes the object it writes;
//! - an absent field with a `default` gets a copy of it, and so does a `null` on a field that
//!   is not `nullable`; a `null` on a `nullable` field is kept;
//! - the walk goes on below what it just filled in (an object default `{}` gains its fields'
//!   defaults), through `properties`, `additionalProperties` (map values) and `items`, and
//!   through the declared properties of a `x-kubernetes-preserve-unknown-fields` object;
//! - an object stored before its CRD gained a default shows it on GET, LIST and WATCH
//!   (decoding from etcd defaults too) while etcd keeps the old bytes until the next write.
//!
//! The write path calls [`apply`] on the object it is about to store (after pruning, before
//! validation: a defaulted list-map key is in place before duplicates are looked for); the
//! read paths call [`on_read`] on the stored JSON.

use serde_json::{Map, Value};

/// Whether `schema` (a version's `openAPIV3Schema`) holds a `default` anywhere a value can be
/// defaulted: reads skip the parse when it holds none.
pub(crate) fn has_defaults(schema: &Value) -> bool {
    let Some(m) = schema.as_object() else {
        return false;
    };
    if m.contains_key("default") {
        return true;
    }
    if let Some(Value::Object(props)) = m.get("properties") {
        if props.values().any(has_defaults) {
            return true;
        }
    }
    [m.get("additionalProperties"), m.get("items")]
        .into_iter()
        .flatten()
        .any(has_defaults)
}

/// Drops the non-nullable nulls without a default, then defaults: what decoding a custom
/// object of the schema `schema` does after pruning.
pub(crate) fn apply(schema: &Value, obj: &mut Map<String, Value>) {
    prune_nulls_in(schema, obj, true);
    default_in(schema, obj, true);
}

/// The stored object `json` as a read shows it: defaulted, as compact JSON; `None` when the
/// schema has no defaults or nothing changes (the stored bytes are the answer).
pub(crate) fn on_read(schema: &Value, json: &str) -> Option<String> {
    if !has_defaults(schema) {
        return None;
    }
    let mut obj: Map<String, Value> = serde_json::from_str(json).ok()?;
    let before = obj.clone();
    apply(schema, &mut obj);
    (obj != before).then(|| Value::Object(obj).to_string())
}

/// The schema of the field `key` of an object whose schema is `schema`.
fn field_schema<'s>(schema: &'s Value, key: &str) -> Option<&'s Value> {
    if let Some(s) = schema.get("properties").and_then(|p| p.get(key)) {
        return Some(s);
    }
    match schema.get("additionalProperties") {
        Some(s @ Value::Object(_)) => Some(s),
        _ => None,
    }
}

fn nullable(schema: &Value) -> bool {
    schema.get("nullable") == Some(&Value::Bool(true))
}

/// A `null` that decoding drops: its field is neither nullable nor defaulted.
fn droppable_null(v: &Value, schema: Option<&Value>) -> bool {
    v.is_null() && schema.is_some_and(|s| !nullable(s) && s.get("default").is_none())
}

/// A `null` that decoding replaces by the default: its field is not nullable.
fn defaultable_null(v: &Value, schema: &Value) -> bool {
    v.is_null() && !nullable(schema) && schema.get("default").is_some()
}

/// At the root, the type and object metadata are the server's, not the schema's: a CRD
/// cannot default them (kube-apiserver refuses such a schema).
fn is_type_or_metadata(root: bool, k: &str) -> bool {
    root && matches!(k, "apiVersion" | "kind" | "metadata")
}

fn prune_nulls_in(schema: &Value, m: &mut Map<String, Value>, root: bool) {
    m.retain(|k, v| is_type_or_metadata(root, k) || !droppable_null(v, field_schema(schema, k)));
    for (k, v) in m.iter_mut() {
        if let Some(s) = field_schema(schema, k).filter(|_| !is_type_or_metadata(root, k)) {
            prune_nulls(s, v);
        }
    }
}

fn prune_nulls(schema: &Value, v: &mut Value) {
    match v {
        Value::Object(m) => prune_nulls_in(schema, m, false),
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for item in items {
                    prune_nulls(s, item);
                }
            }
        }
        _ => {}
    }
}

fn default_in(schema: &Value, m: &mut Map<String, Value>, root: bool) {
    if let Some(Value::Object(props)) = schema.get("properties") {
        for (k, s) in props {
            let Some(d) = s.get("default").filter(|_| !is_type_or_metadata(root, k)) else {
                continue;
            };
            match m.get(k) {
                Some(v) if !defaultable_null(v, s) => {}
                _ => {
                    m.insert(k.clone(), d.clone());
                }
            }
        }
    }
    let declared = schema.get("properties").and_then(Value::as_object);
    let additional = match schema.get("additionalProperties") {
        Some(s @ Value::Object(_)) => Some(s),
        _ => None,
    };
    for (k, v) in m.iter_mut() {
        if is_type_or_metadata(root, k) {
            continue;
        }
        if let Some(s) = declared.and_then(|p| p.get(k)) {
            default_value(s, v);
        } else if let Some(s) = additional {
            if defaultable_null(v, s) {
                *v = s["default"].clone();
            }
            default_value(s, v);
        }
    }
}

fn default_value(schema: &Value, v: &mut Value) {
    match v {
        Value::Object(m) => default_in(schema, m, false),
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for item in items {
                    if defaultable_null(item, s) {
                        *item = s["default"].clone();
                    }
                    default_value(s, item);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "default": {},
        "properties": {
            "size": {"type": "integer", "default": 3},
            "owner": {"type": "string", "nullable": true, "default": "nobody"},
            "mode": {"type": "string", "default": "auto"},
            "note": {"type": "string"},
            "res": {"type": "object", "default": {},
                "properties": {"cpu": {"type": "string", "default": "100m"}}},
            "ports": {"type": "array", "items": {"type": "object",
                "properties": {"port": {"type": "integer", "default": 80}}}},
            "routes": {"type": "object", "additionalProperties": {"type": "object",
                "properties": {"weight": {"type": "integer", "default": 1}}}},
            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                "properties": {"known": {"type": "string", "default": "k"}}}
        }}}})
    }

    fn defaulted(v: Value) -> Value {
        let mut m = v.as_object().unwrap().clone();
        apply(&schema(), &mut m);
        Value::Object(m)
    }

    #[test]
    fn absent_fields_and_object_defaults_are_filled_in_below() {
        assert_eq!(
            defaulted(json!({"kind": "W"})),
            json!({"kind": "W", "spec": {"size": 3, "owner": "nobody", "mode": "auto",
                "res": {"cpu": "100m"}}})
        );
    }

    #[test]
    fn nulls_kept_on_nullable_defaulted_or_dropped_otherwise() {
        assert_eq!(
            defaulted(json!({"spec": {"owner": null, "mode": null, "note": null, "res": null}})),
            json!({"spec": {"size": 3, "owner": null, "mode": "auto", "res": {"cpu": "100m"}}})
        );
    }

    #[test]
    fn items_map_values_and_preserved_objects() {
        let got = defaulted(json!({"spec": {"ports": [{}, {"port": 1}],
            "routes": {"a": {}}, "extra": {"other": 1}}}));
        assert_eq!(got["spec"]["ports"], json!([{"port": 80}, {"port": 1}]));
        assert_eq!(got["spec"]["routes"], json!({"a": {"weight": 1}}));
        assert_eq!(got["spec"]["extra"], json!({"known": "k", "other": 1}));
    }

    #[test]
    fn reads_change_only_what_lacks_defaults() {
        let s = schema();
        assert!(has_defaults(&s));
        assert!(!has_defaults(&json!({"type": "object"})));
        let full = defaulted(json!({})).to_string();
        assert_eq!(on_read(&s, &full), None);
        assert_eq!(on_read(&s, "not json"), None);
        let read = on_read(&s, r#"{"spec":{"size":1}}"#).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&read).unwrap()["spec"]["size"],
            1
        );
    }

    #[test]
    fn the_root_metadata_is_never_defaulted() {
        let s = json!({"type": "object", "properties": {
            "metadata": {"type": "object", "default": {"name": "x"},
                "properties": {"name": {"type": "string", "default": "y"}}},
            "kind": {"type": "string", "default": "K"}}});
        let mut m = json!({"metadata": {}}).as_object().unwrap().clone();
        apply(&s, &mut m);
        assert_eq!(Value::Object(m), json!({"metadata": {}}));
        let mut m = json!({"metadata": null}).as_object().unwrap().clone();
        apply(&s, &mut m);
        assert_eq!(Value::Object(m), json!({"metadata": null}));
    }

    #[test]
    fn hostile_shapes_do_not_panic() {
        for v in [
            json!({"spec": 5}),
            json!({"spec": {"ports": "x", "routes": [1], "res": [null]}}),
            json!({"spec": {"ports": [null, 1, []]}}),
        ] {
            defaulted(v);
        }
    }
}
