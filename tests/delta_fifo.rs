//! DeltaFIFO rules one by one: dedup, replace tombstones (cached and queued-only keys),
//! resync, has_synced after processing, pop without the lock, close, backpressure.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use kube_informer::api::DynamicObject;
use kube_informer::cache::{
    Closed, DeletedObject, Delta, DeltaFifo, DeltaType, KnownObjects, Store, WatchChange,
};

fn obj(name: &str, rv: u32) -> Arc<DynamicObject> {
    let mut o = DynamicObject::default();
    o.metadata.namespace = Some("ns".into());
    o.metadata.name = Some(name.into());
    o.metadata.resource_version = Some(rv.to_string());
    Arc::new(o)
}

fn fifo_with_store() -> (Arc<Store<DynamicObject>>, Arc<DeltaFifo<DynamicObject>>) {
    let store = Arc::new(Store::new());
    let known: Arc<dyn KnownObjects<DynamicObject>> = store.clone();
    (store, Arc::new(DeltaFifo::new(Some(known))))
}

fn kinds(d: &[Delta<DynamicObject>]) -> Vec<(DeltaType, String)> {
    d.iter()
        .map(|d| (d.kind(), d.object().metadata.resource_version().to_owned()))
        .collect()
}

fn pop(f: &DeltaFifo<DynamicObject>) -> (String, Vec<Delta<DynamicObject>>) {
    f.pop(|k, d| (k.to_owned(), d)).unwrap()
}

#[test]
fn one_entry_per_key_in_arrival_order() {
    let (_, f) = fifo_with_store();
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 2)).unwrap();
    f.update(obj("a", 3)).unwrap();
    assert_eq!(f.queued_keys(), ["ns/a", "ns/b"]);
    let (k, d) = pop(&f);
    assert_eq!(k, "ns/a");
    assert_eq!(
        kinds(&d),
        [
            (DeltaType::Added, "1".into()),
            (DeltaType::Updated, "3".into())
        ]
    );
    assert_eq!(pop(&f).0, "ns/b");
    assert!(f.is_empty());
}

#[test]
fn only_consecutive_deletions_collapse_keeping_the_real_object() {
    let (_, f) = fifo_with_store();
    f.add(obj("a", 1)).unwrap();
    f.delete(obj("a", 2)).unwrap();
    f.delete(obj("a", 3)).unwrap();
    let d = f.deltas_of("ns/a").unwrap();
    assert_eq!(
        kinds(&d),
        [
            (DeltaType::Added, "1".into()),
            (DeltaType::Deleted, "3".into())
        ]
    );
    // A tombstone after a real deletion does not replace it.
    f.replace(vec![]).unwrap();
    let d = f.deltas_of("ns/a").unwrap();
    assert_eq!(d.len(), 2);
    assert!(
        matches!(&d[1], Delta::Deleted(DeletedObject::Object(o)) if o.metadata.resource_version() == "3")
    );
    // Update then delete do not collapse.
    f.add(obj("b", 4)).unwrap();
    f.update(obj("b", 5)).unwrap();
    f.delete(obj("b", 6)).unwrap();
    assert_eq!(f.deltas_of("ns/b").unwrap().len(), 3);
    f.check_invariants().unwrap();
}

#[test]
fn a_real_deletion_replaces_a_queued_tombstone() {
    let (store, f) = fifo_with_store();
    store.upsert(obj("a", 1)).1.unwrap();
    f.replace(vec![]).unwrap();
    assert!(matches!(
        &f.deltas_of("ns/a").unwrap()[0],
        Delta::Deleted(DeletedObject::Tombstone(_))
    ));
    f.delete(obj("a", 2)).unwrap();
    let d = f.deltas_of("ns/a").unwrap();
    assert_eq!(d.len(), 1);
    assert!(
        matches!(&d[0], Delta::Deleted(DeletedObject::Object(o)) if o.metadata.resource_version() == "2")
    );
}

#[test]
fn deleting_an_unknown_object_is_ignored() {
    let (_, f) = fifo_with_store();
    f.delete(obj("ghost", 1)).unwrap();
    assert!(f.is_empty());
}

#[test]
fn replace_tombstones_cached_and_queued_only_keys_with_the_newest_state() {
    let (store, f) = fifo_with_store();
    store.upsert(obj("cached", 1)).1.unwrap();
    store.upsert(obj("both", 2)).1.unwrap();
    store.upsert(obj("kept", 3)).1.unwrap();
    f.update(obj("both", 4)).unwrap();
    f.add(obj("queued-only", 5)).unwrap();
    f.replace(vec![obj("kept", 6)]).unwrap();

    let tomb = |key: &str| match f.deltas_of(key).unwrap().last().unwrap() {
        Delta::Deleted(DeletedObject::Tombstone(t)) => {
            assert_eq!(t.key, key);
            t.last_known.metadata.resource_version().to_owned()
        }
        other => panic!("{key}: {other:?}"),
    };
    assert_eq!(tomb("ns/cached"), "1");
    assert_eq!(
        tomb("ns/both"),
        "4",
        "the queued change is newer than the cache"
    );
    assert_eq!(tomb("ns/queued-only"), "5", "client-go once leaked these");
    assert_eq!(
        kinds(&f.deltas_of("ns/kept").unwrap()),
        [(DeltaType::Replaced, "6".into())]
    );
    f.check_invariants().unwrap();
}

#[test]
fn resync_only_touches_idle_cached_keys_and_never_the_server() {
    let (store, f) = fifo_with_store();
    store.upsert(obj("idle", 1)).1.unwrap();
    store.upsert(obj("busy", 2)).1.unwrap();
    f.update(obj("busy", 3)).unwrap();
    f.resync().unwrap();
    assert_eq!(
        kinds(&f.deltas_of("ns/idle").unwrap()),
        [(DeltaType::Sync, "1".into())]
    );
    assert_eq!(
        kinds(&f.deltas_of("ns/busy").unwrap()),
        [(DeltaType::Updated, "3".into())]
    );
}

#[test]
fn has_synced_waits_for_the_initial_items_to_be_processed() {
    let (_, f) = fifo_with_store();
    assert!(!f.has_synced());
    f.add(obj("early", 1)).unwrap();
    assert!(!f.has_synced(), "only a replace populates");
    f.replace(vec![obj("a", 2), obj("b", 3)]).unwrap();
    pop(&f);
    pop(&f);
    assert!(!f.has_synced());
    f.add(obj("later", 4)).unwrap();
    let f2 = Arc::clone(&f);
    f.pop(move |_, _| assert!(!f2.has_synced(), "popped but not yet processed"))
        .unwrap();
    assert!(f.has_synced());
    assert_eq!(
        f.len(),
        1,
        "the later add is not part of the initial population"
    );
}

#[test]
fn pop_processes_without_holding_the_lock() {
    let (_, f) = fifo_with_store();
    f.add(obj("a", 1)).unwrap();
    let f2 = Arc::clone(&f);
    // Queuing from inside the consumer would deadlock if pop held the lock.
    f.pop(move |_, _| f2.add(obj("b", 2)).unwrap()).unwrap();
    assert_eq!(f.queued_keys(), ["ns/b"]);
}

#[test]
fn close_wakes_a_blocked_pop_and_refuses_more_work() {
    let (_, f) = fifo_with_store();
    let (tx, rx) = mpsc::channel();
    let f2 = Arc::clone(&f);
    let t = std::thread::spawn(move || tx.send(f2.pop(|_, _| ()).is_err()).unwrap());
    f.close();
    assert!(rx.recv_timeout(Duration::from_secs(30)).unwrap());
    t.join().unwrap();
    assert_eq!(f.add(obj("a", 1)), Err(Closed));
    assert_eq!(f.replace(vec![]), Err(Closed));
}

#[test]
fn producers_block_at_the_high_water_mark_until_the_consumer_catches_up() {
    let store = Arc::new(Store::new());
    let known: Arc<dyn KnownObjects<DynamicObject>> = store.clone();
    let f = Arc::new(DeltaFifo::with_high_water(Some(known), 2));
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 2)).unwrap();
    let (tx, rx) = mpsc::channel();
    let f2 = Arc::clone(&f);
    let producer = std::thread::spawn(move || {
        f2.add(obj("c", 3)).unwrap();
        tx.send(()).unwrap();
    });
    // Still blocked after a while (this can only pass wrongly, never fail wrongly).
    assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
    assert_eq!(f.pending_deltas(), 2);
    pop(&f);
    rx.recv_timeout(Duration::from_secs(30))
        .expect("unblocked by the pop");
    producer.join().unwrap();
    // A relist never blocks: its objects are already in memory.
    f.replace((0..10).map(|i| obj(&format!("r{i}"), 10 + i)).collect())
        .unwrap();
    assert!(f.pending_deltas() > 2);
    // Closing releases a blocked producer.
    let f3 = Arc::clone(&f);
    let blocked = std::thread::spawn(move || f3.add(obj("z", 99)));
    f.close();
    assert_eq!(blocked.join().unwrap(), Err(Closed));
}

#[test]
fn a_run_of_watch_events_queues_as_one_by_one_would() {
    let store = Arc::new(Store::new());
    store.upsert(obj("cached", 1)).1.unwrap();
    let fifo = || {
        let known: Arc<dyn KnownObjects<DynamicObject>> = store.clone();
        DeltaFifo::new(Some(known))
    };
    let (one_by_one, as_run) = (fifo(), fifo());
    let run = || {
        vec![
            WatchChange::Added(obj("a", 2)),
            WatchChange::Updated(obj("b", 3)),
            WatchChange::Updated(obj("a", 4)),
            WatchChange::Deleted(obj("a", 5)),
            WatchChange::Deleted(obj("cached", 6)),
            WatchChange::Deleted(obj("never-seen", 7)),
        ]
    };
    for change in run() {
        match change {
            WatchChange::Added(o) => one_by_one.add(o).unwrap(),
            WatchChange::Updated(o) => one_by_one.update(o).unwrap(),
            WatchChange::Deleted(o) => one_by_one.delete(o).unwrap(),
        }
    }
    as_run.push_watch(run()).unwrap();
    assert_eq!(as_run.queued_keys(), one_by_one.queued_keys());
    assert_eq!(as_run.queued_keys(), ["ns/a", "ns/b", "ns/cached"]);
    for key in one_by_one.queued_keys() {
        assert_eq!(
            kinds(&as_run.deltas_of(&key).unwrap()),
            kinds(&one_by_one.deltas_of(&key).unwrap()),
            "{key}"
        );
    }
}

#[test]
fn a_run_longer_than_the_high_water_mark_waits_for_room_event_by_event() {
    let f = Arc::new(DeltaFifo::<DynamicObject>::with_high_water(None, 3));
    let f2 = Arc::clone(&f);
    let producer = std::thread::spawn(move || {
        f2.push_watch((0..40).map(|i| WatchChange::Updated(obj(&format!("o{i}"), i))))
    });
    let mut seen = Vec::new();
    while seen.len() < 40 {
        assert!(f.pending_deltas() <= 3, "the mark holds inside a run");
        let (key, deltas) = pop(&f);
        assert_eq!(deltas.len(), 1);
        seen.push(key);
    }
    assert_eq!(producer.join().unwrap(), Ok(()));
    let expected: Vec<String> = (0..40).map(|i| format!("ns/o{i}")).collect();
    assert_eq!(seen, expected, "in order, none lost");
    // Closing releases a run blocked for room.
    f.add(obj("x", 1)).unwrap();
    f.add(obj("y", 1)).unwrap();
    f.add(obj("z", 1)).unwrap();
    let f3 = Arc::clone(&f);
    let blocked = std::thread::spawn(move || f3.push_watch([WatchChange::Added(obj("w", 1))]));
    f.close();
    assert_eq!(blocked.join().unwrap(), Err(Closed));
}

#[test]
fn changes_arriving_while_a_key_is_processed_are_not_lost() {
    // The consumer has popped "a" but not yet cached it when its deletion arrives.
    let (store, f) = fifo_with_store();
    f.add(obj("a", 1)).unwrap();
    let f2 = Arc::clone(&f);
    let s2 = Arc::clone(&store);
    f.pop(move |_, deltas| {
        f2.delete(obj("a", 2)).unwrap();
        s2.upsert(Arc::clone(deltas[0].object())).1.unwrap();
    })
    .unwrap();
    assert_eq!(
        kinds(&f.deltas_of("ns/a").unwrap()),
        [(DeltaType::Deleted, "2".into())]
    );

    // Same for a relist that no longer has it: a tombstone with the in-flight state.
    let (store, f) = fifo_with_store();
    f.add(obj("b", 3)).unwrap();
    let f2 = Arc::clone(&f);
    f.pop(move |_, deltas| {
        f2.replace(vec![]).unwrap();
        store.upsert(Arc::clone(deltas[0].object())).1.unwrap();
    })
    .unwrap();
    match &f.deltas_of("ns/b").unwrap()[..] {
        [Delta::Deleted(DeletedObject::Tombstone(t))] => {
            assert_eq!(t.last_known.metadata.resource_version(), "3")
        }
        other => panic!("{other:?}"),
    }

    // But a key whose popped deltas end in a deletion is gone: a late delete is ignored.
    let (_, f) = fifo_with_store();
    f.add(obj("c", 4)).unwrap();
    f.delete(obj("c", 5)).unwrap();
    let f2 = Arc::clone(&f);
    f.pop(move |_, _| f2.delete(obj("c", 6)).unwrap()).unwrap();
    assert!(f.is_empty());
}

/// Pops everything queued, applying it to `store` the way the informer does.
fn drain_into(f: &DeltaFifo<DynamicObject>, store: &Store<DynamicObject>) -> Vec<String> {
    let mut seen = Vec::new();
    while !f.is_empty() {
        let (key, deltas) = pop(f);
        for d in &deltas {
            match d {
                Delta::Deleted(_) => {
                    store.delete(&key);
                }
                other => {
                    store.upsert_keyed(&key, other.object().clone()).1.unwrap();
                }
            }
        }
        seen.push(format!("{key}:{:?}", kinds(&deltas)));
    }
    seen
}

#[test]
fn a_replace_page_by_page_ends_as_one_replace_and_syncs_only_at_the_end() {
    // The first list, delivered in two pages, with the consumer draining between them.
    let (store, f) = fifo_with_store();
    f.begin_replace().unwrap();
    f.replace_page(vec![obj("a", 1), obj("b", 1)]).unwrap();
    drain_into(&f, &store);
    assert!(!f.has_synced(), "synced before the list was complete");
    f.replace_page(vec![obj("c", 1)]).unwrap();
    f.finish_replace().unwrap();
    assert!(!f.has_synced());
    drain_into(&f, &store);
    assert!(f.has_synced());
    assert_eq!(store.list_keys().len(), 3);

    // A relist that restarts part way (expired continue token): only the restarted pages
    // count, so "a", listed before the restart only, gets a tombstone.
    f.begin_replace().unwrap();
    f.replace_page(vec![obj("a", 2)]).unwrap();
    f.restart_replace();
    f.replace_page(vec![obj("b", 3), obj("c", 3)]).unwrap();
    f.finish_replace().unwrap();
    let seen = drain_into(&f, &store);
    assert_eq!(
        seen,
        [
            "ns/a:[(Replaced, \"2\"), (Deleted, \"2\")]",
            "ns/b:[(Replaced, \"3\")]",
            "ns/c:[(Replaced, \"3\")]"
        ]
    );
    let mut keys = store.list_keys();
    keys.sort();
    assert_eq!(keys, ["ns/b", "ns/c"]);

    // An abandoned relist deletes nothing; what it queued stays, and a stray finish after
    // it does nothing either.
    f.begin_replace().unwrap();
    f.replace_page(vec![obj("b", 4)]).unwrap();
    f.abandon_replace();
    f.finish_replace().unwrap();
    assert_eq!(drain_into(&f, &store), ["ns/b:[(Replaced, \"4\")]"]);
    assert_eq!(store.list_keys().len(), 2);
}

#[test]
fn the_first_replace_abandoned_leaves_the_fifo_unsynced_until_one_finishes() {
    let (store, f) = fifo_with_store();
    f.begin_replace().unwrap();
    f.replace_page(vec![obj("a", 1)]).unwrap();
    f.abandon_replace();
    drain_into(&f, &store);
    assert!(!f.has_synced());
    f.begin_replace().unwrap();
    f.replace_page(vec![obj("b", 2)]).unwrap();
    f.finish_replace().unwrap();
    // "a" was not listed this time: a tombstone, then sync once both are processed.
    assert_eq!(f.queued_keys(), ["ns/b", "ns/a"]);
    drain_into(&f, &store);
    assert!(f.has_synced());
    assert_eq!(store.list_keys(), ["ns/b"]);
}
