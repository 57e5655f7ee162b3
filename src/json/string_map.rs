//! `StringMap`: the labels and annotations of an object, compact.
//!
//! Why not `BTreeMap<String, String>`: a cache holds every object of a resource, and each one
//! has a few labels and annotations. A B-tree leaf is a fixed ~540-byte block, and every key
//! and value is its own allocation: for a pod with six labels and three annotations that was
//! about 2 KB and twenty allocations, more than a third of what the object's metadata cost,
//! and a good part of the decoding time. Here all keys and values of a map share one buffer,
//! with one small index: two allocations, a few bytes over the text itself. And since the
//! pods of a ReplicaSet carry the same labels, a map equal to one the decoding thread made
//! recently shares that one's buffers: no allocation at all (see `json::shared`).
//!
//! Entries are kept sorted by key (lookups are binary searches; iteration is in key order, as
//! with a `BTreeMap`). Maps are read far more than written, so `insert` and `remove` rebuild.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::de::{MapAccess, Visitor};

use super::lent_str::LentStr;
use super::scratch::Scratch;
use super::shared::{self, ValueHash};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A sorted map of strings to strings in one buffer (labels, annotations).
///
/// Cloning is cheap (the buffers are shared, and never changed in place), and maps decoded
/// on one thread share their buffers with an equal map decoded there recently: the pods of a
/// ReplicaSet, whose labels are the same, hold one copy of them (see `json::shared`).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct StringMap {
    /// Every key followed by its value, in key order.
    text: Arc<str>,
    /// For each entry, where its key ends and where its value ends in `text`.
    ends: Arc<[(u32, u32)]>,
}

impl StringMap {
    /// An empty map.
    pub fn new() -> StringMap {
        StringMap::default()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when there are no entries.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn entry(&self, i: usize) -> (&str, &str) {
        let start = if i == 0 {
            0
        } else {
            self.ends[i - 1].1 as usize
        };
        let (key_end, value_end) = self.ends[i];
        // `get`: offsets saturate past 4 GiB (see `from_sorted`), which must not panic.
        (
            self.text.get(start..key_end as usize).unwrap_or(""),
            self.text
                .get(key_end as usize..value_end as usize)
                .unwrap_or(""),
        )
    }

    fn find(&self, key: &str) -> Result<usize, usize> {
        let (mut lo, mut hi) = (0, self.ends.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.entry(mid).0.cmp(key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.find(key).ok().map(|i| self.entry(i).1)
    }

    /// True when `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    /// The entries in key order.
    pub fn iter(&self) -> Iter<'_> {
        Iter { map: self, next: 0 }
    }

    /// The keys in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.iter().map(|(k, _)| k)
    }

    /// The values, in the order of their keys.
    pub fn values(&self) -> impl Iterator<Item = &str> {
        self.iter().map(|(_, v)| v)
    }

    /// Sets `key` to `value`; returns the value it replaced.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<String>) -> Option<String> {
        let (key, value) = (key.into(), value.into());
        let old = self.get(&key).map(str::to_owned);
        let mut entries: Vec<(&str, &str)> = self.iter().filter(|(k, _)| *k != key).collect();
        let at = entries.partition_point(|(k, _)| *k < key.as_str());
        entries.insert(at, (&key, &value));
        *self = StringMap::from_sorted(&entries);
        old
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        let old = self.get(key).map(str::to_owned)?;
        let entries: Vec<(&str, &str)> = self.iter().filter(|(k, _)| *k != key).collect();
        *self = StringMap::from_sorted(&entries);
        Some(old)
    }

    /// The entries as a `BTreeMap`.
    pub fn to_btree_map(&self) -> BTreeMap<String, String> {
        self.iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    /// Builds the map from entries sorted by key; of equal keys (adjacent), the last is kept.
    fn from_sorted<K: AsRef<str>, V: AsRef<str>>(entries: &[(K, V)]) -> StringMap {
        // An entry whose next one has the same key is replaced by it.
        let kept = |i: usize| {
            entries
                .get(i + 1)
                .is_none_or(|next| next.0.as_ref() != entries[i].0.as_ref())
        };
        let kept_entries = entries
            .iter()
            .enumerate()
            .filter(|(i, _)| kept(*i))
            .map(|(_, (k, v))| (k.as_ref(), v.as_ref()));
        let mut text_len = 0;
        let mut count = 0;
        let mut hash = ValueHash::new();
        for (k, v) in kept_entries.clone() {
            text_len += k.len() + v.len();
            count += 1;
            hash.add(k.as_bytes());
            hash.add(v.as_bytes());
        }
        if count == 0 {
            // Empty `Arc`s come from a static: no allocation, nothing to share.
            return StringMap::default();
        }
        let size = text_len + count * std::mem::size_of::<(u32, u32)>();
        let (text, ends) = shared::share_map(kept_entries.clone(), &hash, size, || {
            // Gathered on the stack and in the thread's text buffer, then copied once into
            // the two buffers the map keeps: two allocations, as with boxed buffers.
            let mut ends: Scratch<(u32, u32), 16> = Scratch::new();
            let text = shared::with_text_buffer(|text| {
                text.reserve(text_len);
                for (k, v) in kept_entries {
                    text.push_str(k);
                    let key_end = text.len();
                    text.push_str(v);
                    // Offsets are u32: a map over 4 GiB cannot come from one API object (the
                    // server refuses objects over a few MiB); saturate rather than wrap, to
                    // stay panic-free.
                    ends.push((
                        u32::try_from(key_end).unwrap_or(u32::MAX),
                        u32::try_from(text.len()).unwrap_or(u32::MAX),
                    ));
                }
                Arc::<str>::from(text.as_str())
            });
            (text, Arc::from(ends.as_slice()))
        });
        StringMap { text, ends }
    }

    /// Builds the map from entries in any order (sorting them in place); a key given twice
    /// keeps its last value.
    pub(crate) fn from_entries<K: AsRef<str>, V: AsRef<str>>(entries: &mut [(K, V)]) -> StringMap {
        let sorted = entries
            .windows(2)
            .all(|w| w[0].0.as_ref() <= w[1].0.as_ref());
        if !sorted {
            // Stable: of equal keys, the one given last stays last.
            entries.sort_by(|a, b| a.0.as_ref().cmp(b.0.as_ref()));
        }
        StringMap::from_sorted(entries)
    }
}

/// Iterator over a [`StringMap`]'s entries, in key order.
pub struct Iter<'a> {
    map: &'a StringMap,
    next: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.map.len() {
            return None;
        }
        self.next += 1;
        Some(self.map.entry(self.next - 1))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.map.len() - self.next;
        (n, Some(n))
    }
}

impl<'a> IntoIterator for &'a StringMap {
    type Item = (&'a str, &'a str);
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl<K: AsRef<str>, V: AsRef<str>> FromIterator<(K, V)> for StringMap {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> StringMap {
        StringMap::from_entries(&mut iter.into_iter().collect::<Vec<_>>())
    }
}

impl<K: AsRef<str>, V: AsRef<str>, const N: usize> From<[(K, V); N]> for StringMap {
    fn from(entries: [(K, V); N]) -> StringMap {
        entries.into_iter().collect()
    }
}

impl From<BTreeMap<String, String>> for StringMap {
    fn from(map: BTreeMap<String, String>) -> StringMap {
        map.into_iter().collect()
    }
}

impl From<&StringMap> for BTreeMap<String, String> {
    fn from(map: &StringMap) -> BTreeMap<String, String> {
        map.to_btree_map()
    }
}

impl fmt::Debug for StringMap {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Serialize for StringMap {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for (k, v) in self {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for StringMap {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MapVisitor;
        impl<'de> Visitor<'de> for MapVisitor {
            type Value = StringMap;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of strings to strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StringMap, A::Error> {
                // Lent, not copied: the map copies them into its one buffer anyway.
                let mut entries: Vec<(LentStr<'de>, LentStr<'de>)> =
                    Vec::with_capacity(map.size_hint().unwrap_or(0).min(64));
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(StringMap::from_entries(&mut entries))
            }
        }
        deserializer.deserialize_map(MapVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_like_a_btree_map() {
        let mut m: StringMap = [
            ("tier", "web"),
            ("app", "shop"),
            ("", "empty"),
            ("app", "last"),
        ]
        .into();
        let mut reference: BTreeMap<String, String> = BTreeMap::new();
        for (k, v) in [
            ("tier", "web"),
            ("app", "shop"),
            ("", "empty"),
            ("app", "last"),
        ] {
            reference.insert(k.into(), v.into());
        }
        assert_eq!(m.to_btree_map(), reference);
        assert_eq!(m.len(), 3);
        assert_eq!(m.get("app"), Some("last"));
        assert_eq!(m.get(""), Some("empty"));
        assert_eq!(m.get("ap"), None);
        assert!(m.contains_key("tier") && !m.contains_key("zzz"));
        assert_eq!(m.keys().collect::<Vec<_>>(), ["", "app", "tier"]);
        assert_eq!(m.insert("b", "2"), None);
        assert_eq!(m.insert("tier", "db"), Some("web".into()));
        assert_eq!(m.remove("app"), Some("last".into()));
        assert_eq!(m.remove("app"), None);
        assert_eq!(
            m.iter().collect::<Vec<_>>(),
            [("", "empty"), ("b", "2"), ("tier", "db")]
        );
        assert_eq!(format!("{m:?}"), r#"{"": "empty", "b": "2", "tier": "db"}"#);
        assert_eq!(StringMap::from(m.to_btree_map()), m);
        assert!(StringMap::new().is_empty());
    }

    #[test]
    fn equal_maps_share_their_buffers_and_empty_ones_hold_none() {
        let a: StringMap = [("app", "web"), ("tier", "db")].into();
        let b: StringMap = serde_json::from_str(r#"{"tier":"db","app":"web"}"#).unwrap();
        assert_eq!(a, b);
        assert!(Arc::ptr_eq(&a.text, &b.text) && Arc::ptr_eq(&a.ends, &b.ends));
        let c: StringMap = [("app", "web"), ("tier", "dc")].into();
        assert_ne!(a, c);
        assert_eq!(c.get("tier"), Some("dc"));
        let empty: StringMap = serde_json::from_str("{}").unwrap();
        assert!(empty.is_empty() && empty == StringMap::new());
    }

    #[test]
    fn a_key_whose_as_ref_builds_maps_itself_does_not_trip_the_table() {
        // `FromIterator` takes any `AsRef<str>`: one that decodes while it is read must find
        // the decoding thread's table free (no borrow held across it), not panic.
        struct Busy(&'static str);
        impl AsRef<str> for Busy {
            fn as_ref(&self) -> &str {
                let inner: StringMap = [("inner", self.0)].into();
                assert_eq!(inner.get("inner"), Some(self.0));
                let _: crate::api::SharedStr = serde_json::from_str(r#""x""#).unwrap();
                self.0
            }
        }
        for _ in 0..2 {
            let m: StringMap = [(Busy("b"), "2"), (Busy("a"), "1")].into_iter().collect();
            assert_eq!(m.iter().collect::<Vec<_>>(), [("a", "1"), ("b", "2")]);
        }
    }

    #[test]
    fn serde_round_trip_keeps_the_last_duplicate() {
        let m: StringMap = serde_json::from_str(r#"{"b":"1","a":"é\"","b":"2"}"#).unwrap();
        assert_eq!(m.get("b"), Some("2"));
        assert_eq!(serde_json::to_string(&m).unwrap(), r#"{"a":"é\"","b":"2"}"#);
        assert!(serde_json::from_str::<StringMap>(r#"{"a":1}"#).is_err());
        assert!(serde_json::from_str::<StringMap>(r#"{"a":null}"#).is_err());
    }
}
