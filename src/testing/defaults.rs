//! The few defaults the test server fills in on an HTTP write, as kube-apiserver does before
//! it stores an object (and before it works out who owns which field: a defaulted field
//! belongs to the writer that caused it, as the captures' managed fields show).
//!
//! Only what the captured patches show, for built-in resources:
//! - every container (`containers`, `initContainers`, `ephemeralContainers`, in a Pod's
//!   `spec` or a workload's `spec.template.spec`, and a CronJob's `jobTemplate`) gets
//!   `terminationMessagePath: /dev/termination-log`, `terminationMessagePolicy: File`,
//!   `resources: {}`, and `imagePullPolicy` (`Always` for a `:latest` or untagged image,
//!   else `IfNotPresent`);
//! - every condition of a Pod's `status.conditions` carries `lastProbeTime` and
//!   `lastTransitionTime`, `null` when not set (the server's types always write them).
//!
//! Rust-side writes store objects as given, without defaults; the managed-fields bookkeeping
//! compares a write with the stored object as if that had its defaults, so the first HTTP
//! write does not take ownership of defaults it did not cause.
//!
//! Not done (a simplification, documented): the pod-level defaults (`restartPolicy`,
//! `dnsPolicy`, `schedulerName`, the not-ready/unreachable tolerations, `status.phase`, ...),
//! defaults of any other kind, and container ports' `protocol: TCP`.

use serde_json::{Map, Value};

/// Fills in the defaults of an object of the built-in resource `plural` (see the module docs).
pub(crate) fn apply(plural: &str, obj: &mut Map<String, Value>) {
    if let Some(spec) = obj.get_mut("spec") {
        pod_spec_defaults(spec);
        if let Some(t) = spec.pointer_mut("/template/spec") {
            pod_spec_defaults(t);
        }
        if let Some(t) = spec.pointer_mut("/jobTemplate/spec/template/spec") {
            pod_spec_defaults(t);
        }
    }
    if plural == "pods" {
        if let Some(Value::Array(conds)) =
            obj.get_mut("status").and_then(|s| s.get_mut("conditions"))
        {
            for c in conds.iter_mut().filter_map(Value::as_object_mut) {
                for f in ["lastProbeTime", "lastTransitionTime"] {
                    c.entry(f).or_insert(Value::Null);
                }
            }
        }
    }
}

fn pod_spec_defaults(spec: &mut Value) {
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        let Some(Value::Array(cs)) = spec.get_mut(list) else {
            continue;
        };
        for c in cs.iter_mut().filter_map(Value::as_object_mut) {
            container_defaults(c);
        }
    }
}

fn container_defaults(c: &mut Map<String, Value>) {
    c.entry("resources")
        .or_insert_with(|| Value::Object(Map::new()));
    c.entry("terminationMessagePath")
        .or_insert_with(|| "/dev/termination-log".into());
    c.entry("terminationMessagePolicy")
        .or_insert_with(|| "File".into());
    if !c.contains_key("imagePullPolicy") {
        let image = c.get("image").and_then(Value::as_str).unwrap_or("");
        // The tag is what follows the last ':' after the last '/' (a registry port is not a tag).
        let last = image.rsplit('/').next().unwrap_or(image);
        let name = last.split('@').next().unwrap_or(last);
        let policy = match name.rsplit_once(':') {
            Some((_, "latest")) | None if !image.contains('@') => "Always",
            _ => "IfNotPresent",
        };
        c.insert("imagePullPolicy".into(), policy.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(image: &str) -> Value {
        let mut o = json!({"spec": {"containers": [{"name": "a", "image": image}]}});
        apply("pods", o.as_object_mut().unwrap());
        o["spec"]["containers"][0]["imagePullPolicy"].clone()
    }

    #[test]
    fn containers_get_their_defaults() {
        let mut d = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "registry.k8s.io/pause:3.10", "imagePullPolicy": "Never"}]}}}});
        apply("deployments", d.as_object_mut().unwrap());
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0],
            json!({"name": "a", "image": "registry.k8s.io/pause:3.10", "imagePullPolicy": "Never",
                   "resources": {}, "terminationMessagePath": "/dev/termination-log",
                   "terminationMessagePolicy": "File"})
        );
        assert_eq!(policy("registry.k8s.io/pause:3.10"), "IfNotPresent");
        assert_eq!(policy("nginx"), "Always");
        assert_eq!(policy("nginx:latest"), "Always");
        assert_eq!(policy("localhost:5000/nginx"), "Always");
        assert_eq!(policy("nginx@sha256:abc"), "IfNotPresent");
    }

    #[test]
    fn pod_conditions_carry_both_times() {
        let mut p =
            json!({"status": {"conditions": [{"type": "Ready", "lastTransitionTime": "t"}]}});
        apply("pods", p.as_object_mut().unwrap());
        assert_eq!(
            p["status"]["conditions"][0],
            json!({"type": "Ready", "lastTransitionTime": "t", "lastProbeTime": null})
        );
    }
}
