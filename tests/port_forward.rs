//! Issue 31: port-forward through the test server, plain and TLS: several ports, a random
//! local port, many concurrent connections, a refused connection reported without ending the
//! forwarder, a clean stop.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use kube_informer::pod::PortMapping;
use kube_informer::testing::ApiServer;
use kube_informer::Client;

/// An echo server in "the pod": every connection gets back what it sends, uppercased.
fn echo_listener() -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                loop {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            let up: Vec<u8> = buf[..n].to_ascii_uppercase();
                            if s.write_all(&up).is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    addr
}

fn roundtrip(addr: std::net::SocketAddr, text: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(common::PATIENCE)).unwrap();
    s.write_all(text.as_bytes()).unwrap();
    let mut got = vec![0u8; text.len()];
    s.read_exact(&mut got).unwrap();
    String::from_utf8(got).unwrap()
}

#[test]
fn forwards_several_ports_and_many_connections_plain_and_tls() {
    for server in [ApiServer::start(), ApiServer::builder().tls().start()] {
        server.create_pod("lab", "db", &[]).unwrap();
        server.runtime().port("lab", "db", 5432, echo_listener());
        server.runtime().port("lab", "db", 80, echo_listener());
        let c = Client::new(server.client_config()).unwrap();
        let maps: Vec<PortMapping> = [":5432", ":80"]
            .iter()
            .map(|m| m.parse().unwrap())
            .collect();
        let f = c.port_forward("lab", "db", &maps).unwrap();
        assert_eq!(f.ports().len(), 2);
        assert_ne!(f.ports()[0].local.port(), 0);
        assert_eq!(roundtrip(f.ports()[1].local, "get /"), "GET /");
        let local = f.ports()[0].local;
        let threads: Vec<_> = (0..16)
            .map(|i| std::thread::spawn(move || roundtrip(local, &format!("hello {i}"))))
            .collect();
        for (i, t) in threads.into_iter().enumerate() {
            assert_eq!(t.join().unwrap(), format!("HELLO {i}"));
        }
        // A connection left open is closed by the stop, which joins every thread.
        let open = TcpStream::connect(local).unwrap();
        open.set_read_timeout(Some(common::PATIENCE)).unwrap();
        common::wait_until("the open connection is forwarded", || f.connections() >= 1);
        f.stop();
        let mut b = [0u8; 1];
        assert!(matches!((&open).read(&mut b), Ok(0) | Err(_)));
    }
}

#[test]
fn a_refused_connection_is_reported_and_the_forwarder_goes_on() {
    let server = ApiServer::start();
    server.create_pod("lab", "web", &[]).unwrap();
    let c = Client::new(server.client_config()).unwrap();
    let f = c
        .port_forward("lab", "web", &[":8089".parse().unwrap()])
        .unwrap();
    let local = f.ports()[0].local;
    let mut s = TcpStream::connect(local).unwrap();
    s.set_read_timeout(Some(common::PATIENCE)).unwrap();
    let _ = s.write_all(b"x");
    let mut b = [0u8; 1];
    assert!(matches!(s.read(&mut b), Ok(0) | Err(_)));
    let e = f.errors().recv_timeout(common::PATIENCE).unwrap();
    assert!(e.message.contains("connection refused"), "{}", e.message);
    assert_eq!(e.remote, 8089);
    // The pod's port comes up: the same forwarder serves it.
    server.runtime().port("lab", "web", 8089, echo_listener());
    assert_eq!(roundtrip(local, "again"), "AGAIN");
    f.stop();
}

#[test]
fn a_missing_pod_is_reported_per_connection() {
    let server = ApiServer::start();
    let c = Client::new(server.client_config()).unwrap();
    let f = c
        .port_forward("lab", "nosuchpod", &[":80".parse().unwrap()])
        .unwrap();
    let s = TcpStream::connect(f.ports()[0].local).unwrap();
    let e = f.errors().recv_timeout(common::PATIENCE).unwrap();
    assert!(e.message.contains("not found"), "{}", e.message);
    drop(s);
    let _ = Duration::ZERO;
    f.stop();
}

/// A "pod" port that counts what it receives, answers the count (8 bytes, big-endian)
/// once the client has sent `want` bytes, then echoes nothing more.
fn counting_listener(want: u64) -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 64 * 1024];
                let (mut got, mut sum) = (0u64, 0u64);
                while got < want {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            got += n as u64;
                            sum = buf[..n]
                                .iter()
                                .fold(sum, |a, &b| a.wrapping_mul(31).wrapping_add(u64::from(b)));
                        }
                    }
                }
                let _ = s.write_all(&sum.to_be_bytes());
            });
        }
    });
    addr
}

#[test]
fn bulk_data_arrives_whole_and_in_order_both_ways() {
    // Large enough for every frame length form (7-bit, 16-bit and 64-bit lengths).
    const SIZE: usize = 8 << 20;
    let data: Vec<u8> = (0..SIZE).map(|i| (i * 7 % 253) as u8).collect();
    let want = data
        .iter()
        .fold(0u64, |a, &b| a.wrapping_mul(31).wrapping_add(u64::from(b)));
    for server in [ApiServer::start(), ApiServer::builder().tls().start()] {
        server.create_pod("lab", "db", &[]).unwrap();
        server
            .runtime()
            .port("lab", "db", 9000, counting_listener(SIZE as u64));
        server.runtime().port("lab", "db", 80, echo_listener());
        let c = Client::new(server.client_config()).unwrap();
        let f = c
            .port_forward(
                "lab",
                "db",
                &[":9000".parse().unwrap(), ":80".parse().unwrap()],
            )
            .unwrap();
        // Up: every byte reaches the pod, in order.
        let mut s = TcpStream::connect(f.ports()[0].local).unwrap();
        s.set_read_timeout(Some(common::PATIENCE)).unwrap();
        // Small writes first (short frames), then large ones.
        for chunk in data[..1000].chunks(7) {
            s.write_all(chunk).unwrap();
        }
        if let Err(e) = s.write_all(&data[1000..]) {
            panic!("{e}: {:?}", f.errors().recv_timeout(common::PATIENCE));
        }
        let mut sum = [0u8; 8];
        s.read_exact(&mut sum).unwrap();
        assert_eq!(u64::from_be_bytes(sum), want);
        // Both ways through the echo: what comes back is what went, uppercased.
        let mut e = TcpStream::connect(f.ports()[1].local).unwrap();
        e.set_read_timeout(Some(common::PATIENCE)).unwrap();
        let e2 = e.try_clone().unwrap();
        let sent = data.clone();
        let writer = std::thread::spawn(move || {
            let mut e2 = e2;
            e2.write_all(&sent).unwrap();
        });
        let mut back = vec![0u8; SIZE];
        e.read_exact(&mut back).unwrap();
        writer.join().unwrap();
        assert!(back == data.to_ascii_uppercase());
        f.stop();
    }
}
