//! Any bytes into the protobuf codec: as an envelope, a watch event, a list, and as the
//! messages of a Pod (into `serde_json::Value`, k8s-openapi's `Pod` and our
//! `PartialObjectMetadata`), a Status, and a CustomResourceDefinition (the JSONSchemaProps
//! shapes: schema or array, schema or bool, raw JSON, nesting) on a thread of the informer's
//! 2 MiB stack. Never a panic, never an allocation the input does not justify (libFuzzer's
//! `-rss_limit_mb` and `-malloc_limit_mb` watch that). Whatever decodes into a `Value`
//! encodes, and after that first encode, encoding and decoding are each other's inverse (the
//! codec's fixpoint).
#![no_main]

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_informer::api::{PartialObjectMetadata, Status};
use kube_informer::protobuf::{
    decode, decode_envelope, encode, message_for, read_envelope, read_watch_event, split_list,
};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    if let Ok(envelope) = read_envelope(data) {
        let _ = decode_envelope::<Value>(&envelope);
        let _ = split_list(envelope.raw);
    }
    if let Ok(event) = read_watch_event(data) {
        let _ = read_envelope(event.object);
    }
    let _ = split_list(data);
    let pod = message_for("v1", "Pod").unwrap();
    let _ = decode::<Pod>(pod, data);
    let _ = decode::<PartialObjectMetadata>(pod, data);
    let _ = decode::<Status>(message_for("v1", "Status").unwrap(), data);
    // Deep nesting must be refused before it overflows a thread of the informer's stack.
    let crd = message_for("apiextensions.k8s.io/v1", "CustomResourceDefinition").unwrap();
    let _ = decode::<Value>(crd, data);
    let owned = data.to_vec();
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let _ = decode::<CustomResourceDefinition>(crd, &owned);
        })
        .unwrap()
        .join()
        .unwrap();
    if let Ok(value) = decode::<Value>(pod, data) {
        // The first encode writes what the input may lack (Go's always-written fields);
        // from there on, encode and decode are each other's inverse.
        let bytes = encode(pod, &value).expect("a decoded Pod encodes");
        let value: Value = decode(pod, &bytes).expect("an encoded Pod decodes");
        let again = encode(pod, &value).expect("a decoded Pod encodes");
        assert_eq!(again, bytes);
        assert_eq!(decode::<Value>(pod, &again).unwrap(), value);
    }
});
