//! CEL's standard functions and the libraries kube-apiserver 1.36 enables for CRD rules
//! (`k8s.io/apiserver/pkg/cel/library` and cel-go's extensions), as far as implemented:
//!
//! - standard: `size`, `contains`, `startsWith`, `endsWith`, `matches` (RE2), `int`,
//!   `uint`, `double`, `string`, `bytes`, `bool`, `type`, `dyn`, `duration`, `timestamp`
//!   and the timestamp/duration getters (UTC only);
//! - strings: `charAt`, `indexOf`, `lastIndexOf`, `lowerAscii`, `upperAscii`, `replace`,
//!   `split`, `substring`, `trim`, `join`, `strings.quote` (indexes count code points, as
//!   cel-go's do; kube-apiserver 1.35/1.36 enable the strings library at version 2, which
//!   has no `reverse` of a string: a rule using it fails with `no such overload`);
//! - Kubernetes lists: `isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf`; cel-go
//!   lists: `slice`, `flatten`, `distinct`, `reverse`, `sort`, `lists.range`;
//! - Kubernetes regex: `find`, `findAll`;
//! - sets: `sets.contains`, `sets.equivalent`, `sets.intersects`;
//! - optionals: `optional.of`, `optional.none`, `optional.ofNonZeroValue`, `hasValue`,
//!   `value`, `orValue`, `or`.
//!
//! - Kubernetes quantity: `quantity`, `isQuantity` and the methods of `quantity.rs`.
//!
//! Not implemented (a rule calling them gets `no such overload`): `format`, `url`,
//! `ip`/`cidr`, `semver`, `isURL`, `authz`, `math.*`, `base64.*`, the
//! `format.*` named formats, time zones in the getters, `sortBy`, `transformList`/`Map`.

use std::cell::Cell;
use std::rc::Rc;

use super::eval::{err, no_overload, Env, Error, R};
use super::time;
use super::value::Val;

/// How a value prints in an error (`no such key: x`) and in `string()`.
pub(crate) fn display(v: &Val) -> String {
    match v {
        Val::Null => "null".into(),
        Val::Bool(b) => b.to_string(),
        Val::Int(i) => i.to_string(),
        Val::Uint(u) => u.to_string(),
        Val::Double(d) => super::super::schema::go_float(*d),
        Val::Str(s) => s.to_string(),
        Val::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        Val::Timestamp(t) => time::format_timestamp(*t),
        Val::Duration(d) => time::format_duration(*d),
        Val::Type(t) => (*t).to_owned(),
        Val::List(l) => format!("[{}]", l.iter().map(display).collect::<Vec<_>>().join(", ")),
        Val::Map(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| format!("{}: {}", display(k), display(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Val::Opt(None) => "optional.none()".into(),
        Val::Opt(Some(v)) => format!("optional.of({})", display(v)),
    }
}

/// Standard base64 (padded), as Go's `encoding/base64` StdEncoding decodes it.
pub(crate) fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    if b.len() % 4 != 0 {
        return None;
    }
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(b.len() / 4 * 3);
    for (i, chunk) in b.chunks(4).enumerate() {
        let last = i == b.len() / 4 - 1;
        let pad = chunk.iter().rev().take_while(|c| **c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n = 0u32;
        for c in &chunk[..4 - pad] {
            n = n << 6 | val(*c)?;
        }
        n <<= 6 * pad as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

/// A compiled RE2 pattern, kept for the next call on this thread (a rule calling
/// `matches` once per item of a long list compiles it once).
fn regex(pattern: &str) -> Result<regex::Regex, Error> {
    use std::cell::RefCell;
    use std::collections::HashMap;
    type Cache = HashMap<String, Result<regex::Regex, String>>;
    thread_local! {
        static CACHE: RefCell<Cache> = RefCell::new(HashMap::new());
    }
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() > 64 {
            c.clear();
        }
        c.entry(pattern.to_owned())
            .or_insert_with(|| {
                regex::RegexBuilder::new(&super::super::schema::go_pattern(pattern))
                    .size_limit(1 << 22)
                    .build()
                    .map_err(|e| {
                        let last = e.to_string().lines().last().unwrap_or("").to_owned();
                        format!("invalid regular expression: {last}")
                    })
            })
            .clone()
            .map_err(Error)
    })
}

/// `a == b`, adding the list and map elements compared to `visits` (they are charged for).
fn deep_eq(a: &Val, b: &Val, visits: &Cell<u64>) -> bool {
    let mut n = 0;
    let eq = a.equals_counting(b, &mut n);
    visits.set(visits.get().saturating_add(n));
    eq
}

fn chars(s: &str) -> Vec<char> {
    s.chars().collect()
}

/// Calls `name` (a global function when `target` is `None`, else a method).
pub(crate) fn call(env: &mut Env, target: Option<&Val>, name: &str, args: &[Val]) -> R {
    // Every call costs in proportion to the sizes it reads.
    let size: usize = target.into_iter().chain(args.iter()).map(cost_size).sum();
    env.charge(1 + size as u64 / 10)?;
    match target {
        None => global(env, name, args),
        Some(t) => method(env, t, name, args),
    }
}

fn cost_size(v: &Val) -> usize {
    match v {
        Val::Str(s) => s.len(),
        Val::Bytes(b) => b.len(),
        Val::List(l) => l.len(),
        Val::Map(m) => m.len(),
        _ => 1,
    }
}

fn size_of(v: &Val) -> R {
    Ok(Val::Int(match v {
        Val::Str(s) => s.chars().count() as i64,
        Val::Bytes(b) => b.len() as i64,
        Val::List(l) => l.len() as i64,
        Val::Map(m) => m.len() as i64,
        _ => return no_overload("size", &[v]),
    }))
}

fn global(env: &mut Env, name: &str, args: &[Val]) -> R {
    use Val::*;
    let a: Vec<&Val> = args.iter().collect();
    match (name, args) {
        ("size", [v]) => size_of(v),
        ("matches", [Str(s), Str(p)]) => Ok(Bool(regex(p)?.is_match(s))),
        ("dyn", [v]) => Ok(v.clone()),
        ("type", [v]) => Ok(Type(v.type_name())),
        ("int", [v]) => to_int(v),
        ("uint", [v]) => to_uint(v),
        ("double", [v]) => to_double(v),
        ("string", [v]) => to_string(v),
        ("bytes", [Bytes(b)]) => Ok(Bytes(b.clone())),
        ("bytes", [Str(s)]) => Ok(Bytes(s.as_bytes().into())),
        ("bool", [Bool(b)]) => Ok(Bool(*b)),
        ("bool", [Str(s)]) => match s.as_ref() {
            "1" | "t" | "true" | "TRUE" | "True" => Ok(Bool(true)),
            "0" | "f" | "false" | "FALSE" | "False" => Ok(Bool(false)),
            _ => err("type conversion error from 'string' to 'bool'".to_owned()),
        },
        ("duration", [Str(s)]) => time::parse_duration(s).map(Duration).ok_or_else(|| {
            Error("type conversion error from 'string' to 'google.protobuf.Duration'".to_owned())
        }),
        ("duration", [Duration(d)]) => Ok(Duration(*d)),
        ("timestamp", [Str(s)]) => time::parse_timestamp_call(s)
            .map(Timestamp)
            .map_err(|e| Error(e.to_owned())),
        ("timestamp", [Int(i)]) => time::in_range(i128::from(*i) * 1_000_000_000)
            .map(Timestamp)
            .ok_or_else(|| Error("timestamp overflow".into())),
        ("timestamp", [Timestamp(t)]) => Ok(Timestamp(*t)),
        ("optional.of", [v]) => Ok(Opt(Some(Rc::new(v.clone())))),
        ("optional.none", []) => Ok(Opt(None)),
        ("optional.ofNonZeroValue", [v]) => Ok(Opt((!v.is_zero()).then(|| Rc::new(v.clone())))),
        ("sets.contains", [List(x), List(y)]) => {
            env.charge((x.len() * y.len()) as u64 / 10)?;
            let n = Cell::new(0);
            let r = y.iter().all(|v| x.iter().any(|w| deep_eq(w, v, &n)));
            env.charge(n.get() / 10)?;
            Ok(Bool(r))
        }
        ("sets.equivalent", [List(x), List(y)]) => {
            env.charge((x.len() * y.len()) as u64 / 10)?;
            let n = Cell::new(0);
            let r = y.iter().all(|v| x.iter().any(|w| deep_eq(w, v, &n)))
                && x.iter().all(|v| y.iter().any(|w| deep_eq(w, v, &n)));
            env.charge(n.get() / 10)?;
            Ok(Bool(r))
        }
        ("sets.intersects", [List(x), List(y)]) => {
            env.charge((x.len() * y.len()) as u64 / 10)?;
            let n = Cell::new(0);
            let r = y.iter().any(|v| x.iter().any(|w| deep_eq(w, v, &n)));
            env.charge(n.get() / 10)?;
            Ok(Bool(r))
        }
        ("lists.range", [Int(n)]) => {
            if *n < 0 {
                return err("lists.range: negative size");
            }
            env.charge(*n as u64)?;
            Ok(List(Rc::new((0..*n).map(Int).collect())))
        }
        ("strings.quote", [Str(s)]) => Ok(Val::str(quote(s))),
        ("quantity", [Str(s)]) => super::quantity::parse(s)
            .map(super::quantity::val)
            .ok_or_else(|| Error("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'".into())),
        ("isQuantity", [Str(s)]) => Ok(Bool(super::quantity::parse(s).is_some())),
        _ => no_overload(name, &a),
    }
}

fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn to_int(v: &Val) -> R {
    match v {
        Val::Int(i) => Ok(Val::Int(*i)),
        Val::Uint(u) => i64::try_from(*u)
            .map(Val::Int)
            .map_err(|_| Error("integer overflow".into())),
        Val::Double(d) => {
            if d.is_nan() || *d <= -9.223_372_036_854_776e18 || *d >= 9.223_372_036_854_776e18 {
                return err("integer overflow");
            }
            Ok(Val::Int(d.trunc() as i64))
        }
        Val::Str(s) => s
            .parse()
            .map(Val::Int)
            .map_err(|_| Error("type conversion error from 'string' to 'int'".to_owned())),
        Val::Timestamp(t) => Ok(Val::Int(t.div_euclid(1_000_000_000) as i64)),
        // cel-go: a duration converts to its nanoseconds (`int(duration('1s'))` is 1e9).
        Val::Duration(d) => i64::try_from(*d)
            .map(Val::Int)
            .map_err(|_| Error("integer overflow".into())),
        _ => no_overload("int", &[v]),
    }
}

fn to_uint(v: &Val) -> R {
    match v {
        Val::Uint(u) => Ok(Val::Uint(*u)),
        Val::Int(i) => u64::try_from(*i)
            .map(Val::Uint)
            .map_err(|_| Error("unsigned integer overflow".into())),
        Val::Double(d) => {
            if d.is_nan() || *d < 0.0 || *d >= 1.844_674_407_370_955_2e19 {
                return err("unsigned integer overflow");
            }
            Ok(Val::Uint(d.trunc() as u64))
        }
        // Go's `strconv.ParseUint` takes no sign (Rust's parse takes a `+`).
        Val::Str(s) => (!s.starts_with('+'))
            .then(|| s.parse().ok())
            .flatten()
            .ok_or(())
            .map(Val::Uint)
            .map_err(|_| Error("type conversion error from 'string' to 'uint'".to_owned())),
        _ => no_overload("uint", &[v]),
    }
}

fn to_double(v: &Val) -> R {
    match v {
        Val::Double(d) => Ok(Val::Double(*d)),
        Val::Int(i) => Ok(Val::Double(*i as f64)),
        Val::Uint(u) => Ok(Val::Double(*u as f64)),
        Val::Str(s) => go_parse_float(s)
            .map(Val::Double)
            .ok_or_else(|| Error("type conversion error from 'string' to 'double'".to_owned())),
        _ => no_overload("double", &[v]),
    }
}

/// Go's `strconv.ParseFloat(s, 64)` as far as Rust's parse differs from it: a finite
/// number too large for a double is an error (`ErrRange`), not an infinity, and `nan`
/// takes no sign. (Go's hexadecimal floats, `0x1p4`, are not read: a conversion error.)
fn go_parse_float(s: &str) -> Option<f64> {
    let v: f64 = s.parse().ok()?;
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let inf = body.eq_ignore_ascii_case("inf") || body.eq_ignore_ascii_case("infinity");
    if (v.is_infinite() && !inf) || (v.is_nan() && body.len() != s.len()) {
        return None;
    }
    Some(v)
}

fn to_string(v: &Val) -> R {
    match v {
        Val::Str(_) => Ok(v.clone()),
        Val::Bytes(b) => String::from_utf8(b.to_vec())
            .map(Val::str)
            .map_err(|_| Error("invalid UTF-8 in bytes, cannot convert to string".into())),
        Val::Bool(_)
        | Val::Int(_)
        | Val::Uint(_)
        | Val::Double(_)
        | Val::Timestamp(_)
        | Val::Duration(_) => Ok(Val::str(display(v))),
        _ => no_overload("string", &[v]),
    }
}

/// `s.indexOf(sub[, from])` in code points (`last` for `lastIndexOf`), as cel-go v0.26
/// (kube-apiserver 1.35/1.36) has it (`ext/strings.go`, `indexOfOffset` and
/// `lastIndexOfOffset`): an empty `sub` is found at `from` whatever `from` is; otherwise a
/// negative `from` is an error and one at or past the end finds nothing (`-1`), also for
/// `lastIndexOf`.
fn index_of(s: &str, sub: &str, from: Option<i64>, last: bool) -> R {
    let cs = chars(s);
    let short = s.len() < sub.len();
    let sub = chars(sub);
    let n = cs.len() as i64;
    let from = match from {
        None if last && sub.is_empty() => return Ok(Val::Int(n)),
        None if last && short => return Ok(Val::Int(-1)),
        // cel-go's `lastIndexOf(sub)` searches from the last code point.
        None if last => n - 1,
        None => 0,
        Some(f) => f,
    };
    if sub.is_empty() {
        return Ok(Val::Int(from));
    }
    if from < 0 {
        return err(format!("index out of range: {from}"));
    }
    if from >= n {
        return Ok(Val::Int(-1));
    }
    let from = from as usize;
    let fits = |i: usize| i + sub.len() <= cs.len() && cs[i..i + sub.len()] == sub[..];
    let found = if last {
        (0..=from).rev().find(|&i| fits(i))
    } else {
        (from..cs.len()).find(|&i| fits(i))
    };
    Ok(Val::Int(found.map_or(-1, |i| i as i64)))
}

fn method(env: &mut Env, t: &Val, name: &str, args: &[Val]) -> R {
    use Val::*;
    let mut all: Vec<&Val> = vec![t];
    all.extend(args.iter());
    if let Some(q) = super::quantity::of(t) {
        if let Some(r) = super::quantity::method(q, name, args) {
            return r;
        }
        return no_overload(name, &all);
    }
    match (t, name, args) {
        (_, "size", []) => size_of(t),
        (Str(s), "contains", [Str(x)]) => Ok(Bool(s.contains(x.as_ref()))),
        (Str(s), "startsWith", [Str(x)]) => Ok(Bool(s.starts_with(x.as_ref()))),
        (Str(s), "endsWith", [Str(x)]) => Ok(Bool(s.ends_with(x.as_ref()))),
        (Str(s), "matches", [Str(p)]) => Ok(Bool(regex(p)?.is_match(s))),
        (Str(s), "find", [Str(p)]) => Ok(Val::str(regex(p)?.find(s).map_or("", |m| m.as_str()))),
        (Str(s), "findAll", [Str(p)]) => find_all(s, p, -1),
        (Str(s), "findAll", [Str(p), Int(n)]) => find_all(s, p, *n),
        (Str(s), "charAt", [Int(i)]) => {
            let cs = chars(s);
            match usize::try_from(*i).ok().filter(|i| *i <= cs.len()) {
                Some(i) => Ok(Val::str(cs.get(i).map(char::to_string).unwrap_or_default())),
                None => err(format!("index out of range: {i}")),
            }
        }
        (Str(s), "indexOf", [Str(x)]) => index_of(s, x, None, false),
        (Str(s), "indexOf", [Str(x), Int(f)]) => index_of(s, x, Some(*f), false),
        (Str(s), "lastIndexOf", [Str(x)]) => index_of(s, x, None, true),
        (Str(s), "lastIndexOf", [Str(x), Int(f)]) => index_of(s, x, Some(*f), true),
        (Str(s), "lowerAscii", []) => Ok(Val::str(s.to_ascii_lowercase())),
        (Str(s), "upperAscii", []) => Ok(Val::str(s.to_ascii_uppercase())),
        (Str(s), "trim", []) => Ok(Val::str(s.trim())),
        (Str(s), "replace", [Str(a), Str(b)]) => replace(env, s, a, b, -1),
        (Str(s), "replace", [Str(a), Str(b), Int(n)]) => replace(env, s, a, b, *n),
        (Str(s), "split", [Str(sep)]) => split(env, s, sep, -1),
        (Str(s), "split", [Str(sep), Int(n)]) => split(env, s, sep, *n),
        (Str(s), "substring", [Int(a)]) => substring(s, *a, None),
        (Str(s), "substring", [Int(a), Int(b)]) => substring(s, *a, Some(*b)),
        (List(l), "join", []) => join(l, ""),
        (List(l), "join", [Str(sep)]) => join(l, sep),
        (List(l), "isSorted", []) => {
            for w in l.windows(2) {
                match w[0].compare(&w[1]) {
                    Some(std::cmp::Ordering::Greater) => return Ok(Bool(false)),
                    Some(_) => {}
                    None => return no_overload("isSorted", &[t]),
                }
            }
            Ok(Bool(true))
        }
        (List(l), "sum", []) => {
            let mut acc = match l.first() {
                None | Some(Int(_)) => Int(0),
                Some(Uint(_)) => Uint(0),
                Some(Double(_)) => Double(0.0),
                Some(Duration(_)) => Duration(0),
                Some(v) => return no_overload("sum", &[v]),
            };
            for v in l.iter() {
                acc = super::ops::binary("+", &acc, v, env)?;
            }
            Ok(acc)
        }
        (List(l), "min" | "max", []) => {
            let Some(mut best) = l.first().cloned() else {
                return err(format!("{name} called on empty list"));
            };
            for v in l.iter().skip(1) {
                let o = v
                    .compare(&best)
                    .ok_or_else(|| Error(format!("no such overload: {name}")))?;
                if (name == "min" && o.is_lt()) || (name == "max" && o.is_gt()) {
                    best = v.clone();
                }
            }
            Ok(best)
        }
        (List(l), "indexOf" | "lastIndexOf", [x]) => {
            let n = Cell::new(0);
            let at = if name == "indexOf" {
                l.iter().position(|v| deep_eq(v, x, &n))
            } else {
                l.iter().rposition(|v| deep_eq(v, x, &n))
            };
            env.charge(n.get() / 10)?;
            Ok(Int(at.map_or(-1, |i| i as i64)))
        }
        (List(l), "slice", [Int(a), Int(b)]) => {
            // cel-go `ext/lists.go` `slice`: three errors, checked in this order.
            if *a < 0 || *b < 0 {
                return err(format!(
                    "cannot slice({a}, {b}), negative indexes not supported"
                ));
            }
            if a > b {
                return err(format!(
                    "cannot slice({a}, {b}), start index must be less than or equal to end index"
                ));
            }
            if *b as u64 > l.len() as u64 {
                return err(format!(
                    "cannot slice({a}, {b}), list is length {}",
                    l.len()
                ));
            }
            Ok(List(Rc::new(l[*a as usize..*b as usize].to_vec())))
        }
        (List(l), "flatten", []) => flatten(env, l, 1),
        (List(l), "flatten", [Int(depth)]) => {
            if *depth < 0 {
                return err("level must be non-negative");
            }
            flatten(env, l, *depth)
        }
        (List(l), "distinct", []) => {
            env.charge((l.len() * l.len()) as u64 / 10)?;
            let mut out: Vec<Val> = Vec::new();
            let n = Cell::new(0);
            for v in l.iter() {
                if !out.iter().any(|w| deep_eq(w, v, &n)) {
                    out.push(v.clone());
                }
            }
            env.charge(n.get() / 10)?;
            Ok(List(Rc::new(out)))
        }
        (List(l), "reverse", []) => Ok(List(Rc::new(l.iter().rev().cloned().collect()))),
        (List(l), "sort", []) => {
            let mut out = l.to_vec();
            if out.windows(2).any(|w| w[0].compare(&w[1]).is_none()) {
                return no_overload("sort", &[t]);
            }
            out.sort_by(|a, b| a.compare(b).unwrap_or(std::cmp::Ordering::Equal));
            Ok(List(Rc::new(out)))
        }
        (Opt(o), "hasValue", []) => Ok(Bool(o.is_some())),
        (Opt(Some(v)), "value", []) => Ok(v.as_ref().clone()),
        (Opt(None), "value", []) => err("optional.none() dereference"),
        (Opt(o), "orValue", [d]) => {
            Ok(o.as_ref().map_or_else(|| d.clone(), |v| v.as_ref().clone()))
        }
        (Opt(o), "or", [other @ Opt(_)]) => Ok(if o.is_some() {
            t.clone()
        } else {
            other.clone()
        }),
        (Timestamp(ts), _, []) => time::getter(*ts, name)
            .map(Int)
            .map_or_else(|| no_overload(name, &all), Ok),
        (Duration(d), _, []) => time::duration_getter(*d, name)
            .map(Int)
            .map_or_else(|| no_overload(name, &all), Ok),
        _ => no_overload(name, &all),
    }
}

/// `l.flatten(depth)` (cel-go lists library, version 1 and up): lists nested up to
/// `depth` levels are spliced in. The recursion goes no deeper than the value is nested
/// (bounded by the parser's and the JSON conversion's depth limits), whatever `depth`.
fn flatten(env: &mut Env, l: &[Val], depth: i64) -> R {
    fn walk(env: &mut Env, l: &[Val], depth: i64, out: &mut Vec<Val>) -> Result<(), Error> {
        for v in l {
            match v {
                Val::List(inner) if depth > 0 => walk(env, inner, depth - 1, out)?,
                v => out.push(v.clone()),
            }
        }
        env.charge(l.len() as u64 / 10 + 1)
    }
    let mut out = Vec::new();
    walk(env, l, depth, &mut out)?;
    Ok(Val::List(Rc::new(out)))
}

fn find_all(s: &str, p: &str, n: i64) -> R {
    let rx = regex(p)?;
    let limit = if n < 0 { usize::MAX } else { n as usize };
    Ok(Val::List(Rc::new(
        rx.find_iter(s)
            .take(limit)
            .map(|m| Val::str(m.as_str()))
            .collect(),
    )))
}

fn replace(env: &mut Env, s: &str, a: &str, b: &str, n: i64) -> R {
    // The result can be larger than the input: its size is paid for before it is built.
    let count = if a.is_empty() {
        s.chars().count() + 1
    } else {
        s.matches(a).count()
    };
    let count = if n < 0 { count } else { count.min(n as usize) };
    env.charge((count.saturating_mul(b.len()) / 10) as u64)?;
    Ok(Val::str(if n < 0 {
        s.replace(a, b)
    } else {
        s.replacen(a, b, n as usize)
    }))
}

fn split(env: &mut Env, s: &str, sep: &str, n: i64) -> R {
    if n == 0 {
        return Ok(Val::List(Rc::new(Vec::new())));
    }
    env.charge(s.len() as u64 / 10)?;
    let parts: Vec<Val> = if sep.is_empty() {
        let cs = chars(s);
        let limit = if n < 0 {
            cs.len()
        } else {
            (n as usize).min(cs.len())
        };
        let mut out: Vec<Val> = cs
            .iter()
            .take(limit.saturating_sub(1))
            .map(|c| Val::str(c.to_string()))
            .collect();
        if limit > 0 {
            out.push(Val::str(cs[limit - 1..].iter().collect::<String>()));
        }
        if cs.is_empty() {
            out = Vec::new();
        }
        out
    } else if n < 0 {
        s.split(sep).map(Val::str).collect()
    } else {
        s.splitn(n as usize, sep).map(Val::str).collect()
    };
    Ok(Val::List(Rc::new(parts)))
}

/// `s.substring(a[, b])` in code points; with two bounds an inverted range is reported
/// before a bound out of range, as cel-go's `substrRange` checks them.
fn substring(s: &str, a: i64, b: Option<i64>) -> R {
    let cs = chars(s);
    let n = cs.len() as i64;
    if let Some(b) = b {
        if a > b {
            return err(format!("invalid substring range. start: {a}, end: {b}"));
        }
    }
    let b = b.unwrap_or(n);
    if a < 0 || a > n {
        return err(format!("index out of range: {a}"));
    }
    if b < 0 || b > n {
        return err(format!("index out of range: {b}"));
    }
    Ok(Val::str(
        cs[a as usize..b as usize].iter().collect::<String>(),
    ))
}

fn join(l: &[Val], sep: &str) -> R {
    let mut parts = Vec::with_capacity(l.len());
    for v in l {
        match v {
            Val::Str(s) => parts.push(s.to_string()),
            v => return no_overload("join", &[v]),
        }
    }
    Ok(Val::str(parts.join(sep)))
}
