//! What the test API server knows about a resource beyond its objects: built-in or custom,
//! which subresources it serves, whether its objects carry `metadata.generation`, and which
//! top-level fields it knows (for `fieldValidation`).
//!
//! A real API server learns this from its compiled-in types and from CRDs. The test server has
//! neither, so it keeps a small table of the built-ins that tests use and treats everything
//! else by one rule (see [`is_builtin_group`]); [`ApiServerBuilder::subresources`] and
//! [`ApiServerBuilder::schema_fields`](crate::testing::ApiServerBuilder::schema_fields) override it per
//! resource.
//!
//! [`ApiServerBuilder::subresources`]: crate::testing::ApiServerBuilder::subresources

use serde_json::Value;

use super::type_key::TypeKey;

/// The subresources a resource serves besides its main endpoint.
///
/// Defaults match the real built-ins: `status` for pods, deployments, replicasets,
/// statefulsets, daemonsets, jobs, cronjobs, services, nodes, namespaces, persistent volumes
/// (and claims), replication controllers, ingresses, pod disruption budgets and horizontal pod
/// autoscalers; `scale` for deployments, replicasets, statefulsets and replication
/// controllers. A custom resource serves none unless declared (like a CRD without
/// `subresources`).
///
/// ```
/// use kube_informer::api::ApiResource;
/// use kube_informer::testing::{ApiServer, ScaleSubresource, Subresources};
///
/// let widgets = ApiResource::new("lab.example.com", "v1", "Widget", "widgets", true);
/// let server = ApiServer::builder()
///     .subresources(&widgets, Subresources::none().with_status().with_scale(ScaleSubresource::workload()))
///     .start();
/// # drop(server);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Subresources {
    /// `/status`: GET returns the whole object; PUT and PATCH change only `status` (pods: and
    /// labels and annotations); writes to the main resource leave `status` as it was.
    pub status: bool,
    /// `/scale`: an `autoscaling/v1` `Scale` view of the object.
    pub scale: Option<ScaleSubresource>,
}

impl Subresources {
    /// No subresources.
    pub fn none() -> Self {
        Subresources::default()
    }

    /// With the `status` subresource.
    pub fn with_status(mut self) -> Self {
        self.status = true;
        self
    }

    /// With the `scale` subresource.
    pub fn with_scale(mut self, scale: ScaleSubresource) -> Self {
        self.scale = Some(scale);
        self
    }
}

/// Where the `scale` subresource finds its numbers: JSON pointers into the object (a CRD's
/// `specReplicasPath`, `statusReplicasPath` and `labelSelectorPath`, written as pointers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScaleSubresource {
    /// The desired replicas, e.g. `/spec/replicas`.
    pub spec_replicas: String,
    /// The observed replicas, e.g. `/status/replicas`.
    pub status_replicas: String,
    /// The selector: a string, or a label selector object whose `matchLabels` become
    /// `k=v,k2=v2` (what the built-in workloads have at `/spec/selector`).
    pub label_selector: Option<String>,
}

impl ScaleSubresource {
    /// `/spec/replicas`, `/status/replicas` and `/spec/selector`: the built-in workloads'.
    pub fn workload() -> Self {
        ScaleSubresource {
            spec_replicas: "/spec/replicas".into(),
            status_replicas: "/status/replicas".into(),
            label_selector: Some("/spec/selector".into()),
        }
    }
}

/// True for the API groups of Kubernetes itself: the core group `""`, a group without a dot
/// (`apps`, `batch`, `autoscaling`, `policy`), or one ending in `.k8s.io`. Every other group is
/// a custom resource's (this decides the strategic merge patch 415, `generation`, the sorted
/// keys and the default known fields).
pub fn is_builtin_group(group: &str) -> bool {
    group.is_empty() || !group.contains('.') || group.ends_with(".k8s.io")
}

const WITH_STATUS: &[&str] = &[
    "pods",
    "deployments",
    "replicasets",
    "statefulsets",
    "daemonsets",
    "jobs",
    "cronjobs",
    "services",
    "nodes",
    "namespaces",
    "persistentvolumes",
    "persistentvolumeclaims",
    "replicationcontrollers",
    "ingresses",
    "poddisruptionbudgets",
    "horizontalpodautoscalers",
];

const WITH_SCALE: &[&str] = &[
    "deployments",
    "replicasets",
    "statefulsets",
    "replicationcontrollers",
];

const WITH_GENERATION: &[&str] = &[
    "pods",
    "deployments",
    "replicasets",
    "statefulsets",
    "daemonsets",
    "jobs",
    "cronjobs",
    "replicationcontrollers",
    "poddisruptionbudgets",
    "ingresses",
    "networkpolicies",
];

/// The fields of `ObjectMeta`: every resource knows these under `metadata`.
const OBJECT_META: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Top-level fields (besides `apiVersion`, `kind`, `metadata`) of the built-ins with a table.
fn builtin_fields(group: &str, plural: &str) -> Option<&'static [&'static str]> {
    Some(match (group, plural) {
        ("", "configmaps") => &["data", "binaryData", "immutable"],
        ("", "secrets") => &["data", "stringData", "type", "immutable"],
        ("", "events") => &[
            "involvedObject",
            "reason",
            "message",
            "source",
            "firstTimestamp",
            "lastTimestamp",
            "count",
            "type",
            "eventTime",
            "series",
            "action",
            "related",
            "reportingComponent",
            "reportingInstance",
        ],
        ("events.k8s.io", "events") => &[
            "eventTime",
            "series",
            "reportingController",
            "reportingInstance",
            "action",
            "reason",
            "regarding",
            "related",
            "note",
            "type",
            "deprecatedSource",
            "deprecatedFirstTimestamp",
            "deprecatedLastTimestamp",
            "deprecatedCount",
        ],
        ("coordination.k8s.io", "leases") => &["spec"],
        (_, p) if WITH_STATUS.contains(&p) => &["spec", "status"],
        _ => return None,
    })
}

/// Everything the server knows about one resource.
#[derive(Clone, Debug)]
pub(crate) struct ResourceInfo {
    pub builtin: bool,
    pub subresources: Subresources,
    /// Objects carry `metadata.generation` (1 on create, +1 when `spec` changes).
    pub generation: bool,
    /// Known top-level fields; `None`: anything goes (no unknown-field checks).
    pub fields: Option<Vec<String>>,
    /// A structural schema (a CRD's `openAPIV3Schema`): validation and pruning.
    pub schema: Option<Value>,
}

impl ResourceInfo {
    /// What the server assumes about a resource nobody described.
    pub fn defaults(tk: &TypeKey) -> Self {
        let builtin = is_builtin_group(&tk.group);
        let p = tk.plural.as_str();
        let subresources = if builtin {
            Subresources {
                status: WITH_STATUS.contains(&p),
                scale: WITH_SCALE.contains(&p).then(ScaleSubresource::workload),
            }
        } else {
            Subresources::none()
        };
        let fields = if builtin {
            builtin_fields(&tk.group, p).map(|f| f.iter().map(|s| (*s).to_owned()).collect())
        } else {
            Some(vec!["spec".into(), "status".into()])
        };
        ResourceInfo {
            builtin,
            subresources,
            generation: !builtin || WITH_GENERATION.contains(&p),
            fields,
            schema: None,
        }
    }

    /// The unknown fields of an object, as paths (`metadata.bogusMeta`, `spec`), sorted;
    /// with `drop`, they are also taken out of it (what decoding into a typed object does).
    pub fn unknown_fields(
        &self,
        obj: &mut serde_json::Map<String, Value>,
        drop: bool,
    ) -> Vec<String> {
        if self.schema.is_none() && self.fields.is_none() {
            return Vec::new();
        }
        let mut unknown = Vec::new();
        if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
            let extra: Vec<String> = meta
                .keys()
                .filter(|k| !OBJECT_META.contains(&k.as_str()))
                .cloned()
                .collect();
            for k in extra {
                if drop {
                    meta.remove(&k);
                }
                unknown.push(format!("metadata.{k}"));
            }
        }
        if let Some(schema) = &self.schema {
            unknown.extend(super::schema::unknown_fields(schema, obj, drop));
            unknown.sort();
            // Embedded resources' metadata is pruned after the rest, as the real server does.
            unknown.extend(super::crd_embedded::unknown_metadata(
                schema,
                obj,
                drop,
                OBJECT_META,
            ));
            return unknown;
        }
        let fields = self.fields.as_deref().unwrap_or_default();
        let extra: Vec<String> = obj
            .keys()
            .filter(|k| {
                !matches!(k.as_str(), "apiVersion" | "kind" | "metadata")
                    && !fields.iter().any(|f| f == *k)
            })
            .cloned()
            .collect();
        for k in extra {
            if drop {
                obj.remove(&k);
            }
            unknown.push(k);
        }
        unknown.sort();
        unknown
    }
}

/// What an HTTP create does with the `status` of a resource that has the status
/// subresource: status is the subresource's to write, so a create starts it afresh. A custom
/// resource's is dropped; a pod's becomes `Pending` with its QoS class; a Deployment's is
/// empty. Other kinds keep what they were given (a simplification: the real server resets
/// some of them too).
pub(crate) fn status_on_create(
    tk: &TypeKey,
    info: &ResourceInfo,
    obj: &mut serde_json::Map<String, Value>,
) {
    if !info.subresources.status {
        return;
    }
    if !info.builtin {
        obj.remove("status");
        return;
    }
    match (tk.group.as_str(), tk.plural.as_str()) {
        ("", "pods") => {
            let qos = qos_class(obj.get("spec"));
            obj.insert(
                "status".into(),
                serde_json::json!({"phase": "Pending", "qosClass": qos}),
            );
        }
        ("apps", "deployments") => {
            obj.insert("status".into(), Value::Object(serde_json::Map::new()));
        }
        _ => {}
    }
}

/// A pod's QoS class from its containers' cpu and memory requests and limits:
/// `BestEffort` without any, `Guaranteed` when every container limits both and requests
/// what it limits, `Burstable` otherwise.
fn qos_class(spec: Option<&Value>) -> &'static str {
    let containers: Vec<&Value> = ["initContainers", "containers"]
        .iter()
        .filter_map(|k| spec.and_then(|s| s.get(*k)).and_then(Value::as_array))
        .flatten()
        .collect();
    let amount = |c: &Value, kind: &str, res: &str| -> Option<String> {
        c.pointer(&format!("/resources/{kind}/{res}"))
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
    };
    let mut any = false;
    let mut guaranteed = !containers.is_empty();
    for c in &containers {
        for res in ["cpu", "memory"] {
            let (req, lim) = (amount(c, "requests", res), amount(c, "limits", res));
            any |= req.is_some() || lim.is_some();
            match (&req, &lim) {
                (_, None) => guaranteed = false,
                (Some(r), Some(l)) if r != l => guaranteed = false,
                _ => {}
            }
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tk(group: &str, plural: &str) -> TypeKey {
        TypeKey {
            group: group.into(),
            version: "v1".into(),
            plural: plural.into(),
        }
    }

    #[test]
    fn builtin_rule() {
        for g in ["", "apps", "batch", "coordination.k8s.io", "events.k8s.io"] {
            assert!(is_builtin_group(g), "{g}");
        }
        for g in ["lab.example.com", "cert-manager.io"] {
            assert!(!is_builtin_group(g), "{g}");
        }
    }

    #[test]
    fn defaults_follow_the_real_builtins() {
        let pods = ResourceInfo::defaults(&tk("", "pods"));
        assert!(pods.subresources.status && pods.subresources.scale.is_none() && pods.generation);
        let cms = ResourceInfo::defaults(&tk("", "configmaps"));
        assert!(!cms.subresources.status && !cms.generation);
        let deps = ResourceInfo::defaults(&tk("apps", "deployments"));
        assert!(deps.subresources.scale.is_some());
        let widgets = ResourceInfo::defaults(&tk("lab.example.com", "widgets"));
        assert!(!widgets.builtin && widgets.generation && !widgets.subresources.status);
    }

    #[test]
    fn qos_classes() {
        let spec =
            |res: Value| serde_json::json!({"containers": [{"name": "a", "resources": res}]});
        assert_eq!(qos_class(Some(&spec(serde_json::json!({})))), "BestEffort");
        assert_eq!(
            qos_class(Some(&spec(serde_json::json!({"requests": {"cpu": "1"}})))),
            "Burstable"
        );
        assert_eq!(
            qos_class(Some(&spec(
                serde_json::json!({"limits": {"cpu": "1", "memory": "1Gi"}})
            ))),
            "Guaranteed"
        );
        assert_eq!(
            qos_class(Some(&spec(serde_json::json!({
                "requests": {"cpu": "500m", "memory": "1Gi"},
                "limits": {"cpu": "1", "memory": "1Gi"}
            })))),
            "Burstable"
        );
    }

    #[test]
    fn unknown_fields_are_listed_and_dropped() {
        let info = ResourceInfo::defaults(&tk("", "configmaps"));
        let mut obj =
            serde_json::json!({"metadata": {"name": "a", "bogusMeta": 1}, "data": {}, "spec": {}})
                .as_object()
                .cloned()
                .unwrap();
        assert_eq!(
            info.unknown_fields(&mut obj, true),
            vec!["metadata.bogusMeta", "spec"]
        );
        assert!(obj.get("spec").is_none() && obj["metadata"].get("bogusMeta").is_none());
    }
}
