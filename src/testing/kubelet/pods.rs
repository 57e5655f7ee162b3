//! Pods and nodes for tests of pod I/O (logs, evictions, drains): a Running, Ready pod on a
//! node in one call, as a kubelet would report it.

use serde_json::Value;

use crate::api::ApiResource;

/// `v1` pods.
pub(crate) fn pods() -> ApiResource {
    ApiResource::new("", "v1", "Pod", "pods", true)
}

/// `v1` nodes.
pub(crate) fn nodes() -> ApiResource {
    ApiResource::new("", "v1", "Node", "nodes", false)
}

/// RFC 7386 merge of `patch` into `target`.
pub(crate) fn merge(target: &mut Value, patch: &Value) {
    match (target.as_object_mut(), patch.as_object()) {
        (Some(t), Some(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        _ => *target = patch.clone(),
    }
}
