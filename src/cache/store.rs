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
use super::delta::shared_key_of;
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

/// Index value -> the keys under it. Keys are the shared strings of `Inner::items`.
type Index = HashMap<String, BTreeSet<Arc<str>>>;

/// How the store computes one index's values.
enum Indexer<K> {
    /// The built-in namespace index ([`namespace_index`]'s values), read in place: a write
    /// that keeps an object's namespace (every update of a watch) allocates nothing for it.
    Namespace,
    /// A user's index function.
    Func(IndexFn<K>),
}

impl<K: Object> Indexer<K> {
    /// Calls `f` with each of `obj`'s values; `Err` (and no call) when the function fails.
    fn each_value(&self, obj: &K, mut f: impl FnMut(&str)) -> std::result::Result<(), String> {
        match self {
            Indexer::Namespace => {
                match obj.metadata().namespace() {
                    "" => {}
                    ns => f(ns),
                }
                Ok(())
            }
            Indexer::Func(func) => {
                call(func, obj)?.iter().for_each(|v| f(v));
                Ok(())
            }
        }
    }

    /// True when `old` and `new` have the same values (and the function fails on neither).
    fn same_values(&self, old: &K, new: &K) -> bool {
        match self {
            Indexer::Namespace => old.metadata().namespace() == new.metadata().namespace(),
            Indexer::Func(func) => match (call(func, old), call(func, new)) {
                (Ok(a), Ok(b)) => a == b,
                _ => false,
            },
        }
    }
}

struct Inner<K> {
    /// Each key is one shared string, which the indexes hold too (and which the FIFO
    /// handed over: see `DeltaFifo::pop_shared`).
    items: HashMap<Arc<str>, Arc<K>>,
    indexers: HashMap<String, Indexer<K>>,
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

/// Calls an index function; a panic in it is a failure on this object like any other.
fn call<K>(f: &IndexFn<K>, obj: &K) -> std::result::Result<Vec<String>, String> {
    catch(|| f(obj)).unwrap_or_else(|panic| Err(format!("the index function panicked: {panic}")))
}

impl<K: Object> Inner<K> {
    fn unindex(&mut self, key: &str, old: &K) {
        for (name, indexer) in &self.indexers {
            let Some(index) = self.indices.get_mut(name) else {
                continue;
            };
            // A function that fails on `old` indexed nothing for it: nothing to remove.
            let _ = indexer.each_value(old, |v| {
                if let Some(keys) = index.get_mut(v) {
                    keys.remove(key);
                    if keys.is_empty() {
                        index.remove(v);
                    }
                }
            });
        }
    }

    /// True when every indexer gives `old` and `new` the same values (and fails on neither).
    fn same_index_values(&self, old: &K, new: &K) -> bool {
        self.indexers.values().all(|i| i.same_values(old, new))
    }

    /// Indexes `obj` under `key`; failures are collected, not fatal.
    fn index(&mut self, key: &Arc<str>, obj: &K, errors: &mut Vec<String>) {
        for (name, indexer) in &self.indexers {
            if !self.indices.contains_key(name) {
                self.indices.insert(name.clone(), Index::new());
            }
            let Some(index) = self.indices.get_mut(name) else {
                continue;
            };
            let indexed = indexer.each_value(obj, |v| match index.get_mut(v) {
                Some(keys) => {
                    keys.insert(Arc::clone(key));
                }
                None => {
                    index.insert(v.to_owned(), BTreeSet::from([Arc::clone(key)]));
                }
            });
            if let Err(e) = indexed {
                errors.push(format!("index {name:?} failed on {key:?}: {e}"));
            }
        }
    }

    fn rebuild(&mut self) -> Vec<String> {
        self.indices.clear();
        let mut errors = Vec::new();
        let items: Vec<(Arc<str>, Arc<K>)> = self
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
        indexers.insert(NAMESPACE_INDEX.to_owned(), Indexer::Namespace);
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
        let key = shared_key_of(&*obj);
        self.upsert_shared(&key, obj)
    }

    /// Adds or replaces the object under `key`; returns the previous one. An update that
    /// leaves every index value as it was (the usual case: the namespace does not change)
    /// leaves the indices untouched, and allocates nothing.
    pub fn upsert_keyed(&self, key: &str, obj: Arc<K>) -> (Option<Arc<K>>, Result<()>) {
        self.upsert_with(key, || Arc::from(key), obj)
    }

    /// [`upsert_keyed`](Self::upsert_keyed) with the key as a shared string, which the
    /// cache keeps (a clone of the pointer) when the key is new.
    pub(crate) fn upsert_shared(
        &self,
        key: &Arc<str>,
        obj: Arc<K>,
    ) -> (Option<Arc<K>>, Result<()>) {
        self.upsert_with(key, || Arc::clone(key), obj)
    }

    /// The upsert: `shared` makes the key the cache keeps, called only for a new key.
    fn upsert_with(
        &self,
        key: &str,
        shared: impl FnOnce() -> Arc<str>,
        obj: Arc<K>,
    ) -> (Option<Arc<K>>, Result<()>) {
        let mut errors = Vec::new();
        let mut guard = self.inner.write();
        let inner = &mut *guard;
        let old = match inner.items.get_mut(key) {
            Some(slot) => Some(std::mem::replace(slot, Arc::clone(&obj))),
            None => {
                inner.items.insert(shared(), Arc::clone(&obj));
                None
            }
        };
        if let Some(previous) = &old {
            if inner.same_index_values(previous, &obj) {
                return (old, Ok(()));
            }
            inner.unindex(key, previous);
        }
        // The indexes hold the key the cache holds.
        if let Some(stored) = inner.items.get_key_value(key).map(|(k, _)| Arc::clone(k)) {
            inner.index(&stored, &obj, &mut errors);
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
        let items: HashMap<Arc<str>, Arc<K>> = objects
            .into_iter()
            .map(|o| (shared_key_of(&*o), o))
            .collect();
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
        self.inner
            .read()
            .items
            .keys()
            .map(|k| k.to_string())
            .collect()
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
            inner.indexers.insert(name, Indexer::Func(f));
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
                .map(|keys| keys.iter().map(|k| k.to_string()).collect())
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
            .map(|(k, o)| (k.to_string(), o.metadata().resource_version().to_owned()))
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
        o.metadata.namespace = Some(ns).filter(|n| !n.is_empty()).map(Into::into);
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

    /// The built-in namespace index reads namespaces in place; `namespace_index()` registered
    /// as an ordinary index function must agree with it through every kind of write.
    #[test]
    fn the_built_in_namespace_index_agrees_with_the_namespace_index_function() {
        let s = Store::new();
        s.add_indexers([("by-fn".to_string(), namespace_index())])
            .unwrap();
        let agree = |s: &Store<DynamicObject>| {
            let values = s.list_index_values(NAMESPACE_INDEX).unwrap();
            assert_eq!(values, s.list_index_values("by-fn").unwrap());
            for v in values {
                assert_eq!(
                    s.index_keys(NAMESPACE_INDEX, &v).unwrap(),
                    s.index_keys("by-fn", &v).unwrap()
                );
            }
        };
        s.upsert(obj("a", "x", None)).1.unwrap();
        s.upsert(obj("b", "y", None)).1.unwrap();
        s.upsert(obj("", "cluster", None)).1.unwrap();
        agree(&s);
        s.upsert(obj("a", "x", Some("n1"))).1.unwrap();
        agree(&s);
        // The same key with another namespace moves the object in both indexes.
        s.upsert_keyed("a/x", obj("c", "x", None)).1.unwrap();
        assert_eq!(s.index_keys(NAMESPACE_INDEX, "c").unwrap(), ["a/x"]);
        assert!(s.index_keys(NAMESPACE_INDEX, "a").unwrap().is_empty());
        agree(&s);
        s.upsert_keyed("a/x", obj("", "x", None)).1.unwrap();
        assert_eq!(s.list_index_values(NAMESPACE_INDEX).unwrap(), ["b"]);
        agree(&s);
        s.delete("b/y");
        agree(&s);
        s.replace(vec![obj("d", "z", None), obj("d", "w", None)])
            .unwrap();
        assert_eq!(s.index_keys(NAMESPACE_INDEX, "d").unwrap(), ["d/w", "d/z"]);
        agree(&s);
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

/// A metadata type of a user's own that overrides `key()`: the cache and the FIFO key its
/// objects by that key (through `shared_key`'s default), as `key_of` says.
#[cfg(test)]
mod own_keys {
    use std::sync::Arc;

    use serde::Deserialize;

    use crate::api::{Meta, Object, ObjectMeta, OwnerRef};
    use crate::cache::delta::key_of;
    use crate::cache::{DeltaFifo, Store};

    #[derive(Clone, Default, Deserialize)]
    struct UidKeyed(ObjectMeta);

    impl Meta for UidKeyed {
        fn name(&self) -> &str {
            self.0.name()
        }
        fn namespace(&self) -> &str {
            self.0.namespace()
        }
        fn resource_version(&self) -> &str {
            self.0.resource_version()
        }
        fn uid(&self) -> Option<&str> {
            self.0.uid.as_deref()
        }
        fn generation(&self) -> Option<i64> {
            self.0.generation
        }
        fn is_being_deleted(&self) -> bool {
            false
        }
        fn label(&self, key: &str) -> Option<&str> {
            self.0.label(key)
        }
        fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
            self.0.labels.iter().flat_map(|m| m.iter())
        }
        fn annotation(&self, key: &str) -> Option<&str> {
            self.0.annotation(key)
        }
        fn annotations(&self) -> impl Iterator<Item = (&str, &str)> {
            self.0.annotations.iter().flat_map(|m| m.iter())
        }
        fn owner_references(&self) -> impl Iterator<Item = OwnerRef<'_>> {
            std::iter::empty()
        }
        fn finalizers(&self) -> Option<&[String]> {
            None
        }
        fn strip_managed_fields(&mut self) {}
        /// Keyed by uid, not `namespace/name`.
        fn key(&self) -> String {
            format!("uid:{}", self.uid().unwrap_or(""))
        }
    }

    #[derive(Clone, Default, Deserialize)]
    struct Thing {
        metadata: UidKeyed,
    }

    impl Object for Thing {
        type Meta = UidKeyed;
        fn metadata(&self) -> &UidKeyed {
            &self.metadata
        }
        fn metadata_mut(&mut self) -> &mut UidKeyed {
            &mut self.metadata
        }
    }

    fn thing(name: &str, uid: &str) -> Arc<Thing> {
        let meta = ObjectMeta {
            namespace: Some("ns".into()),
            name: Some(name.into()),
            uid: Some(uid.into()),
            ..ObjectMeta::default()
        };
        Arc::new(Thing {
            metadata: UidKeyed(meta),
        })
    }

    #[test]
    fn an_overridden_key_is_the_key_of_the_cache_and_the_fifo() {
        let store: Store<Thing> = Store::new();
        let a = thing("a", "u-1");
        assert_eq!(key_of(&*a), "uid:u-1");
        store.upsert(Arc::clone(&a)).1.unwrap();
        assert!(store.get("uid:u-1").is_some());
        assert_eq!(store.list_keys(), ["uid:u-1"]);
        let fifo: DeltaFifo<Thing> = DeltaFifo::new(None);
        fifo.add(a).unwrap();
        assert_eq!(fifo.queued_keys(), ["uid:u-1"]);
        fifo.pop(|key, _| assert_eq!(key, "uid:u-1")).unwrap();
    }
}
