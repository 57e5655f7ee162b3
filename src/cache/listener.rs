//! The processor listener: one thread and one crossbeam channel per registered handler.
//!
//! The informer thread never waits for a handler: it puts each notification on the handler's
//! channel and moves on, so a slow or stuck handler stalls nobody else.
//!
//! **Memory policy for a stalled handler.** client-go buffers without limit, a known cause of
//! out-of-memory kills. Here the channel holds at most `max_backlog` notifications (default
//! [`DEFAULT_MAX_BACKLOG`]). Beyond that the listener switches to *coalescing*: later
//! notifications wait in a map keyed by object, where successive changes of one object merge
//! (`update(a→b)` then `update(b→c)` is `update(a→c)`; an add then a delete of an object the
//! handler never saw cancel out). A stalled handler therefore holds at most `max_backlog`
//! notifications plus two per object of the cache, however long it stalls and however busy
//! the cluster is. What it sees stays correct at the level of object states — the newest
//! state of every object, and every deletion — like a level-driven controller expects; only
//! intermediate states it was too slow to see are skipped. Order is kept: the channel drains
//! first, then the coalesced changes in the order their objects first changed.
//!
//! A panicking handler is caught; the panic is counted, logged and passed to the informer's
//! panic callback, and the listener goes on with the next notification.
//!
//! An object the listener turns out to hold the last reference to once the handler is done
//! with it (an update's old state, a deletion) goes to the informer's
//! [`graveyard`](super::graveyard), to be freed on the reflector thread that allocated it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::catch::{catch, PanicHandler};
use super::delta::DeletedObject;
use super::graveyard::Graveyard;
use super::handler::EventHandler;
use super::health::HandlerStats;
use crate::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use crate::sync::channel::{self, Receiver, Sender, TryRecvError};
use crate::sync::thread::JoinHandle;
use crate::sync::{Condvar, Mutex};

/// Default number of notifications a handler's channel holds before coalescing starts.
pub const DEFAULT_MAX_BACKLOG: usize = 100_000;

/// One notification for a handler.
pub(crate) enum Notification<K> {
    Add(Arc<K>, bool),
    Update(Arc<K>, Arc<K>),
    Delete(DeletedObject<K>),
}

/// A notification with how many sent notifications it stands for (merging adds up).
struct Weighted<K> {
    n: Notification<K>,
    weight: u64,
}

/// The coalesced notifications of a handler past its channel's bound: per object, at most
/// two (a deletion of a state the handler saw, then a new add or update), in the order the
/// objects first changed. An object whose changes cancel out leaves nothing behind, so the
/// memory held is bounded by the number of objects with something to deliver.
struct Overflow<K> {
    active: bool,
    /// First-change sequence number -> key: the delivery order.
    order: BTreeMap<u64, String>,
    /// Key -> its sequence number in `order` and its coalesced notifications (never empty).
    pending: HashMap<String, (u64, Vec<Weighted<K>>)>,
    next_seq: u64,
    /// Notifications held, over all keys.
    len: usize,
}

impl<K> Default for Overflow<K> {
    fn default() -> Self {
        Overflow {
            active: false,
            order: BTreeMap::new(),
            pending: HashMap::new(),
            next_seq: 0,
            len: 0,
        }
    }
}

impl<K> Overflow<K> {
    /// Queues `n` for `key`, merging with what is pending for it. Returns the weight of
    /// notifications that cancelled out (they count as delivered).
    fn push(&mut self, key: &str, n: Notification<K>) -> u64 {
        let (seq, list) = match self.pending.get_mut(key) {
            Some((seq, list)) => (*seq, list),
            None => {
                let seq = self.next_seq;
                self.next_seq += 1;
                self.order.insert(seq, key.to_owned());
                let entry = self.pending.entry(key.to_owned()).or_default();
                entry.0 = seq;
                (seq, &mut entry.1)
            }
        };
        let before = list.len();
        let mut cancelled = 0;
        let n = match (list.last_mut(), n) {
            (Some(last), Notification::Update(_, new))
                if matches!(last.n, Notification::Add(..)) =>
            {
                if let Notification::Add(obj, _) = &mut last.n {
                    *obj = new;
                }
                last.weight += 1;
                None
            }
            (Some(last), Notification::Update(_, new))
                if matches!(last.n, Notification::Update(..)) =>
            {
                if let Notification::Update(_, cur) = &mut last.n {
                    *cur = new;
                }
                last.weight += 1;
                None
            }
            (Some(last), Notification::Delete(_)) if matches!(last.n, Notification::Add(..)) => {
                // An add the handler never saw, then its delete: nothing to tell.
                cancelled = last.weight + 1;
                list.pop();
                None
            }
            (Some(last), Notification::Delete(d))
                if matches!(last.n, Notification::Update(..) | Notification::Delete(_)) =>
            {
                let keep_old = d.is_tombstone() && matches!(last.n, Notification::Delete(_));
                if !keep_old {
                    last.n = Notification::Delete(d);
                }
                last.weight += 1;
                None
            }
            (_, n) => Some(n),
        };
        if let Some(n) = n {
            list.push(Weighted { n, weight: 1 });
        }
        let after = list.len();
        self.len = self.len + after - before;
        if after == 0 {
            self.pending.remove(key);
            self.order.remove(&seq);
        }
        cancelled
    }

    /// The notifications of the object that changed first.
    fn pop(&mut self) -> Option<Vec<Weighted<K>>> {
        let (_, key) = self.order.pop_first()?;
        let (_, list) = self.pending.remove(&key)?;
        self.len -= list.len();
        Some(list)
    }

    /// Objects with something pending (for tests of the bound).
    #[cfg(test)]
    fn objects(&self) -> (usize, usize) {
        (self.order.len(), self.pending.len())
    }
}

/// A listener's count of handled notifications and the smallest count a waiter waits for
/// (`u64::MAX`: nobody waits).
struct Progress {
    processed: u64,
    wake_at: u64,
}

/// A handler's listener: its channel, its thread, its sync and resync state.
pub(crate) struct Listener<K> {
    pub id: u64,
    tx: Mutex<Option<Sender<Notification<K>>>>,
    rx: Receiver<Notification<K>>,
    overflow: Mutex<Overflow<K>>,
    max_backlog: usize,
    stop: AtomicBool,
    /// Notifications sent (counted before coalescing).
    pub sent: AtomicU64,
    /// Notifications handed to the handler.
    delivered: AtomicU64,
    /// Notifications merged into others or cancelled out.
    coalesced: AtomicU64,
    /// Notifications handled (or merged away), and the smallest count a waiter waits for.
    progress: Mutex<Progress>,
    /// Signalled when `processed` reaches `wake_at`, and on shutdown.
    progressed: Condvar,
    /// How many times `progressed` was signalled for progress (waiters woken by count).
    wakeups: AtomicU64,
    /// `sent` when the initial list was complete for this handler; `None` until then.
    pub sync_target: Mutex<Option<u64>>,
    pub panics: AtomicU64,
    pub resync_period: Duration,
    pub next_resync: Mutex<Instant>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Where objects this listener held the last reference to are freed (see
    /// [`graveyard`](super::graveyard)); `None`: freed here.
    graveyard: Option<Arc<Graveyard<K>>>,
}

impl<K: Send + Sync + 'static> Listener<K> {
    pub fn new(
        id: u64,
        max_backlog: usize,
        resync_period: Duration,
        graveyard: Option<Arc<Graveyard<K>>>,
    ) -> Arc<Self> {
        let (tx, rx) = channel::unbounded();
        Arc::new(Listener {
            id,
            tx: Mutex::new(Some(tx)),
            rx,
            overflow: Mutex::new(Overflow::default()),
            max_backlog: max_backlog.max(1),
            stop: AtomicBool::new(false),
            sent: AtomicU64::new(0),
            delivered: AtomicU64::new(0),
            coalesced: AtomicU64::new(0),
            progress: Mutex::new(Progress {
                processed: 0,
                wake_at: u64::MAX,
            }),
            progressed: Condvar::new(),
            wakeups: AtomicU64::new(0),
            sync_target: Mutex::new(None),
            panics: AtomicU64::new(0),
            resync_period,
            next_resync: Mutex::new(crate::deadline::after(resync_period)),
            thread: Mutex::new(None),
            graveyard,
        })
    }

    /// Starts the listener thread running `handler`.
    pub fn spawn(
        self: &Arc<Self>,
        thread_name: String,
        name: String,
        mut handler: Box<dyn EventHandler<K>>,
        on_panic: Option<PanicHandler>,
    ) -> std::io::Result<()> {
        let me = Arc::clone(self);
        let t = crate::sync::thread::Builder::new()
            .name(thread_name)
            .spawn(move || {
                // One buffer for the whole life of the thread: no allocation per batch.
                let mut batch = Vec::new();
                while me.next_batch(&mut batch) {
                    for w in batch.drain(..) {
                        if me.stop.load(Ordering::SeqCst) {
                            return;
                        }
                        me.deliver(&mut *handler, w.n, &name, on_panic.as_ref());
                        me.delivered.fetch_add(1, Ordering::Relaxed);
                        me.coalesced.fetch_add(w.weight - 1, Ordering::Relaxed);
                        me.mark_processed(w.weight);
                    }
                }
            })?;
        *self.thread.lock() = Some(t);
        Ok(())
    }

    fn deliver(
        &self,
        handler: &mut dyn EventHandler<K>,
        n: Notification<K>,
        name: &str,
        on_panic: Option<&PanicHandler>,
    ) {
        // The object this notification may be the last owner of (the old state of an
        // update, a deleted object), kept past the handler to be freed by its maker.
        let last_owner = self.graveyard.as_ref().and_then(|_| match &n {
            Notification::Add(..) => None,
            Notification::Update(old, _) => Some(Arc::clone(old)),
            Notification::Delete(d) => Some(Arc::clone(d.object())),
        });
        let result = catch(|| match n {
            Notification::Add(o, initial) => handler.on_add(o, initial),
            Notification::Update(old, new) => handler.on_update(old, new),
            Notification::Delete(d) => handler.on_delete(d),
        });
        if let (Some(graveyard), Some(obj)) = (&self.graveyard, last_owner) {
            graveyard.bury(obj);
        }
        if let Err(what) = result {
            self.panics.fetch_add(1, Ordering::SeqCst);
            let msg = format!("{name}: handler panicked: {what}");
            log::error!("{msg}");
            if let Some(cb) = on_panic {
                cb(&msg);
            }
        }
    }

    /// Counts `weight` more notifications handled, and wakes the waiters only when the count
    /// reaches the smallest target one of them registered: an informer's initial sync of n
    /// objects then wakes a `wait_for_sync` caller once, not n times.
    ///
    /// No wake-up is lost: a waiter registers its target and goes to sleep while holding the
    /// lock this takes (the condvar releases it atomically), so this either sees the target
    /// and wakes the waiter, or runs before the waiter checks the count and the waiter then
    /// sees the new count without sleeping. Every waiter woken re-registers its own target if
    /// it is still short, so several waiters with different targets are all served.
    fn mark_processed(&self, weight: u64) {
        let mut p = self.progress.lock();
        p.processed += weight;
        if p.processed >= p.wake_at {
            p.wake_at = u64::MAX;
            drop(p);
            self.wakeups.fetch_add(1, Ordering::Relaxed);
            self.progressed.notify_all();
        }
    }

    /// Fills `batch` (empty on entry) with the next notifications to handle: the channel
    /// first, then coalesced ones, waiting while there are none; `false` when the listener is
    /// removed or the informer stopped.
    fn next_batch(&self, batch: &mut Vec<Weighted<K>>) -> bool {
        if self.stop.load(Ordering::SeqCst) {
            return false;
        }
        // Whatever is in the channel is older than anything coalesced: nothing goes to the
        // channel while the overflow is active, and the overflow is made inactive only once
        // empty. So a notification taken from the channel can be handled at once...
        if self.take_from_channel(batch) {
            return true;
        }
        let mut ov = self.overflow.lock();
        // ...but an empty channel must be seen again under the overflow's lock (which `send`
        // holds): a notification sent to the channel after the look above, and another sent
        // on to the overflow because that one filled the channel, would otherwise be handled
        // newest first.
        if self.take_from_channel(batch) {
            return true;
        }
        if let Some(list) = ov.pop() {
            batch.extend(list);
            return true;
        }
        ov.active = false;
        drop(ov);
        // Nothing to do: wait in the channel (`shutdown` disconnects it). Its blocking receive
        // spins a little before it sleeps, which measured cheaper here than a sleep and a
        // wake-up per notification when a fast handler keeps up.
        match self.rx.recv() {
            Ok(n) => {
                batch.push(Weighted { n, weight: 1 });
                true
            }
            Err(_) => false,
        }
    }

    /// Moves the channel's oldest notification into `batch`; `true` if there was one. One at
    /// a time: what waits in the channel counts in [`backlog`](Self::backlog) and towards the
    /// bound past which notifications coalesce, and must go on counting until it is handled.
    fn take_from_channel(&self, batch: &mut Vec<Weighted<K>>) -> bool {
        match self.rx.try_recv() {
            Ok(n) => {
                batch.push(Weighted { n, weight: 1 });
                true
            }
            // Only `shutdown` disconnects, and it sets `stop` first: the caller sees it.
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => false,
        }
    }

    /// Hands a notification to the listener without waiting.
    pub fn send(&self, key: &str, n: Notification<K>) {
        self.sent.fetch_add(1, Ordering::SeqCst);
        let mut ov = self.overflow.lock();
        if !ov.active && self.rx.len() < self.max_backlog {
            if let Some(tx) = &*self.tx.lock() {
                let _ = tx.send(n);
            }
            return;
        }
        ov.active = true;
        let cancelled = ov.push(key, n);
        drop(ov);
        if cancelled > 0 {
            self.coalesced.fetch_add(cancelled, Ordering::Relaxed);
            self.mark_processed(cancelled);
        }
    }

    /// Notifications waiting: in the channel plus coalesced ones.
    pub fn backlog(&self) -> usize {
        self.rx.len() + self.overflow.lock().len
    }

    /// This handler's counters.
    pub fn stats(&self) -> HandlerStats {
        HandlerStats {
            id: self.id,
            delivered: self.delivered.load(Ordering::Relaxed),
            coalesced: self.coalesced.load(Ordering::Relaxed),
            backlog: self.backlog(),
            panics: self.panics.load(Ordering::Relaxed),
        }
    }

    pub fn processed(&self) -> u64 {
        self.progress.lock().processed
    }

    /// True once the handler has handled everything up to its sync target.
    pub fn reached_target(&self) -> bool {
        match *self.sync_target.lock() {
            Some(t) => self.processed() >= t,
            None => false,
        }
    }

    /// Waits until the handler handled `target` notifications, or the deadline.
    pub fn wait_processed(&self, target: u64, deadline: Instant) -> bool {
        let mut p = self.progress.lock();
        while p.processed < target {
            if self.stop.load(Ordering::SeqCst) {
                return false;
            }
            // Under the lock: `mark_processed` cannot miss it (see there).
            p.wake_at = p.wake_at.min(target);
            if self.progressed.wait_until(&mut p, deadline).timed_out() {
                return p.processed >= target;
            }
        }
        true
    }

    /// Stops the thread (after the notification in hand) and joins it.
    pub fn shutdown(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.tx.lock().take();
        // Under the lock, so a waiter between its `stop` check and its sleep is not missed.
        drop(self.progress.lock());
        self.progressed.notify_all();
        let t = self.thread.lock().take();
        if let Some(t) = t {
            if t.thread().id() != crate::sync::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::DynamicObject;

    fn pod(name: &str, rv: u32) -> Arc<DynamicObject> {
        let mut o = DynamicObject::default();
        o.metadata.namespace = Some("ns".into());
        o.metadata.name = Some(name.into());
        o.metadata.resource_version = Some(rv.to_string());
        Arc::new(o)
    }

    /// Fault 8 of the review: adds and deletes that cancel out left empty entries behind for
    /// a stalled handler, so the overflow grew with every object ever seen.
    #[test]
    fn a_stalled_handler_holds_nothing_for_objects_that_came_and_went() {
        // No thread: the handler is stalled for the whole test.
        let l = Listener::<DynamicObject>::new(0, 1, Duration::ZERO, None);
        l.send("ns/first", Notification::Add(pod("first", 1), false));
        for i in 0..100_000u32 {
            let key = format!("ns/p{i}");
            l.send(&key, Notification::Add(pod(&key, i), false));
            l.send(
                &key,
                Notification::Delete(DeletedObject::Object(pod(&key, i + 1))),
            );
        }
        assert_eq!(l.backlog(), 1);
        assert_eq!(l.overflow.lock().objects(), (0, 0));
        assert_eq!(l.processed(), 200_000, "cancelled pairs count as delivered");
    }

    /// The order is that of first changes, and a key that cancelled out and came back
    /// queues after the keys that changed meanwhile.
    #[test]
    fn coalesced_changes_keep_first_change_order() {
        let l = Listener::<DynamicObject>::new(0, 1, Duration::ZERO, None);
        l.send("ns/x", Notification::Add(pod("x", 1), false));
        l.send("ns/a", Notification::Add(pod("a", 2), false));
        l.send("ns/b", Notification::Add(pod("b", 3), false));
        l.send(
            "ns/a",
            Notification::Delete(DeletedObject::Object(pod("a", 4))),
        );
        l.send("ns/a", Notification::Add(pod("a", 5), false));
        l.send("ns/b", Notification::Update(pod("b", 3), pod("b", 6)));
        let mut ov = l.overflow.lock();
        let mut seen = Vec::new();
        while let Some(batch) = ov.pop() {
            for w in batch {
                match w.n {
                    Notification::Add(o, _) => seen.push(format!("add {}", o.metadata.key())),
                    Notification::Update(_, o) => seen.push(format!("update {}", o.metadata.key())),
                    Notification::Delete(d) => {
                        seen.push(format!("delete {}", d.object().metadata.key()))
                    }
                }
            }
        }
        assert_eq!(seen, ["add ns/b", "add ns/a"]);
        assert_eq!(ov.len, 0);
    }

    /// `wait_processed` waiters are woken when their targets are reached, not once per
    /// notification: 200,000 notifications handled while three threads wait for different
    /// counts (one of them past the end, so it times out) wake the waiters a handful of times,
    /// and none of them misses its count (no lost wake-up).
    #[test]
    fn waiters_wake_at_their_targets_not_per_notification() {
        const N: u64 = 200_000;
        let l = Listener::<DynamicObject>::new(0, usize::MAX, Duration::ZERO, None);
        l.spawn(
            "ki/test/lis0".into(),
            "test-listener".into(),
            Box::new(crate::cache::HandlerFns::new()),
            None,
        )
        .unwrap();
        let object = pod("p", 1);
        let (started_tx, started_rx) = crossbeam_channel::unbounded();
        let waiters: Vec<_> = [N / 3, N, N + 1]
            .into_iter()
            .map(|target| {
                let (l, started) = (Arc::clone(&l), started_tx.clone());
                std::thread::spawn(move || {
                    started.send(()).unwrap();
                    // Generous for the reachable targets; the unreachable one times out when
                    // the test is otherwise done.
                    let bound = if target > N { 2 } else { 60 };
                    let r = l.wait_processed(target, Instant::now() + Duration::from_secs(bound));
                    (target, r)
                })
            })
            .collect();
        for _ in 0..3 {
            started_rx.recv().unwrap();
        }
        for _ in 0..N {
            l.send("ns/p", Notification::Update(object.clone(), object.clone()));
        }
        for w in waiters {
            let (target, reached) = w.join().unwrap();
            assert_eq!(reached, target <= N, "waiter for {target}");
        }
        assert_eq!(l.processed(), N);
        let wakeups = l.wakeups.load(Ordering::Relaxed);
        assert!(
            wakeups <= 3,
            "{wakeups} wake-ups for {N} notifications and 3 waiters"
        );
        // A waiter for a count already reached returns at once.
        assert!(l.wait_processed(N, Instant::now()));
        l.shutdown();
    }

    /// A waiter is released by shutdown, whenever it comes.
    #[test]
    fn shutdown_releases_a_waiter() {
        let l = Listener::<DynamicObject>::new(0, 1, Duration::ZERO, None);
        let waiter = {
            let l = Arc::clone(&l);
            std::thread::spawn(move || {
                l.wait_processed(1, Instant::now() + Duration::from_secs(60))
            })
        };
        l.shutdown();
        assert!(!waiter.join().unwrap());
    }
}

#[cfg(all(test, shuttle))]
#[path = "interleavings/listener.rs"]
mod interleavings;

#[cfg(all(test, shuttle))]
#[path = "interleavings/progress.rs"]
mod interleavings_progress;
