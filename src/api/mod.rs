//! The object model: metadata, the resource traits, dynamic and metadata-only objects, lists,
//! watch events,
//! the `Status` error body and label selectors.

mod dynamic;
mod json_scan;
pub(crate) mod known_ends;
mod list;
mod meta;
mod meta_scan;
mod metadata;
mod raw_json;
mod resource;
mod selector;
mod status;
mod string_map;
pub(crate) mod url_encoding;
mod watch_event;

pub use dynamic::DynamicObject;
pub use list::ObjectList;
pub use meta::{ListMeta, ObjectMeta, OwnerReference};
pub use metadata::{
    PartialObjectMetadata, PartialObjectMetadataList, METADATA_ACCEPT, METADATA_LIST_ACCEPT,
};
pub use raw_json::RawJson;
pub use resource::{ApiResource, Object, Resource};
pub use selector::{LabelSelector, Requirement};
pub use status::{Status, StatusCause, StatusDetails};
pub use string_map::StringMap;
pub use watch_event::{Bookmark, WatchEvent, INITIAL_EVENTS_END_ANNOTATION};
