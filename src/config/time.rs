//! RFC 3339 timestamps (`2026-11-22T02:04:06Z`, with optional fraction and offset) as
//! `SystemTime`s, for exec credential expiry, leases and log timestamps. The calendar and the
//! parsing rules (Go's, as client-go reads an `expirationTimestamp`) are `crate::civil_time`'s.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::civil_time;

/// `YYYY-MM-DDTHH:MM:SS` (UTC, no zone) for `secs` seconds since 1970-01-01: the part of an
/// RFC 3339 timestamp every writer of one here shares (each adds its fraction and `Z`).
pub(crate) fn format_date_time(secs: i64) -> String {
    let mut out = String::with_capacity(19);
    civil_time::push_date_time(&mut out, secs);
    out
}

/// Parses an RFC 3339 timestamp as Go's `time.Parse(time.RFC3339, s)` (and so client-go and
/// kube-apiserver) accepts it: `2026-11-22T02:04:06Z`, a fraction after the seconds, an
/// offset such as `+01:00` instead of `Z`. `None` when it is not one, and for an instant
/// before 1970.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use kube_informer::config::parse_rfc3339;
///
/// let t = parse_rfc3339("2026-11-22T03:04:06.5+01:00").unwrap();
/// assert_eq!(t, UNIX_EPOCH + Duration::from_millis(1_795_313_046_500));
/// assert_eq!(parse_rfc3339("2026-02-29T00:00:00Z"), None); // 2026 is not a leap year
/// ```
pub fn parse_rfc3339(s: &str) -> Option<SystemTime> {
    let t = civil_time::parse_rfc3339(s)?;
    let secs = u64::try_from(t.secs).ok()?;
    UNIX_EPOCH.checked_add(Duration::new(secs, t.nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_common_forms() {
        let t = parse_rfc3339("2026-11-22T02:04:06Z").unwrap();
        assert_eq!(
            t.duration_since(UNIX_EPOCH).unwrap().as_secs(),
            1_795_313_046
        );
        let t2 = parse_rfc3339("2026-11-22T03:04:06.5+01:00").unwrap();
        assert_eq!(
            t2.duration_since(UNIX_EPOCH).unwrap().as_millis(),
            1_795_313_046_500
        );
        for bad in [
            "",
            "2026-13-01T00:00:00Z",
            "2026-11-22 02:04",
            "2026-11-22T02:04:06",
            "x026-11-22T02:04:06Z",
            "2026-11-22T02:04:06+0\u{e9}00",
            "2026-11-22T02:04:06\u{e9}",
            "2026-11-22T02:\u{e9}4:06Z",
            // Refused by Go's `time.Parse(time.RFC3339, ..)`, as client-go reads them.
            "2026-02-29T00:00:00Z",
            "2026-11-22T02:04:60Z",
            "2026-11-22t02:04:06Z",
            "2026-11-22T02:04:06z",
            "2026-11-22 02:04:06Z",
            // Before 1970: no `SystemTime` this function gives.
            "1969-12-31T23:59:59Z",
        ] {
            assert!(parse_rfc3339(bad).is_none(), "{bad}");
        }
    }
}
