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

/// Makes decoders on this thread skip `metadata.managedFields` (or not) until the guard is
/// dropped, which puts the previous setting back.
pub(crate) fn set_strip_managed_fields(on: bool) -> StripGuard {
    StripGuard {
        previous: STRIP_MANAGED_FIELDS.with(|c| c.replace(on)),
    }
}

/// Restores the thread's previous setting when dropped.
pub(crate) struct StripGuard {
    previous: bool,
}

impl Drop for StripGuard {
    fn drop(&mut self) {
        STRIP_MANAGED_FIELDS.with(|c| c.set(self.previous));
    }
}
