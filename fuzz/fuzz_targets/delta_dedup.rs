//! Drives the DeltaFIFO with arbitrary sequences of add, update, delete, replace (whole and
//! page by page), resync, pop and close, and checks it against the reference model in
//! `tests/common/fifo_model.rs`, with pops left in flight (handed to the consumer, not yet
//! in the cache) while the other operations run.
#![no_main]

#[path = "../../tests/common/fifo_model.rs"]
mod fifo_model;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let ops = fifo_model::ops_from_bytes(data);
    if let Err(e) = fifo_model::check(&ops) {
        panic!("{e}\nops: {ops:?}");
    }
});
