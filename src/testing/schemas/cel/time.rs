//! CEL's timestamps and durations: RFC 3339 and Go duration strings, in UTC (a time zone
//! argument to the getters is not supported), within cel-go's range (years 1 to 9999).

use crate::civil_time::{self, days_from_civil, Fraction, Timestamp};

const NANOS: i128 = 1_000_000_000;
const MIN_TS: i128 = -62_135_596_800 * NANOS; // 0001-01-01T00:00:00Z
const MAX_TS: i128 = 253_402_300_799 * NANOS + NANOS - 1; // 9999-12-31T23:59:59.999999999Z
/// cel-go's duration range: that of a protobuf Duration (±315,576,000,000 s).
const MAX_DUR: i128 = 315_576_000_000 * NANOS;

/// `2006-01-02` (format `date`) at midnight UTC.
pub(crate) fn parse_date(s: &str) -> Option<i128> {
    Some(i128::from(civil_time::parse_full_date(s)?) * 86_400 * NANOS)
}

/// An RFC 3339 timestamp (`2006-01-02T15:04:05.999Z`, `...+07:00`), read as cel-go reads it
/// (Go's `time.Parse(time.RFC3339, ..)`), within cel-go's range.
pub(crate) fn parse_timestamp(s: &str) -> Option<i128> {
    let t = civil_time::parse_rfc3339(s)?;
    in_range(i128::from(t.secs) * NANOS + i128::from(t.nanos))
}

/// `timestamp(s)`: cel-go's error for a string Go's `time.Parse` reads but that lies
/// outside years 1 to 9999 (year 0000, or 9999-12-31 late with a negative offset) is
/// `timestamp overflow` (`common/types/string.go`), not a conversion error.
pub(crate) fn parse_timestamp_call(s: &str) -> Result<i128, &'static str> {
    match civil_time::parse_rfc3339(s) {
        None => Err("type conversion error from 'string' to 'google.protobuf.Timestamp'"),
        Some(t) => {
            in_range(i128::from(t.secs) * NANOS + i128::from(t.nanos)).ok_or("timestamp overflow")
        }
    }
}

/// `t` if it is a timestamp cel-go accepts.
pub(crate) fn in_range(t: i128) -> Option<i128> {
    (MIN_TS..=MAX_TS).contains(&t).then_some(t)
}

/// `d` if it is a duration cel-go accepts.
pub(crate) fn dur_in_range(d: i128) -> Option<i128> {
    (-MAX_DUR..=MAX_DUR).contains(&d).then_some(d)
}

/// A Go duration (`1h30m`, `-1.5s`, `300ms`, `0`), read as cel-go reads it: Go's
/// `time.ParseDuration` (within `i64` nanoseconds), then cel-go's range.
pub(crate) fn parse_duration(s: &str) -> Option<i128> {
    civil_time::parse_go_duration(s)
        .map(i128::from)
        .and_then(dur_in_range)
}

/// RFC 3339 in UTC with as many fraction digits as needed, as cel-go prints a timestamp.
pub(crate) fn format_timestamp(t: i128) -> String {
    let t = Timestamp {
        secs: t.div_euclid(NANOS) as i64,
        nanos: t.rem_euclid(NANOS) as u32,
    };
    civil_time::format_rfc3339(t, Fraction::Trimmed)
}

/// Seconds with a fraction, as cel-go prints a duration (`90s`, `1.5s`): Go's
/// `strconv.FormatFloat(d.Seconds(), 'f', -1, 64)`, so through a `float64` whose shortest
/// digits are printed (`360000000.000000001s` of nanoseconds prints as `360000000s`).
pub(crate) fn format_duration(d: i128) -> String {
    // Go's `Duration.Seconds`: whole seconds plus the fraction, each as a float64.
    let secs = (d / NANOS) as f64 + (d % NANOS) as f64 / 1e9;
    format!("{secs}s")
}

/// A timestamp's UTC getter (`getFullYear`, `getMonth` 0-based, `getDayOfWeek` 0 = Sunday...).
pub(crate) fn getter(t: i128, name: &str) -> Option<i64> {
    let secs = t.div_euclid(NANOS) as i64;
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_time::civil_from_days(days);
    Some(match name {
        "getFullYear" => y,
        "getMonth" => i64::from(m) - 1,
        "getDate" => i64::from(d),
        "getDayOfMonth" => i64::from(d) - 1,
        "getDayOfYear" => days - days_from_civil(y, 1, 1),
        "getDayOfWeek" => (days + 4).rem_euclid(7),
        "getHours" => sod / 3600,
        "getMinutes" => sod % 3600 / 60,
        "getSeconds" => sod % 60,
        "getMilliseconds" => (t.rem_euclid(NANOS) / 1_000_000) as i64,
        _ => return None,
    })
}

/// A duration's getter (`getHours` and the others: whole units, truncated).
pub(crate) fn duration_getter(d: i128, name: &str) -> Option<i64> {
    let v = match name {
        "getHours" => d / (3600 * NANOS),
        "getMinutes" => d / (60 * NANOS),
        "getSeconds" => d / NANOS,
        "getMilliseconds" => d / 1_000_000,
        _ => return None,
    };
    i64::try_from(v).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_stop_where_go_parse_duration_stops() {
        // cel-go's `duration()` is Go's `time.ParseDuration`: 2562047h (about 292 years) is
        // the last hour an i64 of nanoseconds holds, even though a protobuf Duration reaches
        // 10,000 years.
        assert_eq!(parse_duration("2562047h"), Some(2_562_047 * 3600 * NANOS));
        assert_eq!(parse_duration("2562048h"), None);
        assert_eq!(parse_duration("3000000h"), None);
        assert_eq!(parse_duration("-1.5s"), Some(-1_500_000_000));
        assert_eq!(parse_duration("1.2.3s"), None);
    }
}
