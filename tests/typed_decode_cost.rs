//! What `strip_managed_fields` saves on a typed k8s-openapi `Pod`: allocations made and heap
//! bytes kept per decoded realistic pod (`benches/realistic-pod.json`, 4.7 KB with two
//! managers' `managedFields`), with the option off and on, beside `DynamicObject` for
//! comparison, and beside serde_json decoding the same `Pod` (whose `Vec`s keep spare room).
//! The figures are exact (a counting allocator), so they are printed (`--nocapture`) and the
//! savings are asserted. One test in this binary: nothing else
//! allocates while it counts.
//!
//! `cargo test --features k8s-openapi,k8s-openapi/v1_35 --test typed_decode_cost -- --nocapture`
#![cfg(feature = "k8s-openapi")]

#[path = "common/counting_allocator.rs"]
mod counting_allocator;
use counting_allocator::{allocations_of, retained_bytes_of};

use k8s_openapi::api::core::v1::Pod;
use kube_informer::api::{DynamicObject, Object};

const POD: &str = include_str!("../benches/realistic-pod.json");

/// Allocations and bytes kept decoding the pod as `K`, with stripping off or on (the second
/// decode of two, so the thread's tables of shared values are warm).
fn cost<K: Object>(strip: bool) -> (u64, i64) {
    let _guard = kube_informer::api::strip_managed_fields_on_this_thread(strip);
    drop(K::from_json_prefix(POD).unwrap());
    let ((object, allocations), bytes) =
        retained_bytes_of(|| allocations_of(|| K::from_json_prefix(POD).unwrap().0));
    drop(object);
    (allocations, bytes)
}

#[test]
fn stripping_managed_fields_while_decoding_saves_allocations_and_memory() {
    for (name, off, on) in [
        ("k8s-openapi Pod", cost::<Pod>(false), cost::<Pod>(true)),
        (
            "DynamicObject",
            cost::<DynamicObject>(false),
            cost::<DynamicObject>(true),
        ),
    ] {
        println!(
            "{name}: kept {} -> {} bytes, {} -> {} allocations (managedFields kept -> stripped while decoding)",
            off.1, on.1, off.0, on.0
        );
        // `DynamicObject` keeps its raw parts in one buffer either way: fewer bytes, the
        // same count.
        assert!(on.0 <= off.0 && on.1 < off.1, "{name}: {off:?} -> {on:?}");
    }
    let (off, on) = (cost::<Pod>(false), cost::<Pod>(true));
    assert!(
        on.0 < off.0,
        "typed: each FieldsV1 tree is many allocations"
    );

    // Against serde_json on the same type: no spare room in the `Vec`s (arrays say their
    // length), escaped strings unescaped straight into the string kept.
    let theirs = {
        drop(serde_json::from_str::<Pod>(POD).unwrap());
        let ((object, allocations), bytes) =
            retained_bytes_of(|| allocations_of(|| serde_json::from_str::<Pod>(POD).unwrap()));
        drop(object);
        (allocations, bytes)
    };
    let exact = {
        let pod = serde_json::from_str::<Pod>(POD).unwrap();
        let (copy, bytes) = retained_bytes_of(|| pod.clone());
        drop(copy);
        bytes
    };
    println!(
        "k8s-openapi Pod: ours {} allocations, {} bytes kept; serde_json {} allocations, {} \
         bytes kept; a clone (no spare room) keeps {exact} bytes",
        off.0, off.1, theirs.0, theirs.1
    );
    assert!(
        off.0 <= theirs.0,
        "allocations: ours {off:?}, serde_json's {theirs:?}"
    );
    // Only unescaped strings may keep a few bytes of room (their escapes' length).
    assert!(
        off.1 <= exact + exact / 100,
        "bytes kept: ours {off:?}, a clone's {exact}, serde_json's {theirs:?}"
    );
}
