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

/// Every object message in the captures (bodies, list items, watch objects, request bodies),
/// as (capture, message, bytes).
fn every_message() -> Vec<(String, Message, Vec<u8>, bool)> {
    let mut out = Vec::new();
    // `by_go`: written by kube-apiserver (Go's marshaller), not by the capture's Python.
    let add_envelope =
        |name: &str, body: &[u8], by_go: bool, out: &mut Vec<(String, Message, Vec<u8>, bool)>| {
            let envelope = read_envelope(body).unwrap();
            let message = message_for(envelope.api_version, envelope.kind)
                .unwrap_or_else(|| panic!("{name}: {} {}", envelope.api_version, envelope.kind));
            out.push((name.to_owned(), message, envelope.raw.to_vec(), by_go));
            if let Some(item) = message.list_item() {
                for raw in split_list(envelope.raw).unwrap().items {
                    out.push((format!("{name} item"), item, raw.to_vec(), by_go));
                }
            }
        };
    for (name, ct) in protobuf_answers() {
        if ct.contains("stream=watch") {
            for frame in watch_frames(&name) {
                add_envelope(
                    &name,
                    read_watch_event(&frame).unwrap().object,
                    true,
                    &mut out,
                );
            }
        } else {
            add_envelope(&name, &body(&name), true, &mut out);
        }
        if let Some(text) = capture(&name)["request"]["body"]["bodyBase64"].as_str() {
            let request = base64::engine::general_purpose::STANDARD
                .decode(text)
                .unwrap();
            if request.starts_with(b"k8s\0") {
                add_envelope(&format!("{name} request"), &request, false, &mut out);
            }
        }
    }
    out
}

#[test]
fn every_captured_message_decodes_and_encodes_back_byte_for_byte() {
    let messages = every_message();
    assert!(messages.len() > 100, "{}", messages.len());
    let mut failures = Vec::new();
    let mut compared = 0;
    for (name, message, raw, by_go) in &messages {
        let value: Value = match decode(*message, raw) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{name} ({message:?}): decode: {e}"));
                continue;
            }
        };
        if !by_go {
            continue; // the Python-built request bodies leave zero fields out; Go writes them
        }
        compared += 1;
        match encode(*message, &value) {
            Ok(again) if &again == raw => {}
            Ok(again) => failures.push(format!(
                "{name} ({message:?}): {} bytes back, {} captured, first difference at {}",
                again.len(),
                raw.len(),
                again
                    .iter()
                    .zip(raw.iter())
                    .position(|(a, b)| a != b)
                    .unwrap_or(again.len().min(raw.len()))
            )),
            Err(e) => failures.push(format!("{name} ({message:?}): encode: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(compared > 100, "{compared}");
}

fn envelope_parts(name: &str) -> (Message, Vec<u8>) {
    let body = body(name);
    let envelope = read_envelope(&body).unwrap();
    (
        message_for(envelope.api_version, envelope.kind).unwrap(),
        envelope.raw.to_vec(),
    )
}

#[test]
fn our_metadata_types_and_status_decode_from_protobuf_as_from_json() {
    use kube_informer::api::{PartialObjectMetadata, PartialObjectMetadataList, Status};
    // A metadata-only object read out of the full Pod message equals the JSON twin's.
    let (pod, raw) = envelope_parts("get-pod-running.json");
    let from_pb: PartialObjectMetadata = decode(pod, &raw).unwrap();
    let from_json: PartialObjectMetadata =
        serde_json::from_slice(&body("get-pod-running-json.json")).unwrap();
    assert_eq!(
        serde_json::to_value(&from_pb.metadata).unwrap(),
        serde_json::to_value(&from_json.metadata).unwrap()
    );
    assert_eq!(from_pb.metadata.name.as_deref(), Some("web-running"));

    // The metadata-only answers, with their envelope's apiVersion and kind.
    let body = body("get-pod-metadata.json");
    let envelope = read_envelope(&body).unwrap();
    let object: PartialObjectMetadata = decode_envelope(&envelope).unwrap();
    assert_eq!(object.kind.as_deref(), Some("PartialObjectMetadata"));
    assert_eq!(object.api_version.as_deref(), Some("meta.k8s.io/v1"));
    assert_eq!(object.metadata.name.as_deref(), Some("web-running"));
    let body2 = self::body("list-pods-metadata.json");
    let envelope = read_envelope(&body2).unwrap();
    let list: PartialObjectMetadataList = decode_envelope(&envelope).unwrap();
    assert_eq!(list.items.len(), 2);
    assert!(!list
        .metadata
        .continue_token
        .as_deref()
        .unwrap_or("")
        .is_empty());

    // Status: 404 with details, 410 in a watch, and the Success of a delete (code 0 on the wire).
    let (message, raw) = envelope_parts("status-404-get-pod.json");
    let status: Status = decode(message, &raw).unwrap();
    assert_eq!((status.code, status.reason.as_str()), (404, "NotFound"));
    assert_eq!(
        status.details.as_ref().and_then(|d| d.kind.as_deref()),
        Some("pods")
    );
    let frame = &watch_frames("watch-pods-rv1-410.json")[0];
    let envelope = read_envelope(read_watch_event(frame).unwrap().object).unwrap();
    let status: Status = decode_envelope(&envelope).unwrap();
    assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
    let (message, raw) = envelope_parts("delete-configmap-accept-protobuf.json");
    let status: Status = decode(message, &raw).unwrap();
    assert_eq!((status.status.as_str(), status.code), ("Success", 0));
}

#[cfg(feature = "k8s-openapi")]
mod typed {
    use super::*;
    use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;

    #[test]
    fn the_running_pod_is_the_k8s_openapi_pod_of_its_json_twin() {
        let (message, raw) = envelope_parts("get-pod-running.json");
        let from_pb: Pod = decode(message, &raw).unwrap();
        let from_json: Pod = serde_json::from_slice(&body("get-pod-running-json.json")).unwrap();
        assert_eq!(from_pb, from_json);
        assert_eq!(
            serde_json::to_value(&from_pb).unwrap(),
            serde_json::to_value(&from_json).unwrap()
        );
    }

    /// encode(decode(x)) == x through k8s-openapi's types, byte for byte as Go wrote them.
    #[test]
    fn typed_objects_encode_back_to_the_captured_bytes() {
        fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(name: &str) {
            let (message, raw) = envelope_parts(name);
            let typed: T = decode(message, &raw).unwrap_or_else(|e| panic!("{name}: {e}"));
            let again = encode(message, &typed).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(
                again == raw,
                "{name}: {} bytes back, {} captured",
                again.len(),
                raw.len()
            );
        }
        round_trip::<Pod>("get-pod-running.json");
        round_trip::<Pod>("get-pod-pending.json");
        round_trip::<Pod>("create-pod-protobuf-body.json");
        round_trip::<ConfigMap>("create-configmap-protobuf-body.json");
        round_trip::<ConfigMap>("update-configmap-protobuf-body.json");
        round_trip::<k8s_openapi::List<Pod>>("list-pods-rv0.json");
        round_trip::<k8s_openapi::List<Pod>>("list-pods-limit2-page1.json");
        round_trip::<Status>("status-404-get-pod.json");
        round_trip::<Status>("status-422-create-pod-protobuf-body.json");
        // Our metadata-only type: each item of the metadata-only list.
        let (message, raw) = envelope_parts("list-pods-metadata.json");
        let item = message.list_item().unwrap();
        for raw in split_list(&raw).unwrap().items {
            let object: kube_informer::api::PartialObjectMetadata = decode(item, raw).unwrap();
            assert_eq!(encode(item, &object).unwrap(), raw);
        }
    }

    #[test]
    fn binary_data_is_base64_as_in_json() {
        let (message, raw) = envelope_parts("create-configmap-protobuf-body.json");
        let config_map: ConfigMap = decode(message, &raw).unwrap();
        let binary = config_map.binary_data.unwrap();
        assert!(!binary.is_empty());
        let json: Value = decode(message, &raw).unwrap();
        let (key, value) = json["binaryData"]
            .as_object()
            .unwrap()
            .iter()
            .next()
            .unwrap();
        assert_eq!(
            base64::engine::general_purpose::STANDARD
                .decode(value.as_str().unwrap())
                .unwrap(),
            binary[key].0
        );
    }
}
