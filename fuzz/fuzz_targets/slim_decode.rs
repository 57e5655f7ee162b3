//! Any bytes as a slim user type: the library's serde deserializer (the default
//! `Object::from_json_prefix`) gives exactly what serde_json gives — the same value and the
//! same length used, or an error from both — for a type that uses most of serde's features
//! (options, numbers of every width, enums, maps with numeric keys, flatten, untagged, raw
//! values, unknown fields skipped or refused), alone and inside a watch event line.
#![no_main]

use std::collections::BTreeMap;

use kube_informer::api::{Object, RawJson, WatchEvent};
use libfuzzer_sys::fuzz_target;
use serde::Deserialize;

#[derive(Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Status {
    phase: Option<String>,
    restarts: Option<u32>,
    big: Option<u64>,
    offset: Option<i64>,
    ratio: Option<f64>,
    #[serde(default)]
    conditions: Vec<Condition>,
    by_port: Option<BTreeMap<u16, String>>,
    kind: Option<Kind>,
    #[serde(flatten)]
    rest: BTreeMap<String, serde_json::Value>,
}

#[derive(Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct Condition {
    #[serde(rename = "type")]
    type_: String,
    status: Option<bool>,
}

#[derive(Deserialize, Clone, Debug, PartialEq)]
enum Kind {
    A,
    B(i8),
    C { x: Option<char> },
}

#[derive(Deserialize, Clone, Debug, PartialEq)]
#[serde(untagged)]
enum Loose {
    N(i128),
    S(String),
    L(Vec<Loose>),
}

kube_informer::resource! {
    #[resource(group = "", version = "v1", kind = "Pod", plural = "pods", namespaced)]
    struct Slim {
        status: Status,
        spec: Option<RawJson>,
        extra: Option<Loose>,
        tags: Vec<(String, u8)>,
    }
}

/// Comparable text of a decoded value (`ObjectMeta` has no `PartialEq`).
fn show(s: &Slim) -> String {
    format!("{s:?}")
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let ours = Slim::from_json_prefix(text);
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Slim>();
    let theirs = match stream.next() {
        Some(Ok(v)) => Ok((v, stream.byte_offset())),
        Some(Err(e)) => Err(e),
        None => Err(serde::de::Error::custom("empty")),
    };
    match (&ours, &theirs) {
        (Ok((a, used_a)), Ok((b, used_b))) => {
            assert_eq!(show(a), show(b), "{text:?}");
            assert_eq!(used_a, used_b, "{text:?}");
        }
        (Err(_), Err(_)) => {}
        _ => panic!("{text:?}: ours {ours:?}, serde_json {theirs:?}"),
    }
    // Inside a watch event line, the same.
    let line = format!(r#"{{"type":"ADDED","object":{text}}}"#);
    let ours = WatchEvent::<Slim>::from_json(line.as_bytes());
    let theirs = serde_json::from_str::<WatchEvent<Slim>>(&line);
    match (&ours, &theirs) {
        (Ok(WatchEvent::Added(a)), Ok(WatchEvent::Added(b))) => assert_eq!(show(a), show(b)),
        (Err(_), Err(_)) => {}
        _ => panic!("{line:?}: ours {ours:?}, serde_json {theirs:?}"),
    }
});
