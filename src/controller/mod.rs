//! Controllers: the reconcile loop, and leader election so that one replica of many acts.
//!
//! - [`Controller`] (`controller.rs`): informer events become keys in a rate-limited work
//!   queue; worker threads reconcile them. It can run under a [`LeaderElector`]
//!   ([`ControllerBuilder::leader_election`]): the informer stays warm on every replica, the
//!   workers run only while this replica leads.
//! - [`LeaderElector`] ([`leader_election`], one file per piece): client-go's leader election
//!   on a `coordination.k8s.io/v1` [`Lease`] (`lease.rs`, the typed record).
//! - [`EventRecorder`] (`events.rs`): Events about the objects a controller acts on, written
//!   by a background thread so that reconciles never wait on them.
//! - [`finalizer()`] ([`mod@finalizer`]): clean up before an object is deleted, kube-rs's
//!   `finalizer` made blocking.
//! - [`ControllerStats`] and [`ControllerHealth`] (`stats.rs`): how many reconciles ended,
//!   and how; the last error of every failing key.
//! - [`EventFilter`] (`filter.rs`): which updates are worth a reconcile (generation
//!   changed, labels changed, ...); [`split_key`] (`key.rs`): a key back into namespace and
//!   name.
//! - [`CreateOrPatch`] (`create_or_patch.rs`): read, change in a closure, write only what
//!   changed (a guarded merge patch, or server-side apply); created, updated or unchanged.
//!   Owner references for what it writes: [`OwnerReference::controller`](crate::api::OwnerReference::controller).
//! - [`wait`]: wait for one object's condition (a CRD served, a Deployment rolled out, a
//!   Pod ready, an object gone) with a timeout and a cancel.
//! - [`sharding`]: a controller's objects spread over its live replicas (shard Leases,
//!   consistent hashing, a sharder writing shard labels, a drain hand-over);
//!   [`ControllerBuilder::sharded`].
//!
//! # A reconcile's writes: owner references, create or patch, waiting
//!
//! A reconcile that keeps an owned object in shape does three things:
//!
//! - it builds the owner reference from the owner with
//!   [`OwnerReference::controller`](crate::api::OwnerReference::controller) (client-go's
//!   rules; a second controller is refused);
//! - it writes only what changed with [`CreateOrPatch`]: a merge patch guarded by the
//!   resourceVersion it read, or server-side apply. The answer says `Created`, `Updated` or
//!   `Unchanged`;
//! - where a step must wait, it waits on one object with a timeout ([`wait`]: a Deployment
//!   rolled out, a Pod ready, a CRD served, an object gone).
//!
//! ```
//! use std::time::Duration;
//! use kube_informer::api::{ApiResource, DynamicObject, OwnerReference, OwnerReferences};
//! use kube_informer::controller::{wait, CreateOrPatch};
//! use kube_informer::Api;
//! # let server = kube_informer::testing::ApiServer::start();
//! # let client = kube_informer::Client::new(server.client_config())?;
//! # let deploys = ApiResource::new("apps", "v1", "Deployment", "deployments", true);
//! # let web: DynamicObject = Api::namespaced_with(client.clone(), "lab", &deploys).create(&Default::default(),
//! #     &serde_json::json!({"metadata": {"name": "web"}, "spec": {"replicas": 1}}))?;
//! let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
//! let api: Api<DynamicObject> = Api::namespaced_with(client, "lab", &cms);
//! let blank = DynamicObject::new("web-config", &cms);
//! // `web` is the Deployment being reconciled.
//! let written = CreateOrPatch::new(&api).field_manager("web-operator").run(blank, |cm| {
//!     cm.metadata.set_controller_reference(OwnerReference::controller(&web, &deploys)?)?;
//!     // Fields by path (DynamicObject::get, set, edit): data.replicas follows the Deployment.
//!     let replicas = web.get::<i64>(&["spec", "replicas"])?.unwrap_or(1);
//!     cm.set(&["data", "replicas"], replicas.to_string())
//! })?;
//! println!("web-config {}", written.as_str()); // created, then unchanged on every later reconcile
//! assert_eq!(written.object().get::<String>(&["data", "replicas"])?.as_deref(), Some("1"));
//! wait::Wait::new(&api, "web-config", Duration::from_secs(30)).until(wait::conditions::exists())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Owned objects and other triggers
//!
//! Besides its primary resource, a controller reconciles a primary object when a secondary
//! object mapped to it changes (`triggers.rs`):
//! - [`ControllerBuilder::owns`]: objects whose controller (the `ownerReferences` entry with
//!   `controller: true`) is of the primary resource's kind and API group (any version) are
//!   mapped to that owner: `namespace/name` in the owned object's namespace, or `name` for a
//!   cluster-scoped primary. Plain owner references (without `controller: true`) trigger
//!   nothing, nor does the owner's `uid` matter (a recreated owner of the same name is
//!   reconciled; a harmless extra reconcile).
//! - [`ControllerBuilder::watches`]: any resource, with your function from an object to
//!   primary keys.
//!
//! Adds (the initial list included), updates (the keys of the old and of the new object, each
//! once: an object that changed owner triggers both owners, one that did not triggers its
//! owner once) and deletions (tombstones included) trigger; `owns_filtered` and
//! `watches_filtered` judge updates with an [`EventFilter`] first.
//! Both take a shared informer you pass in (from the factory the rest of the program uses:
//! nothing is listed twice); the controller starts it if needed, waits for it to sync before
//! its workers start, and removes its handler on stop (the informer keeps running).
//! That informer caches whatever it is scoped to, not only what the controller owns: from a
//! factory with default options, **every object of the resource in the cluster**. Scope it
//! first, to a label the reconcile sets or to a namespace
//! ([`SharedInformerFactory::set_scope`](crate::cache::SharedInformerFactory::set_scope)).
//!
//! Limits: the owner's `uid` and `apiVersion` version are not compared (see above); a
//! trigger's handler gets its informer's default resync period, so a resync of the owned
//! informer reconciles every owner again; a `watches` mapper runs on that informer's handler
//! thread (keep it to cache reads); under leader election the triggers, like the primary
//! informer, feed the queue on every replica.
//!
//! # Reconcile outcomes
//!
//! `Ok(Action::Done)` forgets the key's retry history; `Ok(Action::RequeueAfter(d))` looks
//! again after `d`; an error, or a panic (caught on the worker), retries with the queue's
//! rate limiter (per-key exponential back-off). Either way the key is marked done, so it
//! never stays in the queue's `processing` set, and a key added again while its reconcile
//! was running is reconciled again afterwards. [`Controller::stats`] counts them;
//! [`Controller::health`] names the last error of every key whose last reconcile failed, and
//! how long every reconcile has failed (the [`Manager`](crate::manager::Manager)'s opt-in
//! readiness check `reconciles` reads it).
//!
//! # Keys
//!
//! A key is `namespace/name`, or `name` for a cluster-scoped object; [`split_key`] splits
//! it back (`(Option<&str>, &str)`, what [`Lister::get`](crate::cache::Lister::get) takes).

#[allow(clippy::module_inception)]
pub(crate) mod controller;
mod create_or_patch;
mod enqueue;
mod events;
mod filter;
pub mod finalizer;
#[cfg(all(test, shuttle))]
mod interleavings;
mod key;
pub mod leader_election;
mod lease;
pub mod sharding;
pub(crate) mod stats;
mod triggers;
pub mod wait;

pub use controller::{Action, Controller, ControllerBuilder};
pub use create_or_patch::{create_or_patch, CreateOrPatch, OperationResult};
pub use events::{
    EventRecorder, EventRecorderConfig, EventRecorderStats, EventType, ObjectReference,
};
pub use filter::EventFilter;
pub use finalizer::{finalizer, FinalizerError, FinalizerEvent};
pub use key::split_key;
pub use leader_election::{LeaderCallbacks, LeaderElectionConfig, LeaderElector, Term};
pub use lease::{Lease, LeaseSpec, MicroTime};
pub use stats::{ControllerHealth, ControllerStats, KeyError, MAX_FAILING_KEYS};
