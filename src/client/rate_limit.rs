//! Client-side rate limit: a token bucket shared by every request of a client.
//!
//! It is a safety net against a program that loops on requests by mistake, not a way to
//! protect the server: kube-apiserver protects itself with API Priority and Fairness. So the
//! defaults ([`ClientConfig`](super::ClientConfig): 50 requests per second, bursts of 300) are
//! kubectl's, not client-go's historical 5 and 10, which made the 200 pages of a 100,000-object
//! list wait about 38 s. Each request reserves a token under a short lock and sleeps outside
//! it, so waiting callers never hold the lock.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// A token bucket: `qps` tokens per second, at most `burst` saved up.
#[derive(Debug)]
pub struct RateLimiter {
    qps: f64,
    burst: f64,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// Tokens in the bucket (negative: owed by callers already told to wait).
    tokens: f64,
    /// When `tokens` was last brought up to date.
    at: Instant,
    stats: RateLimiterStats,
}

/// What a [`RateLimiter`] has done so far: counters for a metrics system or a test.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateLimiterStats {
    /// Tokens taken (one per request attempt).
    pub requests: u64,
    /// Requests that had to wait for their token.
    pub delayed: u64,
    /// The waits imposed, summed.
    pub total_delay: Duration,
}

impl RateLimiter {
    /// A bucket that starts full.
    pub fn new(qps: f64, burst: u32) -> Self {
        Self::new_at(qps, burst, Instant::now())
    }

    /// A bucket that starts full at `now` (for a caller that keeps its own clock).
    pub fn new_at(qps: f64, burst: u32, now: Instant) -> Self {
        let burst = f64::from(burst.max(1));
        RateLimiter {
            qps,
            burst,
            state: Mutex::new(State {
                tokens: burst,
                at: now,
                stats: RateLimiterStats::default(),
            }),
        }
    }

    /// How long the caller must wait for its token (the token is taken now).
    pub fn reserve(&self) -> Duration {
        self.reserve_at(Instant::now())
    }

    /// [`reserve`](Self::reserve) at the instant `now` (a clock the caller controls; instants
    /// earlier than the last one seen count as that one).
    pub fn reserve_at(&self, now: Instant) -> Duration {
        let mut st = self.state.lock();
        st.tokens = self.refilled(&st, now);
        st.at = st.at.max(now);
        st.tokens -= 1.0;
        let wait = Self::wait_for(st.tokens, self.qps);
        st.stats.requests += 1;
        if !wait.is_zero() {
            st.stats.delayed += 1;
            st.stats.total_delay = st.stats.total_delay.saturating_add(wait);
        }
        wait
    }

    /// How long a caller would wait for a token now, without taking one.
    pub fn peek(&self) -> Duration {
        let st = self.state.lock();
        Self::wait_for(self.refilled(&st, Instant::now()) - 1.0, self.qps)
    }

    /// The tokens in the bucket at `now`: what it held, plus what `qps` added since, capped
    /// at the burst.
    fn refilled(&self, st: &State, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(st.at);
        (st.tokens + elapsed.as_secs_f64() * self.qps).min(self.burst)
    }

    /// The counters so far.
    pub fn stats(&self) -> RateLimiterStats {
        self.state.lock().stats
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
    use crate::client::ClientConfig;

    #[test]
    fn a_tiny_qps_waits_long_without_panicking() {
        let rl = RateLimiter::new(1e-30, 1);
        assert_eq!(rl.reserve(), Duration::ZERO);
        assert_eq!(rl.reserve(), Duration::MAX);
    }

    #[test]
    fn burst_is_free_then_tokens_cost_one_over_qps() {
        let t0 = Instant::now();
        let rl = RateLimiter::new_at(10.0, 3, t0);
        for _ in 0..3 {
            assert_eq!(rl.reserve_at(t0), Duration::ZERO);
        }
        assert_eq!(rl.reserve_at(t0), Duration::from_millis(100));
        assert_eq!(
            rl.reserve_at(t0),
            Duration::from_millis(200),
            "a second waiter queues behind the first"
        );
        // 250 ms later the debt of two tokens is paid and half a token saved.
        assert_eq!(
            rl.reserve_at(t0 + Duration::from_millis(250)),
            Duration::from_millis(50)
        );
        let stats = rl.stats();
        assert_eq!((stats.requests, stats.delayed), (6, 3));
        assert_eq!(stats.total_delay, Duration::from_millis(350));
    }

    /// A limiter built as `Client::new` builds it from `ClientConfig`'s settings.
    fn limiter_of(config: &ClientConfig, now: Instant) -> Option<RateLimiter> {
        (config.qps > 0.0).then(|| RateLimiter::new_at(config.qps.into(), config.burst, now))
    }

    /// Issue 12: with the default settings, the 200 pages of a 100,000-object list (pages of
    /// 500, the reflector's default) never wait on the limiter, even if every page came back
    /// at the same instant; nor do the list's watch and 99 other requests.
    #[test]
    fn default_settings_never_delay_a_large_paged_list() {
        let config = ClientConfig::new("https://127.0.0.1:6443");
        let t0 = Instant::now();
        let rl = limiter_of(&config, t0).expect("a limiter by default");
        for page in 0..200 + 1 + 99 {
            assert_eq!(rl.reserve_at(t0), Duration::ZERO, "request {page} waited");
        }
        let stats = rl.stats();
        assert_eq!(stats.requests, 300);
        assert_eq!(stats.delayed, 0);
        assert_eq!(stats.total_delay, Duration::ZERO);
    }

    /// Past the burst, pages that come no faster than 50 a second (25,000 objects a second;
    /// a real kube-apiserver takes longer than 20 ms to serve a page of 500 pods from etcd)
    /// never wait either: a list of a million objects (2,000 pages) is not slowed.
    #[test]
    fn default_settings_never_delay_a_million_objects_at_50_pages_per_second() {
        let config = ClientConfig::new("https://127.0.0.1:6443");
        let t0 = Instant::now();
        let rl = limiter_of(&config, t0).unwrap();
        for page in 0..2000u32 {
            let wait = rl.reserve_at(t0 + Duration::from_millis(20) * page);
            assert_eq!(wait, Duration::ZERO, "page {page} waited");
        }
        assert_eq!(rl.stats().delayed, 0);
    }

    /// The old defaults (client-go's 5 and 10) made the same 200 pages wait 38 s in all.
    #[test]
    fn client_go_legacy_defaults_would_delay_the_list_38_seconds() {
        let t0 = Instant::now();
        let rl = RateLimiter::new_at(5.0, 10, t0);
        let mut last = Duration::ZERO;
        for _ in 0..200 {
            last = rl.reserve_at(t0);
        }
        assert_eq!(last, Duration::from_secs(38));
        assert_eq!(rl.stats().delayed, 190);
    }
}
