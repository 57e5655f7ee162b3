//! `ReflectorConfig::strip_managed_fields`: `metadata.managedFields` skipped while decoding,
//! for every kind of object an informer can cache — `DynamicObject` (the scanner's metadata
//! decoder), metadata-only objects and slim serde types (the library's deserializer) — and
//! kept, as client-go and kube-rs keep them, when it is off. (k8s-openapi's types:
//! `tests/typed.rs`.)

mod common;

use std::sync::Arc;

use common::*;
use kube_informer::api::{DynamicObject, Object, ObjectMeta, PartialObjectMetadata};
use kube_informer::cache::{InformerConfig, ReflectorConfig, SharedIndexInformer};
use kube_informer::testing::ApiServer;
use kube_informer::{Api, Client, Patch, PatchParams};

kube_informer::resource! {
    /// Pods as a tool that reads their phase declares them.
    #[resource(group = "", version = "v1", kind = "Pod", plural = "pods", namespaced)]
    pub struct SlimPod {
        pub status: Option<serde_json::Value>,
    }
}

/// A server with pods that have managed fields (written by server-side apply) and one
/// watched change after the informer synced.
fn server() -> ApiServer {
    let server = ApiServer::builder().resource(&pods()).start();
    let api: Api<DynamicObject> =
        Api::namespaced_with(Client::new(server.client_config()).unwrap(), "lab", &pods());
    for name in ["a", "b"] {
        api.patch(
            name,
            &PatchParams::apply("strip-test"),
            &Patch::Apply(pod("lab", name, "Pending")),
        )
        .unwrap();
    }
    server
}

/// Every cached object of an informer of `K` with the option `strip`, after a list and a
/// watch event: whether each has managed fields.
fn cached_with_managed_fields<K>(api: Api<K>, server: &ApiServer, strip: bool) -> Vec<bool>
where
    K: Object<Meta = ObjectMeta>,
{
    let config =
        InformerConfig::<K>::new().reflector(ReflectorConfig::new().strip_managed_fields(strip));
    let inf = SharedIndexInformer::new(api, config);
    inf.start().unwrap();
    assert!(inf.wait_for_cache_sync(PATIENCE));
    // One object arrives by the watch.
    let writer: Api<DynamicObject> =
        Api::namespaced_with(Client::new(server.client_config()).unwrap(), "lab", &pods());
    writer
        .patch(
            "c",
            &PatchParams::apply("strip-test"),
            &Patch::Apply(pod("lab", "c", "Pending")),
        )
        .unwrap();
    let lister = inf.lister();
    wait_until("the watched pod is cached", || {
        lister.get(Some("lab"), "c").is_some()
    });
    let mut with: Vec<(String, bool)> = lister
        .list_all()
        .iter()
        .map(|o: &Arc<K>| {
            let m = o.metadata();
            (m.name().to_owned(), m.managed_fields.is_some())
        })
        .collect();
    with.sort();
    inf.stop();
    writer
        .delete("c", &Default::default())
        .expect("the watched pod is removed for the next run");
    with.into_iter().map(|(_, m)| m).collect()
}

#[test]
fn managed_fields_are_skipped_while_decoding_for_every_kind_of_object() {
    let server = server();
    let client = || Client::new(server.client_config()).unwrap();
    for strip in [false, true] {
        let expected = vec![!strip; 3];
        let dynamic: Api<DynamicObject> = Api::namespaced_with(client(), "lab", &pods());
        assert_eq!(
            cached_with_managed_fields(dynamic, &server, strip),
            expected,
            "DynamicObject, strip {strip}"
        );
        let metadata: Api<PartialObjectMetadata> = Api::namespaced_with(client(), "lab", &pods());
        assert_eq!(
            cached_with_managed_fields(metadata, &server, strip),
            expected,
            "PartialObjectMetadata, strip {strip}"
        );
        let slim: Api<SlimPod> = Api::namespaced(client(), "lab");
        assert_eq!(
            cached_with_managed_fields(slim, &server, strip),
            expected,
            "a slim type, strip {strip}"
        );
    }
    // What the informer does not decode stays on the server.
    let (_, body) = raw_get(
        &format!("{}/api/v1/namespaces/lab/pods/a", server.url()),
        None,
    );
    let pod: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(pod["metadata"]["managedFields"]
        .as_array()
        .is_some_and(|m| !m.is_empty()));
}
