//! Any bytes as a watch event line: decoding returns an event or an error, never panics; and
//! whatever the scanner path decodes, serde's derive path decodes to the same object.
#![no_main]

use kube_informer::api::{DynamicObject, WatchEvent};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let fast = WatchEvent::<DynamicObject>::from_json(data);
    if let Ok(WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o)) = &fast {
        // A decoded object re-encodes, exactly as serde decodes it.
        let ours = serde_json::to_string(o).expect("a decoded object re-encodes");
        match serde_json::from_slice::<WatchEvent<DynamicObject>>(data) {
            Ok(WatchEvent::Added(s) | WatchEvent::Modified(s) | WatchEvent::Deleted(s)) => {
                assert_eq!(
                    ours,
                    serde_json::to_string(&s).unwrap(),
                    "{:?}",
                    String::from_utf8_lossy(data)
                );
            }
            other => panic!(
                "the scanner decoded {:?} but serde gave {other:?}",
                String::from_utf8_lossy(data)
            ),
        }
    }
});
