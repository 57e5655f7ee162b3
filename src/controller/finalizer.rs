//! [`finalizer`]: clean up before an object is deleted (kube-rs's `finalizer`, blocking).
//!
//! Why: a controller that creates something outside the object (a cloud disk, a DNS record,
//! a row in a database) must remove it when the object is deleted, and a deleted object is
//! gone from the API and the cache at once, with nothing left to read. A *finalizer* (a name
//! in `metadata.finalizers`) makes the API server keep the object, marked with a
//! `deletionTimestamp`, until every finalizer is removed: the controller sees the deletion,
//! cleans up, then removes its finalizer, and the server deletes the object.
//!
//! Call [`finalizer`] from your reconcile with the object from the cache. It decides:
//!
//! | the object                                   | what happens                                 |
//! |----------------------------------------------|----------------------------------------------|
//! | live, our finalizer missing                  | the finalizer is added, then `Apply`         |
//! | live, our finalizer present                  | `Apply`                                      |
//! | being deleted, our finalizer present         | `Cleanup`; on success the finalizer is removed |
//! | being deleted, without our finalizer         | nothing (left alone: not ours to clean up)   |
//!
//! # Writes, and why JSON patches
//!
//! Both writes are JSON patches (RFC 6902) guarded by `test` operations on the object's
//! `uid` and on the finalizer list as it was read (adding: the whole list, or `null` when
//! there is none; removing: our entry at its index), so the patch applies only to the state
//! it was computed from: a concurrent change (another controller adding or removing its own
//! finalizer, the object deleted and recreated under the same name) makes the `test` fail
//! instead of one writer erasing the other's change. kube-apiserver answers a failed `test`
//! with 422 `Invalid` and a message that does not say which operation failed; each of our
//! patches can only fail that way when the object moved on since it was read, so this
//! helper treats that 422 as a conflict and retries with
//! [`Client::retry_on_conflict`](crate::Client::retry_on_conflict) (client-go's default
//! retry: 5 attempts, 10 ms apart with jitter), each retry on a fresh read.
//!
//! Server-side apply was the other choice: it would merge our finalizer into the list
//! without a guard. It was not taken because an apply **creates** an object that does not
//! exist: one deleted between our read and our write would be brought back as a husk
//! holding only our finalizer. A JSON patch of a missing object is a 404.
//!
//! # Guarantees and duties
//!
//! - The finalizer is in place (on the server) before the first `Apply`: `Apply` after an
//!   add gets the object the patch returned.
//! - `Cleanup` runs only on the object as the server has it now: the helper reads it first
//!   (one GET per deletion), so a stale cache (our own removal not yet seen) never runs a
//!   cleanup twice, and a deleted-and-recreated object is not cleaned up for the old one.
//! - The finalizer is removed only after `Cleanup` returned `Ok`. If cleanup fails, the
//!   error comes back ([`FinalizerError::Cleanup`]), the finalizer stays, and the
//!   controller retries with back-off; so **cleanup must be idempotent** (it may also run
//!   again when it succeeded but the removal then failed).
//! - An object being deleted cannot gain a finalizer (the server refuses it): an object
//!   deleted before our finalizer was added is left alone, without `Apply` or `Cleanup`.
//!
//! # Limits
//!
//! - One finalizer per call: a controller with two cleanups uses two names and two calls.
//! - The name is checked only for being non-empty and free of whitespace; the rest is the
//!   server's business (it warns about a name without a domain prefix such as
//!   `example.com/`).
//! - A 422 that is not a failed guard (an admission webhook refusing the patch, say) is
//!   indistinguishable from one and is retried like a conflict too, within the same bounded
//!   retry; the error returned in the end says which message the server gave.
//! - The object must have a name (the one from a cache always has).

use std::fmt;
use std::sync::Arc;

use super::controller::Action;
use crate::api::{Meta, Object, Status};
use crate::client::{Api, Patch, PatchOperation, PatchParams, RetryBackoff};
use crate::error::Error;

/// What [`finalizer`] asks your callback to do.
#[derive(Debug)]
pub enum FinalizerEvent<K> {
    /// The object is live and carries our finalizer: reconcile it as usual.
    Apply(Arc<K>),
    /// The object is being deleted and still carries our finalizer: undo what you did
    /// outside it. Must be idempotent (see the module docs).
    Cleanup(Arc<K>),
}

/// Why [`finalizer`] failed; every case is worth a retry by the controller.
#[derive(Debug)]
pub enum FinalizerError<E> {
    /// The `Apply` callback failed.
    Apply(E),
    /// The `Cleanup` callback failed: the finalizer stays on the object.
    Cleanup(E),
    /// Adding the finalizer failed (nothing was applied).
    AddFinalizer(Error),
    /// Reading the object before its cleanup failed (nothing was cleaned up).
    ReadObject(Error),
    /// Removing the finalizer after a successful cleanup failed.
    RemoveFinalizer(Error),
    /// The finalizer name or the object cannot be used (empty name, name with whitespace,
    /// object without a name).
    Invalid(String),
}

impl<E: fmt::Display> fmt::Display for FinalizerError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FinalizerError::Apply(e) => write!(f, "apply failed: {e}"),
            FinalizerError::Cleanup(e) => write!(f, "cleanup failed (the finalizer stays): {e}"),
            FinalizerError::AddFinalizer(e) => write!(f, "adding the finalizer: {e}"),
            FinalizerError::ReadObject(e) => write!(f, "reading the object before cleanup: {e}"),
            FinalizerError::RemoveFinalizer(e) => {
                write!(f, "removing the finalizer after cleanup: {e}")
            }
            FinalizerError::Invalid(why) => write!(f, "finalizer: {why}"),
        }
    }
}

impl<E: fmt::Display + fmt::Debug> std::error::Error for FinalizerError<E> {}

/// Runs `reconcile` with [`FinalizerEvent::Apply`] or [`FinalizerEvent::Cleanup`] for `obj`,
/// keeping the finalizer `finalizer_name` on it while it lives and removing it after a
/// successful cleanup (see the module docs for the table and the guarantees).
///
/// `api` is an `Api` of the object's resource; one over all namespaces is narrowed to the
/// object's namespace. Returns the callback's [`Action`], or `Action::Done` when nothing
/// was called (an object being deleted that is not ours, or that changed under us: its next
/// event brings it back).
///
/// ```
/// use kube_informer::api::{ApiResource, DynamicObject};
/// use kube_informer::controller::{finalizer, Action, FinalizerEvent};
/// use kube_informer::{Api, Client};
/// use std::sync::Arc;
/// # let server = kube_informer::testing::ApiServer::start();
/// let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
/// # server.create(&cms, serde_json::json!({"metadata": {"name": "settings", "namespace": "lab"}})).unwrap();
/// let api: Api<DynamicObject> = Api::namespaced_with(Client::new(server.client_config())?, "lab", &cms);
/// let step = |obj: DynamicObject| {
///     finalizer(&api, "example.com/cleanup", Arc::new(obj), |event| match event {
///         FinalizerEvent::Apply(o) => {
///             println!("apply {}", o.metadata.name());
///             Ok::<_, kube_informer::Error>(Action::Done)
///         }
///         FinalizerEvent::Cleanup(o) => {
///             println!("cleanup {}", o.metadata.name());
///             Ok(Action::Done)
///         }
///     })
/// };
/// // A live object: the finalizer is added, then Apply runs.
/// step(api.get("settings")?).unwrap();
/// assert_eq!(api.get("settings")?.metadata.finalizers.unwrap(), ["example.com/cleanup"]);
/// // Deleted: the server keeps it while the finalizer is there...
/// api.delete("settings", &Default::default())?;
/// let doomed = api.get("settings")?;
/// assert!(doomed.metadata.deletion_timestamp.is_some());
/// // ...Cleanup runs, the finalizer is removed, and the object is gone.
/// step(doomed).unwrap();
/// assert!(api.get("settings").unwrap_err().is_not_found());
/// # Ok::<(), kube_informer::Error>(())
/// ```
pub fn finalizer<K, E>(
    api: &Api<K>,
    finalizer_name: &str,
    obj: Arc<K>,
    reconcile: impl FnOnce(FinalizerEvent<K>) -> Result<Action, E>,
) -> Result<Action, FinalizerError<E>>
where
    K: Object,
{
    if finalizer_name.is_empty() || finalizer_name.contains(char::is_whitespace) {
        return Err(FinalizerError::Invalid(format!(
            "the finalizer name {finalizer_name:?} is empty or holds whitespace"
        )));
    }
    let meta = obj.metadata();
    if meta.name().is_empty() {
        return Err(FinalizerError::Invalid("the object has no name".into()));
    }
    let api = narrowed(api, meta);
    let ours = position(meta, finalizer_name).is_some();
    match (meta.is_being_deleted(), ours) {
        (false, true) => reconcile(FinalizerEvent::Apply(obj)).map_err(FinalizerError::Apply),
        (false, false) => match add(&api, finalizer_name, obj) {
            Ok(Some(live)) => reconcile(FinalizerEvent::Apply(live)).map_err(FinalizerError::Apply),
            // Being deleted, deleted or replaced meanwhile: its own events bring it back.
            Ok(None) => Ok(Action::Done),
            Err(e) => Err(FinalizerError::AddFinalizer(e)),
        },
        (true, true) => {
            let live = match api.get(meta.name()) {
                Ok(live) => live,
                Err(e) if e.is_not_found() => return Ok(Action::Done),
                Err(e) => return Err(FinalizerError::ReadObject(e)),
            };
            let m = live.metadata();
            if m.uid() != meta.uid()
                || !m.is_being_deleted()
                || position(m, finalizer_name).is_none()
            {
                // Our finalizer is already gone (a stale cache), or this is a new object of
                // the same name: nothing to clean up for this one.
                return Ok(Action::Done);
            }
            let live = Arc::new(live);
            let action = reconcile(FinalizerEvent::Cleanup(Arc::clone(&live)))
                .map_err(FinalizerError::Cleanup)?;
            remove(&api, finalizer_name, live).map_err(FinalizerError::RemoveFinalizer)?;
            Ok(action)
        }
        (true, false) => Ok(Action::Done),
    }
}

/// `api`, narrowed to the object's namespace when it spans all of them.
fn narrowed<K: Object>(api: &Api<K>, meta: &K::Meta) -> Api<K> {
    match (api.namespace(), meta.namespace()) {
        (None, ns) if api.resource().namespaced && !ns.is_empty() => {
            Api::namespaced_with(api.client().clone(), ns, api.resource())
        }
        _ => api.clone(),
    }
}

fn position<M: Meta>(meta: &M, finalizer: &str) -> Option<usize> {
    meta.finalizers()?.iter().position(|f| f == finalizer)
}

/// The object as it is now: the one given for the first attempt, then read again.
/// `Ok(None)`: gone, or replaced by another object of the same name.
fn current<K: Object>(
    api: &Api<K>,
    given: &mut Option<Arc<K>>,
    name: &str,
    uid: Option<&str>,
) -> crate::Result<Option<Arc<K>>> {
    let obj = match given.take() {
        Some(o) => o,
        None => match api.get(name) {
            Ok(o) => Arc::new(o),
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(e),
        },
    };
    Ok((obj.metadata().uid() == uid).then_some(obj))
}

/// A `test` of the uid, when the object has one.
fn uid_guard<M: Meta>(meta: &M) -> Option<PatchOperation> {
    meta.uid()
        .map(|uid| PatchOperation::test("/metadata/uid", uid))
}

/// Adds the finalizer; the object as the server has it afterwards, or `None` when it is
/// being deleted, gone or replaced (nothing to apply).
fn add<K: Object>(api: &Api<K>, finalizer: &str, obj: Arc<K>) -> crate::Result<Option<Arc<K>>> {
    let name = obj.metadata().name().to_owned();
    let uid = obj.metadata().uid().map(str::to_owned);
    let mut given = Some(obj);
    api.client()
        .retry_on_conflict(&RetryBackoff::default(), || {
            let Some(obj) = current(api, &mut given, &name, uid.as_deref())? else {
                return Ok(None);
            };
            let meta = obj.metadata();
            if meta.is_being_deleted() {
                return Ok(None);
            }
            if position(meta, finalizer).is_some() {
                return Ok(Some(obj));
            }
            let mut ops: Vec<PatchOperation> = uid_guard(meta).into_iter().collect();
            match meta.finalizers() {
                None => ops.extend([
                    PatchOperation::test("/metadata/finalizers", serde_json::Value::Null),
                    PatchOperation::add("/metadata/finalizers", vec![finalizer]),
                ]),
                Some(list) => ops.extend([
                    PatchOperation::test("/metadata/finalizers", list.to_vec()),
                    PatchOperation::add("/metadata/finalizers/-", finalizer),
                ]),
            }
            match api.patch(&name, &PatchParams::default(), &Patch::json(ops)) {
                Ok(o) => Ok(Some(Arc::new(o))),
                Err(e) if e.is_not_found() => Ok(None),
                Err(e) => Err(guard_failure_as_conflict(e)),
            }
        })
}

/// Removes the finalizer from the object (already cleaned up); done when it is gone.
fn remove<K: Object>(api: &Api<K>, finalizer: &str, obj: Arc<K>) -> crate::Result<()> {
    let name = obj.metadata().name().to_owned();
    let uid = obj.metadata().uid().map(str::to_owned);
    let mut given = Some(obj);
    api.client()
        .retry_on_conflict(&RetryBackoff::default(), || {
            let Some(obj) = current(api, &mut given, &name, uid.as_deref())? else {
                return Ok(());
            };
            let meta = obj.metadata();
            let Some(i) = position(meta, finalizer) else {
                return Ok(());
            };
            let entry = format!("/metadata/finalizers/{i}");
            let mut ops: Vec<PatchOperation> = uid_guard(meta).into_iter().collect();
            ops.extend([
                PatchOperation::test(&entry, finalizer),
                PatchOperation::remove(&entry),
            ]);
            match api.patch(&name, &PatchParams::default(), &Patch::json(ops)) {
                Ok(_) => Ok(()),
                Err(e) if e.is_not_found() => Ok(()),
                Err(e) => Err(guard_failure_as_conflict(e)),
            }
        })
}

/// A 422 to one of our guarded patches means a `test` failed: the object changed since it
/// was read. Made a 409 `Conflict` so that `retry_on_conflict` reads again and retries.
fn guard_failure_as_conflict(e: Error) -> Error {
    match e {
        Error::Api { request, status } if status.code == 422 => Error::Api {
            request,
            status: Box::new(Status::failure(
                409,
                "Conflict",
                format!(
                    "a guarding test failed (the object changed since it was read): {}",
                    status.message
                ),
            )),
        },
        other => other,
    }
}
