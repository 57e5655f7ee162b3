//! Issue 31: the test server answers exec and port-forward WebSocket requests as the real
//! kube-apiserver 1.36 of `tests/fixtures/pod-io/` did: each captured request is sent as
//! captured (raw socket, hand-written frames), and the answer's status, body (as JSON) and
//! every frame the server sent (channel and payload) are compared with the capture.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

use kube_informer::testing::{ApiServer, Runtime};
use serde_json::Value;

fn capture(name: &str) -> Value {
    serde_json::from_slice(&common::fixture(&format!("pod-io/{name}.json"))).unwrap()
}

/// What the server sent: status code, body, and the data frames `(channel, payload)` and the
/// close code.
struct Got {
    code: u16,
    body: Vec<u8>,
    frames: Vec<(u8, Vec<u8>)>,
    close: Option<u16>,
}

fn send(server: &ApiServer, c: &Value) -> Got {
    let req = &c["request"];
    let path = req["path"].as_str().unwrap();
    let mut head = format!("GET {path} HTTP/1.1\r\n");
    for h in req["headers"].as_array().unwrap() {
        let (k, v) = (h[0].as_str().unwrap(), h[1].as_str().unwrap());
        if k != "Authorization" {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
    }
    head.push_str("\r\n");
    let mut s = TcpStream::connect(server.addr()).unwrap();
    s.set_read_timeout(Some(common::PATIENCE)).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let code: u16 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut length = 0usize;
    loop {
        let mut l = String::new();
        r.read_line(&mut l).unwrap();
        if l == "\r\n" || l.is_empty() {
            break;
        }
        if let Some(v) = l.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap();
        }
    }
    if code != 101 {
        let mut body = vec![0u8; length];
        r.read_exact(&mut body).unwrap();
        return Got {
            code,
            body,
            frames: Vec::new(),
            close: None,
        };
    }
    let mut frames = Vec::new();
    let mut close = None;
    loop {
        let mut h = [0u8; 2];
        if r.read_exact(&mut h).is_err() {
            break;
        }
        let mut len = u64::from(h[1] & 0x7f);
        if len == 126 {
            let mut b = [0u8; 2];
            r.read_exact(&mut b).unwrap();
            len = u64::from(u16::from_be_bytes(b));
        } else if len == 127 {
            let mut b = [0u8; 8];
            r.read_exact(&mut b).unwrap();
            len = u64::from_be_bytes(b);
        }
        let mut payload = vec![0u8; len as usize];
        r.read_exact(&mut payload).unwrap();
        match h[0] & 0x0f {
            0x2 => frames.push((payload[0], payload[1..].to_vec())),
            0x8 => {
                close = Some(u16::from_be_bytes([payload[0], payload[1]]));
                // Our echo of the close, masked with a zero key.
                let _ = r
                    .get_mut()
                    .write_all(&[0x88, 0x82, 0, 0, 0, 0, payload[0], payload[1]]);
                break;
            }
            _ => {}
        }
    }
    Got {
        code,
        body: Vec::new(),
        frames,
        close,
    }
}

fn captured_frames(c: &Value) -> Vec<(u8, Vec<u8>)> {
    c["frames"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["dir"] == "recv" && f["opcode"] == "binary")
        .map(|f| {
            let d = &f["data"];
            let bytes = match d["text"].as_str() {
                Some(t) => t.as_bytes().to_vec(),
                None => {
                    let hex = d["hex"].as_str().unwrap();
                    (0..hex.len())
                        .step_by(2)
                        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                        .collect()
                }
            };
            (f["channel"].as_u64().unwrap() as u8, bytes)
        })
        .collect()
}

fn lab() -> ApiServer {
    let server = ApiServer::start();
    server.create_pod("io-lab", "p", &["main"]).unwrap();
    server.create_pod("io-lab", "p2", &["a", "b"]).unwrap();
    let nonode = serde_json::json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":"nonode","namespace":"io-lab"},"spec":{"containers":[{"name":"main"}]}});
    server.create(&common::pods(), nonode).unwrap();
    let rt = server.runtime();
    rt.command(&["echo", "hi"], Runtime::output(b"hi\n", b"", 0));
    rt.command(
        &["sh", "-c", "echo out; echo err >&2; exit 3"],
        Runtime::output(b"out\n", b"err\n", 3),
    );
    server
}

#[test]
fn exec_and_port_forward_answer_as_captured() {
    let server = lab();
    for name in [
        "exec-v5-echo",
        "exec-v4-echo",
        "exec-v5-v4-offer",
        "exec-v5-nonzero-exit",
        "exec-v4-nonzero-exit",
        "exec-v5-unknown-command",
        "exec-v4-unknown-command",
        "exec-v5-no-streams",
        "exec-unsupported-subprotocol",
        "exec-v5-base64-offer",
        "exec-v5-pod-not-found",
        "exec-v5-unknown-container",
        "exec-v5-multicontainer-no-container",
        "exec-v5-pod-without-node",
        "portforward-ws-portforward-k8s-io",
        "portforward-ws-v4-channel-closed-port",
    ] {
        let c = capture(name);
        let got = send(&server, &c);
        assert_eq!(
            u64::from(got.code),
            c["response"]["status"].as_u64().unwrap(),
            "{name}"
        );
        if got.code != 101 {
            let want = c["response"]["body"][0]["body"]["text"].as_str().unwrap();
            if want.is_empty() {
                assert!(got.body.is_empty(), "{name}");
            } else {
                let want: Value = serde_json::from_str(want).unwrap();
                let got: Value = serde_json::from_slice(&got.body).unwrap();
                assert_eq!(got, want, "{name}");
            }
            continue;
        }
        let mut want = captured_frames(&c);
        let mut frames = got.frames;
        if name.starts_with("portforward") {
            // The runtime's error text after the pod's uid is the runtime's own.
            for f in want.iter_mut().chain(frames.iter_mut()) {
                if let Some(i) = f.1.windows(5).position(|w| w == b", uid") {
                    f.1.truncate(i);
                }
            }
        }
        assert_eq!(frames.len(), want.len(), "{name}: {frames:?}");
        for (g, w) in frames.iter().zip(&want) {
            assert_eq!(g.0, w.0, "{name}: channel");
            if g.0 == 3 && !g.1.is_empty() {
                let (g, w): (Value, Value) = (
                    serde_json::from_slice(&g.1).unwrap(),
                    serde_json::from_slice(&w.1).unwrap(),
                );
                assert_eq!(g, w, "{name}: status");
            } else {
                assert_eq!(
                    String::from_utf8_lossy(&g.1),
                    String::from_utf8_lossy(&w.1),
                    "{name}"
                );
            }
        }
        assert_eq!(got.close, Some(1000), "{name}");
    }
}
