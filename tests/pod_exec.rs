//! Issue 31: exec and attach over WebSocket against the test server, plain and TLS, and a
//! raw server sending what a broken or hostile peer would.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use kube_informer::pod::{ChannelProtocol, ExecParams, ExitStatus, PodError};
use kube_informer::testing::{ApiServer, CommandOutput, Runtime};
use kube_informer::{Client, Error};

fn servers() -> Vec<ApiServer> {
    vec![
        ApiServer::start(),
        ApiServer::builder().tls().token("t0k3n").start(),
    ]
}

fn client(server: &ApiServer) -> Client {
    Client::new(server.client_config()).unwrap()
}

#[test]
fn exec_collects_output_and_exit_code_over_plain_and_tls() {
    for server in servers() {
        server.create_pod("lab", "p", &[]).unwrap();
        let rt = server.runtime();
        rt.command(&["echo", "hi"], Runtime::output(b"hi\n", b"", 0));
        rt.command(
            &["sh", "-c", "exit 3"],
            Runtime::output(b"out\n", b"err\n", 3),
        );
        let c = client(&server);
        let out = c
            .exec_output("lab", "p", &ExecParams::new(["echo", "hi"]), b"")
            .unwrap();
        assert_eq!(out.stdout, b"hi\n");
        assert_eq!(out.status, ExitStatus::Success);
        let out = c
            .exec_output("lab", "p", &ExecParams::new(["sh", "-c", "exit 3"]), b"")
            .unwrap();
        assert_eq!(
            (out.stdout.as_slice(), out.stderr.as_slice()),
            (&b"out\n"[..], &b"err\n"[..])
        );
        assert_eq!(out.status, ExitStatus::Code(3));
        assert_eq!(out.status.code(), Some(3));
        // The same on a server with only v4.
        let out = c
            .exec_output(
                "lab",
                "p",
                &ExecParams::new(["sh", "-c", "exit 3"]).v4_only(),
                b"",
            )
            .unwrap();
        assert_eq!(out.status, ExitStatus::Code(3));
        // The token reached the upgrade (the TLS server refuses requests without it).
        if server.url().starts_with("https") {
            let h = server.request_headers();
            let last = h
                .iter()
                .rev()
                .find(|r| r.request.contains("/exec"))
                .unwrap();
            assert!(last
                .headers
                .iter()
                .any(|(k, v)| k == "authorization" && v == "Bearer t0k3n"));
        }
    }
}

#[test]
fn stdin_is_half_closed_on_v5_and_a_closure_sees_it() {
    for server in servers() {
        server.create_pod("lab", "p", &[]).unwrap();
        server.runtime().command(&["wc", "-c"], |i| CommandOutput {
            stdout: format!("{}\n", i.stdin.len()).into_bytes(),
            ..Default::default()
        });
        let c = client(&server);
        let input = vec![b'x'; 300_000];
        let out = c
            .exec_output("lab", "p", &ExecParams::new(["wc", "-c"]), &input)
            .unwrap();
        assert_eq!(out.stdout, b"300000\n");
        assert!(out.status.success());
    }
}

#[test]
fn interactive_echo_from_another_thread_and_v4_fallback_has_no_half_close() {
    let server = ApiServer::start();
    server.create_pod("lab", "p", &[]).unwrap();
    server.runtime().echo("cat");
    let c = client(&server);
    let mut p = c
        .exec("lab", "p", &ExecParams::new(["cat"]).stdin(true))
        .unwrap();
    assert_eq!(p.protocol(), ChannelProtocol::V5);
    let mut stdin = p.stdin().unwrap();
    let mut stdout = BufReader::new(p.stdout().unwrap());
    let writer = std::thread::spawn(move || {
        stdin.write_all(b"ping\n").unwrap();
        stdin
    });
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line, "ping\n");
    let mut stdin = writer.join().unwrap();
    stdin.close().unwrap();
    drop(stdout);
    assert_eq!(p.wait().unwrap(), ExitStatus::Success);

    // v4: closing stdin cannot be said; the session ends only by cancel.
    let mut p = c
        .exec("lab", "p", &ExecParams::new(["cat"]).stdin(true).v4_only())
        .unwrap();
    assert_eq!(p.protocol(), ChannelProtocol::V4);
    let mut stdin = p.stdin().unwrap();
    stdin.write_all(b"a\n").unwrap();
    stdin.close().unwrap();
    let mut stdout = BufReader::new(p.stdout().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line, "a\n");
    let cancel = p.canceller();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        cancel.cancel();
    });
    assert!(p.wait().unwrap_err().is_cancelled());
}

#[test]
fn tty_merges_stderr_and_gets_the_resize() {
    let server = ApiServer::start();
    server.create_pod("lab", "p", &[]).unwrap();
    server.runtime().command(&["stty"], |i| CommandOutput {
        stdout: format!("{:?}\n", i.sizes).into_bytes(),
        stderr: b"e\n".to_vec(),
        exit_code: 0,
    });
    let c = client(&server);
    let mut p = c
        .exec(
            "lab",
            "p",
            &ExecParams::new(["stty", "size"]).stdin(true).tty(true),
        )
        .unwrap();
    assert!(p.stderr().is_none());
    p.resizer().unwrap().resize(100, 30).unwrap();
    p.stdin().unwrap().close().unwrap();
    let mut out = String::new();
    p.stdout().unwrap().read_to_string(&mut out).unwrap();
    assert_eq!(out, "[(100, 30)]\r\ne\r\n");
    assert!(p.wait().unwrap().success());
}

#[test]
fn errors_before_and_after_the_upgrade() {
    let server = ApiServer::start();
    server.create_pod("lab", "p", &[]).unwrap();
    server.create_pod("lab", "p2", &["a", "b"]).unwrap();
    let nonode = serde_json::json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":"nonode","namespace":"lab"},"spec":{"containers":[{"name":"main"}]}});
    server.create(&common::pods(), nonode).unwrap();
    let c = client(&server);
    let e = ExecParams::new(["true"]);
    let err = |pod: &str, p: &ExecParams| c.exec("lab", pod, p).unwrap_err();
    let nf = err("nosuchpod", &e);
    assert_eq!(
        (nf.code(), nf.status().unwrap().message.as_str()),
        (Some(404), "pods \"nosuchpod\" not found")
    );
    // The choices to make come typed, with the server's Status kept.
    let bad = err("p", &e.clone().container("nope"));
    assert_eq!(
        bad.status().unwrap().message,
        "container nope is not valid for pod p"
    );
    assert!(
        matches!(bad.pod_error(), Some(PodError::UnknownContainer { container, .. }) if container == "nope"),
        "{bad:?}"
    );
    let multi = err("p2", &e);
    assert_eq!(
        multi.status().unwrap().message,
        "a container name must be specified for pod p2, choose one of: [a b]"
    );
    assert!(
        matches!(multi.pod_error(), Some(PodError::ContainerRequired { containers, .. }) if containers == &["a", "b"]),
        "{multi:?}"
    );
    let on_attach = c
        .attach("lab", "p2", &ExecParams::attach().stdin(true))
        .unwrap_err();
    assert!(
        matches!(
            on_attach.pod_error(),
            Some(PodError::ContainerRequired { .. })
        ),
        "{on_attach:?}"
    );
    let host = err("nonode", &e);
    assert_eq!(
        host.status().unwrap().message,
        "pod nonode does not have a host assigned"
    );
    assert!(
        matches!(host.pod_error(), Some(PodError::NotScheduled { pod }) if pod == "nonode"),
        "{host:?}"
    );
    // After the upgrade: an unknown command is a failure Status, not an error.
    let out = c
        .exec_output("lab", "p", &ExecParams::new(["nosuchcmd"]), b"")
        .unwrap();
    match out.status {
        ExitStatus::Failure(st) => {
            assert_eq!(st.reason, "InternalError");
            assert!(
                st.message.contains("executable file not found"),
                "{}",
                st.message
            );
        }
        other => panic!("{other:?}"),
    }
    // The kubelet drops the stream: an error, not a hang.
    server.runtime().drop_streams(1);
    let e = c
        .exec_output("lab", "p", &ExecParams::new(["nosuchcmd"]), b"")
        .unwrap_err();
    assert!(
        matches!(e, Error::Io { .. } | Error::Decode { .. }),
        "{e:?}"
    );
    // Attach: the pod's process echoes stdin and takes output the test writes.
    let mut a = c
        .attach("lab", "p", &ExecParams::attach().stdin(true))
        .unwrap();
    let mut out = BufReader::new(a.stdout().unwrap());
    common::wait_until("attached", || server.runtime().attached("lab", "p") == 1);
    server
        .runtime()
        .attach_output("lab", "p", b"from the process\n");
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "from the process\n");
    a.stdin().unwrap().close().unwrap();
    drop(out);
    assert!(a.wait().unwrap().success());
}

/// A one-connection server: reads the upgrade request, answers with `answer(key)`, then
/// writes `frames` raw and waits until the client goes.
fn raw_server(answer: impl FnOnce(&str) -> Vec<u8> + Send + 'static) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        let (s, _) = l.accept().unwrap();
        let mut r = BufReader::new(s);
        let mut key = String::new();
        loop {
            let mut line = String::new();
            if r.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
                break;
            }
            if let Some(k) = line.strip_prefix("Sec-WebSocket-Key: ") {
                key = k.trim().to_owned();
            }
        }
        let mut s = r.into_inner();
        let _ = s.write_all(&answer(&key));
        let mut sink = [0u8; 1024];
        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
        while matches!(s.read(&mut sink), Ok(n) if n > 0) {}
    });
    url
}

fn accept(key: &str) -> String {
    use base64::Engine as _;
    // RFC 6455's SHA-1 through the same ring the library uses is not public: compute here.
    let mut input = key.as_bytes().to_vec();
    input.extend_from_slice(b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
    let d = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, &input);
    base64::engine::general_purpose::STANDARD.encode(d.as_ref())
}

fn upgraded(key: &str, protocol: &str, frames: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\nSec-WebSocket-Protocol: {protocol}\r\n\r\n", accept(key)).into_bytes();
    for f in frames {
        out.extend_from_slice(f);
    }
    out
}

/// An unmasked binary frame (server to client).
fn frame(payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0x82];
    if payload.len() < 126 {
        f.push(payload.len() as u8);
    } else {
        f.push(126);
        f.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    }
    f.extend_from_slice(payload);
    f
}

fn exec_against(url: String) -> kube_informer::Result<ExitStatus> {
    let mut cfg = kube_informer::ClientConfig::new(url);
    cfg.request_timeout = common::PATIENCE;
    let c = Client::new(cfg).unwrap();
    let out = c.exec_output(
        "lab",
        "p",
        &ExecParams::new(["x"]).idle_timeout(common::PATIENCE),
        b"",
    )?;
    Ok(out.status)
}

#[test]
fn bad_input_is_a_clear_error() {
    // A subprotocol we did not offer.
    let e = exec_against(raw_server(|k| upgraded(k, "v99.channel.k8s.io", &[]))).unwrap_err();
    assert!(e.to_string().contains("not offered"), "{e}");
    // 403 with an empty body (only unknown subprotocols).
    let e = exec_against(raw_server(|_| {
        b"HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n".to_vec()
    }))
    .unwrap_err();
    assert_eq!(e.code(), Some(403));
    // A frame on an unknown channel.
    let e = exec_against(raw_server(|k| {
        upgraded(
            k,
            "v5.channel.k8s.io",
            &[&frame(b"\x01"), &frame(b"\x09zz")],
        )
    }))
    .unwrap_err();
    assert!(e.to_string().contains("channel 9"), "{e}");
    // A status that is not JSON.
    let e = exec_against(raw_server(|k| {
        upgraded(k, "v5.channel.k8s.io", &[&frame(b"\x03{nope")])
    }))
    .unwrap_err();
    assert!(e.to_string().contains("not a JSON Status"), "{e}");
    // A frame cut short, then the connection closed: mid-frame.
    let mut cut = frame(&[1u8; 200]);
    cut.truncate(50);
    let e = exec_against(raw_server(move |k| {
        upgraded(k, "v5.channel.k8s.io", &[&cut])
    }))
    .unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e:?}");
    // A frame announcing 2^62 bytes: refused, not allocated.
    let mut huge = vec![0x82, 127];
    huge.extend_from_slice(&(1u64 << 62).to_be_bytes());
    let e = exec_against(raw_server(move |k| {
        upgraded(k, "v5.channel.k8s.io", &[&huge])
    }))
    .unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e:?}");
    // A wrong Sec-WebSocket-Accept.
    let e = exec_against(raw_server(|_| upgraded("other", "v5.channel.k8s.io", &[]))).unwrap_err();
    assert!(e.to_string().contains("Sec-WebSocket-Accept"), "{e}");
    // The close frame with no status first.
    let e = exec_against(raw_server(|k| {
        upgraded(k, "v5.channel.k8s.io", &[&[0x88, 2, 0x03, 0xe8]])
    }))
    .unwrap_err();
    assert!(e.to_string().contains("without an exit status"), "{e}");
}

#[test]
fn a_silent_server_is_bounded_by_the_idle_timeout() {
    let url = raw_server(|k| upgraded(k, "v5.channel.k8s.io", &[]));
    let c = Client::new(kube_informer::ClientConfig::new(url)).unwrap();
    let e = c
        .exec_output(
            "lab",
            "p",
            &ExecParams::new(["x"]).idle_timeout(Duration::from_millis(300)),
            b"",
        )
        .unwrap_err();
    assert!(e.to_string().contains("idle timeout"), "{e}");
}

/// A one-connection-at-a-time HTTP CONNECT proxy; counts the tunnels it opened.
fn connect_proxy() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let count = std::sync::Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let c = c.clone();
            std::thread::spawn(move || {
                let mut r = BufReader::new(s);
                let mut first = String::new();
                r.read_line(&mut first).unwrap();
                let target = first.split_whitespace().nth(1).unwrap().to_owned();
                loop {
                    let mut l = String::new();
                    if r.read_line(&mut l).unwrap() == 0 || l == "\r\n" {
                        break;
                    }
                }
                let mut client = r.into_inner();
                let server = std::net::TcpStream::connect(target).unwrap();
                c.fetch_add(1, Ordering::SeqCst);
                client
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .unwrap();
                let (mut a, mut b) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut a, &mut b);
                    let _ = b.shutdown(std::net::Shutdown::Both);
                });
                let (mut server, mut client) = (server, client);
                let _ = std::io::copy(&mut server, &mut client);
                let _ = client.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    (url, count)
}

#[test]
fn the_upgrade_uses_the_clients_own_settings() {
    // Client certificate, tls-server-name, impersonation, user agent, CONNECT proxy.
    let server = ApiServer::builder().client_certificates().start();
    server.create_pod("lab", "p", &[]).unwrap();
    server
        .runtime()
        .command(&["id"], Runtime::output(b"admin\n", b"", 0));
    let (proxy, tunnels) = connect_proxy();
    let mut cfg = server.client_config();
    assert!(cfg.identity.is_some());
    cfg.impersonate_user = Some("alice".into());
    cfg.user_agent = "pod-io-test/1".into();
    cfg.proxy = Some(proxy);
    let c = Client::new(cfg.clone()).unwrap();
    let out = c
        .exec_output("lab", "p", &ExecParams::new(["id"]), b"")
        .unwrap();
    assert_eq!(out.stdout, b"admin\n");
    assert_eq!(tunnels.load(std::sync::atomic::Ordering::SeqCst), 1);
    let h = server.request_headers();
    let exec = h
        .iter()
        .rev()
        .find(|r| r.request.contains("/exec"))
        .unwrap();
    let has = |k: &str, v: &str| exec.headers.iter().any(|(a, b)| a == k && b == v);
    assert!(has("impersonate-user", "alice"), "{:?}", exec.headers);
    assert!(has("user-agent", "pod-io-test/1"), "{:?}", exec.headers);
    // tls-server-name: the certificate is for localhost, the URL says 127.0.0.1 (no proxy).
    cfg.proxy = None;
    cfg.tls_server_name = Some("localhost".into());
    let c = Client::new(cfg.clone()).unwrap();
    assert!(c
        .exec_output("lab", "p", &ExecParams::new(["id"]), b"")
        .unwrap()
        .status
        .success());
    // A name the certificate does not have is refused, as for every other request.
    cfg.tls_server_name = Some("elsewhere.example".into());
    let c = Client::new(cfg).unwrap();
    assert!(c
        .exec_output("lab", "p", &ExecParams::new(["id"]), b"")
        .is_err());
    // Without the client certificate: 401 before the upgrade.
    let mut anonymous = server.client_config();
    anonymous.identity = None;
    let e = Client::new(anonymous)
        .unwrap()
        .exec_output("lab", "p", &ExecParams::new(["id"]), b"")
        .unwrap_err();
    assert_eq!(e.code(), Some(401));
}

#[test]
fn the_clients_token_ends_sessions_and_stalled_handshakes() {
    // A running session: attach waits on the pod's process until the token fires.
    let server = ApiServer::start();
    server.create_pod("lab", "p", &[]).unwrap();
    let cancel = kube_informer::client::Cancel::new();
    let c = client(&server).with_cancel(cancel.clone());
    let mut session = c
        .attach("lab", "p", &ExecParams::attach().stdin(true))
        .unwrap();
    let mut out = session.stdout().unwrap();
    common::wait_until("attached", || server.runtime().attached("lab", "p") == 1);
    let waiter = std::thread::spawn(move || {
        let mut rest = Vec::new();
        let read = out.read_to_end(&mut rest);
        (read.is_err(), session.wait())
    });
    cancel.cancel();
    let (read_failed, status) = waiter.join().unwrap();
    assert!(read_failed, "stdout ends with an error, not a clean EOF");
    assert!(matches!(status, Err(Error::Cancelled { .. })), "{status:?}");
    // A new session on the cancelled client is refused at once.
    let again = c.exec("lab", "p", &ExecParams::new(["true"])).unwrap_err();
    assert!(matches!(again, Error::Cancelled { .. }), "{again:?}");

    // A server that accepts the connection and never answers the upgrade.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    let held = std::thread::spawn(move || silent.accept().map(|(sock, _)| sock));
    let cancel = kube_informer::client::Cancel::new();
    let c = Client::new(kube_informer::ClientConfig::new(url))
        .unwrap()
        .with_cancel(cancel.clone());
    let opening = std::thread::spawn(move || c.exec("lab", "p", &ExecParams::new(["true"])));
    let _sock = held.join().unwrap().unwrap();
    // The request may still be on its way when the token fires: either way it ends
    // cancelled.
    cancel.cancel();
    let err = opening.join().unwrap().unwrap_err();
    assert!(matches!(err, Error::Cancelled { .. }), "{err:?}");
}

/// Issue 38: a command that prints nothing while its stdin streams in (`tar -x` during an
/// upload) is not idle: the idle timeout counts only time when neither direction moves, and
/// the client's request timeout bounds the upgrade only.
#[test]
fn stdin_that_keeps_moving_is_not_idle_while_the_command_prints_nothing() {
    const IDLE: Duration = Duration::from_secs(1);
    let server = ApiServer::start();
    server.create_pod("lab", "p", &[]).unwrap();
    server.runtime().command(&["sink"], |i| CommandOutput {
        stdout: format!("{}\n", i.stdin.len()).into_bytes(),
        ..Default::default()
    });
    let mut cfg = server.client_config();
    cfg.request_timeout = IDLE;
    let c = Client::new(cfg).unwrap();
    let mut p = c
        .exec(
            "lab",
            "p",
            &ExecParams::new(["sink"]).stdin(true).idle_timeout(IDLE),
        )
        .unwrap();
    let mut stdin = p.stdin().unwrap();
    let mut stdout = p.stdout().unwrap();
    // The server says nothing for three idle timeouts while stdin moves all along.
    let started = std::time::Instant::now();
    let mut sent = 0usize;
    while started.elapsed() < 3 * IDLE {
        stdin.write_all(&[b'x'; 100]).unwrap();
        sent += 100;
        std::thread::sleep(Duration::from_millis(10));
    }
    stdin.close().unwrap();
    let mut out = String::new();
    stdout.read_to_string(&mut out).unwrap();
    assert_eq!(out, format!("{sent}\n"));
    assert!(p.wait().unwrap().success());
}

/// One connection: answers the upgrade, then neither reads nor writes until the test ends.
fn deaf_server(hold: std::sync::mpsc::Receiver<()>) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        let (s, _) = l.accept().unwrap();
        let mut r = BufReader::new(s);
        let mut key = String::new();
        loop {
            let mut line = String::new();
            if r.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
                break;
            }
            if let Some(k) = line.strip_prefix("Sec-WebSocket-Key: ") {
                key = k.trim().to_owned();
            }
        }
        let mut s = r.into_inner();
        let _ = s.write_all(&upgraded(&key, "v5.channel.k8s.io", &[]));
        let _ = hold.recv_timeout(common::PATIENCE);
    });
    url
}

/// The other side of the rule: a server that neither sends nor takes stdin is idle, and a
/// stdin write blocked on it fails at the idle timeout (the request timeout, which bounds
/// the upgrade only, is far longer here).
#[test]
fn a_server_that_neither_reads_nor_sends_ends_a_blocked_stdin_write() {
    let (tx, rx) = std::sync::mpsc::channel();
    let mut cfg = kube_informer::ClientConfig::new(deaf_server(rx));
    cfg.request_timeout = 4 * common::PATIENCE;
    let c = Client::new(cfg).unwrap();
    let mut p = c
        .exec(
            "lab",
            "p",
            &ExecParams::new(["x"])
                .stdin(true)
                .idle_timeout(Duration::from_millis(500)),
        )
        .unwrap();
    let mut stdin = p.stdin().unwrap();
    let writer = std::thread::spawn(move || {
        // Far more than the socket buffers hold: the write blocks until the session ends.
        let chunk = vec![b'x'; 32 * 1024];
        for _ in 0..(1 << 14) {
            stdin.write_all(&chunk)?;
        }
        Ok::<(), std::io::Error>(())
    });
    let e = p.wait().unwrap_err();
    assert!(e.to_string().contains("idle timeout"), "{e}");
    assert!(writer.join().unwrap().is_err());
    let _ = tx.send(());
}
