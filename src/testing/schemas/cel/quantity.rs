//! Kubernetes' `quantity` CEL library (`k8s.io/apiserver/pkg/cel/library/quantity.go`):
//! `quantity('1.5Gi')`, `isQuantity`, the comparisons `isLessThan`, `isGreaterThan`,
//! `compareTo`, arithmetic `add`/`sub` (with a quantity or an int), `asInteger`,
//! `isInteger`, `asApproximateFloat`, `sign`.
//!
//! A quantity is held exactly as a count of nano-units in an `i128` (the smallest suffix
//! is `n`; the largest, `Ei`, is 2^60 units): enough for every quantity a manifest holds.
//! One that does not fit (or has finer precision than a nano-unit, which Kubernetes would
//! round up) is refused as not a quantity.

use super::eval::{err, Error, R};
use super::value::Val;

const NANO: i128 = 1_000_000_000;

/// Parses a quantity string into nano-units.
pub(crate) fn parse(s: &str) -> Option<i128> {
    let (neg, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let num_end = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (num, suffix) = body.split_at(num_end);
    if num.is_empty() || num == "." || num.matches('.').count() > 1 {
        return None;
    }
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.len() + frac.len() > 30 {
        return None;
    }
    // The number as an integer and a power of ten.
    let digits: i128 = format!("{int}{frac}").parse().ok()?;
    let mut exp10: i32 = -(frac.len() as i32);
    let mut mult: i128 = 1;
    match suffix {
        "" => {}
        "Ki" => mult = 1 << 10,
        "Mi" => mult = 1 << 20,
        "Gi" => mult = 1 << 30,
        "Ti" => mult = 1 << 40,
        "Pi" => mult = 1 << 50,
        "Ei" => mult = 1 << 60,
        "n" => exp10 -= 9,
        "u" => exp10 -= 6,
        "m" => exp10 -= 3,
        "k" => exp10 += 3,
        "M" => exp10 += 6,
        "G" => exp10 += 9,
        "T" => exp10 += 12,
        "P" => exp10 += 15,
        "E" => exp10 += 18,
        s if s.starts_with(['e', 'E']) && s.len() > 1 => {
            let e: i32 = s[1..].parse().ok()?;
            if !(-40..=40).contains(&e) {
                return None;
            }
            exp10 += e;
        }
        _ => return None,
    }
    let mut v = digits.checked_mul(mult)?;
    let mut e = exp10 + 9; // to nano-units
    while e > 0 {
        v = v.checked_mul(10)?;
        e -= 1;
    }
    while e < 0 {
        if v % 10 != 0 {
            return None;
        }
        v /= 10;
        e += 1;
    }
    Some(if neg { -v } else { v })
}

/// How a quantity is held as a CEL value: a map with one marked key, so that it compares
/// and prints apart from user maps.
pub(crate) fn val(n: i128) -> Val {
    Val::Map(std::rc::Rc::new(
        vec![(Val::str("\u{0}quantity"), Val::str(n.to_string()))].into(),
    ))
}

/// The nano-units of a quantity value.
pub(crate) fn of(v: &Val) -> Option<i128> {
    match v {
        Val::Map(m) if m.len() == 1 => match &m[0] {
            (Val::Str(k), Val::Str(n)) if k.as_ref() == "\u{0}quantity" => n.parse().ok(),
            _ => None,
        },
        _ => None,
    }
}

fn overflow() -> Error {
    Error("quantity overflow".into())
}

/// A method on a quantity.
pub(crate) fn method(q: i128, name: &str, args: &[Val]) -> Option<R> {
    let other = |v: &Val| match v {
        Val::Int(i) => Some(i128::from(*i) * NANO),
        v => of(v),
    };
    Some(match (name, args) {
        ("isLessThan", [o]) => Ok(Val::Bool(q < of(o)?)),
        ("isGreaterThan", [o]) => Ok(Val::Bool(q > of(o)?)),
        ("compareTo", [o]) => Ok(Val::Int(q.cmp(&of(o)?) as i64)),
        ("add", [o]) => q.checked_add(other(o)?).map(val).ok_or_else(overflow),
        ("sub", [o]) => q.checked_sub(other(o)?).map(val).ok_or_else(overflow),
        ("sign", []) => Ok(Val::Int(q.signum() as i64)),
        ("isInteger", []) => Ok(Val::Bool(q % NANO == 0 && i64::try_from(q / NANO).is_ok())),
        ("asInteger", []) => {
            if q % NANO != 0 {
                return Some(err("cannot convert value to integer"));
            }
            i64::try_from(q / NANO)
                .map(Val::Int)
                .map_err(|_| Error("cannot convert value to integer".into()))
        }
        ("asApproximateFloat", []) => Ok(Val::Double(q as f64 / NANO as f64)),
        _ => return None,
    })
}
