//! Decoding the captured Running Pod (kube-apiserver 1.36.2, 5,539 bytes of protobuf, 8,178
//! of JSON) into k8s-openapi's `Pod`: through the protobuf codec against the library's JSON
//! path (`Object::from_json_prefix`), and into `serde_json::Value` both ways. Prints µs per
//! object (best of five runs) and heap bytes and allocations per object; asserts nothing
//! about time.
//!
//! Run: `cargo bench --bench protobuf_decode --features protobuf,k8s-openapi,k8s-openapi/v1_35`.
//!
//! For a load-independent count of instructions, run one measure under callgrind with few
//! rounds: `BENCH_ONLY="Pod, protobuf" BENCH_ROUNDS=200 valgrind --tool=callgrind <bench
//! binary>` (`BENCH_ONLY` keeps the measures whose label contains it; `BENCH_ROUNDS` is the
//! number of objects per timed run, 5,000 by default). The difference of two such runs
//! divided by the difference of their rounds is the instructions per object.

use std::hint::black_box;
use std::time::Instant;

use base64::Engine;
use k8s_openapi::api::core::v1::Pod;
use kube_informer::api::Object;
use kube_informer::protobuf::{decode, message_for, read_envelope};

#[path = "support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::counted;

fn body(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/protobuf/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let capture: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    base64::engine::general_purpose::STANDARD
        .decode(capture["response"]["bodyBase64"].as_str().unwrap())
        .unwrap()
}

fn measure<T>(label: &str, size: usize, mut decode: impl FnMut() -> T) {
    if std::env::var("BENCH_ONLY").is_ok_and(|only| !label.contains(&only)) {
        return;
    }
    let rounds: u32 = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5_000);
    for _ in 0..rounds.div_ceil(10) {
        drop(black_box(decode()));
    }
    let (bytes0, count0) = counted();
    drop(black_box(decode()));
    let (bytes, count) = {
        let (b, c) = counted();
        (b - bytes0, c - count0)
    };
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..rounds {
            drop(black_box(decode()));
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!(
        "{label:<34} {size:>6} B in {:>8.2} µs/object {:>8} B allocated in {count:>4} allocations",
        best / rounds as f64 * 1e6,
        bytes
    );
}

fn main() {
    let protobuf = body("get-pod-running.json");
    let json = String::from_utf8(body("get-pod-running-json.json")).unwrap();
    let envelope = read_envelope(&protobuf).unwrap();
    let message = message_for(envelope.api_version, envelope.kind).unwrap();
    let raw = envelope.raw;
    assert_eq!(
        decode::<Pod>(message, raw).unwrap(),
        Pod::from_json_prefix(&json).unwrap().0
    );

    measure("k8s-openapi Pod, protobuf", raw.len(), || {
        decode::<Pod>(message, black_box(raw)).unwrap()
    });
    measure("k8s-openapi Pod, JSON (library)", json.len(), || {
        Pod::from_json_prefix(black_box(&json)).unwrap()
    });
    measure("k8s-openapi Pod, JSON (serde_json)", json.len(), || {
        serde_json::from_str::<Pod>(black_box(&json)).unwrap()
    });
    // The floor of any decoder into this type: every String, Vec, map and FieldsV1 tree of
    // the Pod allocated and filled, with nothing to parse.
    let pod = Pod::from_json_prefix(&json).unwrap().0;
    measure("k8s-openapi Pod, clone (the floor)", 0, || {
        black_box(&pod).clone()
    });
    measure("serde_json::Value, protobuf", raw.len(), || {
        decode::<serde_json::Value>(message, black_box(raw)).unwrap()
    });
    measure("serde_json::Value, JSON", json.len(), || {
        serde_json::from_str::<serde_json::Value>(black_box(&json)).unwrap()
    });
}
