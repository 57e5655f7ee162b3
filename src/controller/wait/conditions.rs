//! The stock conditions: existence, deletion by uid, and the states `kubectl wait` and
//! `kubectl rollout status` wait for.
//!
//! They read the object's JSON (`status.phase`, `status.conditions`, replica counts), so one
//! condition serves every type that serializes as the API's JSON: [`DynamicObject`], your
//! own `resource!` types, and k8s-openapi's `Pod`, `Deployment`, `Job`, ... with the
//! `k8s-openapi` feature. (Each check serializes the object once: cheap beside the watch
//! event that brought it.)
//!
//! [`DynamicObject`]: crate::api::DynamicObject

use serde::Serialize;
use serde_json::Value;

use super::condition::{Condition, Verdict};
use crate::api::{Meta, Object};

/// The object as JSON; `Null` when it does not serialize (no condition then holds).
fn json<K: Serialize>(o: &K) -> Value {
    serde_json::to_value(o).unwrap_or(Value::Null)
}

/// The `status` of condition `type_` in `status.conditions` (`"True"`, `"False"`,
/// `"Unknown"`) and its object.
fn condition<'a>(o: &'a Value, type_: &str) -> Option<(&'a str, &'a Value)> {
    o.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .map(|c| (c["status"].as_str().unwrap_or(""), c))
}

fn is_true(o: &Value, type_: &str) -> bool {
    condition(o, type_).is_some_and(|(s, _)| s == "True")
}

/// `reason: message` of a condition, for a failure's text.
fn explain(c: &Value) -> String {
    let reason = c["reason"].as_str().unwrap_or("");
    let message = c["message"].as_str().unwrap_or("");
    match (reason.is_empty(), message.is_empty()) {
        (false, false) => format!("{reason}: {message}"),
        (false, true) => reason.to_owned(),
        (true, false) => message.to_owned(),
        (true, true) => "no reason given".to_owned(),
    }
}

fn int(o: &Value, pointer: &str) -> i64 {
    o.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn absent() -> Verdict {
    Verdict::waiting("the object to exist")
}

/// The object exists. See [`exists`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Exists;

/// Met once the object exists.
pub fn exists() -> Exists {
    Exists
}

impl<K> Condition<K> for Exists {
    fn check(&self, object: Option<&K>) -> Verdict {
        match object {
            Some(_) => Verdict::Met,
            None => absent(),
        }
    }
}

/// The object of one uid is gone. See [`deleted`].
#[derive(Clone, Debug)]
pub struct Deleted {
    uid: String,
}

/// Met once the object whose uid is `uid` is gone: absent, or replaced by a new object of
/// the same name (another uid), which means the old one was deleted.
pub fn deleted(uid: &str) -> Deleted {
    Deleted {
        uid: uid.to_owned(),
    }
}

impl<K: Object> Condition<K> for Deleted {
    fn check(&self, object: Option<&K>) -> Verdict {
        match object {
            Some(o) if o.metadata().uid() == Some(self.uid.as_str()) => {
                let m = o.metadata();
                Verdict::Waiting(if m.is_being_deleted() {
                    format!(
                        "uid {} to go (deletion under way, finalizers {:?})",
                        self.uid,
                        m.finalizers().unwrap_or(&[])
                    )
                } else {
                    format!("uid {} to be deleted", self.uid)
                })
            }
            _ => Verdict::Met,
        }
    }
}

/// A Pod in phase `Running`. See [`pod_running`].
#[derive(Clone, Copy, Debug, Default)]
pub struct PodRunning;

/// Met once the Pod's phase is `Running`; fails when it is `Succeeded` or `Failed` (a
/// finished Pod never runs again).
pub fn pod_running() -> PodRunning {
    PodRunning
}

fn pod_phase(o: &Value) -> &str {
    o.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn pod_finished(phase: &str) -> Option<Verdict> {
    matches!(phase, "Succeeded" | "Failed")
        .then(|| Verdict::Failed(format!("the Pod finished (phase {phase})")))
}

impl<K: Serialize> Condition<K> for PodRunning {
    fn check(&self, object: Option<&K>) -> Verdict {
        let Some(o) = object else { return absent() };
        let o = json(o);
        match pod_phase(&o) {
            "Running" => Verdict::Met,
            phase => pod_finished(phase)
                .unwrap_or_else(|| Verdict::Waiting(format!("phase Running (now {phase:?})"))),
        }
    }
}

/// A Pod whose `Ready` condition is true. See [`pod_ready`].
#[derive(Clone, Copy, Debug, Default)]
pub struct PodReady;

/// Met once the Pod's `Ready` condition is `True` (`kubectl wait --for=condition=Ready`);
/// fails when the Pod finished (`Succeeded` or `Failed`).
pub fn pod_ready() -> PodReady {
    PodReady
}

impl<K: Serialize> Condition<K> for PodReady {
    fn check(&self, object: Option<&K>) -> Verdict {
        let Some(o) = object else { return absent() };
        let o = json(o);
        if is_true(&o, "Ready") {
            return Verdict::Met;
        }
        pod_finished(pod_phase(&o)).unwrap_or_else(|| Verdict::waiting("condition Ready=True"))
    }
}

/// A Deployment rolled out. See [`deployment_rolled_out`].
#[derive(Clone, Copy, Debug, Default)]
pub struct DeploymentRolledOut;

/// Met when `kubectl rollout status` would say "successfully rolled out": the controller
/// has seen the latest spec (`status.observedGeneration >= metadata.generation`), every
/// wanted replica is updated (`status.updatedReplicas >= spec.replicas`), no old replica is
/// left (`status.replicas <= status.updatedReplicas`) and every updated one is available
/// (`status.availableReplicas >= status.updatedReplicas`). Fails, as kubectl does, when the
/// `Progressing` condition's reason is `ProgressDeadlineExceeded`.
pub fn deployment_rolled_out() -> DeploymentRolledOut {
    DeploymentRolledOut
}

impl<K: Serialize> Condition<K> for DeploymentRolledOut {
    fn check(&self, object: Option<&K>) -> Verdict {
        let Some(o) = object else { return absent() };
        let o = json(o);
        let generation = int(&o, "/metadata/generation");
        let observed = int(&o, "/status/observedGeneration");
        if generation > observed {
            return Verdict::Waiting(format!(
                "the deployment controller to observe generation {generation} (observed {observed})"
            ));
        }
        if let Some((_, c)) = condition(&o, "Progressing") {
            if c["reason"] == "ProgressDeadlineExceeded" {
                return Verdict::Failed(format!(
                    "the rollout exceeded its progress deadline ({})",
                    explain(c)
                ));
            }
        }
        let updated = int(&o, "/status/updatedReplicas");
        let replicas = int(&o, "/status/replicas");
        let available = int(&o, "/status/availableReplicas");
        if let Some(wanted) = o.pointer("/spec/replicas").and_then(Value::as_i64) {
            if updated < wanted {
                return Verdict::Waiting(format!("{updated} of {wanted} new replicas updated"));
            }
        }
        if replicas > updated {
            return Verdict::Waiting(format!("{} old replicas to terminate", replicas - updated));
        }
        if available < updated {
            return Verdict::Waiting(format!(
                "{available} of {updated} updated replicas available"
            ));
        }
        Verdict::Met
    }
}

/// A Job in a final condition. See [`job_complete`] and [`job_failed`].
#[derive(Clone, Copy, Debug)]
pub struct JobFinished {
    want_complete: bool,
}

/// Met once the Job's `Complete` condition is `True`; fails when its `Failed` condition
/// is (a failed Job never completes).
pub fn job_complete() -> JobFinished {
    JobFinished {
        want_complete: true,
    }
}

/// Met once the Job's `Failed` condition is `True`; fails when it completed instead.
pub fn job_failed() -> JobFinished {
    JobFinished {
        want_complete: false,
    }
}

impl<K: Serialize> Condition<K> for JobFinished {
    fn check(&self, object: Option<&K>) -> Verdict {
        let Some(o) = object else { return absent() };
        let o = json(o);
        let (want, other) = if self.want_complete {
            ("Complete", "Failed")
        } else {
            ("Failed", "Complete")
        };
        if is_true(&o, want) {
            return Verdict::Met;
        }
        if let Some((_, c)) = condition(&o, other).filter(|(s, _)| *s == "True") {
            return Verdict::Failed(format!("the Job ended {other} ({})", explain(c)));
        }
        Verdict::Waiting(format!("condition {want}=True"))
    }
}

/// A Namespace in phase `Active`. See [`namespace_active`].
#[derive(Clone, Copy, Debug, Default)]
pub struct NamespaceActive;

/// Met once the Namespace's `status.phase` is `Active` (not `Terminating`).
pub fn namespace_active() -> NamespaceActive {
    NamespaceActive
}

impl<K: Serialize> Condition<K> for NamespaceActive {
    fn check(&self, object: Option<&K>) -> Verdict {
        let Some(o) = object else { return absent() };
        let o = json(o);
        match o.pointer("/status/phase").and_then(Value::as_str) {
            Some("Active") => Verdict::Met,
            phase => Verdict::Waiting(format!("phase Active (now {:?})", phase.unwrap_or(""))),
        }
    }
}

/// A CustomResourceDefinition whose `Established` condition is true. See
/// [`crd_established`].
#[derive(Clone, Copy, Debug, Default)]
pub struct CrdEstablished;

/// Met once the CRD's `Established` condition is `True`; fails when `NamesAccepted` is
/// `False` (its names clash with another resource's: it will not be established).
///
/// Established is not yet served: the resource can answer 404 for a moment after it, and
/// discovery may not list it yet. [`wait_crd_served`](super::wait_crd_served) waits for
/// both.
pub fn crd_established() -> CrdEstablished {
    CrdEstablished
}

impl<K: Serialize> Condition<K> for CrdEstablished {
    fn check(&self, object: Option<&K>) -> Verdict {
        let Some(o) = object else { return absent() };
        let o = json(o);
        if is_true(&o, "Established") {
            return Verdict::Met;
        }
        if let Some((_, c)) = condition(&o, "NamesAccepted").filter(|(s, _)| *s == "False") {
            return Verdict::Failed(format!("its names were not accepted ({})", explain(c)));
        }
        Verdict::waiting("condition Established=True")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check<C: Condition<Value>>(c: C, o: Value) -> Verdict {
        c.check(Some(&o))
    }

    #[test]
    fn rollout_status_follows_kubectl() {
        let d = |gen: i64, obs: i64, spec: i64, replicas: i64, updated: i64, available: i64| {
            json!({"metadata": {"generation": gen}, "spec": {"replicas": spec},
                "status": {"observedGeneration": obs, "replicas": replicas,
                    "updatedReplicas": updated, "availableReplicas": available}})
        };
        let waiting = |v: Verdict| matches!(v, Verdict::Waiting(_));
        assert!(waiting(check(deployment_rolled_out(), d(2, 1, 3, 3, 3, 3))));
        assert!(waiting(check(deployment_rolled_out(), d(2, 2, 3, 3, 2, 2))));
        assert!(waiting(check(deployment_rolled_out(), d(2, 2, 3, 4, 3, 3))));
        assert!(waiting(check(deployment_rolled_out(), d(2, 2, 3, 3, 3, 2))));
        assert_eq!(
            check(deployment_rolled_out(), d(2, 2, 3, 3, 3, 3)),
            Verdict::Met
        );
        let mut stuck = d(2, 2, 3, 3, 1, 1);
        stuck["status"]["conditions"] = json!([{"type": "Progressing", "status": "False",
            "reason": "ProgressDeadlineExceeded", "message": "too slow"}]);
        assert!(
            matches!(check(deployment_rolled_out(), stuck), Verdict::Failed(m) if m.contains("too slow"))
        );
    }

    #[test]
    fn jobs_pods_namespaces_and_crds() {
        let conds =
            |t: &str, s: &str| json!({"status": {"conditions": [{"type": t, "status": s}]}});
        assert_eq!(
            check(job_complete(), conds("Complete", "True")),
            Verdict::Met
        );
        assert!(matches!(
            check(job_complete(), conds("Failed", "True")),
            Verdict::Failed(_)
        ));
        assert_eq!(check(job_failed(), conds("Failed", "True")), Verdict::Met);
        assert!(matches!(
            check(job_failed(), conds("Complete", "True")),
            Verdict::Failed(_)
        ));
        assert_eq!(check(pod_ready(), conds("Ready", "True")), Verdict::Met);
        assert!(matches!(
            check(pod_ready(), json!({"status": {"phase": "Failed"}})),
            Verdict::Failed(_)
        ));
        assert_eq!(
            check(pod_running(), json!({"status": {"phase": "Running"}})),
            Verdict::Met
        );
        assert!(matches!(
            check(pod_running(), json!({"status": {"phase": "Pending"}})),
            Verdict::Waiting(_)
        ));
        assert_eq!(
            check(namespace_active(), json!({"status": {"phase": "Active"}})),
            Verdict::Met
        );
        assert_eq!(
            check(crd_established(), conds("Established", "True")),
            Verdict::Met
        );
        assert!(matches!(
            check(crd_established(), conds("NamesAccepted", "False")),
            Verdict::Failed(_)
        ));
        assert!(matches!(
            <Exists as Condition<Value>>::check(&exists(), None),
            Verdict::Waiting(_)
        ));
    }

    #[cfg(feature = "k8s-openapi")]
    #[test]
    fn typed_objects_are_judged_like_dynamic_ones() {
        use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStatus};
        use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};
        let pod = Pod {
            status: Some(PodStatus {
                phase: Some("Running".into()),
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(pod_ready().check(Some(&pod)), Verdict::Met);
        assert_eq!(pod_running().check(Some(&pod)), Verdict::Met);
        let mut d = Deployment {
            spec: Some(DeploymentSpec {
                replicas: Some(2),
                ..Default::default()
            }),
            status: Some(DeploymentStatus {
                replicas: Some(2),
                updated_replicas: Some(2),
                available_replicas: Some(1),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(matches!(
            deployment_rolled_out().check(Some(&d)),
            Verdict::Waiting(_)
        ));
        d.status.as_mut().unwrap().available_replicas = Some(2);
        assert_eq!(deployment_rolled_out().check(Some(&d)), Verdict::Met);
        assert_eq!(deleted("u1").check(Some(&d)), Verdict::Met);
    }
}
