//! `Store::upsert_keyed` of an object already cached under that key, with the same index
//! values (every watch update of a pod: same namespace), allocates nothing: the built-in
//! namespace index compares namespaces in place and the key already held is kept.
//!
//! A counting global allocator makes the figure exact; this binary holds one test so that no
//! other test allocates while it counts.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use kube_informer::api::{DynamicObject, ObjectMeta};
use kube_informer::cache::{Store, NAMESPACE_INDEX};

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

struct Counting;

// SAFETY: every call is passed on unchanged to the system allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn pod(version: u32) -> Arc<DynamicObject> {
    Arc::new(DynamicObject {
        metadata: ObjectMeta {
            namespace: Some("lab".into()),
            name: Some("web-1".into()),
            resource_version: Some(version.to_string()),
            ..ObjectMeta::default()
        },
        ..DynamicObject::default()
    })
}

#[test]
fn an_update_that_keeps_the_index_values_allocates_nothing() {
    let store = Store::<DynamicObject>::new();
    store.upsert_keyed("lab/web-1", pod(1)).1.unwrap();
    let updates: Vec<Arc<DynamicObject>> = (2..=100).map(pod).collect();

    let before = ALLOCATIONS.load(Ordering::Relaxed);
    for obj in updates {
        let (old, indexed) = store.upsert_keyed("lab/web-1", obj);
        assert!(old.is_some() && indexed.is_ok());
    }
    let allocations = ALLOCATIONS.load(Ordering::Relaxed) - before;

    assert_eq!(allocations, 0, "allocations for 99 updates");
    let cached = store.get("lab/web-1").unwrap();
    assert_eq!(cached.metadata.resource_version(), "100");
    assert_eq!(
        store.index_keys(NAMESPACE_INDEX, "lab").unwrap(),
        ["lab/web-1"]
    );
}
