//! Deltas: what happened to one object, as the DeltaFIFO queues them.
//!
//! Objects are shared (`Arc<K>`): the FIFO, the cache and every handler hold the same
//! decoded object. A deletion the reflector did not see (it was disconnected, then relisted)
//! carries a tombstone instead of the object: the key and the last state anyone knew.

use std::sync::Arc;

use crate::api::{Meta, Object};

/// The last known state of an object whose deletion was missed (client-go's
/// `DeletedFinalStateUnknown`): a relist no longer contained it.
#[derive(Debug)]
pub struct DeletedFinalStateUnknown<K> {
    /// The cache key (`namespace/name` or `name`).
    pub key: String,
    /// The newest state known before the object disappeared; it may be stale.
    pub last_known: Arc<K>,
}

impl<K> Clone for DeletedFinalStateUnknown<K> {
    fn clone(&self) -> Self {
        DeletedFinalStateUnknown {
            key: self.key.clone(),
            last_known: Arc::clone(&self.last_known),
        }
    }
}

/// What a deletion carries: the final object, or a tombstone when the deletion was missed.
#[derive(Debug)]
pub enum DeletedObject<K> {
    /// The object as the watch's DELETED event gave it.
    Object(Arc<K>),
    /// The deletion was inferred from a relist; the state is the last one known.
    Tombstone(DeletedFinalStateUnknown<K>),
}

impl<K> Clone for DeletedObject<K> {
    fn clone(&self) -> Self {
        match self {
            DeletedObject::Object(o) => DeletedObject::Object(Arc::clone(o)),
            DeletedObject::Tombstone(t) => DeletedObject::Tombstone(t.clone()),
        }
    }
}

impl<K> DeletedObject<K> {
    /// The object, or the tombstone's last known state.
    pub fn object(&self) -> &Arc<K> {
        match self {
            DeletedObject::Object(o) => o,
            DeletedObject::Tombstone(t) => &t.last_known,
        }
    }

    /// True for a tombstone (the deletion was missed while disconnected).
    pub fn is_tombstone(&self) -> bool {
        matches!(self, DeletedObject::Tombstone(_))
    }
}

/// The kinds of change, as client-go names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeltaType {
    /// Created (watch ADDED).
    Added,
    /// Changed (watch MODIFIED).
    Updated,
    /// Deleted (watch DELETED, or a tombstone after a relist).
    Deleted,
    /// Listed by a relist (it may or may not have changed).
    Replaced,
    /// Re-delivered by a periodic resync; nothing changed.
    Sync,
}

/// One change to one object.
#[derive(Debug)]
pub enum Delta<K> {
    /// Created.
    Added(Arc<K>),
    /// Changed.
    Updated(Arc<K>),
    /// Deleted.
    Deleted(DeletedObject<K>),
    /// Listed by a (re)list.
    Replaced(Arc<K>),
    /// Re-delivered by a resync.
    Sync(Arc<K>),
}

impl<K> Clone for Delta<K> {
    fn clone(&self) -> Self {
        match self {
            Delta::Added(o) => Delta::Added(Arc::clone(o)),
            Delta::Updated(o) => Delta::Updated(Arc::clone(o)),
            Delta::Deleted(d) => Delta::Deleted(d.clone()),
            Delta::Replaced(o) => Delta::Replaced(Arc::clone(o)),
            Delta::Sync(o) => Delta::Sync(Arc::clone(o)),
        }
    }
}

impl<K> Delta<K> {
    /// The kind of change.
    pub fn kind(&self) -> DeltaType {
        match self {
            Delta::Added(_) => DeltaType::Added,
            Delta::Updated(_) => DeltaType::Updated,
            Delta::Deleted(_) => DeltaType::Deleted,
            Delta::Replaced(_) => DeltaType::Replaced,
            Delta::Sync(_) => DeltaType::Sync,
        }
    }

    /// The object concerned (for a tombstone, its last known state).
    pub fn object(&self) -> &Arc<K> {
        match self {
            Delta::Added(o) | Delta::Updated(o) | Delta::Replaced(o) | Delta::Sync(o) => o,
            Delta::Deleted(d) => d.object(),
        }
    }
}

/// The cache key of an object: `namespace/name`, or `name` when cluster-scoped.
pub fn key_of<K: Object>(obj: &K) -> String {
    obj.metadata().key()
}

/// [`key_of`] as one shared string (the metadata's `shared_key`): the FIFO's map and queue,
/// the key in flight and the cache's map and indexes all hold this one allocation instead of
/// a copy each.
pub(crate) fn shared_key_of<K: Object>(obj: &K) -> Arc<str> {
    obj.metadata().shared_key()
}
