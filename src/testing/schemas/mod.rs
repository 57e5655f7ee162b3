//! The schema room: what a custom resource may hold, and what the server fills in.
//!
//! CustomResourceDefinitions (`crd.rs`, and `crd_lifecycle.rs` for one written, deleted and
//! created again over the API), their structural schemas (`schema.rs`, checked by
//! `structural.rs`, string `format`s in `formats.rs`), the embedded resources and defaults
//! kube-apiserver applies while decoding (`crd_embedded.rs`, `crd_defaults.rs`, and
//! `defaults.rs` for the few built-in defaults), duplicate fields in a body
//! (`duplicate_fields.rs`) and the 422 `Invalid` every write can get (`validation.rs`).
//! They live together because they are the rules of an object's shape, applied by the
//! writes ([`writing`](super::writing)) and reads ([`storage`](super::storage)) alike.

mod cel;
pub(crate) mod crd;
pub(super) mod crd_cel;
pub(super) mod crd_defaults;
pub(super) mod crd_embedded;
pub(super) mod crd_lifecycle;
pub(super) mod crd_status;
pub(super) mod defaults;
pub(super) mod duplicate_fields;
pub(super) mod formats;
pub(super) mod list_types;
pub(super) mod object_meta;
pub(super) mod schema;
pub(crate) mod structural;
pub(super) mod validation;

// What the schemas take from the other rooms (their files name them `super::<module>`).
use super::storage::{resources, store};
