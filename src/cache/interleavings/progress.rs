//! Interleaving checks of the listener's progress wake-up (`mark_processed` wakes a
//! `wait_processed` caller only when its target is reached; a child of the listener module).
//! A lost wake-up shows as a deadlock: under the model checker a timed wait either times out
//! or sleeps until notified, so in the schedules where it sleeps, a missed notification leaves
//! the waiter asleep with nothing left to wake it, which shuttle reports. See
//! [`crate::cache::interleavings`].

use super::*;
use crate::api::DynamicObject;
use crate::cache::interleavings::{explore, obj};
use crate::cache::HandlerFns;
use crate::sync::thread;

fn far() -> Instant {
    Instant::now() + Duration::from_secs(3600)
}

/// Two waiters with different targets while notifications are sent and handled: each gets
/// its count (the smaller target's wake-up re-arms for the larger one).
#[test]
fn interleavings_progress_waiters_get_their_counts() {
    explore(|| {
        let l = Listener::new(0, 8, Duration::ZERO, None);
        l.spawn(
            "ki/t/lis0".into(),
            "handler-0".into(),
            Box::new(HandlerFns::new()),
            None,
        )
        .unwrap();
        let waiters: Vec<_> = [1, 3]
            .into_iter()
            .map(|target| {
                let l = Arc::clone(&l);
                thread::spawn(move || {
                    // A timed wait may time out under the model checker: wait again.
                    while !l.wait_processed(target, far()) {}
                })
            })
            .collect();
        for v in 1..=3 {
            l.send("a", Notification::Update(obj("a", v), obj("a", v + 1)));
        }
        for w in waiters {
            w.join().unwrap();
        }
        assert_eq!(l.processed(), 3);
        l.shutdown();
    });
}

/// A waiter whose count never comes is released by shutdown, whenever shutdown comes.
#[test]
fn interleavings_progress_shutdown_releases_a_waiter() {
    explore(|| {
        let l = Listener::<DynamicObject>::new(0, 8, Duration::ZERO, None);
        let waiter = {
            let l = Arc::clone(&l);
            thread::spawn(
                move || while !l.wait_processed(1, far()) && !l.stop.load(Ordering::SeqCst) {},
            )
        };
        l.shutdown();
        waiter.join().unwrap();
    });
}
