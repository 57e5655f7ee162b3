//! List types of custom resources (`x-kubernetes-list-type`): the uniqueness a `set` or a
//! `map` list promises, checked on every write as kube-apiserver checks it.
//!
//! Why a file of its own: the rule is not part of the OpenAPI validator (`schema.rs`) but a
//! separate pass kube-apiserver runs after it (and after the embedded-resource checks), with
//! its own walk and its own way of comparing values:
//! - a `set` list may not hold the same value twice: each repeated value is reported ONCE, at
//!   its second index (`spec.set[2]: Duplicate value: "a"`); scalars are compared as Go
//!   compares decoded JSON (`1` and `1.0` differ: an int64 and a float64), objects and lists
//!   by their JSON encoding (so `1` and `1.0` inside them are equal);
//! - a `map` list may not hold two items with the same keys (`x-kubernetes-list-map-keys`):
//!   the duplicate is named by its keys, `Duplicate value: {"name":"a"}`, with only the keys
//!   the item has (a missing key is "unspecified", and two of those are duplicates too:
//!   `Duplicate value: {}`); an item that is not an object is `Invalid value: ...: must be an
//!   object for an array of list-type map` (the first such item only). Defaults are applied
//!   before (a defaulted key takes part in the comparison); a missing required key is the
//!   schema's `Required value`, not this pass's;
//! - `atomic` lists (and lists without a list type) may repeat anything;
//! - on an update the check runs only when the object before the write passed it (the
//!   server ratchets: an object stored with duplicates can still be written).
//!
//! Values are rendered as Go's field errors render them: `%q` for a string, `%v` for a
//! number or a boolean, Go's JSON for the rest (see [`go_json`]).

use std::collections::HashMap;
use std::hash::Hash;

use serde_json::{Map, Value};

use super::schema::go_value;
use super::validation::FieldError;

/// The list-type problems of a custom object against its schema (`openAPIV3Schema`).
pub(crate) fn validate(schema: &Value, obj: &Map<String, Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    object(schema, obj, "", &mut errors);
    errors
}

/// [`validate`] for an update: nothing when the object before the write already fails it.
pub(crate) fn validate_update(
    schema: &Value,
    obj: &Map<String, Value>,
    old: Option<&Map<String, Value>>,
) -> Vec<FieldError> {
    if old.is_some_and(|o| !validate(schema, o).is_empty()) {
        return Vec::new();
    }
    validate(schema, obj)
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn object(schema: &Value, obj: &Map<String, Value>, path: &str, errors: &mut Vec<FieldError>) {
    if let Some(extra) = schema.get("additionalProperties").filter(|s| s.is_object()) {
        for (k, v) in obj {
            value(extra, v, &format!("{path}[{k}]"), errors);
        }
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, v) in obj {
            if let Some(s) = props.get(k) {
                value(s, v, &child(path, k), errors);
            }
        }
    }
}

fn value(schema: &Value, v: &Value, path: &str, errors: &mut Vec<FieldError>) {
    match v {
        Value::Array(items) => array(schema, items, path, errors),
        Value::Object(m) => object(schema, m, path, errors),
        _ => {}
    }
}

fn array(schema: &Value, items: &[Value], path: &str, errors: &mut Vec<FieldError>) {
    match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => {
            let keys: Vec<Key> = items.iter().map(Key::of).collect();
            for i in repeated(&keys) {
                errors.push(duplicate(&format!("{path}[{i}]"), &items[i]));
            }
        }
        Some("map") => map_list(schema, items, path, errors),
        _ => {}
    }
    if let Some(s) = schema.get("items").filter(|s| s.is_object()) {
        for (i, x) in items.iter().enumerate() {
            value(s, x, &format!("{path}[{i}]"), errors);
        }
    }
}

fn map_list(schema: &Value, items: &[Value], path: &str, errors: &mut Vec<FieldError>) {
    if let Some((i, x)) = items
        .iter()
        .enumerate()
        .find(|(_, x)| !x.is_null() && !x.is_object())
    {
        errors.push(FieldError {
            reason: "FieldValueInvalid",
            field: format!("{path}[{i}]"),
            text: format!(
                "Invalid value: {}: must be an object for an array of list-type map",
                rendered(x)
            ),
        });
        return;
    }
    let key_fields: Vec<&str> = schema
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|l| l.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    // The keys an item has, as an object (absent ones left out).
    let key_map = |x: &Value| -> Map<String, Value> {
        key_fields
            .iter()
            .filter_map(|f| Some(((*f).to_owned(), x.get(*f)?.clone())))
            .collect()
    };
    if let [one] = key_fields.as_slice() {
        // One key: compared as a value (an absent key is its own "unspecified" value).
        let keys: Vec<Option<Key>> = items.iter().map(|x| x.get(*one).map(Key::of)).collect();
        for i in repeated(&keys) {
            errors.push(duplicate(
                &format!("{path}[{i}]"),
                &Value::Object(key_map(&items[i])),
            ));
        }
        return;
    }
    let keys: Vec<Value> = items.iter().map(|x| Value::Object(key_map(x))).collect();
    let compared: Vec<Key> = keys.iter().map(Key::of).collect();
    for i in repeated(&compared) {
        errors.push(duplicate(&format!("{path}[{i}]"), &keys[i]));
    }
}

/// The problems of one node of a CRD's schema (at `path`) with its list and map types, as
/// kube-apiserver refuses a CustomResourceDefinition: a list type on something that is not
/// an array (a map type, not an object); an unknown type; keys without `map` or `map`
/// without keys; keys that are not scalar properties of the items, repeat, are neither
/// required nor defaulted, or are nullable; items of a `set` that are granular maps or
/// non-atomic lists, or items of a `set` or `map` that are nullable. Its quirks are kept:
/// a key of a non-scalar type shows the ITEMS' type, a granular map in a `set` shows the
/// items' list type (`null` without one).
pub(crate) fn check_schema(m: &Map<String, Value>, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let ty = m.get("type").and_then(Value::as_str).unwrap_or("");
    let str_of = |k: &str| m.get(k).and_then(Value::as_str);
    let invalid = |field: String, shown: String, detail: &str| FieldError {
        reason: "FieldValueInvalid",
        field,
        text: format!("Invalid value: {shown}: {detail}"),
    };
    let required = |field: String, detail: &str| FieldError::required(&field, detail);
    let not_supported = |field: String, v: &str, allowed: &[&str]| FieldError {
        reason: "FieldValueNotSupported",
        field,
        text: format!(
            "Unsupported value: {}: supported values: {}",
            go_value(&Value::from(v)),
            allowed
                .iter()
                .map(|a| go_value(&Value::from(*a)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let map_type = str_of("x-kubernetes-map-type");
    if map_type.is_some() && ty != "object" {
        let detail = "must be object if x-kubernetes-map-type is specified";
        errors.push(if ty.is_empty() {
            required(format!("{path}.type"), detail)
        } else {
            invalid(format!("{path}.type"), go_value(&Value::from(ty)), detail)
        });
    }
    if let Some(mt) = map_type.filter(|t| !matches!(*t, "atomic" | "granular")) {
        errors.push(not_supported(
            format!("{path}.x-kubernetes-map-type"),
            mt,
            &["atomic", "granular"],
        ));
    }
    let list_type = str_of("x-kubernetes-list-type");
    let items = m.get("items").and_then(Value::as_object);
    if list_type.is_some() && ty != "array" {
        let detail = "must be array if x-kubernetes-list-type is specified";
        errors.push(if ty.is_empty() {
            required(format!("{path}.type"), detail)
        } else {
            invalid(format!("{path}.type"), go_value(&Value::from(ty)), detail)
        });
    } else if let (Some("set"), Some(is)) = (list_type, items) {
        let detail = "must be atomic as item of a list with x-kubernetes-list-type=set";
        let item_list_type = is.get("x-kubernetes-list-type").and_then(Value::as_str);
        match is.get("type").and_then(Value::as_str) {
            Some("array") if item_list_type.is_some_and(|t| t != "atomic") => {
                errors.push(invalid(
                    format!("{path}.items.x-kubernetes-list-type"),
                    go_value(&Value::from(item_list_type.unwrap_or(""))),
                    detail,
                ));
            }
            Some("object")
                if is.get("x-kubernetes-map-type").and_then(Value::as_str) != Some("atomic") =>
            {
                let shown = item_list_type.map_or("null".to_owned(), |t| go_value(&Value::from(t)));
                errors.push(invalid(
                    format!("{path}.items.x-kubernetes-map-type"),
                    shown,
                    detail,
                ));
            }
            _ => {}
        }
    }
    if let Some(lt) = list_type.filter(|t| !matches!(*t, "atomic" | "set" | "map")) {
        errors.push(not_supported(
            format!("{path}.x-kubernetes-list-type"),
            lt,
            &["atomic", "set", "map"],
        ));
    }
    let keys: Vec<&str> = m
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|l| l.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let keys_shown = go_json(&Value::from(keys.clone()));
    if !keys.is_empty() {
        let detail = "must be map if x-kubernetes-list-map-keys is non-empty";
        match list_type {
            None => errors.push(required(format!("{path}.x-kubernetes-list-type"), detail)),
            Some(lt) if lt != "map" => errors.push(invalid(
                format!("{path}.x-kubernetes-list-type"),
                go_value(&Value::from(lt)),
                detail,
            )),
            _ => {}
        }
    }
    if list_type == Some("map") {
        if keys.is_empty() {
            errors.push(required(
                format!("{path}.x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        match items {
            None => errors.push(required(
                format!("{path}.items"),
                "must have a schema if x-kubernetes-list-type is map",
            )),
            Some(is) => {
                let item_type = is.get("type").and_then(Value::as_str).unwrap_or("");
                if item_type != "object" {
                    errors.push(invalid(
                        format!("{path}.items.type"),
                        go_value(&Value::from(item_type)),
                        "must be object if parent array's x-kubernetes-list-type is map",
                    ));
                } else {
                    let props = is.get("properties").and_then(Value::as_object);
                    for (i, k) in keys.iter().enumerate() {
                        match props.and_then(|p| p.get(*k)) {
                            Some(p) => {
                                let t = p.get("type").and_then(Value::as_str);
                                if matches!(t, Some("array" | "object")) {
                                    errors.push(invalid(
                                        format!("{path}.items.properties[{k}].type"),
                                        go_value(&Value::from(item_type)),
                                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                    ));
                                }
                            }
                            None => errors.push(invalid(
                                format!("{path}.x-kubernetes-list-map-keys"),
                                keys_shown.clone(),
                                "entries must all be names of item properties",
                            )),
                        }
                        if keys[..i].contains(k) {
                            errors.push(invalid(
                                format!("{path}.x-kubernetes-list-map-keys"),
                                keys_shown.clone(),
                                "must not contain duplicate entries",
                            ));
                        }
                    }
                }
            }
        }
    }
    // Items of a set or map list, and the keys of a map list's items.
    if let (Some(lt @ ("set" | "map")), Some(is)) = (list_type, items) {
        if is.get("nullable") == Some(&Value::Bool(true)) {
            errors.push(FieldError::forbidden(
                &format!("{path}.items.nullable"),
                &format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
            ));
        }
        if lt == "map" {
            let required: Vec<&str> = is
                .get("required")
                .and_then(Value::as_array)
                .map(|l| l.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let props = is.get("properties").and_then(Value::as_object);
            for k in &keys {
                let Some(p) = props.and_then(|p| p.get(*k)) else {
                    continue;
                };
                if !required.contains(k) && p.get("default").is_none() {
                    errors.push(FieldError::required(
                        &format!("{path}.items.properties[{k}].default"),
                        "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                    ));
                }
                if p.get("nullable") == Some(&Value::Bool(true)) {
                    errors.push(FieldError::forbidden(
                        &format!("{path}.items.properties[{k}].nullable"),
                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                    ));
                }
            }
        }
    }
    errors
}

/// A value as Go's uniqueness check compares it: scalars by type and value, objects and
/// lists by their JSON encoding.
#[derive(PartialEq, Eq, Hash)]
enum Key {
    Null,
    Bool(bool),
    Int(i64),
    /// The bits of a float64 (JSON has no NaN; `-0` is `0`, as Go's map keys compare them).
    Float(u64),
    String(String),
    Compound(String),
}

impl Key {
    fn of(v: &Value) -> Key {
        match v {
            Value::Null => Key::Null,
            Value::Bool(b) => Key::Bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Key::Int(i),
                None => {
                    let f = n.as_f64().unwrap_or(0.0);
                    Key::Float(if f == 0.0 { 0 } else { f.to_bits() })
                }
            },
            Value::String(s) => Key::String(s.clone()),
            Value::Array(_) | Value::Object(_) => Key::Compound(go_json(v)),
        }
    }
}

/// The indices of the second appearance of each repeated key, in order (one pass: a list of
/// many thousand items costs no more than reading it).
fn repeated<K: Eq + Hash>(keys: &[K]) -> Vec<usize> {
    let mut seen: HashMap<&K, u32> = HashMap::with_capacity(keys.len());
    let mut out = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let n = seen.entry(k).or_insert(0);
        *n += 1;
        if *n == 2 {
            out.push(i);
        }
    }
    out
}

fn duplicate(field: &str, v: &Value) -> FieldError {
    FieldError {
        reason: "FieldValueDuplicate",
        field: field.to_owned(),
        text: format!("Duplicate value: {}", rendered(v)),
    }
}

/// A bad value as a Go field error shows it.
fn rendered(v: &Value) -> String {
    match v {
        Value::String(_) | Value::Number(_) | Value::Bool(_) => go_value(v),
        _ => go_json(v),
    }
}

/// Go's `encoding/json` of a decoded value: object keys sorted, `<`, `>`, `&`, U+2028 and
/// U+2029 escaped, floats in Go's shortest form (`1e+21`, `1e-7`, a whole float without a
/// fraction).
pub(crate) fn go_json(v: &Value) -> String {
    let mut out = String::new();
    write_json(v, &mut out);
    out
}

fn write_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => out.push_str(&i.to_string()),
            (None, Some(u)) => out.push_str(&u.to_string()),
            _ => out.push_str(&go_json_float(n.as_f64().unwrap_or(0.0))),
        },
        Value::String(s) => write_string(s, out),
        Value::Array(l) => {
            out.push('[');
            for (i, x) in l.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(x, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(k, out);
                out.push(':');
                write_json(&m[k], out);
            }
            out.push('}');
        }
    }
}

fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Go's JSON form of a float64: plain digits, or an exponent (`1e+21`, `1.5e-7`) below
/// 1e-6 and from 1e21 on.
fn go_json_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let sci = format!("{f:e}");
        let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        let sign = if exp < 0 { '-' } else { '+' };
        let digits = exp.unsigned_abs();
        // Go writes at least two exponent digits, then drops a leading 0 of a negative one.
        let digits = if exp >= 0 && digits < 10 {
            format!("{digits:02}")
        } else {
            digits.to_string()
        };
        return format!("{mant}e{sign}{digits}");
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    format!("{f}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "nums": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "number"}},
            "objs": {"type": "array", "x-kubernetes-list-type": "set",
                     "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
            "tags": {"type": "array", "items": {"type": "string"}},
            "servers": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {
                    "name": {"type": "string"},
                    "aliases": {"type": "array", "x-kubernetes-list-type": "set",
                                "items": {"type": "string"}}}}},
            "pairs": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name", "protocol"],
                "items": {"type": "object", "properties": {
                    "name": {"type": "string"}, "protocol": {"type": "string"}}}},
            "groups": {"type": "object", "additionalProperties": {"type": "array",
                "x-kubernetes-list-type": "set", "items": {"type": "integer"}}}}}}})
    }

    fn problems(spec: Value) -> Vec<(String, String)> {
        let obj = json!({"spec": spec});
        validate(&schema(), obj.as_object().unwrap())
            .into_iter()
            .map(|e| (e.field, e.text))
            .collect()
    }

    fn p(f: &str, t: &str) -> (String, String) {
        (f.into(), t.into())
    }

    #[test]
    fn sets_refuse_each_repeated_value_once() {
        assert_eq!(
            problems(json!({"set": ["a", "b", "a", "a", "b"]})),
            [
                p("spec.set[2]", "Duplicate value: \"a\""),
                p("spec.set[4]", "Duplicate value: \"b\"")
            ]
        );
        assert!(problems(json!({"set": ["a", "b"], "tags": ["x", "x"]})).is_empty());
        // An int64 and a float64 differ as scalars, not inside objects.
        assert!(problems(json!({"nums": [1, 1.0]})).is_empty());
        assert_eq!(
            problems(json!({"nums": [1.5, 2, 1.5]})),
            [p("spec.nums[2]", "Duplicate value: 1.5")]
        );
        assert_eq!(
            problems(json!({"objs": [{"b": 1, "a": "<"}, {"a": "<", "b": 1.0}]})),
            [p(
                "spec.objs[1]",
                "Duplicate value: {\"a\":\"\\u003c\",\"b\":1}"
            )]
        );
        assert_eq!(
            problems(json!({"groups": {"g": [1, 1]}})),
            [p("spec.groups[g][1]", "Duplicate value: 1")]
        );
    }

    #[test]
    fn map_lists_compare_their_keys() {
        assert_eq!(
            problems(json!({"servers": [{"name": "a"}, {"name": "b"}, {"name": "a", "port": 2}]})),
            [p("spec.servers[2]", "Duplicate value: {\"name\":\"a\"}")]
        );
        // Two items without the key are duplicates of each other.
        assert_eq!(
            problems(json!({"servers": [{"port": 1}, {"port": 2}]})),
            [p("spec.servers[1]", "Duplicate value: {}")]
        );
        assert_eq!(
            problems(json!({"servers": [{"name": "a"}, "x"]})),
            [p(
                "spec.servers[1]",
                "Invalid value: \"x\": must be an object for an array of list-type map"
            )]
        );
        assert_eq!(
            problems(json!({"pairs": [{"name": "a", "protocol": "TCP"},
                {"name": "a", "protocol": "UDP"}, {"protocol": "TCP", "name": "a"}]})),
            [p(
                "spec.pairs[2]",
                "Duplicate value: {\"name\":\"a\",\"protocol\":\"TCP\"}"
            )]
        );
        // Nested lists are checked inside each item.
        assert_eq!(
            problems(json!({"servers": [{"name": "a", "aliases": ["x", "x"]}]})),
            [p("spec.servers[0].aliases[1]", "Duplicate value: \"x\"")]
        );
    }

    #[test]
    fn updates_ratchet() {
        let s = schema();
        let bad = json!({"spec": {"set": ["a", "a"]}});
        let worse = json!({"spec": {"set": ["a", "a", "b", "b"]}});
        let good = json!({"spec": {"set": ["a"]}});
        let bad = bad.as_object().unwrap();
        assert!(validate_update(&s, worse.as_object().unwrap(), Some(bad)).is_empty());
        assert_eq!(
            validate_update(&s, bad, Some(good.as_object().unwrap())).len(),
            1
        );
        assert_eq!(validate_update(&s, bad, None).len(), 1);
    }

    fn schema_problems(node: Value) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = check_schema(node.as_object().unwrap(), "s")
            .into_iter()
            .map(|e| (e.field, e.text))
            .collect();
        out.sort();
        out
    }

    #[test]
    fn crd_schemas_are_checked_as_kube_apiserver_checks_them() {
        assert!(
            schema_problems(schema()["properties"]["spec"]["properties"]["pairs"].clone())
                .iter()
                .any(|(f, _)| f == "s.items.properties[name].default")
        );
        assert_eq!(
            schema_problems(json!({"type": "object", "x-kubernetes-list-type": "set",
                                   "x-kubernetes-map-type": "deep"})),
            [
                p("s.type", "Invalid value: \"object\": must be array if x-kubernetes-list-type is specified"),
                p("s.x-kubernetes-map-type", "Unsupported value: \"deep\": supported values: \"atomic\", \"granular\""),
            ]
        );
        assert_eq!(
            schema_problems(json!({"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["a", "b", "a"],
                "items": {"type": "object", "required": ["a"], "properties": {
                    "a": {"type": "object"}, "c": {"type": "string"}}}})),
            [
                p("s.items.properties[a].type", "Invalid value: \"object\": must be a scalar type if parent array's x-kubernetes-list-type is map"),
                p("s.items.properties[a].type", "Invalid value: \"object\": must be a scalar type if parent array's x-kubernetes-list-type is map"),
                p("s.x-kubernetes-list-map-keys", "Invalid value: [\"a\",\"b\",\"a\"]: entries must all be names of item properties"),
                p("s.x-kubernetes-list-map-keys", "Invalid value: [\"a\",\"b\",\"a\"]: must not contain duplicate entries"),
            ]
        );
        assert_eq!(
            schema_problems(json!({"type": "array", "x-kubernetes-list-type": "map",
                "items": {"type": "string", "nullable": true}})),
            [
                p("s.items.nullable", "Forbidden: cannot be nullable when x-kubernetes-list-type is map"),
                p("s.items.type", "Invalid value: \"string\": must be object if parent array's x-kubernetes-list-type is map"),
                p("s.x-kubernetes-list-map-keys", "Required value: must not be empty if x-kubernetes-list-type is map"),
            ]
        );
        assert_eq!(
            schema_problems(json!({"type": "array", "x-kubernetes-list-type": "set",
                "items": {"type": "object"}})),
            [p("s.items.x-kubernetes-map-type", "Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set")]
        );
        assert_eq!(
            schema_problems(json!({"type": "array", "x-kubernetes-list-map-keys": ["a"],
                "items": {"type": "string"}})),
            [p(
                "s.x-kubernetes-list-type",
                "Required value: must be map if x-kubernetes-list-map-keys is non-empty"
            )]
        );
        assert!(
            schema_problems(schema()["properties"]["spec"]["properties"]["set"].clone()).is_empty()
        );
    }

    #[test]
    fn go_json_floats() {
        assert_eq!(go_json_float(1e21), "1e+21");
        assert_eq!(go_json_float(1.5e-7), "1.5e-7");
        assert_eq!(go_json_float(1e-10), "1e-10");
        assert_eq!(go_json_float(5.0), "5");
        assert_eq!(go_json_float(0.000001), "0.000001");
        assert_eq!(go_json_float(123456789.5), "123456789.5");
        assert_eq!(
            go_json(&json!({"z": [1, "a&b"], "a": null})),
            "{\"a\":null,\"z\":[1,\"a\\u0026b\"]}"
        );
    }
}
