//! Other triggers of a controller: the objects it owns, and any resource mapped to primary
//! keys by a user function (kube-rs's `owns` and `watches`).
//!
//! Why: a Deployment controller must look again at a Deployment when one of its ReplicaSets
//! changes (its status moved, someone deleted it), not only when the Deployment itself does.
//! Each trigger is a handler registered on a [`SharedIndexInformer`] the user passes in
//! (typically from the same [`SharedInformerFactory`](crate::cache::SharedInformerFactory)
//! as the rest of the program, so nothing is listed or watched twice); the handler turns
//! every add, update and delete of a secondary object into primary keys on the controller's
//! queue. The queue deduplicates: a Deployment whose three ReplicaSets change at once is
//! reconciled once.
//!
//! # Owned objects
//!
//! An object is owned by the primary object named by its `ownerReferences` entry that has
//! `controller: true` (there is at most one) when that entry's kind and API group (the part
//! of `apiVersion` before `/`, empty for the core group) are the primary resource's. The
//! owner's key is `namespace/name` with the owned object's namespace (Kubernetes allows
//! namespaced owners only in the same namespace), or `name` for a cluster-scoped primary.
//! The version is not compared (an owner written as `apps/v1beta2` is the same Deployment),
//! nor the owner's `uid`: a reference to a deleted-and-recreated owner of the same name
//! triggers the new one, which is a harmless extra reconcile. References without
//! `controller: true` (plain owners, such as garbage-collection links) trigger nothing, like
//! client-go's `GetControllerOf` and kube-rs. A cluster-scoped object naming a namespaced
//! primary as its controller is invalid in Kubernetes and ignored here.
//!
//! # What triggers
//!
//! - add (the initial list included): the keys of the object;
//! - update: the keys of the new object and of the old one, each key once (an object that
//!   changed owner triggers both the old and the new owner; one that did not, its owner
//!   once); an [`EventFilter`](super::EventFilter) given with `owns_filtered` or
//!   `watches_filtered` judges updates first (resyncs always pass);
//! - delete, tombstones included (a deletion missed while disconnected): the keys of the last
//!   known state, so the owner of a deleted ReplicaSet is reconciled and can recreate it.
//!
//! The controller starts each trigger's informer (if not yet) and waits for it to sync before
//! its workers start, so a reconcile can read owned objects from their
//! [`Lister`](crate::cache::Lister); on stop it removes its handlers (the informers, shared,
//! keep running for their other users).

use std::sync::Arc;
use std::time::Duration;

use super::enqueue::Sink;
use super::filter::{update_passes, EventFilter};
use crate::api::{ApiResource, Meta, Object};
use crate::cache::{DeletedObject, EventHandler, HandlerRegistration, SharedIndexInformer};
use crate::error::Result;

/// A user mapping: a secondary object to the keys of the primary objects to reconcile.
pub(super) type Mapper<C> = Box<dyn Fn(&C) -> Vec<String> + Send + 'static>;

/// A trigger not yet registered: an informer and how its objects map to primary keys.
pub(super) trait Trigger: Send {
    /// Registers the handler that feeds `sink` and starts the informer.
    fn attach(self: Box<Self>, sink: Sink) -> Result<Box<dyn Attached>>;
}

/// A registered trigger.
pub(super) trait Attached: Send {
    /// Waits until the trigger's handler has handled its informer's initial list.
    fn wait_for_sync(&self, timeout: Duration) -> bool;
    /// The informer's name (for messages).
    fn name(&self) -> &str;
    /// Removes the handler (joining its thread); the informer keeps running.
    fn detach(self: Box<Self>);
}

/// A trigger over the objects of `informer`.
pub(super) struct Source<C: Object> {
    informer: SharedIndexInformer<C>,
    mapper: Mapper<C>,
    filter: Option<EventFilter<C>>,
}

impl<C: Object> Source<C> {
    /// Objects of `informer` mapped by `mapper`, their updates judged by `filter`.
    pub(super) fn new(
        informer: SharedIndexInformer<C>,
        mapper: Mapper<C>,
        filter: Option<EventFilter<C>>,
    ) -> Self {
        Source {
            informer,
            mapper,
            filter,
        }
    }

    /// Objects of `informer` mapped to their controller of kind `owner` (see the module docs).
    pub(super) fn owned(
        informer: SharedIndexInformer<C>,
        owner: &ApiResource,
        filter: Option<EventFilter<C>>,
    ) -> Self {
        let owner = OwnerKind::of(owner);
        Source::new(
            informer,
            Box::new(move |o: &C| owner.key_of_owner(o.metadata()).into_iter().collect()),
            filter,
        )
    }
}

impl<C: Object> Trigger for Source<C> {
    fn attach(self: Box<Self>, sink: Sink) -> Result<Box<dyn Attached>> {
        let Source {
            informer,
            mapper,
            filter,
        } = *self;
        let registration = informer.add_event_handler(MapToKeys {
            mapper,
            sink,
            filter,
        })?;
        let attached = Registered {
            informer,
            registration,
        };
        // On an error the handler is removed again (dropping `attached` does not).
        if let Err(e) = attached.informer.start() {
            Box::new(attached).detach();
            return Err(e);
        }
        Ok(Box::new(attached))
    }
}

struct Registered<C: Object> {
    informer: SharedIndexInformer<C>,
    registration: HandlerRegistration<C>,
}

impl<C: Object> Attached for Registered<C> {
    fn wait_for_sync(&self, timeout: Duration) -> bool {
        self.registration.wait_for_sync(timeout)
    }

    fn name(&self) -> &str {
        self.informer.name()
    }

    fn detach(self: Box<Self>) {
        let Registered {
            informer,
            registration,
        } = *self;
        informer.remove_event_handler(registration);
    }
}

/// The handler: every change of a secondary object becomes primary keys on the queue.
struct MapToKeys<C> {
    mapper: Mapper<C>,
    sink: Sink,
    filter: Option<EventFilter<C>>,
}

impl<C: Object> EventHandler<C> for MapToKeys<C> {
    fn on_add(&mut self, obj: Arc<C>, _initial: bool) {
        self.sink.add_all((self.mapper)(&obj));
    }

    fn on_update(&mut self, old: Arc<C>, new: Arc<C>) {
        if !update_passes(self.filter.as_ref(), &old, &new) {
            self.sink.counters.filtered();
            return;
        }
        // The keys of both states, each once: an owner that did not change is queued once.
        let mut keys = (self.mapper)(&new);
        if !Arc::ptr_eq(&old, &new) {
            keys.extend((self.mapper)(&old));
        }
        self.sink.add_all(keys);
    }

    fn on_delete(&mut self, obj: DeletedObject<C>) {
        self.sink.add_all((self.mapper)(obj.object()));
    }
}

/// The primary resource as an owner reference names it.
#[derive(Clone, Debug)]
pub(super) struct OwnerKind {
    group: String,
    kind: String,
    namespaced: bool,
}

impl OwnerKind {
    pub(super) fn of(resource: &ApiResource) -> Self {
        OwnerKind {
            group: resource.group.clone(),
            kind: resource.kind.clone(),
            namespaced: resource.namespaced,
        }
    }

    /// The key of the object's controller when it is of this kind (see the module docs).
    pub(super) fn key_of_owner<M: Meta>(&self, meta: &M) -> Option<String> {
        let owner = meta.controller()?;
        let group = owner.api_version.rsplit_once('/').map_or("", |(g, _)| g);
        if owner.kind != self.kind || group != self.group || owner.name.is_empty() {
            return None;
        }
        if !self.namespaced {
            return Some(owner.name.to_owned());
        }
        match meta.namespace() {
            "" => None,
            ns => Some(crate::api::meta_key(ns, owner.name)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{ObjectMeta, OwnerReference};

    fn meta(ns: Option<&str>, refs: Vec<OwnerReference>) -> ObjectMeta {
        ObjectMeta {
            name: Some("child".into()),
            namespace: ns.map(Into::into),
            owner_references: Some(refs),
            ..Default::default()
        }
    }

    fn owner(
        api_version: &str,
        kind: &str,
        name: &str,
        controller: Option<bool>,
    ) -> OwnerReference {
        OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            uid: "u".into(),
            controller,
            block_owner_deletion: None,
        }
    }

    #[test]
    fn maps_the_controller_reference_of_the_primary_kind_only() {
        let deployments = OwnerKind::of(&ApiResource::new(
            "apps",
            "v1",
            "Deployment",
            "deployments",
            true,
        ));
        let rs = meta(
            Some("lab"),
            vec![owner("apps/v1", "Deployment", "web", Some(true))],
        );
        assert_eq!(deployments.key_of_owner(&rs).as_deref(), Some("lab/web"));
        // Another version of the same group is the same owner.
        let old = meta(
            Some("lab"),
            vec![owner("apps/v1beta2", "Deployment", "web", Some(true))],
        );
        assert_eq!(deployments.key_of_owner(&old).as_deref(), Some("lab/web"));
        // Not the controller, another group, another kind, no namespace: nothing.
        for m in [
            meta(
                Some("lab"),
                vec![owner("apps/v1", "Deployment", "web", None)],
            ),
            meta(
                Some("lab"),
                vec![owner("apps/v1", "Deployment", "web", Some(false))],
            ),
            meta(
                Some("lab"),
                vec![owner("example.com/v1", "Deployment", "web", Some(true))],
            ),
            meta(
                Some("lab"),
                vec![owner("v1", "Deployment", "web", Some(true))],
            ),
            meta(
                Some("lab"),
                vec![owner("apps/v1", "StatefulSet", "web", Some(true))],
            ),
            meta(
                None,
                vec![owner("apps/v1", "Deployment", "web", Some(true))],
            ),
            meta(Some("lab"), vec![]),
        ] {
            assert_eq!(deployments.key_of_owner(&m), None, "{m:?}");
        }
        // A plain owner before the controller does not hide it.
        let both = meta(
            Some("lab"),
            vec![
                owner("apps/v1", "Deployment", "plain", None),
                owner("apps/v1", "Deployment", "boss", Some(true)),
            ],
        );
        assert_eq!(deployments.key_of_owner(&both).as_deref(), Some("lab/boss"));
    }

    #[test]
    fn core_and_cluster_scoped_owners() {
        let nodes = OwnerKind::of(&ApiResource::new("", "v1", "Node", "nodes", false));
        let lease = meta(
            Some("kube-node-lease"),
            vec![owner("v1", "Node", "n1", Some(true))],
        );
        assert_eq!(nodes.key_of_owner(&lease).as_deref(), Some("n1"));
        let cluster_child = meta(None, vec![owner("v1", "Node", "n1", Some(true))]);
        assert_eq!(nodes.key_of_owner(&cluster_child).as_deref(), Some("n1"));
    }
}
