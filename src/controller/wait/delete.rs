//! Delete and wait until gone: the object of one uid, so that a new object created under
//! the same name meanwhile does not keep the wait going (nor gets deleted by it).
//!
//! The object is read first for its uid; the delete carries that uid as a precondition
//! (unless the caller gave one: then that uid is the object waited for). A 409 is read
//! again: only a failed uid precondition means the object was already replaced (ours is
//! gone); another precondition of the caller's that failed (a stale resourceVersion)
//! leaves the object there, and the 409 is the answer. The wait ends when no object of that
//! uid is left, finalizers and graceful termination included.

use std::time::Duration;

use super::conditions::deleted;
use super::waiter::{Wait, WaitError};
use crate::api::{Meta, Object};
use crate::client::{Api, DeleteParams};

impl<K: Object> Wait<'_, K> {
    /// Deletes the object with `params` and waits until *that* object (that uid) is gone,
    /// finalizers and graceful termination included, so that a new object created under
    /// the same name meanwhile neither keeps the wait going nor gets deleted by it: the
    /// object is read first for its uid, the delete carries the uid as a precondition (the
    /// caller's own uid precondition, when given, names the object instead). A 409 is
    /// read again: the object gone or replaced (another uid) is gone; the same object still
    /// there (a resourceVersion precondition of the caller's that is stale) is the 409,
    /// returned as [`WaitError::Api`]. An object that does not exist is already gone.
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
        let mut params = params.clone();
        // The object waited for: the caller's uid precondition names it; else the one read.
        let uid = match params.preconditions.as_ref().and_then(|p| p.uid.as_deref()) {
            Some(theirs) => theirs.to_owned(),
            None => {
                let uid = current.metadata().uid().unwrap_or("").to_owned();
                if !uid.is_empty() {
                    params = params.precondition_uid(&uid);
                }
                uid
            }
        };
        match api.delete(self.name(), &params) {
            Ok(_) => {}
            Err(e) if e.is_not_found() => return Ok(()),
            // A failed precondition. Only a failed uid means gone; a resourceVersion of the
            // caller's that is stale fails the same way while the object stays: read again.
            Err(e) if e.is_conflict() => {
                return match api.get(self.name()) {
                    Err(again) if again.is_not_found() => Ok(()),
                    Err(again) => Err(WaitError::Api(again)),
                    Ok(o) if uid.is_empty() || o.metadata().uid() == Some(uid.as_str()) => {
                        Err(WaitError::Api(e))
                    }
                    Ok(_) => Ok(()),
                };
            }
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
