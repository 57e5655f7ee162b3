//! Object and list metadata, typed the way the API server sends them.
//!
//! Metadata is the part of every object that the cache, the key functions and the selectors
//! read, so it is decoded into typed fields once. `managedFields` is large and rarely read:
//! it is kept as raw JSON text (no tree of `Value`s), so it costs its bytes and nothing more,
//! and survives a round trip unchanged.

use serde::{Deserialize, Serialize};

use crate::json::raw_json::RawJson;
use crate::json::shared_str::SharedStr;
use crate::json::string_map::StringMap;

/// Metadata every persisted object has (`metadata` in the API).
///
/// Every field of the Kubernetes `ObjectMeta` is here; `managed_fields` is kept as raw JSON.
/// (`Deserialize` is implemented in the decoding engine, `src/json/meta_scan.rs`: serde's
/// derive for every decoder, the scanner's fast path for the library's own.)
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    /// Unique name within the namespace (or cluster, for cluster-scoped kinds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Prefix the server uses to make a unique name when `name` is empty (the same for the
    /// objects of one owner, so held once for them: see [`SharedStr`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate_name: Option<SharedStr>,
    /// Namespace of a namespaced object; `None` for cluster-scoped ones (shared in memory
    /// with other objects of the namespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<SharedStr>,
    /// Deprecated self link (old servers still send it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_link: Option<String>,
    /// Unique identity of this incarnation of the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// Opaque version of this object; changes on every write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// Sequence number of spec changes (set by the server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// RFC 3339 time the object was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    /// RFC 3339 time after which the object will be deleted (graceful deletion under way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<String>,
    /// Grace period the deletion was requested with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_grace_period_seconds: Option<i64>,
    /// Labels, the keys selectors match on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<StringMap>,
    /// Annotations: non-identifying metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<StringMap>,
    /// Objects this one depends on (its owners).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_references: Option<Vec<OwnerReference>>,
    /// Finalizers that must be removed before deletion completes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finalizers: Option<Vec<String>>,
    /// Server-side apply bookkeeping, kept undecoded (see
    /// [`strip_managed_fields`](ObjectMeta::strip_managed_fields) to drop it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_fields: Option<RawJson>,
}

impl ObjectMeta {
    /// The name, or `""` when unset.
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }

    /// The namespace, or `""` for cluster-scoped objects.
    pub fn namespace(&self) -> &str {
        self.namespace.as_deref().unwrap_or("")
    }

    /// The resource version, or `""` when unset.
    pub fn resource_version(&self) -> &str {
        self.resource_version.as_deref().unwrap_or("")
    }

    /// One label's value.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.as_ref()?.get(key)
    }

    /// One annotation's value.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.as_ref()?.get(key)
    }

    /// The cache key client-go uses: `namespace/name`, or `name` when cluster-scoped.
    pub fn key(&self) -> String {
        super::meta_trait::key_of(self.namespace(), self.name())
    }

    /// Drops `managedFields`, which most programs never read and which is often the largest
    /// part of an object.
    pub fn strip_managed_fields(&mut self) {
        self.managed_fields = None;
    }
}

/// A reference from an object to one of its owners.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerReference {
    /// API version of the owner, e.g. `apps/v1`.
    pub api_version: SharedStr,
    /// Kind of the owner, e.g. `ReplicaSet`.
    pub kind: SharedStr,
    /// Name of the owner.
    pub name: SharedStr,
    /// UID of the owner.
    pub uid: SharedStr,
    /// True when the owner is the managing controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
    /// True when the owner cannot be deleted before this object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_owner_deletion: Option<bool>,
}

/// Metadata of a list response (`metadata` of a `PodList`, say).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListMeta {
    /// The resource version the list was served at; a watch starts from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// Token for the next page; absent on the last page.
    #[serde(default, rename = "continue", skip_serializing_if = "Option::is_none")]
    pub continue_token: Option<String>,
    /// How many items remain after this page (an estimate the server may omit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining_item_count: Option<i64>,
    /// Deprecated self link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_link: Option<String>,
}
