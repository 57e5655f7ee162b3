//! `Lister`: typed reads from an informer's cache, never touching the API server.
//!
//! Lists come back sorted by key (`namespace/name`, or `name` for cluster-scoped objects) so
//! that a caller sees a stable order. The sort compares the keys' parts where they lie in each
//! object instead of building a `String` key per comparison: a list of n objects costs no
//! allocation beyond its `Vec`, where building keys cost about n·log₂n of them.

use std::cmp::Ordering;
use std::sync::Arc;

use super::store::{Store, NAMESPACE_INDEX};
use crate::api::{LabelSelector, Meta, Object};
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
            .filter(|o| selector.matches_meta(o.metadata()))
            .collect();
        sort_by_key_order(&mut v);
        v
    }

    /// Every object, sorted by key.
    pub fn list_all(&self) -> Vec<Arc<K>> {
        self.list(&LabelSelector::everything())
    }

    /// Objects of one namespace matching `selector` (through the namespace index), sorted by
    /// key.
    pub fn list_namespace(&self, namespace: &str, selector: &LabelSelector) -> Vec<Arc<K>> {
        // The index keeps its keys sorted: already in key order.
        self.store
            .by_index(NAMESPACE_INDEX, namespace)
            .unwrap_or_default()
            .into_iter()
            .filter(|o| selector.matches_meta(o.metadata()))
            .collect()
    }

    /// Objects under `value` in the index `index`.
    pub fn by_index(&self, index: &str, value: &str) -> Result<Vec<Arc<K>>> {
        self.store.by_index(index, value)
    }
}

/// Sorts `objects` in the order of their keys (`ObjectMeta::key`), without building the keys.
/// Keys in a store are unique, so an unstable sort gives the one order there is.
fn sort_by_key_order<K: Object>(objects: &mut [Arc<K>]) {
    objects.sort_unstable_by(|a, b| cmp_keys(key_parts(a.as_ref()), key_parts(b.as_ref())));
}

/// The key of `obj` as the pieces it is made of, borrowed: `[namespace, "/", name]`, or
/// `[name, "", ""]` when the namespace is empty (the key is then the name alone).
fn key_parts<K: Object>(obj: &K) -> [&[u8]; 3] {
    let meta = obj.metadata();
    match meta.namespace() {
        "" => [meta.name().as_bytes(), b"", b""],
        ns => [ns.as_bytes(), b"/", meta.name().as_bytes()],
    }
}

/// Compares the concatenation of `a`'s pieces with that of `b`'s, byte by byte (the order of
/// `str`, so the order of the `String` keys), without concatenating them.
fn cmp_keys(a: [&[u8]; 3], b: [&[u8]; 3]) -> Ordering {
    let (mut a, mut b) = (a.as_slice(), b.as_slice());
    let (mut ra, mut rb): (&[u8], &[u8]) = (&[], &[]);
    loop {
        // Refill each side's current piece, skipping empty ones.
        while ra.is_empty() {
            match a.split_first() {
                Some((first, rest)) => (ra, a) = (first, rest),
                None => break,
            }
        }
        while rb.is_empty() {
            match b.split_first() {
                Some((first, rest)) => (rb, b) = (first, rest),
                None => break,
            }
        }
        match (ra.is_empty(), rb.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            (false, false) => {}
        }
        let n = ra.len().min(rb.len());
        match ra[..n].cmp(&rb[..n]) {
            Ordering::Equal => (ra, rb) = (&ra[n..], &rb[n..]),
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{DynamicObject, ObjectMeta};

    fn obj(ns: &str, name: &str) -> DynamicObject {
        DynamicObject {
            metadata: ObjectMeta {
                namespace: (!ns.is_empty()).then(|| ns.into()),
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            ..DynamicObject::default()
        }
    }

    /// The borrowed comparison orders exactly as the `String` keys do, on keys built from a
    /// small alphabet that includes the characters around `/` (`-`, `.`, `0`), prefixes of one
    /// another, cluster-scoped names that contain `/`-like prefixes, and multi-byte UTF-8.
    #[test]
    fn borrowed_order_is_the_string_key_order() {
        let alphabet = ["a", "b", "-", ".", "0", "/", "é", "ab", ""];
        let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let piece = |next: &mut dyn FnMut() -> u64| {
            let len = next() % 4;
            (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect::<String>()
        };
        let objects: Vec<DynamicObject> = (0..3000)
            .map(|_| {
                let ns = if next() % 3 == 0 {
                    String::new()
                } else {
                    piece(&mut next)
                };
                obj(&ns, &piece(&mut next))
            })
            .collect();
        for pair in objects.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            assert_eq!(
                cmp_keys(key_parts(a), key_parts(b)),
                a.metadata.key().cmp(&b.metadata.key()),
                "{:?} vs {:?}",
                a.metadata.key(),
                b.metadata.key()
            );
        }
    }

    #[test]
    fn list_is_sorted_by_string_key() {
        let store = Arc::new(crate::cache::Store::new());
        for (ns, name) in [
            ("a-b", "y"),
            ("a", "x"),
            ("", "a0"),
            ("", "a"),
            ("a", "x-1"),
            ("b", ""),
        ] {
            let (_, r) = store.upsert(Arc::new(obj(ns, name)));
            r.unwrap();
        }
        let lister = Lister::new(store);
        let keys: Vec<String> = lister.list_all().iter().map(|o| o.metadata.key()).collect();
        let mut expected = keys.clone();
        expected.sort();
        assert_eq!(keys, expected);
        assert_eq!(keys.first().map(String::as_str), Some("a"));
        let in_a: Vec<String> = lister
            .list_namespace("a", &LabelSelector::everything())
            .iter()
            .map(|o| o.metadata.key())
            .collect();
        assert_eq!(in_a, ["a/x", "a/x-1"]);
    }
}
