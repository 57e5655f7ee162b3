//! The string `format`s kube-apiserver checks in a custom resource's values.
//!
//! A CRD may name any `format`; kube-apiserver checks a string against it when kube-openapi's
//! `strfmt` registry knows the name (a failure is a `FieldValueTypeInvalid`:
//! `spec.when in body must be of type date-time: "yesterday"`) and ignores it otherwise
//! (`int32` and `int64` are number formats, checked as ranges in `schema.rs`). The rules
//! here are those of the Go checks (written anew, not copied): `date` is Go's `2006-01-02`
//! layout with real
//! month lengths, `date-time` is that date, a `T`, then `hh:mm:ss`, an optional fraction and
//! a `Z` or an offset, `ipv4` accepts leading zeros (`ParseIPSloppy`) and any address written
//! with a dot, `byte` is padded standard base64, and so on.
//!
//! Checked: `date-time` (and `datetime`), `date`, `byte`, `email`, `uuid`, `uuid3`, `uuid4`,
//! `uuid5`, `ipv4`, `ipv6`, `cidr`, `mac`, `hostname`, `hexcolor`, `rgbcolor`, `ssn`,
//! `bsonobjectid`, `isbn`, `isbn10`, `isbn13`, `k8s-short-name` (a DNS-1123 label),
//! `k8s-long-name` (a DNS-1123 subdomain), `password` (anything); a name's dashes do not
//! count (`date-time` is `datetime`, as in Go's registry). Accepted unchecked
//! although kube-apiserver checks them: `uri`, `creditcard`, `duration`. Every other format
//! is ignored, as kube-apiserver ignores it.

use std::net::{Ipv4Addr, Ipv6Addr};

/// Whether `s` is a valid `format`; `None` when the registry does not know that format (the
/// format check does not apply to the value at all).
pub(crate) fn check(format: &str, s: &str) -> Option<bool> {
    // The registry ignores dashes in names: `date-time` is `datetime`.
    Some(match format.replace('-', "").as_str() {
        "datetime" => is_date_time(s),
        "date" => is_date(s),
        "byte" => is_base64(s),
        "email" => is_email(s),
        "uuid" => is_uuid(s, None),
        "uuid3" => is_uuid(s, Some('3')),
        "uuid4" => is_uuid(s, Some('4')),
        "uuid5" => is_uuid(s, Some('5')),
        "ipv4" => parse_ip_sloppy(s).is_some() && s.contains('.'),
        "ipv6" => parse_ip_sloppy(s).is_some() && s.contains(':'),
        "cidr" => is_cidr(s),
        "mac" => is_mac(s),
        "hostname" => is_hostname(s),
        "hexcolor" => is_hex_color(s),
        "rgbcolor" => is_rgb_color(s),
        "ssn" => is_ssn(s),
        "bsonobjectid" => s.len() == 24 && s.bytes().all(|c| c.is_ascii_hexdigit()),
        "k8sshortname" => s.len() <= 63 && is_dns_label(s),
        "k8slongname" => s.len() <= 253 && s.split('.').all(is_dns_label),
        "isbn" => is_isbn10(s) || is_isbn13(s),
        "isbn10" => is_isbn10(s),
        "isbn13" => is_isbn13(s),
        // Checked by kube-apiserver, not (yet) here: accepted as they are.
        "uri" | "creditcard" | "duration" => true,
        "password" => true,
        _ => return None,
    })
}

fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn leap(year: u32) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

/// Go's `time.Parse("2006-01-02", s)`: four-digit year, two-digit month and day, the day
/// within its month.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (y, m, d) = (&s[0..4], &s[5..7], &s[8..10]);
    if !(digits(y) && digits(m) && digits(d)) {
        return false;
    }
    let (y, m, d): (u32, u32, u32) = (
        y.parse().unwrap_or(0),
        m.parse().unwrap_or(0),
        d.parse().unwrap_or(0),
    );
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap(y) => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// strfmt's `IsDateTime`: lower-cased and split at each `t`, the first part a date and the
/// second `hh:mm:ss`, an optional fraction (any one character then digits) and `z` or
/// `+hh:mm`/`-hh:mm`, with the hour at most 23 and minutes and seconds at most 59.
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let mut parts = lower.split('t');
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else {
        return false;
    };
    if !is_date(date) {
        return false;
    }
    let t = time.as_bytes();
    if t.len() < 9 || t[2] != b':' || t[5] != b':' {
        return false;
    }
    let two = |i: usize| t[i].is_ascii_digit() && t[i + 1].is_ascii_digit();
    if !(two(0) && two(3) && two(6)) {
        return false;
    }
    if &time[0..2] > "23" || &time[3..5] > "59" || &time[6..8] > "59" {
        return false;
    }
    // The rest: (.[0-9]+)? then z or [+-]hh:mm. `.` is any one character (a regex's dot).
    let rest = &time[8..];
    let zone_ok = |z: &str| {
        z == "z" || {
            let b = z.as_bytes();
            b.len() == 6
                && (b[0] == b'+' || b[0] == b'-')
                && b[1].is_ascii_digit()
                && b[2].is_ascii_digit()
                && b[3] == b':'
                && b[4].is_ascii_digit()
                && b[5].is_ascii_digit()
        }
    };
    if zone_ok(rest) {
        return true;
    }
    let mut chars = rest.chars();
    if chars.next().is_none_or(|c| c == '\n') {
        return false;
    }
    let after = chars.as_str();
    let n = after.bytes().take_while(u8::is_ascii_digit).count();
    if n == 0 {
        return false;
    }
    // The digits are greedy but may give back: the zone may begin with a digit only in the
    // offset form, which starts with a sign, so no backtracking is needed.
    zone_ok(&after[n..])
}

/// govalidator's `IsBase64`: standard alphabet, padded, a multiple of four characters
/// (the empty string is not base64).
fn is_base64(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || b.len() % 4 != 0 {
        return false;
    }
    let alpha = |c: u8| c.is_ascii_alphanumeric() || c == b'+' || c == b'/';
    let n = b.len();
    let body_ok = b[..n - 4].iter().all(|&c| alpha(c));
    let last = &b[n - 4..];
    let tail_ok = match last {
        [a, b2, b'=', b'='] => alpha(*a) && alpha(*b2),
        [a, b2, c, b'='] => alpha(*a) && alpha(*b2) && alpha(*c),
        _ => last.iter().all(|&c| alpha(c)),
    };
    body_ok && tail_ok
}

fn is_uuid(s: &str, version: Option<char>) -> bool {
    // 8-4-4-4-12 hex digits, each dash optional, case-insensitive; for a version, the
    // 13th digit is it and (4, 5) the 17th is one of 8, 9, a, b.
    let mut hex = Vec::with_capacity(32);
    let groups = [8, 4, 4, 4, 12];
    let b = s.as_bytes();
    let mut i = 0;
    for (g, len) in groups.iter().enumerate() {
        if g > 0 && b.get(i) == Some(&b'-') {
            i += 1;
        }
        for _ in 0..*len {
            match b.get(i) {
                Some(c) if c.is_ascii_hexdigit() => hex.push(c.to_ascii_lowercase()),
                _ => return false,
            }
            i += 1;
        }
    }
    if i != b.len() {
        return false;
    }
    match version {
        None => true,
        Some(v) => hex[12] == v as u8 && (v == '3' || matches!(hex[16], b'8' | b'9' | b'a' | b'b')),
    }
}

/// Go's `ParseIP` as k8s.io/utils/net's sloppy variant: IPv4 in dotted decimal (leading
/// zeros allowed, read as decimal) or IPv6 (an IPv4 tail too), no zone.
fn parse_ip_sloppy(s: &str) -> Option<()> {
    if s.contains(':') {
        if let Some((head, tail)) = s.rsplit_once(':') {
            if tail.contains('.') {
                let v4 = parse_v4_sloppy(tail)?;
                return format!("{head}:{v4}").parse::<Ipv6Addr>().ok().map(|_| ());
            }
        }
        return s.parse::<Ipv6Addr>().ok().map(|_| ());
    }
    parse_v4_sloppy(s).map(|_| ())
}

fn parse_v4_sloppy(s: &str) -> Option<Ipv4Addr> {
    let mut octets = [0u8; 4];
    let mut n = 0;
    for part in s.split('.') {
        if n == 4 || part.is_empty() || part.len() > 3 || !digits(part) {
            return None;
        }
        octets[n] = part.parse::<u16>().ok().filter(|v| *v <= 255)? as u8;
        n += 1;
    }
    (n == 4).then(|| Ipv4Addr::from(octets))
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, prefix)) = s.split_once('/') else {
        return false;
    };
    let bits = if ip.contains(':') { 128 } else { 32 };
    if parse_ip_sloppy(ip).is_none() || (bits == 32 && !ip.contains('.')) {
        return false;
    }
    digits(prefix) && prefix.len() <= 3 && prefix.parse::<u32>().is_ok_and(|p| p <= bits)
}

/// Go's `net.ParseMAC`: 6, 8 or 20 octets as `aa:bb:..`, `aa-bb-..` or `aabb.ccdd...`.
fn is_mac(s: &str) -> bool {
    let b = s.as_bytes();
    let hex = |x: &[u8]| x.iter().all(u8::is_ascii_hexdigit);
    if b.len() < 14 {
        return false;
    }
    if b[2] == b':' || b[2] == b'-' {
        if (b.len() + 1) % 3 != 0 {
            return false;
        }
        let n = (b.len() + 1) / 3;
        if !matches!(n, 6 | 8 | 20) {
            return false;
        }
        (0..n).all(|i| {
            let x = i * 3;
            hex(&b[x..x + 2]) && (i == n - 1 || b[x + 2] == b[2])
        })
    } else if b[4] == b'.' {
        if (b.len() + 1) % 5 != 0 {
            return false;
        }
        let n = 2 * (b.len() + 1) / 5;
        if !matches!(n, 6 | 8 | 20) {
            return false;
        }
        (0..n / 2).all(|i| {
            let x = i * 5;
            hex(&b[x..x + 4]) && (i == n / 2 - 1 || b[x + 4] == b'.')
        })
    } else {
        false
    }
}

/// strfmt's hostname: labels of letters, digits, symbols (Unicode `L` and `S`) and inner
/// dashes, at most 63 bytes each, the last label (after at least one dot) letters only, two
/// to 63 of them; a single label is allowed; 255 bytes at most in all.
fn is_hostname(s: &str) -> bool {
    use std::sync::OnceLock;
    static RX: OnceLock<Option<regex::Regex>> = OnceLock::new();
    let rx = RX.get_or_init(|| {
        regex::Regex::new(
            r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$",
        )
        .ok()
    });
    let Some(rx) = rx else { return false };
    rx.is_match(s) && s.len() <= 255 && s.split('.').all(|p| p.len() <= 63)
}

fn is_hex_color(s: &str) -> bool {
    let h = s.strip_prefix('#').unwrap_or(s);
    (h.len() == 3 || h.len() == 6) && h.bytes().all(|c| c.is_ascii_hexdigit())
}

fn is_rgb_color(s: &str) -> bool {
    let Some(inner) = s.strip_prefix("rgb(").and_then(|r| r.strip_suffix(')')) else {
        return false;
    };
    let parts: Vec<&str> = inner.split(',').collect();
    parts.len() == 3
        && parts.iter().all(|p| {
            let p = p.trim_matches(|c: char| c.is_whitespace());
            digits(p)
                && p.len() <= 3
                && (p == "0" || !p.starts_with('0'))
                && p.parse::<u16>().is_ok_and(|v| v <= 255)
        })
}

/// A DNS-1123 label's form (its length apart): lower-case letters, digits and inner dashes.
fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    let ok = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty() && ok(&b[0]) && ok(&b[b.len() - 1]) && b.iter().all(|c| ok(c) || *c == b'-')
}

/// An ISBN without its spaces and dashes.
fn isbn_digits(s: &str) -> Vec<u8> {
    s.bytes().filter(|c| *c != b' ' && *c != b'-').collect()
}

/// govalidator's `IsISBN10`: nine digits and a digit or `X`, the weighted sum a multiple
/// of 11.
fn is_isbn10(s: &str) -> bool {
    let d = isbn_digits(s);
    if d.len() != 10 || !d[..9].iter().all(u8::is_ascii_digit) {
        return false;
    }
    let last = match d[9] {
        b'X' => 10,
        c if c.is_ascii_digit() => u32::from(c - b'0'),
        _ => return false,
    };
    let sum: u32 = d[..9]
        .iter()
        .enumerate()
        .map(|(i, c)| (i as u32 + 1) * u32::from(c - b'0'))
        .sum::<u32>()
        + 10 * last;
    sum % 11 == 0
}

/// govalidator's `IsISBN13`: 13 digits, weights 1 and 3, the last digit the check digit.
fn is_isbn13(s: &str) -> bool {
    let d = isbn_digits(s);
    if d.len() != 13 || !d.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let sum: u32 = d[..12]
        .iter()
        .enumerate()
        .map(|(i, c)| if i % 2 == 0 { 1 } else { 3 } * u32::from(c - b'0'))
        .sum();
    u32::from(d[12] - b'0') == (10 - sum % 10) % 10
}

/// govalidator's `IsSSN`: 11 characters, `ddd-dd-dddd` (or spaces for the dashes).
fn is_ssn(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 11
        && b.iter().enumerate().all(|(i, c)| match i {
            3 | 6 => *c == b'-' || *c == b' ',
            _ => c.is_ascii_digit(),
        })
}

/// Go's `net/mail.ParseAddress`, the common forms: `local@domain` or `Name <local@domain>`,
/// the local part a dot-atom or a quoted string, the domain a dot-atom or `[literal]`.
fn is_email(s: &str) -> bool {
    let s = s.trim();
    let addr = match (s.find('<'), s.ends_with('>')) {
        (Some(i), true) => {
            let name = s[..i].trim();
            let quoted = name.len() >= 2 && name.starts_with('"') && name.ends_with('"');
            let words = name
                .split_whitespace()
                .all(|w| dot_atom(w) || w.chars().all(atext));
            let name_ok = name.is_empty() || quoted || words;
            if !name_ok {
                return false;
            }
            &s[i + 1..s.len() - 1]
        }
        (None, false) => s,
        _ => return false,
    };
    let Some(at) = addr.rfind('@') else {
        return false;
    };
    let (local, domain) = (&addr[..at], &addr[at + 1..]);
    let local_ok = dot_atom(local)
        || (local.len() >= 2
            && local.starts_with('"')
            && local.ends_with('"')
            && !local[1..local.len() - 1].contains(['"', '\r', '\n']));
    let domain_ok = dot_atom(domain)
        || (domain.starts_with('[') && domain.ends_with(']') && !domain[1..].contains(['[', '\\']));
    local_ok && domain_ok
}

fn atext(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c) || (c as u32) >= 0x80
}

fn dot_atom(s: &str) -> bool {
    !s.is_empty() && s.split('.').all(|p| !p.is_empty() && p.chars().all(atext))
}

#[cfg(test)]
mod tests {
    use super::check;

    fn ok(f: &str, s: &str) -> bool {
        check(f, s).unwrap()
    }

    #[test]
    fn dates() {
        assert!(ok("date", "2024-02-29"));
        assert!(!ok("date", "2023-02-29"));
        assert!(ok("date", "2000-02-29"));
        assert!(!ok("date", "1900-02-29"));
        assert!(!ok("date", "2024-13-45"));
        assert!(!ok("date", "2024-1-02"));
        assert!(!ok("date", "2024-04-31"));
        assert!(ok("date-time", "2024-01-02T03:04:05Z"));
        assert!(ok("date-time", "2024-01-02t03:04:05.123456+02:00"));
        assert!(ok("date-time", "2024-01-02T23:59:59-00:00"));
        assert!(!ok("date-time", "2024-01-02T24:00:00Z"));
        assert!(!ok("date-time", "2024-01-02T03:04:05"));
        assert!(!ok("date-time", "2024-01-02 03:04:05Z"));
        assert!(!ok("date-time", "yesterday"));
        assert!(!ok("date-time", "2024-01-02T03:60:05Z"));
        assert!(ok("datetime", "2024-01-02T03:04:05,5Z"));
    }

    #[test]
    fn numbers_and_encodings() {
        assert!(ok("byte", "aGVsbG8="));
        assert!(ok("byte", "aGk="));
        assert!(ok("byte", "aGVs"));
        assert!(!ok("byte", "aGVsbG8"));
        assert!(!ok("byte", ""));
        assert!(!ok("byte", "not base64!"));
        assert!(!ok("byte", "a==="));
        assert!(ok("uuid", "0b6c2d5e-1a7b-4c3d-9e8f-0123456789ab"));
        assert!(ok("uuid", "0B6C2D5E1A7B4C3D9E8F0123456789AB"));
        assert!(!ok("uuid", "xyz"));
        assert!(!ok("uuid", "0b6c2d5e-1a7b-4c3d-9e8f-0123456789abc"));
        assert!(ok("uuid4", "0b6c2d5e-1a7b-4c3d-9e8f-0123456789ab"));
        assert!(!ok("uuid4", "0b6c2d5e-1a7b-4c3d-7e8f-0123456789ab"));
        assert!(!ok("uuid3", "0b6c2d5e-1a7b-4c3d-9e8f-0123456789ab"));
        assert!(ok("ssn", "123-45-6789"));
        assert!(!ok("ssn", "123456789"));
        assert!(ok("hexcolor", "#fff") && ok("hexcolor", "a0b1c2") && !ok("hexcolor", "#ffff"));
        assert!(ok("rgbcolor", "rgb(0, 255,10)") && !ok("rgbcolor", "rgb(256,0,0)"));
    }

    #[test]
    fn hostile_strings_never_panic() {
        let odd = [
            "",
            "é",
            "éééééééééé",
            "2024-01-02Té",
            "2024-01-02T03:04:05é",
            "é024-01-02",
            "<",
            ">",
            "<>",
            "\"",
            "@",
            "[",
            "a@[",
            "::",
            ":::",
            "1.2.3.4/",
            "/",
            "é:é:é:é:é:é",
            "0000.0000.000é",
            "rgb(",
            "#",
            "T",
            "tttt",
            "2024-01-02T03:04:05.",
        ];
        let formats = [
            "date-time",
            "date",
            "byte",
            "email",
            "uuid",
            "uuid4",
            "ipv4",
            "ipv6",
            "cidr",
            "mac",
            "hostname",
            "hexcolor",
            "rgbcolor",
            "ssn",
            "isbn",
            "bsonobjectid",
        ];
        for f in formats {
            for s in odd {
                let _ = check(f, s);
                let _ = check(f, &s.repeat(40));
            }
        }
    }

    #[test]
    fn addresses() {
        assert!(ok("ipv4", "10.0.0.1"));
        assert!(ok("ipv4", "010.000.000.001"));
        assert!(!ok("ipv4", "999.1.1.1"));
        assert!(!ok("ipv4", "1.2.3"));
        assert!(!ok("ipv4", "::1"));
        assert!(ok("ipv4", "::ffff:1.2.3.4"));
        assert!(ok("ipv6", "::1") && ok("ipv6", "fe80::1:2") && !ok("ipv6", "1.2.3.4"));
        assert!(!ok("ipv6", "fe80::1%eth0"));
        assert!(ok("cidr", "10.0.0.0/8") && ok("cidr", "::/0") && !ok("cidr", "10.0.0.0/33"));
        assert!(!ok("cidr", "10.0.0.0"));
        assert!(ok("mac", "00:00:5e:00:53:01"));
        assert!(ok("mac", "00-00-5E-00-53-01"));
        assert!(ok("mac", "0000.5e00.5301"));
        assert!(ok("mac", "02:00:5e:10:00:00:00:01"));
        assert!(!ok("mac", "00:00:5e:00:53"));
        assert!(!ok("mac", "00:00-5e:00:53:01"));
        assert!(ok("hostname", "a.example.com"));
        assert!(ok("hostname", "localhost"));
        assert!(!ok("hostname", "-bad-.example_com"));
        assert!(!ok("hostname", "a.b.c1"));
        assert!(!ok("hostname", &format!("{}.com", "a".repeat(64))));
        assert!(ok("hostname", &format!("{}.com", "a".repeat(63))));
        assert!(ok("email", "a@example.com"));
        assert!(ok("email", "Joe <a.b+c@example.com>"));
        assert!(!ok("email", "nope"));
        assert!(!ok("email", "a@@b"));
        assert!(!ok("email", ".a@b"));
        assert!(ok("isbn10", "0-306-40615-2") && ok("isbn10", "080442957X"));
        assert!(!ok("isbn10", "0-306-40615-3"));
        assert!(ok("isbn13", "978-0-306-40615-7") && !ok("isbn13", "978-0-306-40615-8"));
        assert!(ok("isbn", "9780306406157") && !ok("isbn", "123"));
        assert!(ok("bsonobjectid", "507f1f77bcf86cd799439011") && !ok("bsonobjectid", "507f"));
        assert!(check("colour", "x").is_none());
        assert!(ok("k8s-short-name", "a-1") && !ok("k8s-short-name", "a.b"));
        assert!(!ok("k8s-short-name", &"a".repeat(64)) && !ok("k8s-short-name", "-a"));
        assert!(ok("k8s-long-name", "a.b-c.d") && !ok("k8s-long-name", "a..b"));
        assert!(!ok("k8s-long-name", "A.b") && ok("ip-v4", "1.2.3.4"));
        assert!(check("int32", "x").is_none());
    }
}
