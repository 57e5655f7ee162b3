//! Pods and nodes for tests of pod I/O (logs, evictions, drains): a Running, Ready pod on a
//! node in one call, as a kubelet would report it.

use serde_json::{json, Value};

use super::server::ApiServer;
use crate::api::{ApiResource, Status};

/// `v1` pods.
pub(crate) fn pods() -> ApiResource {
    ApiResource::new("", "v1", "Pod", "pods", true)
}

/// `v1` nodes.
pub(crate) fn nodes() -> ApiResource {
    ApiResource::new("", "v1", "Node", "nodes", false)
}

/// RFC 7386 merge of `patch` into `target`.
fn merge(target: &mut Value, patch: &Value) {
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

impl ApiServer {
    /// Creates a Running, Ready pod `namespace/name` with these containers (running) on the
    /// node `lab-node`; returns it as stored. Its logs start empty
    /// ([`append_log`](Self::append_log)). A failed create answers its Status
    /// (`AlreadyExists` when the name is taken).
    pub fn add_pod(
        &self,
        namespace: &str,
        name: &str,
        containers: &[&str],
    ) -> Result<Value, Status> {
        let extra = json!({"spec": {"containers": containers.iter()
            .map(|c| json!({"name": c, "image": "busybox"})).collect::<Vec<_>>()},
            "status": {"containerStatuses": containers.iter()
            .map(|c| json!({"name": c, "ready": true, "restartCount": 0, "image": "busybox",
                "state": {"running": {"startedAt": "2026-11-26T11:48:00Z"}}})).collect::<Vec<_>>()}});
        self.add_pod_on(namespace, name, "lab-node", extra)
    }

    /// Creates a Running, Ready pod `namespace/name` with one container `main` on `node`
    /// (`""`: not scheduled, `Pending`), with `extra` merged in (a JSON merge patch: labels,
    /// ownerReferences, volumes, other containers...); returns it as stored, or the Status of
    /// the failed create (`AlreadyExists` when the name is taken).
    pub fn add_pod_on(
        &self,
        namespace: &str,
        name: &str,
        node: &str,
        extra: Value,
    ) -> Result<Value, Status> {
        let mut pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "main", "image": "busybox"}]},
            "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "main", "ready": true, "restartCount": 0,
                    "image": "busybox", "state": {"running": {"startedAt": "2026-11-26T11:48:00Z"}}}]},
        });
        if node.is_empty() {
            pod["status"] = json!({"phase": "Pending"});
        } else {
            pod["spec"]["nodeName"] = json!(node);
        }
        merge(&mut pod, &extra);
        self.create(&pods(), pod)
    }

    /// Creates a schedulable node; returns it as stored, or the Status of the failed create
    /// (`AlreadyExists` when the name is taken).
    pub fn add_node(&self, name: &str) -> Result<Value, Status> {
        self.create(
            &nodes(),
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name,
                "labels": {"kubernetes.io/hostname": name}}, "spec": {},
                "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
        )
    }
}
