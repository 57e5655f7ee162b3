//! The store room: what the test server keeps and how it reads it back.
//!
//! `store.rs` is the etcd plus watch cache of the test server (objects under one increasing
//! resourceVersion, the event history, compaction, backups); `read_versions.rs` decides which
//! state a list or watch answers; `resources.rs` says what is known about a resource beyond
//! its objects; `metadata.rs` and `events.rs` shape what is stored or read for one kind of
//! answer (metadata-only, Events); `encoded.rs` keeps a stored version's protobuf once made;
//! `type_key.rs` names a resource; `db.rs` is the store as the rooms share it (with its change
//! notification and the stop flag). They live together because each of them is about the
//! stored state itself, not about how a request reaches it: the HTTP side is in
//! [`serving`](super::serving), the write rules in [`writing`](super::writing).

pub(super) mod db;
pub(super) mod encoded;
pub(super) mod events;
pub(super) mod metadata;
pub(super) mod read_versions;
pub(super) mod resources;
pub(super) mod store;
pub(super) mod type_key;

// What the store takes from the other rooms (its files name them `super::<module>`).
use super::schemas::{
    crd_cel, crd_defaults, crd_embedded, crd_lifecycle, crd_status, defaults, list_types,
    object_meta, schema, validation,
};
use super::serving::builtins;
use super::writing::{managed_fields, merge_patch};
