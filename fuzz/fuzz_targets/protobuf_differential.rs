//! The protobuf path against the JSON path on the same objects: any JSON that k8s-openapi
//! reads as a Pod is encoded by our encoder (as Go's marshaller would write it), decoded
//! back, and must equal what the library's JSON path decodes from the JSON form of that
//! object; a second encode gives the same bytes (Go's order is stable).
#![no_main]

use k8s_openapi::api::core::v1::Pod;
use kube_informer::api::Object;
use kube_informer::protobuf::{decode, encode, message_for};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(pod) = serde_json::from_slice::<Pod>(data) else {
        return;
    };
    let message = message_for("v1", "Pod").unwrap();
    // Values Go cannot hold (an int32 out of range, a time before year 0) are refused.
    let Ok(bytes) = encode(message, &pod) else {
        return;
    };
    // What a Go server would send back: JSON's omitempty zeros dropped.
    let from_protobuf: Pod = decode(message, &bytes).expect("an encoded Pod decodes");
    let json = serde_json::to_string(&from_protobuf).unwrap();
    let (from_json, _) = Pod::from_json_prefix(&json).expect("its JSON decodes");
    assert_eq!(from_protobuf, from_json);
    assert_eq!(encode(message, &from_protobuf).unwrap(), bytes);
});
