//! Strategic merge patch (`application/strategic-merge-patch+json`) for built-in types, and
//! the rule that tells built-in resources from custom ones.
//!
//! A strategic merge patch is a JSON merge patch (objects merged, `null` deletes a key) where
//! some lists are merged element by element instead of replaced: the real server reads which
//! ones from the Go types (`patchStrategy:"merge"`, `patchMergeKey`). The test server has no Go
//! types, so it keys the decision on the list's FIELD NAME, which for the built-in types our
//! tests and examples use gives the same answer:
//!
//! | field | merge key |
//! |---|---|
//! | `containers`, `initContainers`, `ephemeralContainers`, `env`, `volumes`, `imagePullSecrets`, `resourceClaims` | `name` |
//! | `volumeMounts` | `mountPath` |
//! | `volumeDevices` | `devicePath` |
//! | `ports` | `containerPort` (container ports), else `port` (Service ports) |
//! | `conditions`, `addresses` | `type` |
//! | `podIPs`, `hostIPs`, `hostAliases` | `ip` |
//! | `ownerReferences` | `uid` |
//! | `taints` | `key` |
//! | `topologySpreadConstraints` | `topologyKey` |
//! | `finalizers` | merged as a set of strings |
//!
//! Every other list (`tolerations`, `args`, `command`, `envFrom`, ...) is replaced whole, as
//! the server does for lists without a merge strategy. Simplifications: the table is by field
//! name wherever the field sits (a custom field called `conditions` inside a built-in object
//! would also be merged); Service ports are keyed by `port` only (the server keys them by
//! `port` and `protocol`).
//!
//! Order of a merged list, as the captures show: the patch's elements in the patch's order
//! and the elements only the live object has in their order, interleaved by each element's
//! position in the live list (an element new to the list counts as position -1, so a new
//! condition lands BEFORE the existing ones, while a new container that follows one already
//! present in the patch lands after it).
//!
//! Directives: `$patch: replace` and `$patch: delete` in a map or in a list element,
//! `$deleteFromPrimitiveList/<field>`, `$retainKeys`, and `$setElementOrder/<field>` (the
//! elements it names take the patch's place in the rule above, in its order).
//!
//! Custom resources get HTTP 415 for this patch type (decided in [`patch`](super::patch) by
//! [`is_builtin_group`](crate::testing::is_builtin_group), the one rule the test server uses to tell
//! built-in resources from custom ones).

use serde_json::{Map, Value};

/// The merge key of a list field, or `None` when the list is replaced whole.
fn merge_key(field: &str, items: &[&Value]) -> Option<ListKind> {
    let key = match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets"
        | "resourceClaims" => "name",
        "volumeMounts" => "mountPath",
        "volumeDevices" => "devicePath",
        "ports" => {
            if items.iter().any(|i| i.get("containerPort").is_some()) {
                "containerPort"
            } else {
                "port"
            }
        }
        "conditions" | "addresses" => "type",
        "podIPs" | "hostIPs" | "hostAliases" => "ip",
        "ownerReferences" => "uid",
        "taints" => "key",
        "topologySpreadConstraints" => "topologyKey",
        "finalizers" => return Some(ListKind::Set),
        _ => return None,
    };
    Some(ListKind::Keyed(key))
}

#[derive(Clone, Copy)]
enum ListKind {
    Keyed(&'static str),
    Set,
}

/// Why a strategic merge patch was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SmpError(pub String);

/// Applies a strategic merge patch to a copy of `doc`.
pub(crate) fn apply(doc: &Value, patch: &Value) -> Result<Value, SmpError> {
    let Value::Object(p) = patch else {
        return Err(SmpError(
            "a strategic merge patch must be a JSON object".into(),
        ));
    };
    let mut out = doc.clone();
    if !out.is_object() {
        out = Value::Object(Map::new());
    }
    match merge_map(out.as_object().cloned().unwrap_or_default(), p)? {
        Some(m) => Ok(Value::Object(m)),
        None => Ok(Value::Object(Map::new())),
    }
}

/// Merges `patch` into `orig`; `None` when the patch deletes the whole map.
fn merge_map(
    mut orig: Map<String, Value>,
    patch: &Map<String, Value>,
) -> Result<Option<Map<String, Value>>, SmpError> {
    match patch.get("$patch").and_then(Value::as_str) {
        Some("delete") => return Ok(None),
        Some("replace") => {
            let mut p = patch.clone();
            p.remove("$patch");
            return Ok(Some(strip_directives(p)));
        }
        Some(other) => return Err(SmpError(format!("unknown patch directive {other:?}"))),
        None => {}
    }
    // Values to take out of primitive lists.
    for (k, v) in patch {
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(list)), Value::Array(gone)) = (orig.get_mut(field), v) {
                list.retain(|x| !gone.contains(x));
            }
        }
    }
    for (k, v) in patch {
        if k.starts_with('$') {
            continue;
        }
        match v {
            Value::Null => {
                orig.remove(k);
            }
            Value::Object(pm) => {
                let current = match orig.remove(k) {
                    Some(Value::Object(m)) => m,
                    _ => Map::new(),
                };
                if let Some(m) = merge_map(current, pm)? {
                    orig.insert(k.clone(), Value::Object(m));
                }
            }
            Value::Array(pl) => {
                let current = orig.remove(k);
                let order = patch
                    .get(&format!("$setElementOrder/{k}"))
                    .and_then(Value::as_array)
                    .map(Vec::as_slice);
                let merged = match current {
                    Some(Value::Array(ol)) => merge_list(k, ol, pl, order)?,
                    _ => merge_list(k, Vec::new(), pl, order)?,
                };
                orig.insert(k.clone(), Value::Array(merged));
            }
            scalar => {
                orig.insert(k.clone(), scalar.clone());
            }
        }
    }
    if let Some(Value::Array(keep)) = patch.get("$retainKeys") {
        orig.retain(|k, _| keep.iter().any(|x| x.as_str() == Some(k)));
    }
    Ok(Some(orig))
}

/// A patch value as it is stored when nothing is there to merge with.
fn strip_directives(mut m: Map<String, Value>) -> Map<String, Value> {
    m.retain(|k, _| !k.starts_with('$'));
    for v in m.values_mut() {
        strip_value(v);
    }
    m
}

fn strip_value(v: &mut Value) {
    match v {
        Value::Object(m) => *m = strip_directives(std::mem::take(m)),
        Value::Array(l) => {
            l.retain(|i| i.get("$patch").is_none());
            l.iter_mut().for_each(strip_value);
        }
        _ => {}
    }
}

fn merge_list(
    field: &str,
    orig: Vec<Value>,
    patch: &[Value],
    order: Option<&[Value]>,
) -> Result<Vec<Value>, SmpError> {
    let all: Vec<&Value> = orig.iter().chain(patch.iter()).collect();
    let kind = match merge_key(field, &all) {
        Some(k)
            if patch
                .iter()
                .all(|i| matches!(k, ListKind::Set) || i.is_object()) =>
        {
            k
        }
        _ => {
            let mut l = patch.to_vec();
            l.iter_mut().for_each(strip_value);
            return Ok(l);
        }
    };
    if patch
        .iter()
        .any(|i| i.get("$patch").and_then(Value::as_str) == Some("replace"))
    {
        let mut l: Vec<Value> = patch
            .iter()
            .filter(|i| i.get("$patch").is_none())
            .cloned()
            .collect();
        l.iter_mut().for_each(strip_value);
        return Ok(l);
    }
    let key_of = |v: &Value| -> Value {
        match kind {
            ListKind::Set => v.clone(),
            ListKind::Keyed(k) => v.get(k).cloned().unwrap_or(Value::Null),
        }
    };
    let orig_keys: Vec<Value> = orig.iter().map(key_of).collect();
    let pos = |key: &Value| -> i64 {
        orig_keys
            .iter()
            .position(|k| k == key)
            .map_or(-1, |p| p as i64)
    };
    let mut merged: Vec<Option<Value>> = orig.into_iter().map(Some).collect();
    // The patch's elements (merged with their live counterparts), in the patch's order.
    let mut from_patch: Vec<(i64, Value)> = Vec::new();
    for item in patch {
        let key = key_of(item);
        if let ListKind::Keyed(k) = kind {
            if item.get(k).is_none() {
                return Err(SmpError(format!(
                    "map in the list {field} does not contain its merge key {k:?}"
                )));
            }
        }
        let p = pos(&key);
        let deleting = item.get("$patch").and_then(Value::as_str) == Some("delete");
        let existing = usize::try_from(p).ok().and_then(|i| merged[i].take());
        if deleting {
            continue;
        }
        if from_patch.iter().any(|(_, v)| key_of(v) == key) {
            continue;
        }
        let value = match (kind, existing, item) {
            (ListKind::Keyed(_), Some(Value::Object(o)), Value::Object(pm)) => {
                match merge_map(o, pm)? {
                    Some(m) => Value::Object(m),
                    None => continue,
                }
            }
            (_, _, v) => {
                let mut v = v.clone();
                strip_value(&mut v);
                v
            }
        };
        from_patch.push((p, value));
    }
    let mut server_only: Vec<(i64, Value)> = merged
        .into_iter()
        .enumerate()
        .filter_map(|(i, v)| v.map(|v| (i as i64, v)))
        .collect();
    if let Some(order) = order {
        // `$setElementOrder`: the elements it names, in its order, take the patch's place.
        let wanted: Vec<Value> = order.iter().map(key_of).collect();
        let (mut named, rest): (Vec<_>, Vec<_>) = from_patch
            .into_iter()
            .chain(server_only)
            .partition(|(_, v)| wanted.contains(&key_of(v)));
        named.sort_by_key(|(_, v)| wanted.iter().position(|w| *w == key_of(v)));
        from_patch = named;
        server_only = rest;
    }
    // Interleave by position in the live list: a live-only element goes first when the
    // patch's next element is further down the live list; an element new to the live list
    // (-1) never waits.
    let mut out = Vec::with_capacity(from_patch.len() + server_only.len());
    let (mut a, mut b) = (
        from_patch.into_iter().peekable(),
        server_only.into_iter().peekable(),
    );
    loop {
        let take_patch = match (a.peek(), b.peek()) {
            (Some((pa, _)), Some((pb, _))) => !(*pa >= 0 && *pb >= 0 && pb < pa),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        let next = if take_patch { a.next() } else { b.next() };
        if let Some((_, v)) = next {
            out.push(v);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn smp(doc: Value, patch: Value) -> Value {
        apply(&doc, &patch).unwrap()
    }

    #[test]
    fn containers_merge_by_name_and_tolerations_are_replaced() {
        // The capture strategic-merge-patch-deployment, on the pod template's spec.
        let doc = json!({"containers": [
            {"name": "app", "image": "nginx"},
            {"name": "sidecar", "image": "busybox", "command": ["sleep", "infinity"]}],
            "tolerations": [{"key": "a"}]});
        let out = smp(
            doc,
            json!({"containers": [{"name": "sidecar", "image": "busybox:1.37"},
                                  {"name": "extra", "image": "pause"}],
                   "tolerations": [{"key": "b"}]}),
        );
        assert_eq!(
            out,
            json!({"containers": [
                {"name": "app", "image": "nginx"},
                {"name": "sidecar", "image": "busybox:1.37", "command": ["sleep", "infinity"]},
                {"name": "extra", "image": "pause"}],
                "tolerations": [{"key": "b"}]})
        );
    }

    #[test]
    fn a_new_condition_goes_first() {
        // The capture patch-pod-status-strategic.
        let doc = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        let out = smp(
            doc,
            json!({"status": {"conditions": [{"type": "PodScheduled", "status": "True"}]}}),
        );
        assert_eq!(
            out["status"]["conditions"],
            json!([{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}])
        );
    }

    #[test]
    fn nested_keys_and_nulls() {
        let doc = json!({"spec": {"containers": [{"name": "a", "env": [{"name": "X", "value": "1"}],
            "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}, "keep": 1, "drop": 2});
        let out = smp(
            doc,
            json!({"drop": null, "spec": {"containers": [{"name": "a",
                "env": [{"name": "Y", "value": "2"}, {"name": "X", "value": "3"}],
                "ports": [{"containerPort": 8080}]}]}}),
        );
        assert_eq!(out["keep"], json!(1));
        assert!(out.get("drop").is_none());
        let c = &out["spec"]["containers"][0];
        assert_eq!(
            c["env"],
            json!([{"name": "Y", "value": "2"}, {"name": "X", "value": "3"}])
        );
        assert_eq!(
            c["ports"],
            json!([{"containerPort": 8080}, {"containerPort": 80, "protocol": "TCP"}])
        );
    }

    #[test]
    fn directives() {
        let doc = json!({"metadata": {"finalizers": ["a", "b"], "labels": {"x": "1", "y": "2"}},
            "spec": {"volumes": [{"name": "v1"}, {"name": "v2"}], "m": {"a": 1, "b": 2}}});
        let out = smp(
            doc.clone(),
            json!({"metadata": {"finalizers": ["c"], "$deleteFromPrimitiveList/finalizers": ["a"]},
                   "spec": {"volumes": [{"name": "v1", "$patch": "delete"}],
                            "m": {"$patch": "replace", "c": 3}}}),
        );
        assert_eq!(out["metadata"]["finalizers"], json!(["c", "b"]));
        assert_eq!(out["spec"]["volumes"], json!([{"name": "v2"}]));
        assert_eq!(out["spec"]["m"], json!({"c": 3}));
        let out = smp(
            doc.clone(),
            json!({"spec": {"volumes": [{"$patch": "replace"}, {"name": "v9"}], "m": {"$patch": "delete"}},
                   "$setElementOrder/x": []}),
        );
        assert_eq!(out["spec"]["volumes"], json!([{"name": "v9"}]));
        assert!(out["spec"].get("m").is_none());
        let out = smp(
            doc,
            json!({"metadata": {"labels": {"$retainKeys": ["y"], "z": "3"}}}),
        );
        assert_eq!(out["metadata"]["labels"], json!({"y": "2"}));
    }

    #[test]
    fn set_element_order_orders_the_named_elements() {
        let doc = json!({"env": [{"name": "A"}, {"name": "B"}, {"name": "C"}]});
        let out = smp(
            doc,
            json!({"$setElementOrder/env": [{"name": "C"}, {"name": "A"}, {"name": "D"}],
                   "env": [{"name": "D", "value": "4"}]}),
        );
        // The named ones in the given order; B, live only, goes before C (further down the
        // live list than B) and so first.
        let names: Vec<&str> = out["env"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["B", "C", "A", "D"]);
    }

    #[test]
    fn bad_patches_are_errors_not_panics() {
        assert!(apply(&json!({}), &json!([1])).is_err());
        assert!(apply(&json!({}), &json!({"$patch": "frob"})).is_err());
        assert!(apply(
            &json!({"containers": []}),
            &json!({"containers": [{"image": "x"}]})
        )
        .is_err());
        // A list of non-objects where a keyed list is expected is replaced.
        assert_eq!(
            smp(json!({"containers": [1]}), json!({"containers": [2]})),
            json!({"containers": [2]})
        );
    }
}
