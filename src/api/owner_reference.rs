//! Owner references built from the owner, set with client-go's rules.
//!
//! Why: an owned object written by a controller needs an `ownerReferences` entry pointing at
//! its owner, so that the garbage collector deletes it with the owner and
//! [`ControllerBuilder::owns`](crate::controller::ControllerBuilder::owns) maps its changes
//! back to the owner. Written by hand it is four strings and two flags that are easy to get
//! wrong (a kind in lower case, a missing uid, two controllers). The rules are client-go's
//! (`metav1.NewControllerRef`, `controllerutil.SetControllerReference`,
//! `SetOwnerReference`, `metav1.IsControlledBy`):
//!
//! - a *controller* reference carries the owner's `apiVersion`, `kind`, `name` and `uid`,
//!   with `controller: true` and `blockOwnerDeletion: true` (foreground deletion of the
//!   owner waits for this object);
//! - an object has at most one controller: setting a controller reference on an object
//!   already controlled by another object (another API group, kind or name) is refused
//!   with [`AlreadyOwnedError`], which names that controller; a controller entry for the
//!   same group, kind and name with another uid (the owner deleted and created again) is
//!   replaced, as controller-runtime's `referSameObject` decides — else the objects of a
//!   recreated owner would stay "already controlled" for ever;
//! - setting a reference replaces the entry that points at the same object (same API group,
//!   kind and name, whatever the version), so that setting it again changes nothing and a
//!   recreated owner (new uid) takes its old entry's place;
//! - "controlled by" compares uids: an owner deleted and recreated under the same name is
//!   another owner.
//!
//! The setters work on the metadata of any object: our [`ObjectMeta`] (so
//! [`DynamicObject`](super::DynamicObject) and the `resource!` types) and, with the
//! `k8s-openapi` feature, k8s-openapi's `ObjectMeta`, through [`OwnerReferences`].

use std::fmt;

use super::meta::{ObjectMeta, OwnerReference};
use super::meta_trait::Meta;
use super::resource::{ApiResource, Object};
use crate::error::{Error, Result};

impl OwnerReference {
    /// A controller reference to `owner` (a resource of `resource`'s kind): client-go's
    /// `NewControllerRef`, `controller` and `blockOwnerDeletion` both true. The owner must
    /// have a name and a uid (objects read from the server have both); otherwise
    /// [`Error::InvalidInput`].
    ///
    /// ```
    /// use kube_informer::api::{ApiResource, DynamicObject, OwnerReference, OwnerReferences};
    /// use kube_informer::{Api, Client, PostParams};
    /// # let server = kube_informer::testing::ApiServer::start();
    /// # let client = Client::new(server.client_config())?;
    /// let (deploys, cms) = (
    ///     ApiResource::new("apps", "v1", "Deployment", "deployments", true),
    ///     ApiResource::new("", "v1", "ConfigMap", "configmaps", true),
    /// );
    /// let web = Api::<DynamicObject>::namespaced_with(client.clone(), "lab", &deploys)
    ///     .create(&PostParams::default(), &serde_json::json!({
    ///         "metadata": {"name": "web"}, "spec": {"replicas": 1}}))?;
    /// let mut cm: DynamicObject = serde_json::from_value(serde_json::json!({
    ///     "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-config"}}))?;
    /// cm.metadata.set_controller_reference(OwnerReference::controller(&web, &deploys)?)?;
    /// let cm = Api::<DynamicObject>::namespaced_with(client, "lab", &cms)
    ///     .create(&PostParams::default(), &cm)?;
    /// let owner = cm.metadata.owner_references.as_ref().unwrap()[0].clone();
    /// assert_eq!((&*owner.api_version, &*owner.kind, &*owner.name), ("apps/v1", "Deployment", "web"));
    /// assert_eq!((owner.controller, owner.block_owner_deletion), (Some(true), Some(true)));
    /// assert!(kube_informer::api::is_controlled_by(&cm.metadata, &web.metadata));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn controller<K: Object>(owner: &K, resource: &ApiResource) -> Result<OwnerReference> {
        let mut r = Self::owner(owner, resource)?;
        r.controller = Some(true);
        r.block_owner_deletion = Some(true);
        Ok(r)
    }

    /// A plain owner reference to `owner`: neither `controller` nor `blockOwnerDeletion`
    /// set (an owner among several, which the garbage collector honours and
    /// [`owns`](crate::controller::ControllerBuilder::owns) ignores). Set
    /// `block_owner_deletion` on the result when a foreground deletion of the owner must
    /// wait for this object. Errors as [`controller`](Self::controller).
    pub fn owner<K: Object>(owner: &K, resource: &ApiResource) -> Result<OwnerReference> {
        let meta = owner.metadata();
        let (name, uid) = (meta.name(), meta.uid().unwrap_or(""));
        if name.is_empty() || uid.is_empty() {
            return Err(Error::InvalidInput(format!(
                "an owner reference to {} {:?} needs the owner's name and uid (read the owner from the server first)",
                resource.kind,
                meta.key()
            )));
        }
        if resource.kind.is_empty() || resource.version.is_empty() {
            return Err(Error::InvalidInput(format!(
                "an owner reference to {name:?} needs the owner's kind and version"
            )));
        }
        Ok(OwnerReference {
            api_version: resource.api_version().into(),
            kind: resource.kind.as_str().into(),
            name: name.into(),
            uid: uid.into(),
            controller: None,
            block_owner_deletion: None,
        })
    }
}

/// An object already has a controller, and it is not the owner being set: client-go's
/// `AlreadyOwnedError`. An object has at most one controller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlreadyOwnedError {
    /// The object being given a controller (`namespace/name`, or its name).
    pub object: String,
    /// Its controller now.
    pub controller: OwnerReference,
}

impl fmt::Display for AlreadyOwnedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "object {:?} is already controlled by {} {:?} (uid {})",
            self.object, self.controller.kind, &*self.controller.name, &*self.controller.uid
        )
    }
}

impl std::error::Error for AlreadyOwnedError {}

impl From<AlreadyOwnedError> for Error {
    fn from(e: AlreadyOwnedError) -> Error {
        Error::InvalidInput(e.to_string())
    }
}

/// Setting owner references on an object's metadata (ours, and k8s-openapi's with the
/// `k8s-openapi` feature), with client-go's rules (`SetControllerReference`,
/// `SetOwnerReference`):
///
/// - an object has at most one controller: setting a controller reference on an object
///   already controlled by another object (another API group, kind or name) is refused
///   with [`AlreadyOwnedError`], which names that controller; the same owner recreated
///   (same group, kind and name, another uid) takes the entry over;
/// - setting a reference replaces the entry that points at the same object (same API group,
///   kind and name, whatever the version), so that setting it again changes nothing and a
///   recreated owner (new uid) takes its old entry's place.
///
/// Build the reference with [`OwnerReference::controller`] or [`OwnerReference::owner`];
/// test it with [`is_controlled_by`] (by uid: an owner recreated under the same name is
/// another owner).
pub trait OwnerReferences: Meta {
    /// Sets `reference` as the controller: refused with [`AlreadyOwnedError`] when another
    /// object (another group, kind or name) is the controller; otherwise it replaces the
    /// entry pointing at the same object (group, kind, name, whatever its uid: a recreated
    /// owner takes over), or is added. `controller` is forced to true.
    fn set_controller_reference(
        &mut self,
        reference: OwnerReference,
    ) -> std::result::Result<(), AlreadyOwnedError>;

    /// Sets a reference that does not make its owner the controller (`controller` is taken
    /// as given, `false` or unset): it replaces the entry pointing at the same object, or is
    /// added. An existing controller entry for that same owner becomes a plain one.
    fn set_owner_reference(&mut self, reference: OwnerReference);

    /// Removes the entries whose uid is `uid`; true when there was one.
    fn remove_owner_reference(&mut self, uid: &str) -> bool;
}

/// True when `object`'s controller reference has `owner`'s uid (client-go's
/// `IsControlledBy`): an owner recreated under the same name is another owner. False when
/// either has no uid.
pub fn is_controlled_by<O: Meta, W: Meta>(object: &O, owner: &W) -> bool {
    owner
        .uid()
        .filter(|u| !u.is_empty())
        .is_some_and(|uid| is_controlled_by_uid(object, uid))
}

/// True when `object`'s controller reference has this uid.
pub fn is_controlled_by_uid<O: Meta>(object: &O, uid: &str) -> bool {
    !uid.is_empty() && object.controller().is_some_and(|c| c.uid == uid)
}

/// The API group of an `apiVersion` (`apps/v1` -> `apps`, `v1` -> ``).
fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// Whether two references point at the same object (client-go's `referSameObject`).
fn same_object(a: (&str, &str, &str), b: (&str, &str, &str)) -> bool {
    group_of(a.0) == group_of(b.0) && a.1 == b.1 && a.2 == b.2
}

/// The shared logic over any list of references, read through `view`.
fn upsert<R>(list: &mut Vec<R>, new: R, view: impl Fn(&R) -> (&str, &str, &str)) -> Option<usize> {
    let key = {
        let (v, k, n) = view(&new);
        (v.to_owned(), k.to_owned(), n.to_owned())
    };
    let at = list
        .iter()
        .position(|r| same_object(view(r), (&key.0, &key.1, &key.2)));
    match at {
        Some(i) => list[i] = new,
        None => list.push(new),
    }
    at
}

/// Refuses a controller reference when the object's controller is another object (client-go's
/// `referSameObject`: group, kind and name; the uid is not compared, so a recreated owner
/// replaces its old entry).
fn refuse_other_controller<M: Meta>(
    meta: &M,
    reference: &OwnerReference,
) -> std::result::Result<(), AlreadyOwnedError> {
    let wanted = (&*reference.api_version, &*reference.kind, &*reference.name);
    match meta.controller() {
        Some(c) if !same_object((c.api_version, c.kind, c.name), wanted) => {
            Err(AlreadyOwnedError {
                object: meta.key(),
                controller: OwnerReference {
                    api_version: c.api_version.into(),
                    kind: c.kind.into(),
                    name: c.name.into(),
                    uid: c.uid.into(),
                    controller: Some(true),
                    block_owner_deletion: Some(c.block_owner_deletion),
                },
            })
        }
        _ => Ok(()),
    }
}

impl OwnerReferences for ObjectMeta {
    fn set_controller_reference(
        &mut self,
        mut reference: OwnerReference,
    ) -> std::result::Result<(), AlreadyOwnedError> {
        refuse_other_controller(self, &reference)?;
        reference.controller = Some(true);
        let list = self.owner_references.get_or_insert_with(Vec::new);
        upsert(list, reference, |r| (&r.api_version, &r.kind, &r.name));
        Ok(())
    }

    fn set_owner_reference(&mut self, reference: OwnerReference) {
        let list = self.owner_references.get_or_insert_with(Vec::new);
        upsert(list, reference, |r| (&r.api_version, &r.kind, &r.name));
    }

    fn remove_owner_reference(&mut self, uid: &str) -> bool {
        let Some(list) = self.owner_references.as_mut() else {
            return false;
        };
        let before = list.len();
        list.retain(|r| r.uid != uid);
        let removed = list.len() != before;
        if list.is_empty() {
            self.owner_references = None;
        }
        removed
    }
}

#[cfg(feature = "k8s-openapi")]
mod k8s {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta as K8sObjectMeta;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference as K8sOwnerReference;

    fn convert(r: OwnerReference) -> K8sOwnerReference {
        K8sOwnerReference {
            api_version: r.api_version.into(),
            kind: r.kind.into(),
            name: r.name.into(),
            uid: r.uid.into(),
            controller: r.controller,
            block_owner_deletion: r.block_owner_deletion,
        }
    }

    fn view(r: &K8sOwnerReference) -> (&str, &str, &str) {
        (&r.api_version, &r.kind, &r.name)
    }

    impl OwnerReferences for K8sObjectMeta {
        fn set_controller_reference(
            &mut self,
            mut reference: OwnerReference,
        ) -> std::result::Result<(), AlreadyOwnedError> {
            refuse_other_controller(self, &reference)?;
            reference.controller = Some(true);
            let list = self.owner_references.get_or_insert_with(Vec::new);
            upsert(list, convert(reference), view);
            Ok(())
        }

        fn set_owner_reference(&mut self, reference: OwnerReference) {
            let list = self.owner_references.get_or_insert_with(Vec::new);
            upsert(list, convert(reference), view);
        }

        fn remove_owner_reference(&mut self, uid: &str) -> bool {
            let Some(list) = self.owner_references.as_mut() else {
                return false;
            };
            let before = list.len();
            list.retain(|r| r.uid != uid);
            let removed = list.len() != before;
            if list.is_empty() {
                self.owner_references = None;
            }
            removed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::DynamicObject;

    fn owner(name: &str, uid: &str) -> DynamicObject {
        let mut o = DynamicObject::default();
        o.metadata.name = Some(name.into());
        o.metadata.namespace = Some("lab".into());
        o.metadata.uid = Some(uid.into());
        o
    }

    fn deployments(version: &str) -> ApiResource {
        ApiResource::new("apps", version, "Deployment", "deployments", true)
    }

    #[test]
    fn a_controller_reference_names_the_owner_and_blocks_its_deletion() {
        let r = OwnerReference::controller(&owner("web", "u1"), &deployments("v1")).unwrap();
        assert_eq!(&*r.api_version, "apps/v1");
        assert_eq!(&*r.kind, "Deployment");
        assert_eq!((&*r.name, &*r.uid), ("web", "u1"));
        assert_eq!(
            (r.controller, r.block_owner_deletion),
            (Some(true), Some(true))
        );
        let plain = OwnerReference::owner(&owner("web", "u1"), &deployments("v1")).unwrap();
        assert_eq!((plain.controller, plain.block_owner_deletion), (None, None));
    }

    #[test]
    fn an_owner_without_a_uid_is_refused() {
        let err = OwnerReference::controller(&owner("web", ""), &deployments("v1")).unwrap_err();
        assert!(err.to_string().contains("uid"), "{err}");
    }

    #[test]
    fn a_second_controller_is_refused_naming_the_first() {
        let mut meta = ObjectMeta {
            name: Some("cm".into()),
            ..Default::default()
        };
        let first = OwnerReference::controller(&owner("web", "u1"), &deployments("v1")).unwrap();
        meta.set_controller_reference(first.clone()).unwrap();
        // The same owner again (another version of its API): replaced, not added.
        let again = OwnerReference::controller(&owner("web", "u1"), &deployments("v2")).unwrap();
        meta.set_controller_reference(again).unwrap();
        assert_eq!(meta.owner_references.as_ref().unwrap().len(), 1);
        let other = OwnerReference::controller(&owner("api", "u2"), &deployments("v1")).unwrap();
        let err = meta.set_controller_reference(other).unwrap_err();
        assert_eq!(err.controller.uid, "u1");
        assert!(err.to_string().contains("\"web\""), "{err}");
        assert!(is_controlled_by(&meta, &owner("web", "u1").metadata));
        assert!(!is_controlled_by(
            &meta,
            &owner("web", "recreated").metadata
        ));
        // A plain reference to another owner sits beside the controller.
        let plain = OwnerReference::owner(&owner("api", "u2"), &deployments("v1")).unwrap();
        meta.set_owner_reference(plain);
        assert_eq!(meta.owner_references.as_ref().unwrap().len(), 2);
        assert!(is_controlled_by_uid(&meta, "u1"));
        assert!(meta.remove_owner_reference("u1"));
        assert!(meta.controller().is_none());
        assert!(!meta.remove_owner_reference("u1"));
    }

    #[test]
    fn a_recreated_controller_takes_its_old_controller_entry() {
        let mut meta = ObjectMeta::default();
        let old = OwnerReference::controller(&owner("web", "u1"), &deployments("v1")).unwrap();
        meta.set_controller_reference(old).unwrap();
        let new = OwnerReference::controller(&owner("web", "u9"), &deployments("v1")).unwrap();
        meta.set_controller_reference(new).unwrap();
        let list = meta.owner_references.as_ref().unwrap();
        assert_eq!(list.len(), 1);
        assert_eq!(&*list[0].uid, "u9");
        assert!(is_controlled_by_uid(&meta, "u9"));
        // Another kind or another group under the same name is another object.
        let other_kind = OwnerReference::controller(
            &owner("web", "u9"),
            &ApiResource::new("apps", "v1", "StatefulSet", "statefulsets", true),
        )
        .unwrap();
        assert!(meta.set_controller_reference(other_kind).is_err());
        let other_group = OwnerReference::controller(
            &owner("web", "u9"),
            &ApiResource::new("lab.example.com", "v1", "Deployment", "deployments", true),
        )
        .unwrap();
        assert!(meta.set_controller_reference(other_group).is_err());
    }

    #[test]
    fn a_recreated_owner_takes_its_old_entry() {
        let mut meta = ObjectMeta::default();
        let old = OwnerReference::owner(&owner("web", "u1"), &deployments("v1")).unwrap();
        meta.set_owner_reference(old);
        let new = OwnerReference::controller(&owner("web", "u9"), &deployments("v1")).unwrap();
        meta.set_controller_reference(new).unwrap();
        let list = meta.owner_references.unwrap();
        assert_eq!(list.len(), 1);
        assert_eq!(&*list[0].uid, "u9");
    }

    #[cfg(feature = "k8s-openapi")]
    #[test]
    fn k8s_openapi_metadata_takes_the_same_rules() {
        use k8s_openapi::api::apps::v1::Deployment;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta as K8sObjectMeta;
        let owner = Deployment {
            metadata: K8sObjectMeta {
                name: Some("web".into()),
                uid: Some("u1".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let r = OwnerReference::controller(&owner, &ApiResource::of::<Deployment>()).unwrap();
        let mut meta = K8sObjectMeta::default();
        meta.set_controller_reference(r).unwrap();
        assert!(is_controlled_by(&meta, &owner.metadata));
        let other = OwnerReference::controller(&owner_of("api", "u2"), &deployments("v1")).unwrap();
        assert_eq!(
            meta.set_controller_reference(other)
                .unwrap_err()
                .controller
                .uid,
            "u1"
        );
        assert!(meta.remove_owner_reference("u1"));
        assert!(meta.owner_references.is_none());
    }

    #[cfg(feature = "k8s-openapi")]
    fn owner_of(name: &str, uid: &str) -> DynamicObject {
        owner(name, uid)
    }
}
