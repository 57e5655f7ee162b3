//! Which shard an object belongs to: rendezvous hashing of a stable key over the live
//! shards.
//!
//! Why rendezvous (highest random weight) hashing: every (shard, key) pair gets a score and
//! the key goes to the shard with the highest one. When a shard joins, the only keys that
//! move are those it now wins (about 1/N of them); when a shard leaves, only its own keys
//! move, each to its runner-up. Nothing else changes hands, and there are no virtual nodes
//! to tune. The cost is one hash per shard per key, which for rings of a few dozen shards is
//! less than the work of decoding the object.
//!
//! # The algorithm (fixed, so that every process and every Rust version agrees)
//!
//! `score(shard, key) = splitmix64(fnv1a64(shard ‖ 0xFF ‖ key))`, where
//! - `fnv1a64` is 64-bit FNV-1a (offset basis `0xcbf29ce484222325`, prime `0x100000001b3`)
//!   over the UTF-8 bytes of the shard id, one `0xFF` byte (never part of UTF-8, so no two
//!   (shard, key) pairs give the same input), then the UTF-8 bytes of the key;
//! - `splitmix64` is the finalizer of Java's SplittableRandom (`x ^= x >> 30; x *=
//!   0xbf58476d1ce4e5b9; x ^= x >> 27; x *= 0x94d049bb133111eb; x ^= x >> 31`), which spreads
//!   FNV's weak high bits over the whole word.
//!
//! The shard with the highest score wins; equal scores go to the smaller shard id. Std's
//! `DefaultHasher` is not used: its algorithm may change between Rust releases, and two
//! replicas built with different compilers must agree.
//!
//! # The key
//!
//! [`HashKey::Object`] (the default) hashes `namespace/name` (`name` for a cluster-scoped
//! object); [`HashKey::Namespace`] hashes the namespace alone, so all of a namespace's
//! objects share a shard (a controller that reads across objects of one namespace wants
//! that). Objects a controller owns are hashed with their owner's key, so they follow it.

/// What an object is hashed by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum HashKey {
    /// `namespace/name` (`name` for cluster-scoped objects).
    #[default]
    Object,
    /// The namespace only (cluster-scoped objects: their name): a namespace's objects stay
    /// together.
    Namespace,
}

impl HashKey {
    /// The string hashed for the object `namespace`/`name`.
    ///
    /// ```
    /// use kube_informer::controller::sharding::HashKey;
    /// assert_eq!(HashKey::Object.key("lab", "web"), "lab/web");
    /// assert_eq!(HashKey::Namespace.key("lab", "web"), "lab");
    /// assert_eq!(HashKey::Object.key("", "node-1"), "node-1");
    /// ```
    pub fn key(self, namespace: &str, name: &str) -> String {
        match (self, namespace) {
            (_, "") => name.to_owned(),
            (HashKey::Object, ns) => format!("{ns}/{name}"),
            (HashKey::Namespace, ns) => ns.to_owned(),
        }
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

fn splitmix64(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The rendezvous score of `key` on `shard` (see the module docs for the algorithm).
///
/// ```
/// use kube_informer::controller::sharding::score;
/// // Fixed forever: every process, every platform, every Rust version.
/// assert_eq!(score("replica-a", "lab/web"), score("replica-a", "lab/web"));
/// assert_ne!(score("replica-a", "lab/web"), score("replica-b", "lab/web"));
/// ```
pub fn score(shard: &str, key: &str) -> u64 {
    let h = fnv1a(FNV_OFFSET, shard.as_bytes());
    let h = fnv1a(h, &[0xFF]);
    splitmix64(fnv1a(h, key.as_bytes()))
}

/// The shard `key` is assigned to among `shards` (`None` when there is none): the highest
/// [`score`], equal scores to the smaller id. The order of `shards` does not matter.
///
/// ```
/// use kube_informer::controller::sharding::shard_for;
/// let shards = ["replica-a", "replica-b", "replica-c"];
/// let owner = shard_for("lab/web", &shards).unwrap();
/// // Another shard leaving does not move the key.
/// let rest: Vec<&str> = shards.iter().copied().filter(|s| *s != "replica-c" || owner == "replica-c").collect();
/// assert_eq!(shard_for("lab/web", &rest), Some(owner));
/// assert_eq!(shard_for("lab/web", &[] as &[&str]), None);
/// ```
pub fn shard_for<'a, S: AsRef<str>>(key: &str, shards: &'a [S]) -> Option<&'a str> {
    let mut best: Option<(u64, &str)> = None;
    for s in shards {
        let s = s.as_ref();
        let sc = score(s, key);
        best = match best {
            Some((b, bs)) if b > sc || (b == sc && bs <= s) => Some((b, bs)),
            _ => Some((sc, s)),
        };
    }
    best.map(|(_, s)| s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn keys(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("ns-{}/obj-{i}", i % 17)).collect()
    }

    #[test]
    fn the_algorithm_is_pinned() {
        // FNV-1a's published test vectors.
        assert_eq!(fnv1a(FNV_OFFSET, b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(FNV_OFFSET, b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(FNV_OFFSET, b"foobar"), 0x8594_4171_f739_67e8);
        // The whole score, pinned (also computed by an independent Python version of the
        // algorithm): a change here changes every ring's assignment.
        assert_eq!(score("replica-a", "lab/web"), PINNED_A);
        assert_eq!(score("replica-b", "lab/web"), PINNED_B);
    }
    const PINNED_A: u64 = 0x8110_c8dc_29ee_b10a;
    const PINNED_B: u64 = 0x4d3a_205b_62b6_33ca;

    #[test]
    fn spreads_evenly() {
        let shards = ["replica-a", "replica-b", "replica-c", "replica-d"];
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for k in keys(20_000) {
            *counts.entry(shard_for(&k, &shards).unwrap()).or_default() += 1;
        }
        for s in shards {
            let c = counts[s];
            assert!((4_500..=5_500).contains(&c), "{s}: {c} of 20000");
        }
    }

    /// A join moves about 1/N of the keys, all to the newcomer; a leave moves only the
    /// leaver's keys.
    #[test]
    fn joins_and_leaves_move_about_one_nth() {
        let ks = keys(20_000);
        let three = ["replica-a", "replica-b", "replica-c"];
        let four = ["replica-a", "replica-b", "replica-c", "replica-d"];
        let mut moved = 0;
        for k in &ks {
            let (before, after) = (shard_for(k, &three), shard_for(k, &four));
            if before != after {
                assert_eq!(
                    after,
                    Some("replica-d"),
                    "a join moves keys only to the newcomer"
                );
                moved += 1;
            }
        }
        let fraction = moved as f64 / ks.len() as f64;
        assert!((0.22..=0.28).contains(&fraction), "join moved {fraction}");
        let mut moved = 0;
        for k in &ks {
            let (before, after) = (shard_for(k, &four), shard_for(k, &three));
            if before != after {
                assert_eq!(
                    before,
                    Some("replica-d"),
                    "a leave moves only the leaver's keys"
                );
                moved += 1;
            }
        }
        let fraction = moved as f64 / ks.len() as f64;
        assert!((0.22..=0.28).contains(&fraction), "leave moved {fraction}");
    }

    #[test]
    fn order_does_not_matter() {
        let a = ["x", "y", "z"];
        let b = ["z", "x", "y"];
        for k in keys(500) {
            assert_eq!(shard_for(&k, &a), shard_for(&k, &b));
        }
    }
}
