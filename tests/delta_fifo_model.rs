//! The DeltaFIFO against a reference model over thousands of seeded random sequences (the
//! same property the `delta_dedup` fuzz target checks), so CI checks it on every change.
//! The sequences leave pops in flight while other operations run (see the model's docs).
//! `FIFO_MODEL_SEEDS=200000 cargo test --release --test delta_fifo_model` runs longer.

#[path = "common/fifo_model.rs"]
mod fifo_model;

use fifo_model::{check, ops_from_bytes, random_ops, Op};

fn seeds() -> u64 {
    std::env::var("FIFO_MODEL_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4000)
}

#[test]
fn random_sequences_match_the_model() {
    for seed in 0..seeds() {
        let keys = 2 + (seed % 6) as u8;
        let ops = random_ops(seed, 60, keys);
        if let Err(e) = check(&ops) {
            panic!("seed {seed}: {e}\nops: {ops:?}");
        }
    }
}

#[test]
fn fuzzer_byte_decoding_is_total() {
    for len in 0..64usize {
        let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + len) as u8).collect();
        check(&ops_from_bytes(&bytes)).unwrap();
    }
}

/// Fault 1 of the review, as the model sees it: a resync while an update is in flight
/// queued a `Sync` of the copy the cache still showed, which rolled the object back.
#[test]
fn resync_during_an_in_flight_update_syncs_the_new_object() {
    let ops = [
        Op::Add(1, 1),
        Op::Pop,
        Op::Update(1, 2),
        Op::PopStart,
        Op::Resync,
        Op::PopFinish,
        Op::Pop,
    ];
    check(&ops).unwrap();
}

/// Fault 1 again: a resync while a delete is in flight brought the object back.
#[test]
fn resync_during_an_in_flight_delete_queues_nothing() {
    let ops = [
        Op::Add(1, 1),
        Op::Pop,
        Op::Delete(1, 2),
        Op::PopStart,
        Op::Resync,
        Op::PopFinish,
        Op::Pop,
    ];
    check(&ops).unwrap();
}

/// Fault 2: a relist ending while a delete is in flight queued a second deletion.
#[test]
fn relist_during_an_in_flight_delete_queues_no_second_tombstone() {
    let ops = [
        Op::Add(1, 1),
        Op::Add(2, 2),
        Op::Pop,
        Op::Pop,
        Op::Delete(1, 3),
        Op::PopStart,
        Op::Replace(vec![(2, 4)]),
        Op::PopFinish,
        Op::Pop,
        Op::Pop,
    ];
    check(&ops).unwrap();
}

/// Closing while a pop is in flight: the pop completes, everything after answers Closed.
#[test]
fn close_during_an_in_flight_pop() {
    let ops = [
        Op::Add(1, 1),
        Op::Add(2, 2),
        Op::PopStart,
        Op::Close,
        Op::Add(3, 3),
        Op::Resync,
        Op::Pop,
    ];
    check(&ops).unwrap();
}
