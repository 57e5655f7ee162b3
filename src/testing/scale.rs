//! The `scale` subresource: an `autoscaling/v1` `Scale` view of an object, and writing a
//! Scale's `spec.replicas` back into the object.

use serde_json::{json, Map, Value};

use super::resources::ScaleSubresource;

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
