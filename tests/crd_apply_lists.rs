//! Server-side apply on a custom resource whose schema declares list and map types, beyond
//! the steps of `crd_matrix.rs` (and on another schema than its): managers merging into
//! `set` lists, `map` lists keyed by two fields (one defaulted) and granular maps; conflicts
//! on atomic maps and lists, taken with `force`; items a manager stops applying removed
//! unless someone else owns them; and the `managedFields` entries as kube-apiserver's
//! structured-merge-diff writes them (`v:"x"` for a set item, `k:{...}` for a map-list item).
//!
//! Everything goes over real loopback HTTP to `testing::ApiServer`.

mod common;

use std::net::SocketAddr;

use common::capture::{body_json, send_json};
use kube_informer::testing::ApiServer;
use serde_json::{json, Value};

const NS: &str = "lists";
const PATH: &str = "/apis/lab.example.com/v1/namespaces/lists/racks";
const APPLY: &str = "application/apply-patch+yaml";

fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "racks.lab.example.com"},
        "spec": {
            "group": "lab.example.com",
            "scope": "Namespaced",
            "names": {"plural": "racks", "singular": "rack", "kind": "Rack", "listKind": "RackList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "properties": {
                    "zones": {"type": "array", "x-kubernetes-list-type": "set",
                              "items": {"type": "string"}},
                    "slots": {"type": "array", "x-kubernetes-list-type": "set",
                              "items": {"type": "integer"}},
                    "order": {"type": "array", "x-kubernetes-list-type": "atomic",
                              "items": {"type": "string"}},
                    "ports": {"type": "array", "x-kubernetes-list-type": "map",
                              "x-kubernetes-list-map-keys": ["port", "protocol"],
                              "items": {"type": "object", "required": ["port"], "properties": {
                                  "port": {"type": "integer"},
                                  "protocol": {"type": "string", "default": "TCP"},
                                  "name": {"type": "string"}}}},
                    "labels": {"type": "object", "x-kubernetes-map-type": "granular",
                               "additionalProperties": {"type": "string"}},
                    "limits": {"type": "object", "x-kubernetes-map-type": "atomic",
                               "additionalProperties": {"type": "string"}},
                    "owner": {"type": "string"}}},
                    "status": {"type": "object", "properties": {
                        "seen": {"type": "array", "x-kubernetes-list-type": "set",
                                 "items": {"type": "string"}}}}}}},
                "subresources": {"status": {}}}]
        }
    })
}

fn server() -> (ApiServer, SocketAddr) {
    let server = ApiServer::builder()
        .custom_resource_definition(&crd())
        .expect("a valid CRD")
        .start();
    let addr = server.addr();
    let r = send_json(
        addr,
        "POST",
        "/api/v1/namespaces",
        Some("application/json"),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
            .to_string()
            .into_bytes(),
    );
    assert_eq!(r.code, 201, "{}", String::from_utf8_lossy(&r.body));
    (server, addr)
}

/// Applies `spec` to the rack `name` as `manager`; the answer's code and body.
fn apply(addr: SocketAddr, name: &str, manager: &str, force: bool, spec: Value) -> (u16, Value) {
    let body = json!({"apiVersion": "lab.example.com/v1", "kind": "Rack",
                      "metadata": {"name": name}, "spec": spec});
    let force = if force { "&force=true" } else { "" };
    let r = send_json(
        addr,
        "PATCH",
        &format!("{PATH}/{name}?fieldManager={manager}{force}"),
        Some(APPLY),
        body.to_string().into_bytes(),
    );
    (r.code, body_json(&r))
}

fn applied(addr: SocketAddr, name: &str, manager: &str, spec: Value) -> Value {
    let (code, body) = apply(addr, name, manager, false, spec);
    assert!(code == 200 || code == 201, "{code}: {body}");
    body
}

/// The `fieldsV1` of each entry, by manager.
fn owners(obj: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for e in obj["metadata"]["managedFields"].as_array().unwrap() {
        out.insert(
            format!(
                "{}/{}",
                e["manager"].as_str().unwrap(),
                e["operation"].as_str().unwrap()
            ),
            e["fieldsV1"].clone(),
        );
    }
    Value::Object(out)
}

#[test]
fn three_managers_merge_sets_map_lists_and_granular_maps() {
    let (_server, addr) = server();
    applied(
        addr,
        "r1",
        "alice",
        json!({"zones": ["a"], "slots": [1], "labels": {"team": "x"},
               "ports": [{"port": 80, "name": "web"}]}),
    );
    applied(
        addr,
        "r1",
        "bob",
        json!({"zones": ["b"], "labels": {"tier": "y"},
               "ports": [{"port": 80, "protocol": "UDP"}]}),
    );
    // carol shares alice's set item and map-list item (same values: no conflict).
    let obj = applied(
        addr,
        "r1",
        "carol",
        json!({"zones": ["a", "c"], "slots": [2, 1], "labels": {"team": "x"},
               "ports": [{"port": 80, "protocol": "TCP", "name": "web"}]}),
    );
    assert_eq!(
        obj["spec"],
        json!({"zones": ["a", "b", "c"], "slots": [1, 2],
               "labels": {"team": "x", "tier": "y"},
               "ports": [{"port": 80, "protocol": "TCP", "name": "web"},
                         {"port": 80, "protocol": "UDP"}]})
    );
    assert_eq!(
        owners(&obj),
        json!({
            "alice/Apply": {"f:spec": {
                "f:labels": {"f:team": {}},
                "f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:name": {}, "f:port": {}}},
                "f:slots": {"v:1": {}},
                "f:zones": {"v:\"a\"": {}}}},
            "bob/Apply": {"f:spec": {
                "f:labels": {"f:tier": {}},
                "f:ports": {"k:{\"port\":80,\"protocol\":\"UDP\"}": {".": {}, "f:port": {}, "f:protocol": {}}},
                "f:zones": {"v:\"b\"": {}}}},
            "carol/Apply": {"f:spec": {
                "f:labels": {"f:team": {}},
                "f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:name": {}, "f:port": {}, "f:protocol": {}}},
                "f:slots": {"v:1": {}, "v:2": {}},
                "f:zones": {"v:\"a\"": {}, "v:\"c\"": {}}}}
        })
    );
    // A different value for a field of a shared map-list item is a conflict with both.
    let (code, st) = apply(
        addr,
        "r1",
        "dave",
        false,
        json!({"ports": [{"port": 80, "name": "other"}]}),
    );
    assert_eq!(code, 409, "{st}");
    assert_eq!(
        st["message"],
        "Apply failed with 2 conflicts: conflicts with \"alice\":\n- .spec.ports[port=80,protocol=\"TCP\"].name\nconflicts with \"carol\":\n- .spec.ports[port=80,protocol=\"TCP\"].name"
    );
}

#[test]
fn a_set_shrinks_to_what_is_still_owned() {
    let (_server, addr) = server();
    applied(
        addr,
        "r2",
        "alice",
        json!({"zones": ["x", "y", "z"], "owner": "alice"}),
    );
    applied(addr, "r2", "bob", json!({"zones": ["y"]}));
    // alice stops applying y (still bob's) and z (only hers).
    let obj = applied(
        addr,
        "r2",
        "alice",
        json!({"zones": ["x"], "owner": "alice"}),
    );
    assert_eq!(obj["spec"]["zones"], json!(["x", "y"]));
    // bob lets go of y: no one owns it, it goes.
    let obj = applied(addr, "r2", "bob", json!({"owner": "alice"}));
    assert_eq!(obj["spec"]["zones"], json!(["x"]));
    // alice lets go of the last item: the field goes as a whole (no `zones: []`).
    let obj = applied(addr, "r2", "alice", json!({"owner": "alice"}));
    assert_eq!(obj["spec"], json!({"owner": "alice"}));
    assert_eq!(
        owners(&obj),
        json!({"alice/Apply": {"f:spec": {"f:owner": {}}},
               "bob/Apply": {"f:spec": {"f:owner": {}}}})
    );
    // Map-list items dropped by their applier go, even one an updater owns a field of (only
    // owning the item itself keeps it); the list stays, empty, as the updater owned
    // something in it, and the updater's entry goes with its field.
    applied(
        addr,
        "r2",
        "alice",
        json!({"owner": "alice", "ports": [{"port": 1}, {"port": 2}]}),
    );
    let r = send_json(
        addr,
        "PATCH",
        &format!("{PATH}/r2?fieldManager=editor"),
        Some("application/merge-patch+json"),
        json!({"spec": {"ports": [{"port": 1, "protocol": "TCP"},
                                  {"port": 2, "protocol": "TCP", "name": "two"}]}})
        .to_string()
        .into_bytes(),
    );
    assert_eq!(r.code, 200, "{}", String::from_utf8_lossy(&r.body));
    let obj = applied(addr, "r2", "alice", json!({"owner": "alice"}));
    assert_eq!(obj["spec"], json!({"owner": "alice", "ports": []}));
    assert_eq!(
        owners(&obj),
        json!({"alice/Apply": {"f:spec": {"f:owner": {}}},
               "bob/Apply": {"f:spec": {"f:owner": {}}}})
    );
    // A map list's item whose key field another applier owns with it stays.
    applied(
        addr,
        "r2",
        "alice",
        json!({"owner": "alice", "ports": [{"port": 3, "name": "a"}]}),
    );
    applied(
        addr,
        "r2",
        "bob",
        json!({"owner": "alice", "ports": [{"port": 3}]}),
    );
    let obj = applied(addr, "r2", "alice", json!({"owner": "alice"}));
    assert_eq!(
        obj["spec"]["ports"],
        json!([{"port": 3, "protocol": "TCP"}])
    );
}

#[test]
fn map_lists_keyed_by_two_fields_with_a_default() {
    let (_server, addr) = server();
    // 80 (protocol defaulted to TCP) and 80/UDP are two items.
    let obj = applied(
        addr,
        "r3",
        "alice",
        json!({"ports": [{"port": 80}, {"port": 80, "protocol": "UDP"}]}),
    );
    assert_eq!(
        obj["spec"]["ports"],
        json!([{"port": 80, "protocol": "TCP"}, {"port": 80, "protocol": "UDP"}])
    );
    // bob names 80/TCP: the same item, merged.
    let obj = applied(
        addr,
        "r3",
        "bob",
        json!({"ports": [{"port": 80, "protocol": "TCP", "name": "web"}]}),
    );
    assert_eq!(
        obj["spec"]["ports"],
        json!([{"port": 80, "protocol": "TCP", "name": "web"}, {"port": 80, "protocol": "UDP"}])
    );
    // Written directly, 80 and 80/TCP are duplicates once defaulted; so is a set's repeat.
    for (spec, field, message) in [
        (
            json!({"ports": [{"port": 80}, {"port": 80, "protocol": "TCP"}]}),
            "spec.ports[1]",
            "Duplicate value: {\"port\":80,\"protocol\":\"TCP\"}",
        ),
        (
            json!({"slots": [3, 1, 3, 3]}),
            "spec.slots[2]",
            "Duplicate value: 3",
        ),
        (
            json!({"zones": ["q\"<", "q\"<"]}),
            "spec.zones[1]",
            "Duplicate value: \"q\\\"<\"",
        ),
    ] {
        let r = send_json(
            addr,
            "POST",
            PATH,
            Some("application/json"),
            json!({"apiVersion": "lab.example.com/v1", "kind": "Rack",
                   "metadata": {"name": "dup"}, "spec": spec})
            .to_string()
            .into_bytes(),
        );
        let st = body_json(&r);
        assert_eq!(r.code, 422, "{st}");
        assert_eq!(
            st["details"]["causes"],
            json!([{"reason": "FieldValueDuplicate", "message": message, "field": field}]),
        );
        assert_eq!(
            st["message"],
            format!("Rack.lab.example.com \"dup\" is invalid: {field}: {message}")
        );
    }
    // An atomic list may repeat.
    let obj = applied(addr, "r4", "alice", json!({"order": ["a", "a"]}));
    assert_eq!(obj["spec"]["order"], json!(["a", "a"]));
}

#[test]
fn atomic_maps_and_lists_conflict_and_force_takes_them() {
    let (_server, addr) = server();
    applied(
        addr,
        "r5",
        "alice",
        json!({"limits": {"cpu": "1"}, "order": ["a", "b"], "owner": "alice"}),
    );
    let (code, st) = apply(addr, "r5", "bob", false, json!({"limits": {"memory": "2"}}));
    assert_eq!(code, 409, "{st}");
    assert_eq!(
        st["message"],
        "Apply failed with 1 conflict: conflict with \"alice\": .spec.limits"
    );
    assert_eq!(
        st["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"alice\"",
                "field": ".spec.limits"}])
    );
    let (code, st) = apply(addr, "r5", "bob", false, json!({"order": ["b", "a"]}));
    assert_eq!(code, 409, "{st}");
    // Force: bob takes the whole map (alice's key goes with it) and alice loses it.
    let (code, obj) = apply(addr, "r5", "bob", true, json!({"limits": {"memory": "2"}}));
    assert_eq!(code, 200, "{obj}");
    assert_eq!(
        obj["spec"],
        json!({"limits": {"memory": "2"}, "order": ["a", "b"], "owner": "alice"})
    );
    assert_eq!(
        owners(&obj),
        json!({"alice/Apply": {"f:spec": {"f:order": {}, "f:owner": {}}},
               "bob/Apply": {"f:spec": {"f:limits": {}}}})
    );
    // alice applying her old map again now conflicts with bob.
    let (code, st) = apply(
        addr,
        "r5",
        "alice",
        false,
        json!({"limits": {"cpu": "1"}, "order": ["a", "b"], "owner": "alice"}),
    );
    assert_eq!(code, 409, "{st}");
    assert_eq!(
        st["message"],
        "Apply failed with 1 conflict: conflict with \"bob\": .spec.limits"
    );
}

#[test]
fn crds_with_unusable_list_types_are_refused() {
    let (_server, addr) = server();
    let mut bad = crd();
    bad["metadata"]["name"] = json!("shelves.lab.example.com");
    bad["spec"]["names"] = json!({"plural": "shelves", "singular": "shelf", "kind": "Shelf",
                                  "listKind": "ShelfList"});
    let spec = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties";
    // A key neither required nor defaulted, and a set of granular objects.
    *bad.pointer_mut(&format!("{spec}/ports/items/required"))
        .unwrap() = json!([]);
    *bad.pointer_mut(&format!("{spec}/zones/items")).unwrap() = json!({"type": "object"});
    let r = send_json(
        addr,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        Some("application/json"),
        bad.to_string().into_bytes(),
    );
    let st = body_json(&r);
    assert_eq!(r.code, 422, "{st}");
    let at = "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties";
    let mut causes: Vec<Value> = st["details"]["causes"].as_array().unwrap().clone();
    causes.sort_by_key(|c| c["field"].to_string());
    assert_eq!(
        causes,
        [
            json!({"reason": "FieldValueRequired",
                   "field": format!("{at}[ports].items.properties[port].default"),
                   "message": "Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"}),
            json!({"reason": "FieldValueInvalid",
                   "field": format!("{at}[zones].items.x-kubernetes-map-type"),
                   "message": "Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set"}),
        ]
    );
}

#[test]
fn updates_own_set_items_and_map_list_items_and_metadata_as_the_server_writes_them() {
    let (_server, addr) = server();
    let r = send_json(
        addr,
        "POST",
        &format!("{PATH}?fieldManager=maker"),
        Some("application/json"),
        json!({"apiVersion": "lab.example.com/v1", "kind": "Rack",
               "metadata": {"name": "r6", "labels": {"app": "x"}, "finalizers": ["lab.example.com/keep"]},
               "spec": {"zones": ["a"], "ports": [{"port": 1}], "limits": {"cpu": "1"}}})
        .to_string()
        .into_bytes(),
    );
    let obj = body_json(&r);
    assert_eq!(r.code, 201, "{obj}");
    assert_eq!(
        owners(&obj),
        json!({"maker/Update": {
            "f:metadata": {"f:finalizers": {".": {}, "v:\"lab.example.com/keep\"": {}},
                           "f:labels": {".": {}, "f:app": {}}},
            "f:spec": {".": {},
                       "f:limits": {},
                       "f:ports": {".": {}, "k:{\"port\":1,\"protocol\":\"TCP\"}":
                                   {".": {}, "f:port": {}, "f:protocol": {}}},
                       "f:zones": {".": {}, "v:\"a\"": {}}}}})
    );
    // Another writer adding a set item owns that item only.
    let r = send_json(
        addr,
        "PATCH",
        &format!("{PATH}/r6?fieldManager=editor"),
        Some("application/merge-patch+json"),
        json!({"spec": {"zones": ["a", "b"]}})
            .to_string()
            .into_bytes(),
    );
    let obj = body_json(&r);
    assert_eq!(r.code, 200, "{obj}");
    assert_eq!(
        owners(&obj)["editor/Update"],
        json!({"f:spec": {"f:zones": {"v:\"b\"": {}}}})
    );
}

#[test]
fn status_writes_check_list_types_too() {
    let (_server, addr) = server();
    let obj = applied(addr, "r7", "alice", json!({"owner": "alice"}));
    let mut next = obj.clone();
    next["status"] = json!({"seen": ["a", "b", "a"]});
    let r = send_json(
        addr,
        "PUT",
        &format!("{PATH}/r7/status"),
        Some("application/json"),
        next.to_string().into_bytes(),
    );
    let st = body_json(&r);
    assert_eq!(r.code, 422, "{st}");
    assert_eq!(
        st["details"]["causes"],
        json!([{"reason": "FieldValueDuplicate", "message": "Duplicate value: \"a\"",
                "field": "status.seen[2]"}])
    );
    next["status"] = json!({"seen": ["a", "b"]});
    let r = send_json(
        addr,
        "PUT",
        &format!("{PATH}/r7/status"),
        Some("application/json"),
        next.to_string().into_bytes(),
    );
    assert_eq!(r.code, 200, "{}", String::from_utf8_lossy(&r.body));
}
