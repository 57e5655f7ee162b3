//! Interleaving checks of the listener's hand-off: the informer thread sends while the
//! listener thread drains, with a backlog bound of 1 or 2 so the overflow (coalescing) path
//! is taken (a child of the listener module, so it can look at the overflow map). See
//! [`crate::cache::interleavings`].

use std::collections::HashMap;

use super::*;
use crate::api::DynamicObject;
use crate::cache::interleavings::{explore, obj, replay_view, Recorder, Seen};
use crate::sync::thread;

/// The overflow map holds nothing but pending notifications: no entry left empty by an add
/// and a delete that cancelled out, every pending key in the delivery order once. With that,
/// its memory is bounded by the objects with something pending.
fn check_overflow_bounded<K>(l: &Listener<K>) -> Result<(), String> {
    let ov = l.overflow.lock();
    let empty = ov
        .pending
        .values()
        .filter(|(_, list)| list.is_empty())
        .count();
    let ordered = ov
        .pending
        .iter()
        .all(|(key, (seq, _))| ov.order.get(seq) == Some(key));
    if empty > 0 || ov.order.len() != ov.pending.len() || !ordered {
        return Err(format!(
            "overflow holds {} keys ({empty} with nothing pending) and {} in order",
            ov.pending.len(),
            ov.order.len()
        ));
    }
    let queued: usize = ov.pending.values().map(|(_, list)| list.len()).sum();
    if queued != ov.len {
        return Err(format!("overflow counts {} but holds {queued}", ov.len));
    }
    Ok(())
}

/// A listener (id 0, no resync) with a backlog bound of `max_backlog`, freeing through
/// `graveyard` if given, its thread running a [`Recorder`].
fn recording_listener(
    max_backlog: usize,
    graveyard: Option<Arc<crate::cache::graveyard::Graveyard<DynamicObject>>>,
) -> (Arc<Listener<DynamicObject>>, Recorder) {
    let l = Listener::new(0, max_backlog, Duration::ZERO, graveyard);
    let rec = Recorder::default();
    l.spawn(
        "ki/t/lis0".into(),
        "handler-0".into(),
        Box::new(rec.clone()),
        None,
    )
    .unwrap();
    (l, rec)
}

/// What one sent notification leaves the object as: its version, or `None` once deleted.
type State = Option<u64>;

/// The informer's side: sends a fixed run of changes to keys `a`, `b`, `c` (including an add
/// and a delete that cancel out while coalescing, and a re-creation); for [`Check::Bound`],
/// checks the overflow map's bound after each send. Returns the states each key went through, in order.
fn send_changes(l: &Listener<DynamicObject>, check: Check) -> HashMap<String, Vec<State>> {
    let mut states: HashMap<String, Vec<State>> = HashMap::new();
    let mut current: HashMap<String, u64> = HashMap::new();
    // Each change gets the next resourceVersion, as on a server; `false` deletes.
    let steps = [
        ("a", true),
        ("b", true),
        ("a", true),
        ("c", true),
        ("c", false),
        ("b", false),
        ("a", true),
        ("b", true),
        ("a", false),
        ("b", true),
    ];
    for (version, (key, present)) in (1..).zip(steps) {
        let next = present.then_some(version);
        let n = match (current.get(key), next) {
            (None, Some(v)) => Notification::Add(obj(key, v), false),
            (Some(&old), Some(v)) => Notification::Update(obj(key, old), obj(key, v)),
            // The deletion's final object carries the deletion's version.
            (Some(_), None) => Notification::Delete(DeletedObject::Object(obj(key, version))),
            (None, None) => unreachable!("the script deletes only present objects"),
        };
        match next {
            Some(v) => current.insert(key.to_owned(), v),
            None => current.remove(key),
        };
        l.send(key, n);
        states.entry(key.to_owned()).or_default().push(next);
        if check == Check::Bound {
            check_overflow_bounded(l).unwrap_or_else(|e| panic!("after sending {key}: {e}"));
        }
    }
    states
}

/// Checks that the states a handler saw of one object (`seen`) appear in order among the
/// states it went through (`sent`), and that no deletion between two present states the
/// handler saw was skipped (a re-created object must not look like an update).
fn check_states(seen: &[State], sent: &[State]) -> Result<(), String> {
    let mut from = 0;
    let mut prev: Option<(usize, State)> = None;
    for s in seen {
        let Some(at) = sent[from..].iter().position(|t| t == s).map(|i| i + from) else {
            return Err(format!("{seen:?} is not a subsequence of {sent:?}"));
        };
        if let Some((p, Some(_))) = prev {
            if s.is_some() && sent[p + 1..at].contains(&None) {
                return Err(format!("{seen:?} skips a deletion of {sent:?}"));
            }
        }
        prev = Some((at, *s));
        from = at + 1;
    }
    Ok(())
}

/// Per key, the states a handler went through (a delete's version is not a state).
fn states_seen(seen: &[Seen]) -> HashMap<String, Vec<State>> {
    let mut out: HashMap<String, Vec<State>> = HashMap::new();
    for s in seen {
        let (k, state) = match s {
            Seen::Add(k, v) | Seen::Update(k, _, v) => (k, Some(*v)),
            Seen::Delete(k, _) => (k, None),
        };
        out.entry(k.clone()).or_default().push(state);
    }
    out
}

/// What a check looks at once everything sent was processed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Check {
    /// The accounting and the overflow map's bound only.
    Bound,
    /// What the handler saw, object by object (and the accounting at the end).
    Order,
}

fn check_listener_hand_off(max_backlog: usize, check: Check) {
    explore(move || {
        let (l, rec) = recording_listener(max_backlog, None);
        let sender = {
            let l = Arc::clone(&l);
            thread::spawn(move || send_changes(&l, check))
        };
        let sent_states = sender.join().unwrap();
        let sent = l.sent.load(Ordering::SeqCst);
        // A timed wait may time out under the model checker: wait again.
        while !l.wait_processed(sent, Instant::now() + Duration::from_secs(60)) {}
        assert_eq!(l.processed(), sent, "processed differs from sent");
        assert_eq!(
            l.backlog(),
            0,
            "notifications left after everything was processed"
        );
        check_overflow_bounded(&l).unwrap();
        {
            let ov = l.overflow.lock();
            assert!(
                ov.pending.is_empty() && ov.order.is_empty(),
                "overflow map not empty at the end"
            );
        }
        if check == Check::Order {
            let seen = rec.seen();
            // Valid steps from the handler's point of view (no duplicate, no double delete,
            // an update from the version it had), ending in the final sent state.
            let view = replay_view(&seen).unwrap_or_else(|e| panic!("{e}"));
            let seen_states = states_seen(&seen);
            for (key, sent) in &sent_states {
                let got = seen_states.get(key).map(Vec::as_slice).unwrap_or(&[]);
                check_states(got, sent).unwrap_or_else(|e| panic!("{key}: {e}"));
                let last = *sent.last().expect("at least one state");
                assert_eq!(
                    view.get(key).copied(),
                    last,
                    "{key}: the handler ends at {got:?}, the objects at {sent:?}"
                );
            }
        }
        l.shutdown();
    });
}

/// Backlog bound 1: almost every send while the handler is busy coalesces. The overflow map
/// never keeps an entry with nothing pending, and everything sent is accounted for.
#[test]
fn interleavings_listener_overflow_bounded_backlog_1() {
    check_listener_hand_off(1, Check::Bound);
}

/// Backlog bound 2: the channel and the overflow map both hold notifications.
#[test]
fn interleavings_listener_overflow_bounded_backlog_2() {
    check_listener_hand_off(2, Check::Bound);
}

/// Per object, the handler sees a subsequence of the states sent, in order, every deletion
/// of an object it saw, and ends in the final state.
#[test]
fn interleavings_listener_order_backlog_1() {
    check_listener_hand_off(1, Check::Order);
}

/// As above with a backlog bound of 2.
#[test]
fn interleavings_listener_order_backlog_2() {
    check_listener_hand_off(2, Check::Order);
}

/// The smallest case of the order check: an add, then an update of the same object, with a
/// backlog bound of 1.
// Found by this check: `next_batch` found the channel empty, and before it locked the
// overflow map the informer thread sent one notification into the channel (there was room)
// and the next into the overflow map (the channel was then full); the listener took the
// overflow's first, so the handler saw the update before the add. It now looks at the
// channel again under the overflow's lock.
#[test]
fn interleavings_listener_order_minimal() {
    explore(|| {
        let (l, rec) = recording_listener(1, None);
        l.send("a", Notification::Add(obj("a", 1), false));
        l.send("a", Notification::Update(obj("a", 1), obj("a", 2)));
        while !l.wait_processed(2, Instant::now() + Duration::from_secs(60)) {}
        let seen = rec.seen();
        replay_view(&seen).unwrap_or_else(|e| panic!("{e}"));
        l.shutdown();
    });
}

/// The listener waits in the channel's blocking receive when it has nothing to do: a
/// notification sent as it goes to wait, and a shutdown (which disconnects the channel) as it
/// goes to wait or while it waits, each wake it. A lost wake-up shows as a shutdown that never
/// joins the thread (every thread blocked: shuttle reports a deadlock) or as a notification
/// never handled.
#[test]
fn interleavings_listener_sleep_wake_and_shutdown() {
    explore(|| {
        let (l, rec) = recording_listener(2, None);
        let sender = {
            let l = Arc::clone(&l);
            thread::spawn(move || {
                l.send("a", Notification::Add(obj("a", 1), false));
                l.send("a", Notification::Update(obj("a", 1), obj("a", 2)));
            })
        };
        // The shutdown races the second notification and the listener's sleep.
        let stopper = {
            let l = Arc::clone(&l);
            thread::spawn(move || {
                while !l.wait_processed(1, Instant::now() + Duration::from_secs(60)) {}
                l.shutdown();
            })
        };
        sender.join().unwrap();
        stopper.join().unwrap();
        assert!(l.thread.lock().is_none(), "shutdown joined the thread");
        let seen = rec.seen();
        assert!(
            (1..=2).contains(&seen.len()),
            "the add, and the update if it came before the stop: {seen:?}"
        );
        replay_view(&seen).unwrap_or_else(|e| panic!("{e}"));
    });
}

/// The graveyard between a listener and the thread that frees objects (the reflector's part):
/// with the freeing racing the deliveries, the handler still sees every notification in
/// order, and every state it let go of is freed exactly once — by the freeing thread, or
/// where it was when the listener did not hold the last reference — with nothing left alive
/// once the listener is shut down and the graveyard cleared.
#[test]
fn interleavings_graveyard_frees_what_the_handler_let_go() {
    use crate::cache::graveyard::Graveyard;
    explore(|| {
        let graveyard: Arc<Graveyard<DynamicObject>> = Arc::default();
        // Room for everything in the channel: no coalescing, so the sequence is exact.
        let (l, rec) = recording_listener(16, Some(Arc::clone(&graveyard)));
        let states: Vec<Arc<DynamicObject>> = (1..=3).map(|rv| obj("a", rv)).collect();
        let weak: Vec<_> = states.iter().map(Arc::downgrade).collect();
        let sender = {
            let l = Arc::clone(&l);
            thread::spawn(move || {
                let mut states = states.into_iter();
                let (a1, a2, a3) = (
                    states.next().unwrap(),
                    states.next().unwrap(),
                    states.next().unwrap(),
                );
                l.send("a", Notification::Add(Arc::clone(&a1), false));
                l.send("a", Notification::Update(a1, Arc::clone(&a2)));
                l.send("a", Notification::Update(a2, Arc::clone(&a3)));
                l.send("a", Notification::Delete(DeletedObject::Object(a3)));
            })
        };
        let freer = {
            let graveyard = Arc::clone(&graveyard);
            thread::spawn(move || {
                for _ in 0..3 {
                    graveyard.clear();
                    thread::yield_now();
                }
            })
        };
        sender.join().unwrap();
        while !l.wait_processed(4, Instant::now() + Duration::from_secs(60)) {}
        freer.join().unwrap();
        l.shutdown();
        graveyard.clear();
        assert_eq!(
            rec.seen(),
            [
                Seen::Add("a".into(), 1),
                Seen::Update("a".into(), 1, 2),
                Seen::Update("a".into(), 2, 3),
                Seen::Delete("a".into(), 3),
            ]
        );
        for (i, w) in weak.iter().enumerate() {
            assert!(w.upgrade().is_none(), "state {} still alive", i + 1);
        }
    });
}
