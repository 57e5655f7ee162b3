//! Decoding the second pod of a ReplicaSet allocates only for what is its own: its name,
//! uid, resource version and creation time, its raw text, and the two lists
//! (owner references, top-level fields). Its namespace, `generateName`, owner reference
//! strings, labels, annotations, `apiVersion`, `kind` and field names are shared with the
//! first pod's (see `SharedStr` and `StringMap`).
//!
//! A counting global allocator (`common/counting_allocator.rs`) makes the figure exact; this
//! binary holds one test so that no other test allocates while it counts.

use kube_informer::api::{DynamicObject, Object, PartialObjectMetadata, SharedStr};

#[path = "common/counting_allocator.rs"]
mod counting_allocator;
use counting_allocator::allocations_of;

fn pod(i: u32) -> String {
    pod_of("7d4b9", "shop", i)
}

/// Pod `i` of ReplicaSet `web-{hash}` in namespace `ns`.
fn pod_of(hash: &str, ns: &str, i: u32) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"web-{hash}-{i:05}","generateName":"web-{hash}-",
        "namespace":"{ns}","uid":"6c1b2d3e-0000-4000-8000-{i:012}","resourceVersion":"{rv}",
        "creationTimestamp":"2026-11-20T10:00:{s:02}Z",
        "labels":{{"app":"web","pod-template-hash":"{hash}","tier":"frontend"}},
        "annotations":{{"prometheus.io/scrape":"true"}},
        "ownerReferences":[{{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-{hash}",
            "uid":"0f3c6a52-8d1e-4b7a-9c2f-{hash:0>12}","controller":true,"blockOwnerDeletion":true}}],
        "managedFields":[{{"manager":"kubelet","operation":"Update","fieldsV1":{{"f:status":{{}}}}}}]}},
        "spec":{{"nodeName":"node-{i}","containers":[{{"name":"app","image":"web:1"}}]}},
        "status":{{"phase":"Running","podIP":"10.0.0.{i}"}}}}"#,
        rv = 1000 + i,
        s = i % 60,
    )
}

#[test]
fn the_second_pod_of_a_replica_set_allocates_only_for_what_is_its_own() {
    // A pod of another ReplicaSet, in another namespace, decoded before: what all pods
    // share (`apiVersion`, `kind`, the owner's `apiVersion` and `kind`, the field names,
    // the annotations) is known to the thread; the rest of the first pod is new.
    let (other, first, second) = (pod_of("5c8e1", "lab", 1), pod(1), pod(2));
    DynamicObject::from_json_prefix(&other).unwrap();
    let ((a, _), allocations) = allocations_of(|| DynamicObject::from_json_prefix(&first).unwrap());
    // The second pod's seven (below), and the first of its ReplicaSet's values: namespace,
    // generateName, the owner's name and uid, and the labels' text and offsets.
    assert_eq!(allocations, 7 + 6, "allocations decoding the first pod");
    let ((b, _), allocations) =
        allocations_of(|| DynamicObject::from_json_prefix(&second).unwrap());
    // name, uid, resourceVersion, creationTimestamp; the ownerReferences list and the fields
    // list; the one buffer managedFields, spec and status share (they lie close together).
    assert_eq!(allocations, 7, "allocations decoding the second pod");

    // What the two share is one allocation, and the values are the first's.
    let same = |x: &SharedStr, y: &SharedStr| SharedStr::ptr_eq(x, y) && x == y;
    let (ma, mb) = (&a.metadata, &b.metadata);
    assert!(same(
        ma.namespace.as_ref().unwrap(),
        mb.namespace.as_ref().unwrap()
    ));
    assert!(same(
        ma.generate_name.as_ref().unwrap(),
        mb.generate_name.as_ref().unwrap()
    ));
    let (oa, ob) = (
        &ma.owner_references.as_ref().unwrap()[0],
        &mb.owner_references.as_ref().unwrap()[0],
    );
    assert!(same(&oa.api_version, &ob.api_version) && same(&oa.kind, &ob.kind));
    assert!(same(&oa.name, &ob.name) && same(&oa.uid, &ob.uid));
    assert!(same(
        a.api_version.as_ref().unwrap(),
        b.api_version.as_ref().unwrap()
    ));
    assert!(same(a.kind.as_ref().unwrap(), b.kind.as_ref().unwrap()));
    assert!(same(&a.fields[0].0, &b.fields[0].0) && a.fields[1].0 == "status");
    let label = |m: &kube_informer::api::ObjectMeta| {
        m.labels.as_ref().unwrap().get("app").unwrap().as_ptr()
    };
    assert_eq!(label(ma), label(mb), "one copy of equal label maps");
    assert_eq!(ma.labels, mb.labels);
    assert_ne!(ma.name, mb.name);
    assert_ne!(
        a.field("spec").unwrap().get(),
        b.field("spec").unwrap().get()
    );

    // Metadata only (the server sends the same metadata): the four strings of its own,
    // managedFields' buffer and the owner references list.
    let (third, fourth) = (pod(3), pod(4));
    let (_, _) = PartialObjectMetadata::from_json_prefix(&third).unwrap();
    let (_, allocations) =
        allocations_of(|| PartialObjectMetadata::from_json_prefix(&fourth).unwrap());
    assert_eq!(allocations, 6, "allocations decoding metadata only");
}
