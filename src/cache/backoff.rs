//! Exponential back-off with jitter, as client-go's reflector uses: 0.8 s doubling to 30 s,
//! each wait stretched by a random 0–100 %, back to the start after 2 minutes without errors.

use std::time::{Duration, Instant};

/// Back-off state for one retry loop.
#[derive(Debug)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    reset_after: Duration,
    current: Duration,
    last_failure: Option<Instant>,
    rng: u64,
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new(
            Duration::from_millis(800),
            Duration::from_secs(30),
            Duration::from_secs(120),
        )
    }
}

impl Backoff {
    /// A back-off starting at `initial`, doubling up to `max`, reset after `reset_after` of
    /// health.
    pub fn new(initial: Duration, max: Duration, reset_after: Duration) -> Self {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x9e37_79b9_7f4a_7c15);
        Backoff {
            initial,
            max,
            reset_after,
            current: initial,
            last_failure: None,
            rng: seed | 1,
        }
    }

    fn random_fraction(&mut self) -> f64 {
        // xorshift64*: plenty for jitter.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        (self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The wait before the next retry (and the step up for the one after).
    pub fn next_delay(&mut self) -> Duration {
        let now = Instant::now();
        if self
            .last_failure
            .is_some_and(|t| now.duration_since(t) >= self.reset_after)
        {
            self.current = self.initial;
        }
        self.last_failure = Some(now);
        let base = self.current;
        self.current = self.current.saturating_mul(2).min(self.max);
        // Up to twice the base; saturates instead of overflowing for huge settings.
        let jitter = Duration::try_from_secs_f64(base.as_secs_f64() * self.random_fraction())
            .unwrap_or(base);
        base.saturating_add(jitter)
    }

    /// Forgets past failures.
    pub fn reset(&mut self) {
        self.current = self.initial;
        self.last_failure = None;
    }
}

/// A random duration in `[lo, hi)`, for spreading watch timeouts.
pub(crate) fn random_between(
    lo: std::time::Duration,
    hi: std::time::Duration,
) -> std::time::Duration {
    if hi <= lo {
        return lo;
    }
    let mut b = Backoff::default();
    lo + (hi - lo).mul_f64(b.random_fraction())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_with_jitter_up_to_the_cap() {
        let mut b = Backoff::default();
        let mut bases = Vec::new();
        for _ in 0..10 {
            let d = b.next_delay();
            bases.push(d);
        }
        assert!(bases[0] >= Duration::from_millis(800) && bases[0] <= Duration::from_millis(1600));
        assert!(bases[1] >= Duration::from_millis(1600) && bases[1] <= Duration::from_millis(3200));
        assert!(bases[9] >= Duration::from_secs(30) && bases[9] <= Duration::from_secs(60));
        b.reset();
        assert!(b.next_delay() <= Duration::from_millis(1600));
    }
}
