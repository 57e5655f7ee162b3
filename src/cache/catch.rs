//! Running code the user gave us (handlers, transforms, index functions) so that a panic in
//! it is caught and reported, never fatal: one bad callback must not kill the thread that
//! keeps the cache in step (a dead informer thread would leave `has_synced` false forever
//! with nothing said).
//!
//! The types of two such callbacks live here too, below the listener and the reflector that
//! take them (re-exported from [`cache`](crate::cache)).

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::api::{Meta, Object};

/// Called with a description of every handler panic.
pub type PanicHandler = Arc<dyn Fn(&str) + Send + Sync>;

/// Changes each object once, after decoding and before it is queued and cached (to drop
/// fields nobody reads, say). See [`strip_managed_fields`](crate::cache::strip_managed_fields).
pub type Transform<K> = Arc<dyn Fn(&mut K) + Send + Sync>;

/// What a panic said: its message when it was a string, a placeholder otherwise.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string panic".into())
}

/// Runs `f`; a panic becomes `Err` with its message.
pub(crate) fn catch<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| panic_message(&*p))
}

/// The transform, made safe to run on the reflector's thread: a panic leaves the object as
/// the transform left it (the cache never drops what the server has) and is logged and
/// passed to the panic callback, instead of ending the reflector and freezing the cache.
pub(crate) fn guard_transform<K: Object>(
    transform: Transform<K>,
    name: String,
    on_panic: Option<PanicHandler>,
) -> Transform<K> {
    Arc::new(move |obj: &mut K| {
        if let Err(what) = catch(|| transform(obj)) {
            let msg = format!(
                "kube-informer/{name}: the transform panicked on {}: {what}",
                obj.metadata().key()
            );
            log::error!("{msg}");
            if let Some(cb) = &on_panic {
                cb(&msg);
            }
        }
    })
}
