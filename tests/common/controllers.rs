//! What the controller tests share: the resources they wire together, a count of reconciles
//! per key, and whether a controller's queue has gone quiet. One place, so that a test of
//! filters and a test of triggers read "reconciled twice" and "idle" the same way.

use std::collections::HashMap;
use std::sync::Arc;

use kube_informer::api::{ApiResource, DynamicObject};
use kube_informer::controller::Controller;
use kube_informer::testing::ApiServer;
use parking_lot::Mutex;
use serde_json::{json, Value};

pub fn namespaces() -> ApiResource {
    ApiResource::new("", "v1", "Namespace", "namespaces", false)
}

pub fn configmaps() -> ApiResource {
    ApiResource::new("", "v1", "ConfigMap", "configmaps", true)
}

pub fn deployments() -> ApiResource {
    ApiResource::new("apps", "v1", "Deployment", "deployments", true)
}

pub fn replicasets() -> ApiResource {
    ApiResource::new("apps", "v1", "ReplicaSet", "replicasets", true)
}

/// Reconciles per key.
#[derive(Clone, Default)]
pub struct Ledger(Arc<Mutex<HashMap<String, u32>>>);

impl Ledger {
    pub fn record(&self, key: &str) {
        *self.0.lock().entry(key.to_owned()).or_default() += 1;
    }

    pub fn count(&self, key: &str) -> u32 {
        self.0.lock().get(key).copied().unwrap_or(0)
    }

    pub fn snapshot(&self) -> HashMap<String, u32> {
        self.0.lock().clone()
    }
}

/// Nothing queued, nothing being reconciled, nothing waiting on a delay.
pub fn idle(controller: &Controller<DynamicObject>) -> bool {
    let m = controller.queue().metrics();
    m.depth == 0 && m.processing == 0 && m.waiting_for_delay == 0
}

/// A test API server serving ConfigMaps that holds `lab/<name>` for each of `names`, with
/// `data` as their data unless it is `null`.
pub fn configmaps_server(names: &[&str], data: Value) -> ApiServer {
    let server = ApiServer::builder().resource(&configmaps()).start();
    for name in names {
        let mut cm = json!({"metadata": {"name": name, "namespace": "lab"}});
        if !data.is_null() {
            cm["data"] = data.clone();
        }
        server.create(&configmaps(), cm).unwrap();
    }
    server
}
