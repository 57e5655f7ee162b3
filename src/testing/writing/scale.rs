//! The `scale` subresource: an `autoscaling/v1` `Scale` view of an object, writing a
//! Scale's `spec.replicas` back into the object, and who owns the replicas.
//!
//! A write through `/scale` is a write of a `Scale`, with the Scale's own managed fields:
//! kube-apiserver hands the Scale the entries of the object that own its replicas (as
//! entries owning the Scale's `.spec.replicas`), lets the write change them as any Update or
//! Apply would, and hands them back: the replicas leave every entry of the object, and join
//! those the Scale's entries say own them (a new entry keeps the `scale` subresource).
//! Two rules of the real field manager show here: an Update of a Scale whose entries are
//! empty records nothing (it does not start tracking an object that has no managers), and an
//! Apply to one makes a `before-first-apply` Update entry own what is there first, so the
//! first apply of other replicas conflicts with it.

use serde_json::{json, Map, Value};

use super::apply::{conflict_status, print_manager, Conflict};
use super::managed_fields::{Entry, FieldSet, Writer};
use super::resources::ScaleSubresource;
use super::validation::{self, FieldError};
use crate::api::Status;

/// The `Scale` of an object (`kind`/`apiVersion` of the object are not needed): the
/// object's name, namespace, uid, resourceVersion and creationTimestamp; `spec.replicas`;
/// `status.replicas` (0 when the object has none) and the selector as a string.
pub(crate) fn scale_view(paths: &ScaleSubresource, obj: &Value) -> Value {
    let mut meta = Map::new();
    for f in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = obj.pointer(&format!("/metadata/{f}")) {
            meta.insert(f.into(), v.clone());
        }
    }
    let mut spec = Map::new();
    match obj.pointer(&paths.spec_replicas).and_then(Value::as_i64) {
        // `replicas` is `omitempty` in a Scale's spec.
        Some(0) | None => {}
        Some(n) => {
            spec.insert("replicas".into(), n.into());
        }
    }
    let mut status = Map::new();
    let replicas = obj
        .pointer(&paths.status_replicas)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    status.insert("replicas".into(), replicas.into());
    if let Some(sel) = paths
        .label_selector
        .as_deref()
        .and_then(|p| obj.pointer(p))
        .and_then(selector_string)
    {
        status.insert("selector".into(), sel.into());
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": meta,
        "spec": spec,
        "status": status,
    })
}

/// A selector as a Scale shows it: a string as is; a label selector's `matchLabels` as
/// `k=v,k2=v2` in key order.
fn selector_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Object(m) => {
            let labels = m.get("matchLabels")?.as_object()?;
            let parts: Vec<String> = labels
                .iter()
                .filter_map(|(k, v)| Some(format!("{k}={}", v.as_str()?)))
                .collect();
            Some(parts.join(","))
        }
        _ => None,
    }
}

/// Sets `replicas` at the object's spec replicas path (objects made along the way).
pub(crate) fn set_replicas(paths: &ScaleSubresource, obj: &mut Value, replicas: i64) {
    let mut at = obj;
    let segments: Vec<&str> = paths.spec_replicas.split('/').skip(1).collect();
    for (i, seg) in segments.iter().enumerate() {
        if !at.is_object() {
            *at = Value::Object(Map::new());
        }
        let Value::Object(m) = at else { return };
        if i + 1 == segments.len() {
            m.insert((*seg).to_owned(), replicas.into());
            return;
        }
        at = m.entry((*seg).to_owned()).or_insert(Value::Null);
    }
}

/// `.spec.replicas` of a Scale, as field-set keys.
fn scale_replicas() -> Vec<String> {
    vec!["f:spec".into(), "f:replicas".into()]
}

fn only(path: &[String]) -> FieldSet {
    let mut set = FieldSet::default();
    set.insert(path);
    set
}

/// The replicas path of the object, as field-set keys (`/spec/replicas`: `f:spec`,
/// `f:replicas`).
fn parent_replicas(paths: &ScaleSubresource) -> Vec<String> {
    paths
        .spec_replicas
        .split('/')
        .skip(1)
        .map(|s| format!("f:{s}"))
        .collect()
}

/// The Scale's managed fields: an entry owning `.spec.replicas` for each entry of the object
/// that owns its replicas.
pub(crate) fn to_subresource(paths: &ScaleSubresource, parent: &[Entry]) -> Vec<Entry> {
    let path = parent_replicas(paths);
    parent
        .iter()
        .filter(|e| e.fields.contains(&path))
        .map(|e| Entry {
            api_version: "autoscaling/v1".into(),
            fields: only(&scale_replicas()),
            ..e.clone()
        })
        .collect()
}

/// The object's managed fields after a Scale write: the replicas leave every entry and join
/// those the Scale's `entries` give them to (new entries in the object's `api_version`).
pub(crate) fn to_parent(
    paths: &ScaleSubresource,
    parent: &[Entry],
    entries: &[Entry],
    api_version: &str,
) -> Vec<Entry> {
    let path = parent_replicas(paths);
    let replicas = only(&path);
    let mut out: Vec<Entry> = parent.to_vec();
    for e in out.iter_mut() {
        e.fields.subtract(&replicas);
    }
    for s in entries
        .iter()
        .filter(|s| s.fields.contains(&scale_replicas()))
    {
        match out
            .iter_mut()
            .find(|e| e.same_manager(&s.manager, &s.operation, &s.subresource))
        {
            Some(e) => e.fields.insert(&path),
            None => out.push(Entry {
                api_version: api_version.to_owned(),
                fields: replicas.clone(),
                ..s.clone()
            }),
        }
    }
    out
}

/// A non-apply write of the Scale's replicas from `old` to `new` (`None`: 0, which a Scale
/// leaves out) by `w`, on the Scale's `entries`.
pub(crate) fn record_update(
    entries: &mut Vec<Entry>,
    old: Option<i64>,
    new: Option<i64>,
    w: &Writer,
) {
    if entries.is_empty() || old == new {
        return;
    }
    let replicas = only(&scale_replicas());
    for e in entries.iter_mut() {
        e.fields.subtract(&replicas);
    }
    if new.is_none() {
        return;
    }
    match entries
        .iter_mut()
        .find(|e| e.same_manager(&w.manager, "Update", "scale"))
    {
        Some(e) => {
            e.fields = replicas;
            e.time = w.time.clone();
        }
        None => entries.push(Entry {
            manager: w.manager.clone(),
            operation: "Update".into(),
            api_version: "autoscaling/v1".into(),
            time: w.time.clone(),
            subresource: "scale".into(),
            fields: replicas,
        }),
    }
}

/// A server-side apply of `config` (a Scale) by `w` over the replicas `old`, on the Scale's
/// `entries`: the replicas it asks for (the old ones when it names none), or the 409 of a
/// conflict with another owner (unless `force`).
pub(crate) fn apply(
    entries: &mut Vec<Entry>,
    old: Option<i64>,
    config: &Value,
    force: bool,
    w: &Writer,
) -> Result<Option<i64>, Status> {
    let path = scale_replicas();
    let replicas = only(&path);
    if entries.is_empty() && old.is_some() {
        entries.push(Entry {
            manager: "before-first-apply".into(),
            operation: "Update".into(),
            api_version: "autoscaling/v1".into(),
            time: w.time.clone(),
            subresource: "scale".into(),
            fields: replicas.clone(),
        });
    }
    let wanted = config.pointer("/spec/replicas").and_then(Value::as_i64);
    let mine = |e: &Entry| e.same_manager(&w.manager, "Apply", "scale");
    if wanted.is_some() && wanted.filter(|n| *n != 0) != old {
        let conflicts: Vec<Conflict> = entries
            .iter()
            .filter(|e| !mine(e) && e.fields.contains(&path))
            .map(|e| {
                let key = (
                    e.manager.clone(),
                    e.operation.clone(),
                    e.api_version.clone(),
                    e.subresource.clone(),
                );
                (key, print_manager(e), path.clone())
            })
            .collect();
        if !conflicts.is_empty() && !force {
            return Err(conflict_status(conflicts));
        }
        for e in entries.iter_mut().filter(|e| !mine(e)) {
            e.fields.subtract(&replicas);
        }
    }
    let fields = if wanted.is_some() {
        replicas
    } else {
        FieldSet::default()
    };
    match entries.iter_mut().find(|e| mine(e)) {
        Some(e) => {
            if e.fields != fields {
                e.time = w.time.clone();
            }
            e.fields = fields;
        }
        None => entries.push(Entry {
            manager: w.manager.clone(),
            operation: "Apply".into(),
            api_version: "autoscaling/v1".into(),
            time: w.time.clone(),
            subresource: "scale".into(),
            fields,
        }),
    }
    Ok(wanted.filter(|n| *n != 0).or(old))
}

/// The 422 of a Scale asking for fewer than 0 replicas.
pub(crate) fn check_replicas(name: &str, replicas: i64) -> Result<(), Status> {
    if replicas >= 0 {
        return Ok(());
    }
    let e = FieldError::invalid(
        "spec.replicas",
        &Value::from(replicas),
        "must be greater than or equal to 0",
    );
    Err(validation::invalid(
        "Scale.autoscaling",
        "Scale",
        "autoscaling",
        name,
        &[e],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_and_write_back() {
        let paths = ScaleSubresource::workload();
        let mut dep = json!({"metadata": {"name": "web", "uid": "u", "labels": {"x": "y"}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"b": "2", "a": "1"}}}});
        let s = scale_view(&paths, &dep);
        assert_eq!(s["spec"]["replicas"], 1);
        assert_eq!(s["status"], json!({"replicas": 0, "selector": "a=1,b=2"}));
        assert!(s["metadata"].get("labels").is_none());
        set_replicas(&paths, &mut dep, 5);
        assert_eq!(dep["spec"]["replicas"], 5);
    }
}
