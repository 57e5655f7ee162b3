//! Structural schemas (a CRD's `openAPIV3Schema`): which fields a custom resource declares,
//! and what values they may hold.
//!
//! kube-apiserver prunes every field a custom resource's schema does not declare (with one
//! `unknown field "spec.bogus"` warning each, or a 400 under `fieldValidation=Strict`) and
//! then validates what is left (422 `Invalid`, one cause per problem). The test server does
//! both for the schemas given with
//! [`ApiServerBuilder::custom_resource_definition`](crate::testing::ApiServerBuilder::custom_resource_definition).
//!
//! Validation follows kube-openapi's validator, which kube-apiserver runs on custom
//! resources, check by check: for each value, the type, the combinators, the string checks
//! (the first failing of `maxLength`, `minLength`, `pattern`), the `format`, the number
//! checks, the items, the `enum`, then the object's fields and `required`. Its messages
//! and causes are reproduced word for word (`spec.step in body should be a multiple of 5`,
//! `Required value`, `supported values: "1", "2", "3"`), and so are its quirks: a problem
//! it cannot pin to a field (a number out of its format's range, a failed combinator) has
//! field `<nil>`; `oneOf` and `anyOf` matching no branch add the problems of the branch
//! that matched most (the first on a tie), `allOf` those of every branch, `not` none; the
//! same problem found twice is reported once. Decoding first drops a `null` the schema does
//! not allow (`nullable`) and stores a whole float (`5.0`) as an integer.
//! A `null` the schema allows meets only the type check (passed, by `nullable`) and the
//! `enum`, which refuses it whatever the list holds (`Unsupported value: null`): Go compares
//! a null with nothing, so a `nullable` field with an `enum` cannot hold `null` in
//! kube-apiserver either (a CRD that wants one leaves `enum` out or uses CEL).
//!
//! Supported: `properties`, `additionalProperties`, `items`,
//! `x-kubernetes-preserve-unknown-fields`, `type`, `nullable`, `x-kubernetes-int-or-string`,
//! `minimum`/`maximum` (and their `exclusive*` flags), `multipleOf`,
//! `minLength`/`maxLength`, `pattern` (Go's RE2 syntax, with its ASCII `\d`, `\w`, `\s`,
//! `\b`), `format` (see `formats.rs`: int32/int64 ranges and every string format but those
//! listed there as unchecked), `minItems`/`maxItems`, `minProperties`/`maxProperties`,
//! `enum` (Go's comparison), `required`, `oneOf`/`anyOf`/`allOf`/`not`. Not supported here
//! (accepted without a check): `x-kubernetes-validations` (CEL: see `crd_cel.rs`),
//! `x-kubernetes-embedded-resource`'s required fields; defaults are applied elsewhere, and
//! list types (set and list-map duplicates) are checked by `list_types.rs`.

use serde_json::{Map, Value};

use super::validation::FieldError;

fn preserves_unknown(schema: &Value) -> bool {
    schema["x-kubernetes-preserve-unknown-fields"] == true
}

/// The schema of the field `key` of an object whose schema is `schema`, if it declares one.
fn field_schema<'s>(schema: &'s Value, key: &str) -> Option<&'s Value> {
    if let Some(s) = schema.get("properties").and_then(|p| p.get(key)) {
        return Some(s);
    }
    match schema.get("additionalProperties") {
        Some(s @ Value::Object(_)) => Some(s),
        _ => None,
    }
}

/// The undeclared fields of a custom object (`apiVersion`, `kind` and `metadata` are always
/// declared; metadata is checked apart), as dotted paths, sorted; with `drop`, they are also
/// taken out.
pub(crate) fn unknown_fields(
    schema: &Value,
    obj: &mut Map<String, Value>,
    drop: bool,
) -> Vec<String> {
    let mut unknown = Vec::new();
    let keys: Vec<String> = obj.keys().cloned().collect();
    for k in keys {
        if matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        match field_schema(schema, &k) {
            Some(s) => {
                if drops_null(s, &obj[&k]) {
                    obj.remove(&k);
                } else if let Some(v) = obj.get_mut(&k) {
                    prune_value(s, v, &k, &mut unknown, drop);
                }
            }
            None if preserves_unknown(schema) => {}
            None => {
                if drop {
                    obj.remove(&k);
                }
                unknown.push(k);
            }
        }
    }
    unknown.sort();
    unknown
}

/// Whether decoding drops this value: a `null` where the schema neither allows it
/// (`nullable`) nor keeps anything (`x-kubernetes-preserve-unknown-fields` alone).
fn drops_null(schema: &Value, v: &Value) -> bool {
    v.is_null()
        && schema["nullable"] != true
        && !(preserves_unknown(schema) && types(schema).is_empty())
}

/// A whole float (`5.0`) as kube-apiserver stores it: an integer (`5`; Go writes a whole
/// float64 without a fraction). Not where the schema wants a string, a boolean, an object or
/// an array: there it stays a number, to be refused as one.
fn whole_float_as_integer(schema: &Value, v: &mut Value) {
    let tys = types(schema);
    if !tys.is_empty() && !tys.iter().any(|t| matches!(*t, "integer" | "number")) {
        return;
    }
    whole_floats(v);
}

fn whole_floats(v: &mut Value) {
    match v {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            if f.is_finite() && f.fract() == 0.0 && f.abs() < 9.2e18 {
                *v = Value::from(f as i64);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(whole_floats),
        Value::Object(m) => m.values_mut().for_each(whole_floats),
        _ => {}
    }
}

fn prune_value(schema: &Value, v: &mut Value, path: &str, unknown: &mut Vec<String>, drop: bool) {
    match v {
        Value::Number(_) => whole_float_as_integer(schema, v),
        Value::Object(m) => {
            if preserves_unknown(schema) && schema.get("properties").is_none() {
                m.values_mut().for_each(whole_floats);
                return;
            }
            // An embedded resource keeps its own `apiVersion`, `kind` and `metadata` (see
            // `crd_embedded.rs`).
            let embedded = schema["x-kubernetes-embedded-resource"] == true;
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                if embedded && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                let child = format!("{path}.{k}");
                match field_schema(schema, &k) {
                    Some(s) => {
                        if drops_null(s, &m[&k]) {
                            m.remove(&k);
                        } else if let Some(x) = m.get_mut(&k) {
                            prune_value(s, x, &child, unknown, drop);
                        }
                    }
                    None if preserves_unknown(schema) => {
                        if let Some(x) = m.get_mut(&k) {
                            whole_floats(x);
                        }
                    }
                    None => {
                        if drop {
                            m.remove(&k);
                        }
                        unknown.push(child);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    prune_value(s, item, &format!("{path}[{i}]"), unknown, drop);
                }
            } else {
                items.iter_mut().for_each(whole_floats);
            }
        }
        _ => {}
    }
}

/// The types a schema allows, as kube-openapi sees them: `type`, or `integer,string` for
/// `x-kubernetes-int-or-string` without a type.
fn types(schema: &Value) -> Vec<&str> {
    match schema["type"].as_str() {
        Some(t) if !t.is_empty() => vec![t],
        _ if schema["x-kubernetes-int-or-string"] == true => vec!["integer", "string"],
        _ => Vec::new(),
    }
}

/// A JSON number as kube-apiserver's decoder holds it: an `int64` when the text is an
/// integer that fits, else a `float64`.
#[derive(Clone, Copy)]
enum Num {
    Int(i64),
    Float(f64),
}

fn num(v: &Value) -> Option<Num> {
    let n = v.as_number()?;
    Some(match n.as_i64() {
        Some(i) => Num::Int(i),
        None => Num::Float(n.as_f64().unwrap_or(f64::NAN)),
    })
}

impl Num {
    fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
}

/// The JSON type and Go format kube-openapi infers from a decoded value.
fn data_type(v: &Value) -> (&'static str, &'static str) {
    match v {
        Value::Null => ("null", ""),
        Value::Bool(_) => ("boolean", ""),
        Value::String(_) => ("string", ""),
        Value::Array(_) => ("array", ""),
        Value::Object(_) => ("object", ""),
        Value::Number(_) => match num(v) {
            Some(Num::Int(_)) => ("integer", "int64"),
            _ => ("number", "float64"),
        },
    }
}

/// swag's `IsFloat64AJSONInteger`: a float that is (within 1e-9, relatively) an integer.
fn is_json_integer(f: f64) -> bool {
    const MAX: f64 = 9007199254740991.0; // 2^53 - 1
    if !f.is_finite() || !(-MAX..=MAX).contains(&f) {
        return false;
    }
    let g = f.trunc();
    if f == g {
        return true;
    }
    let diff = (f - g).abs();
    if g == 0.0 || diff < f64::MIN_POSITIVE {
        return diff < 1e-9 * f64::MIN_POSITIVE;
    }
    diff / (f.abs() + g.abs()).min(f64::MAX) < 1e-9
}

/// Go's `%v` of a float64: the shortest digits, in exponent form (`1e+06`) when the exponent
/// is below -4 or at least 6, as `strconv.FormatFloat(f, 'g', -1, 64)` writes it.
pub(crate) fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let sci = format!("{f:e}"); // shortest digits: "1.5e0", "-3e-1"
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mant}e{sign}{:02}", exp.abs());
    }
    format!("{f}")
}

/// Go's `%v` of a decoded JSON value in a field error (`Invalid value: <this>: ...`).
pub(crate) fn go_value(v: &Value) -> String {
    match v {
        Value::String(s) => go_quote(s),
        Value::Number(_) => match num(v) {
            Some(Num::Int(i)) => i.to_string(),
            Some(Num::Float(f)) => go_float(f),
            None => v.to_string(),
        },
        _ => v.to_string(),
    }
}

/// Go's `%q` of a string.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// What validating a value against a schema found: kube-openapi's `Result`. `matches`
/// counts the checks that applied (its `MatchCount`): `oneOf` and `anyOf` report the
/// failures of the branch that matched most.
#[derive(Default)]
struct Outcome {
    errors: Vec<FieldError>,
    matches: u32,
}

impl Outcome {
    /// Adds a problem unless one with the same text is already there (as kube-openapi does).
    fn add(&mut self, e: FieldError) {
        if !self
            .errors
            .iter()
            .any(|x| x.field == e.field && x.text == e.text)
        {
            self.errors.push(e);
        }
    }

    fn merge(&mut self, other: Outcome) {
        for e in other.errors {
            self.add(e);
        }
        self.matches += other.matches;
    }

    fn valid(&self) -> bool {
        self.errors.is_empty()
    }
}

/// A problem kube-apiserver cannot pin to a field (kube-openapi's plain errors): field
/// `<nil>`, value `""`.
fn unplaced(text: String) -> FieldError {
    FieldError {
        reason: "FieldValueInvalid",
        field: "<nil>".into(),
        text: format!("Invalid value: \"\": {text}"),
    }
}

fn invalid_at(path: &str, shown: &str, detail: String) -> FieldError {
    FieldError {
        reason: "FieldValueInvalid",
        field: path.to_owned(),
        text: format!("Invalid value: {shown}: {detail}"),
    }
}

/// `spec.x in body must be of type T: "given"` (a `FieldValueTypeInvalid`).
fn type_error(path: &str, expected: &str, given: &str) -> FieldError {
    let q = go_quote(given);
    FieldError {
        reason: "FieldValueTypeInvalid",
        field: path.to_owned(),
        text: format!("Invalid value: {q}: {path} in body must be of type {expected}: {q}"),
    }
}

fn required_error(path: &str) -> FieldError {
    FieldError {
        reason: "FieldValueRequired",
        field: path.to_owned(),
        text: "Required value".into(),
    }
}

/// The problems of a custom object's values against its schema (metadata, `apiVersion`
/// and `kind` are checked apart).
pub(crate) fn validate(schema: &Value, obj: &Map<String, Value>) -> Vec<FieldError> {
    let mut out = Outcome::default();
    let root = Value::Object(
        obj.iter()
            .filter(|(k, _)| !matches!(k.as_str(), "apiVersion" | "kind" | "metadata"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    );
    out.merge(schema_validate(schema, &root, ""));
    out.errors
}

/// The problems of one value against its own schema, named relative to that value (as
/// kube-apiserver's validator of a `/status` write, which is rooted at `status`, names them).
pub(crate) fn validate_value(schema: &Value, v: &Value) -> Vec<FieldError> {
    let mut out = Outcome::default();
    out.merge(schema_validate(schema, v, ""));
    out.errors
}

/// kube-openapi's `SchemaValidator.Validate`: the checks that apply to the value's kind, in
/// its order (type, combinators, string, format, number, array, enum, object).
fn schema_validate(schema: &Value, v: &Value, path: &str) -> Outcome {
    let mut out = Outcome::default();
    let tys = types(schema);
    let format = schema["format"].as_str().unwrap_or("");
    if v.is_null() {
        if !tys.is_empty() && !tys.contains(&"null") && schema["nullable"] != true {
            out.add(type_error(path, &tys.join(","), "null"));
        }
        out.merge(enum_check(schema, v, path));
        return out;
    }
    let run = |out: &mut Outcome, r: Outcome| {
        out.merge(r);
        out.matches += 1;
    };
    if !tys.is_empty() || !format.is_empty() {
        run(&mut out, type_check(&tys, format, v, path));
    }
    run(&mut out, combinators(schema, v, path));
    if let Value::String(s) = v {
        run(&mut out, string_check(schema, s, v, path));
        if let Some(ok) = super::formats::check(format, s) {
            let mut r = Outcome::default();
            if !ok {
                r.add(type_error(path, format, s));
            }
            run(&mut out, r);
        }
    }
    if let Some(n) = num(v) {
        run(&mut out, number_check(schema, &tys, format, n, path));
    }
    if let Value::Array(items) = v {
        run(&mut out, array_check(schema, items, path));
    }
    run(&mut out, enum_check(schema, v, path));
    if let Value::Object(m) = v {
        run(&mut out, object_check(schema, m, path));
    }
    out.matches += 1;
    out
}

fn type_check(tys: &[&str], format: &str, v: &Value, path: &str) -> Outcome {
    let mut out = Outcome::default();
    let (sch, fmt) = data_type(v);
    let float_int = sch == "number"
        && tys.contains(&"integer")
        && num(v).is_some_and(|n| is_json_integer(n.as_f64()));
    let int_float = sch == "integer" && tys.contains(&"number");
    let stringish = matches!(v, Value::String(_) | Value::Array(_));
    let has_format = !format.is_empty();
    let fits = tys.contains(&sch) || float_int || int_float;
    if !stringish && has_format && !(fits || fmt == format) {
        out.add(type_error(path, format, fmt));
        return out;
    }
    let numeric = tys.contains(&"number") || tys.contains(&"integer");
    if stringish && has_format && !numeric {
        out.matches = 1;
        return out;
    }
    if !fits {
        let given = Value::from(sch);
        out.add(FieldError::type_invalid(
            path,
            &given,
            &format!("{path} in body must be of type {}: {given}", tys.join(",")),
        ));
        return out;
    }
    out.matches = 1;
    out
}

/// `oneOf`, `anyOf`, `allOf` and `not`, with kube-openapi's messages and its choice of which
/// branch's own problems to report.
fn combinators(schema: &Value, v: &Value, path: &str) -> Outcome {
    let mut out = Outcome::default();
    let branches = |key: &str| -> Vec<&Value> {
        schema[key]
            .as_array()
            .map(|a| a.iter().collect())
            .unwrap_or_default()
    };
    let any_of = branches("anyOf");
    if !any_of.is_empty() {
        let mut best: Option<Outcome> = None;
        let mut success: Option<Outcome> = None;
        for b in any_of {
            let r = schema_validate(b, v, path);
            if r.valid() {
                best = None;
                success = Some(r);
                break;
            }
            if best.as_ref().is_none_or(|x| r.matches > x.matches) {
                best = Some(r);
            }
        }
        if success.is_none() {
            out.add(unplaced(format!(
                "\"{path}\" must validate at least one schema (anyOf)"
            )));
        }
        if let Some(r) = best.or(success) {
            out.merge(r);
        }
    }
    let one_of = branches("oneOf");
    if !one_of.is_empty() {
        let mut best: Option<Outcome> = None;
        let mut first: Option<Outcome> = None;
        let mut validated = 0;
        for b in one_of {
            let r = schema_validate(b, v, path);
            if r.valid() {
                validated += 1;
                best = None;
                if first.is_none() {
                    first = Some(r);
                }
                continue;
            }
            if validated == 0 && best.as_ref().is_none_or(|x| r.matches > x.matches) {
                best = Some(r);
            }
        }
        if validated != 1 {
            let more = if validated == 0 {
                "Found none valid".to_owned()
            } else {
                format!("Found {validated} valid alternatives")
            };
            out.add(unplaced(format!(
                "\"{path}\" must validate one and only one schema (oneOf). {more}"
            )));
            if let Some(r) = best {
                out.merge(r);
            }
        } else if let Some(r) = first {
            out.merge(r);
        }
    }
    let all_of = branches("allOf");
    if !all_of.is_empty() {
        let n = all_of.len();
        let mut validated = 0;
        for b in all_of {
            let r = schema_validate(b, v, path);
            if r.valid() {
                validated += 1;
            }
            out.merge(r);
        }
        if validated != n {
            let more = if validated == 0 {
                ". None validated"
            } else {
                ""
            };
            out.add(unplaced(format!(
                "\"{path}\" must validate all the schemas (allOf){more}"
            )));
        }
    }
    if let Some(not) = schema.get("not").filter(|n| n.is_object()) {
        if schema_validate(not, v, path).valid() {
            out.add(unplaced(format!(
                "\"{path}\" must not validate the schema (not)"
            )));
        }
    }
    out.matches += 1;
    out
}

/// A compiled `pattern` (Go's RE2 syntax, which the `regex` crate shares: no backreferences,
/// no look-around, linear time), kept for the next object.
fn pattern_matches(pattern: &str, s: &str) -> bool {
    use parking_lot::Mutex;
    use std::collections::HashMap;
    use std::sync::OnceLock;
    static CACHE: OnceLock<Mutex<HashMap<String, Option<regex::Regex>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut cache = cache.lock();
    if cache.len() > 256 {
        cache.clear();
    }
    let rx = cache.entry(pattern.to_owned()).or_insert_with(|| {
        regex::RegexBuilder::new(&go_pattern(pattern))
            .size_limit(1 << 22)
            .build()
            .ok()
    });
    // A pattern that does not compile matches nothing (kube-apiserver refuses it in the CRD).
    rx.as_ref().is_some_and(|rx| rx.is_match(s))
}

/// A Go (RE2) pattern in the `regex` crate's syntax. The two agree but for a few points,
/// rewritten here: Go's `\d`, `\w`, `\s` and `\b` are ASCII-only (the crate's are Unicode),
/// Go reads `&&`, `--`, `~~` and `[` inside a class literally (the crate's set operations and
/// nested classes), and Go has `\Q...\E` literals.
pub(crate) fn go_pattern(p: &str) -> String {
    const DIGIT: &str = "0-9";
    const WORD: &str = "0-9A-Za-z_";
    const SPACE: &str = "\\t\\n\\f\\r ";
    let mut out = String::with_capacity(p.len() + 8);
    let mut chars = p.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(n) = chars.next() else {
                    out.push('\\');
                    break;
                };
                let (set, negated) = match n {
                    'd' => (DIGIT, false),
                    'D' => (DIGIT, true),
                    'w' => (WORD, false),
                    'W' => (WORD, true),
                    's' => (SPACE, false),
                    'S' => (SPACE, true),
                    'b' | 'B' if !in_class => {
                        out.push_str(if n == 'b' { "(?-u:\\b)" } else { "(?-u:\\B)" });
                        continue;
                    }
                    'Q' => {
                        let mut lit = String::new();
                        while let Some(x) = chars.next() {
                            if x == '\\' && chars.peek() == Some(&'E') {
                                chars.next();
                                break;
                            }
                            lit.push(x);
                        }
                        if in_class {
                            for x in lit.chars() {
                                out.push_str(&regex::escape(&x.to_string()));
                            }
                        } else {
                            out.push_str(&regex::escape(&lit));
                        }
                        continue;
                    }
                    _ => {
                        out.push('\\');
                        out.push(n);
                        continue;
                    }
                };
                match (in_class, negated) {
                    (true, false) => out.push_str(set),
                    (_, true) => out.push_str(&format!("[^{set}]")),
                    (false, false) => out.push_str(&format!("[{set}]")),
                }
            }
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                if chars.peek() == Some(&'^') {
                    chars.next();
                    out.push('^');
                }
                if chars.peek() == Some(&']') {
                    chars.next();
                    out.push_str("\\]");
                }
            }
            '[' if chars.peek() == Some(&':') => {
                // A POSIX class, `[:alpha:]`: the same in both.
                out.push('[');
                for x in chars.by_ref() {
                    out.push(x);
                    if x == ']' {
                        break;
                    }
                }
            }
            '[' | '&' | '~' if in_class => {
                out.push('\\');
                out.push(c);
            }
            '-' if in_class && chars.peek() == Some(&'-') => out.push_str("\\-"),
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            c => out.push(c),
        }
    }
    out
}

/// `maxLength`, `minLength` and `pattern`, stopping at the first that fails.
fn string_check(schema: &Value, s: &str, v: &Value, path: &str) -> Outcome {
    let mut out = Outcome::default();
    let len = s.chars().count() as u64;
    if let Some(max) = schema["maxLength"].as_u64().filter(|m| len > *m) {
        out.add(FieldError {
            reason: "FieldValueTooLong",
            field: path.to_owned(),
            text: format!("Too long: may not be more than {max} bytes"),
        });
    } else if let Some(min) = schema["minLength"].as_u64().filter(|m| len < *m) {
        out.add(invalid_at(
            path,
            &go_value(v),
            format!("{path} in body should be at least {min} chars long"),
        ));
    } else if let Some(p) = schema["pattern"].as_str().filter(|p| !p.is_empty()) {
        if !pattern_matches(p, s) {
            out.add(invalid_at(
                path,
                &go_value(v),
                format!("{path} in body should match '{p}'"),
            ));
        }
    }
    out
}

/// Whether a number fits the schema's type and format (kube-openapi's
/// `IsValueValidAgainstRange`, on the value's decimal text): an error text if not.
fn out_of_range(n: Num, ty: &str, format: &str, prefix: &str, path: &str) -> Option<String> {
    let ok = match ty {
        "integer" => {
            let i = match n {
                Num::Int(i) => Some(i),
                // Go prints the float without an exponent and parses that as an integer.
                Num::Float(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 9.3e18 => {
                    Some(f as i64)
                }
                Num::Float(_) => None,
            };
            match (i, format) {
                (Some(i), "int32") => i32::try_from(i).is_ok(),
                (Some(_), _) => true,
                (None, _) => false,
            }
        }
        "number" if matches!(format, "float" | "float32") => n.as_f64().abs() <= f32::MAX as f64,
        _ => true,
    };
    if ok {
        return None;
    }
    Some(if format.is_empty() {
        format!("{prefix} value must be of type {ty} (default format) in {path}")
    } else {
        format!("{prefix} value must be of type {ty} with format {format} in {path}")
    })
}

fn number_check(schema: &Value, tys: &[&str], format: &str, n: Num, path: &str) -> Outcome {
    let mut out = Outcome::default();
    // The type and format the range checks use: only an unambiguous numeric type.
    let (ty, fmt) = match tys {
        ["integer"] => (
            "integer",
            if matches!(format, "int32" | "int64") {
                format
            } else {
                ""
            },
        ),
        ["number"] => (
            "number",
            if matches!(format, "float" | "double") {
                format
            } else {
                ""
            },
        ),
        _ => ("", ""),
    };
    let shown = match n {
        Num::Int(i) => i.to_string(),
        Num::Float(f) => go_float(f),
    };
    if let Some(e) = out_of_range(n, ty, fmt, "Checked", path) {
        out.add(unplaced(e));
    }
    let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
    if let Some(factor) = bound("multipleOf") {
        if let Some(e) = out_of_range(Num::Float(factor), ty, fmt, "MultipleOf", path) {
            out.add(unplaced(e));
            multiple_of_float(&mut out, path, n.as_f64(), factor);
        } else {
            match n {
                Num::Int(i) => {
                    let f = factor as i64;
                    if f <= 0 {
                        out.add(invalid_at(
                            path,
                            &f.to_string(),
                            format!("factor MultipleOf declared for {path} must be positive: {f}"),
                        ));
                    } else if i % f != 0 {
                        out.add(invalid_at(
                            path,
                            &shown,
                            format!("{path} in body should be a multiple of {f}"),
                        ));
                    }
                }
                Num::Float(x) => multiple_of_float(&mut out, path, x, factor),
            }
        }
    }
    for (key, below) in [("minimum", true), ("maximum", false)] {
        let Some(b) = bound(key) else { continue };
        let exclusive = schema[if below {
            "exclusiveMinimum"
        } else {
            "exclusiveMaximum"
        }] == true;
        let prefix = if below {
            "Minimum boundary"
        } else {
            "Maximum boundary"
        };
        let rel = match (below, exclusive) {
            (true, false) => "greater than or equal to",
            (true, true) => "greater than",
            (false, false) => "less than or equal to",
            (false, true) => "less than",
        };
        let range_err = out_of_range(Num::Float(b), ty, fmt, prefix, path);
        let native_int = range_err.is_none() && matches!(n, Num::Int(_));
        if let Some(e) = range_err {
            out.add(unplaced(e));
        }
        let (fails, limit) = match n {
            Num::Int(i) if native_int => {
                let l = b as i64;
                let fails = if below {
                    i < l || (exclusive && i == l)
                } else {
                    i > l || (exclusive && i == l)
                };
                (fails, l.to_string())
            }
            _ => {
                let x = n.as_f64();
                let fails = if below {
                    x < b || (exclusive && x == b)
                } else {
                    x > b || (exclusive && x == b)
                };
                (fails, go_float(b))
            }
        };
        if fails {
            out.add(invalid_at(
                path,
                &shown,
                format!("{path} in body should be {rel} {limit}"),
            ));
        }
    }
    out.matches += 1;
    out
}

fn multiple_of_float(out: &mut Outcome, path: &str, x: f64, factor: f64) {
    let shown = go_float(factor);
    if factor <= 0.0 {
        out.add(invalid_at(
            path,
            &shown,
            format!("factor MultipleOf declared for {path} must be positive: {shown}"),
        ));
        return;
    }
    let mult = if factor < 1.0 {
        1.0 / factor * x
    } else {
        x / factor
    };
    if !is_json_integer(mult) {
        out.add(invalid_at(
            path,
            &go_float(x),
            format!("{path} in body should be a multiple of {shown}"),
        ));
    }
}

fn array_check(schema: &Value, items: &[Value], path: &str) -> Outcome {
    let mut out = Outcome::default();
    if let Some(s) = schema.get("items").filter(|s| s.is_object()) {
        for (i, x) in items.iter().enumerate() {
            out.merge(schema_validate(s, x, &format!("{path}[{i}]")));
        }
    }
    let n = items.len() as u64;
    if let Some(min) = schema["minItems"].as_u64().filter(|m| n < *m) {
        out.add(invalid_at(
            path,
            &n.to_string(),
            format!("{path} in body should have at least {min} items"),
        ));
    }
    if let Some(max) = schema["maxItems"].as_u64().filter(|m| n > *m) {
        out.add(FieldError {
            reason: "FieldValueTooMany",
            field: path.to_owned(),
            text: format!("Too many: {n}: must have at most {max} items"),
        });
    }
    out.matches += 1;
    out
}

/// Whether a decoded value equals an enum's value as Go's reflection compares them: the
/// value converted to the enum value's type (an integer to a float or the other way, an
/// integer to the string of that code point), then compared deeply.
fn enum_equal(data: &Value, allowed: &Value) -> bool {
    match (allowed, data) {
        (Value::Null, _) | (_, Value::Null) => false,
        (Value::String(a), Value::String(d)) => a == d,
        (Value::String(a), Value::Number(_)) => match num(data) {
            Some(Num::Int(i)) => {
                let c = u32::try_from(i)
                    .ok()
                    .and_then(char::from_u32)
                    .unwrap_or('\u{FFFD}');
                a.chars().eq(std::iter::once(c))
            }
            _ => false,
        },
        (Value::Number(_), Value::Number(_)) => match (num(allowed), num(data)) {
            (Some(Num::Int(a)), Some(Num::Int(d))) => a == d,
            (Some(Num::Int(a)), Some(Num::Float(d))) => d.is_finite() && d.trunc() as i64 == a,
            (Some(a), Some(d)) => a.as_f64() == d.as_f64(),
            _ => false,
        },
        (Value::Bool(a), Value::Bool(d)) => a == d,
        (Value::Array(_), Value::Array(_)) | (Value::Object(_), Value::Object(_)) => {
            allowed == data
        }
        _ => false,
    }
}

fn enum_check(schema: &Value, v: &Value, path: &str) -> Outcome {
    let mut out = Outcome::default();
    let Some(allowed) = schema["enum"].as_array().filter(|a| !a.is_empty()) else {
        return out;
    };
    if allowed.iter().any(|a| enum_equal(v, a)) {
        return out;
    }
    let list: Vec<String> = allowed
        .iter()
        .map(|a| match a {
            Value::String(s) => go_quote(s),
            other => go_quote(&other.to_string()),
        })
        .collect();
    out.add(FieldError {
        reason: "FieldValueNotSupported",
        field: path.to_owned(),
        text: format!(
            "Unsupported value: {}: supported values: {}",
            go_value(v),
            list.join(", ")
        ),
    });
    out
}

fn child_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn object_check(schema: &Value, m: &Map<String, Value>, path: &str) -> Outcome {
    let mut out = Outcome::default();
    let n = m.len() as u64;
    if let Some(min) = schema["minProperties"].as_u64().filter(|x| n < *x) {
        out.add(invalid_at(
            path,
            &n.to_string(),
            format!("{path} in body should have at least {min} properties"),
        ));
    }
    if let Some(max) = schema["maxProperties"].as_u64().filter(|x| n > *x) {
        out.add(FieldError {
            reason: "FieldValueTooMany",
            field: path.to_owned(),
            text: format!("Too many: {n}: must have at most {max} items"),
        });
    }
    let props = schema["properties"].as_object();
    if let Some(extra) = schema.get("additionalProperties").filter(|s| s.is_object()) {
        for (k, x) in m {
            if !props.is_some_and(|p| p.contains_key(k)) {
                out.merge(schema_validate(extra, x, &child_path(path, k)));
            }
        }
    }
    for (k, s) in props.into_iter().flatten() {
        if let Some(x) = m.get(k) {
            out.merge(schema_validate(s, x, &child_path(path, k)));
        }
    }
    for r in schema["required"].as_array().into_iter().flatten() {
        if let Some(r) = r.as_str().filter(|r| !m.contains_key(*r)) {
            out.add(required_error(&child_path(path, r)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn gadget() -> Value {
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "required": ["size"], "properties": {
                "size": {"type": "integer", "minimum": 0},
                "color": {"type": "string", "enum": ["red", "blue"]},
                "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
            "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}})
    }

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn prunes_what_the_schema_does_not_declare() {
        let mut o = obj(
            json!({"apiVersion": "g/v1", "kind": "Gadget", "metadata": {"name": "a"},
            "spec": {"size": 1, "bogus": 1, "labels": {"x": "y"}, "free": {"any": {"thing": 1}}},
            "top": 1}),
        );
        let unknown = unknown_fields(&gadget(), &mut o, true);
        assert_eq!(unknown, ["spec.bogus", "top"]);
        assert_eq!(
            Value::Object(o),
            json!({"apiVersion": "g/v1", "kind": "Gadget", "metadata": {"name": "a"},
                "spec": {"size": 1, "labels": {"x": "y"}, "free": {"any": {"thing": 1}}}})
        );
    }

    fn problems(schema: Value, v: Value) -> Vec<(String, String)> {
        let s = json!({"type": "object", "properties": {"x": schema}});
        validate(&s, &obj(json!({ "x": v })))
            .into_iter()
            .map(|e| (e.field, e.text))
            .collect()
    }

    fn p(field: &str, text: &str) -> (String, String) {
        (field.to_owned(), text.to_owned())
    }

    #[test]
    fn go_numbers_and_quotes() {
        assert_eq!(go_float(1e6), "1e+06");
        assert_eq!(go_float(123456.0), "123456");
        assert_eq!(go_float(1234567.0), "1.234567e+06");
        assert_eq!(go_float(0.0001), "0.0001");
        assert_eq!(go_float(0.00001), "1e-05");
        assert_eq!(go_float(-2.5), "-2.5");
        assert_eq!(go_float(0.3), "0.3");
        assert_eq!(go_quote("a\"b\n\u{1}é"), "\"a\\\"b\\n\\x01é\"");
    }

    #[test]
    fn patterns_are_go_re2() {
        let m = |p: &str, s: &str| pattern_matches(p, s);
        assert!(m("^[a-z][a-z0-9-]*$", "ok-1"));
        assert!(!m("^[a-z][a-z0-9-]*$", "Bad_Name"));
        // Go's \d, \w, \s and \b are ASCII.
        assert!(m(r"^\d+$", "123") && !m(r"^\d+$", "١٢٣"));
        assert!(m(r"^\w+$", "a_1") && !m(r"^\w+$", "é"));
        assert!(m(r"^\D$", "é") && m(r"^[\D]$", "é") && !m(r"^[^\d]$", "5"));
        assert!(!m(r"^\s$", "\u{a0}") && m(r"^\S$", "\u{a0}"));
        assert!(!m(r"\bé", " é") && m(r"\ba", "éa") && m(r"a\b", "aé"));
        // Unicode classes, POSIX classes, case folding.
        assert!(m(r"^\p{Greek}+$", "αβγ") && m("^[[:alpha:]]+$", "abc"));
        assert!(m("(?i)^abc$", "ABC"));
        // Go reads these literally inside a class.
        assert!(m("^[a&&b]$", "&") && m("^[~~]$", "~") && m("^[[]$", "["));
        assert!(m(r"^\Q[.]\E$", "[.]") && !m(r"^\Q[.]\E$", "x"));
        // $ is the end of the text, not before a final newline.
        assert!(!m("^a$", "a\n"));
        // A pattern Go cannot compile matches nothing; a huge one neither hangs nor panics.
        assert!(!m("(", "("));
        assert!(!m("(a{1000}){1000}", "a"));
    }

    #[test]
    fn numbers_as_kube_openapi_checks_them() {
        let int32 = json!({"type": "integer", "format": "int32"});
        assert!(problems(int32.clone(), json!(2147483647)).is_empty());
        assert!(problems(int32.clone(), json!(-2147483648)).is_empty());
        assert!(problems(int32.clone(), json!(5.0)).is_empty());
        assert_eq!(
            problems(int32, json!(2147483648u64)),
            [p(
                "<nil>",
                "Invalid value: \"\": Checked value must be of type integer with format int32 in x"
            )]
        );
        assert_eq!(
            problems(json!({"type": "integer"}), json!(1e20)),
            [
                p("x", "Invalid value: \"number\": x in body must be of type integer: \"number\""),
                p("<nil>", "Invalid value: \"\": Checked value must be of type integer (default format) in x"),
            ]
        );
        assert_eq!(
            problems(json!({"type": "integer", "multipleOf": 0.5}), json!(3)),
            [p("<nil>", "Invalid value: \"\": MultipleOf value must be of type integer (default format) in x")]
        );
        assert_eq!(
            problems(
                json!({"type": "number", "exclusiveMinimum": true, "minimum": 1e6}),
                json!(1e6)
            ),
            [p(
                "x",
                "Invalid value: 1e+06: x in body should be greater than 1e+06"
            )]
        );
        assert_eq!(
            problems(json!({"type": "number", "maximum": 1.5}), json!(2)),
            [p(
                "x",
                "Invalid value: 2: x in body should be less than or equal to 1"
            )]
        );
        assert!(problems(json!({"type": "number", "multipleOf": 0.1}), json!(0.3)).is_empty());
        assert_eq!(
            problems(
                json!({"type": "array", "minItems": 2, "items": {"type": "string"}}),
                json!(["a"])
            ),
            [p(
                "x",
                "Invalid value: 1: x in body should have at least 2 items"
            )]
        );
        assert_eq!(
            problems(json!({"type": "number", "enum": [1.5, 2]}), json!(3)),
            [p(
                "x",
                "Unsupported value: 3: supported values: \"1.5\", \"2\""
            )]
        );
    }

    /// kube-apiserver gives a `nullable` field's `null` to kube-openapi's validator, which
    /// checks only the type (where `nullable` lets it through) and the `enum` (where it
    /// does not: Go's comparison never finds a null in a list, even one that lists null).
    /// `format` and the other checks are not run on a null. The same holds in `items` and
    /// `additionalProperties`.
    #[test]
    fn a_null_on_a_nullable_field_passes_the_type_but_not_an_enum() {
        let refused = |field: &str| {
            p(
                field,
                "Unsupported value: null: supported values: \"a\", \"b\"",
            )
        };
        let e = json!({"type": "string", "nullable": true, "enum": ["a", "b"]});
        assert_eq!(problems(e.clone(), Value::Null), [refused("x")]);
        assert!(problems(e.clone(), json!("a")).is_empty());
        let listed = json!({"type": "string", "nullable": true, "enum": ["a", "b", null]});
        assert_eq!(
            problems(listed, Value::Null),
            [p(
                "x",
                "Unsupported value: null: supported values: \"a\", \"b\", \"null\""
            )]
        );
        let items = json!({"type": "array", "items": e.clone()});
        assert_eq!(problems(items, json!(["a", null])), [refused("x[1]")]);
        let map = json!({"type": "object", "additionalProperties": e});
        assert_eq!(problems(map, json!({"k": null})), [refused("x.k")]);
        // Type and format: a null on a nullable field is not checked against its format.
        for f in ["date", "date-time", "int32", "uuid", "byte"] {
            let t = if f == "int32" { "integer" } else { "string" };
            let s = json!({"type": t, "format": f, "nullable": true});
            assert!(problems(s, Value::Null).is_empty(), "{f}");
        }
        let s = json!({"type": "string", "format": "date"});
        assert_eq!(
            problems(s, Value::Null),
            [p(
                "x",
                "Invalid value: \"null\": x in body must be of type string: \"null\""
            )]
        );
        // Int-or-string, nullable: null passes its type.
        let ios = json!({"x-kubernetes-int-or-string": true, "nullable": true});
        assert!(problems(ios, Value::Null).is_empty());
    }

    #[test]
    fn nulls_and_types() {
        let item = json!({"type": "array", "items": {"type": "string"}});
        assert_eq!(
            problems(item, json!(["a", null])),
            [p(
                "x[1]",
                "Invalid value: \"null\": x[1] in body must be of type string: \"null\""
            )]
        );
        let nullable = json!({"type": "array", "items": {"type": "string", "nullable": true}});
        assert!(problems(nullable, json!(["a", null])).is_empty());
        assert_eq!(
            problems(json!({"type": "string", "format": "date"}), json!(true)),
            [p(
                "x",
                "Invalid value: \"\": x in body must be of type date: \"\""
            )]
        );
        // An unknown format is not checked; a known unchecked one neither.
        assert!(problems(json!({"type": "string", "format": "colour"}), json!("z")).is_empty());
        assert!(problems(json!({"type": "string", "format": "uri"}), json!("z")).is_empty());
    }

    #[test]
    fn combinators_report_as_kube_openapi() {
        // allOf where no branch holds says so.
        assert_eq!(
            problems(json!({"type": "integer", "allOf": [{"minimum": 5}, {"maximum": 1}]}), json!(3)),
            [
                p("x", "Invalid value: 3: x in body should be greater than or equal to 5"),
                p("x", "Invalid value: 3: x in body should be less than or equal to 1"),
                p("<nil>", "Invalid value: \"\": \"x\" must validate all the schemas (allOf). None validated"),
            ]
        );
        // oneOf with none valid reports the branch that matched most, not the first.
        assert_eq!(
            problems(json!({"oneOf": [{"type": "string"}, {"type": "integer", "minimum": 5}]}), json!(3)),
            [
                p("<nil>", "Invalid value: \"\": \"x\" must validate one and only one schema (oneOf). Found none valid"),
                p("x", "Invalid value: 3: x in body should be greater than or equal to 5"),
            ]
        );
        // anyOf with a branch valid adds nothing; `not` with its branch failing adds nothing.
        assert!(problems(
            json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}),
            json!(3)
        )
        .is_empty());
        assert!(problems(
            json!({"type": "string", "not": {"pattern": "^a"}}),
            json!("b")
        )
        .is_empty());
        // The same problem found twice is reported once.
        assert_eq!(
            problems(
                json!({"type": "integer", "minimum": 5, "allOf": [{"minimum": 5}]}),
                json!(1)
            )
            .len(),
            2
        );
    }

    #[test]
    fn validates_values() {
        let fields = |v: Value| -> Vec<(String, &'static str)> {
            validate(&gadget(), &obj(v))
                .into_iter()
                .map(|e| (e.field, e.reason))
                .collect()
        };
        assert!(fields(json!({"spec": {"size": 0, "color": "red"}})).is_empty());
        assert_eq!(
            fields(json!({"spec": {"size": -1}})),
            [("spec.size".into(), "FieldValueInvalid")]
        );
        assert_eq!(
            fields(json!({"spec": {"size": "big"}})),
            [("spec.size".into(), "FieldValueTypeInvalid")]
        );
        assert_eq!(
            fields(json!({"spec": {}})),
            [("spec.size".into(), "FieldValueRequired")]
        );
        assert_eq!(
            fields(json!({"spec": {"size": 1, "color": "green", "tags": ["a", "b", 3]}})),
            [
                ("spec.color".into(), "FieldValueNotSupported"),
                ("spec.tags[2]".into(), "FieldValueTypeInvalid"),
                ("spec.tags".into(), "FieldValueTooMany")
            ]
        );
        let e = &validate(&gadget(), &obj(json!({"spec": {"size": -1}})))[0];
        assert_eq!(
            e.text,
            "Invalid value: -1: spec.size in body should be greater than or equal to 0"
        );
    }
}
