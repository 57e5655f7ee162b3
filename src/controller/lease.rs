//! `Lease` (coordination.k8s.io/v1): the record a [`LeaderElector`](super::LeaderElector)
//! reads and writes, typed, with its `MicroTime` timestamps.
//!
//! Why here and not in `api/`: `api/` holds the object model every resource shares (metadata,
//! lists, watch events, `Status`); a `Lease` is one concrete kind that only leader election
//! uses, so it lives beside the elector.
//!
//! What the API server sends is not trusted to be sane. The spec's fields are all optional,
//! and a field of the wrong type, or a time that does not parse, reads as absent instead of
//! failing the whole object: an elector must always be able to take over a record whose
//! holder wrote nonsense, and for that it needs the object (its `resourceVersion`) decoded.
//! The elector's rules for such records are in [`leader_election`](super::leader_election).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::api::{Object, ObjectMeta, Resource};

/// A `coordination.k8s.io/v1` Lease.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    /// `coordination.k8s.io/v1` (set by [`Lease::new`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `Lease` (set by [`Lease::new`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The object's metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The lease itself; `None` when the object has no `spec`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<LeaseSpec>,
}

/// `spec` of a [`Lease`]: who holds it, since when, for how long.
///
/// Fields are serialized in the order the API server writes them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseSpec {
    /// The identity of the holder; absent or empty when nobody holds the lease.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub holder_identity: Option<String>,
    /// How long the holder may go without renewing before others may take over.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub lease_duration_seconds: Option<i32>,
    /// When the current holder acquired the lease.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub acquire_time: Option<MicroTime>,
    /// When the current holder last renewed it (by the holder's clock).
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub renew_time: Option<MicroTime>,
    /// How many times the lease changed hands.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub lease_transitions: Option<i32>,
    /// Coordinated leader election's strategy (kept as read; this elector does not use it).
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub strategy: Option<String>,
    /// Coordinated leader election's preferred holder (kept as read; not used).
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub preferred_holder: Option<String>,
}

/// A value of the expected type, or `None` (never an error) for anything else.
fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    let value = serde_json::Value::deserialize(d)?;
    Ok(serde_json::from_value(value).ok())
}

impl Lease {
    /// An empty Lease named `name` in `namespace`, with `apiVersion` and `kind` set.
    pub fn new(namespace: &str, name: &str) -> Lease {
        Lease {
            api_version: Some("coordination.k8s.io/v1".into()),
            kind: Some("Lease".into()),
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(namespace.into()),
                ..Default::default()
            },
            spec: None,
        }
    }
}

impl Object for Lease {
    type Meta = ObjectMeta;
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl Resource for Lease {
    const GROUP: &'static str = "coordination.k8s.io";
    const VERSION: &'static str = "v1";
    const KIND: &'static str = "Lease";
    const PLURAL: &'static str = "leases";
    const NAMESPACED: bool = true;
}

/// A timestamp with microseconds, written the way the API server writes `MicroTime`:
/// `2026-11-23T04:40:40.123456Z` (always six fractional digits, UTC). Reads any RFC 3339
/// time; anything finer than a microsecond is dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MicroTime {
    /// Microseconds since the Unix epoch (negative before it).
    micros: i64,
}

impl MicroTime {
    /// The current time, to the microsecond.
    pub fn now() -> MicroTime {
        MicroTime::from_system_time(SystemTime::now())
    }

    /// `t`, to the microsecond (saturating far outside the years 0–9999).
    pub fn from_system_time(t: SystemTime) -> MicroTime {
        let micros = match t.duration_since(UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_micros()).unwrap_or(i64::MAX),
            Err(e) => i64::try_from(e.duration().as_micros())
                .map(|m| -m)
                .unwrap_or(i64::MIN),
        };
        MicroTime { micros }
    }

    /// As a `SystemTime`.
    pub fn to_system_time(self) -> SystemTime {
        let d = Duration::from_micros(self.micros.unsigned_abs());
        if self.micros >= 0 {
            UNIX_EPOCH.checked_add(d).unwrap_or(UNIX_EPOCH)
        } else {
            UNIX_EPOCH.checked_sub(d).unwrap_or(UNIX_EPOCH)
        }
    }

    /// Parses an RFC 3339 time; `None` when `s` is not one (or is before 1970).
    pub fn parse(s: &str) -> Option<MicroTime> {
        crate::config::parse_rfc3339(s).map(MicroTime::from_system_time)
    }
}

impl std::fmt::Display for MicroTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secs = self.micros.div_euclid(1_000_000);
        let micros = self.micros.rem_euclid(1_000_000);
        write!(
            f,
            "{}.{micros:06}Z",
            crate::config::time::format_date_time(secs)
        )
    }
}

impl Serialize for MicroTime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MicroTime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        MicroTime::parse(&s)
            .ok_or_else(|| serde::de::Error::custom("not an RFC 3339 time (MicroTime)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micro_time_round_trips_with_six_digits() {
        let t = MicroTime::parse("2026-11-23T04:40:40.123456Z").unwrap();
        assert_eq!(t.to_string(), "2026-11-23T04:40:40.123456Z");
        let t = MicroTime::parse("2026-11-23T04:40:30Z").unwrap();
        assert_eq!(t.to_string(), "2026-11-23T04:40:30.000000Z");
        let t = MicroTime::parse("2026-11-23T05:40:30.1234567+01:00").unwrap();
        assert_eq!(t.to_string(), "2026-11-23T04:40:30.123456Z");
        assert_eq!(
            MicroTime::from_system_time(t.to_system_time()),
            t,
            "through SystemTime and back"
        );
        assert_eq!(
            MicroTime::from_system_time(UNIX_EPOCH - Duration::from_micros(1)).to_string(),
            "1969-12-31T23:59:59.999999Z"
        );
        assert!(MicroTime::parse("yesterday").is_none());
    }

    #[test]
    fn junk_fields_read_as_absent() {
        let l: Lease = serde_json::from_str(
            r#"{"metadata":{"name":"x","resourceVersion":"7"},"spec":{"holderIdentity":5,
            "leaseDurationSeconds":"fifteen","renewTime":"not a time","acquireTime":null,
            "leaseTransitions":-3}}"#,
        )
        .unwrap();
        let spec = l.spec.unwrap();
        assert_eq!(spec.holder_identity, None);
        assert_eq!(spec.lease_duration_seconds, None);
        assert_eq!(spec.renew_time, None);
        assert_eq!(spec.acquire_time, None);
        assert_eq!(spec.lease_transitions, Some(-3));
        assert_eq!(l.metadata.resource_version(), "7");
    }
}
