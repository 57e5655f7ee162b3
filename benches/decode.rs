//! Decoding speed of one realistic pod (4.7 KB, managedFields included) as a watch event
//! line: the library's scanner path against serde_json's derive path, as `DynamicObject` and
//! as a slim typed struct. Prints MB/s and µs per object (best of five runs); asserts nothing about time.
//!
//! Run: `cargo bench --bench decode`.

use std::hint::black_box;
use std::time::Instant;

use kube_informer::api::{DynamicObject, Object, ObjectMeta, WatchEvent};
use serde::Deserialize;

const POD: &str = include_str!("realistic-pod.json");

#[derive(Deserialize)]
struct SlimPod {
    metadata: ObjectMeta,
}

impl Object for SlimPod {
    type Meta = ObjectMeta;
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// Best of five runs of 20,000 decodes (the machine is shared; the best run is the least
/// disturbed one).
fn measure(label: &str, line: &[u8], mut decode: impl FnMut(&[u8])) {
    let rounds = 20_000;
    for _ in 0..1_000 {
        decode(line);
    }
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..rounds {
            decode(black_box(line));
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!(
        "{label:<44} {:>8.0} MB/s {:>8.2} µs/object",
        (line.len() * rounds) as f64 / best / 1e6,
        best / rounds as f64 * 1e6
    );
}

fn main() {
    let line = format!("{{\"type\":\"MODIFIED\",\"object\":{}}}", POD.trim());
    let line = line.as_bytes();
    println!("one watch event line of {} bytes", line.len());
    measure(
        "DynamicObject, scanner (WatchEvent::from_json)",
        line,
        |l| {
            black_box(WatchEvent::<DynamicObject>::from_json(l).unwrap());
        },
    );
    measure("DynamicObject, serde_json derive", line, |l| {
        black_box(serde_json::from_slice::<WatchEvent<DynamicObject>>(l).unwrap());
    });
    measure("slim type, serde in one pass (from_json)", line, |l| {
        black_box(WatchEvent::<SlimPod>::from_json(l).unwrap());
    });
    measure("slim type, serde_json derive", line, |l| {
        black_box(serde_json::from_slice::<WatchEvent<SlimPod>>(l).unwrap());
    });
}
