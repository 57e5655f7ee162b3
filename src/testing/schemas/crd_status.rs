//! The `/status` write of a custom resource, validated as kube-apiserver validates it.
//!
//! Why apart from the main write: with the status subresource on, kube-apiserver builds a
//! second validator rooted at the schema's `status` property and runs only that one on a
//! `/status` write (after the metadata's update checks). Its messages name fields relative to
//! `status` (`readyReplicas in body should be greater than or equal to 0`) while the causes'
//! fields are under it (`status.readyReplicas`); the spec is not validated again (a status
//! write cannot change it). What the write takes from the body (only `status`) is decided in
//! `store.rs` before this runs; defaults and pruning apply to the whole object there too.
//!
//! The seam for `x-kubernetes-validations`: kube-apiserver runs the CEL rules of the whole
//! schema on a status write too, with the old object (transition rules), unless the errors
//! found so far include a type error. [`validate`] is the one place a `/status` write's
//! schema errors are collected; CEL belongs after the schema errors there, given `new` and
//! `old`.

use serde_json::{Map, Value};

use super::validation::FieldError;

/// The schema errors of a `/status` write: `new`'s `status` against `schema`'s `status`
/// property, fields under `status`. `old` is the object as stored (for rules that compare).
pub(crate) fn validate(
    schema: &Value,
    new: &Map<String, Value>,
    old: &Map<String, Value>,
) -> Vec<FieldError> {
    let _ = old;
    let (Some(status), Some(status_schema)) = (
        new.get("status"),
        schema.get("properties").and_then(|p| p.get("status")),
    ) else {
        return Vec::new();
    };
    super::schema::validate_value(status_schema, status)
        .into_iter()
        .map(|mut e| {
            e.field = under_status(&e.field);
            e
        })
        .collect()
}

/// A field named relative to `status`, named from the object's root.
fn under_status(field: &str) -> String {
    match field {
        "<nil>" => field.to_owned(),
        "" => "status".to_owned(),
        f if f.starts_with('[') => format!("status{f}"),
        f => format!("status.{f}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"size": {"type": "integer", "minimum": 0}}},
            "status": {"type": "object", "properties": {
                "readyReplicas": {"type": "integer", "minimum": 0},
                "conditions": {"type": "array", "items": {"type": "string"}}}}}})
    }

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn status_errors_are_named_relative_to_status() {
        let new = obj(json!({"spec": {"size": -1},
            "status": {"readyReplicas": -1, "conditions": [1]}}));
        let mut e = validate(&schema(), &new, &Map::new());
        e.sort_by(|a, b| a.field.cmp(&b.field));
        let shown: Vec<(&str, &str)> = e
            .iter()
            .map(|e| (e.field.as_str(), e.text.as_str()))
            .collect();
        assert_eq!(
            shown,
            [
                (
                    "status.conditions[0]",
                    "Invalid value: \"integer\": conditions[0] in body must be of type string: \"integer\""
                ),
                (
                    "status.readyReplicas",
                    "Invalid value: -1: readyReplicas in body should be greater than or equal to 0"
                ),
            ],
            "the spec is not validated by a status write"
        );
    }

    #[test]
    fn no_status_nothing_to_check() {
        let new = obj(json!({"spec": {"size": -1}}));
        assert!(validate(&schema(), &new, &Map::new()).is_empty());
        let bare = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        let new = obj(json!({"status": {"readyReplicas": "x"}}));
        assert!(validate(&bare, &new, &Map::new()).is_empty());
    }

    #[test]
    fn a_status_of_the_wrong_type_is_named_status() {
        let new = obj(json!({"status": "broken"}));
        let e = validate(&schema(), &new, &Map::new());
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].field, "status");
    }
}
