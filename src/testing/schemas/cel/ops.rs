//! CEL's binary operators: arithmetic (checked for `int` and `uint`), concatenation,
//! comparison, `in`, and timestamp/duration arithmetic.

use std::cmp::Ordering;
use std::rc::Rc;

use super::eval::{err, no_overload, Env, Error, R};
use super::time::{dur_in_range, in_range};
use super::value::Val;

fn overflow() -> Error {
    Error("integer overflow".into())
}

fn ts_overflow() -> Error {
    Error("timestamp overflow".into())
}

/// A duration computed by arithmetic: cel-go holds it in a Go `time.Duration` (`int64`
/// nanoseconds, about 292 years), and one past that is `integer overflow`
/// (`common/types/overflow.go`: `addDurationChecked`, `subtractTimeChecked`), although
/// a timestamp may lie anywhere in years 1 to 9999.
pub(crate) fn duration(d: i128) -> R {
    i64::try_from(d)
        .ok()
        .and_then(|d| dur_in_range(i128::from(d)))
        .map(Val::Duration)
        .ok_or_else(overflow)
}

fn uoverflow() -> Error {
    Error("unsigned integer overflow".into())
}

/// `x op y`.
pub(crate) fn binary(op: &str, x: &Val, y: &Val, env: &mut Env) -> R {
    use Val::*;
    match op {
        "==" | "!=" => {
            let mut visits = 0;
            let eq = x.equals_counting(y, &mut visits);
            env.charge(visits / 10)?;
            return Ok(Bool(eq == (op == "==")));
        }
        "<" | "<=" | ">" | ">=" => {
            let Some(o) = comparable(x, y).then(|| x.compare(y)).flatten() else {
                if matches!((x, y), (Double(_), _) | (_, Double(_))) && comparable(x, y) {
                    // NaN: every comparison is false.
                    return Ok(Bool(false));
                }
                return no_overload(op_name(op), &[x, y]);
            };
            return Ok(Bool(match op {
                "<" => o == Ordering::Less,
                "<=" => o != Ordering::Greater,
                ">" => o == Ordering::Greater,
                _ => o != Ordering::Less,
            }));
        }
        "in" => {
            return match y {
                List(l) => {
                    env.charge(l.len() as u64 / 10)?;
                    let mut visits = 0;
                    let found = l.iter().any(|v| v.equals_counting(x, &mut visits));
                    env.charge(visits / 10)?;
                    Ok(Bool(found))
                }
                Map(_) => Ok(Bool(y.map_get(x).is_some())),
                _ => no_overload("@in", &[x, y]),
            };
        }
        _ => {}
    }
    match (op, x, y) {
        ("+", Int(a), Int(b)) => a.checked_add(*b).map(Int).ok_or_else(overflow),
        ("-", Int(a), Int(b)) => a.checked_sub(*b).map(Int).ok_or_else(overflow),
        ("*", Int(a), Int(b)) => a.checked_mul(*b).map(Int).ok_or_else(overflow),
        ("/", Int(_), Int(0)) => err("division by zero"),
        ("%", Int(_), Int(0)) => err("modulus by zero"),
        ("/", Int(a), Int(b)) => a.checked_div(*b).map(Int).ok_or_else(overflow),
        ("%", Int(a), Int(b)) => a.checked_rem(*b).map(Int).ok_or_else(overflow),
        ("+", Uint(a), Uint(b)) => a.checked_add(*b).map(Uint).ok_or_else(uoverflow),
        ("-", Uint(a), Uint(b)) => a.checked_sub(*b).map(Uint).ok_or_else(uoverflow),
        ("*", Uint(a), Uint(b)) => a.checked_mul(*b).map(Uint).ok_or_else(uoverflow),
        ("/", Uint(_), Uint(0)) => err("division by zero"),
        ("%", Uint(_), Uint(0)) => err("modulus by zero"),
        ("/", Uint(a), Uint(b)) => Ok(Uint(a / b)),
        ("%", Uint(a), Uint(b)) => Ok(Uint(a % b)),
        ("+", Double(a), Double(b)) => Ok(Double(a + b)),
        ("-", Double(a), Double(b)) => Ok(Double(a - b)),
        ("*", Double(a), Double(b)) => Ok(Double(a * b)),
        ("/", Double(a), Double(b)) => Ok(Double(a / b)),
        ("+", Str(a), Str(b)) => {
            env.charge(((a.len() + b.len()) / 10) as u64)?;
            let mut s = String::with_capacity(a.len() + b.len());
            s.push_str(a);
            s.push_str(b);
            Ok(Val::str(s))
        }
        ("+", Bytes(a), Bytes(b)) => {
            env.charge(((a.len() + b.len()) / 10) as u64)?;
            Ok(Bytes([a.as_ref(), b.as_ref()].concat().into()))
        }
        ("+", List(a), List(b)) => {
            env.charge(((a.len() + b.len()) / 10) as u64)?;
            let mut l = Vec::with_capacity(a.len() + b.len());
            l.extend(a.iter().cloned());
            l.extend(b.iter().cloned());
            Ok(List(Rc::new(l)))
        }
        ("+", Timestamp(t), Duration(d)) | ("+", Duration(d), Timestamp(t)) => {
            in_range(t + d).map(Timestamp).ok_or_else(ts_overflow)
        }
        ("-", Timestamp(t), Duration(d)) => in_range(t - d).map(Timestamp).ok_or_else(ts_overflow),
        ("-", Timestamp(a), Timestamp(b)) => duration(a - b),
        ("+", Duration(a), Duration(b)) => duration(a + b),
        ("-", Duration(a), Duration(b)) => duration(a - b),
        _ => no_overload(op_name(op), &[x, y]),
    }
}

/// Whether `<` is defined between the kinds of `x` and `y`.
fn comparable(x: &Val, y: &Val) -> bool {
    use Val::*;
    let num = |v: &Val| matches!(v, Int(_) | Uint(_) | Double(_));
    (num(x) && num(y))
        || matches!(
            (x, y),
            (Bool(_), Bool(_))
                | (Str(_), Str(_))
                | (Bytes(_), Bytes(_))
                | (Timestamp(_), Timestamp(_))
                | (Duration(_), Duration(_))
        )
}

fn op_name(op: &str) -> &'static str {
    match op {
        "+" => "_+_",
        "-" => "_-_",
        "*" => "_*_",
        "/" => "_/_",
        "%" => "_%_",
        "<" => "_<_",
        "<=" => "_<=_",
        ">" => "_>_",
        ">=" => "_>=_",
        _ => "operator",
    }
}
