//! `Store`: the thread-safe, indexed cache of objects (client-go's Indexer).
//!
//! A map `key -> Arc<K>` behind a reader-writer lock; reads clone `Arc`s, so a reader holds
//! the lock only while copying pointers. Named index functions map an object to index values
//! (its namespace, its node, its owner...) and the store keeps `index -> value -> keys` up to
//! date on every write, so `by_index` is a lookup, not a scan.
//!
//! An index function may fail on an object (a missing field, say). The object is still
//! stored — the cache never drops what the server has — it is left out of that one index, and
//! the write returns [`Error::InvalidInput`] naming the index and the key.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;

use super::catch::catch;
use super::delta::key_of;
use crate::api::{Meta, Object};
use crate::error::{Error, Result};
use crate::sync::RwLock;

/// Maps an object to the values it is indexed under.
pub type IndexFn<K> = Arc<dyn Fn(&K) -> std::result::Result<Vec<String>, String> + Send + Sync>;

/// Name of the ready-made namespace index.
pub const NAMESPACE_INDEX: &str = "namespace";

/// The namespace index function: an object's namespace (none for cluster-scoped ones).
pub fn namespace_index<K: Object>() -> IndexFn<K> {
    Arc::new(|o: &K| {
        Ok(match o.metadata().namespace() {
            "" => Vec::new(),
            ns => vec![ns.to_owned()],
        })
    })
}

type Index = HashMap<String, BTreeSet<String>>;

struct Inner<K> {
    items: HashMap<String, Arc<K>>,
    indexers: HashMap<String, IndexFn<K>>,
    indices: HashMap<String, Index>,
}

/// The indexed cache. Cheap to share behind an `Arc`.
pub struct Store<K> {
    inner: RwLock<Inner<K>>,
}

impl<K> fmt::Debug for Store<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.inner.read();
        f.debug_struct("Store")
            .field("items", &inner.items.len())
            .field("indexers", &inner.indexers.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl<K: Object> Default for Store<K> {
    fn default() -> Self {
        Self::new()
    }
}

/// Computes an object's values for every index; failures are collected, not fatal.
fn index_values<K>(
    indexers: &HashMap<String, IndexFn<K>>,
    obj: &K,
    key: &str,
    errors: &mut Vec<String>,
) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::with_capacity(indexers.len());
    for (name, f) in indexers {
        match call(f, obj) {
            Ok(values) => out.push((name.clone(), values)),
            Err(e) => errors.push(format!("index {name:?} failed on {key:?}: {e}")),
        }
    }
    out
}

/// Calls an index function; a panic in it is a failure on this object like any other.
fn call<K>(f: &IndexFn<K>, obj: &K) -> std::result::Result<Vec<String>, String> {
    catch(|| f(obj)).unwrap_or_else(|panic| Err(format!("the index function panicked: {panic}")))
}

impl<K: Object> Inner<K> {
    fn unindex(&mut self, key: &str, old: &K) {
        let mut ignored = Vec::new();
        for (name, values) in index_values(&self.indexers, old, key, &mut ignored) {
            if let Some(index) = self.indices.get_mut(&name) {
                for v in values {
                    if let Some(keys) = index.get_mut(&v) {
                        keys.remove(key);
                        if keys.is_empty() {
                            index.remove(&v);
                        }
                    }
                }
            }
        }
    }

    /// True when every indexer gives `old` and `new` the same values (and fails on neither).
    fn same_index_values(&self, old: &K, new: &K) -> bool {
        self.indexers
            .values()
            .all(|f| match (call(f, old), call(f, new)) {
                (Ok(a), Ok(b)) => a == b,
                _ => false,
            })
    }

    fn index(&mut self, key: &str, obj: &K, errors: &mut Vec<String>) {
        for (name, values) in index_values(&self.indexers, obj, key, errors) {
            let index = self.indices.entry(name).or_default();
            for v in values {
                index.entry(v).or_default().insert(key.to_owned());
            }
        }
    }

    fn rebuild(&mut self) -> Vec<String> {
        self.indices.clear();
        let mut errors = Vec::new();
        let items: Vec<(String, Arc<K>)> = self
            .items
            .iter()
            .map(|(k, v)| (k.clone(), Arc::clone(v)))
            .collect();
        for (k, v) in items {
            self.index(&k, &v, &mut errors);
        }
        errors
    }
}

fn index_error(errors: Vec<String>) -> Result<()> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Error::InvalidInput(errors.join("; ")))
    }
}

impl<K: Object> Store<K> {
    /// An empty store with the namespace index.
    pub fn new() -> Self {
        let mut indexers = HashMap::new();
        indexers.insert(NAMESPACE_INDEX.to_owned(), namespace_index::<K>());
        Store {
            inner: RwLock::new(Inner {
                items: HashMap::new(),
                indexers,
                indices: HashMap::new(),
            }),
        }
    }

    /// Adds or replaces the object under its key; returns the previous one.
    pub fn upsert(&self, obj: Arc<K>) -> (Option<Arc<K>>, Result<()>) {
        let key = key_of(&*obj);
        self.upsert_keyed(&key, obj)
    }

    /// Adds or replaces the object under `key`; returns the previous one. An update that
    /// leaves every index value as it was (the usual case: the namespace does not change)
    /// leaves the indices untouched.
    pub fn upsert_keyed(&self, key: &str, obj: Arc<K>) -> (Option<Arc<K>>, Result<()>) {
        let mut errors = Vec::new();
        let mut guard = self.inner.write();
        let inner = &mut *guard;
        let old = match inner.items.get_mut(key) {
            Some(slot) => Some(std::mem::replace(slot, Arc::clone(&obj))),
            None => {
                inner.items.insert(key.to_owned(), Arc::clone(&obj));
                None
            }
        };
        match &old {
            Some(old) if inner.same_index_values(old, &obj) => {}
            Some(old) => {
                inner.unindex(key, old);
                inner.index(key, &obj, &mut errors);
            }
            None => inner.index(key, &obj, &mut errors),
        }
        (old, index_error(errors))
    }

    /// Removes the object with this key; returns it.
    pub fn delete(&self, key: &str) -> Option<Arc<K>> {
        let mut inner = self.inner.write();
        let old = inner.items.remove(key)?;
        inner.unindex(key, &old);
        Some(old)
    }

    /// Replaces the whole contents at once (readers see the old or the new set, never a mix).
    pub fn replace(&self, objects: Vec<Arc<K>>) -> Result<()> {
        let items: HashMap<String, Arc<K>> =
            objects.into_iter().map(|o| (key_of(&*o), o)).collect();
        let mut inner = self.inner.write();
        inner.items = items;
        index_error(inner.rebuild())
    }

    /// The object with this key.
    pub fn get(&self, key: &str) -> Option<Arc<K>> {
        self.inner.read().items.get(key).cloned()
    }

    /// True when an object with this key is cached.
    pub fn contains(&self, key: &str) -> bool {
        self.inner.read().items.contains_key(key)
    }

    /// Every cached object, in no particular order.
    pub fn list(&self) -> Vec<Arc<K>> {
        self.inner.read().items.values().cloned().collect()
    }

    /// Every key.
    pub fn list_keys(&self) -> Vec<String> {
        self.inner.read().items.keys().cloned().collect()
    }

    /// How many objects are cached.
    pub fn len(&self) -> usize {
        self.inner.read().items.len()
    }

    /// True when nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds index functions, indexing what is already cached. Replacing an existing index
    /// function of the same name is refused.
    pub fn add_indexers(
        &self,
        indexers: impl IntoIterator<Item = (String, IndexFn<K>)>,
    ) -> Result<()> {
        let mut inner = self.inner.write();
        let mut errors = Vec::new();
        let new: Vec<(String, IndexFn<K>)> = indexers.into_iter().collect();
        for (name, _) in &new {
            if inner.indexers.contains_key(name) {
                return Err(Error::InvalidInput(format!(
                    "index {name:?} already exists"
                )));
            }
        }
        for (name, f) in new {
            let mut index = Index::new();
            for (key, obj) in &inner.items {
                match f(obj) {
                    Ok(values) => {
                        for v in values {
                            index.entry(v).or_default().insert(key.clone());
                        }
                    }
                    Err(e) => errors.push(format!("index {name:?} failed on {key:?}: {e}")),
                }
            }
            inner.indices.insert(name.clone(), index);
            inner.indexers.insert(name, f);
        }
        index_error(errors)
    }

    /// Runs `f` on index `name` (empty if no object has a value there); an error when no
    /// index of that name exists.
    fn with_index<R>(
        &self,
        name: &str,
        f: impl FnOnce(&Inner<K>, Option<&Index>) -> R,
    ) -> Result<R> {
        let inner = self.inner.read();
        if !inner.indexers.contains_key(name) {
            return Err(Error::InvalidInput(format!(
                "index {name:?} does not exist"
            )));
        }
        Ok(f(&inner, inner.indices.get(name)))
    }

    /// The objects indexed under `value` in index `name`.
    pub fn by_index(&self, name: &str, value: &str) -> Result<Vec<Arc<K>>> {
        self.with_index(name, |inner, index| {
            index
                .and_then(|i| i.get(value))
                .map(|keys| {
                    keys.iter()
                        .filter_map(|k| inner.items.get(k).cloned())
                        .collect()
                })
                .unwrap_or_default()
        })
    }

    /// The keys indexed under `value` in index `name`, sorted.
    pub fn index_keys(&self, name: &str, value: &str) -> Result<Vec<String>> {
        self.with_index(name, |_, index| {
            index
                .and_then(|i| i.get(value))
                .map(|keys| keys.iter().cloned().collect())
                .unwrap_or_default()
        })
    }

    /// Every value index `name` has objects under, sorted.
    pub fn list_index_values(&self, name: &str) -> Result<Vec<String>> {
        self.with_index(name, |_, index| {
            let mut values: Vec<String> = index
                .map(|i| i.keys().cloned().collect())
                .unwrap_or_default();
            values.sort();
            values
        })
    }

    /// `(key, resourceVersion)` of every object, sorted: handy to compare with a server.
    pub fn keys_and_versions(&self) -> Vec<(String, String)> {
        let inner = self.inner.read();
        let mut v: Vec<(String, String)> = inner
            .items
            .iter()
            .map(|(k, o)| (k.clone(), o.metadata().resource_version().to_owned()))
            .collect();
        v.sort();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::DynamicObject;

    fn obj(ns: &str, name: &str, node: Option<&str>) -> Arc<DynamicObject> {
        let mut o = DynamicObject::default();
        o.metadata.namespace = Some(ns.into()).filter(|n: &String| !n.is_empty());
        o.metadata.name = Some(name.into());
        if let Some(n) = node {
            o.metadata.labels = Some([("node".to_string(), n.to_string())].into());
        }
        Arc::new(o)
    }

    fn node_index() -> IndexFn<DynamicObject> {
        Arc::new(|o: &DynamicObject| match o.metadata.label("node") {
            Some(n) => Ok(vec![n.to_owned()]),
            None => Err("no node label".into()),
        })
    }

    #[test]
    fn namespace_index_follows_writes() {
        let s = Store::new();
        s.upsert(obj("a", "x", None)).1.unwrap();
        s.upsert(obj("a", "y", None)).1.unwrap();
        s.upsert(obj("b", "z", None)).1.unwrap();
        s.upsert(obj("", "cluster", None)).1.unwrap();
        assert_eq!(s.index_keys(NAMESPACE_INDEX, "a").unwrap(), ["a/x", "a/y"]);
        assert_eq!(s.list_index_values(NAMESPACE_INDEX).unwrap(), ["a", "b"]);
        s.delete("a/x");
        assert_eq!(s.index_keys(NAMESPACE_INDEX, "a").unwrap(), ["a/y"]);
        s.delete("a/y");
        assert_eq!(s.list_index_values(NAMESPACE_INDEX).unwrap(), ["b"]);
        assert!(s.get("cluster").is_some());
        assert!(s.by_index("nope", "a").is_err());
    }

    #[test]
    fn indexers_added_later_index_existing_objects_and_updates_move_them() {
        let s = Store::new();
        s.upsert(obj("a", "x", Some("n1"))).1.unwrap();
        s.upsert(obj("a", "y", Some("n2"))).1.unwrap();
        s.add_indexers([("node".to_string(), node_index())])
            .unwrap();
        assert_eq!(s.index_keys("node", "n1").unwrap(), ["a/x"]);
        s.upsert(obj("a", "x", Some("n2"))).1.unwrap();
        assert!(s.index_keys("node", "n1").unwrap().is_empty());
        assert_eq!(s.index_keys("node", "n2").unwrap(), ["a/x", "a/y"]);
        assert_eq!(s.by_index("node", "n2").unwrap().len(), 2);
        assert!(s
            .add_indexers([("node".to_string(), node_index())])
            .is_err());
    }

    #[test]
    fn failing_index_function_is_an_error_and_the_object_is_kept() {
        let s = Store::new();
        s.add_indexers([("node".to_string(), node_index())])
            .unwrap();
        let (_, r) = s.upsert(obj("a", "bare", None));
        let err = r.unwrap_err().to_string();
        assert!(err.contains("\"node\"") && err.contains("a/bare"), "{err}");
        assert!(s.get("a/bare").is_some(), "stored anyway");
        assert_eq!(s.index_keys(NAMESPACE_INDEX, "a").unwrap(), ["a/bare"]);
        // Once the function succeeds on an update, the object is indexed.
        s.upsert(obj("a", "bare", Some("n1"))).1.unwrap();
        assert_eq!(s.index_keys("node", "n1").unwrap(), ["a/bare"]);
    }

    #[test]
    fn an_update_with_the_same_index_values_is_found_by_index_as_the_new_object() {
        let s = Store::new();
        s.add_indexers([("node".to_string(), node_index())])
            .unwrap();
        s.upsert(obj("a", "x", Some("n1"))).1.unwrap();
        let newer = obj("a", "x", Some("n1"));
        let (old, r) = s.upsert(Arc::clone(&newer));
        r.unwrap();
        assert!(old.is_some());
        let found = s.by_index("node", "n1").unwrap();
        assert_eq!(found.len(), 1);
        assert!(Arc::ptr_eq(&found[0], &newer));
        assert_eq!(s.index_keys(NAMESPACE_INDEX, "a").unwrap(), ["a/x"]);
    }

    #[test]
    fn replace_swaps_everything_and_rebuilds_indexes() {
        let s = Store::new();
        s.add_indexers([("node".to_string(), node_index())])
            .unwrap();
        s.upsert(obj("a", "old", Some("n1"))).1.unwrap();
        s.replace(vec![obj("b", "new", Some("n3"))]).unwrap();
        assert_eq!(s.list_keys(), ["b/new"]);
        assert!(s.index_keys("node", "n1").unwrap().is_empty());
        assert_eq!(s.index_keys("node", "n3").unwrap(), ["b/new"]);
        assert_eq!(s.list_index_values(NAMESPACE_INDEX).unwrap(), ["b"]);
    }
}
