//! `Store::upsert_keyed` of an object already cached under that key, with the same index
//! values (every watch update of a pod: same namespace), allocates nothing: the built-in
//! namespace index compares namespaces in place and the key already held is kept.
//!
//! A counting global allocator (`common/counting_allocator.rs`) makes the figure exact; this
//! binary holds one test so that no other test allocates while it counts.

use std::sync::Arc;

use kube_informer::api::{DynamicObject, ObjectMeta};
use kube_informer::cache::{Store, NAMESPACE_INDEX};

#[path = "common/counting_allocator.rs"]
mod counting_allocator;
use counting_allocator::allocations_of;

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

    let ((), allocations) = allocations_of(|| {
        for obj in updates {
            let (old, indexed) = store.upsert_keyed("lab/web-1", obj);
            assert!(old.is_some() && indexed.is_ok());
        }
    });

    assert_eq!(allocations, 0, "allocations for 99 updates");
    let cached = store.get("lab/web-1").unwrap();
    assert_eq!(cached.metadata.resource_version(), "100");
    assert_eq!(
        store.index_keys(NAMESPACE_INDEX, "lab").unwrap(),
        ["lab/web-1"]
    );
}
