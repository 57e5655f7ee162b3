//! `DelayingQueue`: a [`Queue`] whose items can be added after a delay.
//!
//! One named timer thread per queue holds delayed items ordered by ready time and sleeps on a
//! Condvar until the earliest one (or a new, earlier one, or shutdown): no busy waiting. An
//! item delayed twice keeps the earlier ready time. The timer thread is joined on shutdown.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::ops::Deref;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::queue::Queue;

struct Waiting<T> {
    by_time: BTreeMap<(Instant, u64), T>,
    by_item: HashMap<T, (Instant, u64)>,
    seq: u64,
    stopped: bool,
}

struct Timer<T> {
    waiting: Mutex<Waiting<T>>,
    cond: Condvar,
}

/// A work queue with `add_after`. Dereferences to the underlying [`Queue`].
pub struct DelayingQueue<T: Hash + Eq + Clone + Send + 'static> {
    queue: Arc<Queue<T>>,
    timer: Arc<Timer<T>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl<T: Hash + Eq + Clone + Send + 'static> std::fmt::Debug for DelayingQueue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DelayingQueue")
            .field("queue", &self.queue)
            .field("waiting", &self.timer.waiting.lock().by_item.len())
            .finish()
    }
}

impl<T: Hash + Eq + Clone + Send + 'static> Deref for DelayingQueue<T> {
    type Target = Queue<T>;
    fn deref(&self) -> &Queue<T> {
        &self.queue
    }
}

impl<T: Hash + Eq + Clone + Send + 'static> DelayingQueue<T> {
    /// A delaying queue whose timer thread is named `ki/<name>/dlay`.
    /// Fails only when that thread cannot be started (the process is out of threads).
    pub fn new(name: &str) -> std::io::Result<Self> {
        let queue = Arc::new(Queue::new());
        let timer = Arc::new(Timer {
            waiting: Mutex::new(Waiting {
                by_time: BTreeMap::new(),
                by_item: HashMap::new(),
                seq: 0,
                stopped: false,
            }),
            cond: Condvar::new(),
        });
        let (q, t) = (Arc::clone(&queue), Arc::clone(&timer));
        let thread = std::thread::Builder::new()
            .name(crate::thread_name::thread_name(name, "dlay"))
            .spawn(move || timer_loop(&q, &t))?;
        Ok(DelayingQueue {
            queue,
            timer,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Adds `item` once `delay` has passed (at once for a zero delay). If the item is already
    /// waiting, the earlier ready time wins.
    pub fn add_after(&self, item: T, delay: Duration) {
        if self.queue.is_shutting_down() {
            return;
        }
        if delay.is_zero() {
            self.queue.add(item);
            return;
        }
        let ready = crate::deadline::after(delay);
        let mut w = self.timer.waiting.lock();
        if let Some(&(at, seq)) = w.by_item.get(&item) {
            if at <= ready {
                return;
            }
            w.by_time.remove(&(at, seq));
        }
        w.seq += 1;
        let key = (ready, w.seq);
        w.by_time.insert(key, item.clone());
        w.by_item.insert(item, key);
        self.timer.cond.notify_one();
    }

    /// Items waiting for their delay.
    pub fn waiting(&self) -> usize {
        self.timer.waiting.lock().by_item.len()
    }

    /// Shuts the queue down and joins the timer thread (delayed items are dropped).
    pub fn shutdown(&self) {
        self.queue.shutdown();
        self.stop_timer();
    }

    /// Shuts down, waits (bounded) for items in processing, joins the timer thread.
    pub fn shutdown_with_drain(&self, timeout: Duration) -> bool {
        self.stop_timer();
        self.queue.shutdown_with_drain(timeout)
    }

    fn stop_timer(&self) {
        self.timer.waiting.lock().stopped = true;
        self.timer.cond.notify_all();
        if let Some(t) = self.thread.lock().take() {
            let _ = t.join();
        }
    }

    /// The queue's counters, with the delayed items.
    pub fn metrics(&self) -> super::QueueMetrics {
        let mut m = self.queue.metrics();
        m.waiting_for_delay = self.waiting();
        m
    }
}

impl<T: Hash + Eq + Clone + Send + 'static> Drop for DelayingQueue<T> {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn timer_loop<T: Hash + Eq + Clone + Send>(queue: &Queue<T>, timer: &Timer<T>) {
    let mut w = timer.waiting.lock();
    loop {
        if w.stopped {
            return;
        }
        let now = Instant::now();
        while let Some((&(at, seq), _)) = w.by_time.iter().next() {
            if at > now {
                break;
            }
            if let Some(item) = w.by_time.remove(&(at, seq)) {
                w.by_item.remove(&item);
                queue.add(item);
            }
        }
        match w.by_time.keys().next() {
            Some(&(at, _)) => {
                timer.cond.wait_until(&mut w, at);
            }
            None => timer.cond.wait(&mut w),
        }
    }
}
