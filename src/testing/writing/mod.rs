//! The write room: how an HTTP write changes an object.
//!
//! `writes.rs` answers create, update, patch, delete and deletecollection with their options;
//! `patch.rs` picks a patch type by `Content-Type` and runs it: JSON patch (`json_patch.rs`),
//! strategic merge (`strategic_merge.rs`) or server-side apply (`apply.rs`), which with
//! `managed_fields.rs` keeps who owns which field; `scale.rs` is the `scale` subresource.
//! They live together because they are one path, from a request body to the object stored,
//! and change together when the captures of a write change.

pub(super) mod apply;
pub(super) mod crd_version;
pub(crate) mod json_patch;
pub(super) mod managed_fields;
pub(super) mod merge_patch;
pub(super) mod patch;
pub(super) mod scale;
pub(super) mod strategic_merge;
pub(super) mod writes;

// What the writes take from the other rooms (their files name them `super::<module>`).
use super::admission::webhooks;
use super::schemas::{crd, crd_defaults, crd_lifecycle, duplicate_fields, validation};
use super::serving::{answers, http};
use super::storage::{events, resources, store};
