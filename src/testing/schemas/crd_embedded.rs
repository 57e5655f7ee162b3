//! Embedded resources in a custom resource: a schema node with
//! `x-kubernetes-embedded-resource: true` holds a whole Kubernetes object (a pod template, a
//! manifest), as kube-apiserver 1.36 treats it (`crd-matrix.json`, group `pruning`):
//! - its `apiVersion`, `kind` and `metadata` are kept without being declared (pruning skips
//!   them: see `schema.rs`), and the fields of that `metadata` that `ObjectMeta` does not
//!   have are pruned, each with its `unknown field "spec.template.metadata.bogus"` warning,
//!   listed after the others (the real server prunes that metadata in a later pass);
//! - `apiVersion` and `kind` are required (422, `Required value` each);
//! - the embedded `metadata` is not validated (a `name` of `Bad_Name` is accepted).

use serde_json::{Map, Value};

use super::validation::FieldError;

fn is_embedded(schema: &Value) -> bool {
    schema.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true))
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

/// Calls `f(path, object)` for every embedded resource of `obj` (the root object, whose
/// schema is `schema`), outermost first.
fn each_embedded(
    schema: &Value,
    obj: &mut Map<String, Value>,
    path: &str,
    f: &mut dyn FnMut(&str, &mut Map<String, Value>),
) {
    if is_embedded(schema) {
        f(path, obj);
    }
    for (k, v) in obj.iter_mut() {
        if path.is_empty() && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        if let Some(s) = field_schema(schema, k) {
            let child = if path.is_empty() {
                k.clone()
            } else {
                format!("{path}.{k}")
            };
            each_in_value(s, v, &child, f);
        }
    }
}

fn each_in_value(
    schema: &Value,
    v: &mut Value,
    path: &str,
    f: &mut dyn FnMut(&str, &mut Map<String, Value>),
) {
    match v {
        Value::Object(m) => each_embedded(schema, m, path, f),
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    each_in_value(s, item, &format!("{path}[{i}]"), f);
                }
            }
        }
        _ => {}
    }
}

/// The fields of the embedded resources' `metadata` that `ObjectMeta` does not have, as
/// paths, sorted; with `drop`, they are also taken out.
pub(crate) fn unknown_metadata(
    schema: &Value,
    obj: &mut Map<String, Value>,
    drop: bool,
    object_meta: &[&str],
) -> Vec<String> {
    let mut unknown = Vec::new();
    each_embedded(schema, obj, "", &mut |path, o| {
        if path.is_empty() {
            return;
        }
        if let Some(Value::Object(meta)) = o.get_mut("metadata") {
            let extra: Vec<String> = meta
                .keys()
                .filter(|k| !object_meta.contains(&k.as_str()))
                .cloned()
                .collect();
            for k in extra {
                if drop {
                    meta.remove(&k);
                }
                unknown.push(format!("{path}.metadata.{k}"));
            }
        }
    });
    unknown.sort();
    unknown
}

/// An embedded resource without `apiVersion` or `kind`: one `Required value` each.
pub(crate) fn validate(schema: &Value, obj: &Map<String, Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut copy = obj.clone();
    each_embedded(schema, &mut copy, "", &mut |path, o| {
        if path.is_empty() {
            return;
        }
        for k in ["apiVersion", "kind"] {
            if !o.contains_key(k) {
                errors.push(FieldError {
                    reason: "FieldValueRequired",
                    field: format!("{path}.{k}"),
                    text: "Required value".into(),
                });
            }
        }
    });
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                "properties": {"spec": {"type": "object"}}},
            "list": {"type": "array", "items": {"type": "object",
                "x-kubernetes-embedded-resource": true}}}}}})
    }

    #[test]
    fn embedded_metadata_is_pruned_and_kind_required() {
        let mut o = json!({"spec": {
            "template": {"apiVersion": "v1", "kind": "Foo", "metadata": {"name": "t", "bogus": 1}},
            "list": [{"metadata": {"x": 1}}]}})
        .as_object()
        .unwrap()
        .clone();
        let fields: Vec<String> = validate(&schema(), &o)
            .into_iter()
            .map(|e| format!("{}: {}", e.field, e.text))
            .collect();
        assert_eq!(
            fields,
            [
                "spec.list[0].apiVersion: Required value",
                "spec.list[0].kind: Required value"
            ]
        );
        assert_eq!(
            unknown_metadata(&schema(), &mut o, true, &["name"]),
            ["spec.list[0].metadata.x", "spec.template.metadata.bogus"]
        );
        assert_eq!(o["spec"]["template"]["metadata"], json!({"name": "t"}));
    }

    #[test]
    fn hostile_shapes_do_not_panic() {
        for v in [
            json!({"spec": {"template": 1, "list": {"a": 1}}}),
            json!({"spec": {"template": {"metadata": [1]}, "list": [null, 2]}}),
        ] {
            let mut o = v.as_object().unwrap().clone();
            validate(&schema(), &o);
            unknown_metadata(&schema(), &mut o, true, &[]);
        }
    }
}
