//! `Controller`: the pattern every Kubernetes controller follows, ready-made.
//!
//! Informer handlers turn each change into the object's key (`namespace/name`); keys go to a
//! rate-limited work queue (so a key changed ten times while waiting is reconciled once);
//! N worker threads take keys and call your `reconcile(key)`, which reads the current state
//! from the informer's cache (a [`Lister`](crate::cache::Lister)) and acts. The result decides
//! what happens to the key:
//! - `Ok(Action::Done)`: forget its retry history;
//! - `Ok(Action::RequeueAfter(d))`: look again after `d`;
//! - `Err(e)` (or a panic): retry with the queue's rate limiter (per-item exponential
//!   back-off and an overall bucket, like client-go's default).
//!
//! Workers start only after the cache has synced, so reconcile never sees a half-filled
//! cache. `stop` lets each worker finish the key in hand, then joins every thread.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::api::Object;
use crate::cache::{DeletedObject, EventHandler, HandlerRegistration, SharedIndexInformer};
use crate::error::{Error, Result};
use crate::workqueue::{RateLimiter, RateLimitingQueue};

/// What to do with a key after reconciling it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Nothing more until the object changes.
    Done,
    /// Reconcile again after this long (even if nothing changes).
    RequeueAfter(Duration),
}

type Reconcile<E> = Arc<dyn Fn(&str) -> std::result::Result<Action, E> + Send + Sync>;

/// Options for a [`Controller`].
pub struct ControllerBuilder<K: Object, E> {
    name: String,
    informer: SharedIndexInformer<K>,
    workers: usize,
    sync_timeout: Duration,
    rate_limiter: Option<Box<dyn RateLimiter<String>>>,
    _error: std::marker::PhantomData<fn() -> E>,
}

/// A running controller; dropping it stops it.
pub struct Controller<K: Object> {
    name: String,
    queue: Arc<RateLimitingQueue<String>>,
    stop: Arc<AtomicBool>,
    workers: Vec<JoinHandle<()>>,
    registration: Option<HandlerRegistration<K>>,
    informer: SharedIndexInformer<K>,
}

impl<K: Object> std::fmt::Debug for Controller<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.name)
            .field("workers", &self.workers.len())
            .finish()
    }
}

/// Enqueues the key of every changed object.
struct Enqueue(Arc<RateLimitingQueue<String>>);

impl<K: Object> EventHandler<K> for Enqueue {
    fn on_add(&mut self, obj: Arc<K>, _initial: bool) {
        self.0.add(obj.metadata().key());
    }
    fn on_update(&mut self, _old: Arc<K>, new: Arc<K>) {
        self.0.add(new.metadata().key());
    }
    fn on_delete(&mut self, obj: DeletedObject<K>) {
        let key = match &obj {
            DeletedObject::Tombstone(t) => t.key.clone(),
            DeletedObject::Object(o) => o.metadata().key(),
        };
        self.0.add(key);
    }
}

impl<K: Object> Controller<K> {
    /// A controller named `name` reconciling the objects of `informer`.
    pub fn builder<E>(name: &str, informer: SharedIndexInformer<K>) -> ControllerBuilder<K, E> {
        ControllerBuilder {
            name: name.to_owned(),
            informer,
            workers: 2,
            sync_timeout: Duration::from_secs(300),
            rate_limiter: None,
            _error: std::marker::PhantomData,
        }
    }

    /// The work queue (for its metrics, or to enqueue keys yourself).
    pub fn queue(&self) -> &RateLimitingQueue<String> {
        &self.queue
    }

    /// Stops the workers after the keys in hand and joins them; unregisters the handler.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(r) = self.registration.take() {
            self.informer.remove_event_handler(r);
        }
        self.queue.shutdown();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

impl<K: Object> Drop for Controller<K> {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl<K: Object, E: std::fmt::Display + 'static> ControllerBuilder<K, E> {
    /// How many worker threads call reconcile (default 2).
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = n.max(1);
        self
    }

    /// How long to wait for the cache to sync before giving up (default 5 minutes).
    pub fn sync_timeout(mut self, timeout: Duration) -> Self {
        self.sync_timeout = timeout;
        self
    }

    /// The retry policy (default: client-go's default controller rate limiter).
    pub fn rate_limiter(mut self, limiter: Box<dyn RateLimiter<String>>) -> Self {
        self.rate_limiter = Some(limiter);
        self
    }

    /// Starts the informer (if not yet), waits for its cache to sync, then starts the workers
    /// calling `reconcile` with each key.
    pub fn run(
        self,
        reconcile: impl Fn(&str) -> std::result::Result<Action, E> + Send + Sync + 'static,
    ) -> Result<Controller<K>> {
        let queue = match self.rate_limiter {
            Some(l) => RateLimitingQueue::with_rate_limiter(&self.name, l),
            None => RateLimitingQueue::new(&self.name),
        };
        let queue = Arc::new(queue.map_err(|e| {
            Error::Config(format!("controller {}: starting its queue: {e}", self.name))
        })?);
        let registration = self
            .informer
            .add_event_handler(Enqueue(Arc::clone(&queue)))?;
        self.informer.start()?;
        let mut controller = Controller {
            name: self.name.clone(),
            queue: Arc::clone(&queue),
            stop: Arc::new(AtomicBool::new(false)),
            workers: Vec::new(),
            registration: Some(registration),
            informer: self.informer.clone(),
        };
        let synced = controller
            .registration
            .as_ref()
            .is_some_and(|r| r.wait_for_sync(self.sync_timeout));
        if !synced {
            return Err(Error::Config(format!(
                "controller {}: the cache did not sync within {:?}",
                self.name, self.sync_timeout
            )));
        }
        let reconcile: Reconcile<E> = Arc::new(reconcile);
        for i in 0..self.workers {
            let (queue, stop, reconcile, name) = (
                Arc::clone(&queue),
                Arc::clone(&controller.stop),
                Arc::clone(&reconcile),
                self.name.clone(),
            );
            let worker = std::thread::Builder::new()
                .name(format!("kube-informer/controller/{}/worker-{i}", self.name))
                .spawn(move || work(&name, &queue, &stop, &reconcile))
                .map_err(|e| Error::Config(format!("spawning a worker: {e}")))?;
            controller.workers.push(worker);
        }
        Ok(controller)
    }
}

fn work<E: std::fmt::Display>(
    name: &str,
    queue: &RateLimitingQueue<String>,
    stop: &AtomicBool,
    reconcile: &Reconcile<E>,
) {
    while !stop.load(Ordering::SeqCst) {
        let Some(key) = queue.get() else { return };
        if stop.load(Ordering::SeqCst) {
            queue.done(&key);
            return;
        }
        let outcome = catch_unwind(AssertUnwindSafe(|| reconcile(&key)));
        match outcome {
            Ok(Ok(Action::Done)) => queue.forget(&key),
            Ok(Ok(Action::RequeueAfter(d))) => {
                queue.forget(&key);
                queue.add_after(key.clone(), d);
            }
            Ok(Err(e)) => {
                log::warn!(
                    "controller {name}: reconciling {key} failed (retry {}): {e}",
                    queue.num_requeues(&key) + 1
                );
                queue.add_rate_limited(key.clone());
            }
            Err(_) => {
                log::error!("controller {name}: reconciling {key} panicked; retrying");
                queue.add_rate_limited(key.clone());
            }
        }
        queue.done(&key);
    }
}
