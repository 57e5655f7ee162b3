//! The object model: metadata, the resource traits (and the `resource!` macro that implements
//! them for a slim type), dynamic and metadata-only objects, lists, watch events, the `Status`
//! error body and label selectors.
//!
//! What an object *is* lives here; how its bytes are read fast (the scanner, the recorded
//! container ends, raw JSON text) lives in the decoding engine, `src/json/`.

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
pub use owner_reference::{
    is_controlled_by, is_controlled_by_uid, AlreadyOwnedError, OwnerReferences,
};
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
