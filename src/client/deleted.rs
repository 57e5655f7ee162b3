//! [`DeleteResponse`]: what a delete answered, the object or a `Status`.
//!
//! kube-apiserver answers a delete (200 in every capture; 202 is possible) with one of two
//! bodies, and the code does not say which: the object itself when it is not gone yet
//! (finalizers such as `foregroundDeletion` or `orphan`, a pod's grace period), or the object
//! in its last state (a pod deleted with grace period 0, an unscheduled pod); or a `Status`
//! with `status: Success` when the object is gone and the server has nothing more to show
//! (a ConfigMap, a custom resource). The client decides by the body's `kind`: `Status` is
//! a Status, anything else the object (or, for a delete collection, the list of the
//! deleted objects as they were before deletion).

use serde::de::DeserializeOwned;
use serde::Deserialize;

use super::client::decode_json;
use crate::api::Status;
use crate::error::Result;

/// The answer to a delete.
///
/// ```
/// # use kube_informer::{Api, Client, client::{DeleteParams, DeleteResponse}, api::{ApiResource, DynamicObject}};
/// # let server = kube_informer::testing::ApiServer::start();
/// let deps = ApiResource::new("apps", "v1", "Deployment", "deployments", true);
/// # server.create(&deps, serde_json::json!({"metadata": {"name": "web", "namespace": "lab"},
/// #     "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}}})).unwrap();
/// let api: Api<DynamicObject> = Api::namespaced_with(Client::new(server.client_config())?, "lab", &deps);
/// match api.delete("web", &DeleteParams::foreground())? {
///     // Held by the foregroundDeletion finalizer until its dependents are gone.
///     DeleteResponse::Object(d) => assert!(d.metadata.deletion_timestamp.is_some()),
///     DeleteResponse::Status(st) => panic!("gone already: {st:?}"),
/// }
/// # Ok::<(), kube_informer::Error>(())
/// ```
#[derive(Clone, Debug)]
pub enum DeleteResponse<K> {
    /// The object (or, from a delete collection, the list of deleted objects). For one
    /// object: it is still being deleted (`metadata.deletionTimestamp` is set and
    /// `finalizers` or a grace period hold it), or this is its last state (pods deleted
    /// with grace 0). Check `metadata.finalizers` / `deletionGracePeriodSeconds` to know
    /// whether to expect a later DELETED event.
    Object(K),
    /// The object is gone: a `Status` with `status: Success` and `details` naming it
    /// (boxed, as in [`Error::Api`](crate::Error::Api): it is large).
    Status(Box<Status>),
}

impl<K> DeleteResponse<K> {
    /// The object, if the answer was one.
    pub fn object(&self) -> Option<&K> {
        match self {
            DeleteResponse::Object(k) => Some(k),
            DeleteResponse::Status(_) => None,
        }
    }

    /// The Status, if the answer was one.
    pub fn status(&self) -> Option<&Status> {
        match self {
            DeleteResponse::Object(_) => None,
            DeleteResponse::Status(s) => Some(s),
        }
    }

    /// The object, if the answer was one.
    pub fn into_object(self) -> Option<K> {
        match self {
            DeleteResponse::Object(k) => Some(k),
            DeleteResponse::Status(_) => None,
        }
    }
}

impl<K: DeserializeOwned> DeleteResponse<K> {
    /// Decodes a delete's answer by its `kind`.
    pub(crate) fn decode(request: &str, body: &[u8]) -> Result<Self> {
        #[derive(Deserialize)]
        struct Kind {
            #[serde(default)]
            kind: String,
        }
        let kind: Kind = decode_json(request, body, "answer")?;
        if kind.kind == "Status" {
            Ok(DeleteResponse::Status(decode_json(
                request, body, "Status",
            )?))
        } else {
            Ok(DeleteResponse::Object(decode_json(
                request, body, "object",
            )?))
        }
    }
}
