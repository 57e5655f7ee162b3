//! Splitting a work-queue key back into namespace and name (client-go's
//! `SplitMetaNamespaceKey`).
//!
//! Why a helper and not a typed key handed to `reconcile`: every existing reconcile, the
//! [`Manager`](crate::manager::Manager), sharding and the queue's own API take `&str` keys,
//! and a key is what a [`Lister`](crate::cache::Lister) reads by (`lister.get(key)`). A typed
//! key would break every controller for a one-line gain; the helper gives the same safety
//! (a cluster-scoped key is a bare name; a malformed key is an error, not a wrong split)
//! without breaking anyone.

use crate::error::{Error, Result};

/// Splits a key `namespace/name` into `(Some(namespace), name)`, and a cluster-scoped key
/// `name` into `(None, name)`. A key with more than one `/`, or an empty part, is an error
/// (keys the controller's handlers make never are; keys you add to the queue yourself
/// might be).
///
/// ```
/// use kube_informer::controller::split_key;
///
/// assert_eq!(split_key("lab/web")?, (Some("lab"), "web"));
/// assert_eq!(split_key("node-1")?, (None, "node-1"));
/// assert!(split_key("a/b/c").is_err());
/// # Ok::<(), kube_informer::Error>(())
/// ```
pub fn split_key(key: &str) -> Result<(Option<&str>, &str)> {
    let bad = || {
        Error::InvalidInput(format!(
            "unexpected key format: {key:?} (want namespace/name or name)"
        ))
    };
    match key.split_once('/') {
        None if !key.is_empty() => Ok((None, key)),
        None => Err(bad()),
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok((Some(ns), name))
        }
        Some(_) => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_client_go() {
        assert_eq!(split_key("ns/n").unwrap(), (Some("ns"), "n"));
        assert_eq!(split_key("n").unwrap(), (None, "n"));
        for bad in ["", "/n", "ns/", "a/b/c", "/"] {
            assert!(split_key(bad).is_err(), "{bad:?}");
        }
    }
}
