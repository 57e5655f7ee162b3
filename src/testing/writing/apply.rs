//! Server-side apply (`PATCH` with `application/apply-patch+yaml`) as the captures of
//! kube-apiserver 1.36 show it.
//!
//! The body is the applier's whole intent, in YAML (JSON is YAML too). The server merges it
//! into the live object (or creates the object: 201), and keeps one `Apply` entry per field
//! manager in `metadata.managedFields` holding exactly the fields of its last intent:
//! - a field another manager owns and this apply would set to a DIFFERENT value is a conflict:
//!   409 `Apply failed with 1 conflict: conflict with "alice": .data.color` (several: one
//!   `conflicts with "alice":` line per manager, then `- .data.a` per field; an `Update`
//!   manager is named `"kubectl-create" using v1 at <time>`: the wording of kube-apiserver's
//!   source, as only the single-conflict case is captured), `details.causes` one
//!   `FieldManagerConflict` per field (and nothing else in `details`); with `force=true` the
//!   applier takes the field over and the other manager loses it. Setting the same value
//!   shares the field.
//! - a field the applier owned and no longer mentions is removed from the object, unless
//!   another manager owns it (or, for a field, anything inside it) too; a list item stays
//!   only when another manager owns the item itself (owning a field inside it is not
//!   enough), and a field a custom resource's schema declares goes as a whole once no one
//!   owns anything in it (structured-merge-diff's prune: no `tags: []` left behind);
//! - `fieldManager` is required (422), the body's name must be the URL's (400, checked AFTER
//!   conflicts, as captured), and unknown fields of the kinds the server knows give the
//!   captured HTTP 500 (kube-apiserver's bug, with or without `fieldValidation=Strict`).
//! - keyed lists and sets are merged element by element: the live elements in their order
//!   (merged with the body's), then the body's new ones in its order (structured-merge-diff's
//!   rule); atomic lists and maps (a custom resource's `x-kubernetes-list-type: atomic` or
//!   none, `x-kubernetes-map-type: atomic`) are replaced and owned as a whole, so another
//!   manager's different value is a conflict on the whole field (`.spec.tags`); an empty
//!   map or list in the body is owned as a whole, and so is a key of a custom resource's
//!   free-form map (`additionalProperties`) with the fields inside it;
//! - an apply through `/status` applies only `status` and records `subresource: status`;
//!   an apply to the main resource of a resource that serves `/status` ignores `status`.
//!
//! Simplifications, besides those of [`managed_fields`](super::managed_fields): unknown
//! fields are those of the resource table (`resources.rs`, the same as for
//! `fieldValidation`: `metadata` and the top level only); `null` values in an apply body are
//! dropped (not "owned but unset"); values are not validated (labels, data keys, CRD schemas:
//! the captured 422s of `status-422-apply-invalid` and
//! `status-422-apply-custom-resource-schema` are not reproduced); the body's `apiVersion` and
//! `kind` are not checked against the URL; a `metadata.managedFields` in the body is ignored.

use serde_json::{Map, Value};

use super::managed_fields::{
    diff, element_key, entries_of, store_entries, Entry, FieldSet, ListKind, Node, Schema, Writer,
};
use crate::api::{Status, StatusCause, StatusDetails};

/// What an apply does to the store.
#[derive(Debug)]
pub(crate) enum Applied {
    /// The object did not exist: create this (201).
    Create(Value),
    /// Replace the live object with this (200).
    Update(Value),
}

/// The request around an apply body.
pub(crate) struct ApplyRequest<'a> {
    /// `fieldManager` (required).
    pub field_manager: Option<&'a str>,
    pub force: bool,
    /// Name and namespace from the URL.
    pub name: &'a str,
    pub namespace: Option<&'a str>,
    /// The fields of an object the resource does not know, as paths (`metadata.bogusMeta`,
    /// `spec`): the resource table's rule, the same as for `fieldValidation`.
    pub unknown_fields: &'a dyn Fn(&Map<String, Value>) -> Vec<String>,
    /// The resource serves `/status`: an apply to the main resource leaves `status` alone.
    pub status_subresource: bool,
    pub writer: Writer,
}

/// The 422 for an apply without `fieldManager`.
pub(crate) fn field_manager_required() -> Status {
    let mut st = Status::failure(
        422,
        "Invalid",
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
    );
    st.details = Some(StatusDetails {
        group: Some("meta.k8s.io".into()),
        kind: Some("PatchOptions".into()),
        causes: vec![StatusCause {
            reason: "FieldValueRequired".into(),
            message: "Required value: is required for apply patch".into(),
            field: "fieldManager".into(),
        }],
        ..Default::default()
    });
    st
}

/// Applies `body` (YAML) over `live` (`None`: no such object).
pub(crate) fn apply(
    live: Option<&Value>,
    body: &[u8],
    req: &ApplyRequest<'_>,
) -> Result<Applied, Status> {
    let manager = match req.field_manager {
        Some(m) if !m.is_empty() => m,
        _ => return Err(field_manager_required()),
    };
    let mut config: Value = serde_yaml::from_slice(body)
        .map_err(|e| Status::failure(400, "BadRequest", format!("error decoding YAML: {e}")))?;
    if !config.is_object() {
        return Err(Status::failure(
            400,
            "BadRequest",
            format!(
                "error decoding YAML: the apply body must be an object, not {}",
                super::json_patch::go_type_name(&config)
            ),
        ));
    }
    drop_nulls(&mut config);
    unknown_fields(&config, req.unknown_fields)?;
    let w = &req.writer;
    if w.subresource == "status" {
        // Only status goes through /status.
        if let Some(m) = config.as_object_mut() {
            m.retain(|k, _| matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "status"));
            if let Some(Value::Object(meta)) = m.get_mut("metadata") {
                meta.retain(|k, _| k == "name" || k == "namespace");
            }
        }
    }
    if w.subresource.is_empty() && req.status_subresource {
        if let Some(m) = config.as_object_mut() {
            m.remove("status");
        }
    }
    let applied_set = config_set(&w.schema, &config);
    let mut entries = live.map(entries_of).unwrap_or_default();
    let previous = entries
        .iter()
        .find(|e| e.same_manager(manager, "Apply", &w.subresource))
        .map(|e| e.fields.clone())
        .unwrap_or_default();
    let result = match live {
        // The store takes `kind` and `apiVersion` out (naming the resource's kind).
        None => config.clone(),
        Some(live) => {
            let mut merged = merge(w.schema.root(), live, &config);
            // What this manager owned before and no longer mentions goes, unless shared.
            let mut dropped = previous.clone();
            dropped.subtract(&applied_set);
            for path in dropped.paths() {
                // A list item stays only when someone else owns the item itself (owning a
                // field inside it is not enough: structured-merge-diff's rule); a field,
                // when someone owns it or anything inside it.
                let item = path
                    .last()
                    .is_some_and(|p| p.starts_with("k:") || p.starts_with("v:"));
                let shared = entries.iter().any(|e| {
                    !e.same_manager(manager, "Apply", &w.subresource)
                        && if item {
                            e.fields.contains(&path)
                        } else {
                            owns_at_or_below(&e.fields, &path)
                        }
                });
                if !shared {
                    remove_path(&mut merged, &path);
                }
            }
            // A field a custom resource's schema declares, that held what this manager
            // owned before, goes as a whole once no one owns anything in it
            // (structured-merge-diff prunes named fields so: no `set: []` left behind).
            let owned_below = |path: &[String]| {
                owns_at_or_below(&applied_set, path)
                    || entries.iter().any(|e| {
                        !e.same_manager(manager, "Apply", &w.subresource)
                            && owns_at_or_below(&e.fields, path)
                    })
            };
            for path in declared_containers(w.schema.root(), &previous) {
                if !owned_below(&path) {
                    remove_path(&mut merged, &path);
                }
            }
            merged
        }
    };
    if let Some(live) = live {
        let d = diff(&w.schema, Some(live), &result);
        let mut conflicts: Vec<Conflict> = Vec::new();
        for e in &entries {
            if e.same_manager(manager, "Apply", &w.subresource) {
                continue;
            }
            let key = (
                e.manager.clone(),
                e.operation.clone(),
                e.api_version.clone(),
                e.subresource.clone(),
            );
            for p in e.fields.intersection(&d.changed).paths() {
                conflicts.push((key.clone(), print_manager(e), p));
            }
        }
        if !conflicts.is_empty() && !req.force {
            return Err(conflict_status(conflicts));
        }
        for e in entries.iter_mut() {
            e.fields.subtract_subtrees(&d.removed);
            if !e.same_manager(manager, "Apply", &w.subresource) {
                e.fields.subtract(&d.changed.intersection(&applied_set));
            }
        }
    }
    // The name is checked after the conflicts, as captured.
    if let Some(body_name) = config.pointer("/metadata/name").and_then(Value::as_str) {
        if body_name != req.name {
            return Err(Status::failure(
                400,
                "BadRequest",
                format!(
                    "the name of the object ({body_name}) does not match the name on the URL ({})",
                    req.name
                ),
            ));
        }
    }
    let mut result = result;
    let Some(obj) = result.as_object_mut() else {
        return Err(Status::failure(
            500,
            "InternalError",
            "apply produced no object",
        ));
    };
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert("name".into(), req.name.into());
        if let Some(ns) = req.namespace {
            match meta.get("namespace").and_then(Value::as_str) {
                Some(b) if !b.is_empty() && b != ns => {
                    return Err(Status::failure(
                        400,
                        "BadRequest",
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ));
                }
                _ => {
                    meta.insert("namespace".into(), ns.into());
                }
            }
        }
    }
    match entries
        .iter_mut()
        .find(|e| e.same_manager(manager, "Apply", &w.subresource))
    {
        Some(e) => {
            if e.fields != applied_set {
                e.time = w.time.clone();
            }
            e.fields = applied_set;
            e.api_version = w.api_version.clone();
        }
        None => entries.push(Entry {
            manager: manager.to_owned(),
            operation: "Apply".into(),
            api_version: w.api_version.clone(),
            time: w.time.clone(),
            subresource: w.subresource.clone(),
            fields: applied_set,
        }),
    }
    store_entries(&mut result, entries);
    Ok(if live.is_some() {
        Applied::Update(result)
    } else {
        Applied::Create(result)
    })
}

fn drop_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, v| !v.is_null());
            m.values_mut().for_each(drop_nulls);
        }
        Value::Array(l) => l.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

/// How the server names a manager in a conflict: `"alice"`, `"kubelet" with subresource
/// "status"`, and for an `Update` entry `"kubectl-create" using v1 at 2026-11-23T04:37:17Z`.
pub(crate) fn print_manager(e: &Entry) -> String {
    let mut s = format!("{:?}", e.manager);
    if !e.subresource.is_empty() {
        s.push_str(&format!(" with subresource {:?}", e.subresource));
    }
    if e.operation == "Update" {
        s.push_str(&format!(" using {}", e.api_version));
        if !e.time.is_empty() {
            s.push_str(&format!(" at {}", e.time));
        }
    }
    s
}

/// A field path as the server prints it: `.data.color`, `.spec.containers[name="app"].image`.
pub(crate) fn print_path(path: &[String]) -> String {
    let mut out = String::new();
    for p in path {
        if let Some(f) = p.strip_prefix("f:") {
            out.push('.');
            out.push_str(f);
        } else if let Some(k) = p.strip_prefix("k:") {
            let fields: Vec<String> = match serde_json::from_str::<Map<String, Value>>(k) {
                Ok(m) => m.iter().map(|(k, v)| format!("{k}={v}")).collect(),
                Err(_) => vec![k.to_owned()],
            };
            out.push_str(&format!("[{}]", fields.join(",")));
        } else if let Some(v) = p.strip_prefix("v:") {
            out.push_str(&format!("[={v}]"));
        }
    }
    out
}

/// One conflict: who owns the field (the sort key of the manager, then how it is printed)
/// and the field.
pub(crate) type Conflict = ((String, String, String, String), String, Vec<String>);

/// The 409 of an apply with conflicts. One conflict is one line; several are grouped by
/// manager (`conflicts with "alice":` then `- .data.a` per field), as the real server words it.
pub(crate) fn conflict_status(mut conflicts: Vec<Conflict>) -> Status {
    conflicts.sort();
    let n = conflicts.len();
    let message = if let [(_, who, path)] = conflicts.as_slice() {
        format!(
            "Apply failed with 1 conflict: conflict with {who}: {}",
            print_path(path)
        )
    } else {
        let mut lines: Vec<String> = Vec::new();
        let mut last: Option<&(String, String, String, String)> = None;
        for (key, who, path) in &conflicts {
            if last != Some(key) {
                lines.push(format!("conflicts with {who}:"));
                last = Some(key);
            }
            lines.push(format!("- {}", print_path(path)));
        }
        format!("Apply failed with {n} conflicts: {}", lines.join("\n"))
    };
    let mut st = Status::failure(409, "Conflict", message);
    st.details = Some(StatusDetails {
        causes: conflicts
            .iter()
            .map(|(_, who, p)| StatusCause {
                reason: "FieldManagerConflict".into(),
                message: format!("conflict with {who}"),
                field: print_path(p),
            })
            .collect(),
        ..Default::default()
    });
    st
}

/// The fields an apply body sets: its leaves, each element of its keyed lists and sets,
/// atomic maps and lists as a whole, never the server's metadata.
pub(crate) fn config_set(schema: &Schema, config: &Value) -> FieldSet {
    fn walk(node: Node<'_>, v: &Value, path: &mut Vec<String>, set: &mut FieldSet) {
        match v {
            Value::Object(m) if !m.is_empty() && !node.atomic_map(m) => {
                for (k, c) in m {
                    path.push(format!("f:{k}"));
                    walk(node.field(k), c, path, set);
                    // A key of a custom resource's free-form map is owned itself too.
                    if node.is_custom() && !node.declares(k) {
                        set.insert(path);
                    }
                    path.pop();
                }
            }
            Value::Array(l) if !l.is_empty() => {
                let kind = node.list_kind(l);
                if kind == ListKind::Atomic {
                    set.insert(path);
                    return;
                }
                for item in l {
                    let Some(k) = element_key(&kind, item) else {
                        continue;
                    };
                    path.push(k);
                    set.insert(path);
                    if let (ListKind::Map(_), Value::Object(m)) = (&kind, item) {
                        for (f, c) in m {
                            path.push(format!("f:{f}"));
                            walk(node.items().field(f), c, path, set);
                            path.pop();
                        }
                    }
                    path.pop();
                }
            }
            _ => set.insert(path),
        }
    }
    let mut set = FieldSet::default();
    let Some(m) = config.as_object() else {
        return set;
    };
    let root = schema.root();
    let mut path = Vec::new();
    for (k, v) in m {
        match k.as_str() {
            "apiVersion" | "kind" => {}
            "metadata" => {
                if let Value::Object(meta) = v {
                    let node = root.field("metadata");
                    for (mk, mv) in meta {
                        if matches!(
                            mk.as_str(),
                            "name"
                                | "namespace"
                                | "uid"
                                | "resourceVersion"
                                | "generation"
                                | "creationTimestamp"
                                | "deletionTimestamp"
                                | "deletionGracePeriodSeconds"
                                | "managedFields"
                                | "selfLink"
                        ) {
                            continue;
                        }
                        path.push("f:metadata".into());
                        path.push(format!("f:{mk}"));
                        walk(node.field(mk), mv, &mut path, &mut set);
                        path.clear();
                    }
                }
            }
            _ => {
                path.push(format!("f:{k}"));
                walk(root.field(k), v, &mut path, &mut set);
                path.clear();
            }
        }
    }
    set
}

/// Merges an apply body into the live object: maps field by field (atomic ones replaced),
/// keyed lists element by element, sets by value, everything else replaced.
fn merge(node: Node<'_>, live: &Value, config: &Value) -> Value {
    match (live, config) {
        (Value::Object(l), Value::Object(c)) if !node.atomic_map(c) => {
            let mut out = l.clone();
            for (k, cv) in c {
                let merged = match l.get(k) {
                    Some(lv) => merge(node.field(k), lv, cv),
                    None => cv.clone(),
                };
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        (Value::Array(l), Value::Array(c)) => {
            let all: Vec<Value> = l.iter().chain(c.iter()).cloned().collect();
            let kind = node.list_kind(&all);
            if kind == ListKind::Atomic {
                return config.clone();
            }
            let mut out: Vec<Value> = l.clone();
            // Where each live key is (its first item), so that a long list merges in one pass.
            let mut at: std::collections::HashMap<String, usize> =
                std::collections::HashMap::with_capacity(out.len() + c.len());
            for (i, x) in out.iter().enumerate() {
                if let Some(k) = element_key(&kind, x) {
                    at.entry(k).or_insert(i);
                }
            }
            for item in c {
                match element_key(&kind, item).map(|k| (at.get(&k).copied(), k)) {
                    Some((Some(i), _)) => out[i] = merge(node.items(), &out[i], item),
                    Some((None, k)) => {
                        at.insert(k, out.len());
                        out.push(item.clone());
                    }
                    None => out.push(item.clone()),
                }
            }
            Value::Array(out)
        }
        _ => config.clone(),
    }
}

/// The paths of `set` and of every field above them that the schema declares (a CRD's
/// `properties`: structured-merge-diff's "named fields"), deepest first.
fn declared_containers(root: Node<'_>, set: &FieldSet) -> Vec<Vec<String>> {
    fn walk(node: Node<'_>, set: &FieldSet, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        for (k, child) in &set.children {
            let next = if let Some(f) = k.strip_prefix("f:") {
                if node.declares(f) {
                    path.push(k.clone());
                    walk(node.field(f), child, path, out);
                    out.push(path.clone());
                    path.pop();
                }
                continue;
            } else {
                node.items()
            };
            path.push(k.clone());
            walk(next, child, path, out);
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(root, set, &mut Vec::new(), &mut out);
    out
}

/// Whether `set` owns `path` or anything below it.
fn owns_at_or_below(set: &FieldSet, path: &[String]) -> bool {
    let mut node = set;
    for p in path {
        match node.children.get(p) {
            Some(c) => node = c,
            None => return false,
        }
    }
    !node.is_empty()
}

/// Removes the field at a `FieldsV1` path from an object (nothing when it is not there).
fn remove_path(obj: &mut Value, path: &[String]) {
    let Some((last, parent)) = path.split_last() else {
        return;
    };
    let mut node = obj;
    for p in parent {
        let next = match node {
            Value::Object(m) => p.strip_prefix("f:").and_then(|f| m.get_mut(f)),
            Value::Array(l) => l.iter_mut().find(|i| matches_element(p, i)),
            _ => None,
        };
        match next {
            Some(n) => node = n,
            None => return,
        }
    }
    match node {
        Value::Object(m) => {
            if let Some(f) = last.strip_prefix("f:") {
                m.remove(f);
            }
        }
        Value::Array(l) => l.retain(|i| !matches_element(last, i)),
        _ => {}
    }
}

fn matches_element(key: &str, item: &Value) -> bool {
    if let Some(k) = key.strip_prefix("k:") {
        let Ok(fields) = serde_json::from_str::<Map<String, Value>>(k) else {
            return false;
        };
        fields.iter().all(|(f, v)| item.get(f) == Some(v))
    } else if let Some(v) = key.strip_prefix("v:") {
        serde_json::from_str::<Value>(v).is_ok_and(|v| v == *item)
    } else {
        false
    }
}

/// The captured HTTP 500 for unknown fields in an apply body.
fn unknown_fields(
    config: &Value,
    unknown: &dyn Fn(&Map<String, Value>) -> Vec<String>,
) -> Result<(), Status> {
    let Some(m) = config.as_object() else {
        return Ok(());
    };
    let mut errors = unknown(m);
    if errors.is_empty() {
        return Ok(());
    }
    errors.sort();
    let s = |p: &str| config.pointer(p).and_then(Value::as_str).unwrap_or("");
    let api_version = s("/apiVersion");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let mut message = format!(
        "failed to create typed patch object ({}/{}; {group}/{version}, Kind={}):",
        s("/metadata/namespace"),
        s("/metadata/name"),
        s("/kind"),
    );
    // One error is given as it is; several as a list (structured-merge-diff's wording).
    if let [e] = errors.as_slice() {
        message.push_str(&format!(" .{e}: field not declared in schema"));
    } else {
        message.push_str(" errors:");
        for e in &errors {
            message.push_str(&format!("\n  .{e}: field not declared in schema"));
        }
    }
    Err(Status::failure(500, "", message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// ConfigMap's fields, for the tests.
    fn configmap_unknown(m: &Map<String, Value>) -> Vec<String> {
        let mut out: Vec<String> = m
            .keys()
            .filter(|k| {
                !["apiVersion", "kind", "metadata", "data", "binaryData"].contains(&k.as_str())
            })
            .cloned()
            .collect();
        if let Some(Value::Object(meta)) = m.get("metadata") {
            out.extend(
                meta.keys()
                    .filter(|k| !["name", "namespace", "labels"].contains(&k.as_str()))
                    .map(|k| format!("metadata.{k}")),
            );
        }
        out
    }

    fn req<'a>(manager: Option<&'a str>, force: bool, name: &'a str) -> ApplyRequest<'a> {
        ApplyRequest {
            field_manager: manager,
            force,
            name,
            namespace: Some("fx-writes"),
            unknown_fields: &configmap_unknown,
            status_subresource: false,
            writer: Writer {
                manager: manager.unwrap_or("").into(),
                subresource: String::new(),
                api_version: "v1".into(),
                schema: Schema::builtin(true),
                time: "2026-11-23T05:00:00Z".into(),
            },
        }
    }

    const CREATE: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-apply\n  labels:\n    app: fx\ndata:\n  color: red\n  size: \"1\"\n";
    const BOB: &str =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-apply\ndata:\n  color: green\n";

    fn created() -> Value {
        match apply(
            None,
            CREATE.as_bytes(),
            &req(Some("alice"), false, "cm-apply"),
        )
        .unwrap()
        {
            Applied::Create(v) => v,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn create_then_conflict_then_force() {
        let obj = created();
        assert_eq!(obj["data"], json!({"color": "red", "size": "1"}));
        assert_eq!(obj["metadata"]["namespace"], "fx-writes");
        assert_eq!(
            obj["metadata"]["managedFields"][0]["fieldsV1"],
            json!({"f:data": {"f:color": {}, "f:size": {}}, "f:metadata": {"f:labels": {"f:app": {}}}})
        );
        let st = apply(
            Some(&obj),
            BOB.as_bytes(),
            &req(Some("bob"), false, "cm-apply"),
        )
        .unwrap_err();
        assert_eq!(st.code, 409);
        assert_eq!(
            st.message,
            "Apply failed with 1 conflict: conflict with \"alice\": .data.color"
        );
        let causes = &st.details.as_ref().unwrap().causes;
        assert_eq!(causes[0].field, ".data.color");
        assert_eq!(causes[0].reason, "FieldManagerConflict");
        let Applied::Update(forced) = apply(
            Some(&obj),
            BOB.as_bytes(),
            &req(Some("bob"), true, "cm-apply"),
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(forced["data"], json!({"color": "green", "size": "1"}));
        let mf = &forced["metadata"]["managedFields"];
        assert_eq!(mf[0]["manager"], "alice");
        assert_eq!(
            mf[0]["fieldsV1"],
            json!({"f:data": {"f:size": {}}, "f:metadata": {"f:labels": {"f:app": {}}}})
        );
        assert_eq!(mf[1]["manager"], "bob");
        assert_eq!(mf[1]["fieldsV1"], json!({"f:data": {"f:color": {}}}));
    }

    #[test]
    fn same_value_is_shared_and_dropped_fields_go_unless_shared() {
        let obj = created();
        let same = "metadata:\n  name: cm-apply\ndata:\n  color: red\n";
        let Applied::Update(shared) = apply(
            Some(&obj),
            same.as_bytes(),
            &req(Some("bob"), false, "cm-apply"),
        )
        .unwrap() else {
            panic!()
        };
        // alice stops mentioning color (still bob's) and size (only hers).
        let alice = "metadata:\n  name: cm-apply\n  labels:\n    app: fx\ndata: {}\n";
        let Applied::Update(after) = apply(
            Some(&shared),
            alice.as_bytes(),
            &req(Some("alice"), false, "cm-apply"),
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(after["data"], json!({"color": "red"}));
    }

    #[test]
    fn errors_as_captured() {
        let st = apply(None, CREATE.as_bytes(), &req(None, false, "cm-apply")).unwrap_err();
        assert_eq!(st.code, 422);
        assert_eq!(st.details.as_ref().unwrap().causes[0].field, "fieldManager");
        let obj = created();
        let other = "metadata:\n  name: other-name\ndata:\n  k: v\n";
        let st = apply(
            Some(&obj),
            other.as_bytes(),
            &req(Some("carol"), false, "cm-apply"),
        )
        .unwrap_err();
        assert_eq!(st.code, 400);
        assert_eq!(
            st.message,
            "the name of the object (other-name) does not match the name on the URL (cm-apply)"
        );
        // Conflicts come first.
        let other = "metadata:\n  name: other-name\ndata:\n  color: v\n";
        let st = apply(
            Some(&obj),
            other.as_bytes(),
            &req(Some("carol"), false, "cm-apply"),
        )
        .unwrap_err();
        assert_eq!(st.code, 409);
        let bogus = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-apply-strict\n  bogusMeta: 1\ndata:\n  k: v\nspec:\n  replicas: 1\n";
        let st = apply(
            None,
            bogus.as_bytes(),
            &req(Some("alice"), false, "cm-apply-strict"),
        )
        .unwrap_err();
        assert_eq!(st.code, 500);
        assert_eq!(st.message, "failed to create typed patch object (/cm-apply-strict; /v1, Kind=ConfigMap): errors:\n  .metadata.bogusMeta: field not declared in schema\n  .spec: field not declared in schema");
        let one = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-one\nspec: 1\n";
        let st = apply(None, one.as_bytes(), &req(Some("alice"), false, "cm-one")).unwrap_err();
        assert_eq!(st.message, "failed to create typed patch object (/cm-one; /v1, Kind=ConfigMap): .spec: field not declared in schema");
        for bad in ["[1, 2]", "a: [", "just text"] {
            let st = apply(None, bad.as_bytes(), &req(Some("alice"), false, "x")).unwrap_err();
            assert_eq!(st.code, 400, "{bad}");
        }
    }

    #[test]
    fn status_apply_touches_only_status() {
        let live = json!({"metadata": {"name": "w", "namespace": "fx-writes", "managedFields": [
            {"manager": "kubectl-create", "operation": "Update", "apiVersion": "lab.example.com/v1",
             "time": "2026-11-23T04:38:18Z", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:spec": {".": {}, "f:color": {}}}}]},
            "spec": {"color": "red"}});
        let mut r = req(Some("widget-controller"), true, "w");
        r.unknown_fields = &|_| Vec::new();
        r.writer.subresource = "status".into();
        r.writer.schema = Schema::builtin(false);
        let body = "apiVersion: lab.example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  color: blue\nstatus:\n  ready: true\n";
        let Applied::Update(out) = apply(Some(&live), body.as_bytes(), &r).unwrap() else {
            panic!()
        };
        assert_eq!(out["spec"], json!({"color": "red"}));
        assert_eq!(out["status"], json!({"ready": true}));
        let mf = &out["metadata"]["managedFields"];
        assert_eq!(mf[0]["manager"], "widget-controller");
        assert_eq!(mf[0]["subresource"], "status");
        assert_eq!(mf[0]["fieldsV1"], json!({"f:status": {"f:ready": {}}}));
        assert_eq!(mf[1]["manager"], "kubectl-create");
    }

    #[test]
    fn managers_print_like_the_server() {
        let e = |op: &str, sub: &str| Entry {
            manager: "m".into(),
            operation: op.into(),
            api_version: "apps/v1".into(),
            time: "2026-11-23T04:37:17Z".into(),
            subresource: sub.into(),
            fields: FieldSet::default(),
        };
        assert_eq!(print_manager(&e("Apply", "")), "\"m\"");
        assert_eq!(
            print_manager(&e("Update", "status")),
            "\"m\" with subresource \"status\" using apps/v1 at 2026-11-23T04:37:17Z"
        );
    }

    #[test]
    fn paths_print_like_the_server() {
        assert_eq!(
            print_path(&[
                "f:spec".into(),
                "f:containers".into(),
                "k:{\"name\":\"app\"}".into(),
                "f:image".into()
            ]),
            ".spec.containers[name=\"app\"].image"
        );
        assert_eq!(
            print_path(&["f:metadata".into(), "f:finalizers".into(), "v:\"x\"".into()]),
            ".metadata.finalizers[=\"x\"]"
        );
    }
}
