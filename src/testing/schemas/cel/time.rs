//! CEL's timestamps and durations: RFC 3339 and Go duration strings, in UTC (a time zone
//! argument to the getters is not supported), within cel-go's range (years 1 to 9999).

const NANOS: i128 = 1_000_000_000;
const MIN_TS: i128 = -62_135_596_800 * NANOS; // 0001-01-01T00:00:00Z
const MAX_TS: i128 = 253_402_300_799 * NANOS + NANOS - 1; // 9999-12-31T23:59:59.999999999Z
/// cel-go's duration range: that of a protobuf Duration (±315,576,000,000 s).
const MAX_DUR: i128 = 315_576_000_000 * NANOS;

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// (year, month, day) of a day count since 1970-01-01.
pub(crate) fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn digits(s: &[u8], n: usize) -> Option<i64> {
    if s.len() < n || !s[..n].iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(&s[..n]).ok()?.parse().ok()
}

fn valid_date(y: i64, m: i64, d: i64) -> bool {
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let len = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    (1..=12).contains(&m) && d >= 1 && d <= len[(m - 1) as usize]
}

/// `2006-01-02` (format `date`) at midnight UTC.
pub(crate) fn parse_date(s: &str) -> Option<i128> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (y, m, d) = (digits(b, 4)?, digits(&b[5..], 2)?, digits(&b[8..], 2)?);
    if !valid_date(y, m, d) {
        return None;
    }
    Some(i128::from(days_from_civil(y, m, d)) * 86_400 * NANOS)
}

/// An RFC 3339 timestamp (`2006-01-02T15:04:05.999Z`, `...+07:00`).
pub(crate) fn parse_timestamp(s: &str) -> Option<i128> {
    let b = s.as_bytes();
    if b.len() < 20 || !matches!(b[10], b'T' | b't') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let day = parse_date(&s[..10])?;
    let (h, mi, se) = (
        digits(&b[11..], 2)?,
        digits(&b[14..], 2)?,
        digits(&b[17..], 2)?,
    );
    if h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let mut i = 19;
    let mut frac: i128 = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let n = i - start;
        if n == 0 || n > 9 {
            return None;
        }
        frac = std::str::from_utf8(&b[start..i])
            .ok()?
            .parse::<i128>()
            .ok()?
            * 10i128.pow((9 - n) as u32);
    }
    let offset: i128 = match b.get(i..)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), rest @ ..] if rest.len() == 5 && rest[2] == b':' => {
            let (oh, om) = (digits(rest, 2)?, digits(&rest[3..], 2)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let o = i128::from(oh * 3600 + om * 60);
            if *sign == b'+' {
                o
            } else {
                -o
            }
        }
        _ => return None,
    };
    let t = day + i128::from(h * 3600 + mi * 60 + se) * NANOS + frac - offset * NANOS;
    in_range(t)
}

/// `t` if it is a timestamp cel-go accepts.
pub(crate) fn in_range(t: i128) -> Option<i128> {
    (MIN_TS..=MAX_TS).contains(&t).then_some(t)
}

/// `d` if it is a duration cel-go accepts.
pub(crate) fn dur_in_range(d: i128) -> Option<i128> {
    (-MAX_DUR..=MAX_DUR).contains(&d).then_some(d)
}

/// A Go duration (`1h30m`, `-1.5s`, `300ms`, `0`).
pub(crate) fn parse_duration(s: &str) -> Option<i128> {
    let (neg, mut rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let num = &rest[..num_end];
        if num.is_empty() || num == "." {
            return None;
        }
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit: i128 = match &rest[..unit_end] {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => NANOS,
            "m" => 60 * NANOS,
            "h" => 3600 * NANOS,
            _ => return None,
        };
        rest = &rest[unit_end..];
        let (int, frac) = num.split_once('.').unwrap_or((num, ""));
        let int: i128 = if int.is_empty() { 0 } else { int.parse().ok()? };
        total = total.checked_add(int.checked_mul(unit)?)?;
        let mut scale = unit;
        for c in frac.chars().take(20) {
            scale /= 10;
            total += i128::from(c.to_digit(10)?) * scale;
        }
        if total > MAX_DUR * 100 {
            return None;
        }
    }
    dur_in_range(if neg { -total } else { total })
}

/// RFC 3339 in UTC with as many fraction digits as needed, as cel-go prints a timestamp.
pub(crate) fn format_timestamp(t: i128) -> String {
    let secs = t.div_euclid(NANOS) as i64;
    let nanos = t.rem_euclid(NANOS);
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let sod = secs.rem_euclid(86_400);
    let frac = if nanos == 0 {
        String::new()
    } else {
        format!(".{nanos:09}").trim_end_matches('0').to_owned()
    };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}{frac}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

/// Seconds with a fraction, as cel-go prints a duration (`90s`, `1.5s`).
pub(crate) fn format_duration(d: i128) -> String {
    let s = d / NANOS;
    let n = (d % NANOS).abs();
    if n == 0 {
        return format!("{s}s");
    }
    let sign = if d < 0 && s == 0 { "-" } else { "" };
    format!("{sign}{s}.{}s", format!("{n:09}").trim_end_matches('0'))
}

/// A timestamp's UTC getter (`getFullYear`, `getMonth` 0-based, `getDayOfWeek` 0 = Sunday...).
pub(crate) fn getter(t: i128, name: &str) -> Option<i64> {
    let secs = t.div_euclid(NANOS) as i64;
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    Some(match name {
        "getFullYear" => y,
        "getMonth" => m - 1,
        "getDate" => d,
        "getDayOfMonth" => d - 1,
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
