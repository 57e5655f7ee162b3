//! What a write is refused for (HTTP 422 `Invalid`): the checks kube-apiserver makes of every
//! object's metadata, and the 422 Status they produce.
//!
//! A real server validates each object against its type: names (a DNS-1123 subdomain for most
//! built-ins, only a path segment for custom resources), label keys and values, and then the
//! type's own fields. The test server knows no built-in type beyond its metadata, so it checks
//! the metadata of every object; custom resources are checked against their schema as well
//! (see `schema.rs`), and a `/scale` write's replicas in `scale.rs`.
//!
//! How many times a problem is reported follows the real server: a create reports each bad
//! label once; an update runs the metadata checks in several places (the generic checks every
//! write gets, the resource's update validation, the new object's own validation), and the
//! v1.36 capture shows each bad label four times and each new finalizer twice. The message
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
    let mut distinct: Vec<String> = Vec::new();
    for e in errors {
        let m = e.message();
        if !distinct.contains(&m) {
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

const SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_VALUE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const QUALIFIED_NAME: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

fn is_alnum(c: char) -> bool {
    c.is_ascii_alphanumeric()
}

/// A DNS-1123 label: lower case alphanumerics and `-`, alphanumeric at both ends.
fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && s.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && s.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
}

/// A DNS-1123 subdomain: dot-separated DNS labels, 253 characters at most.
pub(crate) fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label)
}

/// A label value's (or a qualified name's name part's) characters: alphanumerics, `-`, `_`,
/// `.`, alphanumeric at both ends, 63 at most.
fn is_label_token(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars()
            .all(|c| is_alnum(c) || matches!(c, '-' | '_' | '.'))
        && s.starts_with(is_alnum)
        && s.ends_with(is_alnum)
}

/// The problems of `metadata.labels`: keys are qualified names (`prefix/name`, the prefix a
/// DNS subdomain), values empty or label tokens.
fn label_errors(labels: &Map<String, Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (k, v) in labels {
        let (prefix, name) = match k.split_once('/') {
            Some((p, n)) => (Some(p), n),
            None => (None, k.as_str()),
        };
        if !is_label_token(name) || prefix.is_some_and(|p| p.is_empty() || !is_dns_subdomain(p)) {
            errors.push(FieldError::invalid(
                "metadata.labels",
                &Value::from(k.as_str()),
                QUALIFIED_NAME,
            ));
        }
        match v.as_str() {
            Some("") => {}
            Some(s) if is_label_token(s) => {}
            _ => errors.push(FieldError::invalid("metadata.labels", v, LABEL_VALUE)),
        }
    }
    errors
}

/// What a write is: a create, or an update (which reports metadata problems more often; see
/// the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Write {
    Create,
    Update,
}

/// The problems of an object's metadata: its name (built-ins: a DNS-1123 subdomain; custom
/// resources: a path segment) and its labels.
pub(crate) fn object_meta(
    builtin: bool,
    meta: &Map<String, Value>,
    write: Write,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let name = meta.get("name").and_then(Value::as_str).unwrap_or("");
    if write == Write::Create && !name.is_empty() {
        let bad = if builtin {
            (!is_dns_subdomain(name)).then_some(SUBDOMAIN)
        } else if name == "." || name == ".." {
            Some("may not be '.' or '..'")
        } else if name.contains(['/', '%']) {
            Some("may not contain '/' or '%'")
        } else {
            None
        };
        if let Some(detail) = bad {
            errors.push(FieldError::invalid(
                "metadata.name",
                &Value::from(name),
                detail,
            ));
        }
    }
    if let Some(Value::Object(labels)) = meta.get("labels") {
        let once = label_errors(labels);
        let times = match write {
            Write::Create => 1,
            Write::Update => 4,
        };
        for _ in 0..times {
            errors.extend(once.iter().cloned());
        }
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
        assert!(is_dns_subdomain("lab-wsem-a.example"));
        assert!(!is_dns_subdomain("lab-wsem-Bad_Name"));
        assert!(!is_dns_subdomain("-a"));
        assert!(!is_dns_subdomain("a..b"));
        let e = object_meta(true, &meta(json!({"name": "Bad_Name"})), Write::Create);
        assert_eq!(e[0].field, "metadata.name");
        assert!(object_meta(false, &meta(json!({"name": "Bad_Name"})), Write::Create).is_empty());
        assert_eq!(
            object_meta(false, &meta(json!({"name": "a/b"})), Write::Create).len(),
            1
        );
    }

    #[test]
    fn labels() {
        let ok = meta(json!({"labels": {"app": "", "example.com/tier": "a.b-c_d", "x": "Y1"}}));
        assert!(object_meta(true, &ok, Write::Create).is_empty());
        let bad = meta(json!({"labels": {"app": "not valid!"}}));
        assert_eq!(object_meta(true, &bad, Write::Create).len(), 1);
        assert_eq!(object_meta(true, &bad, Write::Update).len(), 4);
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
