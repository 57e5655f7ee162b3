//! Log timestamps: the kubelet's RFC 3339 times with nanoseconds, read and written exactly.
//!
//! `timestamps=true` prefixes each log line with a fixed-width UTC time
//! (`2026-11-26T11:50:12.993384413Z `). A resumed follow compares these times to the
//! nanosecond and asks the server again from the last one's whole second (`sinceTime` reaches
//! the kubelet at second precision), so both directions are needed without a date library.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A point in time as a log line carries it: seconds since 1970 (UTC) and nanoseconds.
/// Ordered by time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LogTime {
    /// Whole seconds since 1970-01-01T00:00:00Z.
    pub secs: u64,
    /// Nanoseconds within the second (`0..1_000_000_000`).
    pub nanos: u32,
}

impl LogTime {
    /// Parses an RFC 3339 time (`2026-11-26T11:50:12.993384413Z`, any fraction, `Z` or an
    /// offset); `None` when it is not one or is before 1970.
    pub fn parse(s: &str) -> Option<LogTime> {
        let t = crate::config::parse_rfc3339(s)?;
        Some(Self::from_system_time(t))
    }

    /// The time of `t` (times before 1970 become 1970).
    pub fn from_system_time(t: SystemTime) -> LogTime {
        let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
        LogTime {
            secs: d.as_secs(),
            nanos: d.subsec_nanos(),
        }
    }

    /// This time as a `SystemTime`.
    pub fn to_system_time(self) -> SystemTime {
        UNIX_EPOCH + Duration::new(self.secs, self.nanos)
    }

    /// The same second with no fraction: what the kubelet sees of a `sinceTime`.
    pub fn whole_second(self) -> LogTime {
        LogTime {
            secs: self.secs,
            nanos: 0,
        }
    }

    /// `2026-11-26T11:50:12.993384413Z`: RFC 3339 with nine fraction digits (the kubelet's
    /// fixed-width form).
    pub fn to_rfc3339_nanos(self) -> String {
        format!("{}.{:09}Z", self.date_time(), self.nanos)
    }

    /// `2026-11-26T11:50:12Z`: RFC 3339 at second precision (the fraction dropped).
    pub fn to_rfc3339_secs(self) -> String {
        format!("{}Z", self.date_time())
    }

    fn date_time(self) -> String {
        crate::config::time::format_date_time(i64::try_from(self.secs).unwrap_or(i64::MAX))
    }
}

impl std::fmt::Display for LogTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_rfc3339_nanos())
    }
}

/// Splits `2026-11-26T11:50:12.993384413Z rest` into its time and the rest (after the one
/// space); `None` when the line does not start with a time.
pub(crate) fn split_timestamp(line: &[u8]) -> Option<(LogTime, &[u8])> {
    let space = line.iter().take(40).position(|&b| b == b' ')?;
    let ts = std::str::from_utf8(&line[..space]).ok()?;
    Some((LogTime::parse(ts)?, &line[space + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_the_captured_form() {
        let s = "2026-11-26T11:50:12.993384413Z";
        let t = LogTime::parse(s).unwrap();
        assert_eq!(t.nanos, 993_384_413);
        assert_eq!(t.to_rfc3339_nanos(), s);
        assert_eq!(t.to_rfc3339_secs(), "2026-11-26T11:50:12Z");
        assert_eq!(
            LogTime::parse("2026-11-26T11:50:12.5Z")
                .unwrap()
                .to_string(),
            "2026-11-26T11:50:12.500000000Z"
        );
        let (t, rest) = split_timestamp(b"2026-11-26T11:50:13.023312839Z capture line 3").unwrap();
        assert_eq!(t.to_rfc3339_nanos(), "2026-11-26T11:50:13.023312839Z");
        assert_eq!(rest, b"capture line 3");
        assert!(split_timestamp(b"no time here").is_none());
        assert!(split_timestamp("\u{e9}\u{e9} x".as_bytes()).is_none());
    }
}
