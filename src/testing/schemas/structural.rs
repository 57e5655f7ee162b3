//! Whether a CRD's `openAPIV3Schema` is *structural*: the checks kube-apiserver makes when a
//! `apiextensions.k8s.io/v1` CustomResourceDefinition is created or updated, refused with a
//! 422 that lists each problem under its field path
//! (`spec.versions[0].schema.openAPIV3Schema.properties[spec].type`).
//!
//! As in kube-apiserver's `structuralschema` and CRD validation:
//! - every node that is a field (`properties`, `additionalProperties`) or an array's `items`
//!   has a `type`, unless it has `x-kubernetes-int-or-string` or
//!   `x-kubernetes-preserve-unknown-fields`; the root is `type: object` and has no
//!   `additionalProperties`; an array has `items`;
//! - inside `allOf`, `anyOf`, `oneOf` and `not` only value validations: no `type`,
//!   `description`, `title`, `nullable`, `default`, `additionalProperties` and no
//!   `x-kubernetes-*` (the integer-or-string `anyOf` excepted), no `metadata`, and every
//!   field they name also declared outside them;
//! - `metadata` at the root restricts at most `name` and `generateName`;
//! - `$ref`, `uniqueItems: true`, `items` as a list, `properties` beside
//!   `additionalProperties`, and `x-kubernetes-preserve-unknown-fields: false` are refused.
//!
//! - list and map types (`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`,
//!   `x-kubernetes-map-type`) usable as kube-apiserver requires: see `list_types.rs`.
//!
//! Not checked: defaults against the schema, `pattern` syntax, formats. CEL rules are
//! checked in `crd_cel.rs` (`check_rules`).

use serde_json::{Map, Value};

use super::validation::FieldError;

#[derive(Clone, Copy, PartialEq)]
enum Level {
    Root,
    Item,
    Field,
}

/// The problems of `schema` (a version's `openAPIV3Schema`), whose path is `path`.
pub(crate) fn check(schema: &Value, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    match schema {
        Value::Object(m) => node(m, path, Level::Root, &mut errors),
        _ => errors.push(FieldError::required(path, "schemas are required")),
    }
    errors.sort_by(|a, b| a.field.cmp(&b.field).then(a.text.cmp(&b.text)));
    errors
}

fn key(path: &str, k: &str) -> String {
    format!("{path}.properties[{k}]")
}

fn is_true(m: &Map<String, Value>, k: &str) -> bool {
    m.get(k) == Some(&Value::Bool(true))
}

fn forbidden_everywhere(m: &Map<String, Value>, path: &str, errors: &mut Vec<FieldError>) {
    if m.contains_key("$ref") {
        errors.push(FieldError::forbidden(
            &format!("{path}.$ref"),
            "$ref is not supported",
        ));
    }
    if is_true(m, "uniqueItems") {
        errors.push(FieldError::forbidden(
            &format!("{path}.uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    if m.get("items").is_some_and(Value::is_array) {
        errors.push(FieldError::forbidden(
            &format!("{path}.items"),
            "items must be a schema object and not an array",
        ));
    }
    if m.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        errors.push(FieldError::invalid(
            &format!("{path}.x-kubernetes-preserve-unknown-fields"),
            &Value::Bool(false),
            "must be true or undefined",
        ));
    }
}

fn node(m: &Map<String, Value>, path: &str, level: Level, errors: &mut Vec<FieldError>) {
    forbidden_everywhere(m, path, errors);
    errors.extend(super::list_types::check_schema(m, path));
    let ty = m.get("type").and_then(Value::as_str).unwrap_or("");
    let props = m.get("properties").and_then(Value::as_object);
    if let Some(ap) = m.get("additionalProperties") {
        if props.is_some_and(|p| !p.is_empty()) {
            errors.push(FieldError::forbidden(
                &format!("{path}.additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if level == Level::Root {
            errors.push(FieldError::forbidden(
                &format!("{path}.additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let Value::Object(ap) = ap {
            node(
                ap,
                &format!("{path}.additionalProperties"),
                Level::Field,
                errors,
            );
        }
    }
    if ty == "array" && !m.contains_key("items") {
        errors.push(FieldError::required(
            &format!("{path}.items"),
            "must be specified",
        ));
    }
    if let Some(Value::Object(items)) = m.get("items") {
        node(items, &format!("{path}.items"), Level::Item, errors);
    }
    for (k, p) in props.into_iter().flatten() {
        if let Value::Object(p) = p {
            node(p, &key(path, k), Level::Field, errors);
        }
    }
    let int_or_string = is_true(m, "x-kubernetes-int-or-string");
    if ty.is_empty() && !int_or_string && !is_true(m, "x-kubernetes-preserve-unknown-fields") {
        let detail = match level {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errors.push(FieldError::required(&format!("{path}.type"), detail));
    }
    if level == Level::Root && !ty.is_empty() && ty != "object" {
        errors.push(FieldError::invalid(
            &format!("{path}.type"),
            &Value::from(ty),
            "must be object at the root",
        ));
    }
    if level == Level::Root {
        if let Some(Value::Object(meta)) = props.and_then(|p| p.get("metadata")) {
            let allowed = meta.iter().all(|(k, v)| match k.as_str() {
                "type" => v == "object",
                "properties" => v
                    .as_object()
                    .is_some_and(|p| p.keys().all(|k| k == "name" || k == "generateName")),
                _ => false,
            });
            if !allowed {
                errors.push(FieldError::forbidden(
                    &key(path, "metadata"),
                    "must not specify anything other than name and generateName, but metadata is implicitly specified",
                ));
            }
        }
    }
    for junctor in ["allOf", "anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = m.get(junctor) else {
            continue;
        };
        if junctor == "anyOf" && is_int_or_string_any_of(branches) {
            continue;
        }
        for (i, b) in branches.iter().enumerate() {
            if let Value::Object(b) = b {
                let bp = format!("{path}.{junctor}[{i}]");
                nested(b, &bp, errors);
                complete(b, m, path, &bp, errors);
            }
        }
    }
    if let Some(Value::Object(not)) = m.get("not") {
        let np = format!("{path}.not");
        nested(not, &np, errors);
        complete(not, m, path, &np, errors);
    }
}

fn is_int_or_string_any_of(branches: &[Value]) -> bool {
    branches.len() == 2
        && branches[0] == serde_json::json!({"type": "integer"})
        && branches[1] == serde_json::json!({"type": "string"})
}

/// A schema under a logic junctor: value validations only.
fn nested(m: &Map<String, Value>, path: &str, errors: &mut Vec<FieldError>) {
    forbidden_everywhere(m, path, errors);
    let empty = |k: &str, detail: &str, errors: &mut Vec<FieldError>| {
        if m.contains_key(k) {
            errors.push(FieldError::forbidden(&format!("{path}.{k}"), detail));
        }
    };
    empty("type", "must be empty to be structural", errors);
    empty(
        "additionalProperties",
        "must be undefined to be structural",
        errors,
    );
    empty("default", "must be undefined to be structural", errors);
    empty("title", "must be empty to be structural", errors);
    empty("description", "must be empty to be structural", errors);
    if is_true(m, "nullable") {
        errors.push(FieldError::forbidden(
            &format!("{path}.nullable"),
            "must be false to be structural",
        ));
    }
    for x in [
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    ] {
        if is_true(m, x) {
            errors.push(FieldError::forbidden(
                &format!("{path}.{x}"),
                "must be false to be structural",
            ));
        }
    }
    if m.contains_key("x-kubernetes-list-type") {
        errors.push(FieldError::forbidden(
            &format!("{path}.x-kubernetes-list-type"),
            "must be undefined to be structural",
        ));
    }
    if let Some(Value::Object(props)) = m.get("properties") {
        if props.contains_key("metadata") {
            errors.push(FieldError::forbidden(
                &key(path, "metadata"),
                "must not be specified in a nested context",
            ));
        }
        for (k, p) in props {
            if let Value::Object(p) = p {
                nested(p, &key(path, k), errors);
            }
        }
    }
    if let Some(Value::Object(items)) = m.get("items") {
        nested(items, &format!("{path}.items"), errors);
    }
    for junctor in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = m.get(junctor) {
            for (i, b) in branches.iter().enumerate() {
                if let Value::Object(b) = b {
                    nested(b, &format!("{path}.{junctor}[{i}]"), errors);
                }
            }
        }
    }
}

/// Every field a junctor's branch `v` names must be declared by the structural node `s`.
fn complete(
    v: &Map<String, Value>,
    s: &Map<String, Value>,
    s_path: &str,
    v_path: &str,
    errors: &mut Vec<FieldError>,
) {
    if let Some(Value::Object(props)) = v.get("properties") {
        let declared = s.get("properties").and_then(Value::as_object);
        for (k, vf) in props {
            match declared.and_then(|d| d.get(k)).and_then(Value::as_object) {
                Some(sf) => {
                    if let Value::Object(vf) = vf {
                        complete(vf, sf, &key(s_path, k), &key(v_path, k), errors);
                    }
                }
                None => errors.push(FieldError::required(
                    &key(s_path, k),
                    &format!("because it is defined in {}", key(v_path, k)),
                )),
            }
        }
    }
    if let Some(Value::Object(vi)) = v.get("items") {
        match s.get("items").and_then(Value::as_object) {
            Some(si) => complete(
                vi,
                si,
                &format!("{s_path}.items"),
                &format!("{v_path}.items"),
                errors,
            ),
            None => errors.push(FieldError::required(
                &format!("{s_path}.items"),
                &format!("because it is defined in {v_path}.items"),
            )),
        }
    }
    for junctor in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = v.get(junctor) {
            for (i, b) in branches.iter().enumerate() {
                if let Value::Object(b) = b {
                    complete(b, s, s_path, &format!("{v_path}.{junctor}[{i}]"), errors);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(schema: Value) -> Vec<(String, &'static str)> {
        check(&schema, "s")
            .into_iter()
            .map(|e| (e.field, e.reason))
            .collect()
    }

    #[test]
    fn a_structural_schema_passes() {
        let ok = json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}},
            "spec": {"type": "object", "required": ["a"], "properties": {
                "a": {"type": "string", "nullable": true, "enum": ["x", "y"]},
                "port": {"x-kubernetes-int-or-string": true,
                         "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "free": {"x-kubernetes-preserve-unknown-fields": true},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "list": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}},
                "mode": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
                         "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}}}}});
        assert_eq!(fields(ok), []);
    }

    #[test]
    fn what_kube_apiserver_refuses_is_refused() {
        let bad = json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}},
            "spec": {"type": "object", "properties": {
                "untyped": {"description": "no type"},
                "ref": {"$ref": "#/definitions/X"},
                "set": {"type": "array", "uniqueItems": true, "items": {"type": "string"}},
                "noitems": {"type": "array"},
                "both": {"type": "object", "properties": {"a": {"type": "string"}},
                         "additionalProperties": {"type": "string"}},
                "enum": {"oneOf": [{"type": "string", "enum": ["a"]}, {"type": "object",
                          "properties": {"b": {"type": "string"}}}]}}}}});
        assert_eq!(
            fields(bad),
            [
                ("s.properties[metadata]".into(), "FieldValueForbidden"),
                (
                    "s.properties[spec].properties[both].additionalProperties".into(),
                    "FieldValueForbidden"
                ),
                (
                    "s.properties[spec].properties[enum].oneOf[0].type".into(),
                    "FieldValueForbidden"
                ),
                (
                    "s.properties[spec].properties[enum].oneOf[1].properties[b].type".into(),
                    "FieldValueForbidden"
                ),
                (
                    "s.properties[spec].properties[enum].oneOf[1].type".into(),
                    "FieldValueForbidden"
                ),
                (
                    "s.properties[spec].properties[enum].properties[b]".into(),
                    "FieldValueRequired"
                ),
                (
                    "s.properties[spec].properties[enum].type".into(),
                    "FieldValueRequired"
                ),
                (
                    "s.properties[spec].properties[noitems].items".into(),
                    "FieldValueRequired"
                ),
                (
                    "s.properties[spec].properties[ref].$ref".into(),
                    "FieldValueForbidden"
                ),
                (
                    "s.properties[spec].properties[ref].type".into(),
                    "FieldValueRequired"
                ),
                (
                    "s.properties[spec].properties[set].uniqueItems".into(),
                    "FieldValueForbidden"
                ),
                (
                    "s.properties[spec].properties[untyped].type".into(),
                    "FieldValueRequired"
                ),
            ]
        );
        assert_eq!(
            fields(json!({"type": "string"})),
            [("s.type".into(), "FieldValueInvalid")]
        );
        assert_eq!(
            fields(json!({"properties": {}})),
            [("s.type".into(), "FieldValueRequired")]
        );
    }
}
