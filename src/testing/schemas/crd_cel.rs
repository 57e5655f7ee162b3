//! A custom resource's `x-kubernetes-validations` rules, checked as kube-apiserver checks
//! them after its schema validation (apiextensions' `schema/cel` validator).
//!
//! Each schema node's rules run with `self` bound to the node's value (never on `null`),
//! in list order, then those of its `allOf` branches, then its children's (properties, map
//! values, array items). A failing rule gives one cause at the node (or at its `fieldPath`)
//! with its `reason` (`FieldValueInvalid` by default, `Forbidden`, `Required`,
//! `Duplicate`) and its message: `messageExpression`'s value when that evaluates to a
//! non-empty one-line string, else `message`, else `failed rule: <rule>` (a
//! `messageExpression` out of cost is a cause of its own and stops the rules). A scalar's value
//! is shown in the cause, an object's or list's is not. A rule that errs at run time gives
//! `Invalid value: "<type>": <error> evaluating rule: <rule or message>`.
//!
//! Transition rules (those reading `oldSelf`) run only on an update whose old object has a
//! value at the same place (found through object keys, map keys and the keys of
//! `x-kubernetes-list-type: map` lists); with `optionalOldSelf` they always run and
//! `oldSelf` is an optional. Ratcheting (GA since 1.33): a failing rule that does not read
//! `oldSelf` is not reported where the value equals its old value (or, for a node that
//! cannot be matched to an old one, where its nearest matched ancestor's does).
//!
//! Costs: every rule has kube-apiserver's per-call limit, and one object's rules share
//! its total budget; past either, the rules stop with kube-apiserver's message. The cost
//! units are this interpreter's own (see `cel`), so where exactly a costly rule stops
//! differs from the real server; that it stops does not.

use serde_json::{Map, Value};

use super::cel::{self, Val};
use super::validation::FieldError;

/// kube-apiserver's budget for all the rules of one object (`RuntimeCELCostBudget`).
const OBJECT_BUDGET: u64 = 10_000_000;

/// kube-apiserver's limit on a `messageExpression`'s result.
const MAX_MESSAGE: usize = 5 * 1024;

/// The cause kube-apiserver adds instead of running the rules of an object with type
/// errors.
fn not_checked() -> FieldError {
    FieldError {
        reason: "FieldValueInvalid",
        field: "<nil>".into(),
        text: "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation".into(),
    }
}

/// Whether `errors` (schema validation's) stop the rules from running: a value of the
/// wrong type.
fn blocks_rules(errors: &[FieldError]) -> bool {
    errors.iter().any(|e| {
        matches!(
            e.reason,
            "FieldValueTypeInvalid" | "FieldValueTypeNotSupported"
        )
    })
}

/// Whether any node of `schema` has rules (most schemas have none: nothing to walk).
fn has_rules(schema: &Value) -> bool {
    match schema {
        Value::Object(m) => {
            m.get("x-kubernetes-validations")
                .and_then(Value::as_array)
                .is_some_and(|l| !l.is_empty())
                || m.values().any(has_rules)
        }
        Value::Array(l) => l.iter().any(has_rules),
        _ => false,
    }
}

/// What rules on the root see besides the object's fields: its `apiVersion`, `kind` and
/// `metadata` (of which only `name` and `generateName`, the name as generated).
pub(crate) struct Root<'a> {
    pub api_version: &'a str,
    pub kind: &'a str,
    pub meta: &'a Map<String, Value>,
}

/// The rule failures of the custom object `obj` against `schema`; `old` is the stored
/// object on an update. `schema_errors` are those found before: a type error among
/// them skips the rules (with a cause that says so), as on the real server.
pub(crate) fn validate(
    schema: &Value,
    root_info: Root<'_>,
    obj: &Map<String, Value>,
    old: Option<&Map<String, Value>>,
    schema_errors: &[FieldError],
) -> Vec<FieldError> {
    if !has_rules(schema) {
        return Vec::new();
    }
    if blocks_rules(schema_errors) {
        return vec![not_checked()];
    }
    let root = |m: &Map<String, Value>, meta: Option<&Map<String, Value>>| {
        let mut r = m.clone();
        r.insert("apiVersion".into(), root_info.api_version.into());
        r.insert("kind".into(), root_info.kind.into());
        let meta = meta.or_else(|| m.get("metadata").and_then(Value::as_object));
        let kept: Map<String, Value> = meta
            .into_iter()
            .flatten()
            .filter(|(k, _)| matches!(k.as_str(), "name" | "generateName"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        r.insert("metadata".into(), Value::Object(kept));
        Value::Object(r)
    };
    let new = root(obj, Some(root_info.meta));
    let old = old.map(|o| root(o, None));
    let mut w = Walk {
        errors: Vec::new(),
        left: OBJECT_BUDGET,
        stopped: false,
    };
    let eq = old.as_ref() == Some(&new);
    w.node(schema, &new, old.as_ref(), "", eq);
    w.errors
}

struct Walk {
    errors: Vec<FieldError>,
    left: u64,
    stopped: bool,
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn shown_path(path: &str) -> String {
    if path.is_empty() {
        "<nil>".into()
    } else {
        path.to_owned()
    }
}

impl Walk {
    /// Checks the rules of `schema` at `v` (and below). `eq`: whether errors here are
    /// ratcheted (the nearest matched value equals its old one).
    fn node(&mut self, schema: &Value, v: &Value, old: Option<&Value>, path: &str, eq: bool) {
        if self.stopped || v.is_null() || !has_rules(schema) {
            return;
        }
        let old = old.filter(|o| !o.is_null());
        let eq = old.map_or(eq, |o| o == v);
        self.rules(schema, v, old, path, eq);
        if let Some(branches) = schema.get("allOf").and_then(Value::as_array) {
            for b in branches {
                self.rules(b, v, old, path, eq);
            }
        }
        match v {
            Value::Object(m) => {
                let props = schema.get("properties").and_then(Value::as_object);
                let extra = schema.get("additionalProperties").filter(|a| a.is_object());
                for (k, x) in m {
                    let (s, p) = match (props.and_then(|p| p.get(k)), extra) {
                        (Some(s), _) => (s, child(path, k)),
                        (None, Some(s)) => (s, format!("{}[{k}]", shown_path(path))),
                        _ => continue,
                    };
                    let o = old.and_then(|o| o.get(k));
                    self.node(s, x, o, &p, eq);
                }
            }
            Value::Array(items) => {
                let Some(s) = schema.get("items") else { return };
                let old_items = old
                    .and_then(Value::as_array)
                    .map(|l| OldItems::new(schema, l));
                for (i, x) in items.iter().enumerate() {
                    let o = old_items.as_ref().and_then(|l| l.matching(x));
                    self.node(s, x, o, &format!("{}[{i}]", shown_path(path)), eq);
                }
            }
            _ => {}
        }
    }

    /// The rules of one schema node.
    fn rules(&mut self, schema: &Value, v: &Value, old: Option<&Value>, path: &str, eq: bool) {
        let Some(rules) = schema
            .get("x-kubernetes-validations")
            .and_then(Value::as_array)
        else {
            return;
        };
        if rules.is_empty() {
            return;
        }
        let ty = schema.get("type").and_then(Value::as_str).unwrap_or("");
        let ty = if path.is_empty() { "object" } else { ty };
        let here = shown_path(path);
        let invalid_type = |text: String| FieldError {
            reason: "FieldValueInvalid",
            field: here.clone(),
            text: format!("Invalid value: \"{ty}\": {text}"),
        };
        let self_val = cel::from_json(v, Some(schema));
        let old_val = old.map(|o| cel::from_json(o, Some(schema)));
        for rule in rules {
            let src = rule.get("rule").and_then(Value::as_str).unwrap_or("");
            if src.trim().is_empty() {
                continue;
            }
            let message = rule
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim();
            let shown_rule = if message.is_empty() {
                src.trim()
            } else {
                message
            };
            let program = match cel::compile(src) {
                Ok(p) => p,
                Err(e) => {
                    self.errors.push(invalid_type(format!(
                        "rule compile error: compilation failed: ERROR: <input>: {e}"
                    )));
                    continue;
                }
            };
            let optional_old = rule.get("optionalOldSelf") == Some(&Value::Bool(true));
            if program.uses_old_self && old_val.is_none() && !optional_old {
                continue;
            }
            let mut vars = vec![("self".to_owned(), self_val.clone())];
            if optional_old {
                vars.push((
                    "oldSelf".into(),
                    Val::Opt(old_val.clone().map(std::rc::Rc::new)),
                ));
            } else if let Some(o) = &old_val {
                vars.push(("oldSelf".into(), o.clone()));
            }
            let limit = cel::PER_CALL_LIMIT.min(self.left);
            let out = program.eval(vars.clone(), limit);
            self.left = self.left.saturating_sub(out.cost);
            let passed = match out.result {
                Ok(Val::Bool(b)) => b,
                Ok(other) => {
                    self.errors.push(invalid_type(format!(
                        "'no such overload: rule returned {}': call arguments did not match a supported operator, function or macro signature for rule: {shown_rule}",
                        other.type_name()
                    )));
                    continue;
                }
                Err(e) if e == cel::COST_EXCEEDED => {
                    let text = if limit < cel::PER_CALL_LIMIT {
                        "validation failed due to running out of cost budget, no further validation rules will be run".to_owned()
                    } else {
                        format!("'{e}': no further validation rules will be run due to call cost exceeds limit for rule: {shown_rule}")
                    };
                    self.errors.push(invalid_type(text));
                    self.stopped = true;
                    return;
                }
                Err(e) if e.starts_with("no such overload") => {
                    self.errors.push(invalid_type(format!(
                        "'{e}': call arguments did not match a supported operator, function or macro signature for rule: {shown_rule}"
                    )));
                    continue;
                }
                Err(e) => {
                    self.errors
                        .push(invalid_type(format!("{e} evaluating rule: {shown_rule}")));
                    continue;
                }
            };
            if passed {
                continue;
            }
            let field = match rule
                .get("fieldPath")
                .and_then(Value::as_str)
                .filter(|p| !p.is_empty())
            {
                Some(fp) => field_path(schema, path, fp).unwrap_or_else(|| here.clone()),
                None => here.clone(),
            };
            let ratcheted = eq && !program.uses_old_self;
            let detail = match self.message_expression(rule, vars) {
                Message::Text(t) => t,
                Message::Fallback => {
                    if message.is_empty() {
                        format!("failed rule: {}", src.trim())
                    } else {
                        message.to_owned()
                    }
                }
                Message::Stop(text) => {
                    // Out of cost in the message: kube-apiserver reports that at the
                    // rule's field and runs no further rule.
                    if !ratcheted {
                        self.errors.push(FieldError {
                            reason: "FieldValueInvalid",
                            field,
                            text: format!("Invalid value: \"{ty}\": {text}"),
                        });
                    }
                    self.stopped = true;
                    return;
                }
            };
            let shown = match ty {
                "object" | "array" => None,
                _ => Some(super::schema::go_value(v)),
            };
            let with_value = |kind: &str, detail: &str| match &shown {
                Some(s) => format!("{kind}: {s}: {detail}"),
                None => format!("{kind}: {detail}"),
            };
            let (reason, text) = match rule.get("reason").and_then(Value::as_str) {
                Some("FieldValueForbidden") => {
                    ("FieldValueForbidden", format!("Forbidden: {detail}"))
                }
                Some("FieldValueRequired") => {
                    ("FieldValueRequired", format!("Required value: {detail}"))
                }
                Some("FieldValueDuplicate") => (
                    "FieldValueDuplicate",
                    shown.as_ref().map_or("Duplicate value".to_owned(), |s| {
                        format!("Duplicate value: {s}")
                    }),
                ),
                _ => ("FieldValueInvalid", with_value("Invalid value", &detail)),
            };
            if ratcheted {
                // Ratcheted: an unchanged value keeps its (old) failure.
                continue;
            }
            self.errors.push(FieldError {
                reason,
                field,
                text,
            });
        }
    }

    /// A rule's `messageExpression`, as kube-apiserver's `evalMessageExpression` takes it
    /// (apiextensions-apiserver `pkg/apiserver/schema/cel/validation.go`): a non-empty
    /// one-line string (trimmed, at most 5 KiB) is the message; an error or any other
    /// result falls back to `message`; running out of cost stops the rules.
    fn message_expression(&mut self, rule: &Value, vars: Vec<(String, Val)>) -> Message {
        let Some(src) = rule.get("messageExpression").and_then(Value::as_str) else {
            return Message::Fallback;
        };
        let Ok(program) = cel::compile(src) else {
            return Message::Fallback;
        };
        let limit = cel::PER_CALL_LIMIT.min(self.left);
        let out = program.eval(vars, limit);
        self.left = self.left.saturating_sub(out.cost);
        match out.result {
            Err(e) if e == cel::COST_EXCEEDED => Message::Stop(if limit < cel::PER_CALL_LIMIT {
                "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run".to_owned()
            } else {
                format!(
                    "no further validation rules will be run due to call cost exceeds limit for messageExpression: {}",
                    super::schema::go_value(&Value::from(src))
                )
            }),
            Ok(Val::Str(s)) => {
                let s = s.trim();
                if !s.is_empty() && s.len() <= MAX_MESSAGE && !s.contains('\n') {
                    Message::Text(s.to_owned())
                } else {
                    Message::Fallback
                }
            }
            _ => Message::Fallback,
        }
    }
}

/// What a rule's `messageExpression` gives.
enum Message {
    /// The message to show.
    Text(String),
    /// None usable: `message` (or `failed rule: ...`) is shown.
    Fallback,
    /// The cost ran out: this cause, and no further rule.
    Stop(String),
}

/// The problems kube-apiserver finds in a CRD's rules when the CRD is written, as far as
/// they are cheap to find without a type checker: a rule or `messageExpression` that does
/// not parse, a `reason` it does not know, a `fieldPath` that names no field, a message
/// with a line break. (Type errors and cost estimates are not checked: such a rule fails
/// when it runs.) `path` is the schema's own (`spec.versions[0].schema.openAPIV3Schema`).
pub(crate) fn check_rules(schema: &Value, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut stack = vec![(schema, path.to_owned())];
    while let Some((s, p)) = stack.pop() {
        let Some(m) = s.as_object() else { continue };
        if let Some(rules) = m.get("x-kubernetes-validations").and_then(Value::as_array) {
            for (i, rule) in rules.iter().enumerate() {
                check_rule(
                    s,
                    rule,
                    &format!("{p}.x-kubernetes-validations[{i}]"),
                    &mut errors,
                );
            }
        }
        if let Some(props) = m.get("properties").and_then(Value::as_object) {
            for (k, v) in props {
                stack.push((v, format!("{p}.properties[{k}]")));
            }
        }
        for k in ["items", "additionalProperties", "not"] {
            if let Some(v) = m.get(k).filter(|v| v.is_object()) {
                stack.push((v, format!("{p}.{k}")));
            }
        }
        for k in ["allOf", "anyOf", "oneOf"] {
            for (i, v) in m
                .get(k)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                stack.push((v, format!("{p}.{k}[{i}]")));
            }
        }
    }
    errors.sort_by(|a, b| a.field.cmp(&b.field));
    errors
}

fn check_rule(schema: &Value, rule: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_owned();
    let src = text(rule.get("rule"));
    let invalid = |field: String, shown: &str, detail: String| FieldError {
        reason: "FieldValueInvalid",
        field,
        text: format!(
            "Invalid value: {}: {detail}",
            super::schema::go_value(&Value::from(shown))
        ),
    };
    if src.trim().is_empty() {
        errors.push(FieldError::required(
            &format!("{at}.rule"),
            "rule is not specified",
        ));
    } else if let Err(e) = cel::compile(&src) {
        errors.push(invalid(
            format!("{at}.rule"),
            &src,
            format!("compilation failed: ERROR: <input>: {e}"),
        ));
    }
    let message = text(rule.get("message"));
    if message.contains('\n') {
        errors.push(invalid(
            format!("{at}.message"),
            &message,
            "message must not contain line breaks".into(),
        ));
    }
    let expr = text(rule.get("messageExpression"));
    if !expr.is_empty() {
        if let Err(e) = cel::compile(&expr) {
            errors.push(invalid(
                format!("{at}.messageExpression"),
                &expr,
                format!("messageExpression compilation failed: ERROR: <input>: {e}"),
            ));
        }
    }
    if let Some(r) = rule.get("reason").and_then(Value::as_str) {
        const REASONS: [&str; 4] = [
            "FieldValueInvalid",
            "FieldValueForbidden",
            "FieldValueRequired",
            "FieldValueDuplicate",
        ];
        if !REASONS.contains(&r) {
            let supported = REASONS
                .iter()
                .map(|r| format!("\"{r}\""))
                .collect::<Vec<_>>()
                .join(", ");
            errors.push(FieldError {
                reason: "FieldValueNotSupported",
                field: format!("{at}.reason"),
                text: format!(
                    "Unsupported value: {}: supported values: {supported}",
                    super::schema::go_value(&Value::from(r))
                ),
            });
        }
    }
    let fp = text(rule.get("fieldPath"));
    if !fp.is_empty() && field_path(schema, "", &fp).is_none() {
        errors.push(invalid(
            format!("{at}.fieldPath"),
            &fp,
            "fieldPath must be a valid path".into(),
        ));
    }
}

/// The items of an old list, ready to be matched with the new list's: by their key fields
/// in an `x-kubernetes-list-type: map` list, by value in a `set`; none in an atomic list.
/// Indexed once per list (kube-apiserver's correlation keeps a map too): matching each new
/// item by a scan of the old list was quadratic, and an update of a list of 100,000 items
/// under a rule held a server thread for minutes.
struct OldItems<'o> {
    keys: Option<Vec<&'o str>>,
    index: std::collections::HashMap<String, &'o Value>,
}

impl<'o> OldItems<'o> {
    fn new(schema: &'o Value, old: &'o [Value]) -> Self {
        let keys = match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
            Some("map") => Some(
                schema
                    .get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .map(|ks| ks.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default(),
            ),
            Some("set") => None,
            _ => {
                return OldItems {
                    keys: None,
                    index: Default::default(),
                }
            }
        };
        let mut out = OldItems {
            keys,
            index: Default::default(),
        };
        if out.keys.as_ref().is_some_and(Vec::is_empty) {
            // A map list without keys matches nothing (kube-apiserver refuses the CRD).
            return out;
        }
        for o in old {
            // The first of equal old items is the one matched, as a scan would find.
            out.index.entry(out.key(o)).or_insert(o);
        }
        out
    }

    /// What identifies `item`: its key fields' values (a missing one apart from `null`),
    /// or, in a set, the item itself. serde_json's text of equal scalars is equal (and
    /// sets and map keys are scalars; a set of objects compares by text in key order).
    fn key(&self, item: &Value) -> String {
        match &self.keys {
            Some(keys) => keys
                .iter()
                .map(|k| item.get(k).map_or("\u{0}".to_owned(), Value::to_string))
                .collect::<Vec<_>>()
                .join("\u{1}"),
            None => item.to_string(),
        }
    }

    fn matching(&self, item: &Value) -> Option<&'o Value> {
        if self.index.is_empty() {
            return None;
        }
        self.index.get(&self.key(item)).copied()
    }
}

/// A rule's `fieldPath` (`.a.b`, `['a.b']`) from the node at `path`, as kube-apiserver
/// writes it: a property as `.name`, a map key as `[key]`.
fn field_path(schema: &Value, path: &str, fp: &str) -> Option<String> {
    let mut out = path.to_owned();
    let mut s = schema;
    let mut rest = fp;
    while !rest.is_empty() {
        let name: String;
        if let Some(r) = rest.strip_prefix("['") {
            let end = r.find("']")?;
            name = r[..end].replace("\\'", "'").replace("\\\\", "\\");
            rest = &r[end + 2..];
        } else if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            name = r[..end].to_owned();
            rest = &r[end..];
        } else {
            return None;
        }
        if let Some(p) = s.get("properties").and_then(|p| p.get(&name)) {
            out = child(&out, &name);
            s = p;
        } else if let Some(a) = s.get("additionalProperties").filter(|a| a.is_object()) {
            out = format!("{}[{name}]", shown_path(&out));
            s = a;
        } else {
            return None;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(schema: &Value, obj: &Value, old: &Value) -> Vec<(String, String)> {
        let meta = Map::new();
        let root = Root {
            api_version: "x.example.com/v1",
            kind: "X",
            meta: &meta,
        };
        validate(schema, root, obj.as_object().unwrap(), old.as_object(), &[])
            .into_iter()
            .map(|e| (e.field, e.text))
            .collect()
    }

    fn schema(list_type: Value) -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "items": {"type": "array", "x-kubernetes-list-type": list_type,
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer"}},
                    "x-kubernetes-validations": [{"rule": "self.n >= oldSelf.n", "message": "n only grows"}]}}}}}})
    }

    /// An update of a long `x-kubernetes-list-type: map` list under a transition rule:
    /// each new item meets its old one by key through an index. It used to scan the old
    /// list for every item (40,000 items: 8e8 comparisons of objects, minutes of a server
    /// thread). The bound is generous (the run takes seconds); the old code missed it.
    #[test]
    fn long_list_maps_meet_their_old_items_at_once() {
        let n = 40_000;
        let list = move |lowered: usize| -> Value {
            let items: Vec<Value> = (0..n)
                .map(|i| json!({"name": format!("n{i}"), "n": if i == lowered { 0 } else { 5 }}))
                .collect();
            json!({"spec": {"items": items}})
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let schema = schema(json!("map"));
            let _ = tx.send(check(&schema, &list(37_777), &list(n)));
        });
        let errors = rx
            .recv_timeout(std::time::Duration::from_secs(90))
            .expect("an update of 40,000 list-map items was not checked in 90 s");
        assert_eq!(
            errors,
            vec![(
                "spec.items[37777]".to_owned(),
                "Invalid value: n only grows".to_owned()
            )]
        );
    }

    /// Matching is unchanged: by key in a map list (the first of equal keys, a missing key
    /// apart from a `null` one), by value in a set, never in an atomic list.
    #[test]
    fn old_items_match_as_before() {
        let old =
            json!({"spec": {"items": [{"name": "a", "n": 5}, {"n": 5}, {"name": null, "n": 1}]}});
        let new = json!({"spec": {"items": [{"n": 4}, {"name": "a", "n": 4}, {"name": null, "n": 0}, {"name": "b", "n": 0}]}});
        let errs = check(&schema(json!("map")), &new, &old);
        let fields: Vec<&str> = errs.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(fields, ["spec.items[0]", "spec.items[1]", "spec.items[2]"]);
        // A set matches whole items: only an unchanged one has an old value (which passes).
        let errs = check(&schema(json!("set")), &new, &old);
        assert!(errs.is_empty(), "{errs:?}");
        let errs = check(&schema(json!("atomic")), &new, &old);
        assert!(errs.is_empty(), "{errs:?}");
    }
}
