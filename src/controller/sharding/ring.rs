//! `Ring`: the name that ties a sharded controller's pieces together, and the label keys
//! derived from it.
//!
//! Why one type: the shard Leases, the objects' shard label, the drain label and every
//! selector are spelled from the ring's name; deriving them in one place keeps the sharder
//! and the shards agreeing on them. Several rings (one per sharded controller) can share a
//! namespace and even the same objects: every label key carries the ring's name, and so does
//! every Lease name (`<ring>-<shard>` for a shard, `<ring>-sharder` for the sharder), so one
//! process can be a shard of several rings under the same id (its pod name).
//!
//! Names built by joining can still meet (ring `a` with shard `b-c`, ring `a-b` with shard
//! `c`): a shard Lease carries its ring's label, and a shard refuses a Lease that carries
//! another ring's label, or none while someone else holds it (see `membership`). A shard id
//! `sharder` or ending in `-sharder` is refused: its Lease could be a sharder's.

use crate::error::{Error, Result};

/// The label every shard Lease of a ring carries, with the ring's name as its value.
pub const RING_LABEL: &str = "sharding.kube-informer.io/ring";

/// The prefix of the shard label key (`shard.sharding.kube-informer.io/<ring>`).
pub const SHARD_LABEL_PREFIX: &str = "shard.sharding.kube-informer.io/";

/// The prefix of the drain label key (`drain.sharding.kube-informer.io/<ring>`).
pub const DRAIN_LABEL_PREFIX: &str = "drain.sharding.kube-informer.io/";

/// A ring of shards: its name and the namespace its shard Leases live in.
///
/// The name is used as a label value, as the name part of label keys and in Lease names, so
/// it follows Kubernetes' rules for all three: 1 to 63 characters, lowercase alphanumerics,
/// `-` and `.`, beginning and ending with an alphanumeric.
///
/// ```
/// use kube_informer::controller::sharding::Ring;
/// let ring = Ring::new("widgets", "operators")?;
/// assert_eq!(ring.shard_label(), "shard.sharding.kube-informer.io/widgets");
/// assert_eq!(ring.drain_label(), "drain.sharding.kube-informer.io/widgets");
/// assert_eq!(ring.lease_selector(), "sharding.kube-informer.io/ring=widgets");
/// assert_eq!(ring.shard_selector("replica-a"), "shard.sharding.kube-informer.io/widgets=replica-a");
/// assert_eq!(ring.shard_lease("replica-a"), "widgets-replica-a");
/// assert_eq!(ring.sharder_lease(), "widgets-sharder");
/// assert!(Ring::new("not a label", "operators").is_err());
/// assert!(Ring::new("Widgets", "operators").is_err());
/// # Ok::<(), kube_informer::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Ring {
    name: String,
    namespace: String,
}

impl Ring {
    /// The ring `name` whose shard Leases live in `namespace`.
    pub fn new(name: &str, namespace: &str) -> Result<Ring> {
        if !is_name_token(name) {
            return Err(Error::InvalidInput(format!(
                "sharding: the ring name {name:?} must be a label value and part of a Lease name \
                 (1-63 characters: lowercase alphanumerics, '-', '.', alphanumeric at both ends)"
            )));
        }
        if namespace.is_empty() {
            return Err(Error::InvalidInput(
                "sharding: the ring needs a namespace for its shard Leases".into(),
            ));
        }
        Ok(Ring {
            name: name.to_owned(),
            namespace: namespace.to_owned(),
        })
    }

    /// The ring's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The namespace of the ring's shard Leases (and of the sharder's leader Lease).
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The key of the label naming an object's shard: `shard.sharding.kube-informer.io/<ring>`.
    pub fn shard_label(&self) -> String {
        format!("{SHARD_LABEL_PREFIX}{}", self.name)
    }

    /// The key of the label asking an object's shard to let go of it:
    /// `drain.sharding.kube-informer.io/<ring>` (value `"true"`; `"acknowledged"`, with no
    /// shard label, once the shard let go).
    pub fn drain_label(&self) -> String {
        format!("{DRAIN_LABEL_PREFIX}{}", self.name)
    }

    /// The label selector of the ring's shard Leases.
    pub fn lease_selector(&self) -> String {
        format!("{RING_LABEL}={}", self.name)
    }

    /// The label selector of the objects assigned to `shard`: what its informers watch.
    pub fn shard_selector(&self, shard: &str) -> String {
        format!("{}={shard}", self.shard_label())
    }

    /// The name of the Lease the sharder's leader election uses: `<ring>-sharder`.
    pub fn sharder_lease(&self) -> String {
        format!("{}-sharder", self.name)
    }

    /// The name of `shard`'s Lease: `<ring>-<shard>`.
    pub fn shard_lease(&self, shard: &str) -> String {
        format!("{}-{shard}", self.name)
    }

    /// The shard whose Lease is named `lease` (the inverse of [`shard_lease`](Self::shard_lease)).
    pub(crate) fn shard_of_lease<'a>(&self, lease: &'a str) -> Option<&'a str> {
        lease
            .strip_prefix(self.name.as_str())?
            .strip_prefix('-')
            .filter(|id| validate_shard_id(id).is_ok())
    }
}

/// Checks that `id` can be a shard's identity: a label value (it is written in the shard
/// label) and part of a Lease name (a DNS-1123 subdomain), so 1 to 63 lowercase
/// alphanumerics, `-` and `.`, alphanumeric at both ends; and not `sharder` nor ending in
/// `-sharder` (its Lease would be named like a sharder's).
pub(crate) fn validate_shard_id(id: &str) -> Result<()> {
    if !is_name_token(id) {
        return Err(Error::InvalidInput(format!(
            "sharding: the shard id {id:?} must be a label value and part of a Lease name (1-63 \
             characters: lowercase alphanumerics, '-', '.', alphanumeric at both ends)"
        )));
    }
    if id == "sharder" || id.ends_with("-sharder") {
        return Err(Error::InvalidInput(format!(
            "sharding: the shard id {id:?} would name its Lease like a sharder's Lease \
             (`<ring>-sharder`)"
        )));
    }
    Ok(())
}

/// A label value that can also be part of a Lease name: lowercase, no `_`.
fn is_name_token(s: &str) -> bool {
    is_label_token(s)
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
}

/// A label value (non-empty) or the name part of a label key.
fn is_label_token(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ids_are_checked() {
        assert!(Ring::new("a", "ns").is_ok());
        assert!(Ring::new(&"a".repeat(63), "ns").is_ok());
        for bad in ["", "-a", "a-", "a b", "a/b", "A", "a_b", &"a".repeat(64)] {
            assert!(Ring::new(bad, "ns").is_err(), "{bad:?}");
        }
        assert!(Ring::new("a", "").is_err());
        assert!(validate_shard_id("replica-0").is_ok());
        assert!(validate_shard_id("sharders").is_ok());
        for bad in [
            "",
            "Replica",
            "a_b",
            "-a",
            "sharder",
            "b-sharder",
            &"a".repeat(64),
        ] {
            assert!(validate_shard_id(bad).is_err(), "{bad:?}");
        }
        let ring = Ring::new("w", "ns").unwrap();
        assert_eq!(ring.shard_of_lease("w-replica-0"), Some("replica-0"));
        assert_eq!(ring.shard_of_lease("w-sharder"), None);
        assert_eq!(ring.shard_of_lease("wx-a"), None);
        assert_eq!(ring.shard_of_lease("replica-0"), None);
    }
}
