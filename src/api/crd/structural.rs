//! The rewrite of a schemars schema into a *structural* one, as kube-apiserver requires of a
//! CRD's `openAPIV3Schema`.
//!
//! schemars writes JSON Schema as any validator would read it: `anyOf` for an `Option` of an
//! enum, `oneOf` for enums whose variants carry data or docs, `allOf` for flattened enums,
//! `$ref` for recursive types, an empty schema for `serde_json::Value`, `uniqueItems` for
//! sets. kube-apiserver takes none of that as it is: every field needs one `type` (or
//! `x-kubernetes-preserve-unknown-fields` / `x-kubernetes-int-or-string`), the logic
//! junctors (`allOf`, `anyOf`, `oneOf`) may only restrict fields that are also declared
//! outside them, and may not carry `type`, `description`, `nullable`, `default` or
//! `additionalProperties`; `$ref`, `uniqueItems: true` and `properties` beside
//! `additionalProperties` are refused outright.
//!
//! The rewrite, bottom-up (children first, then the node):
//! - `Option<T>` (a `null` branch, `null` in `type` or `enum`) becomes `nullable: true`;
//! - enums of unit variants become `type: string` with their `enum`;
//! - enums whose variants are objects (externally tagged with data, internally tagged) have
//!   their variants' properties hoisted into the node (`type: object`); each variant keeps
//!   only its `required` list and the `enum` of its tag, so that `oneOf` still says "exactly
//!   one variant". Two variants giving one field different schemas (beyond the tag's `enum`)
//!   are refused, as are enums mixing unit variants (strings) and variants with data
//!   (objects): one field has one type;
//! - an untagged enum of an integer and a string becomes `x-kubernetes-int-or-string`;
//! - `allOf` (flattened enums and structs) is merged into the node;
//! - `serde_json::Value` (an empty schema) becomes `x-kubernetes-preserve-unknown-fields`,
//!   and so do maps of it and `#[serde(flatten)]`ed maps beside declared fields (whose values
//!   the server then keeps without checking them); other maps keep `additionalProperties`;
//! - `uniqueItems`, `format`s the server does not know and keys outside `JSONSchemaProps`
//!   (`readOnly`, `$comment`, ...) are dropped;
//! - `$ref` (a recursive type) and tuples (`items` as a list) are refused: a structural
//!   schema is a finite tree with one schema per array. Give such a field
//!   `#[schemars(with = "serde_json::Value")]` to keep it, unchecked.
//!
//! Refusals are [`CrdError`]s naming the field, never panics: the input is a user's types.

use serde_json::{Map, Value};

use super::error::CrdError;

/// The keys of a `JSONSchemaProps` kube-apiserver accepts (besides `x-kubernetes-*`).
const KNOWN: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "default",
    "example",
    "nullable",
    "enum",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "multipleOf",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "maxProperties",
    "minProperties",
    "required",
    "properties",
    "additionalProperties",
    "items",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "$ref",
    "externalDocs",
];

/// The `format`s kube-apiserver recognises for CRDs; schemars's others (`uint32`, `uint8`,
/// ...) are dropped (their `minimum`/`maximum` stay).
const FORMATS: &[&str] = &[
    "int32",
    "int64",
    "float",
    "double",
    "byte",
    "binary",
    "date",
    "date-time",
    "duration",
    "password",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uri",
    "uuid",
];

/// The junctors' branches may keep only these (value validations).
const VALUE_VALIDATIONS: &[&str] = &[
    "enum",
    "required",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "multipleOf",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "maxProperties",
    "minProperties",
];

/// The structural form of `schema` (a schemars schema as JSON), found at `path` (for errors,
/// e.g. `.spec`).
pub(crate) fn rewrite(schema: Value, path: &str) -> Result<Value, CrdError> {
    node(schema, path).map(Value::Object)
}

fn node(schema: Value, path: &str) -> Result<Map<String, Value>, CrdError> {
    let mut m = match schema {
        // `true`: anything (schemars writes it for `serde_json::Value` before its OpenAPI
        // transforms turn it into `{}`).
        Value::Bool(true) => Map::new(),
        Value::Object(m) => m,
        Value::Bool(false) => return Err(CrdError::at(path, "accepts no value at all")),
        other => {
            return Err(CrdError::at(
                path,
                format!("has a schema that is not an object: {other}"),
            ))
        }
    };
    if let Some(r) = m.get("$ref") {
        return Err(CrdError::at(
            path,
            format!(
                "refers to {r}: a recursive type has no structural schema; give the field \
                 #[schemars(with = \"serde_json::Value\")] to keep it unchecked"
            ),
        ));
    }
    m.retain(|k, _| KNOWN.contains(&k.as_str()) || k.starts_with("x-kubernetes-"));
    // Sets: kube-apiserver refuses `uniqueItems: true` (quadratic to check).
    m.remove("uniqueItems");
    if let Some(f) = m.get("format").and_then(Value::as_str) {
        if !FORMATS.contains(&f) {
            m.remove("format");
        }
    }
    if m.get("default").is_some_and(Value::is_null) {
        m.remove("default");
    }
    nullable_from_type_and_enum(&mut m, path)?;

    // Children first.
    if let Some(Value::Object(props)) = m.get_mut("properties") {
        for (k, p) in props.iter_mut() {
            *p = Value::Object(node(p.take(), &format!("{path}.{k}"))?);
        }
    }
    match m.remove("items") {
        None => {}
        Some(Value::Array(_)) => {
            return Err(CrdError::at(
                path,
                "is a tuple (a list whose items have different schemas), which a structural \
                 schema cannot describe; use a struct, or #[schemars(with = \"serde_json::Value\")]",
            ))
        }
        Some(items) => {
            m.insert(
                "items".into(),
                Value::Object(node(items, &format!("{path}[]"))?),
            );
        }
    }
    additional_properties(&mut m, path)?;
    if m.get("not").is_some() {
        return Err(CrdError::at(
            path,
            "uses `not`, which the rewrite does not handle",
        ));
    }

    // Then the junctors.
    if let Some(all_of) = m.remove("allOf") {
        for (i, b) in branches(all_of, path, "allOf")?.into_iter().enumerate() {
            let b = node(b, &format!("{path}(allOf[{i}])"))?;
            merge_into(&mut m, b, path)?;
        }
    }
    for key in ["oneOf", "anyOf"] {
        let Some(list) = m.remove(key) else { continue };
        let mut variants = Vec::new();
        for (i, b) in branches(list, path, key)?.into_iter().enumerate() {
            if is_null(&b) {
                m.insert("nullable".into(), true.into());
                continue;
            }
            variants.push(node(b, &format!("{path}({key}[{i}])"))?);
        }
        match variants.len() {
            0 => {}
            1 => {
                let only = variants.pop().unwrap_or_default();
                merge_into(&mut m, only, path)?;
            }
            _ => combine(&mut m, key, variants, path)?,
        }
    }

    // A node that says nothing of its type: `serde_json::Value` and the like.
    if !m.contains_key("type")
        && m.get("x-kubernetes-int-or-string") != Some(&Value::Bool(true))
        && m.get("x-kubernetes-preserve-unknown-fields") != Some(&Value::Bool(true))
    {
        if m.contains_key("properties") {
            m.insert("type".into(), "object".into());
        } else if m.contains_key("items") {
            m.insert("type".into(), "array".into());
        } else {
            m.insert("x-kubernetes-preserve-unknown-fields".into(), true.into());
        }
    }
    Ok(m)
}

fn branches(list: Value, path: &str, key: &str) -> Result<Vec<Value>, CrdError> {
    match list {
        Value::Array(a) => Ok(a),
        _ => Err(CrdError::at(
            path,
            format!("has a `{key}` that is not a list"),
        )),
    }
}

/// A branch that only allows `null`: `Option`'s other half.
fn is_null(b: &Value) -> bool {
    b.get("type").and_then(Value::as_str) == Some("null")
        || b.get("enum") == Some(&Value::Array(vec![Value::Null]))
        || b.get("const") == Some(&Value::Null)
}

/// `type: [T, "null"]` and `enum: [..., null]` as `nullable: true`; several non-null types
/// are refused, except integer-or-string.
fn nullable_from_type_and_enum(m: &mut Map<String, Value>, path: &str) -> Result<(), CrdError> {
    let mut nullable = false;
    if let Some(Value::Array(types)) = m.get_mut("type") {
        nullable |= types.iter().any(|t| t == "null");
        types.retain(|t| t != "null");
    }
    if let Some(Value::Array(types)) = m.get("type") {
        let mut names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
        names.sort_unstable();
        match names.as_slice() {
            [] => {
                m.remove("type");
            }
            [one] => {
                let one = Value::from(*one);
                m.insert("type".into(), one);
            }
            ["integer", "string"] => {
                m.remove("type");
                m.insert("x-kubernetes-int-or-string".into(), true.into());
            }
            many => {
                return Err(CrdError::at(
                    path,
                    format!(
                        "may be any of {}: a structural schema gives each field one type",
                        many.join(", ")
                    ),
                ))
            }
        }
    }
    let mut no_values = false;
    if let Some(Value::Array(values)) = m.get_mut("enum") {
        nullable |= values.iter().any(Value::is_null);
        values.retain(|v| !v.is_null());
        no_values = values.is_empty();
    }
    if no_values {
        m.remove("enum");
    }
    if nullable {
        m.insert("nullable".into(), true.into());
    }
    Ok(())
}

/// Maps: `additionalProperties` kept for a map of a declared type; a map of anything, or a
/// flattened map beside declared fields (which the server refuses with `properties`),
/// becomes `x-kubernetes-preserve-unknown-fields`.
fn additional_properties(m: &mut Map<String, Value>, path: &str) -> Result<(), CrdError> {
    let Some(ap) = m.remove("additionalProperties") else {
        return Ok(());
    };
    let has_properties = m
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    let anything = match &ap {
        // `deny_unknown_fields`: the server prunes instead.
        Value::Bool(false) => return Ok(()),
        Value::Bool(true) => true,
        Value::Object(s) => s.is_empty(),
        _ => false,
    };
    if has_properties || anything {
        m.insert("x-kubernetes-preserve-unknown-fields".into(), true.into());
        return Ok(());
    }
    let values = node(ap, &format!("{path}.*"))?;
    if values.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
        && values.len() == 1
    {
        m.insert("x-kubernetes-preserve-unknown-fields".into(), true.into());
    } else {
        m.insert("additionalProperties".into(), Value::Object(values));
    }
    Ok(())
}

/// Merges `b` (a rewritten `allOf` branch, or the only non-null variant) into `m`.
fn merge_into(
    m: &mut Map<String, Value>,
    b: Map<String, Value>,
    path: &str,
) -> Result<(), CrdError> {
    for (k, v) in b {
        match k.as_str() {
            "properties" => {
                let Value::Object(props) = v else { continue };
                for (name, p) in props {
                    add_property(m, name, p, path)?;
                }
            }
            "required" => {
                let req = m
                    .entry("required")
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let (Value::Array(req), Value::Array(more)) = (req, v) {
                    for r in more {
                        if !req.contains(&r) {
                            req.push(r);
                        }
                    }
                }
            }
            "type" => match m.get("type") {
                Some(t) if *t != v => {
                    return Err(CrdError::at(
                        path,
                        format!("is both of type {t} and of type {v}"),
                    ))
                }
                _ => {
                    m.insert(k, v);
                }
            },
            // The node's own say (its field's docs, Option's nullable) comes first.
            _ => {
                m.entry(k).or_insert(v);
            }
        }
    }
    Ok(())
}

/// Adds the property `name` to `m`'s properties; one already there must have the same schema,
/// or one that differs only in its `enum` (a tag), whose values are then joined.
fn add_property(
    m: &mut Map<String, Value>,
    name: String,
    p: Value,
    path: &str,
) -> Result<(), CrdError> {
    let props = m
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(props) = props else {
        return Ok(());
    };
    let Some(existing) = props.get_mut(&name) else {
        props.insert(name, p);
        return Ok(());
    };
    if *existing == p {
        return Ok(());
    }
    let without_enum = |v: &Value| {
        let mut v = v.clone();
        if let Value::Object(o) = &mut v {
            o.remove("enum");
            o.remove("description");
        }
        v
    };
    if without_enum(existing) == without_enum(&p) {
        if let (Some(Value::Array(have)), Some(Value::Array(more))) =
            (existing.get_mut("enum"), p.get("enum"))
        {
            for x in more {
                if !have.contains(x) {
                    have.push(x.clone());
                }
            }
            return Ok(());
        }
    }
    Err(CrdError::at(
        &format!("{path}.{name}"),
        format!(
            "has different schemas in different variants ({existing} and {p}); a structural \
             schema declares each field once"
        ),
    ))
}

fn type_of(v: &Map<String, Value>) -> Option<&str> {
    v.get("type").and_then(Value::as_str)
}

/// Several variants (`oneOf`, or `anyOf` for untagged enums) as one structural node.
fn combine(
    m: &mut Map<String, Value>,
    key: &str,
    variants: Vec<Map<String, Value>>,
    path: &str,
) -> Result<(), CrdError> {
    // Unit variants (with docs, schemars gives each its own branch): one string enum.
    if variants
        .iter()
        .all(|v| type_of(v) == Some("string") && v.contains_key("enum"))
    {
        let mut values: Vec<Value> = Vec::new();
        for v in &variants {
            for x in v["enum"].as_array().into_iter().flatten() {
                if !values.contains(x) {
                    values.push(x.clone());
                }
            }
        }
        m.insert("type".into(), "string".into());
        m.insert("enum".into(), Value::Array(values));
        return Ok(());
    }
    let mut types: Vec<&str> = variants.iter().filter_map(type_of).collect();
    types.sort_unstable();
    types.dedup();
    let scalars = variants.iter().all(|v| !v.contains_key("properties"));
    if types == ["integer", "string"] && scalars {
        m.insert("x-kubernetes-int-or-string".into(), true.into());
        return Ok(());
    }
    if types != ["object"] || variants.iter().any(|v| type_of(v).is_none()) {
        return Err(CrdError::at(
            path,
            format!(
                "is an enum whose variants have different JSON types ({}): a structural \
                 schema gives each field one type. Give every variant data (or none), tag \
                 the enum (#[serde(tag = \"kind\")]), or keep the field unchecked with \
                 #[schemars(with = \"serde_json::Value\")]",
                variants
                    .iter()
                    .map(|v| type_of(v).unwrap_or("any"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    // Variants that are objects: their fields hoisted into the node.
    let mut kept = Vec::new();
    for mut v in variants {
        let description = v.remove("description");
        let props = match v.remove("properties") {
            Some(Value::Object(p)) => p,
            _ => Map::new(),
        };
        // An externally tagged variant: its one field gets the variant's docs.
        let single = props.len() == 1;
        let mut branch = Map::new();
        if let Some(req) = v.remove("required") {
            branch.insert("required".into(), req);
        }
        let mut tags = Map::new();
        for (name, mut p) in props {
            if let Some(e) = p.get("enum") {
                tags.insert(name.clone(), serde_json::json!({ "enum": e }));
            }
            if let (true, Some(d), Value::Object(o)) = (single, &description, &mut p) {
                o.entry("description").or_insert_with(|| d.clone());
            }
            add_property(m, name, p, path)?;
        }
        if !tags.is_empty() {
            branch.insert("properties".into(), Value::Object(tags));
        }
        branch.retain(|k, _| VALUE_VALIDATIONS.contains(&k.as_str()) || k == "properties");
        kept.push(Value::Object(branch));
    }
    m.insert("type".into(), "object".into());
    if kept
        .iter()
        .any(|b| b.as_object().is_some_and(|o| !o.is_empty()))
    {
        m.insert(key.into(), Value::Array(kept));
    }
    Ok(())
}
