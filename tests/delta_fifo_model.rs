//! The DeltaFIFO against a reference model over thousands of seeded random sequences (the
//! same property the `delta_dedup` fuzz target checks), so CI checks it on every change.

#[path = "common/fifo_model.rs"]
mod fifo_model;

use fifo_model::{check, ops_from_bytes, random_ops};

#[test]
fn random_sequences_match_the_model() {
    for seed in 0..4000u64 {
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
