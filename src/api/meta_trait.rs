//! [`Meta`]: the metadata the library reads, whatever type holds it.
//!
//! Why a trait: the cache keys, the label selectors, the finalizer helper, the owner triggers
//! and the reflector's resource-version bookkeeping read a handful of metadata fields. Our
//! own [`ObjectMeta`] holds them one way; k8s-openapi's `ObjectMeta` (behind the
//! `k8s-openapi` feature) another. Each [`Object`](super::Object) names its metadata type
//! (`type Meta`), and the library's generic code reads it through this trait, monomorphised:
//! for our own types every call compiles to the same field reads as before, with no boxing
//! and no allocation added (`key()` still builds its string sized up front).
//!
//! Views are borrowed: strings as `&str`, owner references as [`OwnerRef`]s pointing into
//! the object, so reading metadata copies nothing.

use std::sync::Arc;

use super::meta::{ObjectMeta, OwnerReference};

/// Read (and a little write) access to an object's metadata: what the library needs of it.
///
/// Implemented by our [`ObjectMeta`] (whose inherent methods of the same names stay, so
/// concrete code needs no import) and, with the `k8s-openapi` feature, by k8s-openapi's
/// `ObjectMeta`. Unset strings read as `""` where the API treats empty and unset alike
/// (name, namespace, resource version).
///
/// ```
/// use kube_informer::api::{Meta, ObjectMeta};
///
/// // Works for any metadata type: ours, k8s-openapi's, or your own.
/// fn describe<M: Meta>(meta: &M) -> String {
///     let app = meta.label("app").unwrap_or("-");
///     format!("{} app={app} deleting={}", meta.key(), meta.is_being_deleted())
/// }
///
/// let meta = ObjectMeta {
///     name: Some("web-1".into()),
///     namespace: Some("lab".into()),
///     labels: Some([("app", "web")].into_iter().collect()),
///     ..ObjectMeta::default()
/// };
/// assert_eq!(describe(&meta), "lab/web-1 app=web deleting=false");
/// ```
pub trait Meta {
    /// The name, or `""` when unset.
    fn name(&self) -> &str;
    /// The namespace, or `""` for cluster-scoped objects.
    fn namespace(&self) -> &str;
    /// The resource version, or `""` when unset.
    fn resource_version(&self) -> &str;
    /// The uid of this incarnation of the object, when set (the server always sets it).
    fn uid(&self) -> Option<&str>;
    /// The spec generation, when set.
    fn generation(&self) -> Option<i64>;
    /// Whether a deletion was requested (`deletionTimestamp` is set): the object stays until
    /// its finalizers are gone.
    fn is_being_deleted(&self) -> bool;

    /// One label's value.
    fn label(&self, key: &str) -> Option<&str>;
    /// Every label, in the map's order.
    fn labels(&self) -> impl Iterator<Item = (&str, &str)>;
    /// One annotation's value.
    fn annotation(&self, key: &str) -> Option<&str>;
    /// Every annotation, in the map's order.
    fn annotations(&self) -> impl Iterator<Item = (&str, &str)>;

    /// The owner references, as borrowed views.
    fn owner_references(&self) -> impl Iterator<Item = OwnerRef<'_>>;
    /// The finalizers; `None` when the list is absent (which a JSON patch tells apart from an
    /// empty list).
    fn finalizers(&self) -> Option<&[String]>;

    /// Drops `managedFields`, which most programs never read and which is often the largest
    /// part of an object.
    fn strip_managed_fields(&mut self);

    /// The cache key client-go uses: `namespace/name`, or `name` when cluster-scoped.
    fn key(&self) -> String {
        key_of(self.namespace(), self.name())
    }

    /// [`key`](Self::key) as one shared string, which the informer's FIFO, its cache and the
    /// cache's indexes hold between them. The default makes it from `key`, so overriding
    /// `key` is enough; an override of this one must give the same text.
    fn shared_key(&self) -> Arc<str> {
        Arc::from(self.key())
    }

    /// The owner reference with `controller: true` (there is at most one), like client-go's
    /// `GetControllerOf`.
    fn controller(&self) -> Option<OwnerRef<'_>> {
        self.owner_references().find(|r| r.controller)
    }
}

/// `namespace/name`, or `name` when `namespace` is empty; one allocation, sized up front
/// (`format!` grows its buffer: two allocations per key).
pub(crate) fn key_of(namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        return name.to_owned();
    }
    let mut key = String::with_capacity(namespace.len() + 1 + name.len());
    key.push_str(namespace);
    key.push('/');
    key.push_str(name);
    key
}

thread_local! {
    /// Where [`shared_key_from`] joins a key before copying it into its one allocation.
    static KEY_BUFFER: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// [`key_of`] as a shared string in one allocation (the key is joined in a reused buffer
/// first), for the `shared_key` of the library's own metadata types.
pub(crate) fn shared_key_from(namespace: &str, name: &str) -> Arc<str> {
    if namespace.is_empty() {
        return Arc::from(name);
    }
    let join = |buffer: &mut String| {
        buffer.clear();
        buffer.push_str(namespace);
        buffer.push('/');
        buffer.push_str(name);
        Arc::<str>::from(buffer.as_str())
    };
    KEY_BUFFER
        .try_with(|buffer| join(&mut buffer.borrow_mut()))
        // Only while this thread's locals are being destroyed: a buffer of its own then.
        .unwrap_or_else(|_| join(&mut String::new()))
}

/// A borrowed view of one owner reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnerRef<'a> {
    /// API version of the owner, e.g. `apps/v1`.
    pub api_version: &'a str,
    /// Kind of the owner, e.g. `ReplicaSet`.
    pub kind: &'a str,
    /// Name of the owner.
    pub name: &'a str,
    /// UID of the owner.
    pub uid: &'a str,
    /// True when the owner is the managing controller (`controller: true`).
    pub controller: bool,
    /// True when the owner cannot be deleted before this object.
    pub block_owner_deletion: bool,
}

impl<'a> From<&'a OwnerReference> for OwnerRef<'a> {
    fn from(r: &'a OwnerReference) -> Self {
        OwnerRef {
            api_version: &r.api_version,
            kind: &r.kind,
            name: &r.name,
            uid: &r.uid,
            controller: r.controller == Some(true),
            block_owner_deletion: r.block_owner_deletion == Some(true),
        }
    }
}

impl Meta for ObjectMeta {
    #[inline]
    fn name(&self) -> &str {
        ObjectMeta::name(self)
    }

    #[inline]
    fn shared_key(&self) -> Arc<str> {
        shared_key_from(ObjectMeta::namespace(self), ObjectMeta::name(self))
    }

    #[inline]
    fn namespace(&self) -> &str {
        ObjectMeta::namespace(self)
    }

    #[inline]
    fn resource_version(&self) -> &str {
        ObjectMeta::resource_version(self)
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

    #[inline]
    fn label(&self, key: &str) -> Option<&str> {
        ObjectMeta::label(self, key)
    }

    fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        self.labels.iter().flat_map(|m| m.iter())
    }

    #[inline]
    fn annotation(&self, key: &str) -> Option<&str> {
        ObjectMeta::annotation(self, key)
    }

    fn annotations(&self) -> impl Iterator<Item = (&str, &str)> {
        self.annotations.iter().flat_map(|m| m.iter())
    }

    fn owner_references(&self) -> impl Iterator<Item = OwnerRef<'_>> {
        self.owner_references.iter().flatten().map(OwnerRef::from)
    }

    #[inline]
    fn finalizers(&self) -> Option<&[String]> {
        self.finalizers.as_deref()
    }

    #[inline]
    fn strip_managed_fields(&mut self) {
        ObjectMeta::strip_managed_fields(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generic_key<M: Meta>(m: &M) -> String {
        m.key()
    }

    #[test]
    fn the_trait_reads_what_the_fields_hold() {
        let mut m = ObjectMeta {
            name: Some("web".into()),
            namespace: Some("lab".into()),
            uid: Some("u1".into()),
            generation: Some(3),
            deletion_timestamp: Some("2024-01-01T00:00:00Z".into()),
            labels: Some([("app", "web"), ("tier", "front")].into_iter().collect()),
            annotations: Some([("note", "x")].into_iter().collect()),
            owner_references: Some(vec![
                OwnerReference {
                    api_version: "apps/v1".into(),
                    kind: "ReplicaSet".into(),
                    name: "plain".into(),
                    uid: "r0".into(),
                    ..OwnerReference::default()
                },
                OwnerReference {
                    api_version: "apps/v1".into(),
                    kind: "ReplicaSet".into(),
                    name: "web-1".into(),
                    uid: "r1".into(),
                    controller: Some(true),
                    block_owner_deletion: Some(true),
                },
            ]),
            finalizers: Some(vec!["f".into()]),
            managed_fields: Some(crate::api::RawJson::from_string("[]".into()).unwrap()),
            ..ObjectMeta::default()
        };
        assert_eq!(generic_key(&m), "lab/web");
        assert_eq!(Meta::uid(&m), Some("u1"));
        assert_eq!(Meta::generation(&m), Some(3));
        assert!(m.is_being_deleted());
        assert_eq!(
            Meta::labels(&m).collect::<Vec<_>>(),
            [("app", "web"), ("tier", "front")]
        );
        assert_eq!(Meta::annotation(&m, "note"), Some("x"));
        assert_eq!(Meta::annotations(&m).count(), 1);
        let owner = m.controller().unwrap();
        assert_eq!(
            (owner.name, owner.uid, owner.block_owner_deletion),
            ("web-1", "r1", true)
        );
        assert_eq!(Meta::owner_references(&m).count(), 2);
        assert_eq!(Meta::finalizers(&m), Some(&["f".to_owned()][..]));
        Meta::strip_managed_fields(&mut m);
        assert!(m.managed_fields.is_none());

        let cluster = ObjectMeta {
            name: Some("n1".into()),
            ..ObjectMeta::default()
        };
        assert_eq!(generic_key(&cluster), "n1");
        assert_eq!(Meta::labels(&cluster).count(), 0);
        assert_eq!(cluster.controller(), None);
        assert_eq!(Meta::finalizers(&cluster), None);
    }
}
