//! A custom resource written with another version of its group in the body's `apiVersion`.
//!
//! Why: kube-apiserver decodes a custom resource's body with the schema of the version the
//! body names. A version the CRD does not serve has no schema, so every field but
//! `apiVersion`, `kind` and `metadata` is pruned as unknown while decoding (one
//! `unknown field "spec"` warning each, or a strict decoding error under
//! `fieldValidation=Strict`), and only then is the body refused for naming another version
//! than the URL's (400, captured with its warning). The store refuses any other apiVersion
//! (`store.rs`); this file answers the one case that also warns, before admission, as
//! decoding comes first.

use serde_json::Value;

use crate::api::Status;

use super::answers::status_json;
use super::store::{FieldValidation, TypeKey, WriteOptions};
use super::writes::Answer;

/// The answer to a custom resource's write whose body names `kind` (the resource's) in
/// another version of `tk`'s group; `None` for any other body.
pub(crate) fn refused(tk: &TypeKey, kind: &str, body: &Value, o: &WriteOptions) -> Option<Answer> {
    let given = body.get("apiVersion")?.as_str()?;
    let expected = tk.api_version();
    let (group, version) = given.split_once('/')?;
    if given == expected || group != tk.group || version.contains('/') {
        return None;
    }
    if body.get("kind").and_then(Value::as_str) != Some(kind) || kind.is_empty() {
        return None;
    }
    let mut unknown: Vec<String> = body
        .as_object()?
        .keys()
        .filter(|k| !matches!(k.as_str(), "apiVersion" | "kind" | "metadata"))
        .map(|k| format!("unknown field {}", Value::from(k.as_str())))
        .collect();
    unknown.sort();
    let (status, warnings) = match o.field_validation {
        FieldValidation::Strict if !unknown.is_empty() => (
            bad_request(format!(
                "{kind} in version {} cannot be handled as a {kind}: strict decoding error: {}",
                Value::from(version),
                unknown.join(", ")
            )),
            Vec::new(),
        ),
        FieldValidation::Ignore => (mismatch(given, &expected), Vec::new()),
        _ => (mismatch(given, &expected), unknown),
    };
    Some(Answer {
        code: status.code,
        body: status_json(&status),
        warnings,
    })
}

fn bad_request(message: String) -> Status {
    Status::failure(400, "BadRequest", message)
}

fn mismatch(given: &str, expected: &str) -> Status {
    bad_request(format!(
        "the API version in the data ({given}) does not match the expected API version ({expected})"
    ))
}
