//! The `admission.k8s.io/v1` `AdmissionReview` as kube-apiserver sends it to a webhook and
//! reads the answer back.
//!
//! Field names and shapes follow the API (camelCase, `uid` a string, `object` and
//! `oldObject` raw JSON objects, `patch` a base64 string in JSON). Fields a server may add
//! later are ignored on input. `v1beta1` reviews decode too (the shape is the same); the
//! answer carries the request's `apiVersion`, as kube-apiserver requires.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::Status;

/// The API version of the reviews this module answers by default.
pub const ADMISSION_API_VERSION: &str = "admission.k8s.io/v1";

/// A whole review: the request kube-apiserver sends, or the response a webhook sends back.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionReview {
    /// `admission.k8s.io/v1` (or `v1beta1`).
    #[serde(default)]
    pub api_version: String,
    /// `AdmissionReview`.
    #[serde(default)]
    pub kind: String,
    /// What is being admitted (set on the way in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<AdmissionRequest>,
    /// The verdict (set on the way out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<AdmissionResponse>,
}

/// A group, version and kind (`kind` and `requestKind`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupVersionKind {
    /// The API group (`""` for the core group).
    #[serde(default)]
    pub group: String,
    /// The version (`v1`).
    #[serde(default)]
    pub version: String,
    /// The kind (`ConfigMap`).
    #[serde(default)]
    pub kind: String,
}

/// A group, version and resource (`resource` and `requestResource`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupVersionResource {
    /// The API group (`""` for the core group).
    #[serde(default)]
    pub group: String,
    /// The version (`v1`).
    #[serde(default)]
    pub version: String,
    /// The resource (`configmaps`).
    #[serde(default)]
    pub resource: String,
}

/// What is being done to the object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Operation {
    /// A create (also a server-side apply that creates).
    #[serde(rename = "CREATE")]
    Create,
    /// An update, a patch, an apply of an existing object.
    #[serde(rename = "UPDATE")]
    Update,
    /// A delete (`oldObject` is the object; `object` is absent).
    #[serde(rename = "DELETE")]
    Delete,
    /// A connect (`pods/exec`, `pods/portforward`, ...).
    #[serde(rename = "CONNECT")]
    Connect,
}

impl Operation {
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`, as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// Who made the request (`authentication.k8s.io/v1` `UserInfo`, as in a `TokenReview`).
pub use crate::api::UserInfo;

/// The request half of a review.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionRequest {
    /// Identifies this call; the response must carry the same.
    pub uid: String,
    /// The kind of `object` (as converted for this webhook).
    pub kind: GroupVersionKind,
    /// The resource being written (as converted for this webhook).
    pub resource: GroupVersionResource,
    /// The subresource (`status`, `scale`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_resource: Option<String>,
    /// The kind of the original request, before conversion to the webhook's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_kind: Option<GroupVersionKind>,
    /// The resource of the original request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_resource: Option<GroupVersionResource>,
    /// The subresource of the original request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_sub_resource: Option<String>,
    /// The object's name (empty on a create with `generateName`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The object's namespace (empty for a cluster-scoped object).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// What is being done.
    pub operation: Operation,
    /// Who is doing it.
    #[serde(default)]
    pub user_info: UserInfo,
    /// The object as it would be written (absent for DELETE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<Value>,
    /// The object as it is (UPDATE and DELETE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_object: Option<Value>,
    /// A dry run: nothing will be persisted, so a webhook with side effects must not make
    /// them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    /// The operation's options (`CreateOptions`, `UpdateOptions`, `DeleteOptions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Value>,
}

impl AdmissionRequest {
    /// True when the request is a dry run.
    pub fn is_dry_run(&self) -> bool {
        self.dry_run == Some(true)
    }
}

/// The response half of a review.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse {
    /// The request's uid, echoed.
    pub uid: String,
    /// Whether the request may go on.
    pub allowed: bool,
    /// Why it was denied (`message`, `code`, `reason`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// A JSON patch (RFC 6902) to apply to the object, base64 in JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    /// `JSONPatch` when `patch` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<String>,
    /// Annotations for the audit log.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub audit_annotations: BTreeMap<String, String>,
    /// Warnings shown to the client (kubectl prints them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}
