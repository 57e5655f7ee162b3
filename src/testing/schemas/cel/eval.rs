//! The evaluator: walks a parsed [`Expr`] with CEL's semantics.
//!
//! - Errors are values in CEL: `||` and `&&` are commutative over them (`err || true` is
//!   `true`, `err && false` is `false`), as are `all` and `exists` over their elements;
//!   everything else propagates the first error.
//! - `int` and `uint` arithmetic is checked (`integer overflow`, `division by zero`,
//!   `modulus by zero`), `double` is IEEE.
//! - Every step costs one unit, and operations on strings, lists and maps cost in
//!   proportion to their size; past the budget the evaluation stops with
//!   `operation cancelled: actual cost limit exceeded` (kube-apiserver's per-rule limit).
//!   So no rule can spin or build an unbounded value.
//! - A field of an object read when absent is `no such key: f`; `has()` tests presence.
//!   Field names escaped per Kubernetes' rules (`__dash__`, `__dot__`, `__slash__`,
//!   `__underscores__`, `__{keyword}__`) are unescaped.

use std::rc::Rc;

use super::parse::{Expr, Macro};
use super::value::Val;

/// An evaluation error (cel-go's text, e.g. `no such key: x`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Error(pub String);

pub(crate) type R = Result<Val, Error>;

pub(crate) fn err<T>(s: impl Into<String>) -> Result<T, Error> {
    Err(Error(s.into()))
}

pub(crate) fn no_overload<T>(f: &str, args: &[&Val]) -> Result<T, Error> {
    let types: Vec<&str> = args.iter().map(|a| a.type_name()).collect();
    err(format!("no such overload: {f}({})", types.join(", ")))
}

/// The text kube-apiserver matches to stop all further rules.
pub(crate) const COST_EXCEEDED: &str = "operation cancelled: actual cost limit exceeded";

/// Evaluation state: variables in scope and the cost spent.
pub(crate) struct Env {
    vars: Vec<(String, Val)>,
    pub(crate) cost: u64,
    pub(crate) limit: u64,
}

impl Env {
    pub(crate) fn new(vars: Vec<(String, Val)>, limit: u64) -> Self {
        Env {
            vars,
            cost: 0,
            limit,
        }
    }

    /// Spends `n` units of cost.
    pub(crate) fn charge(&mut self, n: u64) -> Result<(), Error> {
        self.cost = self.cost.saturating_add(n);
        if self.cost > self.limit {
            return err(COST_EXCEEDED);
        }
        Ok(())
    }

    fn lookup(&self, name: &str) -> Option<&Val> {
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }
}

/// Kubernetes' escaping of property names that are not CEL identifiers.
fn unescape(name: &str) -> String {
    if !name.contains("__") {
        return name.to_owned();
    }
    if let Some(inner) = name.strip_prefix("__").and_then(|n| n.strip_suffix("__")) {
        if super::parse_keywords().contains(&inner) {
            return inner.to_owned();
        }
    }
    let mut out = String::new();
    let mut rest = name;
    while !rest.is_empty() {
        let mut matched = false;
        for (esc, plain) in [
            ("__underscores__", "__"),
            ("__dot__", "."),
            ("__dash__", "-"),
            ("__slash__", "/"),
        ] {
            if let Some(r) = rest.strip_prefix(esc) {
                out.push_str(plain);
                rest = r;
                matched = true;
                break;
            }
        }
        if !matched {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// Evaluates `e`. Each kind of node is evaluated in its own function, so that this one,
/// the frame repeated at every level of a deep tree, stays small (debug builds give a
/// function the stack of all its arms).
pub(crate) fn eval(e: &Expr, env: &mut Env) -> R {
    env.charge(1)?;
    match e {
        Expr::Lit(v) => Ok(v.clone()),
        Expr::Ident(n) => ident(n, env),
        Expr::Select(target, field, optional) => select_expr(target, field, *optional, env),
        Expr::Index(target, index, optional) => index_expr(target, index, *optional, env),
        Expr::Has(target, field) => has(target, field, env),
        Expr::List(items) => list(items, env),
        Expr::Map(entries) => map(entries, env),
        Expr::Not(x) => not(x, env),
        Expr::Neg(x) => neg(x, env),
        Expr::And(a, b) => logic(env, a, b, false),
        Expr::Or(a, b) => logic(env, a, b, true),
        Expr::Cond(c, t, f) => cond(c, t, f, env),
        Expr::Binary(op, a, b) => binary(op, a, b, env),
        Expr::Comp {
            kind,
            range,
            vars,
            filter,
            body,
        } => comprehension(env, *kind, range, vars, filter.as_deref(), body),
        Expr::Call(target, name, args) => call(target.as_deref(), name, args, env),
    }
}

#[inline(never)]
fn ident(n: &str, env: &mut Env) -> R {
    match env.lookup(n) {
        Some(v) => Ok(v.clone()),
        None => match n {
            "int" | "uint" | "double" | "string" | "bytes" | "bool" | "list" | "map"
            | "null_type" | "type" => Ok(Val::Type(type_ident(n))),
            _ => err(format!("no such attribute(s): {n}")),
        },
    }
}

#[inline(never)]
fn select_expr(target: &Expr, field: &str, optional: bool, env: &mut Env) -> R {
    if let Expr::Ident(ns) = target {
        if ns == "optional" && env.lookup("optional").is_none() {
            return err(format!("undeclared reference to 'optional.{field}'"));
        }
    }
    let t = eval(target, env)?;
    select(&t, field, optional)
}

#[inline(never)]
fn index_expr(target: &Expr, index: &Expr, optional: bool, env: &mut Env) -> R {
    let t = eval(target, env)?;
    let i = eval(index, env)?;
    index_val(&t, &i, optional)
}

#[inline(never)]
fn has(target: &Expr, field: &str, env: &mut Env) -> R {
    let t = eval(target, env)?;
    match &t {
        Val::Map(_) => Ok(Val::Bool(t.map_get(&Val::str(unescape(field))).is_some())),
        Val::Opt(None) => Ok(Val::Bool(false)),
        _ => no_overload("has", &[&t]),
    }
}

#[inline(never)]
fn list(items: &[Expr], env: &mut Env) -> R {
    let mut out = Vec::with_capacity(items.len());
    for i in items {
        out.push(eval(i, env)?);
    }
    Ok(Val::List(Rc::new(out)))
}

#[inline(never)]
fn map(entries: &[(Expr, Expr)], env: &mut Env) -> R {
    let mut out: Vec<(Val, Val)> = Vec::with_capacity(entries.len());
    for (k, v) in entries {
        let k = eval(k, env)?;
        if !matches!(k, Val::Str(_) | Val::Int(_) | Val::Uint(_) | Val::Bool(_)) {
            return err(format!("unsupported key type: {}", k.type_name()));
        }
        let v = eval(v, env)?;
        if out.iter().any(|(x, _)| x.equals(&k)) {
            return err(format!(
                "Failed with repeated key: {}",
                super::library::display(&k)
            ));
        }
        env.charge(out.len() as u64 / 10)?;
        out.push((k, v));
    }
    Ok(Val::Map(Rc::new(out.into())))
}

#[inline(never)]
fn not(x: &Expr, env: &mut Env) -> R {
    match eval(x, env)? {
        Val::Bool(b) => Ok(Val::Bool(!b)),
        v => no_overload("logical_not", &[&v]),
    }
}

#[inline(never)]
fn neg(x: &Expr, env: &mut Env) -> R {
    match eval(x, env)? {
        Val::Int(i) => i
            .checked_neg()
            .map(Val::Int)
            .ok_or(Error("integer overflow".into())),
        Val::Double(d) => Ok(Val::Double(-d)),
        Val::Duration(d) => super::ops::duration(-d),
        v => no_overload("negate", &[&v]),
    }
}

#[inline(never)]
fn cond(c: &Expr, t: &Expr, f: &Expr, env: &mut Env) -> R {
    match eval(c, env)? {
        Val::Bool(true) => eval(t, env),
        Val::Bool(false) => eval(f, env),
        v => no_overload("_?_:_", &[&v]),
    }
}

#[inline(never)]
fn binary(op: &str, a: &Expr, b: &Expr, env: &mut Env) -> R {
    let x = eval(a, env)?;
    let y = eval(b, env)?;
    super::ops::binary(op, &x, &y, env)
}

#[inline(never)]
fn call(target: Option<&Expr>, name: &str, args: &[Expr], env: &mut Env) -> R {
    let t = match target {
        Some(t) => {
            if let Expr::Ident(ns) = t {
                let namespaced = matches!(
                    ns.as_str(),
                    "optional" | "sets" | "lists" | "math" | "strings" | "base64"
                );
                if namespaced && env.lookup(ns).is_none() {
                    let vals = eval_all(args, env)?;
                    return super::library::call(env, None, &format!("{ns}.{name}"), &vals);
                }
            }
            Some(eval(t, env)?)
        }
        None => None,
    };
    let vals = eval_all(args, env)?;
    super::library::call(env, t.as_ref(), name, &vals)
}

fn eval_all(args: &[Expr], env: &mut Env) -> Result<Vec<Val>, Error> {
    let mut vals = Vec::with_capacity(args.len());
    for a in args {
        vals.push(eval(a, env)?);
    }
    Ok(vals)
}

fn type_ident(n: &str) -> &'static str {
    match n {
        "int" => "int",
        "uint" => "uint",
        "double" => "double",
        "string" => "string",
        "bytes" => "bytes",
        "bool" => "bool",
        "list" => "list",
        "map" => "map",
        "null_type" => "null_type",
        _ => "type",
    }
}

/// `a && b` (`or` false) or `a || b` (`or` true), commutative over errors.
#[inline(never)]
fn logic(env: &mut Env, a: &Expr, b: &Expr, or: bool) -> R {
    let x = eval(a, env);
    if let Ok(Val::Bool(v)) = x {
        if v == or {
            return Ok(Val::Bool(or));
        }
    }
    if let Err(e) = &x {
        if e.0 == COST_EXCEEDED {
            return x;
        }
    }
    let y = eval(b, env);
    match (x, y) {
        (_, Ok(Val::Bool(v))) if v == or => Ok(Val::Bool(or)),
        (Ok(Val::Bool(_)), Ok(Val::Bool(_))) => Ok(Val::Bool(!or)),
        (Err(e), _) => Err(e),
        (_, Err(e)) => Err(e),
        (Ok(x), Ok(y)) => no_overload(if or { "_||_" } else { "_&&_" }, &[&x, &y]),
    }
}

/// `t.f` (or `t.?f`).
pub(crate) fn select(t: &Val, field: &str, optional: bool) -> R {
    let key = Val::str(unescape(field));
    match t {
        Val::Map(_) => match (t.map_get(&key), optional) {
            (Some(v), false) => Ok(v.clone()),
            (Some(v), true) => Ok(Val::Opt(Some(Rc::new(v.clone())))),
            (None, true) => Ok(Val::Opt(None)),
            (None, false) => err(format!("no such key: {}", unescape(field))),
        },
        Val::Opt(None) if optional => Ok(Val::Opt(None)),
        Val::Opt(Some(inner)) if optional => select(inner, field, true),
        _ => err(format!(
            "type '{}' does not support field selection",
            t.type_name()
        )),
    }
}

/// `t[i]` (or `t[?i]`).
pub(crate) fn index_val(t: &Val, i: &Val, optional: bool) -> R {
    let found = match (t, i) {
        (Val::List(l), _) => {
            let idx = match i {
                Val::Int(n) => Some(*n),
                Val::Uint(n) => i64::try_from(*n).ok(),
                Val::Double(d) if d.fract() == 0.0 && d.abs() < 9.2e18 => Some(*d as i64),
                _ => return no_overload("_[_]", &[t, i]),
            };
            match idx.filter(|n| *n >= 0 && (*n as u64) < l.len() as u64) {
                Some(n) => Some(l[n as usize].clone()),
                None if optional => None,
                None => {
                    return err(format!(
                        "index out of bounds: {}",
                        super::library::display(i)
                    ))
                }
            }
        }
        (Val::Map(_), _) => match t.map_get(i) {
            Some(v) => Some(v.clone()),
            None if optional => None,
            None => return err(format!("no such key: {}", super::library::display(i))),
        },
        (Val::Opt(None), _) if optional => None,
        (Val::Opt(Some(inner)), _) if optional => return index_val(inner, i, true),
        _ => return no_overload("_[_]", &[t, i]),
    };
    Ok(if optional {
        Val::Opt(found.map(Rc::new))
    } else {
        found.unwrap_or(Val::Null)
    })
}

fn comprehension(
    env: &mut Env,
    kind: Macro,
    range: &Expr,
    vars: &(Option<String>, String),
    filter: Option<&Expr>,
    body: &Expr,
) -> R {
    let r = eval(range, env)?;
    // (first variable, second variable): a list's (index, item), a map's (key, value); the
    // one-variable forms bind the item, or the key.
    let pairs: Vec<(Val, Val)> = match &r {
        Val::List(l) => l
            .iter()
            .enumerate()
            .map(|(i, v)| (Val::Int(i as i64), v.clone()))
            .collect(),
        Val::Map(m) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        _ => return no_overload(&format!("{kind:?}").to_lowercase(), &[&r]),
    };
    if vars.0.is_some() && kind == Macro::Map {
        return err("two-variable map is not supported");
    }
    let mut count = 0usize;
    let mut out = Vec::new();
    let mut pending: Option<Error> = None;
    for (k, v) in pairs {
        env.charge(1)?;
        let base = env.vars.len();
        let item = if vars.0.is_none() && matches!(r, Val::Map(_)) {
            k.clone()
        } else {
            v.clone()
        };
        match (&vars.0, matches!(r, Val::Map(_))) {
            (Some(first), _) => {
                env.vars.push((first.clone(), k));
                env.vars.push((vars.1.clone(), v));
            }
            (None, true) => env.vars.push((vars.1.clone(), k)),
            (None, false) => env.vars.push((vars.1.clone(), v)),
        }
        let res = (|| -> Result<Option<bool>, Error> {
            match kind {
                Macro::All | Macro::Exists | Macro::ExistsOne => match eval(body, env) {
                    Ok(Val::Bool(b)) => Ok(Some(b)),
                    Ok(x) => no_overload("predicate", &[&x]),
                    Err(e) => Err(e),
                },
                Macro::Filter => match eval(body, env)? {
                    Val::Bool(true) => {
                        out.push(item.clone());
                        Ok(None)
                    }
                    Val::Bool(false) => Ok(None),
                    x => no_overload("filter", &[&x]),
                },
                Macro::Map => {
                    if let Some(f) = filter {
                        match eval(f, env)? {
                            Val::Bool(true) => {}
                            Val::Bool(false) => return Ok(None),
                            x => return no_overload("map", &[&x]),
                        }
                    }
                    out.push(eval(body, env)?);
                    Ok(None)
                }
            }
        })();
        env.vars.truncate(base);
        match (kind, res) {
            (_, Err(e)) if e.0 == COST_EXCEEDED => return Err(e),
            (Macro::All, Ok(Some(false))) => return Ok(Val::Bool(false)),
            (Macro::Exists, Ok(Some(true))) => return Ok(Val::Bool(true)),
            (Macro::ExistsOne, Ok(Some(true))) => count += 1,
            (Macro::All | Macro::Exists, Err(e)) => {
                pending.get_or_insert(e);
            }
            (_, Err(e)) => return Err(e),
            _ => {}
        }
    }
    if let Some(e) = pending {
        return Err(e);
    }
    Ok(match kind {
        Macro::All => Val::Bool(true),
        Macro::Exists => Val::Bool(false),
        Macro::ExistsOne => Val::Bool(count == 1),
        Macro::Map | Macro::Filter => Val::List(Rc::new(out)),
    })
}
