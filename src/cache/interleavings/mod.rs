//! Interleaving checks of the concurrent core under the `shuttle` model checker.
//!
//! Why: the FIFO hands a key to its consumer outside its lock, the informer applies it to the
//! store and hands notifications to listeners that coalesce past a bound. The invariants of
//! that hand-off (nothing lost, nothing stale, no double delete, bounded memory) only break in
//! rare orders of a few threads, which timing-based tests almost never produce. Here the real
//! code runs on shuttle's scheduler (see [`crate::sync`]), which picks the order of every lock,
//! wait, atomic and thread switch, a different order in each of many iterations.
//!
//! Compiled only with `--cfg shuttle` (and only for tests):
//!
//! ```text
//! RUSTFLAGS="--cfg shuttle" cargo test --lib --target-dir target/shuttle interleav
//! ```
//!
//! Each check runs `KUBE_INFORMER_SHUTTLE_ITERATIONS` schedules (default [`DEFAULT_ITERATIONS`])
//! under shuttle's PCT scheduler and as many under its random scheduler, from the seed
//! `KUBE_INFORMER_SHUTTLE_SEED` (default fixed, so a run is reproducible). A failure prints
//! the schedule; `KUBE_INFORMER_SHUTTLE_REPLAY=<schedule>` with the test's name as the filter
//! replays exactly that run.
//!
//! The checks live next to what they reach: this module has the FIFO-only checks and the
//! helpers; `apply.rs` (a child of the informer module, for its apply path) has the FIFO +
//! store + informer + resync checks; `listener.rs` (a child of the listener module, for its
//! overflow map) has the listener's hand-off checks. The leader elector's checks are in
//! `controller/interleavings.rs` and use [`explore`] from here.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::api::DynamicObject;
use crate::cache::{DeletedObject, DeltaFifo, EventHandler, KnownObjects, Store};
use crate::sync::{thread, Mutex};

/// Schedules per scheduler and check when `KUBE_INFORMER_SHUTTLE_ITERATIONS` is unset.
pub(crate) const DEFAULT_ITERATIONS: usize = 500;

/// The PCT scheduler's depth: how many priority changes a schedule may have (bugs of depth
/// two or three cover the races between a pop in flight and a producer).
const PCT_DEPTH: usize = 3;

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// Runs `check` under shuttle: a replay when `KUBE_INFORMER_SHUTTLE_REPLAY` is set, otherwise
/// the configured number of PCT schedules, then as many uniformly random ones.
pub(crate) fn explore(check: impl Fn() + Send + Sync + 'static) {
    let check = Arc::new(check);
    if let Ok(schedule) = std::env::var("KUBE_INFORMER_SHUTTLE_REPLAY") {
        shuttle::replay(move || check(), schedule.trim());
        return;
    }
    let iterations = env_number("KUBE_INFORMER_SHUTTLE_ITERATIONS")
        .map_or(DEFAULT_ITERATIONS, |n| n as usize)
        .max(1);
    let seed = env_number("KUBE_INFORMER_SHUTTLE_SEED").unwrap_or(0x6b75_6265);
    let pct = {
        let check = Arc::clone(&check);
        move || check()
    };
    let config = shuttle::Config::default();
    shuttle::Runner::new(
        shuttle::scheduler::PctScheduler::new_from_seed(seed, PCT_DEPTH, iterations),
        config.clone(),
    )
    .run(pct);
    shuttle::Runner::new(
        shuttle::scheduler::RandomScheduler::new_from_seed(seed, iterations),
        config,
    )
    .run(move || check());
}

/// A cluster-scoped object `name` at resourceVersion `rv`.
pub(crate) fn obj(name: &str, rv: u64) -> Arc<DynamicObject> {
    let mut o = DynamicObject::default();
    o.metadata.name = Some(name.to_owned());
    o.metadata.resource_version = Some(rv.to_string());
    Arc::new(o)
}

/// The resourceVersion of an object made by [`obj`].
pub(crate) fn rv(o: &DynamicObject) -> u64 {
    o.metadata
        .resource_version()
        .parse()
        .expect("test objects have numeric versions")
}

/// What a handler was told, with versions instead of objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Seen {
    Add(String, u64),
    Update(String, u64, u64),
    Delete(String, u64),
}

/// A handler that records what it is told.
#[derive(Clone, Default)]
pub(crate) struct Recorder(pub Arc<Mutex<Vec<Seen>>>);

impl Recorder {
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.0.lock().clone()
    }
}

impl EventHandler<DynamicObject> for Recorder {
    fn on_add(&mut self, o: Arc<DynamicObject>, _initial: bool) {
        self.0.lock().push(Seen::Add(o.metadata.key(), rv(&o)));
    }
    fn on_update(&mut self, old: Arc<DynamicObject>, new: Arc<DynamicObject>) {
        let key = new.metadata.key();
        self.0.lock().push(Seen::Update(key, rv(&old), rv(&new)));
    }
    fn on_delete(&mut self, d: DeletedObject<DynamicObject>) {
        let o = d.object();
        self.0.lock().push(Seen::Delete(o.metadata.key(), rv(o)));
    }
}

/// Replays what a handler saw and checks each step against the handler's own view: an add
/// only of an absent object (else a duplicate, or an object back after its delete at a
/// version not newer than the delete), an update only of the version the handler has and
/// never to an older one, a delete only of a present object (else a double delete). Returns
/// the final view, `key -> version`.
pub(crate) fn replay_view(seen: &[Seen]) -> Result<HashMap<String, u64>, String> {
    let mut view: HashMap<String, u64> = HashMap::new();
    // The newest version each key ever had, present or deleted.
    let mut newest: HashMap<String, u64> = HashMap::new();
    for (i, s) in seen.iter().enumerate() {
        let bad = |what: &str| Err(format!("step {i} {s:?}: {what}; all: {seen:?}"));
        match s {
            Seen::Add(k, v) => {
                if view.contains_key(k) {
                    return bad("added while present (duplicate)");
                }
                if newest.get(k).is_some_and(|n| v <= n) {
                    return bad("came back after its delete at an older or equal version");
                }
                view.insert(k.clone(), *v);
                newest.insert(k.clone(), *v);
            }
            Seen::Update(k, old, new) => {
                match view.get(k) {
                    None => return bad("updated while absent"),
                    Some(cur) if cur != old => return bad("old is not the version it had"),
                    Some(_) => {}
                }
                if new < old {
                    return bad("version went backwards");
                }
                view.insert(k.clone(), *new);
                newest.insert(k.clone(), *new);
            }
            Seen::Delete(k, v) => {
                match view.remove(k) {
                    None => return bad("deleted while absent (double delete)"),
                    Some(cur) if *v < cur => return bad("deleted at an older version"),
                    Some(_) => {}
                }
                let n = newest.entry(k.clone()).or_default();
                *n = (*n).max(*v);
            }
        }
    }
    Ok(view)
}

/// The store's contents, `key -> version`.
pub(crate) fn store_view(store: &Store<DynamicObject>) -> HashMap<String, u64> {
    store
        .list()
        .iter()
        .map(|o| (o.metadata.key(), rv(o)))
        .collect()
}

/// `wait_for_sync` racing the consumer's pop of the initial list: when it says synced, the
/// store holds the whole list; once the consumer is done it says synced.
#[test]
fn interleavings_wait_for_sync_vs_pop() {
    explore(|| {
        let store = Arc::new(Store::<DynamicObject>::new());
        let known: Arc<dyn KnownObjects<DynamicObject>> = store.clone();
        let fifo = Arc::new(DeltaFifo::new(Some(known)));
        fifo.replace(vec![obj("a", 1), obj("b", 2)]).unwrap();
        let consumer = {
            let (fifo, store) = (Arc::clone(&fifo), Arc::clone(&store));
            thread::spawn(move || {
                for _ in 0..2 {
                    fifo.pop(|_, deltas| {
                        for d in deltas {
                            store.upsert(Arc::clone(d.object())).1.unwrap();
                        }
                    })
                    .unwrap();
                }
            })
        };
        let waiter = {
            let (fifo, store) = (Arc::clone(&fifo), Arc::clone(&store));
            thread::spawn(move || {
                if fifo.wait_for_sync(Duration::from_secs(60)) {
                    assert_eq!(store.len(), 2, "synced before the list was in the store");
                }
            })
        };
        waiter.join().unwrap();
        consumer.join().unwrap();
        assert!(fifo.has_synced());
        assert!(fifo.wait_for_sync(Duration::from_secs(60)));
    });
}

/// `close` while a producer is blocked on the high-water mark: the producer returns
/// `Closed` (no deadlock, nothing half-queued), and so do later pops and pushes.
#[test]
fn interleavings_close_during_a_blocked_push() {
    explore(|| {
        let store = Arc::new(Store::<DynamicObject>::new());
        let known: Arc<dyn KnownObjects<DynamicObject>> = store.clone();
        let fifo = Arc::new(DeltaFifo::with_high_water(Some(known), 1));
        let producer = {
            let fifo = Arc::clone(&fifo);
            thread::spawn(move || {
                use crate::cache::WatchChange::Added;
                fifo.push_watch([Added(obj("a", 1)), Added(obj("b", 2)), Added(obj("c", 3))])
            })
        };
        let consumer = {
            let fifo = Arc::clone(&fifo);
            thread::spawn(move || {
                let mut popped = 0;
                while fifo.pop(|_, _| ()).is_ok() {
                    popped += 1;
                }
                popped
            })
        };
        fifo.close();
        let pushed = producer.join().unwrap();
        let popped = consumer.join().unwrap();
        // Everything pushed was popped or is still queued; a push cut by the close queued
        // less.
        assert_eq!(
            pushed.is_ok(),
            popped + fifo.len() == 3,
            "{pushed:?} {popped}"
        );
        assert!(fifo.pop(|_, _| ()).is_err());
        assert!(fifo.add(obj("d", 4)).is_err());
        fifo.check_invariants().unwrap();
    });
}

/// Back-pressure: a run of watch events pushed at once against a high-water mark of 1, so
/// the producer waits for room between events (releasing the lock) while the consumer pops
/// and writes the store and a resync queues `Sync`s. After quiet the store equals the
/// server and nothing is queued.
#[test]
fn interleavings_backpressure_with_resync() {
    const END: &str = "zz-end";
    explore(|| {
        use crate::cache::{Delta, WatchChange};
        let store = Arc::new(Store::<DynamicObject>::new());
        let known: Arc<dyn KnownObjects<DynamicObject>> = store.clone();
        let fifo = Arc::new(DeltaFifo::with_high_water(Some(known), 1));
        fifo.replace(vec![obj("a", 1), obj("b", 2)]).unwrap();
        let consumer = {
            let (fifo, store) = (Arc::clone(&fifo), Arc::clone(&store));
            // Applies deltas as the informer does, until it pops the end marker.
            thread::spawn(move || {
                let apply = |key: &str, deltas: Vec<Delta<DynamicObject>>| {
                    if key == END {
                        return true;
                    }
                    for d in deltas {
                        if let Delta::Deleted(_) = d {
                            store.delete(key);
                        } else {
                            store.upsert_keyed(key, Arc::clone(d.object())).1.unwrap();
                        }
                    }
                    false
                };
                while !fifo.pop(apply).unwrap() {}
            })
        };
        let producer = {
            let fifo = Arc::clone(&fifo);
            thread::spawn(move || {
                fifo.push_watch([
                    WatchChange::Updated(obj("a", 3)),
                    WatchChange::Deleted(obj("b", 4)),
                    WatchChange::Added(obj("c", 5)),
                    WatchChange::Deleted(obj("a", 6)),
                ])
                .unwrap();
            })
        };
        let resyncer = {
            let fifo = Arc::clone(&fifo);
            thread::spawn(move || {
                fifo.resync().unwrap();
            })
        };
        producer.join().unwrap();
        resyncer.join().unwrap();
        // Everything queued before the marker is applied before it is popped.
        fifo.add(obj(END, 7)).unwrap();
        consumer.join().unwrap();
        assert!(
            fifo.is_empty(),
            "queued after the end: {:?}",
            fifo.queued_keys()
        );
        fifo.check_invariants().unwrap();
        assert_eq!(store_view(&store), HashMap::from([("c".to_owned(), 5)]));
    });
}
