//! JSON patch (RFC 6902) as kube-apiserver applies it (`application/json-patch+json`).
//!
//! A pure function on `serde_json::Value`: the handler turns its errors into the Status
//! bodies the captures show. All six operations (`add`, `remove`, `replace`, `move`, `copy`,
//! `test`) and JSON Pointers (RFC 6901: `~1` is `/`, `~0` is `~`; array indices without
//! leading zeros; `-` for "after the last element" where adding).
//!
//! Where the real server departs from the RFC, this follows the server (the captures):
//! - `replace` of a key missing from an object ADDS it (the RFC says it must fail);
//! - `test` of a key missing from an object passes when the expected value is `null` (the
//!   patch library the server uses reads a missing key as `null`);
//! - every failure of an operation (a failing `test`, an `add` under a missing parent, a
//!   `remove` of an absent key, an index out of range) gives the same generic 422, with
//!   nothing saying which operation failed ([`PatchError::Rejected`]); a patch that is not a
//!   JSON array is a decoding error (400, [`PatchError::NotArray`]).
//!
//! The patch is applied to a copy: a failing operation leaves the object untouched.

use serde_json::Value;

/// Why a JSON patch was not applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PatchError {
    /// The body is not a JSON array (the server answers 400 "error decoding patch").
    /// Carries the JSON type name found ("object", "string", ...).
    NotArray(&'static str),
    /// An operation is malformed or failed (the server answers one generic 422).
    /// Carries what went wrong, for logs and unit tests only.
    Rejected(String),
}

fn rejected(why: impl Into<String>) -> PatchError {
    PatchError::Rejected(why.into())
}

/// The JSON type name Go's decoder reports ("cannot unmarshal object into ...").
pub(crate) fn go_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Applies `patch` (an array of operations) to a copy of `doc` and returns the result.
pub(crate) fn apply(doc: &Value, patch: &Value) -> Result<Value, PatchError> {
    let ops = match patch {
        Value::Array(ops) => ops,
        // `null` decodes to an empty list in Go.
        Value::Null => return Ok(doc.clone()),
        other => return Err(PatchError::NotArray(go_type_name(other))),
    };
    let mut out = doc.clone();
    for (i, op) in ops.iter().enumerate() {
        apply_op(&mut out, op).map_err(|e| match e {
            PatchError::Rejected(why) => rejected(format!("operation {i}: {why}")),
            other => other,
        })?;
    }
    Ok(out)
}

fn str_field<'a>(op: &'a Value, name: &str) -> Result<&'a str, PatchError> {
    op.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| rejected(format!("missing or non-string {name:?}")))
}

fn value_field(op: &Value) -> Result<Value, PatchError> {
    match op.as_object() {
        Some(m) => m
            .get("value")
            .cloned()
            .ok_or_else(|| rejected("missing \"value\"")),
        None => Err(rejected("an operation must be an object")),
    }
}

fn apply_op(doc: &mut Value, op: &Value) -> Result<(), PatchError> {
    let kind = str_field(op, "op")?;
    let path = parse_pointer(str_field(op, "path")?)?;
    match kind {
        "add" => add(doc, &path, value_field(op)?),
        "remove" => remove(doc, &path).map(drop),
        "replace" => replace(doc, &path, value_field(op)?),
        "move" => {
            let from = parse_pointer(str_field(op, "from")?)?;
            if from == path {
                return get(doc, &from)
                    .map(drop)
                    .ok_or_else(|| rejected("move from a missing location"));
            }
            if path.len() > from.len() && path[..from.len()] == from[..] {
                return Err(rejected("cannot move a value into one of its children"));
            }
            let v = remove(doc, &from)?;
            add(doc, &path, v)
        }
        "copy" => {
            let from = parse_pointer(str_field(op, "from")?)?;
            let v = get(doc, &from)
                .cloned()
                .ok_or_else(|| rejected("copy from a missing location"))?;
            add(doc, &path, v)
        }
        "test" => {
            let expected = value_field(op)?;
            match get(doc, &path) {
                Some(actual) if *actual == expected => Ok(()),
                None if expected.is_null() && parent_is_object(doc, &path) => Ok(()),
                _ => Err(rejected("test failed")),
            }
        }
        other => Err(rejected(format!("unknown operation {other:?}"))),
    }
}

/// Splits a JSON Pointer into its unescaped tokens; `""` is the whole document.
pub(crate) fn parse_pointer(p: &str) -> Result<Vec<String>, PatchError> {
    if p.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = p.strip_prefix('/') else {
        return Err(rejected(format!("pointer {p:?} does not start with '/'")));
    };
    rest.split('/')
        .map(|t| {
            if t.contains('~') {
                let mut out = String::with_capacity(t.len());
                let mut chars = t.chars();
                while let Some(c) = chars.next() {
                    if c == '~' {
                        match chars.next() {
                            Some('0') => out.push('~'),
                            Some('1') => out.push('/'),
                            _ => return Err(rejected(format!("bad escape in pointer {p:?}"))),
                        }
                    } else {
                        out.push(c);
                    }
                }
                Ok(out)
            } else {
                Ok(t.to_owned())
            }
        })
        .collect()
}

/// An array index token: digits, no leading zero (except `0` itself).
fn index(token: &str) -> Option<usize> {
    if token.is_empty()
        || !token.bytes().all(|b| b.is_ascii_digit())
        || (token.len() > 1 && token.starts_with('0'))
    {
        return None;
    }
    token.parse().ok()
}

fn get<'a>(doc: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(doc, |v, t| match v {
        Value::Object(m) => m.get(t),
        Value::Array(a) => index(t).and_then(|i| a.get(i)),
        _ => None,
    })
}

fn get_mut<'a>(doc: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    path.iter().try_fold(doc, |v, t| match v {
        Value::Object(m) => m.get_mut(t),
        Value::Array(a) => index(t).and_then(|i| a.get_mut(i)),
        _ => None,
    })
}

fn parent_is_object(doc: &Value, path: &[String]) -> bool {
    match path.split_last() {
        Some((_, parent)) => get(doc, parent).is_some_and(Value::is_object),
        None => false,
    }
}

fn add(doc: &mut Value, path: &[String], value: Value) -> Result<(), PatchError> {
    let Some((last, parent)) = path.split_last() else {
        *doc = value;
        return Ok(());
    };
    match get_mut(doc, parent) {
        Some(Value::Object(m)) => {
            m.insert(last.clone(), value);
            Ok(())
        }
        Some(Value::Array(a)) => {
            let i = if last == "-" {
                a.len()
            } else {
                index(last).ok_or_else(|| rejected(format!("bad array index {last:?}")))?
            };
            if i > a.len() {
                return Err(rejected(format!("index {i} out of range")));
            }
            a.insert(i, value);
            Ok(())
        }
        Some(_) => Err(rejected("the parent is not a container")),
        None => Err(rejected("the parent does not exist")),
    }
}

fn remove(doc: &mut Value, path: &[String]) -> Result<Value, PatchError> {
    let Some((last, parent)) = path.split_last() else {
        return Err(rejected("cannot remove the whole document"));
    };
    match get_mut(doc, parent) {
        Some(Value::Object(m)) => m
            .remove(last)
            .ok_or_else(|| rejected(format!("no key {last:?} to remove"))),
        Some(Value::Array(a)) => match index(last) {
            Some(i) if i < a.len() => Ok(a.remove(i)),
            _ => Err(rejected(format!("bad array index {last:?}"))),
        },
        _ => Err(rejected("the parent does not exist")),
    }
}

fn replace(doc: &mut Value, path: &[String], value: Value) -> Result<(), PatchError> {
    let Some((last, parent)) = path.split_last() else {
        *doc = value;
        return Ok(());
    };
    match get_mut(doc, parent) {
        // The server's quirk: a missing key is added.
        Some(Value::Object(m)) => {
            m.insert(last.clone(), value);
            Ok(())
        }
        Some(Value::Array(a)) => match index(last) {
            Some(i) if i < a.len() => {
                a[i] = value;
                Ok(())
            }
            _ => Err(rejected(format!("bad array index {last:?}"))),
        },
        _ => Err(rejected("the parent does not exist")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(doc: Value, patch: Value) -> Value {
        apply(&doc, &patch).unwrap()
    }

    fn err(doc: Value, patch: Value) -> PatchError {
        apply(&doc, &patch).unwrap_err()
    }

    /// `doc` after the one operation `op`, read at the JSON pointer `at` (`""`: all of it).
    fn after(doc: &Value, op: Value, at: &str) -> Value {
        let patched = ok(doc.clone(), Value::Array(vec![op]));
        patched
            .pointer(at)
            .cloned()
            .unwrap_or_else(|| panic!("nothing at {at:?} in {patched}"))
    }

    /// Whether the one operation `op` on `doc` is refused as kube-apiserver refuses it.
    fn refused(doc: &Value, op: Value) -> bool {
        matches!(
            err(doc.clone(), Value::Array(vec![op])),
            PatchError::Rejected(_)
        )
    }

    #[test]
    fn add_sets_keys_and_inserts_into_arrays() {
        let doc = json!({"a": {"b": 1}, "l": [1, 2]});
        assert_eq!(
            after(&doc, json!({"op": "add", "path": "/a/c", "value": 2}), ""),
            json!({"a": {"b": 1, "c": 2}, "l": [1, 2]})
        );
        assert_eq!(
            after(
                &doc,
                json!({"op": "add", "path": "/a/b", "value": 9}),
                "/a/b"
            ),
            json!(9)
        );
        assert_eq!(
            after(&doc, json!({"op": "add", "path": "/l/0", "value": 0}), "/l"),
            json!([0, 1, 2])
        );
        assert_eq!(
            after(&doc, json!({"op": "add", "path": "/l/2", "value": 3}), "/l"),
            json!([1, 2, 3])
        );
        assert_eq!(
            after(&doc, json!({"op": "add", "path": "/l/-", "value": 3}), "/l"),
            json!([1, 2, 3])
        );
        assert_eq!(
            after(&doc, json!({"op": "add", "path": "", "value": [1]}), ""),
            json!([1])
        );
        for bad in ["/l/3", "/l/01", "/l/x", "/nope/a", "/a/b/c"] {
            assert!(
                refused(&doc, json!({"op": "add", "path": bad, "value": 1})),
                "{bad}"
            );
        }
    }

    #[test]
    fn remove_needs_the_target() {
        let doc = json!({"a": {"b": 1, "c": 2}, "l": [1, 2, 3]});
        assert_eq!(
            after(&doc, json!({"op": "remove", "path": "/a/b"}), "/a"),
            json!({"c": 2})
        );
        assert_eq!(
            after(&doc, json!({"op": "remove", "path": "/l/1"}), "/l"),
            json!([1, 3])
        );
        for bad in ["/a/x", "/l/3", "/l/-", "/x/y", ""] {
            assert!(refused(&doc, json!({"op": "remove", "path": bad})));
        }
    }

    #[test]
    fn replace_adds_a_missing_key_like_the_server() {
        let doc = json!({"data": {"size": "1"}, "l": [1]});
        assert_eq!(
            after(
                &doc,
                json!({"op": "replace", "path": "/data/nosuchkey", "value": "3"}),
                "/data"
            ),
            json!({"size": "1", "nosuchkey": "3"})
        );
        assert_eq!(
            after(
                &doc,
                json!({"op": "replace", "path": "/l/0", "value": 5}),
                "/l"
            ),
            json!([5])
        );
        for op in [
            json!({"op": "replace", "path": "/l/1", "value": 5}),
            json!({"op": "replace", "path": "/x/y", "value": 5}),
        ] {
            assert!(refused(&doc, op.clone()), "{op}");
        }
    }

    #[test]
    fn move_and_copy() {
        let doc = json!({"a": {"b": [1, 2]}, "c": {}});
        assert_eq!(
            after(
                &doc,
                json!({"op": "move", "from": "/a/b", "path": "/c/d"}),
                ""
            ),
            json!({"a": {}, "c": {"d": [1, 2]}})
        );
        assert_eq!(
            after(
                &doc,
                json!({"op": "move", "from": "/a/b/0", "path": "/a/b/-"}),
                "/a/b"
            ),
            json!([2, 1])
        );
        assert_eq!(
            after(
                &doc,
                json!({"op": "copy", "from": "/a/b", "path": "/c/d"}),
                ""
            ),
            json!({"a": {"b": [1, 2]}, "c": {"d": [1, 2]}})
        );
        for op in [
            json!({"op": "move", "from": "/a", "path": "/a/x"}),
            json!({"op": "copy", "from": "/zz", "path": "/c/d"}),
        ] {
            assert!(refused(&doc, op.clone()), "{op}");
        }
    }

    #[test]
    fn test_op_compares_deeply_and_failure_undoes_nothing_half_way() {
        let doc = json!({"data": {"size": "1"}, "n": [1, {"x": true}]});
        let patched = ok(
            doc.clone(),
            json!([
                {"op": "test", "path": "/data/size", "value": "1"},
                {"op": "test", "path": "/n", "value": [1, {"x": true}]},
                {"op": "test", "path": "/data/absent", "value": null},
                {"op": "replace", "path": "/data/size", "value": "2"}
            ]),
        );
        assert_eq!(patched["data"]["size"], json!("2"));
        let e = err(
            doc.clone(),
            json!([
                {"op": "replace", "path": "/data/size", "value": "3"},
                {"op": "test", "path": "/data/size", "value": "999"}
            ]),
        );
        assert!(matches!(e, PatchError::Rejected(ref w) if w.contains("operation 1")));
        for op in [
            json!({"op": "test", "path": "/data/absent", "value": "x"}),
            json!({"op": "test", "path": "/n/0", "value": "1"}),
        ] {
            assert!(refused(&doc, op.clone()), "{op}");
        }
    }

    #[test]
    fn pointers_unescape_tilde_and_slash() {
        assert_eq!(
            parse_pointer("/a~1b/c~0d/~01").unwrap(),
            vec!["a/b", "c~d", "~1"]
        );
        assert_eq!(parse_pointer("").unwrap(), Vec::<String>::new());
        assert_eq!(parse_pointer("/").unwrap(), vec![""]);
        assert!(parse_pointer("a").is_err());
        assert!(parse_pointer("/a~2").is_err());
        assert!(parse_pointer("/a~").is_err());
        let doc = json!({"metadata": {"annotations": {"example.com/x": "1", "t~": "2"}}});
        let out = ok(
            doc,
            json!([
                {"op": "replace", "path": "/metadata/annotations/example.com~1x", "value": "9"},
                {"op": "remove", "path": "/metadata/annotations/t~0"}
            ]),
        );
        assert_eq!(
            out["metadata"]["annotations"],
            json!({"example.com/x": "9"})
        );
    }

    #[test]
    fn malformed_patches() {
        let doc = json!({});
        assert_eq!(
            err(doc.clone(), json!({"op": "remove", "path": "/a"})),
            PatchError::NotArray("object")
        );
        assert_eq!(err(doc.clone(), json!("x")), PatchError::NotArray("string"));
        assert_eq!(ok(doc.clone(), json!(null)), doc);
        assert_eq!(ok(doc.clone(), json!([])), doc);
        for bad in [
            json!([1]),
            json!([{"op": "add", "path": "/a"}]),
            json!([{"op": "frob", "path": "/a"}]),
            json!([{"path": "/a"}]),
            json!([{"op": "move", "path": "/a"}]),
        ] {
            assert!(matches!(err(doc.clone(), bad), PatchError::Rejected(_)));
        }
    }
}
