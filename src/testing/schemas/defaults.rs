//! The few defaults the test server fills in on an HTTP write, as kube-apiserver does before
//! it stores an object (and before it works out who owns which field: a defaulted field
//! belongs to the writer that caused it, as the captures' managed fields show).
//!
//! Only what the captures show, for built-in resources:
//! - a pod spec (a Pod's `spec`, a workload's `spec.template.spec`, a CronJob's job template)
//!   gets `restartPolicy: Always`, `dnsPolicy: ClusterFirst`, `schedulerName:
//!   default-scheduler`, `terminationGracePeriodSeconds: 30` and `securityContext: {}`; a Pod
//!   also `enableServiceLinks: true`;
//! - a Deployment's spec gets `replicas: 1`, `revisionHistoryLimit: 10`,
//!   `progressDeadlineSeconds: 600` and a `RollingUpdate` strategy of 25 % / 25 %;
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
//! Not done (a simplification, documented): what admission adds to a Pod (the
//! not-ready/unreachable tolerations, `serviceAccountName`, `priority`, ...), the defaults of
//! the other kinds (StatefulSet, Job, Service, ...), and container ports' `protocol: TCP`.

use serde_json::{Map, Value};

/// Fills in the defaults of an object of the built-in resource `plural` (see the module docs).
pub(crate) fn apply(plural: &str, obj: &mut Map<String, Value>) {
    if let Some(spec) = obj.get_mut("spec") {
        if plural == "pods" {
            pod_spec_defaults(spec);
            if let Some(s) = spec.as_object_mut() {
                s.entry("enableServiceLinks").or_insert(Value::Bool(true));
            }
        } else {
            container_lists(spec);
        }
        if WORKLOADS.contains(&plural) {
            if let Some(t) = spec.pointer_mut("/template/spec") {
                pod_spec_defaults(t);
            }
        }
        if plural == "cronjobs" {
            if let Some(t) = spec.pointer_mut("/jobTemplate/spec/template/spec") {
                pod_spec_defaults(t);
            }
        }
        if plural == "deployments" {
            deployment_defaults(spec);
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

/// The resources whose `spec.template.spec` is a pod spec.
const WORKLOADS: &[&str] = &[
    "deployments",
    "replicasets",
    "statefulsets",
    "daemonsets",
    "jobs",
    "replicationcontrollers",
];

/// A pod spec's own defaults (restart and DNS policy, scheduler, grace period, an empty
/// security context), then its containers'.
fn pod_spec_defaults(spec: &mut Value) {
    if let Some(s) = spec.as_object_mut() {
        s.entry("restartPolicy").or_insert_with(|| "Always".into());
        s.entry("dnsPolicy")
            .or_insert_with(|| "ClusterFirst".into());
        s.entry("schedulerName")
            .or_insert_with(|| "default-scheduler".into());
        s.entry("terminationGracePeriodSeconds")
            .or_insert_with(|| 30.into());
        s.entry("securityContext")
            .or_insert_with(|| Value::Object(Map::new()));
    }
    container_lists(spec);
}

/// A Deployment's spec: one replica, a rolling update of 25 % surge and unavailability, ten
/// old ReplicaSets kept, ten minutes to progress.
fn deployment_defaults(spec: &mut Value) {
    let Some(s) = spec.as_object_mut() else {
        return;
    };
    s.entry("replicas").or_insert_with(|| 1.into());
    s.entry("revisionHistoryLimit").or_insert_with(|| 10.into());
    s.entry("progressDeadlineSeconds")
        .or_insert_with(|| 600.into());
    let strategy = s
        .entry("strategy")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(st) = strategy.as_object_mut() {
        st.entry("type").or_insert_with(|| "RollingUpdate".into());
        if st.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
            let ru = st
                .entry("rollingUpdate")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(ru) = ru.as_object_mut() {
                ru.entry("maxUnavailable").or_insert_with(|| "25%".into());
                ru.entry("maxSurge").or_insert_with(|| "25%".into());
            }
        }
    }
}

fn container_lists(spec: &mut Value) {
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
