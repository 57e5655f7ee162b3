//! Delete and wait until gone: the object of one uid, so that a new object created under
//! the same name meanwhile does not keep the wait going (nor gets deleted by it).
//!
//! The object is read first for its uid; the delete carries that uid as a precondition
//! (a 409 then means the object was already replaced: ours is gone); the wait ends when no
//! object of that uid is left, finalizers and graceful termination included.

use std::time::Duration;

use super::conditions::deleted;
use super::waiter::{Wait, WaitError};
use crate::api::{Meta, Object};
use crate::client::{Api, DeleteParams};

impl<K: Object> Wait<'_, K> {
    /// Deletes the object with `params` and waits until *that* object (that uid) is gone,
    /// finalizers and graceful termination included, so that a new object created under
    /// the same name meanwhile neither keeps the wait going nor gets deleted by it: the
    /// object is read first for its uid, the delete carries the uid as a precondition (a
    /// 409 then means it was already replaced: gone). An object that does not exist is
    /// already gone.
    ///
    /// ```
    /// use std::time::Duration;
    /// use kube_informer::api::{ApiResource, DynamicObject};
    /// use kube_informer::controller::wait::Wait;
    /// use kube_informer::{Api, Client, DeleteParams};
    /// # let server = kube_informer::testing::ApiServer::start();
    /// let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    /// server.create(&cms, serde_json::json!({"metadata": {"name": "old", "namespace": "lab"}})).unwrap();
    /// let api: Api<DynamicObject> = Api::namespaced_with(Client::new(server.client_config())?, "lab", &cms);
    /// Wait::new(&api, "old", Duration::from_secs(60)).delete(&DeleteParams::default())?;
    /// assert!(api.get("old").unwrap_err().is_not_found());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete(&self, params: &DeleteParams) -> Result<(), WaitError<K>> {
        let api = self.api();
        let current = match api.get(self.name()) {
            Ok(o) => o,
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) => return Err(WaitError::Api(e)),
        };
        let uid = current.metadata().uid().unwrap_or("").to_owned();
        let mut params = params.clone();
        let has_uid_precondition = params
            .preconditions
            .as_ref()
            .is_some_and(|p| p.uid.is_some());
        if !uid.is_empty() && !has_uid_precondition {
            params = params.precondition_uid(&uid);
        }
        match api.delete(self.name(), &params) {
            Ok(_) => {}
            Err(e) if e.is_not_found() => return Ok(()),
            // The uid precondition failed: the object of that uid is gone already.
            Err(e) if e.is_conflict() && !has_uid_precondition => return Ok(()),
            Err(e) => return Err(WaitError::Api(e)),
        }
        if uid.is_empty() {
            return self.until(|o: Option<&K>| o.is_none()).map(|_| ());
        }
        self.until(deleted(&uid)).map(|_| ())
    }
}

/// [`Wait::new`]`(api, name, timeout).delete(params)`.
pub fn delete_and_wait<K: Object>(
    api: &Api<K>,
    name: &str,
    params: &DeleteParams,
    timeout: Duration,
) -> Result<(), WaitError<K>> {
    Wait::new(api, name, timeout).delete(params)
}
