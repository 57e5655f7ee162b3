//! The protobuf codec against kube-apiserver 1.36.2's own bytes (tests/fixtures/protobuf/,
//! captured over a raw socket): envelopes, lists, watch frames reassembled from the HTTP
//! chunks as they arrived, and Status bodies.

use base64::Engine;
use kube_informer::protobuf::{
    read_envelope, read_watch_event, split_list, write_envelope, write_watch_event,
};
use serde_json::Value;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/protobuf");

fn capture(name: &str) -> Value {
    let text = std::fs::read_to_string(format!("{DIR}/{name}")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn b64(text: &Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text.as_str().unwrap())
        .unwrap()
}

fn content_type(exchange: &Value) -> String {
    let Some(headers) = exchange["response"]["headers"].as_array() else {
        return String::new(); // the CRD create that crashed the server: no answer
    };
    headers
        .iter()
        .find(|h| h[0].as_str().unwrap().eq_ignore_ascii_case("content-type"))
        .map(|h| h[1].as_str().unwrap().to_owned())
        .unwrap_or_default()
}

/// Every capture's name whose answer is protobuf, with its content type.
fn protobuf_answers() -> Vec<(String, String)> {
    let mut names: Vec<String> = std::fs::read_dir(DIR)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    names
        .into_iter()
        .filter_map(|n| {
            let ct = content_type(&capture(&n));
            ct.starts_with("application/vnd.kubernetes.protobuf")
                .then_some((n, ct))
        })
        .collect()
}

fn body(name: &str) -> Vec<u8> {
    b64(&capture(name)["response"]["bodyBase64"])
}

/// A watch body's frames, reassembled by length from the HTTP chunks as they arrived (the
/// streaming list's chunks cut frames in the middle).
fn watch_frames(name: &str) -> Vec<Vec<u8>> {
    let exchange = capture(name);
    let mut pending = Vec::new();
    let mut frames = Vec::new();
    for chunk in exchange["response"]["body_chunks"].as_array().unwrap() {
        if chunk["base64"].is_null() {
            continue; // the end of the stream (`event`), not data
        }
        pending.extend_from_slice(&b64(&chunk["base64"]));
        while pending.len() >= 4 {
            let len = u32::from_be_bytes(pending[..4].try_into().unwrap()) as usize;
            if pending.len() < 4 + len {
                break;
            }
            frames.push(pending[4..4 + len].to_vec());
            pending.drain(..4 + len);
        }
    }
    assert!(
        pending.is_empty(),
        "{name}: {} bytes after the last frame",
        pending.len()
    );
    frames
}

#[test]
fn every_captured_envelope_reads_and_writes_back_byte_for_byte() {
    let answers = protobuf_answers();
    assert!(answers.len() >= 40, "{}", answers.len());
    let mut envelopes = 0;
    for (name, ct) in &answers {
        if ct.contains("stream=watch") {
            continue;
        }
        let body = body(name);
        let envelope = read_envelope(&body).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!envelope.kind.is_empty(), "{name}");
        let mut again = Vec::new();
        write_envelope(
            envelope.api_version,
            envelope.kind,
            envelope.raw,
            &mut again,
        );
        assert_eq!(again, body, "{name}");
        envelopes += 1;
    }
    assert!(envelopes >= 30, "{envelopes}");
}

#[test]
fn captured_request_bodies_are_envelopes_too() {
    for name in [
        "create-configmap-protobuf-body.json",
        "create-pod-protobuf-body.json",
        "update-configmap-protobuf-body.json",
    ] {
        let body = b64(&capture(name)["request"]["body"]["bodyBase64"]);
        let envelope = read_envelope(&body).unwrap();
        assert_eq!(
            (envelope.api_version, envelope.kind),
            (
                "v1",
                if name.contains("pod") {
                    "Pod"
                } else {
                    "ConfigMap"
                }
            )
        );
    }
    // The server's 400 for a bare message: we refuse it too.
    let bare =
        b64(&capture("status-400-create-bare-protobuf-body.json")["request"]["body"]["bodyBase64"]);
    assert!(read_envelope(&bare).is_err());
}

#[test]
fn captured_lists_split_into_their_items() {
    for (name, items, cont) in [
        ("list-pods-empty.json", 0, false),
        ("list-pods-limit2-page1.json", 2, true),
        ("list-pods-limit2-page2.json", 2, true),
        ("list-pods-limit2-page3.json", 1, false),
        ("list-pods-rv0.json", 5, false),
        ("list-pods-metadata.json", 2, true),
        ("crd-list-metadata-protobuf.json", 1, false),
    ] {
        let body = body(name);
        let envelope = read_envelope(&body).unwrap();
        assert!(envelope.kind.ends_with("List"), "{name}");
        let list = split_list(envelope.raw).unwrap();
        assert_eq!(list.items.len(), items, "{name}");
        assert!(!list.metadata.is_empty(), "{name}");
        // ListMeta field 3 (`continue`) is always written; non-empty on a middle page.
        let has_continue = list.metadata.windows(2).any(|w| w[0] == 0x1a && w[1] != 0);
        assert_eq!(has_continue, cont, "{name}");
    }
}

#[test]
fn captured_watch_frames_reassemble_and_read() {
    for (name, types) in [
        (
            "watch-pods-bookmarks.json",
            &[
                "ADDED", "MODIFIED", "MODIFIED", "DELETED", "BOOKMARK", "BOOKMARK",
            ][..],
        ),
        (
            "watch-pods-metadata.json",
            &[
                "ADDED", "MODIFIED", "MODIFIED", "DELETED", "BOOKMARK", "BOOKMARK",
            ][..],
        ),
        (
            "streaming-list-pods.json",
            &["ADDED", "ADDED", "ADDED", "ADDED", "ADDED", "BOOKMARK"][..],
        ),
        (
            "streaming-list-pods-metadata.json",
            &["ADDED", "ADDED", "ADDED", "ADDED", "ADDED", "BOOKMARK"][..],
        ),
        ("watch-pods-rv1-410.json", &["ERROR"][..]),
    ] {
        let frames = watch_frames(name);
        let got: Vec<&str> = frames
            .iter()
            .map(|f| read_watch_event(f).unwrap().event_type)
            .collect();
        assert_eq!(got, types, "{name}");
        for frame in &frames {
            let event = read_watch_event(frame).unwrap();
            let envelope = read_envelope(event.object).unwrap();
            let expected_kind = match (event.event_type, name.contains("metadata")) {
                ("ERROR", _) => "Status",
                (_, true) => "PartialObjectMetadata",
                _ => "Pod",
            };
            assert_eq!(envelope.kind, expected_kind, "{name}");
            let mut again = Vec::new();
            write_watch_event(event.event_type, event.object, &mut again);
            assert_eq!(&again, frame, "{name}");
        }
    }
}

use kube_informer::protobuf::{decode, decode_envelope, encode, message_for, Message};

fn object_envelope(name: &str) -> (Message, Vec<u8>, String, String) {
    let body = body(name);
    let envelope = read_envelope(&body).unwrap();
    let message = message_for(envelope.api_version, envelope.kind)
        .unwrap_or_else(|| panic!("{name}: {}", envelope.kind));
    (
        message,
        envelope.raw.to_vec(),
        envelope.api_version.to_owned(),
        envelope.kind.to_owned(),
    )
}

fn json_body(name: &str) -> Value {
    let body = body(name);
    serde_json::from_slice(&body).unwrap()
}

#[test]
fn the_running_pod_decodes_to_its_json_twin() {
    let body = body("get-pod-running.json");
    let envelope = read_envelope(&body).unwrap();
    let decoded: Value = decode_envelope(&envelope).unwrap();
    let json = json_body("get-pod-running-json.json");
    if decoded != json {
        let a = serde_json::to_string_pretty(&decoded).unwrap();
        let b = serde_json::to_string_pretty(&json).unwrap();
        for (i, (x, y)) in a.lines().zip(b.lines()).enumerate() {
            if x != y {
                panic!("line {i}: protobuf {x} json {y}");
            }
        }
        panic!("lengths differ");
    }
}
