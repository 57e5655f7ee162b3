//! Issue 22: operating a controller in production. A `Manager` runs a controller against
//! the test API server with the probe endpoint up; the tests talk to the endpoint over real
//! loopback HTTP (a raw socket: huge headers, slow and stalled clients) and, with the
//! `metrics` feature, scrape `/metrics` and check client-go's and controller-runtime's names,
//! labels and that the values move. Every wait is on a condition with a generous bound.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use kube_informer::api::DynamicObject;
use kube_informer::controller::{Action, Controller};
use kube_informer::manager::{Manager, ManagerBuilder};
use kube_informer::testing::{ApiServer, Fault, Target};
use kube_informer::{Api, Client};

/// One request on a fresh connection (`Connection: close`): status and body.
fn http(addr: SocketAddr, request: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.write_all(request).unwrap();
    read_answer(&mut s)
}

fn read_answer(s: &mut TcpStream) -> (u16, String) {
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    http(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n").as_bytes(),
    )
}

/// A manager with one controller on pods, the probe endpoint on a free port. The reconcile
/// fails `lab/p0` once (a retry), asks to look at `lab/p1` again once (a requeue), reads a
/// pod that does not exist (a 404 on the wire), and counts its calls.
fn manager(
    server: &ApiServer,
    tweak: impl FnOnce(ManagerBuilder) -> ManagerBuilder,
) -> (Manager, Arc<AtomicU64>) {
    let mut config = server.client_config();
    // A rate limiter that never waits, so that its latency is observed too.
    (config.qps, config.burst) = (10_000.0, 10_000);
    let client = Client::new(config).unwrap();
    let builder = Manager::builder(client.clone()).probe_addr("127.0.0.1:0");
    let informer = builder.factory().dynamic_informer(&pods());
    let calls = Arc::new(AtomicU64::new(0));
    let (count, failed, requeued) = (Arc::clone(&calls), AtomicU64::new(0), AtomicU64::new(0));
    let api: Api<DynamicObject> = Api::namespaced_with(client, "lab", &pods());
    let builder = builder.controller(
        Controller::builder("pods-ctl", informer).workers(2),
        move |key: &str| -> Result<Action, kube_informer::Error> {
            count.fetch_add(1, Ordering::SeqCst);
            if key == "lab/p0" && failed.fetch_add(1, Ordering::SeqCst) == 0 {
                let _ = api.get("no-such-pod"); // 404
                return Err(kube_informer::Error::InvalidInput("first try fails".into()));
            }
            if key == "lab/p1" && requeued.fetch_add(1, Ordering::SeqCst) == 0 {
                return Ok(Action::RequeueAfter(Duration::from_millis(10)));
            }
            Ok(Action::Done)
        },
    );
    (tweak(builder).start().unwrap(), calls)
}

fn server_with_pods(n: usize) -> ApiServer {
    let server = ApiServer::builder().resource(&pods()).start();
    for i in 0..n {
        server
            .create(&pods(), pod("lab", &format!("p{i}"), "Running"))
            .unwrap();
    }
    server
}

#[test]
fn readiness_follows_sync_and_a_lasting_watch_failure_liveness_answers() {
    let server = server_with_pods(3);
    // The first lists fail: not ready until a list succeeds.
    for _ in 0..2 {
        server.inject(Target::List, Fault::status(500));
    }
    let (m, calls) = manager(&server, |b| b.unready_after(Duration::from_millis(500)));
    let addr = m.probe_addr().unwrap();
    let (code, body) = get(addr, "/readyz");
    // Ready only once synced: the two failed lists and their back-off come first, so the
    // first answer is (almost surely) a 500; either way it must become 200.
    if code == 500 {
        assert!(
            body.contains("[-]informer-sync failed: ") || body.contains("[-]controllers failed: "),
            "{body}"
        );
        assert!(body.ends_with("readyz check failed\n"), "{body}");
    }
    assert_eq!(
        get(addr, "/healthz"),
        (200, "ok\n".into()),
        "alive while not ready"
    );
    wait_until("ready", || get(addr, "/readyz").0 == 200);
    wait_until("reconciles", || calls.load(Ordering::SeqCst) >= 3);
    assert_eq!(get(addr, "/readyz").1, "ok\n");
    let (code, verbose) = get(addr, "/readyz?verbose");
    assert_eq!(code, 200);
    for line in [
        "[+]informer-sync ok",
        "[+]watches ok",
        "[+]controllers ok",
        "[+]shutdown ok",
        "readyz check passed",
    ] {
        assert!(verbose.contains(line), "{line}: {verbose}");
    }
    assert_eq!(get(addr, "/readyz/informer-sync"), (200, "ok\n".into()));

    // A lasting failure: every list and watch fails from now on.
    for _ in 0..500 {
        server.inject(Target::Watch, Fault::status(503));
        server.inject(Target::List, Fault::status(503));
    }
    server.disconnect_all();
    wait_until("not ready while the watch keeps failing", || {
        get(addr, "/readyz").0 == 500
    });
    // The reason names the informer and, once a retry was refused, the server's status.
    wait_until("the reason names the 503", || {
        let (code, body) = get(addr, "/readyz");
        code == 500 && body.contains("503")
    });
    let (_, body) = get(addr, "/readyz");
    assert!(
        body.contains(
            "[-]watches failed: pods.v1 (DynamicObject) has failed to list or watch for "
        ),
        "{body}"
    );
    assert!(body.contains("[+]informer-sync ok"), "{body}");
    assert_eq!(
        get(addr, "/livez").0,
        200,
        "alive: the liveness bound is 5 minutes"
    );
    server.clear_faults();
    wait_until("ready again", || get(addr, "/readyz").0 == 200);
    m.stop().unwrap();
}

#[test]
fn bad_requests_get_a_clear_status_and_never_block_the_controller() {
    let server = server_with_pods(2);
    let (m, calls) = manager(&server, |b| b);
    let addr = m.probe_addr().unwrap();
    wait_until("ready", || get(addr, "/readyz").0 == 200);

    let (code, body) = get(addr, "/nope");
    assert_eq!(code, 404);
    assert!(
        body.contains("not found: /nope; this endpoint serves /healthz"),
        "{body}"
    );
    let (code, body) = get(addr, "/readyz/nope");
    assert_eq!(code, 404);
    assert!(
        body.contains("no check \"nope\"; the checks are informer-sync"),
        "{body}"
    );
    let (code, body) = http(
        addr,
        b"POST /readyz HTTP/1.1\r\nHost: p\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(code, 405, "{body}");
    let huge = format!(
        "GET /healthz HTTP/1.1\r\nHost: p\r\nX-Big: {}\r\nConnection: close\r\n\r\n",
        "a".repeat(64 << 10)
    );
    let (code, body) = http(addr, huge.as_bytes());
    assert_eq!(code, 431, "{body}");
    assert!(body.contains("request headers too large"), "{body}");
    let (code, _) = http(addr, b"GARBAGE\r\n\r\n");
    assert_eq!(code, 400);

    // A stalled client (half a request, then nothing) and a slow one (a byte at a time):
    // neither holds up other probes nor the controller.
    let mut stalled = TcpStream::connect(addr).unwrap();
    stalled
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: p\r\n")
        .unwrap();
    let slow = std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        for b in b"GET /readyz HTTP/1.1\r\nHost: p\r\nConnection: close\r\n\r\n" {
            s.write_all(&[*b]).unwrap();
            std::thread::sleep(Duration::from_millis(5));
        }
        read_answer(&mut s)
    });
    let before = calls.load(Ordering::SeqCst);
    server
        .create(&pods(), pod("lab", "late", "Pending"))
        .unwrap();
    wait_until("the controller reconciles meanwhile", || {
        calls.load(Ordering::SeqCst) > before
    });
    assert_eq!(get(addr, "/healthz"), (200, "ok\n".into()));
    assert_eq!(
        slow.join().unwrap(),
        (200, "ok\n".into()),
        "the slow client gets its answer"
    );
    // Issue 33: a client that pipelines probes and never reads its answers fills its
    // socket; its connection's thread waits on it alone (until the write bound), and
    // everyone else's probes are answered meanwhile.
    let mut greedy = TcpStream::connect(addr).unwrap();
    greedy
        .set_write_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let verbose = b"GET /readyz?verbose HTTP/1.1\r\nHost: p\r\n\r\n";
    for _ in 0..20_000 {
        if greedy.write_all(verbose).is_err() {
            break;
        }
    }
    for _ in 0..10 {
        assert_eq!(get(addr, "/healthz"), (200, "ok\n".into()));
    }
    // The stop is not held up by the stalled client either.
    let started = Instant::now();
    m.stop().unwrap();
    eprintln!(
        "operations: stopped in {:?} with a stalled probe client connected",
        started.elapsed()
    );
    drop(stalled);
    drop(greedy);
}

#[test]
fn stop_with_the_endpoint_up_is_prompt_and_closes_it() {
    let server = server_with_pods(5);
    let (m, _) = manager(&server, |b| b.grace_period(Duration::from_secs(20)));
    let addr = m.probe_addr().unwrap();
    wait_until("ready", || get(addr, "/readyz").0 == 200);
    let handle = m.shutdown_handle();
    let t0 = Instant::now();
    handle.shutdown();
    m.run().unwrap();
    let took = t0.elapsed();
    // The target is under a second; a loaded machine is allowed far more.
    eprintln!("operations: manager stopped in {took:?} (target < 1 s)");
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert!(
        TcpStream::connect(addr).is_err() || get_refused(addr),
        "the endpoint is closed"
    );
}

/// After the stop a connection may still be accepted by the kernel's backlog for a moment,
/// but nobody answers it.
fn get_refused(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return true;
    };
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let _ = s.write_all(b"GET /healthz HTTP/1.1\r\nHost: p\r\nConnection: close\r\n\r\n");
    let mut buf = [0u8; 16];
    !matches!(s.read(&mut buf), Ok(n) if n > 0)
}

#[test]
fn a_manager_leads_with_all_its_controllers() {
    let server = server_with_pods(2);
    let (m, calls) = manager(&server, |b| {
        b.leader_election(kube_informer::controller::LeaderElectionConfig::new(
            "kube-system",
            "pods-ctl",
            "replica-a",
        ))
    });
    let addr = m.probe_addr().unwrap();
    wait_until("leader", || m.is_leader());
    wait_until("ready", || get(addr, "/readyz").0 == 200);
    assert!(get(addr, "/readyz?verbose")
        .1
        .contains("[+]leader-election ok"));
    wait_until("reconciles in the term", || {
        calls.load(Ordering::SeqCst) >= 2
    });
    m.stop().unwrap();
}

#[cfg(feature = "metrics")]
mod metrics {
    use super::*;

    fn value(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
    }

    #[test]
    fn metrics_have_client_go_and_controller_runtime_names_and_move() {
        let server = server_with_pods(3);
        server.inject(Target::List, Fault::status(500));
        let (m, calls) = manager(&server, |b| b);
        let addr = m.probe_addr().unwrap();
        wait_until("ready", || get(addr, "/readyz").0 == 200);
        wait_until("the retry and the requeue", || {
            calls.load(Ordering::SeqCst) >= 5
        });
        let host = server
            .client_config()
            .server
            .split_once("://")
            .unwrap()
            .1
            .trim_end_matches('/')
            .to_owned();
        let scrape = || {
            let (code, body) = get(addr, "/metrics");
            assert_eq!(code, 200);
            body
        };
        let want = [
            r#"workqueue_adds_total{name="pods-ctl"}"#,
            r#"workqueue_retries_total{name="pods-ctl"}"#,
            r#"controller_runtime_reconcile_total{controller="pods-ctl",result="success"}"#,
            r#"controller_runtime_reconcile_total{controller="pods-ctl",result="error"}"#,
            r#"controller_runtime_reconcile_total{controller="pods-ctl",result="requeue_after"}"#,
            r#"controller_runtime_reconcile_errors_total{controller="pods-ctl"}"#,
        ];
        wait_until("every series counts", || {
            let text = scrape();
            want.iter()
                .all(|s| value(&text, s).is_some_and(|v| v >= 1.0))
        });
        let text = scrape();
        for (series, at_least) in [
            (
                format!(r#"rest_client_requests_total{{code="200",method="GET",host="{host}"}}"#),
                2.0,
            ),
            (
                format!(r#"rest_client_requests_total{{code="500",method="GET",host="{host}"}}"#),
                1.0,
            ),
            (
                format!(r#"rest_client_requests_total{{code="404",method="GET",host="{host}"}}"#),
                1.0,
            ),
            (
                format!(
                    r#"rest_client_request_duration_seconds_count{{verb="GET",host="{host}"}}"#
                ),
                3.0,
            ),
            (
                r#"workqueue_queue_duration_seconds_count{name="pods-ctl"}"#.into(),
                3.0,
            ),
            (
                r#"workqueue_work_duration_seconds_count{name="pods-ctl"}"#.into(),
                3.0,
            ),
            (
                r#"controller_runtime_reconcile_time_seconds_count{controller="pods-ctl"}"#.into(),
                3.0,
            ),
            (
                r#"kube_informer_objects{informer="pods.v1 (DynamicObject)"}"#.into(),
                3.0,
            ),
            (
                r#"kube_informer_synced{informer="pods.v1 (DynamicObject)"}"#.into(),
                1.0,
            ),
            (
                r#"kube_informer_list_failures_total{informer="pods.v1 (DynamicObject)"}"#.into(),
                1.0,
            ),
            (
                r#"kube_informer_errors_total{informer="pods.v1 (DynamicObject)",kind="api_500"}"#
                    .into(),
                1.0,
            ),
        ] {
            let v = value(&text, &series).unwrap_or_else(|| panic!("no {series} in\n{text}"));
            assert!(v >= at_least, "{series} = {v}, want >= {at_least}\n{text}");
        }
        for series in [
            r#"workqueue_depth{name="pods-ctl"}"#,
            r#"workqueue_unfinished_work_seconds{name="pods-ctl"}"#,
            r#"workqueue_longest_running_processor_seconds{name="pods-ctl"}"#,
            r#"controller_runtime_active_workers{controller="pods-ctl"}"#,
            r#"kube_informer_relists_total{informer="pods.v1 (DynamicObject)",cause="expired"}"#,
            r#"kube_informer_watch_restarts_total{informer="pods.v1 (DynamicObject)"}"#,
            r#"kube_informer_handler_backlog{informer="pods.v1 (DynamicObject)",handler="0"}"#,
        ] {
            assert!(value(&text, series).is_some(), "no {series} in\n{text}");
        }
        for ty in [
            "# TYPE workqueue_adds_total counter",
            "# TYPE workqueue_depth gauge",
            "# TYPE workqueue_queue_duration_seconds histogram",
            "# TYPE rest_client_requests_total counter",
            "# TYPE rest_client_rate_limiter_duration_seconds histogram",
        ] {
            assert!(text.contains(ty), "{ty}");
        }
        // Values move: a change adds to the queue, and the adds counter follows.
        let adds = value(&text, want[0]).unwrap();
        server
            .create(&pods(), pod("lab", "new", "Pending"))
            .unwrap();
        wait_until("adds move", || {
            value(&scrape(), want[0]).is_some_and(|v| v > adds)
        });
        // OpenMetrics on request.
        let (code, om) = http(addr, b"GET /metrics HTTP/1.1\r\nHost: p\r\nAccept: application/openmetrics-text;version=1.0.0\r\nConnection: close\r\n\r\n");
        assert_eq!(code, 200);
        assert!(om.trim_end().ends_with("# EOF"), "{om}");
        m.stop().unwrap();
    }

    #[test]
    fn leader_status_is_exported() {
        let server = server_with_pods(1);
        let (m, _) = manager(&server, |b| {
            b.leader_election(kube_informer::controller::LeaderElectionConfig::new(
                "kube-system",
                "ops-lease",
                "replica-a",
            ))
        });
        let addr = m.probe_addr().unwrap();
        wait_until("leader status 1", || {
            value(
                &get(addr, "/metrics").1,
                r#"leader_election_master_status{name="ops-lease"}"#,
            ) == Some(1.0)
        });
        m.stop().unwrap();
    }
}
