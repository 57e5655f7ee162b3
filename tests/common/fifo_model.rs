//! A plain reference model of the DeltaFIFO, and a driver that runs the real FIFO and the
//! model side by side over a sequence of operations, checking after every step:
//! - the FIFO's own invariants (no key queued twice, a key queued iff it has deltas, no two
//!   consecutive Deleted, the pending count right);
//! - the queue (keys in order) and has_synced agree with the model;
//! - every pop returns exactly the model's deltas, in order (nothing lost, order kept);
//! - the cache the consumer writes equals the model's after every step, and at the end.
//!
//! The consumer runs on its own thread, as the informer's does, and a pop can be left **in
//! flight** (`PopStart` ... `PopFinish`): the FIFO has handed a key's deltas over but the
//! cache does not show them yet, while the sequence goes on adding, deleting, relisting
//! (whole or page by page), resyncing and closing. The model says what must happen then:
//! the in-flight key counts as already in its newest state (deleted, or at its last
//! version), so a resync never queues a stale `Sync` and a relist never queues a second
//! deletion for it. The steps hand over with channels, never with sleeps: each step is
//! deterministic.
//!
//! Shared by `tests/delta_fifo_model.rs` (seeded random sequences in `cargo test`) and the
//! fuzz target `fuzz/fuzz_targets/delta_dedup.rs`.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use kube_informer::api::DynamicObject;
use kube_informer::cache::{DeletedObject, Delta, DeltaFifo, DeltaType, KnownObjects, Store};
use std::sync::mpsc::{channel, Receiver, Sender};

/// One step of a sequence. Keys are small numbers, versions identify object states.
#[derive(Clone, Debug)]
pub enum Op {
    Add(u8, u32),
    Update(u8, u32),
    Delete(u8, u32),
    /// A whole relist in one call.
    Replace(Vec<(u8, u32)>),
    /// A relist delivered page by page: begin, pages, then finish or abandon.
    BeginReplace,
    ReplacePage(Vec<(u8, u32)>),
    FinishReplace,
    AbandonReplace,
    Resync,
    /// A whole pop: take a key and apply it to the cache.
    Pop,
    /// Take a key and leave it in flight (the cache does not show it yet).
    PopStart,
    /// Apply the in-flight key to the cache and end the pop.
    PopFinish,
    /// Close the FIFO: every later call answers `Closed`.
    Close,
}

/// Decodes fuzzer bytes into operations (every byte string is valid).
pub fn ops_from_bytes(data: &[u8]) -> Vec<Op> {
    let mut ops = Vec::new();
    let mut ver = 0u32;
    let mut it = data.iter().copied();
    while let Some(tag) = it.next() {
        let key = it.next().unwrap_or(0) % 8;
        ver += 1;
        let list = |n: u8, ver: &mut u32, it: &mut dyn Iterator<Item = u8>| {
            (0..n)
                .map(|_| {
                    *ver += 1;
                    (it.next().unwrap_or(0) % 8, *ver)
                })
                .collect::<Vec<_>>()
        };
        ops.push(match tag % 32 {
            0..=3 => Op::Add(key, ver),
            4..=7 => Op::Update(key, ver),
            8..=11 => Op::Delete(key, ver),
            12 | 13 => Op::Replace(list(key % 5, &mut ver, &mut it)),
            14 => Op::BeginReplace,
            15 | 16 => Op::ReplacePage(list(key % 4, &mut ver, &mut it)),
            17 => Op::FinishReplace,
            18 => Op::AbandonReplace,
            19 | 20 => Op::Resync,
            21..=24 => Op::Pop,
            25..=27 => Op::PopStart,
            28..=30 => Op::PopFinish,
            _ if key == 7 => Op::Close,
            _ => Op::Pop,
        });
    }
    ops
}

/// A seeded random sequence of `len` operations over `keys` keys.
pub fn random_ops(seed: u64, len: usize, keys: u8) -> Vec<Op> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut ver = 0;
    let listing = |next: &mut dyn FnMut() -> u64, ver: &mut u32| {
        let n = next() % (keys as u64 + 1);
        let mut picked = BTreeSet::new();
        for _ in 0..n {
            picked.insert((next() % keys as u64) as u8);
        }
        picked
            .into_iter()
            .map(|k| {
                *ver += 1;
                (k, *ver)
            })
            .collect::<Vec<_>>()
    };
    (0..len)
        .map(|_| {
            ver += 1;
            let key = (next() % keys as u64) as u8;
            match next() % 40 {
                0..=4 => Op::Add(key, ver),
                5..=9 => Op::Update(key, ver),
                10..=14 => Op::Delete(key, ver),
                15 | 16 => Op::Replace(listing(&mut next, &mut ver)),
                17 => Op::BeginReplace,
                18 | 19 => Op::ReplacePage(listing(&mut next, &mut ver)),
                20 => Op::FinishReplace,
                21 => Op::AbandonReplace,
                22..=25 => Op::Resync,
                26..=30 => Op::Pop,
                31..=34 => Op::PopStart,
                35..=38 => Op::PopFinish,
                _ if next() % 8 == 0 => Op::Close,
                _ => Op::Pop,
            }
        })
        .collect()
}

fn key(k: u8) -> String {
    format!("ns/k{k}")
}

fn object(k: u8, ver: u32) -> Arc<DynamicObject> {
    let mut o = DynamicObject::default();
    o.metadata.namespace = Some("ns".into());
    o.metadata.name = Some(format!("k{k}"));
    o.metadata.resource_version = Some(ver.to_string());
    Arc::new(o)
}

fn version(o: &DynamicObject) -> u32 {
    o.metadata.resource_version().parse().unwrap()
}

/// A delta as the model sees it: kind, version, tombstone or not.
type MDelta = (DeltaType, u32, bool);

fn summarize(d: &Delta<DynamicObject>) -> MDelta {
    let tomb = matches!(d, Delta::Deleted(DeletedObject::Tombstone(_)));
    (d.kind(), version(d.object()), tomb)
}

/// A popped key whose deltas are not in the cache yet.
struct InFlight {
    key: String,
    deltas: Vec<MDelta>,
    /// Whether finishing it counts toward the initial population.
    initial: bool,
}

impl InFlight {
    /// The version the consumer will leave in the cache (`None`: deleted).
    fn outcome(&self) -> Option<u32> {
        match self.deltas.last() {
            Some((DeltaType::Deleted, _, _)) | None => None,
            Some(d) => Some(d.1),
        }
    }
}

#[derive(Default)]
struct Model {
    queue: VecDeque<String>,
    items: HashMap<String, Vec<MDelta>>,
    store: BTreeMap<String, u32>,
    in_flight: Option<InFlight>,
    /// Keys listed so far by a relist in progress.
    listed: Option<BTreeSet<String>>,
    populated: bool,
    counting_initial: bool,
    initial: usize,
    synced: bool,
    closed: bool,
}

impl Model {
    /// The cache as it will be once the in-flight key is applied: the newest state there is.
    fn effective(&self) -> BTreeMap<String, u32> {
        let mut m = self.store.clone();
        if let Some(f) = &self.in_flight {
            match f.outcome() {
                Some(v) => m.insert(f.key.clone(), v),
                None => m.remove(&f.key),
            };
        }
        m
    }

    fn push(&mut self, k: String, d: MDelta) {
        let list = self.items.entry(k.clone()).or_default();
        let fresh = list.is_empty();
        list.push(d);
        let n = list.len();
        if n >= 2 && list[n - 2].0 == DeltaType::Deleted && list[n - 1].0 == DeltaType::Deleted {
            let newer = list.pop().unwrap();
            if !newer.2 {
                list[n - 2] = newer;
            }
        }
        if fresh {
            self.queue.push_back(k);
            if self.counting_initial && !self.populated {
                self.initial += 1;
            }
        }
    }

    fn begin(&mut self) {
        if !self.counting_initial && !self.populated {
            self.counting_initial = true;
            self.initial = self.queue.len();
        }
        self.listed = Some(BTreeSet::new());
    }

    fn page(&mut self, list: &[(u8, u32)]) {
        if self.listed.is_none() {
            self.begin();
        }
        for (k, v) in list {
            self.listed.as_mut().unwrap().insert(key(*k));
            self.push(key(*k), (DeltaType::Replaced, *v, false));
        }
    }

    fn finish(&mut self) {
        let Some(listed) = self.listed.take() else {
            return;
        };
        let effective = self.effective();
        let gone: BTreeSet<String> = self
            .items
            .keys()
            .chain(effective.keys())
            .filter(|k| !listed.contains(*k))
            .cloned()
            .collect();
        for k in gone {
            let last = self
                .items
                .get(&k)
                .and_then(|d| d.last())
                .map(|d| d.1)
                .or_else(|| effective.get(&k).copied());
            if let Some(v) = last {
                self.push(k, (DeltaType::Deleted, v, true));
            }
        }
        if !self.populated {
            self.populated = true;
            self.synced |= self.initial == 0;
        }
    }

    /// Applies a producer or pop-start step; returns what a pop must hand over.
    fn apply(&mut self, op: &Op) -> Option<(String, Vec<MDelta>)> {
        match op {
            Op::Add(k, v) => self.push(key(*k), (DeltaType::Added, *v, false)),
            Op::Update(k, v) => self.push(key(*k), (DeltaType::Updated, *v, false)),
            Op::Delete(k, v) => {
                let k = key(*k);
                if self.items.contains_key(&k) || self.effective().contains_key(&k) {
                    self.push(k, (DeltaType::Deleted, *v, false));
                }
            }
            Op::Replace(list) => {
                self.begin();
                self.page(list);
                self.finish();
            }
            Op::BeginReplace => self.begin(),
            Op::ReplacePage(list) => self.page(list),
            Op::FinishReplace => self.finish(),
            Op::AbandonReplace => self.listed = None,
            Op::Resync => {
                let idle: Vec<(String, u32)> = self
                    .effective()
                    .into_iter()
                    .filter(|(k, _)| !self.items.contains_key(k))
                    .collect();
                for (k, v) in idle {
                    self.push(k, (DeltaType::Sync, v, false));
                }
            }
            Op::Pop | Op::PopStart => {
                let k = self.queue.pop_front()?;
                let deltas = self.items.remove(&k).unwrap();
                self.in_flight = Some(InFlight {
                    key: k.clone(),
                    deltas: deltas.clone(),
                    initial: self.initial > 0,
                });
                return Some((k, deltas));
            }
            Op::PopFinish | Op::Close => {}
        }
        None
    }

    /// The in-flight key reaches the cache.
    fn finish_pop(&mut self) {
        let Some(f) = self.in_flight.take() else {
            return;
        };
        for d in &f.deltas {
            if d.0 == DeltaType::Deleted {
                self.store.remove(&f.key);
            } else {
                self.store.insert(f.key.clone(), d.1);
            }
        }
        if f.initial {
            self.initial = self.initial.saturating_sub(1);
            self.synced |= self.initial == 0 && self.populated;
        }
    }
}

/// What an informer does with popped deltas: apply them to the cache.
fn apply_to_store(store: &Store<DynamicObject>, key: &str, deltas: &[Delta<DynamicObject>]) {
    for d in deltas {
        match d {
            Delta::Deleted(_) => {
                store.delete(key);
            }
            other => {
                let _ = store.upsert(Arc::clone(other.object()));
            }
        }
    }
}

/// The consumer thread's side of the hand-over.
struct Consumer {
    start: Sender<()>,
    popped: Receiver<Result<(String, Vec<MDelta>), String>>,
    finish: Sender<()>,
    done: Receiver<()>,
}

/// Pops on its own thread when told to, reports what it took, and applies it to `store`
/// only when told to finish: between the two the key is in flight.
fn spawn_consumer<'s>(
    scope: &'s std::thread::Scope<'s, '_>,
    fifo: &'s DeltaFifo<DynamicObject>,
    store: &'s Store<DynamicObject>,
) -> Consumer {
    let (start, start_rx) = channel::<()>();
    let (popped_tx, popped) = channel();
    let (finish, finish_rx) = channel::<()>();
    let (done_tx, done) = channel();
    scope.spawn(move || {
        while start_rx.recv().is_ok() {
            let outcome = fifo.pop(|k, deltas| {
                let _ = popped_tx.send(Ok((
                    k.to_owned(),
                    deltas.iter().map(summarize).collect::<Vec<_>>(),
                )));
                // Stay in flight until the driver says otherwise (or hangs up).
                let _ = finish_rx.recv();
                apply_to_store(store, k, &deltas);
            });
            if let Err(e) = outcome {
                let _ = popped_tx.send(Err(e.to_string()));
            }
            let _ = done_tx.send(());
        }
    });
    Consumer {
        start,
        popped,
        finish,
        done,
    }
}

fn cache_of(store: &Store<DynamicObject>) -> BTreeMap<String, u32> {
    store
        .list()
        .iter()
        .map(|o| (o.metadata.key(), version(o)))
        .collect()
}

/// Runs `ops` against the real FIFO and the model; `Err` describes the first disagreement.
pub fn check(ops: &[Op]) -> Result<(), String> {
    let store = Store::<DynamicObject>::new();
    let store = Arc::new(store);
    let known: Arc<dyn KnownObjects<DynamicObject>> = store.clone();
    // A high-water mark no sequence reaches: producers never wait here.
    let fifo = DeltaFifo::with_high_water(Some(known), usize::MAX);
    std::thread::scope(|scope| {
        let consumer = spawn_consumer(scope, &fifo, &store);
        let result = drive(ops, &fifo, &store, &consumer);
        // Nothing may stay blocked in `pop`, whatever the outcome.
        fifo.close();
        // Release a pop left in flight by a failure, then let the consumer end.
        let _ = consumer.finish.send(());
        drop(consumer);
        result
    })
}

fn drive(
    ops: &[Op],
    fifo: &DeltaFifo<DynamicObject>,
    store: &Store<DynamicObject>,
    consumer: &Consumer,
) -> Result<(), String> {
    let mut model = Model::default();
    let mut ops: Vec<Op> = ops.to_vec();
    // Drain at the end so everything queued is compared.
    ops.extend(std::iter::repeat_n(Op::Pop, 64));
    ops.push(Op::PopFinish);
    for (step, op) in ops.iter().enumerate() {
        let here = |what: String| format!("step {step} ({op:?}): {what}");
        let closed = model.closed;
        let producer = |r: Result<(), kube_informer::cache::Closed>| match (r, closed) {
            (Ok(()), false) | (Err(_), true) => Ok(()),
            (Ok(()), true) => Err(here("accepted after close".into())),
            (Err(e), false) => Err(here(e.to_string())),
        };
        let in_flight = model.in_flight.is_some();
        // One consumer: a new pop waits for the one in flight.
        if matches!(op, Op::Pop | Op::PopStart | Op::PopFinish | Op::Close) && in_flight {
            let finish_first = !matches!(op, Op::Close);
            if finish_first {
                consumer.finish.send(()).map_err(|e| here(e.to_string()))?;
                consumer.done.recv().map_err(|e| here(e.to_string()))?;
                model.finish_pop();
            }
        }
        let list = |l: &[(u8, u32)]| l.iter().map(|(k, v)| object(*k, *v)).collect::<Vec<_>>();
        match op {
            Op::Add(..)
            | Op::Update(..)
            | Op::Delete(..)
            | Op::Replace(_)
            | Op::BeginReplace
            | Op::ReplacePage(_)
            | Op::FinishReplace
            | Op::Resync => {
                if !closed {
                    model.apply(op);
                }
                producer(match op {
                    Op::Add(k, v) => fifo.add(object(*k, *v)),
                    Op::Update(k, v) => fifo.update(object(*k, *v)),
                    Op::Delete(k, v) => fifo.delete(object(*k, *v)),
                    Op::Replace(l) => fifo.replace(list(l)),
                    Op::BeginReplace => fifo.begin_replace(),
                    Op::ReplacePage(l) => fifo.replace_page(list(l)),
                    Op::FinishReplace => fifo.finish_replace(),
                    _ => fifo.resync().map(|_| ()),
                })?;
            }
            Op::AbandonReplace => {
                if !closed {
                    model.apply(op);
                }
                fifo.abandon_replace();
            }
            Op::Pop | Op::PopStart => {
                if model.closed {
                    consumer.start.send(()).map_err(|e| here(e.to_string()))?;
                    match consumer.popped.recv().map_err(|e| here(e.to_string()))? {
                        Err(_) => consumer.done.recv().map_err(|e| here(e.to_string()))?,
                        Ok((k, _)) => return Err(here(format!("popped {k} after close"))),
                    }
                } else if fifo.is_empty() {
                    if let Some((mk, _)) = model.apply(op) {
                        return Err(here(format!("the FIFO is empty but the model has {mk}")));
                    }
                } else if matches!(op, Op::Pop) {
                    // A whole pop runs here: no need for the consumer thread.
                    let expected = model.apply(op);
                    let (k, got) = fifo
                        .pop(|k, deltas| {
                            apply_to_store(store, k, &deltas);
                            (
                                k.to_owned(),
                                deltas.iter().map(summarize).collect::<Vec<_>>(),
                            )
                        })
                        .map_err(|e| here(e.to_string()))?;
                    model.finish_pop();
                    match expected {
                        Some((mk, want)) if k == mk && got == want => {}
                        other => {
                            return Err(here(format!("popped {k} {got:?}, model says {other:?}")))
                        }
                    }
                } else {
                    let expected = model.apply(op);
                    consumer.start.send(()).map_err(|e| here(e.to_string()))?;
                    let (k, got) = consumer
                        .popped
                        .recv()
                        .map_err(|e| here(e.to_string()))?
                        .map_err(&here)?;
                    let Some((mk, want)) = expected else {
                        return Err(here(format!("popped {k} but the model is empty")));
                    };
                    if k != mk || got != want {
                        return Err(here(format!(
                            "popped {k} {got:?}, model says {mk} {want:?}"
                        )));
                    }
                }
            }
            Op::PopFinish => {}
            Op::Close => {
                fifo.close();
                model.closed = true;
                // A pop in flight still completes: the consumer was already working on it.
                if model.in_flight.is_some() {
                    consumer.finish.send(()).map_err(|e| here(e.to_string()))?;
                    consumer.done.recv().map_err(|e| here(e.to_string()))?;
                    model.finish_pop();
                }
            }
        }
        fifo.check_invariants().map_err(&here)?;
        if !model.closed {
            let queued = fifo.queued_keys();
            if !queued.iter().eq(model.queue.iter()) {
                return Err(here(format!("queue {queued:?} vs model {:?}", model.queue)));
            }
        }
        if fifo.has_synced() != model.synced {
            return Err(here(format!(
                "has_synced {} vs model {}",
                fifo.has_synced(),
                model.synced
            )));
        }
        // What the consumer wrote: the cache, as the model says it is now (only the
        // consumer writes it, so it can only have changed if a pop ended).
        if in_flight || matches!(op, Op::Pop) || step + 1 == ops.len() {
            let cached = cache_of(store);
            if cached != model.store {
                return Err(here(format!("cache {cached:?} vs model {:?}", model.store)));
            }
        }
    }
    Ok(())
}
