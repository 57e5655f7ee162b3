//! Drives the DeltaFIFO with arbitrary add/update/delete/replace/resync/pop sequences and
//! checks it against the reference model in `tests/common/fifo_model.rs`.
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
