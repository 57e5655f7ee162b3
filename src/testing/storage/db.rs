//! The store as the rooms share it: the [`Store`] behind its lock, the condition that wakes
//! watches on every write, and the flag that says the server is stopping.
//!
//! Why its own file: every room (writes, patches, admission, discovery, the kubelet's logs,
//! exec and evictions) reads and writes the store, and most wait or notify. They take a
//! `&Db` instead of the server's whole state, so they depend on the store and not on the
//! server (`serving/server.rs`), which holds a `Db` beside what only it needs (connections,
//! faults, options) and depends on the rooms, not the other way round.

use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::{Condvar, Mutex};

use super::store::Store;

/// The shared store, its change notification and the stop flag.
pub(crate) struct Db {
    pub store: Mutex<Store>,
    /// Notified on every write and on stop; watches wait on it.
    pub changed: Condvar,
    pub stopped: AtomicBool,
}

impl Db {
    pub(crate) fn new(store: Store) -> Db {
        Db {
            store: Mutex::new(store),
            changed: Condvar::new(),
            stopped: AtomicBool::new(false),
        }
    }

    /// Wakes every watch (after a write, or on stop).
    pub(crate) fn notify(&self) {
        self.changed.notify_all();
    }

    /// True once the server is stopping: a long answer (a watch, a follow) ends.
    pub(crate) fn stopping(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }
}
