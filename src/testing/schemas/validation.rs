//! What a write is refused for (HTTP 422 `Invalid`): the checks kube-apiserver makes of every
//! object's metadata, and the 422 Status they produce.
//!
//! A real server validates each object against its type: names (a DNS-1123 subdomain for most
//! built-ins and for custom resources), label keys and values, annotations, finalizers, owner
//! references (see `object_meta.rs`), and then the type's own fields. The test server knows no built-in type beyond its metadata, so it checks
//! the metadata of every object; custom resources are checked against their schema as well
//! (see `schema.rs`), and a `/scale` write's replicas in `scale.rs`.
//!
//! How many times a problem is reported follows the real server: a create reports each bad
//! label once; an update runs the metadata checks in several places (the generic checks every
//! write gets, the resource's update validation, the new object's own validation), and the
//! v1.36 capture shows each bad label four times (three for a custom resource) and each new
//! finalizer twice. The message
//! lists each distinct problem once, as the server's aggregated errors do.

use serde_json::{Map, Value};

use crate::api::{Status, StatusCause, StatusDetails};

/// One problem with one field.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FieldError {
    /// `FieldValueInvalid`, `FieldValueRequired`, ...
    pub reason: &'static str,
    /// `metadata.name`, `spec.size`.
    pub field: String,
    /// The text after the field, e.g. `Invalid value: -1: must be ...`.
    pub text: String,
}

impl FieldError {
    pub fn invalid(field: &str, value: &Value, detail: &str) -> Self {
        FieldError {
            reason: "FieldValueInvalid",
            field: field.to_owned(),
            text: format!("Invalid value: {value}: {detail}"),
        }
    }

    pub fn required(field: &str, detail: &str) -> Self {
        FieldError {
            reason: "FieldValueRequired",
            field: field.to_owned(),
            text: format!("Required value: {detail}"),
        }
    }

    pub fn forbidden(field: &str, detail: &str) -> Self {
        FieldError {
            reason: "FieldValueForbidden",
            field: field.to_owned(),
            text: format!("Forbidden: {detail}"),
        }
    }

    /// `Too long: <detail>` (the value is not shown).
    pub fn too_long(field: &str, detail: &str) -> Self {
        FieldError {
            reason: "FieldValueTooLong",
            field: field.to_owned(),
            text: format!("Too long: {detail}"),
        }
    }

    pub fn type_invalid(field: &str, value: &Value, detail: &str) -> Self {
        FieldError {
            reason: "FieldValueTypeInvalid",
            field: field.to_owned(),
            text: format!("Invalid value: {value}: {detail}"),
        }
    }

    fn message(&self) -> String {
        format!("{}: {}", self.field, self.text)
    }
}

/// The 422 for `errors` of the object `name`: the message names `qualified_kind`
/// (`ConfigMap`, `Deployment.apps`, `Gadget.wsem.example.com`), `details.kind` is `kind` and
/// `details.group` is `group` (when not empty).
pub(crate) fn invalid(
    qualified_kind: &str,
    kind: &str,
    group: &str,
    name: &str,
    errors: &[FieldError],
) -> Status {
    // A hostile body can hold a million bad labels: a set keeps this linear.
    let mut seen = std::collections::HashSet::new();
    let mut distinct: Vec<String> = Vec::new();
    for e in errors {
        let m = e.message();
        if seen.insert(m.clone()) {
            distinct.push(m);
        }
    }
    let listed = match distinct.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    let mut st = Status::failure(
        422,
        "Invalid",
        format!("{qualified_kind} \"{name}\" is invalid: {listed}"),
    );
    st.details = Some(StatusDetails {
        name: Some(name.to_owned()).filter(|n| !n.is_empty()),
        group: Some(group.to_owned()).filter(|g| !g.is_empty()),
        kind: Some(kind.to_owned()),
        causes: errors
            .iter()
            .map(|e| StatusCause {
                reason: e.reason.into(),
                message: e.text.clone(),
                field: e.field.clone(),
            })
            .collect(),
        ..Default::default()
    });
    st
}

/// `Kind` or `Kind.group`: how the server names a kind in messages.
pub(crate) fn qualified(kind: &str, group: &str) -> String {
    if group.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}.{group}")
    }
}

/// What a write is: a create, or an update (which reports metadata problems more often; see
/// the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Write {
    Create,
    Update,
}

/// The problems of an object's metadata, each as often as the real server reports it:
/// on a create, the name (a DNS-1123 subdomain; the server has generated a name from a
/// `generateName` already, and checks both), labels, annotations, owner references and
/// finalizers once. On an update the name cannot change and is not checked; labels,
/// annotations and owner references are checked by two update checks and by the full
/// checks, which run twice for a built-in and once for a custom resource (captured: a bad
/// label four times for a ConfigMap, three for a custom resource), and finalizer names only
/// by the full checks.
pub(crate) fn object_meta(
    builtin: bool,
    meta: &Map<String, Value>,
    write: Write,
) -> Vec<FieldError> {
    use super::object_meta as om;
    let mut errors = Vec::new();
    if write == Write::Create {
        let prefix = meta
            .get("generateName")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !prefix.is_empty() {
            for m in om::name_errors(prefix, true) {
                errors.push(FieldError::invalid(
                    "metadata.generateName",
                    &Value::from(prefix),
                    &m,
                ));
            }
        }
        let name = meta.get("name").and_then(Value::as_str).unwrap_or("");
        if !name.is_empty() {
            for m in om::name_errors(name, false) {
                errors.push(FieldError::invalid("metadata.name", &Value::from(name), &m));
            }
        }
    }
    let mut repeated = Vec::new();
    if let Some(Value::Object(labels)) = meta.get("labels") {
        repeated.extend(om::labels(labels));
    }
    if let Some(Value::Object(a)) = meta.get("annotations") {
        repeated.extend(om::annotations(a));
    }
    repeated.extend(om::owner_references(meta.get("ownerReferences")));
    let finalizers = om::finalizers(meta.get("finalizers"));
    let (times, finalizer_times) = match (write, builtin) {
        (Write::Create, _) => (1, 1),
        (Write::Update, true) => (4, 2),
        (Write::Update, false) => (3, 1),
    };
    for _ in 0..times {
        errors.extend(repeated.iter().cloned());
    }
    for _ in 0..finalizer_times {
        errors.extend(finalizers.iter().cloned());
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn names() {
        for builtin in [true, false] {
            let e = object_meta(builtin, &meta(json!({"name": "Bad_Name"})), Write::Create);
            assert_eq!(e.len(), 1);
            assert_eq!(e[0].field, "metadata.name");
            let long = "m".repeat(64);
            assert!(object_meta(builtin, &meta(json!({"name": long})), Write::Create).is_empty());
            assert_eq!(
                object_meta(builtin, &meta(json!({"name": "a/b"})), Write::Create).len(),
                1
            );
        }
        let e = object_meta(
            false,
            &meta(json!({"name": "Bad-gen-x7k2p", "generateName": "Bad-gen-"})),
            Write::Create,
        );
        let fields: Vec<&str> = e.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["metadata.generateName", "metadata.name"]);
    }

    #[test]
    fn labels() {
        let ok = meta(json!({"labels": {"app": "", "example.com/tier": "a.b-c_d", "x": "Y1"}}));
        assert!(object_meta(true, &ok, Write::Create).is_empty());
        let bad = meta(json!({"labels": {"app": "not valid!"}}));
        assert_eq!(object_meta(true, &bad, Write::Create).len(), 1);
        assert_eq!(object_meta(true, &bad, Write::Update).len(), 4);
        assert_eq!(object_meta(false, &bad, Write::Update).len(), 3);
        let bad_key = meta(json!({"labels": {"Bad Key": "v", "/x": "v"}}));
        assert_eq!(object_meta(true, &bad_key, Write::Create).len(), 2);
        let long = "a".repeat(64);
        assert_eq!(
            object_meta(true, &meta(json!({"labels": {"k": long}})), Write::Create).len(),
            1
        );
    }

    #[test]
    fn the_status_lists_distinct_problems_once() {
        let e = FieldError::invalid("metadata.labels", &json!("x y"), "bad");
        let st = invalid("ConfigMap", "ConfigMap", "", "c", &[e.clone(), e]);
        assert_eq!(st.code, 422);
        assert_eq!(
            st.message,
            "ConfigMap \"c\" is invalid: metadata.labels: Invalid value: \"x y\": bad"
        );
        assert_eq!(st.details.unwrap().causes.len(), 2);
    }
}
