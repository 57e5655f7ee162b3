//! `DeltaFifo`: the queue between the reflector and the informer (client-go's DeltaFIFO).
//!
//! Each key is queued once, with the list of its changes (`Deltas`) since it was last popped,
//! so the consumer sees every change of an object in order while objects stay in arrival
//! order. A Mutex guards the state; one Condvar wakes the consumer, another the producers.
//!
//! Semantics follow client-go, with two of its known faults mended:
//! - **Dedup**: only two consecutive `Deleted` deltas collapse, keeping the one that says more
//!   (the real final object rather than a tombstone).
//! - **Replace** (a relist) queues `Replaced` for every listed object, and a `Deleted`
//!   tombstone for every key that is cached *or only queued* and missing from the list.
//!   (client-go once forgot the queued-only keys and leaked their objects into the cache.)
//! - **Resync** queues `Sync` for cached keys with nothing queued; it never contacts a server.
//!   Each `Sync` is a key of its own at the back of the queue, so one resync's are popped
//!   before the next one's (the informer relies on this to send each to the right handlers).
//! - **Pop** hands the deltas to the consumer *after* releasing the lock, so a slow consumer
//!   never stalls the reflector (client-go processes while holding it). There must be a single
//!   consumer: that is what keeps each key's changes in order. While a key is being
//!   processed the cache does not show its new state yet, so the FIFO remembers that state
//!   ("in flight") and every producer treats it as the key's newest one: a delete or a
//!   relist counts an object being added as present (nothing is lost), a relist counts an
//!   object being deleted as gone (no second deletion), and a resync queues the object being
//!   written, never the stale copy still cached (no rollback, no resurrection). The model
//!   test `tests/delta_fifo_model.rs` and the fuzz target `delta_dedup` leave pops in
//!   flight while every other operation runs, and check the cache the consumer writes.
//! - **Backpressure**: when more than the high-water mark of deltas is pending, watch events
//!   (`add`/`update`/`delete`) block until the consumer catches up, so a stalled consumer
//!   slows the socket instead of growing memory without bound. `replace` and `resync` do not
//!   block: a relist's objects are already in memory, and a resync only queues idle keys.
//!   The default mark, [`DEFAULT_HIGH_WATER`], bounds pending watch deltas to 10,000 (each an
//!   `Arc` shared with the cache, so the memory held is that of the changed objects).

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::Arc;

use super::delta::{shared_key_of, DeletedFinalStateUnknown, DeletedObject, Delta};
use super::graveyard::Graveyard;
use super::store::Store;
use crate::api::Object;
use crate::sync::atomic::{AtomicBool, Ordering};
use crate::sync::{Condvar, Mutex, MutexGuard};

/// Default high-water mark: pending deltas above which watch events block.
pub const DEFAULT_HIGH_WATER: usize = 10_000;

/// One watch event's change, for [`DeltaFifo::push_watch`].
#[derive(Debug)]
pub enum WatchChange<K> {
    /// ADDED: queued as `Added`.
    Added(Arc<K>),
    /// MODIFIED: queued as `Updated`.
    Updated(Arc<K>),
    /// DELETED: queued as `Deleted`, unless the key is neither cached, queued nor in flight.
    Deleted(Arc<K>),
}

/// The FIFO was closed; nothing more goes in or comes out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Closed;

impl fmt::Display for Closed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the DeltaFIFO is closed")
    }
}

impl std::error::Error for Closed {}

/// What the FIFO consults to find deletions missed by a relist and to resync: the cache.
pub trait KnownObjects<K>: Send + Sync {
    /// Every key of the cache.
    fn known_keys(&self) -> Vec<String>;
    /// One cached object.
    fn known_object(&self, key: &str) -> Option<Arc<K>>;
}

impl<K: Object> KnownObjects<K> for Store<K> {
    fn known_keys(&self) -> Vec<String> {
        self.list_keys()
    }
    fn known_object(&self, key: &str) -> Option<Arc<K>> {
        self.get(key)
    }
}

/// Keys are shared strings: the map, the queue and the key in flight hold one allocation
/// (which the informer then hands on to the cache).
struct State<K> {
    items: HashMap<Arc<str>, Vec<Delta<K>>>,
    /// The key being processed by the consumer, and the object it will leave in the cache
    /// (`None` when its last delta is a deletion). The consumer works outside the lock, so
    /// until it is done the cache does not show this object yet: deletes and relists must
    /// count it as present.
    in_flight: Option<(Arc<str>, Option<Arc<K>>)>,
    queue: VecDeque<Arc<str>>,
    pending: usize,
    populated: bool,
    initial_population: usize,
    /// Set by the first replace to begin: from then until the FIFO is populated, every newly
    /// queued key counts toward the initial population.
    counting_initial: bool,
    /// The keys listed so far by a replace in progress (one delivered page by page).
    listed: Option<HashSet<Arc<str>>>,
    closed: bool,
}

/// The delta queue. Share it behind an `Arc`.
pub struct DeltaFifo<K> {
    state: Mutex<State<K>>,
    not_empty: Condvar,
    not_full: Condvar,
    synced: Condvar,
    /// `has_synced`, readable without the lock (the consumer asks after every pop).
    synced_flag: AtomicBool,
    /// Called once when the FIFO becomes synced (the informer logs it).
    on_synced: Mutex<Option<Box<dyn FnOnce() + Send>>>,
    known: Option<Arc<dyn KnownObjects<K>>>,
    high_water: usize,
    /// Objects the cache's handlers let go of, for the producer (the reflector) to free.
    graveyard: Arc<Graveyard<K>>,
}

impl<K> fmt::Debug for DeltaFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.lock();
        f.debug_struct("DeltaFifo")
            .field("queued_keys", &st.queue.len())
            .field("pending_deltas", &st.pending)
            .field("closed", &st.closed)
            .finish()
    }
}

impl<K: Object> DeltaFifo<K> {
    /// A FIFO that checks `known` (the cache) on replace, delete and resync.
    pub fn new(known: Option<Arc<dyn KnownObjects<K>>>) -> Self {
        Self::with_high_water(known, DEFAULT_HIGH_WATER)
    }

    /// A FIFO with a custom high-water mark (at least 1).
    pub fn with_high_water(known: Option<Arc<dyn KnownObjects<K>>>, high_water: usize) -> Self {
        DeltaFifo {
            state: Mutex::new(State {
                items: HashMap::new(),
                in_flight: None,
                queue: VecDeque::new(),
                pending: 0,
                populated: false,
                initial_population: 0,
                counting_initial: false,
                listed: None,
                closed: false,
            }),
            not_empty: Condvar::new(),
            not_full: Condvar::new(),
            synced: Condvar::new(),
            synced_flag: AtomicBool::new(false),
            on_synced: Mutex::new(None),
            known,
            high_water: high_water.max(1),
            graveyard: Arc::default(),
        }
    }

    /// Where the consumer's side leaves objects for the producer's thread to free (see
    /// [`graveyard`](super::graveyard)).
    pub(crate) fn graveyard(&self) -> &Arc<Graveyard<K>> {
        &self.graveyard
    }

    /// Queues a delta for `key`, collapsing two consecutive deletions.
    fn queue_action(&self, st: &mut State<K>, key: Arc<str>, delta: Delta<K>) {
        let deltas = st.items.entry(Arc::clone(&key)).or_default();
        let newly_queued = deltas.is_empty();
        deltas.push(delta);
        st.pending += 1;
        let n = deltas.len();
        if n >= 2 {
            if let (Delta::Deleted(_), Delta::Deleted(newer)) = (&deltas[n - 2], &deltas[n - 1]) {
                let keep_older = newer.is_tombstone();
                let newer = deltas.pop().expect("two deltas present");
                if !keep_older {
                    deltas[n - 2] = newer;
                }
                st.pending -= 1;
            }
        }
        if newly_queued {
            st.queue.push_back(key);
            if st.counting_initial && !st.populated {
                st.initial_population += 1;
            }
        }
        self.not_empty.notify_one();
    }

    /// Waits for room under the high-water mark; `Err` when closed.
    fn wait_for_room<'a>(
        &self,
        mut st: MutexGuard<'a, State<K>>,
    ) -> Result<MutexGuard<'a, State<K>>, Closed> {
        while !st.closed && st.pending >= self.high_water {
            self.not_full.wait(&mut st);
        }
        if st.closed {
            Err(Closed)
        } else {
            Ok(st)
        }
    }

    /// Queues `Added` (watch ADDED).
    pub fn add(&self, obj: Arc<K>) -> Result<(), Closed> {
        self.push_watch([WatchChange::Added(obj)])
    }

    /// Queues `Updated` (watch MODIFIED).
    pub fn update(&self, obj: Arc<K>) -> Result<(), Closed> {
        self.push_watch([WatchChange::Updated(obj)])
    }

    /// Queues `Deleted` (watch DELETED). Ignored, as in client-go, when the key is neither
    /// cached nor queued: there is nothing to delete.
    pub fn delete(&self, obj: Arc<K>) -> Result<(), Closed> {
        self.push_watch([WatchChange::Deleted(obj)])
    }

    /// Queues a run of watch events in order, as `add`, `update` and `delete` one by one
    /// would (each waits for room under the high-water mark), but taking the lock once for
    /// the run: a consumer asleep is woken once, not once per event. The reflector hands over
    /// the events that arrived together.
    pub fn push_watch(
        &self,
        changes: impl IntoIterator<Item = WatchChange<K>>,
    ) -> Result<(), Closed> {
        let mut st = self.state.lock();
        for change in changes {
            st = self.wait_for_room(st)?;
            match change {
                WatchChange::Added(obj) => {
                    self.queue_action(&mut st, shared_key_of(&*obj), Delta::Added(obj));
                }
                WatchChange::Updated(obj) => {
                    self.queue_action(&mut st, shared_key_of(&*obj), Delta::Updated(obj));
                }
                WatchChange::Deleted(obj) => {
                    let key = shared_key_of(&*obj);
                    let queued = st.items.contains_key(&key);
                    if queued || self.settled_object(&st, &key).is_some() {
                        let delta = Delta::Deleted(DeletedObject::Object(obj));
                        self.queue_action(&mut st, key, delta);
                    }
                }
            }
        }
        Ok(())
    }

    /// The newest object queued for `key`.
    fn newest_queued(st: &State<K>, key: &str) -> Option<Arc<K>> {
        st.items
            .get(key)
            .and_then(|d| d.last())
            .map(|d| Arc::clone(d.object()))
    }

    /// The newest state of `key` outside the queue: what the consumer is about to leave in
    /// the cache when the key is in flight (`None` if it is being deleted, even though the
    /// cache may still show it), else the cached object.
    fn settled_object(&self, st: &State<K>, key: &str) -> Option<Arc<K>> {
        match &st.in_flight {
            Some((k, outcome)) if **k == *key => outcome.clone(),
            _ => self.known.as_ref().and_then(|k| k.known_object(key)),
        }
    }

    /// Every key with a settled object ([`settled_object`](Self::settled_object)): the
    /// cache's keys, corrected by the key in flight.
    fn settled_keys(&self, st: &State<K>) -> Vec<Arc<str>> {
        let mut keys: Vec<Arc<str>> = self
            .known
            .as_ref()
            .map(|k| k.known_keys())
            .unwrap_or_default()
            .into_iter()
            .map(Arc::from)
            .collect();
        if let Some((k, outcome)) = &st.in_flight {
            let cached = keys.iter().position(|c| c == k);
            match (outcome, cached) {
                (Some(_), None) => keys.push(Arc::clone(k)),
                (None, Some(i)) => {
                    keys.swap_remove(i);
                }
                _ => {}
            }
        }
        keys
    }

    /// A relist: `Replaced` for every listed object, tombstones for every cached or queued
    /// key the list no longer has. The first replace also sets what [`has_synced`] waits for.
    ///
    /// [`has_synced`]: Self::has_synced
    pub fn replace(&self, list: Vec<Arc<K>>) -> Result<(), Closed> {
        let mut st = self.open_state()?;
        self.begin_replace_locked(&mut st);
        self.replace_page_locked(&mut st, list);
        self.finish_replace_locked(&mut st);
        Ok(())
    }

    /// Begins a relist delivered page by page: [`replace_page`](Self::replace_page) for each
    /// page, then [`finish_replace`](Self::finish_replace). The result is that of one
    /// [`replace`](Self::replace) with all the pages, but the consumer can work on the first
    /// pages while later ones are still being read. Listed objects may reach the cache before
    /// the list is complete (they are real objects at the list's version); deletions and
    /// [`has_synced`](Self::has_synced) wait for the end.
    pub fn begin_replace(&self) -> Result<(), Closed> {
        let mut st = self.open_state()?;
        self.begin_replace_locked(&mut st);
        Ok(())
    }

    /// Queues `Replaced` for one page of a relist begun with [`begin_replace`](Self::begin_replace)
    /// (without one in progress, it begins one).
    pub fn replace_page(&self, page: Vec<Arc<K>>) -> Result<(), Closed> {
        let mut st = self.open_state()?;
        self.replace_page_locked(&mut st, page);
        Ok(())
    }

    /// Forgets the keys listed so far: the list restarted from the beginning (an expired
    /// continue token), so only what it lists from now on counts as present.
    pub fn restart_replace(&self) {
        let mut st = self.state.lock();
        if let Some(listed) = &mut st.listed {
            listed.clear();
        }
    }

    /// Ends a relist: tombstones for every cached or queued key it did not list. The first
    /// one also sets what [`has_synced`](Self::has_synced) waits for. Without a relist in
    /// progress (none begun, or abandoned) it does nothing.
    pub fn finish_replace(&self) -> Result<(), Closed> {
        let mut st = self.open_state()?;
        self.finish_replace_locked(&mut st);
        Ok(())
    }

    /// Abandons a relist that failed part way: what it queued stays queued (those objects
    /// existed at its version); nothing is deleted and the FIFO is not synced by it.
    pub fn abandon_replace(&self) {
        self.state.lock().listed = None;
    }

    fn open_state(&self) -> Result<MutexGuard<'_, State<K>>, Closed> {
        let st = self.state.lock();
        if st.closed {
            Err(Closed)
        } else {
            Ok(st)
        }
    }

    fn begin_replace_locked(&self, st: &mut State<K>) {
        if !st.counting_initial && !st.populated {
            st.counting_initial = true;
            st.initial_population = st.queue.len();
        }
        st.listed = Some(HashSet::new());
    }

    fn replace_page_locked(&self, st: &mut State<K>, page: Vec<Arc<K>>) {
        if st.listed.is_none() {
            self.begin_replace_locked(st);
        }
        let mut listed = st.listed.take().unwrap_or_default();
        listed.reserve(page.len());
        for obj in page {
            let key = shared_key_of(&*obj);
            listed.insert(Arc::clone(&key));
            self.queue_action(st, key, Delta::Replaced(obj));
        }
        st.listed = Some(listed);
    }

    fn finish_replace_locked(&self, st: &mut State<K>) {
        // Without a replace in progress there is nothing to finish (deleting every key would
        // be the wrong answer to a stray call).
        let Some(listed) = st.listed.take() else {
            return;
        };
        // Sorted, so the order tombstones are queued in does not depend on hashing.
        // The key in flight counts in its newest state: one being deleted is gone already
        // (no second tombstone), one being added is present (it gets one).
        let mut gone: BTreeSet<Arc<str>> = st
            .items
            .keys()
            .filter(|k| !listed.contains(*k))
            .cloned()
            .collect();
        gone.extend(
            self.settled_keys(st)
                .into_iter()
                .filter(|k| !listed.contains(k)),
        );
        for key in gone {
            // The newest state anyone has: a queued change beats the settled one.
            let last_known =
                Self::newest_queued(st, &key).or_else(|| self.settled_object(st, &key));
            if let Some(last_known) = last_known {
                let tomb = DeletedFinalStateUnknown {
                    key: key.to_string(),
                    last_known,
                };
                self.queue_action(st, key, Delta::Deleted(DeletedObject::Tombstone(tomb)));
            }
        }
        if !st.populated {
            st.populated = true;
            if st.initial_population == 0 {
                self.mark_synced();
            }
        }
    }

    /// Queues `Sync` for every cached key that has nothing queued (in key order), and
    /// returns how many it queued. Each goes to the back of the queue as a key of its own, so
    /// the `Sync`s of one resync are popped before those of a later one.
    ///
    /// A key the consumer is processing counts in the state it is about to leave in the
    /// cache: one being deleted gets no `Sync`, one being updated gets a `Sync` of its new
    /// object, never of the copy the cache still shows.
    pub fn resync(&self) -> Result<usize, Closed> {
        let mut st = self.state.lock();
        if st.closed {
            return Err(Closed);
        }
        let mut keys = self.settled_keys(&st);
        keys.sort_unstable();
        let mut queued = 0;
        for key in keys {
            if st.items.contains_key(&key) {
                continue;
            }
            if let Some(obj) = self.settled_object(&st, &key) {
                self.queue_action(&mut st, key, Delta::Sync(obj));
                queued += 1;
            }
        }
        Ok(queued)
    }

    /// Blocks until a key is queued, takes it with all its deltas, and runs `process` on them
    /// without holding the FIFO's lock. `Err(Closed)` once the FIFO is closed (pending deltas
    /// are dropped then: closing is for shutting down).
    pub fn pop<R>(&self, process: impl FnOnce(&str, Vec<Delta<K>>) -> R) -> Result<R, Closed> {
        self.pop_shared(|key, deltas| process(key, deltas))
    }

    /// [`pop`](Self::pop), handing over the key as the shared string the FIFO holds, so the
    /// informer stores the cache's copy without allocating another.
    pub(crate) fn pop_shared<R>(
        &self,
        process: impl FnOnce(&Arc<str>, Vec<Delta<K>>) -> R,
    ) -> Result<R, Closed> {
        let (key, deltas, initial) = {
            let mut st = self.state.lock();
            loop {
                if st.closed {
                    return Err(Closed);
                }
                if let Some(key) = st.queue.pop_front() {
                    let deltas = st.items.remove(&key).unwrap_or_default();
                    st.pending -= deltas.len();
                    let remains = match deltas.last() {
                        Some(Delta::Deleted(_)) | None => None,
                        Some(d) => Some(Arc::clone(d.object())),
                    };
                    st.in_flight = Some((Arc::clone(&key), remains));
                    let initial = st.initial_population > 0;
                    self.not_full.notify_all();
                    break (key, deltas, initial);
                }
                self.not_empty.wait(&mut st);
            }
        };
        let result = process(&key, deltas);
        let mut st = self.state.lock();
        st.in_flight = None;
        if initial {
            st.initial_population = st.initial_population.saturating_sub(1);
            if st.initial_population == 0 && st.populated {
                self.mark_synced();
            }
        }
        Ok(result)
    }

    /// Sets `has_synced` (for good) and tells whoever waits for it.
    fn mark_synced(&self) {
        self.synced_flag.store(true, Ordering::Release);
        self.synced.notify_all();
        if let Some(f) = self.on_synced.lock().take() {
            f();
        }
    }

    /// Calls `f` once, when the FIFO becomes synced (at once if it already is). It runs on
    /// the thread that completes the sync, under the FIFO's lock: keep it short and do not
    /// call back into the FIFO.
    pub(crate) fn on_synced(&self, f: Box<dyn FnOnce() + Send>) {
        let _st = self.state.lock();
        if self.has_synced() {
            f();
        } else {
            *self.on_synced.lock() = Some(f);
        }
    }

    /// True once the first replace happened and every key it queued was popped and processed.
    pub fn has_synced(&self) -> bool {
        self.synced_flag.load(Ordering::Acquire)
    }

    /// Blocks until [`has_synced`](Self::has_synced) is true (returns true), the timeout
    /// passes or the FIFO closes (returns false).
    pub fn wait_for_sync(&self, timeout: std::time::Duration) -> bool {
        let deadline = crate::deadline::after(timeout);
        let mut st = self.state.lock();
        loop {
            if st.populated && st.initial_population == 0 {
                return true;
            }
            if st.closed || self.synced.wait_until(&mut st, deadline).timed_out() {
                return st.populated && st.initial_population == 0;
            }
        }
    }

    /// Closes the FIFO: `pop` and blocked producers return `Closed`.
    pub fn close(&self) {
        self.state.lock().closed = true;
        self.not_empty.notify_all();
        self.not_full.notify_all();
        self.synced.notify_all();
    }

    /// True once closed.
    pub fn is_closed(&self) -> bool {
        self.state.lock().closed
    }

    /// How many keys are queued.
    pub fn len(&self) -> usize {
        self.state.lock().queue.len()
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many deltas are pending across all keys.
    pub fn pending_deltas(&self) -> usize {
        self.state.lock().pending
    }

    /// The queued keys, oldest first.
    pub fn queued_keys(&self) -> Vec<String> {
        self.state
            .lock()
            .queue
            .iter()
            .map(|k| k.to_string())
            .collect()
    }

    /// The deltas queued for one key.
    pub fn deltas_of(&self, key: &str) -> Option<Vec<Delta<K>>> {
        self.state.lock().items.get(key).cloned()
    }

    /// Checks the FIFO's internal invariants (for tests and fuzzing): every key queued once,
    /// a key queued exactly when it has deltas, no two consecutive deletions, and the pending
    /// count right.
    pub fn check_invariants(&self) -> Result<(), String> {
        let st = self.state.lock();
        let mut seen = HashSet::new();
        for k in &st.queue {
            if !seen.insert(k) {
                return Err(format!("key {k:?} queued twice"));
            }
            match st.items.get(k) {
                Some(d) if !d.is_empty() => {}
                _ => return Err(format!("key {k:?} queued without deltas")),
            }
        }
        if st.items.len() != st.queue.len() {
            return Err(format!(
                "{} keys have deltas but {} are queued",
                st.items.len(),
                st.queue.len()
            ));
        }
        let mut total = 0;
        for (k, d) in &st.items {
            total += d.len();
            for pair in d.windows(2) {
                if matches!((&pair[0], &pair[1]), (Delta::Deleted(_), Delta::Deleted(_))) {
                    return Err(format!("key {k:?} has two consecutive Deleted deltas"));
                }
            }
        }
        if total != st.pending {
            return Err(format!("pending count {} but {total} deltas", st.pending));
        }
        Ok(())
    }
}
