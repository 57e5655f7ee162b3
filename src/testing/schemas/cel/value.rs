//! CEL values, and how a custom resource's JSON becomes one under its schema.
//!
//! Equality and ordering are CEL's heterogeneous ones (cel-go's default since v0.10, which
//! kube-apiserver uses): `1 == 1u == 1.0`, numbers of any kind compare by value, values of
//! different kinds are unequal (not an error), lists and maps compare element by element.
//! Timestamps and durations are nanoseconds in an `i128`, so their arithmetic cannot
//! overflow before the range check (years 1 to 9999, as cel-go's).

use std::cell::OnceCell;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::rc::Rc;

use serde_json::Value;

/// A CEL value.
#[derive(Clone, Debug)]
pub(crate) enum Val {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    Str(Rc<str>),
    Bytes(Rc<[u8]>),
    List(Rc<Vec<Val>>),
    /// Entries in insertion order (JSON objects keep theirs); keys are unique.
    Map(Rc<MapVal>),
    /// An optional (`optional.of(x)`, `oldSelf` under `optionalOldSelf`).
    Opt(Option<Rc<Val>>),
    /// Nanoseconds since the Unix epoch.
    Timestamp(i128),
    /// Nanoseconds.
    Duration(i128),
    /// A type, as `type(x)` answers it (`int`, `string`, ...).
    Type(&'static str),
}

/// A map's entries in insertion order, and an index of its string keys, built on the first
/// lookup in a large map. Without it a rule over a map's keys (`self.all(k, self[k] ...)`)
/// was quadratic: 20,000 keys took 11 s for 120,000 units of the 1,000,000 a rule may
/// spend, so one object could hold a server thread for many minutes, where kube-apiserver
/// (Go maps) answers at once.
#[derive(Debug, Default)]
pub(crate) struct MapVal {
    entries: Vec<(Val, Val)>,
    index: OnceCell<HashMap<Rc<str>, usize>>,
}

/// Maps up to this size are searched entry by entry.
const INDEXED_FROM: usize = 16;

impl MapVal {
    /// The value of `key` (heterogeneous equality: `1`, `1u` and `1.0` are one key).
    fn get(&self, key: &Val) -> Option<&Val> {
        if let (Val::Str(s), true) = (key, self.entries.len() > INDEXED_FROM) {
            // A string key equals only a string key: the index is exact.
            let index = self.index.get_or_init(|| {
                self.entries
                    .iter()
                    .enumerate()
                    .filter_map(|(i, (k, _))| match k {
                        Val::Str(k) => Some((k.clone(), i)),
                        _ => None,
                    })
                    .collect()
            });
            return index.get(s.as_ref()).map(|&i| &self.entries[i].1);
        }
        self.entries
            .iter()
            .find(|(k, _)| k.equals(key))
            .map(|(_, v)| v)
    }
}

impl From<Vec<(Val, Val)>> for MapVal {
    fn from(entries: Vec<(Val, Val)>) -> Self {
        MapVal {
            entries,
            index: OnceCell::new(),
        }
    }
}

impl std::ops::Deref for MapVal {
    type Target = Vec<(Val, Val)>;
    fn deref(&self) -> &Self::Target {
        &self.entries
    }
}

impl Val {
    pub(crate) fn str(s: impl Into<Rc<str>>) -> Val {
        Val::Str(s.into())
    }

    /// The CEL type name (`int`, `map`, `google.protobuf.Timestamp`, ...).
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Val::Null => "null_type",
            Val::Bool(_) => "bool",
            Val::Int(_) => "int",
            Val::Uint(_) => "uint",
            Val::Double(_) => "double",
            Val::Str(_) => "string",
            Val::Bytes(_) => "bytes",
            Val::List(_) => "list",
            Val::Map(_) => "map",
            Val::Opt(_) => "optional_type",
            Val::Timestamp(_) => "google.protobuf.Timestamp",
            Val::Duration(_) => "google.protobuf.Duration",
            Val::Type(_) => "type",
        }
    }

    /// The value of `key` in a map.
    pub(crate) fn map_get(&self, key: &Val) -> Option<&Val> {
        match self {
            Val::Map(m) => m.get(key),
            _ => None,
        }
    }

    /// CEL's `==`.
    pub(crate) fn equals(&self, other: &Val) -> bool {
        self.equals_counting(other, &mut 0)
    }

    /// CEL's `==`, adding to `visits` the elements of lists and maps it compared, so that
    /// the caller can charge for them (a rule comparing a large value again and again must
    /// run out of cost, not hold the thread: kube-apiserver refuses such a rule when the
    /// CRD is written, by its cost estimate, which the test server does not make).
    pub(crate) fn equals_counting(&self, other: &Val, visits: &mut u64) -> bool {
        use Val::*;
        match (self, other) {
            (Null, Null) => true,
            (Bool(a), Bool(b)) => a == b,
            (Str(a), Str(b)) => a == b,
            (Bytes(a), Bytes(b)) => a == b,
            (List(a), List(b)) => {
                a.len() == b.len()
                    && a.iter().zip(b.iter()).all(|(x, y)| {
                        *visits += 1;
                        x.equals_counting(y, visits)
                    })
            }
            (Map(a), Map(b)) => {
                a.len() == b.len()
                    && a.iter().all(|(k, v)| {
                        *visits += 1;
                        other
                            .map_get(k)
                            .is_some_and(|w| v.equals_counting(w, visits))
                    })
            }
            (Opt(a), Opt(b)) => match (a, b) {
                (None, None) => true,
                (Some(x), Some(y)) => x.equals_counting(y, visits),
                _ => false,
            },
            (Timestamp(a), Timestamp(b)) | (Duration(a), Duration(b)) => a == b,
            (Type(a), Type(b)) => a == b,
            _ => num_cmp(self, other) == Some(Ordering::Equal),
        }
    }

    /// CEL's ordering (`<` and friends), `None` when the two are not comparable.
    pub(crate) fn compare(&self, other: &Val) -> Option<Ordering> {
        use Val::*;
        match (self, other) {
            (Bool(a), Bool(b)) => Some(a.cmp(b)),
            (Str(a), Str(b)) => Some(a.cmp(b)),
            (Bytes(a), Bytes(b)) => Some(a.cmp(b)),
            (Timestamp(a), Timestamp(b)) | (Duration(a), Duration(b)) => Some(a.cmp(b)),
            _ => num_cmp(self, other),
        }
    }

    /// Whether this is the zero value of its type (for `optional.ofNonZeroValue`).
    pub(crate) fn is_zero(&self) -> bool {
        match self {
            Val::Null => true,
            Val::Bool(b) => !b,
            Val::Int(i) => *i == 0,
            Val::Uint(u) => *u == 0,
            Val::Double(d) => *d == 0.0,
            Val::Str(s) => s.is_empty(),
            Val::Bytes(b) => b.is_empty(),
            Val::List(l) => l.is_empty(),
            Val::Map(m) => m.is_empty(),
            Val::Opt(o) => o.is_none(),
            Val::Timestamp(t) | Val::Duration(t) => *t == 0,
            Val::Type(_) => false,
        }
    }
}

/// Numbers of any kind compared by value (NaN compares with nothing).
fn num_cmp(a: &Val, b: &Val) -> Option<Ordering> {
    use Val::*;
    match (a, b) {
        (Int(x), Int(y)) => Some(x.cmp(y)),
        (Uint(x), Uint(y)) => Some(x.cmp(y)),
        (Int(x), Uint(y)) => Some(if *x < 0 {
            Ordering::Less
        } else {
            (*x as u64).cmp(y)
        }),
        (Uint(_), Int(_)) => num_cmp(b, a).map(Ordering::reverse),
        (Double(x), Double(y)) => x.partial_cmp(y),
        (Double(x), Int(y)) => f_i(*x, *y),
        (Int(_), Double(_)) => num_cmp(b, a).map(Ordering::reverse),
        (Double(x), Uint(y)) => f_u(*x, *y),
        (Uint(_), Double(_)) => num_cmp(b, a).map(Ordering::reverse),
        _ => None,
    }
}

/// A double against an int, exactly (no rounding of large ints).
fn f_i(x: f64, y: i64) -> Option<Ordering> {
    if x.is_nan() {
        return None;
    }
    if x < -9.223_372_036_854_776e18 {
        return Some(Ordering::Less);
    }
    if x >= 9.223_372_036_854_776e18 {
        return Some(Ordering::Greater);
    }
    let t = x.trunc() as i64;
    match t.cmp(&y) {
        Ordering::Equal => x.fract().partial_cmp(&0.0),
        o => Some(o),
    }
}

fn f_u(x: f64, y: u64) -> Option<Ordering> {
    if x.is_nan() {
        return None;
    }
    if x < 0.0 {
        return Some(Ordering::Less);
    }
    if x >= 1.844_674_407_370_955_2e19 {
        return Some(Ordering::Greater);
    }
    let t = x.trunc() as u64;
    match t.cmp(&y) {
        Ordering::Equal => x.fract().partial_cmp(&0.0),
        o => Some(o),
    }
}

/// JSON nested deeper than this is not converted (serde_json refuses deeper documents on
/// the wire anyway); the rule sees `null` there.
const MAX_JSON_DEPTH: usize = 200;

/// A custom resource's JSON value as CEL sees it under `schema`: integers as `int`,
/// numbers as `double`, strings of format `byte` as bytes, `date`/`date-time` as
/// timestamps, `duration` as durations; `x-kubernetes-int-or-string` as either.
pub(crate) fn from_json(v: &Value, schema: Option<&Value>) -> Val {
    convert(v, schema, 0)
}

fn convert(v: &Value, schema: Option<&Value>, depth: usize) -> Val {
    if depth > MAX_JSON_DEPTH {
        return Val::Null;
    }
    let ty = schema.and_then(|s| s["type"].as_str()).unwrap_or("");
    let format = schema.and_then(|s| s["format"].as_str()).unwrap_or("");
    match v {
        Value::Null => Val::Null,
        Value::Bool(b) => Val::Bool(*b),
        Value::Number(n) => {
            if ty == "number" {
                return Val::Double(n.as_f64().unwrap_or(0.0));
            }
            if let Some(i) = n.as_i64() {
                Val::Int(i)
            } else if let (Some(u), false) = (n.as_u64(), ty == "integer") {
                Val::Uint(u)
            } else {
                let f = n.as_f64().unwrap_or(0.0);
                if ty == "integer" && f.fract() == 0.0 && f.abs() < 9.2e18 {
                    Val::Int(f as i64)
                } else {
                    Val::Double(f)
                }
            }
        }
        Value::String(s) => {
            if ty == "string" {
                match format {
                    "byte" => {
                        if let Some(b) = super::library::base64_decode(s) {
                            return Val::Bytes(b.into());
                        }
                    }
                    "date" => {
                        if let Some(t) = super::time::parse_date(s) {
                            return Val::Timestamp(t);
                        }
                    }
                    "date-time" => {
                        if let Some(t) = super::time::parse_timestamp(s) {
                            return Val::Timestamp(t);
                        }
                    }
                    "duration" => {
                        if let Some(d) = super::time::parse_duration(s) {
                            return Val::Duration(d);
                        }
                    }
                    _ => {}
                }
            }
            Val::str(s.as_str())
        }
        Value::Array(items) => {
            let is = schema.and_then(|s| s.get("items"));
            Val::List(Rc::new(
                items.iter().map(|i| convert(i, is, depth + 1)).collect(),
            ))
        }
        Value::Object(m) => Val::Map(Rc::new(MapVal::from(
            m.iter()
                .map(|(k, x)| {
                    let s = schema.and_then(|s| {
                        s.get("properties")
                            .and_then(|p| p.get(k))
                            .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()))
                    });
                    (Val::str(k.as_str()), convert(x, s, depth + 1))
                })
                .collect::<Vec<_>>(),
        ))),
    }
}
