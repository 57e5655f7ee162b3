//! Deadlines from durations a user chose, which may be as large as `Duration::MAX`.
//!
//! `Instant + Duration` panics when the sum does not fit, and a timeout of "forever" is a
//! fair thing to ask for (`wait_for_cache_sync(Duration::MAX)`, a requeue far in the future).
//! Every deadline the crate computes from such a duration goes through here: one that does
//! not fit becomes a point far enough away to mean "never" (about a century), which every
//! timed wait accepts.

use std::time::{Duration, Instant};

/// Far enough to mean "never", small enough to add to any `Instant` a program sees.
const NEVER: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// `now + d`, or about a century from `now` when that does not fit.
pub(crate) fn at(now: Instant, d: Duration) -> Instant {
    now.checked_add(d.min(NEVER))
        .or_else(|| now.checked_add(Duration::from_secs(365 * 24 * 60 * 60)))
        .unwrap_or(now)
}

/// [`at`] from the current instant.
pub(crate) fn after(d: Duration) -> Instant {
    at(Instant::now(), d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_durations_become_a_far_deadline() {
        let now = Instant::now();
        assert!(at(now, Duration::MAX) > now + Duration::from_secs(50 * 365 * 24 * 3600));
        assert_eq!(
            at(now, Duration::from_secs(5)),
            now + Duration::from_secs(5)
        );
        assert!(after(Duration::MAX) > Instant::now());
    }
}
