//! `RateLimitingQueue`: a delaying queue whose retries wait as a [`RateLimiter`] says.

use std::hash::Hash;
use std::ops::Deref;
use std::time::Duration;

use super::delaying::DelayingQueue;
use super::rate_limiter::{default_controller_rate_limiter, RateLimiter};

/// A work queue with `add_rate_limited`, `forget` and `num_requeues`. Dereferences to the
/// [`DelayingQueue`] (and through it to the basic queue).
pub struct RateLimitingQueue<T: Hash + Eq + Clone + Send + 'static> {
    queue: DelayingQueue<T>,
    limiter: Box<dyn RateLimiter<T>>,
}

impl<T: Hash + Eq + Clone + Send + 'static> std::fmt::Debug for RateLimitingQueue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimitingQueue")
            .field("queue", &self.queue)
            .finish_non_exhaustive()
    }
}

impl<T: Hash + Eq + Clone + Send + 'static> Deref for RateLimitingQueue<T> {
    type Target = DelayingQueue<T>;
    fn deref(&self) -> &DelayingQueue<T> {
        &self.queue
    }
}

impl<T: Hash + Eq + Clone + Send + Sync + 'static> RateLimitingQueue<T> {
    /// A queue with client-go's default controller rate limiter. Fails only when its timer
    /// thread cannot be started.
    pub fn new(name: &str) -> std::io::Result<Self> {
        Self::with_rate_limiter(name, Box::new(default_controller_rate_limiter()))
    }
}

impl<T: Hash + Eq + Clone + Send + 'static> RateLimitingQueue<T> {
    /// A queue with a chosen rate limiter. Fails only when its timer thread cannot be
    /// started.
    pub fn with_rate_limiter(
        name: &str,
        limiter: Box<dyn RateLimiter<T>>,
    ) -> std::io::Result<Self> {
        Ok(RateLimitingQueue {
            queue: DelayingQueue::new(name)?,
            limiter,
        })
    }

    /// Adds `item` after the delay the rate limiter gives it (a retry).
    pub fn add_rate_limited(&self, item: T) {
        self.queue.count_retry();
        let delay = self.limiter.when(&item);
        self.queue.add_after(item, delay);
    }

    /// Forgets `item`'s retries (call after it was processed successfully).
    pub fn forget(&self, item: &T) {
        self.limiter.forget(item);
    }

    /// How many times `item` was retried since it was last forgotten.
    pub fn num_requeues(&self, item: &T) -> u32 {
        self.limiter.num_requeues(item)
    }

    /// The delay the limiter would give `item` now, without queueing it, counting a
    /// failure or taking a token (see [`RateLimiter::peek`]).
    pub fn peek_delay(&self, item: &T) -> Duration {
        self.limiter.peek(item)
    }
}
