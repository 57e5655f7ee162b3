//! Which resource a request, a collection or an event is about: group, version, plural.
//! A leaf, so that what only names a resource (its subresources, its events) does not
//! depend on the store; `store.rs` re-exports it for the rooms.

use crate::api::ApiResource;

/// Which part of the API a request addresses.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct TypeKey {
    pub group: String,
    pub version: String,
    pub plural: String,
}

impl TypeKey {
    pub fn of(ar: &ApiResource) -> Self {
        TypeKey {
            group: ar.group.clone(),
            version: ar.version.clone(),
            plural: ar.plural.clone(),
        }
    }

    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}
