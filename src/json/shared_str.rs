//! `SharedStr`: a string of an object that many objects repeat, held once.
//!
//! Why a type of our own and not `Arc<str>`: it compares with `&str` and `String` as a
//! `String` does (`owner.kind == "ReplicaSet"`), and its `Deserialize` goes through the
//! decoding thread's table of recent values ([`shared`](super::shared)), so that every decoder
//! (the library's, serde_json's, serde's `value` module) shares what repeats.

use std::borrow::{Borrow, Cow};
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::de::{Deserialize, Deserializer, Visitor};
use serde::{Serialize, Serializer};

use super::shared::share_str;

/// An immutable string shared between the objects that carry it: the namespace, the
/// `generateName`, the owner references, the `apiVersion` and `kind` of an object, and the
/// names of a [`DynamicObject`](crate::api::DynamicObject)'s fields.
///
/// It reads like a `&str` (it derefs to one), compares with `str`, `&str` and `String`, and
/// is made from either with `.into()`. Cloning it copies a pointer. Objects decoded on one
/// thread share one copy of each value they repeat: the pods of a ReplicaSet hold one owner
/// reference's strings between them, not one each.
///
/// ```
/// use kube_informer::api::{ObjectMeta, SharedStr};
///
/// let mut meta = ObjectMeta::default();
/// meta.namespace = Some("shop".into());
/// assert_eq!(meta.namespace.as_deref(), Some("shop"));
/// let ns: &SharedStr = meta.namespace.as_ref().unwrap();
/// assert!(*ns == "shop" && ns.starts_with("sh"));
/// assert_eq!(ns.to_string(), String::from("shop"));
/// ```
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SharedStr(Arc<str>);

impl SharedStr {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True when both are the same allocation (not just equal text).
    pub fn ptr_eq(a: &SharedStr, b: &SharedStr) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }

    /// Made through the decoding thread's table of recent values.
    pub(crate) fn shared(text: &str) -> SharedStr {
        SharedStr(share_str(text))
    }
}

impl Deref for SharedStr {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for SharedStr {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl AsRef<[u8]> for SharedStr {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl Borrow<str> for SharedStr {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for SharedStr {
    fn from(text: &str) -> SharedStr {
        SharedStr(Arc::from(text))
    }
}

impl From<String> for SharedStr {
    fn from(text: String) -> SharedStr {
        SharedStr(Arc::from(text))
    }
}

impl From<&String> for SharedStr {
    fn from(text: &String) -> SharedStr {
        SharedStr(Arc::from(text.as_str()))
    }
}

impl From<Arc<str>> for SharedStr {
    fn from(text: Arc<str>) -> SharedStr {
        SharedStr(text)
    }
}

impl From<Box<str>> for SharedStr {
    fn from(text: Box<str>) -> SharedStr {
        SharedStr(Arc::from(text))
    }
}

impl From<Cow<'_, str>> for SharedStr {
    fn from(text: Cow<'_, str>) -> SharedStr {
        SharedStr(Arc::from(text))
    }
}

impl std::str::FromStr for SharedStr {
    type Err = std::convert::Infallible;
    fn from_str(text: &str) -> Result<SharedStr, Self::Err> {
        Ok(text.into())
    }
}

impl From<&SharedStr> for String {
    fn from(text: &SharedStr) -> String {
        text.as_str().to_owned()
    }
}

impl From<SharedStr> for String {
    fn from(text: SharedStr) -> String {
        text.as_str().to_owned()
    }
}

impl From<SharedStr> for Arc<str> {
    fn from(text: SharedStr) -> Arc<str> {
        text.0
    }
}

impl PartialEq<str> for SharedStr {
    fn eq(&self, other: &str) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<&str> for SharedStr {
    fn eq(&self, other: &&str) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<String> for SharedStr {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<SharedStr> for str {
    fn eq(&self, other: &SharedStr) -> bool {
        *self == *other.0
    }
}

impl PartialEq<SharedStr> for &str {
    fn eq(&self, other: &SharedStr) -> bool {
        **self == *other.0
    }
}

impl PartialEq<SharedStr> for String {
    fn eq(&self, other: &SharedStr) -> bool {
        **self == *other.0
    }
}

impl fmt::Debug for SharedStr {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for SharedStr {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl Serialize for SharedStr {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SharedStr {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StrVisitor;
        impl Visitor<'_> for StrVisitor {
            type Value = SharedStr;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<SharedStr, E> {
                Ok(SharedStr::shared(v))
            }
            // What `String` accepts from formats that hand strings over as bytes.
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<SharedStr, E> {
                std::str::from_utf8(v)
                    .map(SharedStr::shared)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Bytes(v), &self))
            }
        }
        deserializer.deserialize_str(StrVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoded_equal_values_share_one_allocation() {
        #[derive(serde::Deserialize)]
        struct T {
            a: SharedStr,
            #[serde(default)]
            b: Option<SharedStr>,
        }
        let x: T = serde_json::from_str(r#"{"a":"apps/v1","b":"apps/v1"}"#).unwrap();
        assert!(SharedStr::ptr_eq(&x.a, x.b.as_ref().unwrap()));
        let y: T = serde_json::from_str(r#"{"a":"a\"b","b":null}"#).unwrap();
        assert_eq!(y.a, "a\"b");
        assert!(y.b.is_none());
        // What a `String` field rejects, this rejects.
        assert!(serde_json::from_str::<T>(r#"{"a":1}"#).is_err());
        assert!(serde_json::from_str::<T>(r#"{"a":null}"#).is_err());
        assert!(serde_json::from_str::<T>(r#"{"b":"x"}"#).is_err());
        // Made by hand, nothing is shared.
        assert!(!SharedStr::ptr_eq(&"v1".into(), &"v1".into()));
    }

    #[test]
    fn compares_and_prints_like_a_string() {
        let s = SharedStr::from("ReplicaSet");
        let (text, owned): (&str, String) = ("ReplicaSet", "ReplicaSet".into());
        // Both ways round, against each of `&str`, `str` and `String`.
        assert_eq!(s, text);
        assert_eq!(text, s);
        assert_eq!(s, *text);
        assert_eq!(*text, s);
        assert_eq!(s, owned);
        assert_eq!(owned, s);
        assert_eq!(format!("{s} {s:?}"), r#"ReplicaSet "ReplicaSet""#);
        assert_eq!(serde_json::to_string(&s).unwrap(), r#""ReplicaSet""#);
        assert_eq!(String::from(s.clone()), "ReplicaSet");
        assert_eq!(String::from(&s), "ReplicaSet");
        assert_eq!("ReplicaSet".parse::<SharedStr>().unwrap(), s);
        assert_eq!(SharedStr::from(Cow::Borrowed("ReplicaSet")), s);
        assert_eq!(AsRef::<[u8]>::as_ref(&s), b"ReplicaSet");
        let (a, b) = (SharedStr::from("a"), SharedStr::from("b"));
        assert!(a < b);
        assert_eq!(&*SharedStr::default(), "");
    }
}
