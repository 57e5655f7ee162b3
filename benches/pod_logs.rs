//! Follow throughput of a pod's log over loopback: lines per second a `LogStream` delivers,
//! against `testing::ApiServer` serving the log. Two cases, each with the resuming follow
//! (timestamps asked internally, each line checked by the resume cursor) and with
//! `no_resume` (kubectl's plain follow):
//!
//! - **backlog**: 200,000 lines already written, read by a follow from the start;
//! - **live**: a writer thread appends 200,000 lines in batches of 100 while the follow runs.
//!
//! Prints lines/s (best of three runs; the machine is shared) and asserts nothing about time.
//!
//! Run: `cargo bench --bench pod_logs`.

use std::time::{Duration, Instant};

use kube_informer::api::{ApiResource, DynamicObject};
use kube_informer::pod::LogParams;
use kube_informer::testing::ApiServer;
use kube_informer::{Api, Client};

const LINES: usize = 200_000;

fn api(server: &ApiServer) -> Api<DynamicObject> {
    Api::namespaced_with(
        Client::new(server.client_config()).unwrap(),
        "lab",
        &ApiResource::new("", "v1", "Pod", "pods", true),
    )
}

fn line(i: usize) -> String {
    format!(
        "{i:08} GET /api/items?page={} 200 1.23ms user-agent=bench",
        i % 97
    )
}

/// One run: seconds to deliver `LINES` lines.
fn run(live: bool, resume: bool) -> f64 {
    let server = std::sync::Arc::new(ApiServer::start());
    server.add_pod("lab", "web", &["app"]).unwrap();
    if !live {
        let text: Vec<String> = (0..LINES).map(line).collect();
        server.append_log("lab", "web", "app", &text.join("\n"));
    }
    let mut p = LogParams::default().follow();
    if !resume {
        p = p.no_resume();
    }
    let start = Instant::now();
    let mut lines = api(&server).log_stream("web", &p).unwrap();
    let writer = live.then(|| {
        let server = server.clone();
        std::thread::spawn(move || {
            for batch in 0..LINES / 100 {
                let text: Vec<String> = (batch * 100..batch * 100 + 100).map(line).collect();
                server.append_log("lab", "web", "app", &text.join("\n"));
            }
        })
    });
    let mut n = 0;
    for l in lines.by_ref() {
        let l = l.unwrap();
        assert!(!l.bytes.is_empty());
        n += 1;
        if n == LINES {
            break;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    lines.stopper().stop();
    if let Some(w) = writer {
        w.join().unwrap();
    }
    assert_eq!(n, LINES);
    std::thread::sleep(Duration::from_millis(10));
    secs
}

fn main() {
    for (label, live) in [("backlog", false), ("live", true)] {
        for (mode, resume) in [
            ("resuming follow", true),
            ("plain follow (no_resume)", false),
        ] {
            let best = (0..3).map(|_| run(live, resume)).fold(f64::MAX, f64::min);
            println!(
                "pod_logs {label:8} {mode:26} {:>10.0} lines/s ({LINES} lines in {:.3} s)",
                LINES as f64 / best,
                best
            );
        }
    }
}
