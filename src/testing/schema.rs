//! Structural schemas (a CRD's `openAPIV3Schema`): which fields a custom resource declares,
//! and what values they may hold.
//!
//! kube-apiserver prunes every field a custom resource's schema does not declare (with one
//! `unknown field "spec.bogus"` warning each, or a 400 under `fieldValidation=Strict`) and
//! then validates what is left (422 `Invalid`, one cause per problem). The test server does
//! both for the schemas given with
//! [`ApiServerBuilder::custom_resource_definition`](super::ApiServerBuilder::custom_resource_definition).
//!
//! Supported: `properties`, `additionalProperties`, `items`,
//! `x-kubernetes-preserve-unknown-fields`, `type`, `minimum`/`maximum` (and their
//! `exclusive*` flags), `minLength`/`maxLength`, `minItems`/`maxItems`, `enum` and
//! `required`. Not supported (accepted without a check): `pattern`, `format`,
//! `x-kubernetes-validations` (CEL), `oneOf`/`anyOf`/`allOf`/`not`, defaults.

use serde_json::{Map, Value};

use super::validation::FieldError;

fn preserves_unknown(schema: &Value) -> bool {
    schema["x-kubernetes-preserve-unknown-fields"] == true
}

/// The schema of the field `key` of an object whose schema is `schema`, if it declares one.
fn field_schema<'s>(schema: &'s Value, key: &str) -> Option<&'s Value> {
    if let Some(s) = schema.get("properties").and_then(|p| p.get(key)) {
        return Some(s);
    }
    match schema.get("additionalProperties") {
        Some(s @ Value::Object(_)) => Some(s),
        _ => None,
    }
}

/// The undeclared fields of a custom object (`apiVersion`, `kind` and `metadata` are always
/// declared; metadata is checked apart), as dotted paths, sorted; with `drop`, they are also
/// taken out.
pub(crate) fn unknown_fields(
    schema: &Value,
    obj: &mut Map<String, Value>,
    drop: bool,
) -> Vec<String> {
    let mut unknown = Vec::new();
    let keys: Vec<String> = obj.keys().cloned().collect();
    for k in keys {
        if matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        match field_schema(schema, &k) {
            Some(s) => {
                if let Some(v) = obj.get_mut(&k) {
                    prune_value(s, v, &k, &mut unknown, drop);
                }
            }
            None if preserves_unknown(schema) => {}
            None => {
                if drop {
                    obj.remove(&k);
                }
                unknown.push(k);
            }
        }
    }
    unknown.sort();
    unknown
}

fn prune_value(schema: &Value, v: &mut Value, path: &str, unknown: &mut Vec<String>, drop: bool) {
    match v {
        Value::Object(m) => {
            if preserves_unknown(schema) && schema.get("properties").is_none() {
                return;
            }
            // An embedded resource keeps its own `apiVersion`, `kind` and `metadata` (see
            // `crd_embedded.rs`).
            let embedded = schema["x-kubernetes-embedded-resource"] == true;
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                if embedded && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                let child = format!("{path}.{k}");
                match field_schema(schema, &k) {
                    Some(s) => {
                        if let Some(x) = m.get_mut(&k) {
                            prune_value(s, x, &child, unknown, drop);
                        }
                    }
                    None if preserves_unknown(schema) => {}
                    None => {
                        if drop {
                            m.remove(&k);
                        }
                        unknown.push(child);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    prune_value(s, item, &format!("{path}[{i}]"), unknown, drop);
                }
            }
        }
        _ => {}
    }
}

/// The name of a JSON value's type, as the server's messages put it.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn has_type(v: &Value, ty: &str) -> bool {
    match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        _ => true,
    }
}

/// The problems of a custom object's values against its schema (the fields below the top
/// level; metadata is checked apart).
pub(crate) fn validate(schema: &Value, obj: &Map<String, Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (k, v) in obj {
        if matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        if let Some(s) = field_schema(schema, k) {
            check(s, v, k, &mut errors);
        }
    }
    required(schema, obj, "", &mut errors);
    errors
}

fn required(schema: &Value, m: &Map<String, Value>, path: &str, errors: &mut Vec<FieldError>) {
    for r in schema["required"].as_array().into_iter().flatten() {
        if let Some(r) = r.as_str() {
            if !m.contains_key(r) {
                let field = if path.is_empty() {
                    r.to_owned()
                } else {
                    format!("{path}.{r}")
                };
                errors.push(FieldError::required(&field, ""));
            }
        }
    }
}

fn check(schema: &Value, v: &Value, path: &str, errors: &mut Vec<FieldError>) {
    if v.is_null() {
        return;
    }
    if let Some(ty) = schema["type"].as_str() {
        if !has_type(v, ty) {
            let given = Value::from(type_name(v));
            errors.push(FieldError::type_invalid(
                path,
                &given,
                &format!("{path} in body must be of type {ty}: {given}"),
            ));
            return;
        }
    }
    if let Some(n) = v.as_f64() {
        let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
        let shown = |key: &str| schema[key].to_string();
        if let Some(min) = bound("minimum") {
            let exclusive = schema["exclusiveMinimum"] == true;
            if n < min || (exclusive && n == min) {
                let rel = if exclusive {
                    "greater than"
                } else {
                    "greater than or equal to"
                };
                errors.push(FieldError::invalid(
                    path,
                    v,
                    &format!("{path} in body should be {rel} {}", shown("minimum")),
                ));
            }
        }
        if let Some(max) = bound("maximum") {
            let exclusive = schema["exclusiveMaximum"] == true;
            if n > max || (exclusive && n == max) {
                let rel = if exclusive {
                    "less than"
                } else {
                    "less than or equal to"
                };
                errors.push(FieldError::invalid(
                    path,
                    v,
                    &format!("{path} in body should be {rel} {}", shown("maximum")),
                ));
            }
        }
    }
    if let Some(s) = v.as_str() {
        let len = s.chars().count() as u64;
        if let Some(min) = schema["minLength"].as_u64().filter(|m| len < *m) {
            errors.push(FieldError::invalid(
                path,
                v,
                &format!("{path} in body should be at least {min} chars long"),
            ));
        }
        if let Some(max) = schema["maxLength"].as_u64().filter(|m| len > *m) {
            errors.push(FieldError {
                reason: "FieldValueTooLong",
                field: path.to_owned(),
                text: format!("Too long: may not be more than {max} bytes"),
            });
        }
    }
    if let Some(allowed) = schema["enum"].as_array() {
        if !allowed.contains(v) {
            let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
            errors.push(FieldError {
                reason: "FieldValueNotSupported",
                field: path.to_owned(),
                text: format!(
                    "Unsupported value: {v}: supported values: {}",
                    list.join(", ")
                ),
            });
        }
    }
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if let Some(s) = field_schema(schema, k) {
                    check(s, x, &format!("{path}.{k}"), errors);
                }
            }
            required(schema, m, path, errors);
        }
        Value::Array(items) => {
            let n = items.len() as u64;
            if let Some(min) = schema["minItems"].as_u64().filter(|m| n < *m) {
                errors.push(FieldError::invalid(
                    path,
                    v,
                    &format!("{path} in body should have at least {min} items"),
                ));
            }
            if let Some(max) = schema["maxItems"].as_u64().filter(|m| n > *m) {
                errors.push(FieldError {
                    reason: "FieldValueTooMany",
                    field: path.to_owned(),
                    text: format!("Too many: {n}: must have at most {max} items"),
                });
            }
            if let Some(s) = schema.get("items") {
                for (i, x) in items.iter().enumerate() {
                    check(s, x, &format!("{path}[{i}]"), errors);
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

    fn gadget() -> Value {
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "required": ["size"], "properties": {
                "size": {"type": "integer", "minimum": 0},
                "color": {"type": "string", "enum": ["red", "blue"]},
                "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
            "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}})
    }

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn prunes_what_the_schema_does_not_declare() {
        let mut o = obj(
            json!({"apiVersion": "g/v1", "kind": "Gadget", "metadata": {"name": "a"},
            "spec": {"size": 1, "bogus": 1, "labels": {"x": "y"}, "free": {"any": {"thing": 1}}},
            "top": 1}),
        );
        let unknown = unknown_fields(&gadget(), &mut o, true);
        assert_eq!(unknown, ["spec.bogus", "top"]);
        assert_eq!(
            Value::Object(o),
            json!({"apiVersion": "g/v1", "kind": "Gadget", "metadata": {"name": "a"},
                "spec": {"size": 1, "labels": {"x": "y"}, "free": {"any": {"thing": 1}}}})
        );
    }

    #[test]
    fn validates_values() {
        let fields = |v: Value| -> Vec<(String, &'static str)> {
            validate(&gadget(), &obj(v))
                .into_iter()
                .map(|e| (e.field, e.reason))
                .collect()
        };
        assert!(fields(json!({"spec": {"size": 0, "color": "red"}})).is_empty());
        assert_eq!(
            fields(json!({"spec": {"size": -1}})),
            [("spec.size".into(), "FieldValueInvalid")]
        );
        assert_eq!(
            fields(json!({"spec": {"size": "big"}})),
            [("spec.size".into(), "FieldValueTypeInvalid")]
        );
        assert_eq!(
            fields(json!({"spec": {}})),
            [("spec.size".into(), "FieldValueRequired")]
        );
        assert_eq!(
            fields(json!({"spec": {"size": 1, "color": "green", "tags": ["a", "b", 3]}})),
            [
                ("spec.color".into(), "FieldValueNotSupported"),
                ("spec.tags".into(), "FieldValueTooMany"),
                ("spec.tags[2]".into(), "FieldValueTypeInvalid")
            ]
        );
        let e = &validate(&gadget(), &obj(json!({"spec": {"size": -1}})))[0];
        assert_eq!(
            e.text,
            "Invalid value: -1: spec.size in body should be greater than or equal to 0"
        );
    }
}
