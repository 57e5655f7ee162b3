//! `Queue`: client-go's work queue — dirty and processing sets that make it safe for many
//! workers and many producers.
//!
//! - An item added several times before a worker takes it is processed once.
//! - An item added while a worker processes it is queued again when the worker calls
//!   [`done`](Queue::done), never handed to a second worker at the same time.
//! - [`get`](Queue::get) blocks on a Condvar until an item or shutdown. After
//!   [`shutdown`](Queue::shutdown), `add` is ignored and `get` hands out what is still queued,
//!   then returns `None`. [`shutdown_with_drain`](Queue::shutdown_with_drain) also waits (with
//!   a bound) until every item handed out is done.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::metrics::QueueMetrics;

struct State<T> {
    queue: VecDeque<T>,
    dirty: HashSet<T>,
    processing: HashMap<T, Instant>,
    queued_at: HashMap<T, Instant>,
    shutting_down: bool,
    metrics: QueueMetrics,
    /// Told each item's time queued and time in processing (the `metrics` feature's
    /// histograms).
    #[cfg(feature = "metrics")]
    observer: Option<std::sync::Arc<dyn super::metrics::QueueObserver>>,
}

/// A work queue of `T`s. Share it behind an `Arc`.
pub struct Queue<T> {
    state: Mutex<State<T>>,
    cond: Condvar,
}

impl<T> std::fmt::Debug for Queue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.state.lock();
        f.debug_struct("Queue")
            .field("depth", &st.queue.len())
            .field("processing", &st.processing.len())
            .field("shutting_down", &st.shutting_down)
            .finish()
    }
}

impl<T: Hash + Eq + Clone + Send> Default for Queue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Hash + Eq + Clone + Send> Queue<T> {
    /// An empty queue.
    pub fn new() -> Self {
        Queue {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                dirty: HashSet::new(),
                processing: HashMap::new(),
                queued_at: HashMap::new(),
                shutting_down: false,
                metrics: QueueMetrics::default(),
                #[cfg(feature = "metrics")]
                observer: None,
            }),
            cond: Condvar::new(),
        }
    }

    /// Marks `item` as needing processing.
    pub fn add(&self, item: T) {
        let mut st = self.state.lock();
        if st.shutting_down || st.dirty.contains(&item) {
            return;
        }
        st.metrics.adds += 1;
        st.dirty.insert(item.clone());
        if st.processing.contains_key(&item) {
            return;
        }
        st.queued_at.insert(item.clone(), Instant::now());
        st.queue.push_back(item);
        self.cond.notify_one();
    }

    /// Blocks until an item is ready (and marks it as processing), or returns `None` once the
    /// queue is shut down and empty.
    pub fn get(&self) -> Option<T> {
        let mut st = self.state.lock();
        while st.queue.is_empty() && !st.shutting_down {
            self.cond.wait(&mut st);
        }
        Self::take(&mut st)
    }

    /// Like [`get`](Self::get), but `None` as soon as `stop` is set, with items left queued
    /// (for workers that stop while the queue lives on). Set `stop`, then call
    /// [`wake_all`](Self::wake_all): the flag is read under the queue's lock, so no waiter
    /// misses it.
    pub(crate) fn get_unless(&self, stop: &std::sync::atomic::AtomicBool) -> Option<T> {
        let mut st = self.state.lock();
        loop {
            if stop.load(std::sync::atomic::Ordering::SeqCst) {
                return None;
            }
            if !st.queue.is_empty() || st.shutting_down {
                return Self::take(&mut st);
            }
            self.cond.wait(&mut st);
        }
    }

    /// Wakes every waiting [`get_unless`](Self::get_unless) to read its stop flag again.
    pub(crate) fn wake_all(&self) {
        let _st = self.state.lock();
        self.cond.notify_all();
    }

    /// Like [`get`](Self::get), giving up after `timeout` (`None` then too).
    pub fn get_timeout(&self, timeout: Duration) -> Option<T> {
        let deadline = crate::deadline::after(timeout);
        let mut st = self.state.lock();
        while st.queue.is_empty() && !st.shutting_down {
            if self.cond.wait_until(&mut st, deadline).timed_out() {
                break;
            }
        }
        Self::take(&mut st)
    }

    /// Hands out the front item, if any, and marks it as processing.
    fn take(st: &mut State<T>) -> Option<T> {
        let item = st.queue.pop_front()?;
        let now = Instant::now();
        if let Some(t) = st.queued_at.remove(&item) {
            let waited = now.duration_since(t);
            st.metrics.queue_time_total += waited;
            st.metrics.queue_time_max = st.metrics.queue_time_max.max(waited);
            #[cfg(feature = "metrics")]
            if let Some(o) = &st.observer {
                o.queued(waited);
            }
        }
        st.metrics.gets += 1;
        st.dirty.remove(&item);
        st.processing.insert(item.clone(), now);
        Some(item)
    }

    /// Marks `item` as processed; if it was added again meanwhile, it is queued again now.
    pub fn done(&self, item: &T) {
        let mut st = self.state.lock();
        if let Some(started) = st.processing.remove(item) {
            let worked = started.elapsed();
            st.metrics.work_time_total += worked;
            st.metrics.work_time_max = st.metrics.work_time_max.max(worked);
            #[cfg(feature = "metrics")]
            if let Some(o) = &st.observer {
                o.worked(worked);
            }
        }
        if st.dirty.contains(item) {
            st.queued_at.insert(item.clone(), Instant::now());
            st.queue.push_back(item.clone());
            self.cond.notify_one();
        }
        if st.processing.is_empty() {
            // shutdown_with_drain may be waiting for this.
            self.cond.notify_all();
        }
    }

    /// Stops accepting items; `get` hands out what is queued, then returns `None`.
    pub fn shutdown(&self) {
        self.state.lock().shutting_down = true;
        self.cond.notify_all();
    }

    /// [`shutdown`](Self::shutdown), then waits until every item handed out is done (or the
    /// timeout). Returns true when everything was done in time.
    pub fn shutdown_with_drain(&self, timeout: Duration) -> bool {
        let deadline = crate::deadline::after(timeout);
        let mut st = self.state.lock();
        st.shutting_down = true;
        self.cond.notify_all();
        while !st.processing.is_empty() {
            if self.cond.wait_until(&mut st, deadline).timed_out() {
                return st.processing.is_empty();
            }
        }
        true
    }

    /// True once shut down.
    pub fn is_shutting_down(&self) -> bool {
        self.state.lock().shutting_down
    }

    /// Items waiting to be handed out.
    pub fn len(&self) -> usize {
        self.state.lock().queue.len()
    }

    /// True when nothing waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The queue's counters now.
    pub fn metrics(&self) -> QueueMetrics {
        let st = self.state.lock();
        let mut m = st.metrics.clone();
        m.depth = st.queue.len();
        m.processing = st.processing.len();
        let running = st.processing.values().map(|t| t.elapsed());
        m.longest_running = running.clone().max().unwrap_or_default();
        m.unfinished_work = running.sum();
        m
    }

    /// Reports each item's time queued and time in processing to `observer` from now on.
    #[cfg(feature = "metrics")]
    pub(crate) fn set_observer(&self, observer: std::sync::Arc<dyn super::metrics::QueueObserver>) {
        self.state.lock().observer = Some(observer);
    }

    pub(crate) fn count_retry(&self) {
        self.state.lock().metrics.retries += 1;
    }
}
