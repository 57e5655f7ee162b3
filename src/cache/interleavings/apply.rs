//! Interleaving checks of the DeltaFIFO, the store and the informer's apply path, with
//! resyncs and relists racing a pop in flight (a child of the informer module, so it runs the
//! informer's own processing loop). See [`crate::cache::interleavings`].

use std::collections::HashMap;

use super::*;
use crate::api::{ApiResource, DynamicObject};
use crate::cache::interleavings::{explore, obj, replay_view, store_view, Recorder, Seen};
use crate::sync::Condvar;
use crate::ClientConfig;

/// The key of the object queued last: once a handler has it, everything before it was
/// applied and delivered.
const END: &str = "zz-end";

/// An `Api` the informer needs to exist; nothing is ever sent (the reflector is not started).
fn unused_api() -> Api<DynamicObject> {
    let client = crate::Client::new(ClientConfig::new("http://127.0.0.1:9")).unwrap();
    Api::all_with(
        client,
        &ApiResource::new("", "v1", "Widget", "widgets", false),
    )
}

/// Set once a handler was told about [`END`].
#[derive(Clone, Default)]
struct EndSeen(Arc<(Mutex<bool>, Condvar)>);

impl EndSeen {
    fn wait(&self) {
        let (seen, cond) = &*self.0;
        let mut seen = seen.lock();
        while !*seen {
            cond.wait(&mut seen);
        }
    }
}

/// Records everything but [`END`], and signals [`END`].
struct Watcher {
    rec: Recorder,
    end: EndSeen,
}

fn watcher() -> (Watcher, Recorder, EndSeen) {
    let (rec, end) = (Recorder::default(), EndSeen::default());
    let w = Watcher {
        rec: rec.clone(),
        end: end.clone(),
    };
    (w, rec, end)
}

impl EventHandler<DynamicObject> for Watcher {
    fn on_add(&mut self, o: Arc<DynamicObject>, initial: bool) {
        if o.metadata.key() == END {
            let (seen, cond) = &*self.end.0;
            *seen.lock() = true;
            cond.notify_all();
        } else {
            self.rec.on_add(o, initial);
        }
    }
    fn on_update(&mut self, old: Arc<DynamicObject>, new: Arc<DynamicObject>) {
        self.rec.on_update(old, new);
    }
    fn on_delete(&mut self, d: crate::cache::DeletedObject<DynamicObject>) {
        self.rec.on_delete(d);
    }
}

/// An informer whose processing loop runs on a shuttle thread, fed by the test instead of a
/// reflector, with the initial list `a@1, b@2` queued.
struct Rig {
    informer: SharedIndexInformer<DynamicObject>,
    inner: Arc<Inner<DynamicObject>>,
    process: JoinHandle<()>,
}

impl Rig {
    fn start(api: &Api<DynamicObject>) -> Rig {
        let informer = SharedIndexInformer::new(api.clone(), InformerConfig::default());
        let inner = Arc::clone(&informer.inner);
        // What `start` does, without a reflector: the test is the producer. Nor a resync
        // timer: the checks run resync rounds themselves (`resync_all`), so registering a
        // handler with a period must not start one (a timer's sleep loop never ends under
        // the model checker's time).
        inner.started.store(true, Ordering::SeqCst);
        inner.resync_timer.store(true, Ordering::SeqCst);
        inner.parts[0]
            .fifo
            .replace(vec![obj("a", 1), obj("b", 2)])
            .unwrap();
        let process = {
            let inner = Arc::clone(&inner);
            thread::spawn(move || inner.process_loop(0))
        };
        Rig {
            informer,
            inner,
            process,
        }
    }

    fn fifo(&self) -> Arc<DeltaFifo<DynamicObject>> {
        Arc::clone(&self.inner.parts[0].fifo)
    }

    /// Queues [`END`], waits for `ends` to see it, and checks the quiet state: the FIFO
    /// drained, the store equal to `server`.
    fn finish(self, server: &HashMap<String, u64>, ends: &[&EndSeen]) {
        self.inner.parts[0].fifo.add(obj(END, u64::MAX)).unwrap();
        for end in ends {
            end.wait();
        }
        let fifo = &self.inner.parts[0].fifo;
        assert!(
            fifo.is_empty(),
            "queued after the end: {:?}",
            fifo.queued_keys()
        );
        fifo.check_invariants().unwrap();
        let mut cached = store_view(&self.inner.store);
        cached.remove(END);
        assert_eq!(&cached, server, "the store differs from the server");
        self.informer.stop();
        self.process.join().unwrap();
    }
}

/// One round of the resync timer with the handlers `due`, as `resync_loop` queues it when
/// it finds them due. Returns how many `Sync`s it queued.
fn resync_for(inner: &Inner<DynamicObject>, due: Vec<u64>) -> usize {
    inner.resync_for(due).unwrap()
}

/// A resync round for every handler.
fn resync_all(inner: &Inner<DynamicObject>) {
    let due: Vec<u64> = inner.listeners.lock().iter().map(|l| l.id).collect();
    resync_for(inner, due);
}

/// The server's state after the test's changes, `key -> version`.
fn initial_server() -> HashMap<String, u64> {
    HashMap::from([("a".to_owned(), 1), ("b".to_owned(), 2)])
}

/// Watch events and a paged relist (the reflector's part), resyncs (the resync timer's
/// part) and the informer's processing loop, all at once. After quiet: the store equals the
/// server; the handler (which takes resyncs) saw no object come back after its delete, no
/// version go backwards, no delete of an absent object, and ends with the server's state.
#[test]
fn interleavings_fifo_store_apply_with_resync_and_relist() {
    let api = unused_api();
    explore(move || {
        let rig = Rig::start(&api);
        let (handler, rec, end) = watcher();
        rig.informer
            .add_event_handler_with_resync(handler, Duration::from_secs(3600))
            .unwrap();
        let producer = {
            let fifo = rig.fifo();
            thread::spawn(move || {
                let mut server = initial_server();
                fifo.update(obj("a", 3)).unwrap();
                server.insert("a".into(), 3);
                fifo.delete(obj("a", 4)).unwrap();
                server.remove("a");
                fifo.add(obj("c", 5)).unwrap();
                server.insert("c".into(), 5);
                // A relist (the watch expired): the server's state, a page per object.
                fifo.begin_replace().unwrap();
                fifo.replace_page(vec![obj("b", 2)]).unwrap();
                fifo.replace_page(vec![obj("c", 5)]).unwrap();
                fifo.finish_replace().unwrap();
                fifo.delete(obj("b", 6)).unwrap();
                server.remove("b");
                server
            })
        };
        let resyncer = {
            let inner = Arc::clone(&rig.inner);
            thread::spawn(move || {
                resync_all(&inner);
                resync_all(&inner);
            })
        };
        let server = producer.join().unwrap();
        resyncer.join().unwrap();
        rig.finish(&server, &[&end]);
        let view = replay_view(&rec.seen()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(view, server, "the handler's view differs from the server");
    });
}

/// A relist racing a deletion in flight: no second delete.
#[test]
fn interleavings_relist_racing_a_delete_in_flight() {
    let api = unused_api();
    explore(move || {
        let rig = Rig::start(&api);
        let (handler, rec, end) = watcher();
        rig.informer.add_event_handler(handler).unwrap();
        let producer = {
            let fifo = rig.fifo();
            thread::spawn(move || {
                let mut server = initial_server();
                fifo.delete(obj("a", 3)).unwrap();
                server.remove("a");
                fifo.begin_replace().unwrap();
                fifo.replace_page(vec![obj("b", 2)]).unwrap();
                fifo.finish_replace().unwrap();
                server
            })
        };
        let server = producer.join().unwrap();
        rig.finish(&server, &[&end]);
        let view = replay_view(&rec.seen()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(view, server, "the handler's view differs from the server");
    });
}

/// A handler registered while the informer applies changes gets the cache and then every
/// later change: no gap (its view ends equal to the server) and no duplicate.
#[test]
fn interleavings_handler_added_while_applying() {
    let api = unused_api();
    explore(move || {
        let rig = Rig::start(&api);
        let (first, _, first_end) = watcher();
        rig.informer.add_event_handler(first).unwrap();
        let (late, late_rec, late_end) = watcher();
        let registrar = {
            let informer = rig.informer.clone();
            thread::spawn(move || {
                informer.add_event_handler(late).unwrap();
            })
        };
        let producer = {
            let fifo = rig.fifo();
            thread::spawn(move || {
                let mut server = initial_server();
                fifo.update(obj("a", 3)).unwrap();
                server.insert("a".into(), 3);
                fifo.delete(obj("b", 4)).unwrap();
                server.remove("b");
                fifo.add(obj("c", 5)).unwrap();
                server.insert("c".into(), 5);
                server
            })
        };
        let server = producer.join().unwrap();
        registrar.join().unwrap();
        rig.finish(&server, &[&first_end, &late_end]);
        let view = replay_view(&late_rec.seen()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            view, server,
            "the late handler's view differs from the server"
        );
    });
}

/// A handler registered while the initial list is being processed: once its
/// `wait_for_sync` says true, it has been told about the whole initial list.
#[test]
fn interleavings_handler_wait_for_sync_covers_the_initial_list() {
    let api = unused_api();
    explore(move || {
        let rig = Rig::start(&api);
        let (handler, rec, end) = watcher();
        let registration = rig.informer.add_event_handler(handler).unwrap();
        // A timed wait may time out under the model checker: wait again.
        while !registration.wait_for_sync(Duration::from_secs(60)) {}
        let view = replay_view(&rec.seen()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            view,
            initial_server(),
            "synced before the initial list was told"
        );
        rig.finish(&initial_server(), &[&end]);
    });
}

/// Six random changes of keys `a`, `b`, `c` (add, update, delete, or a paged relist of the
/// server's state, sometimes restarted part way as after an expired continue token), one
/// or two resyncs, and the processing loop, all at once; checked as in the fixed run above.
/// The random choices are shuttle's, so a failing schedule replays with its changes.
#[test]
fn interleavings_random_changes_with_resync_and_relist() {
    let api = unused_api();
    explore(move || {
        use shuttle::rand::{thread_rng, Rng};
        let rig = Rig::start(&api);
        let (handler, rec, end) = watcher();
        rig.informer
            .add_event_handler_with_resync(handler, Duration::from_secs(3600))
            .unwrap();
        let producer = {
            let fifo = rig.fifo();
            thread::spawn(move || {
                let mut rng = thread_rng();
                let mut server = initial_server();
                for version in 10..16 {
                    let key = ["a", "b", "c"][rng.gen_range(0..3)];
                    match (rng.gen_range(0..4), server.contains_key(key)) {
                        (0, _) => {
                            let mut listed: Vec<(String, u64)> =
                                server.iter().map(|(k, v)| (k.clone(), *v)).collect();
                            listed.sort();
                            fifo.begin_replace().unwrap();
                            if rng.gen_bool(0.5) && !listed.is_empty() {
                                // The first page, then the list restarts from the beginning.
                                fifo.replace_page(vec![obj(&listed[0].0, listed[0].1)])
                                    .unwrap();
                                fifo.restart_replace();
                            }
                            for (k, v) in &listed {
                                fifo.replace_page(vec![obj(k, *v)]).unwrap();
                            }
                            fifo.finish_replace().unwrap();
                        }
                        (_, false) => {
                            fifo.add(obj(key, version)).unwrap();
                            server.insert(key.to_owned(), version);
                        }
                        (1 | 2, true) => {
                            fifo.update(obj(key, version)).unwrap();
                            server.insert(key.to_owned(), version);
                        }
                        (_, true) => {
                            fifo.delete(obj(key, version)).unwrap();
                            server.remove(key);
                        }
                    }
                }
                server
            })
        };
        let resyncer = {
            let inner = Arc::clone(&rig.inner);
            thread::spawn(move || {
                for _ in 0..thread_rng().gen_range(1..=2) {
                    resync_all(&inner);
                }
            })
        };
        let server = producer.join().unwrap();
        resyncer.join().unwrap();
        rig.finish(&server, &[&end]);
        let view = replay_view(&rec.seen()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(view, server, "the handler's view differs from the server");
    });
}

/// Two resync rounds, one for each of two handlers, racing watch events: each round's
/// `Sync`s reach exactly its handler, all of them (a `Sync` is the only notification of an
/// unchanged version here, as every watch event changes it).
#[test]
fn interleavings_resync_rounds_reach_their_handlers() {
    let api = unused_api();
    explore(move || {
        let rig = Rig::start(&api);
        let (first, first_rec, first_end) = watcher();
        let (second, second_rec, second_end) = watcher();
        let period = Duration::from_secs(3600);
        let first = rig.informer.add_event_handler_with_resync(first, period);
        let second = rig.informer.add_event_handler_with_resync(second, period);
        let ids = [first.unwrap().listener.id, second.unwrap().listener.id];
        let producer = {
            let fifo = rig.fifo();
            thread::spawn(move || {
                let mut server = initial_server();
                fifo.update(obj("a", 3)).unwrap();
                server.insert("a".into(), 3);
                fifo.delete(obj("b", 4)).unwrap();
                server.remove("b");
                fifo.add(obj("c", 5)).unwrap();
                server.insert("c".into(), 5);
                server
            })
        };
        let resyncer = {
            let inner = Arc::clone(&rig.inner);
            thread::spawn(move || ids.map(|id| resync_for(&inner, vec![id])))
        };
        let server = producer.join().unwrap();
        let queued = resyncer.join().unwrap();
        rig.finish(&server, &[&first_end, &second_end]);
        for (rec, queued) in [(first_rec, queued[0]), (second_rec, queued[1])] {
            let seen = rec.seen();
            let view = replay_view(&seen).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(view, server, "a handler's view differs from the server");
            let syncs = seen
                .iter()
                .filter(|s| matches!(s, Seen::Update(_, old, new) if old == new))
                .count();
            assert_eq!(syncs, queued, "its round queued {queued} Syncs: {seen:?}");
        }
    });
}

/// Removing a handler and stopping the informer while changes are applied: every thread
/// ends (no deadlock between the listeners' lock, a listener's join and the FIFO), the
/// producer is refused once the FIFO is closed, and the remaining handler saw valid steps.
#[test]
fn interleavings_stop_and_remove_handler_racing_apply() {
    let api = unused_api();
    explore(move || {
        let rig = Rig::start(&api);
        let (kept, kept_rec, _) = watcher();
        let (removed, _, _) = watcher();
        rig.informer.add_event_handler(kept).unwrap();
        let removed = rig.informer.add_event_handler(removed).unwrap();
        let producer = {
            let fifo = rig.fifo();
            thread::spawn(move || {
                fifo.update(obj("a", 3))?;
                fifo.delete(obj("b", 4))?;
                fifo.add(obj("c", 5))
            })
        };
        let remover = {
            let informer = rig.informer.clone();
            thread::spawn(move || informer.remove_event_handler(removed))
        };
        let stopper = {
            let informer = rig.informer.clone();
            thread::spawn(move || informer.stop())
        };
        stopper.join().unwrap();
        remover.join().unwrap();
        // Refused (`Closed`) or not, the producer returned.
        let _pushed = producer.join().unwrap();
        rig.process.join().unwrap();
        assert!(rig.inner.parts[0].fifo.is_closed());
        assert!(rig.inner.parts[0].fifo.add(obj("d", 6)).is_err());
        replay_view(&kept_rec.seen()).unwrap_or_else(|e| panic!("{e}"));
    });
}
