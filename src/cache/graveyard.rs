//! `Graveyard`: objects the cache let go of, freed on the thread that made them.
//!
//! Why: every object is allocated on the reflector thread, which decodes it; the object it
//! replaces reaches its last owner on a handler's thread (the old state of an update, or a
//! deletion), so its memory was freed there. With glibc's malloc that is the costly case: a
//! chunk freed by another thread goes back to the reflector's arena under the arena's lock,
//! which the reflector holds while it allocates the next objects, so both threads sleep and
//! wake on that lock for every object; large typed objects (hundreds of allocations each)
//! spent more CPU on it than on their decoding. A listener therefore hands an object it holds
//! the last reference to over to the graveyard, and the reflector frees what is there each
//! time it has handed a run of events to the FIFO, in the same arena, uncontended.
//!
//! The graveyard holds at most [`GRAVEYARD_BOUND`] objects: past it (a reflector waiting for
//! the network while handlers work through a backlog, say), the object is freed where it is,
//! as before. So it never keeps more than that many objects alive, however quiet the watch:
//! they wait for the reflector's next run of events (a bookmark counts: kube-apiserver sends
//! one about every minute) or list page, or, while it backs off after an error or once the
//! informer is stopped, until the informer is dropped. Handlers hold a reference the
//! listener keeps for this until they return (see
//! [`EventHandler`](crate::cache::EventHandler)).

use std::sync::Arc;

use crate::sync::channel::{self, Receiver, Sender, TryRecvError};

/// How many objects the graveyard holds at most.
pub(crate) const GRAVEYARD_BOUND: usize = 256;

/// Objects waiting to be freed by the reflector thread.
pub(crate) struct Graveyard<K> {
    tx: Sender<Arc<K>>,
    rx: Receiver<Arc<K>>,
}

impl<K> Default for Graveyard<K> {
    fn default() -> Self {
        let (tx, rx) = channel::unbounded();
        Graveyard { tx, rx }
    }
}

impl<K> Graveyard<K> {
    /// Takes `obj` if the caller holds its last reference and there is room; otherwise `obj`
    /// is simply dropped here.
    pub(crate) fn bury(&self, obj: Arc<K>) {
        if Arc::strong_count(&obj) == 1 && self.rx.len() < GRAVEYARD_BOUND {
            let _ = self.tx.send(obj);
        }
    }

    /// Frees what is buried (on the calling thread), at most [`GRAVEYARD_BOUND`] objects: a
    /// listener burying as fast as this frees cannot keep the caller (the reflector, which
    /// should be reading its watch) here.
    pub(crate) fn clear(&self) {
        for _ in 0..GRAVEYARD_BOUND {
            match self.rx.try_recv() {
                Ok(obj) => drop(obj),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => return,
            }
        }
    }

    /// How many objects wait to be freed.
    #[cfg(all(test, not(shuttle)))]
    pub(crate) fn len(&self) -> usize {
        self.rx.len()
    }
}

#[cfg(all(test, not(shuttle)))]
mod tests {
    use super::*;

    #[test]
    fn takes_only_last_references_up_to_its_bound_and_frees_on_clear() {
        let g: Graveyard<String> = Graveyard::default();
        // Still owned elsewhere: not taken (the other owner frees it).
        let shared = Arc::new("shared".to_owned());
        g.bury(Arc::clone(&shared));
        assert_eq!(g.len(), 0);
        assert_eq!(Arc::strong_count(&shared), 1);
        // Last references are taken, up to the bound; past it they are freed at once.
        let weak: Vec<_> = (0..GRAVEYARD_BOUND + 10)
            .map(|i| {
                let obj = Arc::new(i.to_string());
                let weak = Arc::downgrade(&obj);
                g.bury(obj);
                weak
            })
            .collect();
        assert_eq!(g.len(), GRAVEYARD_BOUND);
        let alive = weak.iter().filter(|w| w.upgrade().is_some()).count();
        assert_eq!(
            alive, GRAVEYARD_BOUND,
            "the overflow was freed where it was"
        );
        g.clear();
        assert_eq!(g.len(), 0);
        assert!(weak.iter().all(|w| w.upgrade().is_none()), "all freed");
    }
}
