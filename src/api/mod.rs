//! The object model: metadata, the resource traits, dynamic and metadata-only objects, lists,
//! watch events, the `Status` error body and label selectors.
//!
//! What an object *is* lives here; how its bytes are read fast (the scanner, the recorded
//! container ends, raw JSON text) lives in the decoding engine, `src/json/`.

mod dynamic;
mod list;
mod meta;
mod metadata;
mod resource;
mod selector;
mod status;
pub(crate) mod url_encoding;
mod watch_event;

pub use crate::json::raw_json::RawJson;
pub use crate::json::string_map::StringMap;
pub use dynamic::DynamicObject;
pub use list::ObjectList;
pub use meta::{ListMeta, ObjectMeta, OwnerReference};
pub use metadata::{
    PartialObjectMetadata, PartialObjectMetadataList, METADATA_ACCEPT, METADATA_LIST_ACCEPT,
};
pub use resource::{ApiResource, Object, Resource};
pub use selector::{LabelSelector, Requirement};
pub use status::{Status, StatusCause, StatusDetails};
pub use watch_event::{Bookmark, WatchEvent, INITIAL_EVENTS_END_ANNOTATION};
