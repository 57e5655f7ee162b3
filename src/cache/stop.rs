//! A stop signal that wakes sleeping threads at once, so every back-off and timer wait in
//! the cache has both a bound and a way out.

use std::time::Duration;

use parking_lot::{Condvar, Mutex};

/// Set once; every waiter wakes.
#[derive(Debug, Default)]
pub struct StopSignal {
    stopped: Mutex<bool>,
    cond: Condvar,
}

impl StopSignal {
    /// A signal not yet given.
    pub fn new() -> Self {
        Self::default()
    }

    /// Gives the signal and wakes every waiter.
    pub fn stop(&self) {
        *self.stopped.lock() = true;
        self.cond.notify_all();
    }

    /// True once [`stop`](Self::stop) was called.
    pub fn is_stopped(&self) -> bool {
        *self.stopped.lock()
    }

    /// Sleeps for `d` unless stopped first; returns true when stopped.
    pub fn sleep(&self, d: Duration) -> bool {
        let deadline = crate::deadline::after(d);
        let mut stopped = self.stopped.lock();
        while !*stopped {
            if self.cond.wait_until(&mut stopped, deadline).timed_out() {
                break;
            }
        }
        *stopped
    }
}
