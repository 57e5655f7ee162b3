//! Exec, attach and port-forward as a kube-apiserver 1.36 answers them (the captures in
//! `tests/fixtures/pod-io/`), served by the test [`Runtime`](crate::testing::Runtime).
//!
//! Before the upgrade: `404` for a missing pod, `400` for an unknown container, for a pod
//! with several containers and none named, and for a pod with no node, each a JSON Status;
//! `403` with `Connection: close` and an empty body when no offered subprotocol is known.
//! After it: an empty "established" message on the lowest channel the client reads, the
//! output, one Status on channel 3 (`v5` with `metadata`, `v4` without, as captured), close
//! 1000. v5 with no stream at all gets the `InternalError` Status after the upgrade, as
//! kube-apiserver's translator answers it.
//!
//! Not served (no capture of ours depends on them): the base64 and pre-v4 protocols, the
//! SPDY-over-WebSocket port-forward tunnel (offering only it gets `403`), and more than one
//! port per port-forward WebSocket (the first is served).

use std::io::{BufReader, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

use crossbeam_channel::{select, Receiver};
use serde_json::{json, Value};

use super::answers::write_status;
use super::db::Db;
use super::http::Request;
use super::peer::Peer;
use super::runtime::{Behaviour, ExecInput, Runtime};
use super::store::TypeKey;
use crate::api::Status;
use crate::client::duplex::Duplex;
use crate::pod::websocket::{self, DataFrame, Received, WsWriter};

/// True for an exec, attach or port-forward WebSocket request.
pub(crate) fn wants(req: &Request) -> bool {
    req.header("upgrade")
        .is_some_and(|u| u.eq_ignore_ascii_case("websocket"))
        && ["/exec", "/attach", "/portforward"]
            .iter()
            .any(|s| req.path.ends_with(s))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Proto {
    V4,
    V5,
}

/// Serves one upgrade request on its connection, to the end of the session.
pub(crate) fn serve<S: Peer>(req: &Request, mut reader: BufReader<S>, db: &Db, runtime: &Runtime) {
    let segs: Vec<&str> = req.path.trim_matches('/').split('/').collect();
    let ["api", "v1", "namespaces", ns, "pods", pod, sub] = segs.as_slice() else {
        let st = Status::failure(
            404,
            "NotFound",
            "the server could not find the requested resource",
        );
        let _ = write_status(reader.get_mut(), &st, &[]);
        return;
    };
    let (ns, pod, sub) = (ns.to_string(), pod.to_string(), sub.to_string());
    let stored = db.store.lock().get(
        &TypeKey::of(&crate::api::ApiResource::new("", "v1", "Pod", "pods", true)),
        Some(&ns),
        &pod,
    );
    let object: Value = match stored {
        Ok(o) => serde_json::from_str(&o.json).unwrap_or(Value::Null),
        Err(_) => {
            let mut st = Status::failure(404, "NotFound", format!("pods \"{pod}\" not found"));
            st.details = Some(crate::api::StatusDetails {
                name: Some(pod.clone()),
                kind: Some("pods".into()),
                ..Default::default()
            });
            let _ = write_status(reader.get_mut(), &st, &[]);
            return;
        }
    };
    let bad = |m: String| Status::failure(400, "BadRequest", m);
    if sub != "portforward" {
        let names: Vec<String> = object["spec"]["containers"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|c| c["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let error = match req.param("container") {
            Some(c) if !names.iter().any(|n| n == c) => {
                Some(bad(format!("container {c} is not valid for pod {pod}")))
            }
            None if names.len() > 1 => Some(bad(format!(
                "a container name must be specified for pod {pod}, choose one of: [{}]",
                names.join(" ")
            ))),
            _ => None,
        };
        if let Some(st) = error {
            let _ = write_status(reader.get_mut(), &st, &[]);
            return;
        }
    }
    if object["spec"]["nodeName"].as_str().unwrap_or("").is_empty() {
        let st = bad(format!("pod {pod} does not have a host assigned"));
        let _ = write_status(reader.get_mut(), &st, &[]);
        return;
    }
    let offered: Vec<&str> = req
        .header("sec-websocket-protocol")
        .map(|h| {
            h.split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let known: &[&str] = if sub == "portforward" {
        &["v4.channel.k8s.io"]
    } else {
        &["v5.channel.k8s.io", "v4.channel.k8s.io"]
    };
    let Some(chosen) = offered.iter().find(|p| known.contains(p)).copied() else {
        let _ = reader
            .get_mut()
            .write_all(b"HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n");
        let _ = reader.get_mut().flush();
        return;
    };
    let proto = if chosen == "v5.channel.k8s.io" {
        Proto::V5
    } else {
        Proto::V4
    };
    let key = req.header("sec-websocket-key").unwrap_or("");
    let head = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\nSec-WebSocket-Protocol: {chosen}\r\n\r\n",
        websocket::accept_key(key)
    );
    if reader
        .get_mut()
        .write_all(head.as_bytes())
        .and_then(|_| reader.get_mut().flush())
        .is_err()
    {
        return;
    }
    let dropped = runtime.session_starts();
    let leftover = reader.buffer().to_vec();
    let (sock, tls) = reader.into_inner().into_parts();
    let Ok((duplex, read, write)) = Duplex::split(sock, tls, leftover) else {
        return;
    };
    let (mut ws_reader, writer) = websocket::split(read, write, true);
    if dropped {
        let _ = writer.send(vec![1]);
        duplex.shutdown();
        return;
    }
    // Port-forward: the pod's port, connected before the session starts, so that the
    // reader writes the client's data to it itself (no second thread on the way).
    let port = req
        .param("ports")
        .and_then(|p| p.split(',').next())
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or(0u16);
    let target = (sub == "portforward")
        .then(|| runtime.port_of(&ns, &pod, port))
        .flatten()
        .and_then(|a| TcpStream::connect(a).ok());
    if let Some(t) = &target {
        let _ = t.set_nodelay(true);
    }
    let forwarding = target.is_some();
    let mut to_target = target.as_ref().and_then(|t| t.try_clone().ok());
    // The session's reader: client messages as events (port-forward data straight to the
    // pod's port), until the client's close or EOF.
    let (tx, events) = crossbeam_channel::bounded::<Received>(64);
    let reader_thread = std::thread::Builder::new()
        .name("kiapi/ws-read".into())
        .spawn(move || loop {
            match ws_reader.read() {
                // Anything else of a port-forward client is not read by anyone: dropped.
                Ok(Received::Binary(b)) if forwarding => {
                    if let (Some((0, data)), Some(t)) = (b.split_first(), to_target.as_mut()) {
                        if t.write_all(data).is_err() {
                            let _ = t.shutdown(Shutdown::Both);
                            to_target = None;
                        }
                    }
                }
                Ok(Received::Text) if forwarding => {}
                Ok(Received::Closed(c)) => {
                    if let Some(t) = &to_target {
                        let _ = t.shutdown(Shutdown::Both);
                    }
                    let _ = tx.send(Received::Closed(c));
                    return;
                }
                Ok(m) => {
                    if tx.send(m).is_err() {
                        return;
                    }
                }
                Err(_) => {
                    if let Some(t) = &to_target {
                        let _ = t.shutdown(Shutdown::Both);
                    }
                    let _ = tx.send(Received::Closed(1006));
                    return;
                }
            }
        });
    let Ok(reader_thread) = reader_thread else {
        duplex.shutdown();
        return;
    };
    let session = Session {
        writer: &writer,
        events: &events,
        proto,
        db,
        runtime,
    };
    if sub == "portforward" {
        session.port_forward(port, target, &ns, &pod);
    } else {
        session.exec(req, &ns, &pod, sub == "attach");
    }
    // The reader's further messages now have nowhere to wait.
    drop(events);
    // The close echo, or the client's EOF, within a bound.
    let _ = duplex.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = reader_thread.join();
    duplex.shutdown();
}

struct Session<'a> {
    writer: &'a WsWriter,
    events: &'a Receiver<Received>,
    proto: Proto,
    db: &'a Db,
    runtime: &'a Runtime,
}

impl Session<'_> {
    fn send(&self, channel: u8, payload: &[u8]) -> bool {
        let mut m = Vec::with_capacity(payload.len() + 1);
        m.push(channel);
        m.extend_from_slice(payload);
        self.writer.send(m).is_ok()
    }

    /// The final Status: v5 with `metadata` first; v4 without, and an internal error's
    /// without `details` (as captured).
    fn status(&self, mut st: Value) {
        if let Value::Object(o) = &mut st {
            if self.proto == Proto::V5 {
                let mut with = serde_json::Map::new();
                with.insert("metadata".into(), json!({}));
                with.extend(std::mem::take(o));
                *o = with;
            } else if o.get("reason").and_then(Value::as_str) == Some("InternalError") {
                o.remove("details");
            }
        }
        self.send(3, st.to_string().as_bytes());
        self.writer.close();
    }

    fn next(&self) -> Option<Received> {
        loop {
            match self.events.recv_timeout(Duration::from_millis(200)) {
                Ok(m) => return Some(m),
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                    if self.db.stopping() {
                        return None;
                    }
                }
                Err(_) => return None,
            }
        }
    }

    fn exec(&self, req: &Request, ns: &str, pod: &str, attach: bool) {
        let (stdin, stdout, stderr, tty) = (
            req.flag("stdin"),
            req.flag("stdout"),
            req.flag("stderr"),
            req.flag("tty"),
        );
        let first = if stdout {
            1
        } else if stderr {
            2
        } else {
            3
        };
        self.send(first, &[]);
        if !(stdin || stdout || stderr) {
            let m = "unable to upgrade connection: you must specify at least 1 of stdin, stdout, stderr";
            self.status(json!({"status":"Failure","message":format!("Internal error occurred: {m}"),"reason":"InternalError","details":{"causes":[{"message":m}]},"code":500}));
            return;
        }
        let mut input = ExecInput {
            argv: req.query_all("command"),
            tty,
            ..Default::default()
        };
        if attach {
            let (tx, pushed) = crossbeam_channel::bounded::<Vec<u8>>(64);
            self.runtime.subscribe(ns, pod, tx);
            loop {
                select! {
                    recv(self.events) -> m => match m {
                        Ok(Received::Binary(b)) => match b.split_first() {
                            Some((0, data)) if stdout => { self.send(1, data); }
                            Some((255, [0])) => { self.status(json!({"status":"Success"})); return; }
                            _ => {}
                        },
                        Ok(Received::Text) => {}
                        Ok(Received::Closed(_)) | Err(_) => return,
                    },
                    recv(pushed) -> m => if let Ok(b) = m { if !b.is_empty() && stdout { self.send(1, &b); } },
                    default(Duration::from_millis(200)) => if self.db.stopping() { return; },
                }
            }
        }
        let behaviour = self.runtime.find(&input.argv);
        let Some(behaviour) = behaviour else {
            let name = input.argv.first().cloned().unwrap_or_default();
            let m = format!("error executing command in container: exec: {name:?}: executable file not found in $PATH");
            let (message, cause) = match self.proto {
                Proto::V5 => (
                    format!("Internal error occurred: Internal error occurred: {m}"),
                    format!("Internal error occurred: {m}"),
                ),
                Proto::V4 => (format!("Internal error occurred: {m}"), m.clone()),
            };
            self.status(json!({"status":"Failure","message":message,"reason":"InternalError","details":{"causes":[{"message":cause}]},"code":500}));
            return;
        };
        let run = match behaviour {
            Behaviour::Echo => {
                while let Some(m) = self.next() {
                    match m {
                        Received::Binary(b) => match b.split_first() {
                            // A TTY's Ctrl-D ends it, as a shell's read sees the end.
                            Some((0, data)) if tty && data.contains(&4) => {
                                let at = data.iter().position(|&b| b == 4).unwrap_or(0);
                                self.send(1, &data[..at]);
                                self.status(json!({"status":"Success"}));
                                return;
                            }
                            Some((0, data)) => {
                                self.send(1, data);
                            }
                            Some((4, size)) => {
                                if let Some(size) = terminal_size(size) {
                                    self.runtime.record_size(size);
                                }
                            }
                            Some((255, [0])) => {
                                self.status(json!({"status":"Success"}));
                                return;
                            }
                            _ => {}
                        },
                        Received::Text => {}
                        Received::Closed(_) => return,
                    }
                }
                return;
            }
            Behaviour::Run(f) => f,
        };
        let mut stdin_open = stdin;
        // With a TTY the resizes that come first are seen before the command runs.
        while stdin_open || (tty && !self.events.is_empty()) {
            let Some(m) = self.next() else { return };
            match m {
                Received::Binary(b) => match b.split_first() {
                    Some((0, data)) => input.stdin.extend_from_slice(data),
                    Some((255, [0])) => stdin_open = false,
                    Some((4, size)) => {
                        if let Some(size) = terminal_size(size) {
                            self.runtime.record_size(size);
                            input.sizes.push(size);
                        }
                    }
                    _ => {}
                },
                Received::Text => {}
                // v4 (no half-close): the client closing is the end, with no status.
                Received::Closed(_) => return,
            }
        }
        let out = run(&input);
        let (mut o, mut e) = (out.stdout, out.stderr);
        if tty {
            o.extend_from_slice(&e);
            e.clear();
            let mut crlf = Vec::with_capacity(o.len());
            for b in o {
                if b == b'\n' {
                    crlf.push(b'\r');
                }
                crlf.push(b);
            }
            o = crlf;
        }
        if let Some(at) = self.runtime.take_cut() {
            for chunk in o[..at.min(o.len())].chunks(32 * 1024) {
                self.send(1, chunk);
            }
            self.writer.close();
            return;
        }
        for chunk in o.chunks(32 * 1024) {
            if stdout {
                self.send(1, chunk);
            }
        }
        for chunk in e.chunks(32 * 1024) {
            if stderr {
                self.send(2, chunk);
            }
        }
        if out.exit_code == 0 {
            self.status(json!({"status":"Success"}));
        } else {
            let c = out.exit_code;
            let message = match self.proto {
                Proto::V5 => format!("command terminated with non-zero exit code: command terminated with exit code {c}"),
                Proto::V4 => format!("command terminated with non-zero exit code: exit status {c}"),
            };
            self.status(json!({"status":"Failure","message":message,"reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":c.to_string()}]}}));
        }
    }

    /// Port-forward to `target` (the pod's `port`, connected; `None`: refused). The
    /// client's data reaches it from the reader thread; this thread sends the port's.
    fn port_forward(&self, port: u16, target: Option<TcpStream>, ns: &str, pod: &str) {
        let prefix = port.to_le_bytes();
        self.send(0, &prefix);
        self.send(1, &prefix);
        let Some(target) = target else {
            let uid = "00000000-0000-0000-0000-000000000000";
            let m = format!("error forwarding port {port} to pod {pod}_{ns}, uid {uid}: failed to connect to localhost:{port} inside namespace of pod {pod}_{ns}: dial tcp 127.0.0.1:{port}: connect: connection refused");
            self.send(1, m.as_bytes());
            self.writer.close();
            return;
        };
        let mut from = &target;
        let mut frame = DataFrame::new(0, websocket::MAX_SEND);
        loop {
            match std::io::Read::read(&mut from, frame.payload_mut()) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if self.writer.send_frame(&mut frame, n).is_err() {
                        break;
                    }
                }
            }
        }
        self.writer.close();
        let _ = target.shutdown(Shutdown::Both);
    }
}

/// A resize message's `{"Width":w,"Height":h}`.
fn terminal_size(json: &[u8]) -> Option<(u16, u16)> {
    let v = serde_json::from_slice::<Value>(json).ok()?;
    let d = |k: &str| v[k].as_u64().unwrap_or(0) as u16;
    Some((d("Width"), d("Height")))
}
