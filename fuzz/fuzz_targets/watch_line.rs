//! Any bytes as a watch event line: decoding returns an event or an error, never panics.
#![no_main]

use kube_informer::api::{DynamicObject, WatchEvent};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o)) =
        WatchEvent::<DynamicObject>::from_json(data)
    {
        // A decoded object re-encodes.
        let _ = serde_json::to_vec(&o).expect("a decoded object re-encodes");
    }
});
