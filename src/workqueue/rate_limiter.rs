//! Rate limiters decide how long an item waits before it is retried (client-go's set).
//!
//! - [`ItemExponential`]: per item, `base * 2^failures`, capped (5 ms doubling to 1000 s).
//! - [`Bucket`]: one token bucket for all items (10 per second, bursts of 100).
//! - [`ItemFastSlow`]: per item, a short delay for the first attempts, then a long one.
//! - [`MaxOf`]: the longest delay any of several limiters asks for.
//! - [`default_controller_rate_limiter`]: `MaxOf(ItemExponential, Bucket)`, like client-go.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

use parking_lot::Mutex;

use crate::client::RateLimiter as TokenBucket;

/// Decides retry delays for items.
pub trait RateLimiter<T>: Send + Sync {
    /// How long `item` should wait now (counts as one more failure for per-item limiters).
    fn when(&self, item: &T) -> Duration;
    /// Forgets `item`'s failures (after it succeeded).
    fn forget(&self, item: &T);
    /// How many times `item` has been retried.
    fn num_requeues(&self, item: &T) -> u32;
    /// The delay [`when`](Self::when) would give `item` now, without counting a failure or
    /// taking a token. Limiters that cannot tell without changing state say zero (the
    /// default); every limiter of this module tells.
    fn peek(&self, item: &T) -> Duration {
        let _ = item;
        Duration::ZERO
    }
}

/// Per-item exponential back-off: `base * 2^failures`, at most `max`.
#[derive(Debug)]
pub struct ItemExponential<T> {
    base: Duration,
    max: Duration,
    failures: Mutex<HashMap<T, u32>>,
}

impl<T: Hash + Eq + Clone + Send> ItemExponential<T> {
    /// A limiter starting at `base`, doubling up to `max`.
    pub fn new(base: Duration, max: Duration) -> Self {
        ItemExponential {
            base,
            max,
            failures: Mutex::new(HashMap::new()),
        }
    }
}

impl<T> ItemExponential<T> {
    /// The delay after `failures` failures: `base * 2^failures`, at most `max`.
    fn delay(&self, failures: u32) -> Duration {
        let factor = 2f64.powi(failures.min(1000) as i32);
        let secs = self.base.as_secs_f64() * factor;
        if !secs.is_finite() || secs >= self.max.as_secs_f64() {
            self.max
        } else {
            Duration::try_from_secs_f64(secs).unwrap_or(self.max)
        }
    }
}

impl<T: Hash + Eq + Clone + Send> RateLimiter<T> for ItemExponential<T> {
    fn when(&self, item: &T) -> Duration {
        let mut f = self.failures.lock();
        let n = f.entry(item.clone()).or_insert(0);
        let exp = *n;
        *n = n.saturating_add(1);
        self.delay(exp)
    }
    fn peek(&self, item: &T) -> Duration {
        self.delay(self.num_requeues(item))
    }
    fn forget(&self, item: &T) {
        self.failures.lock().remove(item);
    }
    fn num_requeues(&self, item: &T) -> u32 {
        self.failures.lock().get(item).copied().unwrap_or(0)
    }
}

/// One token bucket for every item: `qps` retries per second, `burst` at once.
#[derive(Debug)]
pub struct Bucket {
    bucket: TokenBucket,
}

impl Bucket {
    /// A bucket of `qps` tokens per second holding `burst`.
    pub fn new(qps: f64, burst: u32) -> Self {
        Bucket {
            bucket: TokenBucket::new(qps, burst),
        }
    }
}

impl<T> RateLimiter<T> for Bucket {
    fn when(&self, _item: &T) -> Duration {
        self.bucket.reserve()
    }
    fn peek(&self, _item: &T) -> Duration {
        self.bucket.peek()
    }
    fn forget(&self, _item: &T) {}
    fn num_requeues(&self, _item: &T) -> u32 {
        0
    }
}

/// Per item: `fast` for the first `max_fast_attempts` retries, `slow` after.
#[derive(Debug)]
pub struct ItemFastSlow<T> {
    fast: Duration,
    slow: Duration,
    max_fast_attempts: u32,
    attempts: Mutex<HashMap<T, u32>>,
}

impl<T: Hash + Eq + Clone + Send> ItemFastSlow<T> {
    /// A limiter with a fast and a slow delay.
    pub fn new(fast: Duration, slow: Duration, max_fast_attempts: u32) -> Self {
        ItemFastSlow {
            fast,
            slow,
            max_fast_attempts,
            attempts: Mutex::new(HashMap::new()),
        }
    }
}

impl<T> ItemFastSlow<T> {
    /// The delay of the `attempt`-th retry (counting from 1).
    fn delay(&self, attempt: u32) -> Duration {
        if attempt <= self.max_fast_attempts {
            self.fast
        } else {
            self.slow
        }
    }
}

impl<T: Hash + Eq + Clone + Send> RateLimiter<T> for ItemFastSlow<T> {
    fn when(&self, item: &T) -> Duration {
        let mut a = self.attempts.lock();
        let n = a.entry(item.clone()).or_insert(0);
        *n = n.saturating_add(1);
        self.delay(*n)
    }
    fn peek(&self, item: &T) -> Duration {
        self.delay(self.num_requeues(item).saturating_add(1))
    }
    fn forget(&self, item: &T) {
        self.attempts.lock().remove(item);
    }
    fn num_requeues(&self, item: &T) -> u32 {
        self.attempts.lock().get(item).copied().unwrap_or(0)
    }
}

/// The longest delay of several limiters.
pub struct MaxOf<T> {
    limiters: Vec<Box<dyn RateLimiter<T>>>,
}

impl<T> std::fmt::Debug for MaxOf<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MaxOf")
            .field("limiters", &self.limiters.len())
            .finish()
    }
}

impl<T> MaxOf<T> {
    /// Combines `limiters`.
    pub fn new(limiters: Vec<Box<dyn RateLimiter<T>>>) -> Self {
        MaxOf { limiters }
    }
}

impl<T> RateLimiter<T> for MaxOf<T> {
    fn when(&self, item: &T) -> Duration {
        self.limiters
            .iter()
            .map(|l| l.when(item))
            .max()
            .unwrap_or_default()
    }
    fn peek(&self, item: &T) -> Duration {
        self.limiters
            .iter()
            .map(|l| l.peek(item))
            .max()
            .unwrap_or_default()
    }
    fn forget(&self, item: &T) {
        for l in &self.limiters {
            l.forget(item);
        }
    }
    fn num_requeues(&self, item: &T) -> u32 {
        self.limiters
            .iter()
            .map(|l| l.num_requeues(item))
            .max()
            .unwrap_or(0)
    }
}

/// client-go's default: per-item exponential (5 ms to 1000 s) and a 10 qps / 100 burst
/// bucket, whichever asks for longer.
pub fn default_controller_rate_limiter<T: Hash + Eq + Clone + Send + Sync + 'static>() -> MaxOf<T> {
    MaxOf::new(vec![
        Box::new(ItemExponential::new(
            Duration::from_millis(5),
            Duration::from_secs(1000),
        )),
        Box::new(Bucket::new(10.0, 100)),
    ])
}
