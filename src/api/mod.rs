//! The object model: metadata, the resource traits (and the `resource!` macro that implements
//! them for a slim type), dynamic and metadata-only objects, lists, watch events, the `Status`
//! error body and label selectors.
//!
//! What an object *is* lives here; how its bytes are read fast (the scanner, the recorded
//! container ends, raw JSON text) lives in the decoding engine, `src/json/`.
//!
//! # Your own types: `resource!`
//!
//! Your own types declare only the fields you read. The rest of each object is skipped while
//! decoding (the library's scanner jumps over what the list page's early check recorded) and
//! never stored. [`resource!`](crate::resource) declares one:
//!
//! ```
//! use serde::Deserialize;
//!
//! kube_informer::resource! {
//!     /// Pods, as this tool reads them.
//!     #[resource(group = "", version = "v1", kind = "Pod", plural = "pods", namespaced)]
//!     pub struct Pod {
//!         pub status: PodStatus,
//!     }
//! }
//!
//! #[derive(Deserialize, Clone, Debug, Default)]
//! pub struct PodStatus {
//!     pub phase: Option<String>,
//! }
//! # let (pod, _) = <Pod as kube_informer::api::Object>::from_json_prefix(
//! #     r#"{"metadata":{"name":"web"},"status":{"phase":"Running"}}"#).unwrap();
//! # assert_eq!(pod.status.phase.as_deref(), Some("Running"));
//! ```
//!
//! The macro emits:
//!
//! - the struct, with `metadata: ObjectMeta` first, `#[derive(Deserialize, Clone, Debug)]`
//!   and camelCase field names;
//! - `#[serde(default)]` on your fields, so an object without `status` still decodes;
//! - the [`Object`] and [`Resource`] impls. Write `cluster` instead of `namespaced` for
//!   cluster-scoped kinds.
//!
//! It is a `macro_rules!`, not a derive: a derive needs a proc-macro crate (`syn`, `quote`,
//! `proc-macro2` in every user's build), which this library's dependency budget rules out. A
//! type of another shape (a required field, a metadata type of its own) implements [`Object`]
//! (`type Meta`, `metadata`, `metadata_mut`) and [`Resource`] (five constants) by hand. Any
//! `#[derive(Deserialize)]` type decodes through the library's own serde deserializer, which
//! gives exactly what serde_json gives.
//!
//! Two types need no declaration. [`DynamicObject`] keeps typed metadata and the rest as raw
//! JSON text, decoded when asked; its fields are read and changed by path
//! ([`DynamicObject::get`], [`set`](DynamicObject::set), [`edit`](DynamicObject::edit)),
//! which decodes and re-encodes only the top-level field the path is in. [`PartialObjectMetadata`] holds kind, apiVersion and
//! metadata only: `factory.metadata_informer(&api_resource)` caches it for any resource
//! (built-in or custom) with the same listers and indexes. Its lists and watches ask the
//! server for the metadata form
//! (`Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json`,
//! and `as=PartialObjectMetadata` for watches and single GETs); `Api::metadata()` and
//! `Api::get_metadata` do the same for one-off reads.
//!
//! # Typed built-in resources (k8s-openapi)
//!
//! With the `k8s-openapi` feature, [k8s-openapi](https://crates.io/crates/k8s-openapi)'s
//! types (`Pod`, `ConfigMap`, `Node`, `Deployment`, ...) work everywhere our own types do:
//! `Api<Pod>`, `factory.informer::<Pod>()`, listers, indexes, controllers, `owns`, the
//! finalizer helper. So does any custom type that implements k8s-openapi's `Resource` and
//! `Metadata` traits, as kube-derive's do.
//!
//! k8s-openapi needs exactly one Kubernetes version feature, and this crate does not choose
//! it: your program does, beside this crate's feature (Rust 1.85 or newer, as k8s-openapi
//! requires):
//!
//! ```toml
//! [dependencies]
//! kube-informer = { version = "0.1", features = ["k8s-openapi"] }
//! k8s-openapi = { version = "0.29", features = ["v1_35"] } # the oldest API server you support
//! ```
//!
//! The example below is not run here (these docs build without the feature);
//! `tests/typed.rs` makes the same calls.
//!
//! ```rust,ignore
//! use std::time::Duration;
//!
//! use k8s_openapi::api::core::v1::Pod;
//! use kube_informer::api::{Meta, Object};
//! use kube_informer::cache::SharedInformerFactory;
//! use kube_informer::{Api, ListParams};
//!
//! fn main() -> kube_informer::Result<()> {
//!     let client = kube_informer::config::Config::infer()?.client()?;
//!     let pods: Api<Pod> = Api::namespaced(client.clone(), "lab");
//!     for p in pods.list_all(&ListParams::default())?.items {
//!         println!("{} {:?}", p.metadata.name(), p.status.and_then(|s| s.phase));
//!     }
//!
//!     let factory = SharedInformerFactory::new(client);
//!     let informer = factory.informer::<Pod>();
//!     factory.start()?;
//!     factory.wait_for_cache_sync(Duration::from_secs(60));
//!     for p in informer.lister().list_all() {
//!         // `Object::metadata`: k8s-openapi's `Metadata::metadata` has the same name.
//!         println!("{} on {:?}", Object::metadata(p.as_ref()).key(),
//!                  p.spec.as_ref().and_then(|s| s.node_name.as_deref()));
//!     }
//!     factory.shutdown();
//!     Ok(())
//! }
//! ```
//!
//! The library reads metadata through the [`Meta`] trait (name, namespace, labels, owner
//! references, finalizers, ...), implemented by our [`ObjectMeta`] and by k8s-openapi's. Your
//! own types name theirs with `type Meta = ObjectMeta;` in `impl Object`.
//!
//! k8s-openapi's types decode every field they know with their own `Deserialize` (run on the
//! library's deserializer, which skips only what they do not declare). So a slim type of your
//! own (only the fields you read) decodes faster and keeps less memory. Stripping
//! `managedFields` (the factory option `strip_managed_fields`) matters more for them: their
//! `managedFields` are decoded entries, not raw text.

#[cfg(feature = "crd")]
pub mod crd;
mod dynamic;
#[cfg(feature = "k8s-openapi")]
mod k8s_types;
mod list;
mod meta;
mod meta_trait;
mod metadata;
mod owner_reference;
#[cfg(feature = "protobuf")]
pub(crate) mod protobuf_answers;
mod resource;
mod resource_macro;
mod reviews;
mod selector;
mod status;
pub(crate) mod url_encoding;
mod watch_event;

pub use crate::json::decode_options::{strip_managed_fields_on_this_thread, StripGuard};
pub use crate::json::raw_json::RawJson;
pub use crate::json::shared_str::SharedStr;
pub use crate::json::string_map::StringMap;
pub use dynamic::DynamicObject;
#[cfg(feature = "k8s-openapi")]
pub use k8s_types::ScopeKind;
pub use list::ObjectList;
pub use meta::{ListMeta, ObjectMeta, OwnerReference};
pub(crate) use meta_trait::key_of as meta_key;
pub use meta_trait::{Meta, OwnerRef};
pub use metadata::{
    PartialObjectMetadata, PartialObjectMetadataList, METADATA_ACCEPT, METADATA_LIST_ACCEPT,
};
#[cfg(feature = "protobuf")]
pub use metadata::{METADATA_PROTOBUF_ACCEPT, METADATA_PROTOBUF_LIST_ACCEPT};
pub use owner_reference::{
    is_controlled_by, is_controlled_by_uid, AlreadyOwnedError, OwnerReferences,
};
#[cfg(feature = "protobuf")]
pub use resource::PROTOBUF_OR_JSON;
pub(crate) use resource::{accept, list_accept, write_accept};
pub use resource::{ApiResource, Object, Resource};
pub use reviews::{
    BoundObjectReference, NonResourceAttributes, ResourceAttributes, SelfSubjectReview,
    SelfSubjectReviewStatus, SubjectAccessReview, SubjectAccessReviewSpec,
    SubjectAccessReviewStatus, TokenRequest, TokenRequestSpec, TokenRequestStatus, TokenReview,
    TokenReviewSpec, TokenReviewStatus, UserInfo,
};
pub use selector::{LabelSelector, Requirement};
pub use status::{Status, StatusCause, StatusDetails};
pub use watch_event::{Bookmark, WatchEvent, INITIAL_EVENTS_END_ANNOTATION};
