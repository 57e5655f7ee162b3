//! `policy/v1` Eviction: `POST /api/v1/namespaces/{ns}/pods/{name}/eviction`.
//!
//! An eviction is a delete that asks the PodDisruptionBudgets first. kube-apiserver answers
//! `201` with a `Success` Status when the pod is being deleted, and `429 TooManyRequests`
//! ("Cannot evict pod as it would violate the pod's disruption budget.", cause
//! `DisruptionBudget` naming the budget and its healthy counts) when a budget allows no
//! disruption now; that one is [`PodError::DisruptionBudget`](super::PodError), retryable
//! ([`Error::is_transient`](crate::Error::is_transient) is true): the budget allows it once
//! enough pods are healthy again. kubectl's drain retries it every 5 s until its timeout;
//! so does [`drain_node`](super::drain_node).
//!
//! No capture of a real eviction is in `tests/fixtures/pod-io/`: the 429's shape follows
//! kube-apiserver's eviction REST handler (`pkg/registry/core/pod/storage/eviction.go`).

use serde_json::{json, Value};
use ureq::http::Method;

use super::logs::{pod_path, typed};
use crate::api::Object;
use crate::client::{Api, DeleteParams};
use crate::error::{Error, Result};

impl<K: Object> Api<K> {
    /// Evicts a pod (`policy/v1` Eviction), with delete options: a grace period, a UID
    /// precondition (evict only this instance of the name), dry run. `Ok` when the pod is
    /// being deleted (it may still be terminating: wait for it to be gone by UID). A
    /// PodDisruptionBudget's refusal is [`PodError::DisruptionBudget`](super::PodError)
    /// (retry later); a missing pod is a 404 [`Error::Api`].
    ///
    /// ```
    /// use kube_informer::api::{ApiResource, DynamicObject};
    /// use kube_informer::pod::PodError;
    /// use kube_informer::testing::ApiServer;
    /// use kube_informer::{Api, Client, DeleteParams};
    ///
    /// let server = ApiServer::start();
    /// for name in ["web-1", "web-2"] {
    ///     server.add_pod_on("lab", name, "node-1", serde_json::json!({"metadata": {"labels": {"app": "web"}}})).unwrap();
    /// }
    /// let pdbs = ApiResource::new("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", true);
    /// server.create(&pdbs, serde_json::json!({"metadata": {"name": "web", "namespace": "lab"},
    ///     "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}})).unwrap();
    /// let pods: Api<DynamicObject> = Api::namespaced_with(
    ///     Client::new(server.client_config())?, "lab", &ApiResource::new("", "v1", "Pod", "pods", true));
    /// pods.evict("web-1", &DeleteParams::default())?;
    /// let refused = pods.evict("web-2", &DeleteParams::default()).unwrap_err();
    /// assert!(matches!(refused.pod_error(), Some(PodError::DisruptionBudget { .. })));
    /// assert!(refused.is_transient());
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn evict(&self, name: &str, params: &DeleteParams) -> Result<()> {
        let ns = self.namespace().ok_or_else(|| {
            Error::InvalidInput("an eviction needs a namespace: use Api::namespaced".into())
        })?;
        let path = format!("{}/eviction", pod_path(self.client(), ns, name)?);
        let mut body = json!({
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": ns},
        });
        if let Some(opts) = params.body() {
            let opts: Value = serde_json::from_slice(&opts).unwrap_or(Value::Null);
            body["deleteOptions"] = opts;
        }
        self.client()
            .request(Method::POST, &path)
            .json(&body)
            .send()
            .map_err(|e| typed(e, name))?;
        Ok(())
    }
}
