//! A JSON patch (RFC 6902) that turns one document into another: what a mutating webhook
//! answers with, computed from the object the hook was given and the one it returns.
//!
//! Why our own: kube-apiserver applies the patch with a strict RFC 6902 library, so the
//! patch must be correct for any pair of documents; it should also be small, since it
//! travels base64-encoded and shows up in audit logs. The rules:
//! - objects are compared key by key: `remove` for a key that went, `add` for a new one,
//!   and a recursion into a key present on both sides;
//! - arrays of the same length are compared element by element; an array that only grew at
//!   its end gets `add`s at the end, one that only shrank at its end gets `remove`s from the
//!   end (highest index first, so that every index is valid when applied); any other change
//!   of an array replaces it whole (no move detection: correct, and small enough for
//!   the label and container lists webhooks edit);
//! - anything else that differs (a scalar, a change of type) is one `replace`.
//!
//! JSON Pointer tokens are escaped (`~` as `~0`, `/` as `~1`), so label keys such as
//! `example.com/tier` are safe. Removals and changes come in the old document's key order,
//! then additions in the new one's.

use serde_json::{json, Map, Value};

/// The operations that turn `from` into `to` (empty when they are equal).
///
/// ```
/// use kube_informer::webhook::json_diff;
/// use serde_json::json;
///
/// let before = json!({"metadata": {"name": "a"}});
/// let after = json!({"metadata": {"name": "a", "labels": {"example.com/tier": "web"}}});
/// assert_eq!(
///     json_diff(&before, &after),
///     vec![json!({"op": "add", "path": "/metadata/labels", "value": {"example.com/tier": "web"}})]
/// );
/// ```
pub fn json_diff(from: &Value, to: &Value) -> Vec<Value> {
    let mut ops = Vec::new();
    let mut path = String::new();
    diff(from, to, &mut path, &mut ops);
    ops
}

/// One token of a JSON Pointer, escaped.
fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

fn diff(from: &Value, to: &Value, path: &mut String, ops: &mut Vec<Value>) {
    if from == to {
        return;
    }
    match (from, to) {
        (Value::Object(a), Value::Object(b)) => diff_objects(a, b, path, ops),
        (Value::Array(a), Value::Array(b)) => diff_arrays(a, b, path, ops),
        _ => ops.push(json!({"op": "replace", "path": path.as_str(), "value": to})),
    }
}

fn diff_objects(
    a: &Map<String, Value>,
    b: &Map<String, Value>,
    path: &mut String,
    ops: &mut Vec<Value>,
) {
    let len = path.len();
    for (k, va) in a {
        path.push('/');
        path.push_str(&escape(k));
        match b.get(k) {
            None => ops.push(json!({"op": "remove", "path": path.as_str()})),
            Some(vb) => diff(va, vb, path, ops),
        }
        path.truncate(len);
    }
    for (k, vb) in b {
        if !a.contains_key(k) {
            path.push('/');
            path.push_str(&escape(k));
            ops.push(json!({"op": "add", "path": path.as_str(), "value": vb}));
            path.truncate(len);
        }
    }
}

fn diff_arrays(a: &[Value], b: &[Value], path: &mut String, ops: &mut Vec<Value>) {
    let len = path.len();
    let common = a.len().min(b.len());
    let prefix_same = a[..common] == b[..common];
    if a.len() == b.len() {
        for (i, (va, vb)) in a.iter().zip(b).enumerate() {
            path.push_str(&format!("/{i}"));
            diff(va, vb, path, ops);
            path.truncate(len);
        }
    } else if prefix_same && b.len() > a.len() {
        for (i, vb) in b.iter().enumerate().skip(a.len()) {
            path.push_str(&format!("/{i}"));
            ops.push(json!({"op": "add", "path": path.as_str(), "value": vb}));
            path.truncate(len);
        }
    } else if prefix_same {
        for i in (b.len()..a.len()).rev() {
            path.push_str(&format!("/{i}"));
            ops.push(json!({"op": "remove", "path": path.as_str()}));
            path.truncate(len);
        }
    } else {
        ops.push(json!({"op": "replace", "path": path.as_str(), "value": b}));
    }
}

#[cfg(all(test, feature = "testing"))]
mod tests {
    use super::*;
    use crate::testing::json_patch::apply as apply_json_patch;

    fn check(a: Value, b: Value) -> Vec<Value> {
        let ops = json_diff(&a, &b);
        let applied = apply_json_patch(&a, &Value::Array(ops.clone())).expect("the patch applies");
        assert_eq!(applied, b, "patch {ops:?}");
        ops
    }

    #[test]
    fn equal_documents_give_no_operation() {
        assert!(check(json!({"a": [1, {"b": 2}]}), json!({"a": [1, {"b": 2}]})).is_empty());
    }

    #[test]
    fn objects_add_remove_and_recurse() {
        let ops = check(
            json!({"metadata": {"name": "a", "labels": {"x": "1", "gone": "y"}}, "data": {"k": "v"}}),
            json!({"metadata": {"name": "a", "labels": {"x": "2", "a/b~c": "z"}}, "data": {"k": "v"}}),
        );
        assert_eq!(
            ops,
            vec![
                json!({"op": "remove", "path": "/metadata/labels/gone"}),
                json!({"op": "replace", "path": "/metadata/labels/x", "value": "2"}),
                json!({"op": "add", "path": "/metadata/labels/a~1b~0c", "value": "z"}),
            ]
        );
    }

    #[test]
    fn arrays_grow_shrink_and_change() {
        let ops = check(json!({"l": [1, 2]}), json!({"l": [1, 2, 3, 4]}));
        assert_eq!(ops.len(), 2);
        let ops = check(json!({"l": [1, 2, 3, 4]}), json!({"l": [1]}));
        assert_eq!(ops[0], json!({"op": "remove", "path": "/l/3"}));
        check(json!({"l": [1, 2, 3]}), json!({"l": [3, 1]}));
        check(
            json!({"l": [{"a": 1}, {"b": 2}]}),
            json!({"l": [{"a": 1}, {"b": 3}]}),
        );
        check(json!({"l": []}), json!({"l": [null]}));
    }

    #[test]
    fn types_change_and_the_root_is_replaced() {
        check(json!({"a": {"b": 1}}), json!({"a": [1]}));
        check(json!({"a": 1}), json!([1, 2]));
        check(json!(null), json!({"a": 1}));
        check(json!({"a": null}), json!({}));
    }

    #[test]
    fn a_mixed_pair_of_documents() {
        // A handful of shapes mixed, as a property check without a random source.
        let docs = [
            json!({}),
            json!({"a": 1, "b": [1, 2, {"c": "d"}], "e": {"f": null}}),
            json!({"a": "1", "b": [1, {"c": "x"}], "e": {"g": true}}),
            json!({"b": [1, 2, {"c": "d"}, 4, 5], "e": []}),
            json!({"a/b": {"~": [[], [1]]}}),
        ];
        for a in &docs {
            for b in &docs {
                check(a.clone(), b.clone());
            }
        }
    }
}
