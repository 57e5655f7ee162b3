//! The text forms Go's JSON gives Kubernetes' time types, and back: `metav1.Time`
//! (RFC 3339 to the second, UTC), `metav1.MicroTime` (six fractional digits) and
//! `metav1.Duration` (Go's `time.Duration.String`).

use std::fmt::Write;

/// The longest text of [`format_time`]: `2026-11-28T11:31:33.123456Z`.
pub(crate) const TIME_TEXT_MAX: usize = 27;

/// RFC 3339 in UTC, written into a stack buffer (a Pod holds a dozen times: no allocation,
/// no formatting machinery); `micros` adds `.ffffff`. Gives the buffer and the text's
/// length, `None` outside years 0..=9999 (Go's JSON refuses those too).
pub(crate) fn format_time_into(
    seconds: i64,
    nanos: i32,
    micros: bool,
) -> Option<([u8; TIME_TEXT_MAX], usize)> {
    let days = seconds.div_euclid(86_400);
    let secs = seconds.rem_euclid(86_400);
    let (y, mo, d) = crate::civil_time::civil_from_days(days);
    if !(0..=9999).contains(&y) || !(0..1_000_000_000).contains(&nanos) {
        return None;
    }
    let mut out = *b"0000-00-00T00:00:00.000000Z";
    let digits = |out: &mut [u8], mut v: u64| {
        for b in out.iter_mut().rev() {
            *b = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    digits(&mut out[0..4], y as u64);
    digits(&mut out[5..7], u64::from(mo));
    digits(&mut out[8..10], u64::from(d));
    digits(&mut out[11..13], (secs / 3600) as u64);
    digits(&mut out[14..16], (secs / 60 % 60) as u64);
    digits(&mut out[17..19], (secs % 60) as u64);
    if micros {
        digits(&mut out[20..26], (nanos / 1000) as u64);
        Some((out, TIME_TEXT_MAX))
    } else {
        out[19] = b'Z';
        Some((out, 20))
    }
}

/// [`format_time_into`] as a `String`.
#[cfg(test)]
pub(crate) fn format_time(seconds: i64, nanos: i32, micros: bool) -> Option<String> {
    let (buf, len) = format_time_into(seconds, nanos, micros)?;
    Some(String::from_utf8(buf[..len].to_vec()).expect("ASCII"))
}

/// Parses RFC 3339 (`2026-11-28T11:31:33Z`, fractions and offsets allowed) into Unix
/// seconds and nanoseconds, by Go's `time.Parse` rules as kube-apiserver reads a time.
pub(crate) fn parse_time(text: &str) -> Option<(i64, i32)> {
    crate::civil_time::parse_rfc3339(text).map(|t| (t.secs, t.nanos as i32))
}

/// Go's `time.Duration.String()`: `1h2m3.5s`, `1m0s`, `0s`, `1.5ms`, `-2µs`.
pub(crate) fn format_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".to_owned();
    }
    let neg = nanos < 0;
    let u = nanos.unsigned_abs();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    let frac = |out: &mut String, v: u64, digits: u32| {
        let unit = 10u64.pow(digits);
        let _ = write!(out, "{}", v / unit);
        let rest = v % unit;
        if rest != 0 {
            let text = format!("{:0width$}", rest, width = digits as usize);
            out.push('.');
            out.push_str(text.trim_end_matches('0'));
        }
    };
    if u < 1_000_000_000 {
        let (digits, unit) = match u {
            0..=999 => (0, "ns"),
            1_000..=999_999 => (3, "µs"),
            _ => (6, "ms"),
        };
        frac(&mut out, u, digits);
        out.push_str(unit);
        return out;
    }
    let secs_total = u / 1_000_000_000;
    let sub = u % 1_000_000_000;
    let (h, m, s) = (secs_total / 3600, secs_total / 60 % 60, secs_total % 60);
    if h > 0 {
        let _ = write!(out, "{h}h");
    }
    if h > 0 || m > 0 {
        let _ = write!(out, "{m}m");
    }
    frac(&mut out, s * 1_000_000_000 + sub, 9);
    out.push('s');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_as_go_renders_them() {
        assert_eq!(
            format_time(1_795_865_493, 0, false).unwrap(),
            "2026-11-28T11:31:33Z"
        );
        assert_eq!(format_time(0, 0, false).unwrap(), "1970-01-01T00:00:00Z");
        assert_eq!(
            format_time(1_795_865_493, 123_456_789, true).unwrap(),
            "2026-11-28T11:31:33.123456Z"
        );
        assert_eq!(
            format_time(-62_135_596_800, 0, false).unwrap(),
            "0001-01-01T00:00:00Z"
        );
        assert!(format_time(i64::MAX, 0, false).is_none());
        assert!(format_time(i64::MIN, 0, false).is_none());
        assert_eq!(parse_time("2026-11-28T11:31:33Z"), Some((1_795_865_493, 0)));
        assert_eq!(
            parse_time("2026-11-28T12:31:33.5+01:00"),
            Some((1_795_865_493, 500_000_000))
        );
        assert_eq!(parse_time("2026-11-28"), None);
        assert_eq!(parse_time("2026-11-28T11:31:33Zjunk"), None);
    }

    #[test]
    fn durations_as_go_renders_them() {
        for (ns, text) in [
            (0, "0s"),
            (1, "1ns"),
            (1_500, "1.5µs"),
            (1_500_000, "1.5ms"),
            (1_000_000_000, "1s"),
            (1_500_000_000, "1.5s"),
            (60_000_000_000, "1m0s"),
            (3_600_000_000_000, "1h0m0s"),
            (3_723_500_000_000, "1h2m3.5s"),
            (-2_000, "-2µs"),
        ] {
            assert_eq!(format_duration(ns), text);
            assert_eq!(
                crate::civil_time::parse_go_duration(text),
                Some(ns),
                "{text}"
            );
        }
        assert_eq!(format_duration(i64::MIN), "-2562047h47m16.854775808s");
        assert_eq!(
            crate::civil_time::parse_go_duration("-2562047h47m16.854775808s"),
            Some(i64::MIN)
        );
        assert_eq!(crate::civil_time::parse_go_duration("1x"), None);
        assert_eq!(crate::civil_time::parse_go_duration(""), None);
        assert_eq!(
            crate::civil_time::parse_go_duration("9999999999999999999999h"),
            None
        );
    }
}
