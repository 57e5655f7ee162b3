//! A plain reference model of the DeltaFIFO, and a driver that runs the real FIFO and the
//! model side by side over a sequence of operations, checking after every step:
//! - the FIFO's own invariants (no key queued twice, a key queued iff it has deltas, no two
//!   consecutive Deleted, the pending count right);
//! - the queue (keys in order) and has_synced agree with the model;
//! - every pop returns exactly the model's deltas, in order (nothing lost, order kept);
//! - after draining, the cache the pops built equals the model's.
//!
//! Shared by `tests/delta_fifo_model.rs` (seeded random sequences in `cargo test`) and the
//! fuzz target `fuzz/fuzz_targets/delta_dedup.rs`.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use kube_informer::api::DynamicObject;
use kube_informer::cache::{DeletedObject, Delta, DeltaFifo, DeltaType, KnownObjects, Store};

/// One step of a sequence. Keys are small numbers, versions identify object states.
#[derive(Clone, Debug)]
pub enum Op {
    Add(u8, u32),
    Update(u8, u32),
    Delete(u8, u32),
    Replace(Vec<(u8, u32)>),
    Resync,
    Pop,
}

/// Decodes fuzzer bytes into operations (every byte string is valid).
pub fn ops_from_bytes(data: &[u8]) -> Vec<Op> {
    let mut ops = Vec::new();
    let mut ver = 0u32;
    let mut it = data.iter().copied();
    while let Some(tag) = it.next() {
        let key = it.next().unwrap_or(0) % 8;
        ver += 1;
        ops.push(match tag % 7 {
            0 => Op::Add(key, ver),
            1 => Op::Update(key, ver),
            2 => Op::Delete(key, ver),
            3 => {
                let n = key % 5;
                let mut list = Vec::new();
                for _ in 0..n {
                    ver += 1;
                    list.push((it.next().unwrap_or(0) % 8, ver));
                }
                Op::Replace(list)
            }
            4 => Op::Resync,
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
    (0..len)
        .map(|_| {
            ver += 1;
            let key = (next() % keys as u64) as u8;
            match next() % 10 {
                0 | 1 => Op::Add(key, ver),
                2 | 3 => Op::Update(key, ver),
                4 | 5 => Op::Delete(key, ver),
                6 => {
                    let n = next() % (keys as u64 + 1);
                    let mut picked = BTreeSet::new();
                    for _ in 0..n {
                        picked.insert((next() % keys as u64) as u8);
                    }
                    Op::Replace(
                        picked
                            .into_iter()
                            .map(|k| {
                                ver += 1;
                                (k, ver)
                            })
                            .collect(),
                    )
                }
                7 => Op::Resync,
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

#[derive(Default)]
struct Model {
    queue: VecDeque<String>,
    items: HashMap<String, Vec<MDelta>>,
    store: BTreeMap<String, u32>,
    populated: bool,
    initial: usize,
}

impl Model {
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
        }
    }

    fn apply(&mut self, op: &Op) -> Option<(String, Vec<MDelta>)> {
        match op {
            Op::Add(k, v) => self.push(key(*k), (DeltaType::Added, *v, false)),
            Op::Update(k, v) => self.push(key(*k), (DeltaType::Updated, *v, false)),
            Op::Delete(k, v) => {
                let k = key(*k);
                if self.items.contains_key(&k) || self.store.contains_key(&k) {
                    self.push(k, (DeltaType::Deleted, *v, false));
                }
            }
            Op::Replace(list) => {
                let listed: BTreeSet<String> = list.iter().map(|(k, _)| key(*k)).collect();
                for (k, v) in list {
                    self.push(key(*k), (DeltaType::Replaced, *v, false));
                }
                let gone: BTreeSet<String> = self
                    .items
                    .keys()
                    .chain(self.store.keys())
                    .filter(|k| !listed.contains(*k))
                    .cloned()
                    .collect();
                for k in gone {
                    let last = self
                        .items
                        .get(&k)
                        .and_then(|d| d.last())
                        .map(|d| d.1)
                        .or_else(|| self.store.get(&k).copied());
                    if let Some(v) = last {
                        self.push(k, (DeltaType::Deleted, v, true));
                    }
                }
                if !self.populated {
                    self.populated = true;
                    self.initial = self.queue.len();
                }
            }
            Op::Resync => {
                let idle: Vec<(String, u32)> = self
                    .store
                    .iter()
                    .filter(|(k, _)| !self.items.contains_key(*k))
                    .map(|(k, v)| (k.clone(), *v))
                    .collect();
                for (k, v) in idle {
                    self.push(k, (DeltaType::Sync, v, false));
                }
            }
            Op::Pop => {
                let k = self.queue.pop_front()?;
                let deltas = self.items.remove(&k).unwrap();
                for d in &deltas {
                    if d.0 == DeltaType::Deleted {
                        self.store.remove(&k);
                    } else {
                        self.store.insert(k.clone(), d.1);
                    }
                }
                self.initial = self.initial.saturating_sub(1);
                return Some((k, deltas));
            }
        }
        None
    }

    fn has_synced(&self) -> bool {
        self.populated && self.initial == 0
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

/// Runs `ops` against the real FIFO and the model; `Err` describes the first disagreement.
pub fn check(ops: &[Op]) -> Result<(), String> {
    let store = Arc::new(Store::<DynamicObject>::new());
    let known: Arc<dyn KnownObjects<DynamicObject>> = store.clone();
    // A high-water mark no sequence reaches: this check is single-threaded.
    let fifo = DeltaFifo::with_high_water(Some(known), usize::MAX);
    let mut model = Model::default();
    let mut ops: Vec<Op> = ops.to_vec();
    // Drain at the end so everything queued is compared.
    ops.extend(std::iter::repeat_n(Op::Pop, 64));
    for (step, op) in ops.iter().enumerate() {
        let here = |what: String| format!("step {step} ({op:?}): {what}");
        let expected = model.apply(op);
        match op {
            Op::Add(k, v) => fifo.add(object(*k, *v)).map_err(|e| here(e.to_string()))?,
            Op::Update(k, v) => fifo
                .update(object(*k, *v))
                .map_err(|e| here(e.to_string()))?,
            Op::Delete(k, v) => fifo
                .delete(object(*k, *v))
                .map_err(|e| here(e.to_string()))?,
            Op::Replace(list) => fifo
                .replace(list.iter().map(|(k, v)| object(*k, *v)).collect())
                .map_err(|e| here(e.to_string()))?,
            Op::Resync => fifo.resync().map_err(|e| here(e.to_string()))?,
            Op::Pop => {
                if fifo.is_empty() {
                    if expected.is_some() {
                        return Err(here("the FIFO is empty but the model is not".into()));
                    }
                } else {
                    let (k, got) = fifo
                        .pop(|k, deltas| {
                            apply_to_store(&store, k, &deltas);
                            (
                                k.to_owned(),
                                deltas.iter().map(summarize).collect::<Vec<_>>(),
                            )
                        })
                        .map_err(|e| here(e.to_string()))?;
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
        }
        fifo.check_invariants().map_err(&here)?;
        let queued = fifo.queued_keys();
        if !queued.iter().eq(model.queue.iter()) {
            return Err(here(format!("queue {queued:?} vs model {:?}", model.queue)));
        }
        if fifo.has_synced() != model.has_synced() {
            return Err(here(format!(
                "has_synced {} vs model {}",
                fifo.has_synced(),
                model.has_synced()
            )));
        }
    }
    let cached: BTreeMap<String, u32> = store
        .list()
        .iter()
        .map(|o| (o.metadata.key(), version(o)))
        .collect();
    if cached != model.store {
        return Err(format!("final cache {cached:?} vs model {:?}", model.store));
    }
    Ok(())
}
