//! `Lister`: typed reads from an informer's cache, never touching the API server.

use std::sync::Arc;

use super::store::{Store, NAMESPACE_INDEX};
use crate::api::{LabelSelector, Object};
use crate::error::Result;

/// Reads from a cache: get by name, list by label selector, per namespace, by index.
pub struct Lister<K> {
    store: Arc<Store<K>>,
}

impl<K> Clone for Lister<K> {
    fn clone(&self) -> Self {
        Lister {
            store: Arc::clone(&self.store),
        }
    }
}

impl<K> std::fmt::Debug for Lister<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lister").finish_non_exhaustive()
    }
}

impl<K: Object> Lister<K> {
    /// A lister over `store`.
    pub fn new(store: Arc<Store<K>>) -> Self {
        Lister { store }
    }

    /// One object; `namespace` is `None` for cluster-scoped kinds.
    pub fn get(&self, namespace: Option<&str>, name: &str) -> Option<Arc<K>> {
        match namespace {
            Some(ns) if !ns.is_empty() => self.store.get(&format!("{ns}/{name}")),
            _ => self.store.get(name),
        }
    }

    /// Every object matching `selector`, sorted by key.
    pub fn list(&self, selector: &LabelSelector) -> Vec<Arc<K>> {
        let mut v: Vec<Arc<K>> = self
            .store
            .list()
            .into_iter()
            .filter(|o| selector.matches_opt(o.metadata().labels.as_ref()))
            .collect();
        v.sort_by_key(|o| o.metadata().key());
        v
    }

    /// Every object.
    pub fn list_all(&self) -> Vec<Arc<K>> {
        self.list(&LabelSelector::everything())
    }

    /// Objects of one namespace matching `selector` (through the namespace index).
    pub fn list_namespace(&self, namespace: &str, selector: &LabelSelector) -> Vec<Arc<K>> {
        let mut v: Vec<Arc<K>> = self
            .store
            .by_index(NAMESPACE_INDEX, namespace)
            .unwrap_or_default()
            .into_iter()
            .filter(|o| selector.matches_opt(o.metadata().labels.as_ref()))
            .collect();
        v.sort_by_key(|o| o.metadata().key());
        v
    }

    /// Objects under `value` in the index `index`.
    pub fn by_index(&self, index: &str, value: &str) -> Result<Vec<Arc<K>>> {
        self.store.by_index(index, value)
    }
}
