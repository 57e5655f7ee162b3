//! Client-side rate limit: a token bucket shared by every request of a client.
//!
//! Defaults match client-go (5 requests per second, bursts of 10). Each request reserves a
//! token under a short lock and sleeps outside it, so waiting callers never hold the lock.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// A token bucket: `qps` tokens per second, at most `burst` saved up.
#[derive(Debug)]
pub struct RateLimiter {
    qps: f64,
    burst: f64,
    state: Mutex<(f64, Instant)>,
}

impl RateLimiter {
    /// A bucket that starts full.
    pub fn new(qps: f64, burst: u32) -> Self {
        let burst = f64::from(burst.max(1));
        RateLimiter {
            qps,
            burst,
            state: Mutex::new((burst, Instant::now())),
        }
    }

    /// How long the caller must wait for its token (the token is taken now).
    pub fn reserve(&self) -> Duration {
        let mut st = self.state.lock();
        let now = Instant::now();
        let refill = now.duration_since(st.1).as_secs_f64() * self.qps;
        st.0 = (st.0 + refill).min(self.burst);
        st.1 = now;
        st.0 -= 1.0;
        Self::wait_for(st.0, self.qps)
    }

    /// How long a caller would wait for a token now, without taking one.
    pub fn peek(&self) -> Duration {
        let st = self.state.lock();
        let refill = Instant::now().duration_since(st.1).as_secs_f64() * self.qps;
        Self::wait_for((st.0 + refill).min(self.burst) - 1.0, self.qps)
    }

    /// The wait until `tokens` (negative: owed) is back to zero at `qps`; a rate too small
    /// to express as a wait (or zero) gives `Duration::MAX` rather than a panic.
    fn wait_for(tokens: f64, qps: f64) -> Duration {
        if tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::try_from_secs_f64(-tokens / qps).unwrap_or(Duration::MAX)
        }
    }

    /// Blocks until the caller may send one request.
    pub fn acquire(&self) {
        let wait = self.reserve();
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tiny_qps_waits_long_without_panicking() {
        let rl = RateLimiter::new(1e-30, 1);
        assert_eq!(rl.reserve(), Duration::ZERO);
        assert_eq!(rl.reserve(), Duration::MAX);
    }

    #[test]
    fn burst_is_free_then_tokens_cost_one_over_qps() {
        let rl = RateLimiter::new(10.0, 3);
        for _ in 0..3 {
            assert_eq!(rl.reserve(), Duration::ZERO);
        }
        let w = rl.reserve();
        assert!(
            w > Duration::from_millis(50) && w <= Duration::from_millis(100),
            "{w:?}"
        );
        let w2 = rl.reserve();
        assert!(
            w2 > w,
            "a second waiter queues behind the first: {w2:?} vs {w:?}"
        );
    }
}
