//! Schemas for fields whose Rust type says too little or too much: `#[schemars(schema_with)]`
//! helpers for the two Kubernetes extensions a type cannot express by itself.

use schemars::{json_schema, Schema, SchemaGenerator};

/// A field the server keeps as it is, unchecked and unpruned
/// (`x-kubernetes-preserve-unknown-fields: true`): for a `serde_json::Value`, a
/// `serde_json::Map` or a type whose schema is not structural (a recursive tree).
///
/// ```
/// #[derive(schemars::JsonSchema)]
/// struct Spec {
///     #[schemars(schema_with = "kube_informer::api::crd::preserve_unknown_fields")]
///     values: serde_json::Value,
/// }
/// ```
pub fn preserve_unknown_fields(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"x-kubernetes-preserve-unknown-fields": true})
}

/// A field that holds an integer or a string (`x-kubernetes-int-or-string: true`), as a
/// port (`8080` or `http`) or a rollout's `maxSurge` (`1` or `25%`). An untagged enum of
/// an integer and a string variant gets this schema by itself.
///
/// ```
/// #[derive(schemars::JsonSchema)]
/// struct Spec {
///     #[schemars(schema_with = "kube_informer::api::crd::int_or_string")]
///     max_surge: serde_json::Value,
/// }
/// ```
pub fn int_or_string(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"x-kubernetes-int-or-string": true})
}
