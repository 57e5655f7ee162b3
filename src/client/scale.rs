//! [`Scale`]: the `scale` subresource (autoscaling/v1), as Deployments, ReplicaSets,
//! StatefulSets and custom resources with a scale subresource serve it.
//!
//! The answer carries the parent object's name, namespace, uid and resourceVersion (no
//! managedFields); `status.selector` is the label selector in its string form
//! (`app=web-scale`). Replacing a `Scale` with a `metadata.resourceVersion` is checked
//! against the parent's version (409 when it moved).

use serde::{Deserialize, Serialize};

use crate::api::ObjectMeta;

/// An autoscaling/v1 `Scale` (see [`Api::get_scale`](super::Api::get_scale) for the
/// verbs).
///
/// ```
/// use kube_informer::client::Scale;
/// let s: Scale = serde_json::from_str(r#"{"kind":"Scale","apiVersion":"autoscaling/v1",
///     "metadata":{"name":"web","resourceVersion":"271"},"spec":{},"status":{"replicas":0,"selector":"app=web"}}"#).unwrap();
/// assert_eq!(s.spec.replicas, 0); // a 0 is left out by the server
/// assert_eq!(s.status.unwrap().selector.as_deref(), Some("app=web"));
/// ```
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Scale {
    /// `autoscaling/v1`.
    #[serde(default = "Scale::api_version")]
    pub api_version: String,
    /// `Scale`.
    #[serde(default = "Scale::kind")]
    pub kind: String,
    /// The parent's name, namespace, uid, resourceVersion and creationTimestamp.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The desired replicas.
    #[serde(default)]
    pub spec: ScaleSpec,
    /// The observed replicas and selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ScaleStatus>,
}

impl Scale {
    fn api_version() -> String {
        "autoscaling/v1".into()
    }

    fn kind() -> String {
        "Scale".into()
    }

    /// A Scale asking for `replicas` (for [`Api::replace_scale`](super::Api::replace_scale):
    /// set `metadata` from the current Scale to make it conditional).
    pub fn with_replicas(replicas: i32) -> Scale {
        Scale {
            api_version: Scale::api_version(),
            kind: Scale::kind(),
            spec: ScaleSpec { replicas },
            ..Default::default()
        }
    }
}

/// `spec` of a [`Scale`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleSpec {
    /// Desired number of replicas (the server leaves a 0 out; it reads back as 0).
    #[serde(default)]
    pub replicas: i32,
}

/// `status` of a [`Scale`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleStatus {
    /// Observed number of replicas.
    #[serde(default)]
    pub replicas: i32,
    /// The pods' label selector, string form (`app=web`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
}
