//! The library's JSON scanner accepts exactly what serde_json accepts as a raw value.
#![no_main]

use kube_informer::api::RawJson;
use libfuzzer_sys::fuzz_target;
use serde_json::value::RawValue;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let ours = RawJson::from_string(text.to_owned());
    let serde = serde_json::from_str::<Box<RawValue>>(text);
    assert_eq!(
        ours.is_ok(),
        serde.is_ok(),
        "scanner and serde_json disagree on {text:?}: {ours:?} / {serde:?}"
    );
});
