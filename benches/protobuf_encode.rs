//! Encoding a request body: the captured Running Pod (kube-apiserver 1.36.2) as k8s-openapi's
//! `Pod`, written as the client writes a create's body: `serde_json::to_vec` (a JSON body)
//! against the protobuf codec's exact encoder plus the `k8s\0` envelope (a protobuf body).
//! Prints bytes on the wire, µs per body (best of five runs) and heap bytes and allocations
//! per body; asserts only that the protobuf body decodes back to the same `Pod`.
//!
//! The server's side is the premise of issue #40 (kube-apiserver decodes protobuf faster
//! than JSON); this measures what the client pays for it.
//!
//! Run: `cargo bench --bench protobuf_encode --features protobuf,k8s-openapi,k8s-openapi/v1_35`.
//!
//! Also: the same Pod as a `DynamicObject`, and the test server's encoding of a stored
//! version (JSON text straight into the encoder, against text -> `Value` -> encoder).
//!
//! Figures, 2026-11-28, 2 cores at load average 7-10 (times are upper bounds; allocation
//! and instruction counts are exact). Instructions per body with callgrind: run with
//! `ONLY=<label prefix>` and `ROUNDS=1`, then `ROUNDS=11`: the difference is 20 bodies.
//! - before (the encoder through a `serde_json::Value`): Pod 763 µs, 940 allocations;
//!   Pod + ConfigMap protobuf bodies ~836k instructions (JSON body of the Pod: 154k).
//! - the direct serializer: Pod 583 µs (JSON 119 µs in the same run), 343 allocations,
//!   619k instructions (4.0x JSON's); ConfigMap 10 allocations, 17k instructions; the test
//!   server's text -> message 316 µs and 333 allocations against 739 µs and 987 through a
//!   `Value`. Most allocations left were the `managedFields` texts going through a `Value`
//!   for their escaped keys, which `raw_text.rs` now writes directly: after that change
//!   (counted in a dev-profile run, `ROUNDS=50 cargo bench --profile dev ...`; counts do not
//!   depend on the profile, JSON's 29 is the same) the Pod's body takes 84 allocations
//!   (62 KB), as a `DynamicObject` 71, the test server's text -> message 66 (728 through a
//!   `Value`), the ConfigMap 10. Its instruction count was not re-measured.

use std::hint::black_box;
use std::time::Instant;

use base64::Engine;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube_informer::api::DynamicObject;
use kube_informer::protobuf::{
    decode, encode, encode_exact, encode_json, message_for, read_envelope, write_envelope,
};

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

fn measure(label: &str, mut encode: impl FnMut() -> Vec<u8>) {
    // ONLY=<label prefix>: one measure alone (for callgrind: the difference between two
    // ROUNDS is that measure's instructions, the setup cancelling out).
    if std::env::var("ONLY").is_ok_and(|only| !label.starts_with(&only)) {
        return;
    }
    // ROUNDS=1 for a run under callgrind (instructions per body; one warm-up call first).
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5_000);
    let size = encode().len();
    for _ in 0..rounds.min(500) {
        drop(black_box(encode()));
    }
    let (bytes0, count0) = counted();
    drop(black_box(encode()));
    let (bytes, count) = {
        let (b, c) = counted();
        (b - bytes0, c - count0)
    };
    let mut best = f64::MAX;
    for _ in 0..if rounds < 100 { 1 } else { 5 } {
        let t = Instant::now();
        for _ in 0..rounds {
            drop(black_box(encode()));
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!(
        "{label:<34} {size:>6} B in {:>8.2} µs/body {:>8} B allocated in {count:>4} allocations",
        best / rounds as f64 * 1e6,
        bytes
    );
}

/// The body the client sends for a create of `object` in protobuf.
fn protobuf_body<T: serde::Serialize>(api_version: &str, kind: &str, object: &T) -> Vec<u8> {
    let message = message_for(api_version, kind).unwrap();
    let raw = encode_exact(message, (api_version, kind), object).unwrap();
    let mut out = Vec::with_capacity(raw.len() + 32);
    write_envelope(api_version, kind, &raw, &mut out);
    out
}

fn main() {
    let pod: Pod = serde_json::from_slice(&body("get-pod-running-json.json")).unwrap();
    let captured = body("get-pod-running.json");
    let sent = protobuf_body("v1", "Pod", &pod);
    let envelope = read_envelope(&sent).unwrap();
    let message = message_for("v1", "Pod").unwrap();
    assert_eq!(decode::<Pod>(message, envelope.raw).unwrap(), pod);
    println!(
        "the captured Running Pod: our protobuf body {} B, kube-apiserver's own {} B ({})",
        sent.len(),
        captured.len(),
        if sent == captured {
            "byte for byte the same"
        } else {
            "not the same bytes"
        }
    );
    measure("Pod, JSON body (serde_json)", || {
        serde_json::to_vec(black_box(&pod)).unwrap()
    });
    measure("Pod, protobuf body (exact)", || {
        protobuf_body("v1", "Pod", black_box(&pod))
    });
    let text = serde_json::to_string(&pod).unwrap();
    let dynamic: DynamicObject = serde_json::from_str(&text).unwrap();
    assert_eq!(protobuf_body("v1", "Pod", &dynamic), sent);
    measure("Pod as DynamicObject, protobuf (exact)", || {
        protobuf_body("v1", "Pod", black_box(&dynamic))
    });
    // The test server's encoding of a stored version: JSON text to message bytes.
    let tree_way = |text: &str| {
        let tree: serde_json::Value = serde_json::from_str(text).unwrap();
        encode(message, &tree).unwrap()
    };
    assert_eq!(encode_json(message, &text).unwrap(), tree_way(&text));
    measure("Pod JSON text -> protobuf (server)", || {
        encode_json(message, black_box(&text)).unwrap()
    });
    measure("Pod JSON text -> Value -> protobuf", || {
        tree_way(black_box(&text))
    });
    let cm: ConfigMap = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "lab", "labels": {"app": "web"}},
        "data": {"mode": "fast", "config.yaml": "a: 1\nb: [2, 3]\n"},
        "binaryData": {"blob": "AAECA/8="}}))
    .unwrap();
    measure("ConfigMap, JSON body (serde_json)", || {
        serde_json::to_vec(black_box(&cm)).unwrap()
    });
    measure("ConfigMap, protobuf body (exact)", || {
        protobuf_body("v1", "ConfigMap", black_box(&cm))
    });
}
