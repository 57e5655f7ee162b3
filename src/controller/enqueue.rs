//! The handlers' side of the queue: each event of an informer becomes keys on the
//! controller's queue, each key once per event.
//!
//! Why one place: the primary informer's handler and the triggers' (`owns`, `watches`) share
//! the rules — filters judge updates only (adds, deletes and resyncs always pass), dropped
//! updates are counted, and an update queues each of its keys **once**: the keys of the new
//! and of the old state are merged before they are queued. (Queuing the owner once for the
//! new state and again for the old one reconciled it twice whenever a worker took the first
//! add before the second arrived: the queue deduplicates only keys still waiting, not a key
//! being reconciled.)

use std::sync::Arc;

use super::filter::{update_passes, EventFilter};
use super::stats::Counters;
use crate::api::{Meta, Object};
use crate::cache::{DeletedObject, EventHandler};
use crate::workqueue::RateLimitingQueue;

/// Where handlers put keys: the queue, and the counters that count them.
#[derive(Clone)]
pub(super) struct Sink {
    pub(super) queue: Arc<RateLimitingQueue<String>>,
    pub(super) counters: Arc<Counters>,
}

impl Sink {
    /// Queues `key` (once per call: callers merge an event's keys first).
    pub(super) fn add(&self, key: String) {
        self.counters.enqueued();
        self.queue.add(key);
    }

    /// Queues each key of `keys` once, in their first order.
    pub(super) fn add_all(&self, keys: impl IntoIterator<Item = String>) {
        let mut queued: Vec<String> = Vec::new();
        for key in keys {
            if !queued.contains(&key) {
                self.add(key.clone());
                queued.push(key);
            }
        }
    }
}

/// The primary informer's handler: every passing change queues the object's own key.
pub(super) struct Primary<K> {
    pub(super) sink: Sink,
    pub(super) filter: Option<EventFilter<K>>,
}

impl<K: Object> EventHandler<K> for Primary<K> {
    fn on_add(&mut self, obj: Arc<K>, _initial: bool) {
        self.sink.add(obj.metadata().key());
    }

    fn on_update(&mut self, old: Arc<K>, new: Arc<K>) {
        if !update_passes(self.filter.as_ref(), &old, &new) {
            self.sink.counters.filtered();
            return;
        }
        self.sink.add(new.metadata().key());
    }

    fn on_delete(&mut self, obj: DeletedObject<K>) {
        let key = match &obj {
            DeletedObject::Tombstone(t) => t.key.clone(),
            DeletedObject::Object(o) => o.metadata().key(),
        };
        // The object is gone: its last failure no longer says anything about it.
        self.sink.counters.forget(&key);
        self.sink.add(key);
    }
}
