//! k8s-openapi's types as first-class objects (feature `k8s-openapi`).
//!
//! Why: without this a user hand-writes a struct for every built-in kind, and the orphan rule
//! stops them from implementing our traits on k8s-openapi's `Pod` themselves. Three impls
//! make every k8s-openapi type with metadata work wherever our own types do (`Api<Pod>`,
//! informers, listers, indexes, controllers, finalizers, owner triggers):
//!
//! - [`Meta`] for k8s-openapi's `ObjectMeta`;
//! - [`Object`] for every `K: k8s_openapi::Metadata<Ty = ObjectMeta>` (blanket);
//! - [`Resource`] for every such `K` that is also a `k8s_openapi::Resource` of cluster or
//!   namespace scope: `PLURAL` is its `URL_PATH_SEGMENT`, `NAMESPACED` comes from its `Scope`
//!   type (subresources such as `TokenRequest` are not resources of their own and are left
//!   out).
//!
//! The blanket impls sit beside our impls for our own types (`DynamicObject`, `Lease`, ...):
//! coherence allows both because those types are local and do not implement k8s-openapi's
//! traits. A user's own type that implements `k8s_openapi::Resource` and
//! `k8s_openapi::Metadata` (as kube-derive's custom resources do) gets our traits from the
//! same blanket impls, and so must not implement [`Object`] itself.
//!
//! This crate does not choose k8s-openapi's Kubernetes version: exactly one `v1_*` feature
//! of `k8s-openapi` must be enabled by the final binary (see the [`api`](crate::api) module
//! docs), as with kube-rs.
//!
//! Limits: k8s-openapi's types decode with their own `Deserialize` impls (run on the library's
//! serde deserializer, so members they do not declare are skipped by the scanner, but their
//! `ObjectMeta` has no fast path), and their `ObjectMeta` keeps `managedFields` decoded into
//! entries (our own `ObjectMeta` keeps it as raw text): strip it with the reflector's
//! [`strip_managed_fields`](crate::cache::strip_managed_fields) transform when you do not read it.
//! Those entries' `FieldsV1` trees of small `BTreeMap`s are half a typed pod's heap; to keep
//! `managedFields` in a fraction of it, cache each one as its JSON text with the
//! [`compact_managed_fields`](crate::cache::compact_managed_fields) transform.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta as K8sObjectMeta;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference as K8sOwnerReference;
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use serde::de::DeserializeOwned;

use super::meta_trait::{shared_key_from, Meta, OwnerRef};
use super::resource::{Object, Resource};

impl Meta for K8sObjectMeta {
    #[inline]
    fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }

    #[inline]
    fn shared_key(&self) -> std::sync::Arc<str> {
        shared_key_from(self.namespace(), self.name())
    }

    #[inline]
    fn namespace(&self) -> &str {
        self.namespace.as_deref().unwrap_or("")
    }

    #[inline]
    fn resource_version(&self) -> &str {
        self.resource_version.as_deref().unwrap_or("")
    }

    #[inline]
    fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }

    #[inline]
    fn generation(&self) -> Option<i64> {
        self.generation
    }

    #[inline]
    fn is_being_deleted(&self) -> bool {
        self.deletion_timestamp.is_some()
    }

    fn label(&self, key: &str) -> Option<&str> {
        self.labels.as_ref()?.get(key).map(String::as_str)
    }

    fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        self.labels
            .iter()
            .flatten()
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }

    fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.as_ref()?.get(key).map(String::as_str)
    }

    fn annotations(&self) -> impl Iterator<Item = (&str, &str)> {
        self.annotations
            .iter()
            .flatten()
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }

    fn owner_references(&self) -> impl Iterator<Item = OwnerRef<'_>> {
        self.owner_references.iter().flatten().map(owner_ref)
    }

    #[inline]
    fn finalizers(&self) -> Option<&[String]> {
        self.finalizers.as_deref()
    }

    fn strip_managed_fields(&mut self) {
        self.managed_fields = None;
    }
}

fn owner_ref(r: &K8sOwnerReference) -> OwnerRef<'_> {
    OwnerRef {
        api_version: &r.api_version,
        kind: &r.kind,
        name: &r.name,
        uid: &r.uid,
        controller: r.controller == Some(true),
        block_owner_deletion: r.block_owner_deletion == Some(true),
    }
}

impl<K> Object for K
where
    K: k8s_openapi::Metadata<Ty = K8sObjectMeta> + DeserializeOwned + Send + Sync + 'static,
{
    type Meta = K8sObjectMeta;

    #[inline]
    fn metadata(&self) -> &K8sObjectMeta {
        k8s_openapi::Metadata::metadata(self)
    }

    #[inline]
    fn metadata_mut(&mut self) -> &mut K8sObjectMeta {
        k8s_openapi::Metadata::metadata_mut(self)
    }

    /// The built-in message of this `apiVersion` and `kind`; `None` for a custom resource
    /// (whose answers stay JSON).
    #[cfg(feature = "protobuf")]
    #[inline]
    fn protobuf_message() -> Option<crate::protobuf::Message> {
        crate::protobuf::message_for(
            <K as k8s_openapi::Resource>::API_VERSION,
            <K as k8s_openapi::Resource>::KIND,
        )
    }
}

/// The scope of a k8s-openapi resource as a constant: implemented for the cluster and
/// namespace scopes only, so subresources get no [`Resource`] impl.
pub trait ScopeKind {
    /// True for namespaced resources.
    const NAMESPACED: bool;
}

impl ScopeKind for ClusterResourceScope {
    const NAMESPACED: bool = false;
}

impl ScopeKind for NamespaceResourceScope {
    const NAMESPACED: bool = true;
}

impl<K> Resource for K
where
    K: k8s_openapi::Resource
        + k8s_openapi::Metadata<Ty = K8sObjectMeta>
        + DeserializeOwned
        + Send
        + Sync
        + 'static,
    K::Scope: ScopeKind,
{
    const GROUP: &'static str = <K as k8s_openapi::Resource>::GROUP;
    const VERSION: &'static str = <K as k8s_openapi::Resource>::VERSION;
    const KIND: &'static str = <K as k8s_openapi::Resource>::KIND;
    const PLURAL: &'static str = K::URL_PATH_SEGMENT;
    const NAMESPACED: bool = <K::Scope as ScopeKind>::NAMESPACED;
}
