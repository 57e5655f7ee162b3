//! What the decoding thread is asked to leave out: `metadata.managedFields`, skipped while
//! decoding (its bytes checked and jumped over, never decoded into values and then dropped).
//!
//! Why a thread-local: decoding runs deep inside serde's generic visitors (k8s-openapi's
//! types, users' slim types) and in the scanner's own `ObjectMeta` decoder, none of which can
//! be handed an argument; and every object an informer caches is decoded on its reflector's
//! thread (list pages and watch events alike), so the reflector sets the option once for its
//! thread and every decoder there reads it.

use std::cell::Cell;

thread_local! {
    static STRIP_MANAGED_FIELDS: Cell<bool> = const { Cell::new(false) };
}

/// Whether decoders on this thread skip `metadata.managedFields`.
pub(crate) fn strip_managed_fields() -> bool {
    STRIP_MANAGED_FIELDS.with(Cell::get)
}

/// Makes every decoder on this thread skip `metadata.managedFields` (`on`), or keep it,
/// until the guard is dropped, which puts the previous setting back.
///
/// Informers do it on their reflector's thread when asked
/// ([`ReflectorConfig::strip_managed_fields`](crate::cache::ReflectorConfig::strip_managed_fields));
/// this is for a program's own `Api::list`, `get` and `watch` calls. The bytes are checked
/// and jumped over, never decoded: less memory and less CPU than dropping them afterwards.
/// It applies to the `managedFields` member of every object that is a `metadata` member's
/// value, in every type decoded on this thread (`DynamicObject`, metadata-only, slim types,
/// k8s-openapi's types).
///
/// ```
/// use kube_informer::api::{strip_managed_fields_on_this_thread, DynamicObject, Object};
///
/// let json = r#"{"metadata":{"name":"a","managedFields":[{"manager":"kubectl"}]}}"#;
/// let (kept, _) = DynamicObject::from_json_prefix(json)?;
/// assert!(kept.metadata.managed_fields.is_some());
/// let _stripping = strip_managed_fields_on_this_thread(true);
/// let (stripped, _) = DynamicObject::from_json_prefix(json)?;
/// assert!(stripped.metadata.managed_fields.is_none());
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn strip_managed_fields_on_this_thread(on: bool) -> StripGuard {
    StripGuard {
        previous: STRIP_MANAGED_FIELDS.with(|c| c.replace(on)),
        thread_bound: std::marker::PhantomData,
    }
}

/// Puts the thread's previous `managedFields` setting back when dropped (see
/// [`strip_managed_fields_on_this_thread`]). It stays on the thread that made it.
#[must_use = "the setting lasts only while the guard lives"]
pub struct StripGuard {
    previous: bool,
    thread_bound: std::marker::PhantomData<*const ()>,
}

impl std::fmt::Debug for StripGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StripGuard").finish_non_exhaustive()
    }
}

impl Drop for StripGuard {
    fn drop(&mut self) {
        STRIP_MANAGED_FIELDS.with(|c| c.set(self.previous));
    }
}
