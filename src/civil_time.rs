//! Civil dates (proleptic Gregorian, UTC) and RFC 3339 timestamps, once for the whole crate.
//!
//! Why one module: kubeconfig's exec credentials, leases, log timestamps, the test server's
//! CEL interpreter and the protobuf codec all turn seconds into `2026-11-22T02:04:06Z` and
//! back. Each used to carry its own copy of the day arithmetic and its own idea of what a
//! timestamp may look like; here the arithmetic is written once and the parser accepts what
//! kube-apiserver accepts: Go's `time.Parse(time.RFC3339, ...)`, the parser behind
//! `metav1.Time`, client-go's exec credential expiry and cel-go's `timestamp()`.
//!
//! What Go's parser accepts (and so this one):
//! - `YYYY-MM-DDTHH:MM:SS`, a four-digit year (`0000` to `9999`), an upper-case `T`, the
//!   hour in one digit or two (`T5:04:05`: Go's layout reads `15` so), the rest in two;
//! - a day that exists in its month (`2024-02-29` yes, `2023-02-29` and `2024-04-31` no);
//!   hours to 23, minutes and seconds to 59 (no leap second `:60`);
//! - an optional fraction after `.` or `,`, at least one digit and as many as given (digits
//!   past the ninth are dropped, not rounded);
//! - `Z` (upper case only) or an offset `+HH:MM` / `-HH:MM` (Go lets the hours reach 24 and
//!   the minutes 60 there).
//!
//! What kube-apiserver writes: `metav1.Time` to the second with `Z`, `metav1.MicroTime` with
//! six fraction digits, and cel-go's `string(timestamp)` with as many as needed (Go's
//! `RFC3339Nano`); [`format_rfc3339`] writes all three.

/// Seconds in a civil day (no leap seconds, as in Unix and Go time).
const SECS_PER_DAY: i64 = 86_400;
/// Days in a 400-year Gregorian cycle.
const DAYS_PER_ERA: i64 = 146_097;
/// Days from 0000-03-01 (the day the arithmetic counts from) to 1970-01-01.
const EPOCH_SHIFT: i64 = 719_468;

/// Whether `year` is a Gregorian leap year (year 0, i.e. 1 BC, is one).
pub(crate) fn is_leap_year(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

/// The number of days of `month` (1 to 12) in `year`; 0 for a month that does not exist.
pub(crate) fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap_year(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (negative before it).
///
/// The year is counted from March, so that February's variable length falls at the end of
/// the counted year, and in 400-year eras, which repeat exactly (Howard Hinnant's method).
/// `month` must be 1 to 12 and `day` 1 to 31; the date is not checked.
pub(crate) fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let (month, day) = (i64::from(month), i64::from(day));
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let march_month = (month + 9) % 12; // March = 0, ..., February = 11
    let day_of_year = (153 * march_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * DAYS_PER_ERA + day_of_era - EPOCH_SHIFT
}

/// The (year, month 1-12, day 1-31) of a day count since 1970-01-01; the inverse of
/// [`days_from_civil`] for every `i64` a caller can reach from seconds (`secs / 86400`).
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let shifted = days + EPOCH_SHIFT;
    let era = shifted.div_euclid(DAYS_PER_ERA);
    let day_of_era = shifted.rem_euclid(DAYS_PER_ERA);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let march_month = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * march_month + 2) / 5 + 1) as u32;
    let month = if march_month < 10 {
        march_month + 3
    } else {
        march_month - 9
    } as u32;
    (year_of_era + era * 400 + i64::from(month <= 2), month, day)
}

/// An instant as seconds since 1970-01-01T00:00:00Z (negative before) and the nanoseconds
/// after that second (0 to 999,999,999).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Timestamp {
    pub(crate) secs: i64,
    pub(crate) nanos: u32,
}

/// `n` ASCII digits at the start of `b` as a number; `None` when any is not a digit.
fn digits(b: &[u8], n: usize) -> Option<i64> {
    let b = b.get(..n)?;
    b.iter().try_fold(0i64, |acc, c| {
        c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
    })
}

/// A full date `YYYY-MM-DD` (RFC 3339's `full-date`, the OpenAPI `date` format) as days
/// since 1970-01-01; `None` unless it is exactly that and the day exists.
pub(crate) fn parse_full_date(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let year = digits(b, 4)?;
    let month = u32::try_from(digits(&b[5..], 2)?).ok()?;
    let day = u32::try_from(digits(&b[8..], 2)?).ok()?;
    if day == 0 || day > days_in_month(year, month) {
        return None;
    }
    Some(days_from_civil(year, month, day))
}

/// Parses an RFC 3339 timestamp as Go's `time.Parse(time.RFC3339, s)` does (see the module
/// docs for the exact rules); `None` when Go would refuse it.
pub(crate) fn parse_rfc3339(s: &str) -> Option<Timestamp> {
    let b = s.as_bytes();
    if b.len() < 19 || b[10] != b'T' {
        return None;
    }
    // `get`: a character across byte 10 means no date, not a panic.
    let days = parse_full_date(s.get(..10)?)?;
    // Go reads the hour (layout `15`) with one digit or two; minutes and seconds with two.
    let hour_len = if b[12].is_ascii_digit() { 2 } else { 1 };
    let hour = digits(&b[11..], hour_len)?;
    let time = &b[11 + hour_len..];
    if time.len() < 6 || time[0] != b':' || time[3] != b':' {
        return None;
    }
    let (minute, second) = (digits(&time[1..], 2)?, digits(&time[4..], 2)?);
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let mut rest = &time[6..];
    let mut nanos = 0u32;
    if let [b'.' | b',', tail @ ..] = rest {
        let n = tail.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return None;
        }
        for i in 0..9 {
            nanos = nanos * 10
                + tail
                    .get(i)
                    .filter(|_| i < n)
                    .map_or(0, |c| u32::from(c - b'0'));
        }
        rest = &tail[n..];
    }
    let offset = match rest {
        [b'Z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let hours = digits(&[*h1, *h2], 2)?;
            let minutes = digits(&[*m1, *m2], 2)?;
            if hours > 24 || minutes > 60 {
                return None;
            }
            let o = hours * 3600 + minutes * 60;
            if *sign == b'-' {
                -o
            } else {
                o
            }
        }
        _ => return None,
    };
    let secs = days * SECS_PER_DAY + hour * 3600 + minute * 60 + second - offset;
    Some(Timestamp { secs, nanos })
}

/// Appends `YYYY-MM-DDTHH:MM:SS` (UTC, no fraction, no zone) for `secs` seconds since
/// 1970-01-01, the part every RFC 3339 writer shares. Years outside 0 to 9999 are written
/// as Go's `Format` writes them (`-0001`, `10000`); kube-apiserver refuses to write those.
pub(crate) fn push_date_time(out: &mut String, secs: i64) {
    use std::fmt::Write as _;
    let (year, month, day) = civil_from_days(secs.div_euclid(SECS_PER_DAY));
    let of_day = secs.rem_euclid(SECS_PER_DAY);
    let sign = if year < 0 { "-" } else { "" };
    let _ = write!(
        out,
        "{sign}{:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        year.unsigned_abs(),
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60
    );
}

/// How many fraction digits [`format_rfc3339`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "testing"), allow(dead_code))] // as `format_rfc3339`
pub(crate) enum Fraction {
    /// Exactly this many (0 to 9): 0 is `metav1.Time`, 6 `metav1.MicroTime`, 9 the kubelet's
    /// log timestamps. The nanoseconds are cut, not rounded, as Go cuts them.
    // For protobuf's metav1 times once `src/protobuf/time.rs` is ported onto this module.
    #[cfg_attr(not(test), allow(dead_code))]
    Fixed(u8),
    /// As many as needed, none for a whole second (Go's `RFC3339Nano`, cel-go's `string()`).
    Trimmed,
}

/// `t` as RFC 3339 in UTC with a `Z`, its fraction as `fraction` says.
#[cfg_attr(not(feature = "testing"), allow(dead_code))] // CEL's now; protobuf's times next
pub(crate) fn format_rfc3339(t: Timestamp, fraction: Fraction) -> String {
    let mut out = String::with_capacity(30);
    push_date_time(&mut out, t.secs);
    let nanos = format!("{:09}", t.nanos.min(999_999_999));
    let shown = match fraction {
        Fraction::Fixed(n) => &nanos[..usize::from(n.min(9))],
        Fraction::Trimmed => nanos.trim_end_matches('0'),
    };
    if !shown.is_empty() {
        out.push('.');
        out.push_str(shown);
    }
    out.push('Z');
    out
}

/// Go's `time.ParseDuration`: `[-+]` then numbers with units (`ns us µs μs ms s m h`), in
/// nanoseconds within `i64` (a `metav1.Duration`'s text, and CEL's `duration()`).
#[cfg_attr(not(any(feature = "testing", feature = "protobuf")), allow(dead_code))]
pub(crate) fn parse_go_duration(text: &str) -> Option<i64> {
    let (neg, mut rest) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        let number = &rest[..digits];
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit: i128 = match &rest[..unit_len] {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        rest = &rest[unit_len..];
        let (int, frac) = number.split_once('.').unwrap_or((number, ""));
        if int.is_empty() && frac.is_empty() || int.len() > 20 || frac.contains('.') {
            return None;
        }
        let int: i128 = if int.is_empty() { 0 } else { int.parse().ok()? };
        let mut value = int.checked_mul(unit)?;
        let mut scale = unit;
        for c in frac.bytes().take(30) {
            scale /= 10;
            value += i128::from(c - b'0') * scale;
        }
        total = total.checked_add(value)?;
        if total > i128::from(i64::MAX) + 1 {
            return None;
        }
    }
    let total = if neg { -total } else { total };
    i64::try_from(total).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(secs: i64, nanos: u32) -> Option<Timestamp> {
        Some(Timestamp { secs, nanos })
    }

    #[test]
    fn days_and_dates_agree_with_known_days() {
        for (days, date) in [
            (0, (1970, 1, 1)),
            (-1, (1969, 12, 31)),
            (11_016, (2000, 2, 29)),
            (19_782, (2024, 2, 29)),
            (19_783, (2024, 3, 1)),
            (-719_528, (0, 1, 1)),
            (-719_469, (0, 2, 29)), // year 0 is a leap year
            (2_932_896, (9999, 12, 31)),
            (-141_427, (1582, 10, 15)),
            (-25_567, (1900, 1, 1)),
            (-25_508, (1900, 3, 1)), // 1900 is not a leap year: no 1900-02-29 between
        ] {
            assert_eq!(civil_from_days(days), date, "{days}");
            assert_eq!(days_from_civil(date.0, date.1, date.2), days, "{date:?}");
        }
    }

    #[test]
    fn every_day_of_ten_thousand_years_round_trips_in_order() {
        let mut expected = days_from_civil(-1, 12, 31);
        for year in 0..=9999 {
            for month in 1..=12 {
                for day in 1..=days_in_month(year, month) {
                    expected += 1;
                    assert_eq!(days_from_civil(year, month, day), expected);
                    assert_eq!(civil_from_days(expected), (year, month, day));
                }
            }
        }
        assert_eq!(expected, 2_932_896);
    }

    #[test]
    fn far_days_do_not_overflow() {
        for secs in [i64::MIN, i64::MAX, i64::MIN / 2, i64::MAX / 3] {
            let days = secs.div_euclid(SECS_PER_DAY);
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
            let mut s = String::new();
            push_date_time(&mut s, secs);
            assert!(s.len() >= 19, "{s}");
        }
    }

    #[test]
    fn leap_years_and_month_lengths() {
        assert!(is_leap_year(0) && is_leap_year(2000) && is_leap_year(2024) && is_leap_year(-4));
        assert!(!is_leap_year(1900) && !is_leap_year(2023) && !is_leap_year(2100));
        assert_eq!(days_in_month(2024, 2), 29);
        assert_eq!(days_in_month(2100, 2), 28);
        assert_eq!(days_in_month(2023, 4), 30);
        assert_eq!(days_in_month(2023, 0), 0);
        assert_eq!(days_in_month(2023, 13), 0);
    }

    #[test]
    fn full_dates() {
        assert_eq!(parse_full_date("1970-01-01"), Some(0));
        assert_eq!(parse_full_date("2024-02-29"), Some(19_782));
        assert_eq!(parse_full_date("0000-01-01"), Some(-719_528));
        assert_eq!(parse_full_date("9999-12-31"), Some(2_932_896));
        for bad in [
            "2023-02-29",
            "2024-04-31",
            "2024-00-01",
            "2024-13-01",
            "2024-01-00",
            "2024-1-01",
            "2024-01-01T",
            "+024-01-01",
            "2024/01/01",
            "２０２４-01-01",
            "",
        ] {
            assert_eq!(parse_full_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn parses_what_go_parses() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), ts(0, 0));
        assert_eq!(parse_rfc3339("2026-11-22T02:04:06Z"), ts(1_795_313_046, 0));
        // Offsets move the instant; the fraction stays with it.
        assert_eq!(
            parse_rfc3339("2026-11-22T03:04:06.5+01:00"),
            ts(1_795_313_046, 500_000_000)
        );
        assert_eq!(
            parse_rfc3339("2026-11-21T20:34:06-05:30"),
            ts(1_795_313_046, 0)
        );
        assert_eq!(
            parse_rfc3339("2026-11-22T02:04:06-00:00"),
            ts(1_795_313_046, 0)
        );
        // Before 1970: negative seconds, nanoseconds still counted forwards.
        assert_eq!(
            parse_rfc3339("1969-12-31T23:59:59.25Z"),
            ts(-1, 250_000_000)
        );
        assert_eq!(
            parse_rfc3339("0000-01-01T00:00:00Z"),
            ts(-62_167_219_200, 0)
        );
        assert_eq!(
            parse_rfc3339("9999-12-31T23:59:59.999999999Z"),
            ts(253_402_300_799, 999_999_999)
        );
        // An offset can move the instant past the four-digit years; Go keeps it.
        assert_eq!(
            parse_rfc3339("0000-01-01T00:00:00+01:00"),
            ts(-62_167_222_800, 0)
        );
        // Fractions: any length (past nine digits cut), a comma as Go allows.
        assert_eq!(
            parse_rfc3339("2024-01-01T00:00:00.1Z").map(|t| t.nanos),
            Some(100_000_000)
        );
        assert_eq!(
            parse_rfc3339("2024-01-01T00:00:00.000001Z").map(|t| t.nanos),
            Some(1_000)
        );
        assert_eq!(
            parse_rfc3339("2024-01-01T00:00:00.1234567899999Z").map(|t| t.nanos),
            Some(123_456_789)
        );
        assert_eq!(
            parse_rfc3339("2024-01-01T00:00:00,5Z").map(|t| t.nanos),
            Some(500_000_000)
        );
        // Go's range for offsets: hours to 24, minutes to 60.
        assert_eq!(parse_rfc3339("1970-01-02T00:00:00+24:00"), ts(0, 0));
        assert_eq!(parse_rfc3339("1970-01-01T01:00:00+00:60"), ts(0, 0));
        assert_eq!(parse_rfc3339("2024-02-29T23:59:59Z"), ts(1_709_251_199, 0));
        // A one-digit hour, as Go's layout reads `15`.
        assert_eq!(parse_rfc3339("1970-01-01T5:00:01Z"), ts(18_001, 0));
        assert_eq!(
            parse_rfc3339("1970-01-01T5:00:01.5+05:00"),
            ts(1, 500_000_000)
        );
    }

    #[test]
    fn refuses_what_go_refuses() {
        for bad in [
            "",
            "2026-11-22",
            "2026-11-22T02:04:06",  // no zone
            "2026-11-22 02:04:06Z", // a space for the T
            "2026-11-22t02:04:06Z", // Go's T is upper case
            "2026-11-22T02:04:06z", // and so is its Z
            "2026-13-01T00:00:00Z",
            "2023-02-29T00:00:00Z", // not a leap year
            "2024-04-31T00:00:00Z",
            "2024-01-01T24:00:00Z",
            "2024-01-01T5:0:00Z", // only the hour may have one digit
            "2024-01-01T5:00:0Z",
            "2024-01-01T:00:00Z",
            "2024-01-01T123:00:00Z",
            "2024-01-01T00:00:00",
            "2024-01-01T0:00:00",
            "2024-01-01T00:60:00Z",
            "2024-12-31T23:59:60Z",  // no leap seconds
            "2024-01-01T00:00:00.Z", // a point without digits
            "2024-01-01T00:00:00.5", // a fraction without zone
            "2024-01-01T00:00:00+0100",
            "2024-01-01T00:00:00+01",
            "2024-01-01T00:00:00+25:00",
            "2024-01-01T00:00:00+01:61",
            "2024-01-01T00:00:00+01:00:00",
            "2024-01-01T00:00:00Zjunk",
            "2024-01-01T00:00:00ZZ",
            "x026-11-22T02:04:06Z",
            "-001-01-01T00:00:00Z",
            "12024-01-01T00:00:00Z",
            "2026-11-22T02:04:06+0\u{e9}00",
            "2026-11-22T02:04:06\u{e9}",
            "2026-11-22T02:\u{e9}4:06Z",
            "2026-11-2\u{e9}T02:04:06Z",
            "2026-11-22T02:04:06.\u{e9}Z",
            "2026-11-22T02:04:06.5\u{e9}",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    /// Hostile text: every prefix, and every single character replaced by a digit, a sign, a
    /// separator, a multi-byte character or a non-ASCII digit, never panics; whatever is
    /// accepted formats and parses back to the same instant.
    #[test]
    fn any_damaged_timestamp_is_refused_or_read_consistently() {
        let good = "2024-02-29T23:59:59.123456789+05:30";
        let swaps = [
            '0', '9', '-', '+', ':', '.', ',', 'T', 't', 'Z', ' ', '\0', '\u{e9}', '\u{663}',
            '\u{ff11}',
        ];
        let mut accepted = 0;
        let mut check = |s: &str| {
            if let Some(t) = parse_rfc3339(s) {
                accepted += 1;
                assert!(t.nanos < 1_000_000_000, "{s}");
                let again = format_rfc3339(t, Fraction::Trimmed);
                assert_eq!(parse_rfc3339(&again), Some(t), "{s} -> {again}");
            }
        };
        for end in 0..=good.len() {
            check(&good[..end]);
        }
        for (i, _) in good.char_indices() {
            for c in swaps {
                let mut s = String::from(&good[..i]);
                s.push(c);
                s.push_str(&good[i + 1..]);
                check(&s);
                let mut inserted = String::from(&good[..i]);
                inserted.push(c);
                inserted.push_str(&good[i..]);
                check(&inserted);
            }
        }
        assert!(accepted > 20, "{accepted}");
    }

    #[test]
    fn formats_as_kube_apiserver_writes() {
        let t = Timestamp {
            secs: 1_795_313_046,
            nanos: 120_000_000,
        };
        assert_eq!(
            format_rfc3339(t, Fraction::Fixed(0)),
            "2026-11-22T02:04:06Z"
        );
        assert_eq!(
            format_rfc3339(t, Fraction::Fixed(6)),
            "2026-11-22T02:04:06.120000Z"
        );
        assert_eq!(
            format_rfc3339(t, Fraction::Fixed(9)),
            "2026-11-22T02:04:06.120000000Z"
        );
        assert_eq!(
            format_rfc3339(t, Fraction::Trimmed),
            "2026-11-22T02:04:06.12Z"
        );
        let whole = Timestamp { secs: 0, nanos: 0 };
        assert_eq!(
            format_rfc3339(whole, Fraction::Trimmed),
            "1970-01-01T00:00:00Z"
        );
        // Cut, not rounded, as Go cuts.
        let late = Timestamp {
            secs: -1,
            nanos: 999_999_999,
        };
        assert_eq!(
            format_rfc3339(late, Fraction::Fixed(6)),
            "1969-12-31T23:59:59.999999Z"
        );
        assert_eq!(
            format_rfc3339(late, Fraction::Trimmed),
            "1969-12-31T23:59:59.999999999Z"
        );
        let mut s = String::new();
        push_date_time(&mut s, -62_167_219_200);
        assert_eq!(s, "0000-01-01T00:00:00");
        s.clear();
        push_date_time(&mut s, -62_167_219_201);
        assert_eq!(s, "-0001-12-31T23:59:59");
        s.clear();
        push_date_time(&mut s, 253_402_300_800);
        assert_eq!(s, "10000-01-01T00:00:00");
    }

    #[test]
    fn formatting_then_parsing_gives_the_instant_back() {
        let mut secs = -62_167_219_200i64; // 0000-01-01
        let mut nanos = 0u32;
        while secs <= 253_402_300_799 {
            let t = Timestamp { secs, nanos };
            assert_eq!(
                parse_rfc3339(&format_rfc3339(t, Fraction::Trimmed)),
                Some(t)
            );
            assert_eq!(
                parse_rfc3339(&format_rfc3339(t, Fraction::Fixed(9))),
                Some(t)
            );
            secs += 7_777_777; // about three months, landing on every time of day
            nanos = (nanos + 123_456_789) % 1_000_000_000;
        }
    }
}
