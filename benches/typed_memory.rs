//! Where the heap of one cached k8s-openapi `Pod` goes, field by field, and what each way of
//! caching the same pod would hold instead. Exact figures (a counting global allocator in this
//! binary, not in the library), so a loaded machine does not move them.
//!
//! Run: `cargo bench --bench typed_memory --features k8s-openapi,k8s-openapi/v1_35`
//!
//! Two pods: the informer benches' realistic pod (`support/realistic_pod.rs`, 4.7 KB of JSON,
//! two managers' `managedFields`) and a Running pod captured from kube-apiserver 1.36.2
//! (`fixtures/running-pod-1.36.json`, 8.2 KB, created by `kubectl create` then run by the
//! kubelet). Each is decoded as the informer decodes it (`Object::from_json_prefix`, the
//! second decode of two so that the thread's tables are warm), then its fields are taken out
//! one by one and the heap each one frees is its share. "chunks" estimates what glibc's malloc
//! uses for the same allocations (a 16-byte-aligned chunk with an 8-byte header, 32 at least),
//! which is what the resident memory of a cache of these pods grows by.
//!
//! Why: kube-apiserver's `FieldsV1` is a JSON document that client-go keeps as raw bytes;
//! k8s-openapi's `FieldsV1` is a `serde_json::Value`, and serde_json's `Map` is a `BTreeMap`
//! (without serde_json's `preserve_order`) whose smallest allocation is a whole leaf node of
//! eleven slots. The table shows how much of a typed pod that is.

#[path = "support/realistic_pod.rs"]
mod realistic_pod;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1;
use kube_informer::api::{strip_managed_fields_on_this_thread, DynamicObject, Object};
use serde_json::Value;

static LIVE_BYTES: AtomicI64 = AtomicI64::new(0);
static LIVE_CHUNKS: AtomicI64 = AtomicI64::new(0);
static LIVE_ALLOCATIONS: AtomicI64 = AtomicI64::new(0);

/// glibc malloc's chunk for a request of `size` bytes on 64-bit targets.
fn chunk(size: usize) -> i64 {
    ((size + 8 + 15) & !15).max(32) as i64
}

struct Counting;

// SAFETY: every call is passed on unchanged to the system allocator; only counters change.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as i64, Ordering::Relaxed);
        LIVE_CHUNKS.fetch_add(chunk(layout.size()), Ordering::Relaxed);
        LIVE_ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        LIVE_CHUNKS.fetch_sub(chunk(layout.size()), Ordering::Relaxed);
        LIVE_ALLOCATIONS.fetch_sub(1, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        LIVE_BYTES.fetch_add(size as i64 - layout.size() as i64, Ordering::Relaxed);
        LIVE_CHUNKS.fetch_add(chunk(size) - chunk(layout.size()), Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Heap held: bytes as requested, glibc's chunks for them, live allocations.
#[derive(Clone, Copy, Default)]
struct Heap {
    bytes: i64,
    chunks: i64,
    allocations: i64,
}

impl Heap {
    fn now() -> Heap {
        Heap {
            bytes: LIVE_BYTES.load(Ordering::Relaxed),
            chunks: LIVE_CHUNKS.load(Ordering::Relaxed),
            allocations: LIVE_ALLOCATIONS.load(Ordering::Relaxed),
        }
    }
    fn minus(self, other: Heap) -> Heap {
        Heap {
            bytes: self.bytes - other.bytes,
            chunks: self.chunks - other.chunks,
            allocations: self.allocations - other.allocations,
        }
    }
    fn plus(self, other: Heap) -> Heap {
        Heap {
            bytes: self.bytes + other.bytes,
            chunks: self.chunks + other.chunks,
            allocations: self.allocations + other.allocations,
        }
    }
}

/// What `make`'s result holds on the heap.
fn kept<T>(make: impl FnOnce() -> T) -> (T, Heap) {
    let before = Heap::now();
    let value = make();
    (value, Heap::now().minus(before))
}

/// What dropping `value` frees.
fn freed<T>(value: T) -> Heap {
    let before = Heap::now();
    drop(value);
    before.minus(Heap::now())
}

/// The informer's decode: our deserializer under k8s-openapi's `Deserialize`, warm tables.
fn decode(json: &str, strip: bool) -> Pod {
    let _strip = strip_managed_fields_on_this_thread(strip);
    drop(<Pod as Object>::from_json_prefix(json).unwrap());
    <Pod as Object>::from_json_prefix(json).unwrap().0
}

/// Objects (maps) with at least one member in a `FieldsV1` tree, its members, and its text.
fn tree_shape(value: &Value, maps: &mut usize, members: &mut usize) {
    if let Value::Object(map) = value {
        if !map.is_empty() {
            *maps += 1;
        }
        *members += map.len();
        for v in map.values() {
            tree_shape(v, maps, members);
        }
    }
}

/// Makes one pod held some way (the `Arc` included).
type Held<'a> = dyn Fn() -> Arc<dyn std::any::Any> + 'a;

fn row(table: &mut Vec<(String, Heap)>, name: &str, heap: Heap) {
    table.push((name.to_string(), heap));
}

fn report(label: &str, json: &str) {
    println!("\n## {label} ({} bytes of JSON)\n", json.len());

    // The whole pod as the cache holds it: the `Arc` around the struct, and its heap.
    let pod = decode(json, false);
    let heap_total = {
        let copy = decode(json, false);
        freed(copy)
    };
    let (arc, arc_heap) = kept(|| Arc::new(decode(json, false)));
    let arc_only = arc_heap.minus(heap_total);
    drop(arc);

    // Field by field.
    let mut table: Vec<(String, Heap)> = Vec::new();
    let mut p = decode(json, false);
    let mut fields_text = 0usize;
    let (mut maps, mut members) = (0usize, 0usize);
    let mut trees = Heap::default();
    if let Some(entries) = p.metadata.managed_fields.as_mut() {
        for entry in entries.iter_mut() {
            if let Some(FieldsV1(tree)) = entry.fields_v1.take() {
                fields_text += serde_json::to_string(&tree).unwrap().len();
                tree_shape(&tree, &mut maps, &mut members);
                trees = trees.plus(freed(tree));
            }
        }
    }
    row(
        &mut table,
        &format!("metadata.managedFields[].fieldsV1 ({maps} maps, {members} members, {fields_text} bytes as JSON)"),
        trees,
    );
    row(
        &mut table,
        "metadata.managedFields, the rest (manager, time, ...)",
        freed(p.metadata.managed_fields.take()),
    );
    row(
        &mut table,
        "metadata.labels",
        freed(p.metadata.labels.take()),
    );
    row(
        &mut table,
        "metadata.annotations",
        freed(p.metadata.annotations.take()),
    );
    row(
        &mut table,
        "metadata.ownerReferences",
        freed(p.metadata.owner_references.take()),
    );
    row(
        &mut table,
        "metadata, the rest (name, uid, times, ...)",
        freed(std::mem::take(&mut p.metadata)),
    );
    let mut spec = p.spec.take().unwrap_or_default();
    row(
        &mut table,
        "spec.containers",
        freed(std::mem::take(&mut spec.containers)),
    );
    row(&mut table, "spec.volumes", freed(spec.volumes.take()));
    row(
        &mut table,
        "spec.tolerations",
        freed(spec.tolerations.take()),
    );
    row(&mut table, "spec, the rest", freed(spec));
    let mut status = p.status.take().unwrap_or_default();
    row(
        &mut table,
        "status.conditions",
        freed(status.conditions.take()),
    );
    row(
        &mut table,
        "status.containerStatuses",
        freed(status.container_statuses.take()),
    );
    row(&mut table, "status, the rest", freed(status));
    row(&mut table, "(left in the emptied Pod)", freed(p));
    row(
        &mut table,
        &format!(
            "the Arc<Pod> itself (size_of::<Pod>() = {})",
            std::mem::size_of::<Pod>()
        ),
        arc_only,
    );

    println!("| part | bytes | glibc chunks | allocations |");
    println!("|---|---:|---:|---:|");
    let mut sum = Heap::default();
    for (name, heap) in &table {
        sum = sum.plus(*heap);
        println!(
            "| {name} | {} | {} | {} |",
            heap.bytes, heap.chunks, heap.allocations
        );
    }
    println!(
        "| **total** | **{}** | **{}** | **{}** |",
        sum.bytes, sum.chunks, sum.allocations
    );
    assert_eq!(
        sum.bytes,
        heap_total.plus(arc_only).bytes,
        "the parts add up"
    );

    // Spare capacity: a clone allocates every `String` and `Vec` at its length.
    let clone_heap = {
        let (copy, heap) = kept(|| pod.clone());
        drop(copy);
        heap
    };
    // One leaf node: what every `Value::Object` with 1 to 11 members allocates.
    let (leaf, leaf_heap) = kept(|| {
        let mut map = serde_json::Map::new();
        map.insert(String::new(), Value::Null);
        map
    });
    drop(leaf);
    println!(
        "\nspare capacity (decoded minus a clone): {} bytes; one BTreeMap leaf node of \
         serde_json's Map: {} bytes ({} in chunks)",
        heap_total.bytes - clone_heap.bytes,
        leaf_heap.bytes,
        leaf_heap.chunks
    );

    // The same pod held other ways (the Arc included in each).
    println!("\n| held as | bytes | glibc chunks | allocations |");
    println!("|---|---:|---:|---:|");
    let ways: [(&str, Box<Held<'_>>); 5] = [
        (
            "k8s-openapi Pod, managedFields kept",
            Box::new(|| Arc::new(decode(json, false))),
        ),
        (
            "k8s-openapi Pod, managedFields stripped while decoding",
            Box::new(|| Arc::new(decode(json, true))),
        ),
        (
            "k8s-openapi Pod, each fieldsV1 as its JSON text (Value::String)",
            Box::new(|| {
                let mut pod = decode(json, false);
                for entry in pod.metadata.managed_fields.iter_mut().flatten() {
                    if let Some(FieldsV1(tree)) = entry.fields_v1.as_mut() {
                        *tree = Value::String(tree.to_string());
                    }
                }
                Arc::new(pod)
            }),
        ),
        (
            "serde_json::from_str::<Pod>, managedFields kept",
            Box::new(|| Arc::new(serde_json::from_str::<Pod>(json).unwrap())),
        ),
        (
            "DynamicObject (managedFields, spec, status as raw JSON)",
            Box::new(|| {
                drop(DynamicObject::from_json_prefix(json).unwrap());
                Arc::new(DynamicObject::from_json_prefix(json).unwrap().0)
            }),
        ),
    ];
    for (name, make) in ways {
        // Warm whatever the decoder caches per thread, then measure a fresh object.
        drop(make());
        let (held, heap) = kept(&make);
        drop(held);
        // The transient `String` of the JSON-text row is freed before `kept` returns.
        println!(
            "| {name} | {} | {} | {} |",
            heap.bytes, heap.chunks, heap.allocations
        );
    }
}

fn main() {
    let realistic = realistic_pod::realistic_pod(7).to_string();
    report("the benches' realistic pod", &realistic);
    report(
        "a Running pod captured from kube-apiserver 1.36.2",
        include_str!("fixtures/running-pod-1.36.json"),
    );
}
